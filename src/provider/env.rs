//! Providers configured from the environment: credentials, endpoints and timeouts
//! come only from variables, never from a file in the memory directory.

// Errors carry CIDs by value; see the note in `crate::ipfs::car`.
#![allow(clippy::result_large_err)]

use crate::clock::Clock;
use crate::provider::{
    Filebase, Folder, Gateways, HttpConfig, Kubo, Pinata, Provider, ProviderError, Storacha,
    filebase, kubo, pinata, storacha,
};

/// A source of environment variables (the process environment, or a map in tests).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Reads `key` from the process environment; empty values count as unset.
pub fn process_env(key: &str) -> Option<String> {
    std::env::var(key).ok().filter(|v| !v.trim().is_empty())
}

/// Settings shared by every provider.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Timeouts and retries.
    pub http: HttpConfig,
    /// Time source for request signatures (Filebase S3).
    pub clock: Clock,
}

impl Settings {
    /// HTTP settings from `MEMDIR_HTTP_TIMEOUT` / `MEMDIR_HTTP_ATTEMPTS`, and the
    /// system clock.
    pub fn from_env(env: Env<'_>) -> Result<Settings, ProviderError> {
        Ok(Settings {
            http: HttpConfig::from_env(env)?,
            clock: Clock::system(),
        })
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            http: HttpConfig::default(),
            clock: Clock::system(),
        }
    }
}

/// Refuses a channel name that could not be a plain path segment on a provider.
pub(crate) fn check_channel(provider: &str, channel: &str) -> Result<(), ProviderError> {
    if crate::memory::layout::valid_channel(channel) {
        return Ok(());
    }
    Err(ProviderError::BadConfig {
        provider: provider.to_string(),
        var: "channel",
        value: channel.to_string(),
        reason: "1-64 characters of a-z, 0-9, `-` and `_`".into(),
    })
}

/// Names accepted by [`from_env`], in the order [`configured`] tries them.
pub const PROVIDER_NAMES: [&str; 6] = [
    "kubo", "pinata", "filebase", "storacha", "gateway", "folder",
];

/// Builds the provider called `name` from the environment.
pub fn from_env(
    name: &str,
    env: Env<'_>,
    settings: &Settings,
) -> Result<Box<dyn Provider>, ProviderError> {
    Ok(match name {
        "kubo" => Box::new(Kubo::from_env(env, settings)?),
        "pinata" => Box::new(Pinata::from_env(env, settings)?),
        "filebase" => Box::new(Filebase::from_env(env, settings)?),
        "storacha" => Box::new(Storacha::from_env(env, settings)?),
        "gateway" => Box::new(Gateways::from_env(env, settings)?),
        "folder" => Box::new(Folder::from_env(env)?),
        _ => {
            return Err(ProviderError::BadConfig {
                provider: name.to_string(),
                var: "provider",
                value: name.to_string(),
                reason: format!("not one of {}", PROVIDER_NAMES.join(", ")),
            });
        }
    })
}

/// Every push-capable provider whose credentials are present in `env`
/// (`IPFS_API`, `PINATA_JWT`, `FILEBASE_KEY`, `WEB3_STORAGE_TOKEN`), in
/// [`PROVIDER_NAMES`] order. A provider that is partly configured is an error.
pub fn configured(
    env: Env<'_>,
    settings: &Settings,
) -> Result<Vec<Box<dyn Provider>>, ProviderError> {
    let mut out = Vec::new();
    for (name, var) in [
        ("kubo", kubo::API_VAR),
        ("pinata", pinata::JWT_VAR),
        ("filebase", filebase::KEY_VAR),
        ("storacha", storacha::SECRET_VAR),
    ] {
        if env(var).is_some() {
            out.push(from_env(name, env, settings)?);
        }
    }
    Ok(out)
}
