//! `memdir doctor`: checks the directory, its configuration, the sync key and
//! provider, the embeddings and the search index, each with a verdict (ok, warn,
//! fail) and, when not ok, what to do.
//!
//! Must not write: no file of the directory is created or changed (not the search
//! index, not the access log), and every network probe is bounded by [`PROBE_LIMIT`].

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use serde::Serialize;
use serde_json::json;

use super::Out;
use super::output::shell_quote;
use memdir::memory::layout::INDEX_FILE;
use memdir::memory::printable::escape_line;
use memdir::report::{Failure, Front};
use memdir::sync::config::Config;
use memdir::{EmbedProvider, Memory, SearchIndexHealth};

/// Check the memory directory, its configuration, the sync key and provider, the
/// embeddings and the search index, and say what to do about each problem.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Each check prints ok, warn or fail; a check that is not ok says what to do. The
provider and the embedding endpoint are asked one short question each (at most 5 s).
doctor writes nothing. Exit 0 when no check fails, 1 when one does."
)]
pub struct Args {}

/// The longest a probe of the provider or the embedding endpoint may take.
pub const PROBE_LIMIT: Duration = Duration::from_secs(5);

/// A check's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Verdict {
    Ok,
    Warn,
    Fail,
}

/// One check: what was looked at, the verdict, what was found, and what to do.
#[derive(Debug, Serialize)]
struct Check {
    check: &'static str,
    verdict: Verdict,
    detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

impl Check {
    fn ok(check: &'static str, detail: impl Into<String>) -> Check {
        Check {
            check,
            verdict: Verdict::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    fn warn(check: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            check,
            verdict: Verdict::Warn,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    fn fail(check: &'static str, detail: impl Into<String>, fix: Option<String>) -> Check {
        Check {
            check,
            verdict: Verdict::Fail,
            detail: detail.into(),
            fix,
        }
    }

    /// A failed check from an error: its message, and its hint as what to do.
    fn failure(check: &'static str, e: Failure) -> Check {
        Check::fail(check, e.to_string(), e.hint(Front::Cli))
    }
}

pub fn run(mem: &Memory, _a: &Args, out: &mut Out) -> Result<i32, Failure> {
    let checks = checks(mem);
    let failed = checks.iter().any(|c| c.verdict == Verdict::Fail);
    if out.is_json() {
        out.json(&json!({"ok": !failed, "checks": checks}));
    } else {
        let mut t = Vec::new();
        for c in &checks {
            let verdict = match c.verdict {
                Verdict::Ok => "ok  ",
                Verdict::Warn => "warn",
                Verdict::Fail => "fail",
            };
            // One line each: a newline in a path or a message cannot forge a check.
            t.push(format!(
                "{verdict}  {:<11} {}",
                c.check,
                escape_line(&c.detail)
            ));
            if let Some(f) = &c.fix {
                t.push(format!("      {:<11} fix: {}", "", escape_line(f)));
            }
        }
        out.text(&t.join("\n"));
    }
    Ok(if failed { 1 } else { 0 })
}

/// Every check, in order; the later ones only when the directory is there and the
/// configuration parses.
fn checks(mem: &Memory) -> Vec<Check> {
    let root = mem.root();
    let mut checks = vec![directory(&root)];
    if checks[0].verdict == Verdict::Fail {
        return checks;
    }
    checks.extend(permissions(&root));
    let config = match Config::load(mem) {
        Ok(c) => {
            let path = mem.config_path();
            checks.push(Check::ok(
                "config",
                if path.is_file() {
                    format!("{} parses", path.display())
                } else {
                    "no .memdir/config.toml: local mode, keyword recall (the defaults)".into()
                },
            ));
            c
        }
        Err(e) => {
            // What every other command does meanwhile (spec/cli.md#configuration-errors).
            let mut c = Check::failure("config", e.into());
            c.detail.push_str(
                "; sync and embeddings not checked: until it parses, sync commands refuse and recall ranks by keywords",
            );
            checks.push(c);
            checks.push(index(mem));
            return checks;
        }
    };
    sync_checks(&config, &mut checks);
    checks.push(embeddings(mem));
    checks.push(index(mem));
    checks
}

/// The directory exists, is a directory and holds MEMORY.md.
fn directory(root: &Path) -> Check {
    let init = format!(
        "memdir init --dir {}",
        shell_quote(&root.display().to_string())
    );
    match std::fs::metadata(root) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Check::fail(
            "directory",
            format!("{} does not exist", root.display()),
            Some(format!(
                "{init} (or point --dir / MEMDIR_DIR at your memory directory)"
            )),
        ),
        Err(e) => Check::fail("directory", format!("{}: {e}", root.display()), None),
        Ok(m) if !m.is_dir() => Check::fail(
            "directory",
            format!("{} is not a directory", root.display()),
            Some("point --dir / MEMDIR_DIR at your memory directory".into()),
        ),
        Ok(_) if !root.join(INDEX_FILE).is_file() => Check::fail(
            "directory",
            format!(
                "{} has no {INDEX_FILE}: not a memory directory",
                root.display()
            ),
            Some(init),
        ),
        Ok(_) => {
            let n = std::fs::read_dir(root)
                .map(|d| {
                    d.filter_map(|e| e.ok())
                        .filter(|e| {
                            let name = e.file_name();
                            let name = name.to_string_lossy();
                            name.ends_with(".md") && name != INDEX_FILE && !name.starts_with('.')
                        })
                        .count()
                })
                .unwrap_or(0);
            Check::ok(
                "directory",
                format!("{} ({n} memory files)", root.display()),
            )
        }
    }
}

/// Whether this process may write the directory, and whether others may.
fn permissions(root: &Path) -> Option<Check> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(root).ok()?.permissions().mode() & 0o7777;
        let path = std::ffi::CString::new(root.as_os_str().as_bytes()).ok()?;
        // SAFETY: `path` is a NUL-terminated string that outlives the call; access(2)
        // only reads it.
        let writable = unsafe { libc::access(path.as_ptr(), libc::W_OK) } == 0;
        let shown = shell_quote(&root.display().to_string());
        Some(if !writable {
            Check::fail(
                "permissions",
                format!(
                    "{} is not writable by this user (mode {mode:o})",
                    root.display()
                ),
                Some(format!("chmod u+w {shown}")),
            )
        } else if mode & 0o002 != 0 {
            Check::warn(
                "permissions",
                format!("any user may change the memories (mode {mode:o})"),
                format!("chmod o-w {shown}"),
            )
        } else {
            Check::ok("permissions", format!("writable (mode {mode:o})"))
        })
    }
    #[cfg(not(unix))]
    {
        let m = std::fs::metadata(root).ok()?;
        Some(if m.permissions().readonly() {
            Check::fail("permissions", "the directory is read-only", None)
        } else {
            Check::ok("permissions", "writable")
        })
    }
}

/// The sync mode; in a syncing mode the key (encrypted-ipfs) and the provider.
fn sync_checks(config: &Config, checks: &mut Vec<Check>) {
    if !config.mode.syncs() {
        checks.push(Check::ok("sync", "local mode (no sync)"));
        return;
    }
    #[cfg(feature = "sync")]
    {
        checks.push(Check::ok(
            "sync",
            format!(
                "mode {}, provider {}, channel {}",
                config.mode,
                config.provider.as_deref().unwrap_or("(none)"),
                config.channel()
            ),
        ));
        if config.mode == memdir::sync::config::Mode::EncryptedIpfs {
            checks.push(remote::key(config));
        }
        checks.push(remote::provider(config));
    }
    #[cfg(not(feature = "sync"))]
    checks.push(Check::fail(
        "sync",
        format!(
            "mode {}, but this build has no sync (feature `sync`)",
            config.mode
        ),
        Some("build memdir with default features, or set mode = \"local\"".into()),
    ));
}

#[cfg(feature = "sync")]
mod remote {
    //! The key and provider checks (feature `sync`).

