//! `memdir mcp config`: print, or with `--install` write, the entry that makes an MCP
//! client start `memdir mcp` on a directory (spec/cli.md#mcp-config). It edits only
//! the client's config file it names, keeping everything else the file holds, with a
//! backup first; it must not touch the memory directory.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::Out;
use super::output::shell_quote;
use memdir::Class;

/// The name the entry is written under in every client's configuration.
pub const SERVER_NAME: &str = "memdir";

/// The MCP clients `mcp config` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Client {
    /// Claude Code: `claude mcp add --scope user`, or the project's `.mcp.json` with --install.
    ClaudeCode,
    /// Claude Desktop: claude_desktop_config.json, `mcpServers`.
    ClaudeDesktop,
    /// Cursor: ~/.cursor/mcp.json, `mcpServers`.
    Cursor,
    /// OpenAI Codex: ~/.codex/config.toml, `[mcp_servers.memdir]`.
    Codex,
    /// VS Code: the workspace's .vscode/mcp.json, `servers`.
    Vscode,
}

/// Print (or write) an MCP client's entry that serves this memory directory.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "The entry names this memdir binary and the memory directory (--dir)
by absolute paths; a leading ~/ in --dir is expanded with HOME.

Config files written by --install (--config PATH overrides):
  claude-code     ./.mcp.json (the project's; or run the printed `claude mcp add --scope user` line)
  claude-desktop  ~/Library/Application Support/Claude/claude_desktop_config.json (macOS),
                  %APPDATA%\\Claude\\claude_desktop_config.json (Windows),
                  ~/.config/Claude/claude_desktop_config.json (elsewhere)
  cursor          ~/.cursor/mcp.json
  codex           $CODEX_HOME/config.toml, else ~/.codex/config.toml
  vscode          ./.vscode/mcp.json (the workspace's)

--install keeps everything else the file holds and replaces only the memdir entry; it
saves the file as <file>.bak first and replaces it atomically. A file that does not
parse is refused and left as it is."
)]
pub struct ConfigArgs {
    /// The client to configure.
    #[arg(long, value_enum)]
    pub client: Client,
    /// Write the entry into the client's config file instead of printing it.
    #[arg(long)]
    pub install: bool,
    /// The config file to write with --install (default: the client's, listed below).
    #[arg(long, value_name = "PATH", requires = "install")]
    pub config: Option<PathBuf>,
}

/// Why `mcp config` stopped: what to print and the exit code.
#[derive(Debug)]
struct Refusal {
    message: String,
    hint: Option<String>,
    class: Class,
}

impl Refusal {
    fn new(message: String, hint: Option<&str>, class: Class) -> Refusal {
        Refusal {
            message,
            hint: hint.map(str::to_string),
            class,
        }
    }
}

pub fn run(dir: &Path, a: &ConfigArgs, out: &mut Out) -> i32 {
    match config(dir, a, out) {
        Ok(()) => 0,
        Err(r) => {
            out.warn(&memdir::report::lines(&r.message, r.hint.as_deref()));
            if out.is_json() {
                out.json(&json!({"error": {
                    "message": r.message,
                    "causes": [],
                    "hint": r.hint,
                    "exit_code": r.class.exit_code(),
                }}));
            }
            r.class.exit_code()
        }
    }
}

fn config(dir: &Path, a: &ConfigArgs, out: &mut Out) -> Result<(), Refusal> {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty());
    let dir = absolute_dir(dir, home.as_deref().map(Path::new))?;
    let exe = std::env::current_exe().map_err(|e| {
        Refusal::new(
            format!("cannot find the path of this memdir binary: {e}"),
            None,
            Class::Input,
        )
    })?;
    let entry = Entry {
        exe,
        dir,
        client: a.client,
    };
    if !a.install {
        let text = entry.printed();
        if out.is_json() {
            out.json(
                &json!({"client": client_name(a.client), "entry": entry.value(), "text": text}),
            );
        } else {
            out.text(&text);
        }
        warn_if_missing(&entry.dir, out);
        return Ok(());
    }
    let path = match &a.config {
        Some(p) => absolute(p)?,
        None => default_config(a.client, home.as_deref().map(Path::new))?,
    };
    let done = install(&path, &entry)?;
    if out.is_json() {
        out.json(&json!({
            "client": client_name(a.client),
            "config": path,
            "outcome": done.outcome,
            "backup": done.backup,
            "entry": entry.value(),
        }));
    } else {
        out.text(&format!("{} memdir in {}", done.outcome, path.display()));
        if let Some(b) = &done.backup {
            out.note(&format!("the previous file is saved as {}", b.display()));
        }
        if done.outcome != "unchanged" {
            out.note(&format!(
                "restart {} (or reload its MCP servers) to start memdir",
                client_name(a.client)
            ));
        }
    }
    warn_if_missing(&entry.dir, out);
    Ok(())
}

