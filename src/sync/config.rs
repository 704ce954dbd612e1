//! The directory's sync configuration, `.memdir/config.toml`.
//!
//! Owns the file's keys, their defaults and validation: the sync mode, the default
//! provider, the channel a provider's head pointer is kept under, how many pushed
//! versions stay pinned, and the key file of the encrypted mode. It never holds
//! credentials (those come only from the environment). The file is read by its one
//! reader, `store::config`, which hands the `[embeddings]` table to the embed wing;
//! writing it happens here; callers get a validated [`Config`] or an error naming the
//! file, line and key.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::engine::IndexOwner;
use crate::engine::Memory;
use crate::error::Result;
use crate::memory::layout::{CONFIG_FILE, valid_channel};

/// How many pushed versions stay pinned per provider when the file does not say.
pub const DEFAULT_KEEP_VERSIONS: u32 = 10;

/// The channel a provider's head pointer is kept under when the file does not say.
pub const DEFAULT_CHANNEL: &str = "default";

/// Names a `provider` key may take (`folder` is a directory of CAR files).
pub const PROVIDERS: [&str; 6] = [
    "kubo", "pinata", "filebase", "storacha", "gateway", "folder",
];

/// How the directory is kept (spec/sync.md#configuration-memdirconfigtoml). `none` (memory only) is a library mode and
/// has no directory, so it never appears in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Files on disk, no sync.
    #[default]
    Local,
    /// Pushed to and pulled from IPFS as a plain UnixFS DAG.
    Ipfs,
    /// Pushed as one sealed blob; the network sees only ciphertext.
    EncryptedIpfs,
}

impl Mode {
    /// Parses `local`, `ipfs` or `encrypted-ipfs`.
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "local" => Some(Mode::Local),
            "ipfs" => Some(Mode::Ipfs),
            "encrypted-ipfs" => Some(Mode::EncryptedIpfs),
            _ => None,
        }
    }

    /// The name used in the file and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Local => "local",
            Mode::Ipfs => "ipfs",
            Mode::EncryptedIpfs => "encrypted-ipfs",
        }
    }

    /// Whether writes push and `push`/`pull` talk to a provider.
    pub fn syncs(self) -> bool {
        !matches!(self, Mode::Local)
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The contents of `.memdir/config.toml`; every key is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `local` (default), `ipfs` or `encrypted-ipfs`.
    #[serde(default)]
    pub mode: Mode,
    /// The default provider for push / pull / sync: one of [`PROVIDERS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Name of the head pointer on the provider (devices that share one sync together).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// Pushed versions kept pinned per provider; older pins are removed after a push.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_versions: Option<u32>,
    /// The encrypted-ipfs key file (`MEMDIR_KEY_FILE` overrides it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_file: Option<PathBuf>,
    /// Who keeps MEMORY.md: `agent` (Claude Code; memdir only checks it) or `memdir`;
    /// read by the engine (spec/index-format.md#agent-index), kept here so that writing
    /// the file back keeps it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<String>,
    /// `[embeddings]`, read and validated by the embed wing (spec/ranking.md#hybrid-recall);
    /// kept here so that writing the file back keeps it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embeddings: Option<crate::embed::Section>,
}

pub use crate::store::config::ConfigError;

impl Config {
    /// The channel, defaulted.
    pub fn channel(&self) -> &str {
        self.channel.as_deref().unwrap_or(DEFAULT_CHANNEL)
    }

    /// The number of versions kept pinned, defaulted.
    pub fn keep_versions(&self) -> u32 {
        self.keep_versions.unwrap_or(DEFAULT_KEEP_VERSIONS)
    }