    // Errors carry CIDs by value; see the note in `memdir::ipfs::car`.
    #![allow(clippy::result_large_err)]

    use super::{Check, PROBE_LIMIT, bounded};
    use memdir::provider::{self, Blocking, ProviderError, Settings};
    use memdir::report::Failure;
    use memdir::sync::SyncError;
    use memdir::sync::config::Config;
    use memdir::sync::seal::KeyFileError;

    /// The encrypted-ipfs key: where it is, that it opens, that only its owner may read it.
    pub fn key(config: &Config) -> Check {
        let path = std::env::var_os("MEMDIR_KEY_FILE")
            .filter(|p| !p.is_empty())
            .map(std::path::PathBuf::from)
            .or_else(|| config.key_file.clone())
            .or_else(memdir::sync::default_key_path);
        let Some(path) = path else {
            return Check::fail(
                "key",
                "no key file: neither MEMDIR_KEY_FILE, key_file nor HOME is set",
                Some("memdir keygen --out PATH, then set key_file in .memdir/config.toml".into()),
            );
        };
        let shown = super::super::output::shell_quote(&path.display().to_string());
        if !path.exists() {
            return Check::fail(
                "key",
                format!("the key file {} does not exist", path.display()),
                Some(format!(
                    "copy the key from another device there, or create one with `memdir keygen --out {shown}` (a new key cannot open what was pushed before)"
                )),
            );
        }
        match memdir::sync::seal::read_key_file(&path) {
            Ok(_) => Check::ok(
                "key",
                format!("{} (only its owner may read it)", path.display()),
            ),
            Err(KeyFileError::Permissions { mode, .. }) => Check::fail(
                "key",
                format!("{} may be read by others (mode {mode:o})", path.display()),
                Some(format!("chmod 600 {shown}")),
            ),
            Err(e) => Check::failure("key", Failure::from(e)),
        }
    }