/// `memdir mcp` does not create a missing directory (spec/cli.md#the-memory-directory):
/// says so once the entry is out, rather than leave the client to fail when it starts
/// the server.
fn warn_if_missing(dir: &Path, out: &mut Out) {
    if dir.is_dir() {
        return;
    }
    let init = format!(
        "memdir init --dir {}",
        shell_quote(&dir.display().to_string())
    );
    out.warn(&format!(
        "warning: memory directory {} does not exist: the server will refuse to start until `{init}` creates it",
        dir.display()
    ));
}

fn client_name(c: Client) -> &'static str {
    match c {
        Client::ClaudeCode => "claude-code",
        Client::ClaudeDesktop => "claude-desktop",
        Client::Cursor => "cursor",
        Client::Codex => "codex",
        Client::Vscode => "vscode",
    }
}

/// The directory as an absolute path: a leading `~` or `~/` is the home folder, a
/// relative path is taken from the current directory; `~user` is refused.
fn absolute_dir(dir: &Path, home: Option<&Path>) -> Result<PathBuf, Refusal> {
    let text = dir.to_string_lossy();
    let expanded = if text == "~" || text.starts_with("~/") {
        let Some(home) = home else {
            return Err(Refusal::new(
                format!("--dir {text} starts with ~ but HOME is not set"),
                Some("give the directory as an absolute path"),
                Class::Usage,
            ));
        };
        match text.strip_prefix("~/") {
            Some(rest) => home.join(rest),
            None => home.to_path_buf(),
        }
    } else if text.starts_with('~') {
        return Err(Refusal::new(
            format!("--dir {text}: the ~user form is not expanded"),
            Some(
                "write the directory out in full (e.g. /home/user/memory), or ~/… for your own home",
            ),
            Class::Usage,
        ));
    } else {
        dir.to_path_buf()
    };
    absolute(&expanded)
}

fn absolute(p: &Path) -> Result<PathBuf, Refusal> {
    std::path::absolute(p).map_err(|e| {
        Refusal::new(
            format!("cannot make {} absolute: {e}", p.display()),
            None,
            Class::Usage,
        )
    })
}

/// The client's own config file (spec/cli.md#mcp-config).
fn default_config(client: Client, home: Option<&Path>) -> Result<PathBuf, Refusal> {
    let need_home = || {
        home.map(Path::to_path_buf).ok_or_else(|| {
            Refusal::new(
                format!(
                    "HOME is not set, so the config file of {} is unknown",
                    client_name(client)
                ),
                Some("name the file with --config PATH"),
                Class::Usage,
            )
        })
    };
    Ok(match client {
        Client::ClaudeCode => absolute(Path::new(".mcp.json"))?,
        Client::Vscode => absolute(&Path::new(".vscode").join("mcp.json"))?,
        Client::Cursor => need_home()?.join(".cursor").join("mcp.json"),
        Client::Codex => match std::env::var_os("CODEX_HOME").filter(|h| !h.is_empty()) {
            Some(h) => absolute(Path::new(&h))?.join("config.toml"),
            None => need_home()?.join(".codex").join("config.toml"),
        },
        Client::ClaudeDesktop => if cfg!(target_os = "macos") {
            need_home()?.join("Library/Application Support/Claude")
        } else if cfg!(windows) {
            match std::env::var_os("APPDATA") {
                Some(a) => PathBuf::from(a).join("Claude"),
                None => need_home()?.join("AppData").join("Roaming").join("Claude"),
            }
        } else {
            match std::env::var_os("XDG_CONFIG_HOME").filter(|h| !h.is_empty()) {
                Some(x) => PathBuf::from(x).join("Claude"),
                None => need_home()?.join(".config").join("Claude"),
            }
        }
        .join("claude_desktop_config.json"),
    })
}

/// What a client starts: this binary, `mcp --dir DIR` (and `--text-only` for Claude
/// Code, which hands its model a result's structured content instead of its text:
/// spec/mcp.md#text-only).
struct Entry {
    exe: PathBuf,
    dir: PathBuf,
    client: Client,
}