    /// Parses and validates the text of a configuration file shown as `path`.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let err = |line, message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            line,
            message,
        };
        let cfg: Config = toml::from_str(text).map_err(|e| ConfigError::toml(text, path, &e))?;
        let line_of = |key: &str| {
            text.lines()
                .position(|l| l.trim_start().starts_with(key))
                .map(|i| i + 1)
        };
        if let Some(i) = &cfg.index
            && let Err(message) = IndexOwner::parse(i)
        {
            return Err(err(line_of("index"), message));
        }
        if let Some(p) = &cfg.provider
            && !PROVIDERS.contains(&p.as_str())
        {
            return Err(err(
                line_of("provider"),
                format!(
                    "provider `{p}` is not one of {} (credentials never go in this file; they come from the environment)",
                    PROVIDERS.join(", ")
                ),
            ));
        }
        if cfg.keep_versions == Some(0) {
            return Err(err(
                line_of("keep_versions"),
                "keep_versions must be at least 1 (the current version always stays pinned)".into(),
            ));
        }
        if let Some(c) = &cfg.channel
            && !valid_channel(c)
        {
            return Err(err(
                line_of("channel"),
                format!("channel `{c}` must be 1-64 characters of a-z, 0-9, `-` and `_`"),
            ));
        }
        Ok(cfg)
    }

    /// Reads the directory's configuration through its one reader
    /// (`store::config`); a missing file is the default.
    pub fn load(mem: &Memory) -> Result<Config, ConfigError> {
        match crate::store::config::read(mem.backend())? {
            None => Ok(Config::default()),
            Some(file) => Config::parse(&file.text, &file.path),
        }
    }

    /// Writes the configuration atomically.
    pub fn save(&self, mem: &Memory) -> Result<()> {
        let mut text = String::from(
            "# memdir sync settings (`memdir init --help`). Credentials never go here:\n\
             # providers read them from the environment.\n",
        );
        text.push_str(&toml::to_string(self).expect("a Config always serializes"));
        mem.backend().write_atomic(CONFIG_FILE, text.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("config.toml"))
    }

    #[test]
    fn defaults_and_full_file() {
        let c = parse("").unwrap();
        assert_eq!(c.mode, Mode::Local);
        assert_eq!(c.channel(), "default");
        assert_eq!(c.keep_versions(), 10);
        let c = parse(
            "mode = \"encrypted-ipfs\"\nprovider = \"kubo\"\nchannel = \"laptop_phone\"\nkeep_versions = 3\nkey_file = \"/k\"\n",
        )
        .unwrap();
        assert_eq!(c.mode, Mode::EncryptedIpfs);
        assert_eq!(c.provider.as_deref(), Some("kubo"));
        assert_eq!(c.channel(), "laptop_phone");
        assert_eq!(c.keep_versions(), 3);
        assert_eq!(c.key_file, Some(PathBuf::from("/k")));
        // Round trip through save's serializer.
        let text = toml::to_string(&c).unwrap();
        assert_eq!(parse(&text).unwrap(), c);
        // The [embeddings] section is the embed wing's; it is kept through a save
        // (spec/ranking.md#hybrid-recall).
        let c = parse("mode = \"local\"\n[embeddings]\nurl = \"http://127.0.0.1:1\"\nmodel = \"m\"\ndimensions = 8\n").unwrap();
        assert!(c.embeddings.is_some());
        let text = toml::to_string(&c).unwrap();
        assert!(text.contains("[embeddings]"), "{text}");
        assert_eq!(parse(&text).unwrap(), c);
    }

    #[test]
    fn errors_name_the_line() {
        // (file text, expected line, a word the message must contain)
        let cases: &[(&str, usize, &str)] = &[
            ("mode = \"ipfs\"\nmode = \"local\"\n", 2, "duplicate"),
            ("mode = \"cloud\"\n", 1, "unknown variant"),
            ("\nprovider = \"dropbox\"\n", 2, "dropbox"),
            ("keep_versions = 0\n", 1, "at least 1"),
            ("keep_versions = -2\n", 1, "invalid value"),
            ("token = \"abc\"\n", 1, "unknown field"),
            (
                "mode = \"local\"\nindex = \"claude\"\n",
                2,
                "is not `agent`",
            ),
            ("channel = \"../x\"\n", 1, "channel"),
            ("mode = \n", 1, "string"),
        ];
        for (text, line, word) in cases {
            let e = parse(text).expect_err(text);
            let ConfigError::Invalid { line: got, .. } = &e else {
                panic!("{text:?}: {e} is not Invalid");
            };
            assert_eq!(*got, Some(*line), "{text:?}: {e}");
            assert!(
                e.to_string().to_lowercase().contains(word),
                "{text:?}: {e} lacks {word}"
            );
            assert!(e.to_string().starts_with(&format!("config.toml:{line}: ")));
        }
    }

    #[test]
    fn modes() {
        for m in [Mode::Local, Mode::Ipfs, Mode::EncryptedIpfs] {
            assert_eq!(Mode::parse(m.as_str()), Some(m));
        }
        assert_eq!(Mode::parse("none"), None);
        assert!(!Mode::Local.syncs() && Mode::Ipfs.syncs() && Mode::EncryptedIpfs.syncs());
    }
}