    /// The provider answers one short question: the head of the channel (or, for a
    /// provider that keeps no head, whether it holds a root), within [`PROBE_LIMIT`].
    pub fn provider(config: &Config) -> Check {
        let Some(name) = config.provider.clone() else {
            return Check::fail(
                "provider",
                format!("mode {} names no provider", config.mode),
                Some("memdir init --provider kubo (or pinata, filebase, storacha, folder)".into()),
            );
        };
        let channel = config.channel().to_string();
        let probe_name = name.clone();
        let answer = bounded(move || probe(&probe_name, &channel));
        match answer {
            None => Check::fail(
                "provider",
                format!("{name} did not answer within {} s", PROBE_LIMIT.as_secs()),
                Some("check that the provider is running and reachable from here".into()),
            ),
            Some(Ok(detail)) => Check::ok("provider", format!("{name} answered: {detail}")),
            Some(Err(e)) => Check::failure("provider", Failure::from(SyncError::from(e))),
        }
    }

    /// One request, with short timeouts and no retry.
    fn probe(name: &str, channel: &str) -> Result<String, ProviderError> {
        let mut settings = Settings::from_env(&provider::process_env)?;
        let short = PROBE_LIMIT.saturating_sub(std::time::Duration::from_secs(1));
        settings.http.timeout = settings.http.timeout.min(short);
        settings.http.connect_timeout = settings.http.connect_timeout.min(short);
        settings.http.transfer_timeout = settings.http.transfer_timeout.min(short);
        settings.http.attempts = 1;
        let p = Blocking::new(provider::from_env(name, &provider::process_env, &settings)?)?;
        match p.head(channel) {
            Ok(Some(root)) => Ok(format!("channel {channel} is at {root}")),
            Ok(None) => Ok(format!("nothing pushed to channel {channel} yet")),
            Err(ProviderError::Unsupported { .. }) => {
                // The CID of an empty UnixFS directory: any answer means the provider is up.
                let empty = "bafybeiczsscdsbs7ffqz55asqdf3smv6klcw3gofszvwlyarci47bgf354"
                    .parse()
                    .map_err(|_| ProviderError::Unsupported {
                        provider: name.to_string(),
                        operation: "probe",
                    })?;
                p.has(&empty).map(|_| "reachable".to_string())
            }
            Err(e) => Err(e),
        }
    }
}

/// The `[embeddings]` table: off, the builtin model compiled in, or an endpoint
/// that answers one short request with vectors of the configured length.
fn embeddings(mem: &Memory) -> Check {
    let config = match mem.embeddings_config() {
        Ok(None) => return Check::ok("embeddings", "off (keyword recall)"),
        Ok(Some(c)) => c,
        Err(e) => return Check::failure("embeddings", e.into()),
    };
    if config.provider == EmbedProvider::Builtin {
        return match config.embedder() {
            Ok(_) => Check::ok("embeddings", format!("builtin model {}", config.model)),
            Err(e) => Check::fail(
                "embeddings",
                e.to_string(),
                Some("cargo install --path . --locked --features embed-builtin, or remove [embeddings] for keyword recall".into()),
            ),
        };
    }
    let mut probe = config.clone();
    // The endpoint retries within twice its timeout: half the limit each.
    probe.timeout = probe.timeout.min(PROBE_LIMIT / 2);
    let url = memdir::redact_url(&config.url);
    let answer = bounded(move || {
        probe
            .embedder()
            .and_then(|e| e.embed(&["memdir doctor".to_string()]))
            .map(|v| v.first().map_or(0, Vec::len))
    });
    match answer {
        None => Check::fail(
            "embeddings",
            format!("{url} did not answer within {} s", PROBE_LIMIT.as_secs()),
            Some(
                "check that the endpoint is running; recall falls back to keywords meanwhile"
                    .into(),
            ),
        ),
        Some(Ok(n)) => Check::ok(
            "embeddings",
            format!("{url} answered ({}, {n} dimensions)", config.model),
        ),
        Some(Err(e)) => Check::failure("embeddings", e.into()),
    }
}

/// The search index under `.memdir/cache/`: present and readable, or built on first use.
fn index(mem: &Memory) -> Check {
    match mem.search_index_health() {
        SearchIndexHealth::Readable { bytes } => Check::ok(
            "index",
            format!("search index readable ({:.1} KB)", bytes as f64 / 1e3),
        ),
        SearchIndexHealth::Unreadable => Check::warn(
            "index",
            "the search index cannot be read (corrupt or from another version); the next query rebuilds it",
            "memdir index --search (rebuilds it now)",
        ),
        SearchIndexHealth::Missing => Check::ok(
            "index",
            "no search index yet; the first query builds it (`memdir index --search` builds it now)",
        ),
    }
}

/// Runs `f` on its own thread and waits at most [`PROBE_LIMIT`] for its answer
/// (`None`: it took longer, and is left to finish on its own).
fn bounded<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(PROBE_LIMIT).ok()
}