impl Entry {
    fn args(&self) -> Vec<String> {
        let mut args = vec![
            "mcp".into(),
            "--dir".into(),
            self.dir.to_string_lossy().into_owned(),
        ];
        if matches!(self.client, Client::ClaudeCode) {
            args.push("--text-only".into());
        }
        args
    }

    fn exe(&self) -> String {
        self.exe.to_string_lossy().into_owned()
    }

    /// The entry as the client's file holds it under the server's name.
    fn value(&self) -> Value {
        let mut v = Map::new();
        if matches!(self.client, Client::ClaudeCode | Client::Vscode) {
            v.insert("type".into(), json!("stdio"));
        }
        v.insert("command".into(), json!(self.exe()));
        v.insert("args".into(), json!(self.args()));
        Value::Object(v)
    }

    /// What `mcp config` prints for the client: the command line for Claude Code,
    /// the TOML table for Codex, the JSON document for the others.
    fn printed(&self) -> String {
        match self.client {
            Client::ClaudeCode => {
                let mut words = vec![
                    "claude".to_string(),
                    "mcp".into(),
                    "add".into(),
                    // Claude Code's default scope is the folder the line is run in;
                    // a memory directory is the user's, wanted in every project.
                    "--scope".into(),
                    "user".into(),
                    SERVER_NAME.into(),
                    "--".into(),
                    self.exe(),
                ];
                words.extend(self.args());
                words
                    .iter()
                    .map(|w| shell_quote(w))
                    .collect::<Vec<_>>()
                    .join(" ")
            }
            Client::Codex => {
                let mut doc = toml_edit::DocumentMut::new();
                set_toml_entry(&mut doc, self).unwrap_or_default();
                doc.to_string()
            }
            _ => {
                let doc = json!({ servers_key(self.client): { SERVER_NAME: self.value() } });
                serde_json::to_string_pretty(&doc).unwrap_or_default()
            }
        }
    }
}

/// The key of the servers' object in a client's JSON file.
fn servers_key(client: Client) -> &'static str {
    match client {
        Client::Vscode => "servers",
        _ => "mcpServers",
    }
}

/// What `--install` did.
struct Installed {
    outcome: &'static str,
    backup: Option<PathBuf>,
}

/// Writes the entry into the config file at `path`: a new file, or the existing one
/// parsed, its memdir entry inserted or replaced, saved as `<file>.bak` and replaced
/// atomically. A file that does not parse is refused and left as it is.
fn install(path: &Path, entry: &Entry) -> Result<Installed, Refusal> {
    // Write through a symlink (a config kept in a dotfiles repository) to its target.
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let old = match std::fs::read(&path) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(Refusal::new(
                format!("cannot read {}: {e}", path.display()),
                None,
                Class::Input,
            ));
        }
    };
    let old_text = match &old {
        None => String::new(),
        Some(b) => String::from_utf8(b.clone()).map_err(|_| {
            Refusal::new(
                format!("{} is not UTF-8 text", path.display()),
                Some("fix or move the file, then run this again"),
                Class::Input,
            )
        })?,
    };
    let new_text = match entry.client {
        Client::Codex => edit_toml(&path, &old_text, entry)?,
        _ => edit_json(&path, &old_text, entry)?,
    };
    if old.is_some() && new_text == old_text {
        return Ok(Installed {
            outcome: "unchanged",
            backup: None,
        });
    }
    let io = |what: &str, e: std::io::Error| {
        Refusal::new(
            format!("cannot {what} {}: {e}", path.display()),
            None,
            Class::Input,
        )
    };
    let parent = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| io("create the folder of", e))?;
    let mut backup = None;
    if let Some(bytes) = &old {
        let mut b = path.clone().into_os_string();
        b.push(".bak");
        let b = PathBuf::from(b);
        std::fs::write(&b, bytes).map_err(|e| io("save a backup of", e))?;
        backup = Some(b);
    }
    let tmp = tempfile::NamedTempFile::new_in(parent).map_err(|e| io("write next to", e))?;
    std::fs::write(tmp.path(), new_text.as_bytes()).map_err(|e| io("write next to", e))?;
    if let Ok(meta) = std::fs::metadata(&path) {
        let _ = std::fs::set_permissions(tmp.path(), meta.permissions());
    }
    tmp.persist(&path).map_err(|e| io("replace", e.error))?;
    Ok(Installed {
        outcome: if old.is_some() { "updated" } else { "added" },
        backup,
    })
}

