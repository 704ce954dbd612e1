//! Opening a remote: which provider, which mode and which key, from what the caller
//! asks, `.memdir/config.toml` and the environment (spec/sync.md#configuration).
//!
//! This is library policy, so a program embedding memdir does what `memdir push`
//! does without copying the CLI: [`open`] resolves the choice, [`push_after_write`]
//! is the push that follows a change in a syncing mode. It must not print or draw
//! progress: the caller hands in a [`Progress`].

// Errors carry CIDs by value; see the note in `crate::ipfs::car`.
#![allow(clippy::result_large_err)]

use std::path::PathBuf;

use crate::engine::Memory;
use crate::provider::{self, Blocking, Progress, Settings};
use crate::sync::config::{Config, Mode};
use crate::sync::error::Result;
use crate::sync::remote::Seal;
use crate::sync::seal::{self, Key};
use crate::sync::{PushReport, Remote, SyncError};

/// What the caller asks for; anything left `None` comes from the configuration.
#[derive(Debug, Clone, Default)]
pub struct Choice {
    /// A provider name (`kubo`, `pinata`, `filebase`, `storacha`, `folder`, `gateway`).
    pub provider: Option<String>,
    /// `Ipfs` or `EncryptedIpfs`.
    pub mode: Option<Mode>,
    /// The provider when neither the caller nor the configuration names one.
    pub fallback: Option<String>,
    /// Pull through this trustless gateway instead of a provider.
    pub gateway: Option<String>,
}

/// A provider, its seal and the configuration, ready for push, pull and sync.
pub struct Opened {
    /// The provider, called from synchronous code.
    pub provider: Blocking,
    /// Plain or sealed to the key, per the mode.
    pub seal: Seal,
    /// The directory's sync configuration.
    pub config: Config,
}

impl Opened {
    /// The remote to hand to [`crate::sync::push`], [`crate::sync::pull`] and
    /// [`crate::sync::sync`], reporting transfers to `progress`.
    pub fn remote<'a>(&'a self, progress: &'a dyn Progress) -> Remote<'a> {
        Remote {
            provider: &self.provider,
            seal: &self.seal,
            channel: self.config.channel(),
            keep_versions: self.config.keep_versions(),
            progress,
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
fn load_key(config: &Config) -> Result<Key> {
    let path = env_key_path()
        .or_else(|| config.key_file.clone())
        .or_else(default_key_path)
        .ok_or(SyncError::NoKey {
            path: "(no HOME)".into(),
        })?;
    if !path.exists() {
        return Err(SyncError::NoKey {
            path: path.display().to_string(),
        });
    }
    Ok(seal::read_key_file(&path)?)
}

/// Opens the provider and seal the choice, the configuration and the environment
/// name: the mode is the caller's, else `encrypted-ipfs` when configured, else
/// `ipfs`; the provider is the caller's, else the configured one, else the fallback.
pub fn open(mem: &Memory, choice: &Choice) -> Result<Opened> {
    open_with(Config::load(mem)?, choice)
}

/// Opens a provider the caller built (a [`crate::provider::Folder`] on a path it
/// chose, say) with the seal and configuration [`open`] would give it: the mode is
/// `mode`, else `encrypted-ipfs` when configured, else `ipfs`. For embedders that
/// name their remote in code rather than in the environment (the Python package's
/// `Memory.sync(folder=...)`).
pub fn open_provider(mem: &Memory, provider: Blocking, mode: Option<Mode>) -> Result<Opened> {
    let config = Config::load(mem)?;
    let mode = choose_mode(mode, &config);
    let seal = seal_for(mode, &config)?;
    Ok(Opened {
        provider,
        seal,
        config,
    })
}

/// The caller's mode, else `encrypted-ipfs` when configured, else `ipfs`.
fn choose_mode(asked: Option<Mode>, config: &Config) -> Mode {
    match (asked, config.mode) {
        (Some(m), _) => m,
        (None, Mode::EncryptedIpfs) => Mode::EncryptedIpfs,
        (None, _) => Mode::Ipfs,
    }
}

/// The seal of `mode`: the key for `encrypted-ipfs`, nothing otherwise.
fn seal_for(mode: Mode, config: &Config) -> Result<Seal> {
    Ok(if mode == Mode::EncryptedIpfs {
        Seal::Sealed(load_key(config)?)
    } else {
        Seal::Plain
    })
}

fn open_with(config: Config, choice: &Choice) -> Result<Opened> {
    let mode = choose_mode(choice.mode, &config);
    let settings = Settings::from_env(&provider::process_env)?;
    let provider = if let Some(url) = &choice.gateway {
        Blocking::new(Box::new(provider::Gateways::new(&[url], &settings)?))?
    } else {
        let name = choice
            .provider
            .clone()
            .or_else(|| config.provider.clone())
            .or_else(|| choice.fallback.clone())
            .ok_or(SyncError::NoProvider)?;
        Blocking::new(provider::from_env(
            &name,
            &provider::process_env,
            &settings,
        )?)?
    };
    let seal = seal_for(mode, &config)?;
    Ok(Opened {
        provider,
        seal,
        config,
    })
}

/// The push that follows a successful `write`, `forget` or `note`: nothing when the
/// configured mode does not sync (`Ok(None)`), else a push with the configured
/// provider and seal. A failure leaves the local change in place; the caller says
/// so (spec/sync.md#push-after-write).
pub fn push_after_write(mem: &Memory, progress: &dyn Progress) -> Result<Option<PushReport>> {
    let config = Config::load(mem)?;
    if !config.mode.syncs() {
        return Ok(None);
    }
    let opened = open_with(config, &Choice::default())?;
    crate::sync::push(mem, &opened.remote(progress), false).map(Some)
}
