//! What push, pull, sync and the push after a write share: choosing the mode, the
//! provider and the key from flags, `.memdir/config.toml` and the environment, and
//! drawing transfer progress on a terminal.

use std::path::PathBuf;

use clap::ValueEnum;

use super::Out;
use crate::engine::Memory;
use crate::error::Error;
use crate::provider::{self, Blocking, Direction, Progress, Settings};
use crate::sync::config::{Config, Mode};
use crate::sync::seal::Key;
use crate::sync::{Remote, SyncError};

/// `--mode` on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    Ipfs,
    #[value(name = "encrypted-ipfs")]
    EncryptedIpfs,
}

impl From<ModeArg> for Mode {
    fn from(m: ModeArg) -> Mode {
        match m {
            ModeArg::Ipfs => Mode::Ipfs,
            ModeArg::EncryptedIpfs => Mode::EncryptedIpfs,
        }
    }
}

/// The flags every network command takes.
#[derive(Debug, Clone, clap::Args)]
pub struct RemoteArgs {
    /// kubo (IPFS_API), pinata (PINATA_JWT), filebase (FILEBASE_KEY...), storacha
    /// (WEB3_STORAGE_TOKEN...), folder (MEMDIR_FOLDER); default: `provider` in
    /// .memdir/config.toml.
    #[arg(long, value_name = "P")]
    pub provider: Option<String>,
    /// ipfs or encrypted-ipfs; default: `mode` in .memdir/config.toml, else ipfs.
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
}

/// A provider, mode and key, ready for [`crate::sync`].
pub struct Opened {
    pub provider: Blocking,
    pub mode: Mode,
    pub key: Option<Key>,
    pub config: Config,
    pub progress: Bar,
}

impl Opened {
    pub fn remote(&self) -> Remote<'_> {
        Remote {
            provider: &self.provider,
            mode: self.mode,
            key: self.key.as_ref(),
            channel: self.config.channel(),
            keep_versions: self.config.keep_versions(),
            progress: &self.progress,
        }
    }
}

/// `$MEMDIR_KEY_FILE`, when set.
fn env_key_path() -> Option<PathBuf> {
    std::env::var_os("MEMDIR_KEY_FILE")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// The default key file: `$MEMDIR_KEY_FILE`, else `$XDG_CONFIG_HOME/memdir/key`, else
/// `~/.config/memdir/key`.
pub fn default_key_path() -> Option<PathBuf> {
    env_key_path().or_else(|| {
        let config = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
        Some(config.join("memdir").join("key"))
    })
}

/// The key of the encrypted mode: `MEMDIR_KEY_FILE`, else `key_file` in the
/// configuration, else the default location.
fn load_key(config: &Config) -> Result<Key, Error> {
    let path = env_key_path()
        .or_else(|| config.key_file.clone())
        .or_else(default_key_path)
        .ok_or(SyncError::NoKey {
            path: "(no HOME)".into(),
        })?;
    if !path.exists() {
        return Err(SyncError::NoKey {
            path: path.display().to_string(),
        }
        .into());
    }
    Ok(crate::sync::seal::read_key_file(&path)?)
}

/// Opens the provider named by `--provider`, the configuration, or `fallback`.
pub fn open(
    mem: &Memory,
    args: &RemoteArgs,
    fallback: Option<&str>,
    gateway: Option<&str>,
) -> Result<Opened, Error> {
    let config = Config::load(mem.backend())?;
    let mode = match (args.mode, config.mode) {
        (Some(m), _) => m.into(),
        (None, Mode::EncryptedIpfs) => Mode::EncryptedIpfs,
        (None, _) => Mode::Ipfs,
    };
    let settings = Settings::from_env(&provider::process_env)?;
    let provider = if let Some(url) = gateway {
        Blocking::new(Box::new(provider::Gateways::new(&[url], &settings)?))?
    } else {
        let name = args
            .provider
            .clone()
            .or_else(|| config.provider.clone())
            .or_else(|| fallback.map(str::to_string))
            .ok_or(SyncError::NoProvider)?;
        Blocking::new(provider::from_env(
            &name,
            &provider::process_env,
            &settings,
        )?)?
    };
    let key = if mode == Mode::EncryptedIpfs {
        Some(load_key(&config)?)
    } else {
        None
    };
    Ok(Opened {
        provider,
        mode,
        key,
        config,
        progress: Bar::new(),
    })
}

/// Transfer progress on stderr, drawn only when stderr is a terminal.
pub struct Bar {
    bar: indicatif::ProgressBar,
}

impl Bar {
    fn new() -> Bar {
        let bar =
            indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{msg:12} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {elapsed}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        Bar { bar }
    }
}

impl Progress for Bar {
    fn progress(&self, direction: Direction, done: u64, total: Option<u64>) {
        if let Some(t) = total {
            self.bar.set_length(t);
        }
        self.bar.set_message(match direction {
            Direction::Upload => "uploading",
            Direction::Download => "downloading",
        });
        self.bar.set_position(done);
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// After `write`, `forget` or `note` succeeded: push when the mode syncs, unless
/// `--offline`. A failed push keeps the local change and says so; the exit code stays
/// the command's own.
pub fn push_after_write(mem: &Memory, offline: bool, out: &mut Out) {
    let config = match Config::load(mem.backend()) {
        Ok(c) => c,
        Err(e) => {
            out.warn_error("not pushed", &e);
            return;
        }
    };
    if offline || !config.mode.syncs() {
        return;
    }
    let result = open(
        mem,
        &RemoteArgs {
            provider: None,
            mode: None,
        },
        None,
        None,
    )
    .and_then(|o| crate::sync::push(mem, &o.remote(), false));
    match result {
        Ok(r) if r.up_to_date => {}
        Ok(r) => {
            for w in &r.warnings {
                out.note(&format!("warning: {w}"));
            }
            out.note(&format!("pushed {} to {}", r.network_root, r.provider));
        }
        Err(e) => out.warn_error(
            "the change is saved locally but was not pushed (`memdir status` lists unpushed changes; `memdir sync` retries)",
            &e,
        ),
    }
}