/// The JSON file with the entry set under the client's servers key; other keys,
/// other servers and the entry's other fields (`env`, …) are kept.
fn edit_json(path: &Path, text: &str, entry: &Entry) -> Result<String, Refusal> {
    let key = servers_key(entry.client);
    let mut doc: Value = if text.trim().is_empty() {
        json!({})
    } else {
        serde_json::from_str(text).map_err(|e| {
            Refusal::new(
                format!(
                    "{}:{}: not valid JSON: {e}",
                    path.display(),
                    e.line().max(1)
                ),
                Some("fix the file (comments and trailing commas are not JSON), then run this again; it was not changed"),
                Class::Input,
            )
        })?
    };
    let not_object = |what: &str| {
        Refusal::new(
            format!("{}: {what} is not a JSON object", path.display()),
            Some("fix the file, then run this again; it was not changed"),
            Class::Input,
        )
    };
    let root = doc
        .as_object_mut()
        .ok_or_else(|| not_object("the top level"))?;
    let servers = root
        .entry(key)
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| not_object(&format!("`{key}`")))?;
    let new = entry.value();
    match servers.get_mut(SERVER_NAME).and_then(Value::as_object_mut) {
        Some(existing) => {
            if entry.client != Client::ClaudeCode && entry.client != Client::Vscode {
                existing.remove("type");
            }
            for (k, v) in new.as_object().into_iter().flatten() {
                existing.insert(k.clone(), v.clone());
            }
        }
        None => {
            servers.insert(SERVER_NAME.into(), new);
        }
    }
    let mut out = serde_json::to_string_pretty(&doc).unwrap_or_default();
    out.push('\n');
    Ok(out)
}

/// The TOML file with `[mcp_servers.memdir]` set; comments, formatting and every
/// other table are kept (toml_edit).
fn edit_toml(path: &Path, text: &str, entry: &Entry) -> Result<String, Refusal> {
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].lines().count().max(1))
            .unwrap_or(1);
        Refusal::new(
            format!("{}:{line}: not valid TOML: {}", path.display(), e.message()),
            Some("fix the file, then run this again; it was not changed"),
            Class::Input,
        )
    })?;
    set_toml_entry(&mut doc, entry).map_err(|what| {
        Refusal::new(
            format!("{}: {what} is not a table", path.display()),
            Some("fix the file, then run this again; it was not changed"),
            Class::Input,
        )
    })?;
    Ok(doc.to_string())
}

/// Sets `mcp_servers.memdir`'s command and args; `Err` names a key that is not a table.
fn set_toml_entry(doc: &mut toml_edit::DocumentMut, entry: &Entry) -> Result<(), String> {
    let servers = doc.entry("mcp_servers").or_insert_with(|| {
        let mut t = toml_edit::Table::new();
        t.set_implicit(true);
        toml_edit::Item::Table(t)
    });
    let servers = servers
        .as_table_like_mut()
        .ok_or_else(|| "`mcp_servers`".to_string())?;
    let item = servers
        .entry(SERVER_NAME)
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()));
    let table = item
        .as_table_like_mut()
        .ok_or_else(|| format!("`mcp_servers.{SERVER_NAME}`"))?;
    table.insert("command", toml_edit::value(entry.exe()));
    let mut args = toml_edit::Array::new();
    for a in entry.args() {
        args.push(a);
    }
    table.insert("args", toml_edit::value(args));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tilde_expands_with_home_and_user_form_is_refused() {
        let home = Path::new("/home/me");
        let check = |d: &str| absolute_dir(Path::new(d), Some(home)).map_err(|r| r.message);
        assert_eq!(check("~/x").unwrap(), Path::new("/home/me/x"));
        assert_eq!(check("~").unwrap(), Path::new("/home/me"));
        assert_eq!(check("/a/b").unwrap(), Path::new("/a/b"));
        assert!(check("rel").unwrap().is_absolute());
        assert!(check("~bob/x").unwrap_err().contains("~user"));
        assert!(absolute_dir(Path::new("~/x"), None).is_err());
    }

    #[test]
    fn words_are_quoted_for_the_shell() {
        assert_eq!(shell_quote("/usr/bin/memdir"), "/usr/bin/memdir");
        assert_eq!(shell_quote("/a b/it's"), r"'/a b/it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
