//! Why a provider operation failed, and how it classifies (exit 3 or 4).

// Errors carry CIDs by value; see the note in `crate::ipfs::car`.
#![allow(clippy::result_large_err)]

use std::time::Duration;

use cid::Cid;

use crate::error::Class;
use crate::ipfs::car::CarError;
use crate::provider::DEADLINE_VAR;

/// Why a provider operation failed.
///
/// URLs in errors never carry credentials: user info is removed and query
/// values whose names look like secrets are replaced.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The request could not be sent or its answer not received.
    #[error("{provider}: {method} {url} failed: {source}")]
    Transport {
        /// Provider name.
        provider: String,
        /// HTTP method.
        method: String,
        /// Redacted URL.
        url: String,
        /// The client error.
        #[source]
        source: reqwest::Error,
    },
    /// No answer within the time limit.
    #[error("{provider}: {method} {url} timed out after {}", secs(.after))]
    Timeout {
        /// Provider name.
        provider: String,
        /// HTTP method.
        method: String,
        /// Redacted URL.
        url: String,
        /// The limit that expired.
        after: Duration,
    },
    /// The provider answered with an error status.
    #[error("{provider}: {method} {url} answered HTTP {status}{}", detail_suffix(.detail))]
    Status {
        /// Provider name.
        provider: String,
        /// HTTP method.
        method: String,
        /// Redacted URL.
        url: String,
        /// HTTP status code.
        status: u16,
        /// Start of the response body (error code or message), if any.
        detail: String,
    },
    /// The provider answered 2xx with something we cannot use.
    #[error("{provider}: {method} {url}: unexpected answer: {detail}")]
    BadResponse {
        /// Provider name.
        provider: String,
        /// HTTP method.
        method: String,
        /// Redacted URL.
        url: String,
        /// What was wrong.
        detail: String,
    },
    /// The provider understood the request and refused it (a failed UCAN
    /// task, a pin error message).
    #[error("{provider}: {operation} was refused: {detail}")]
    Rejected {
        /// Provider name.
        provider: String,
        /// What we asked for.
        operation: String,
        /// The provider's reason.
        detail: String,
    },
    /// The provider reported a root other than the one we uploaded.
    #[error("{provider} reported root {reported} for an upload whose root is {expected}")]
    WrongRoot {
        /// Provider name.
        provider: String,
        /// Our root.
        expected: Cid,
        /// What the provider said, verbatim.
        reported: String,
    },
    /// A downloaded CAR failed verification.
    #[error("{provider}: the CAR from {url} failed verification: {source}")]
    Car {
        /// Provider name.
        provider: String,
        /// Redacted URL.
        url: String,
        /// What the reader found.
        #[source]
        source: CarError,
    },
    /// A single downloaded block failed verification.
    #[error("{provider}: block {cid} from {url} {problem}")]
    BadBlock {
        /// Provider name.
        provider: String,
        /// Redacted URL.
        url: String,
        /// The block asked for.
        cid: Cid,
        /// What was wrong.
        problem: String,
    },
    /// Every source was tried and none delivered a verified DAG.
    #[error("{provider}: no source delivered {root}: {}", summary(.attempts))]
    AllFailed {
        /// Provider name.
        provider: String,
        /// The root asked for.
        root: Cid,
        /// Each source's failure, in the order tried.
        attempts: Vec<ProviderError>,
    },
    /// A folder provider could not read or write its folder (an unplugged
    /// drive, a full disk, no permission).
    #[error("folder {}: {source}", .path.display())]
    Folder {
        /// The file or folder.
        path: std::path::PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A required environment variable is not set.
    #[error("{provider} is not configured: set {var}")]
    NotConfigured {
        /// Provider name.
        provider: String,
        /// The missing variable(s).
        var: &'static str,
    },
    /// An environment variable has a value we cannot use (never a secret's value).
    #[error("{provider}: {var}={value:?} is not usable: {reason}")]
    BadConfig {
        /// Provider name.
        provider: String,
        /// The variable.
        var: &'static str,
        /// Its value (only for non-secret variables such as URLs).
        value: String,
        /// Why.
        reason: String,
    },
    /// The provider does not offer this operation.
    #[error("{provider} cannot {operation}")]
    Unsupported {
        /// Provider name.
        provider: String,
        /// The operation.
        operation: &'static str,
    },
    /// The async runtime for [`Blocking`](crate::provider::Blocking) could not start.
    #[error("cannot start the network runtime: {source}")]
    Runtime {
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

fn secs(d: &Duration) -> String {
    if d.as_millis() < 10_000 && d.subsec_millis() != 0 {
        format!("{} ms", d.as_millis())
    } else {
        format!("{} s", d.as_secs())
    }
}

fn detail_suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

fn summary(attempts: &[ProviderError]) -> String {
    attempts
        .iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("; ")
}

impl ProviderError {
    /// Remote (exit 3), Integrity (exit 4) or Usage (configuration).
    pub fn class(&self) -> Class {
        match self {
            ProviderError::Transport { .. }
            | ProviderError::Timeout { .. }
            | ProviderError::Status { .. }
            | ProviderError::BadResponse { .. }
            | ProviderError::Rejected { .. }
            | ProviderError::Folder { .. } => Class::Remote,
            ProviderError::WrongRoot { .. }
            | ProviderError::Car { .. }
            | ProviderError::BadBlock { .. } => Class::Integrity,
            ProviderError::AllFailed { attempts, .. } => {
                if attempts.iter().any(|e| e.class() == Class::Integrity) {
                    Class::Integrity
                } else {
                    Class::Remote
                }
            }
            ProviderError::NotConfigured { .. }
            | ProviderError::BadConfig { .. }
            | ProviderError::Unsupported { .. } => Class::Usage,
            ProviderError::Runtime { .. } => Class::Input,
        }
    }

    /// The HTTP status, when the provider answered with an error status.
    pub fn status(&self) -> Option<u16> {
        match self {
            ProviderError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// A hint on what to do about the error, when there is a useful one.
    pub fn hint(&self) -> Option<String> {
        match self {
            ProviderError::Status {
                provider,
                status: 401 | 403,
                ..
            } => Some(format!(
                "the provider refused the credentials: check {}",
                credential_vars(provider)
            )),
            ProviderError::Status { status, .. } if *status == 429 || *status >= 500 => {
                Some("the provider is busy or failing; try again later".into())
            }
            ProviderError::Timeout { method, .. } if method == "transfer" => Some(format!(
                "nothing was changed; check the network and that the provider holds the CID (a node that lacks it may wait for it forever); set {DEADLINE_VAR} (seconds) to allow longer"
            )),
            ProviderError::Transport { .. } | ProviderError::Timeout { .. } => Some(
                "check the network and the provider URL; set MEMDIR_HTTP_TIMEOUT to wait longer"
                    .into(),
            ),
            ProviderError::WrongRoot { .. } => {
                Some("the provider re-encoded or substituted the data; nothing was recorded".into())
            }
            ProviderError::Car {
                source: CarError::UnsupportedRoot { .. } | CarError::UnsupportedCid { .. } | CarError::UnsupportedLink { .. } | CarError::IdentityCid { .. },
                ..
            } => Some(
                "memdir reads UnixFS DAGs of raw and dag-pb blocks hashed with sha2-256 (CIDv0 or CIDv1); nothing was changed"
                    .into(),
            ),
            ProviderError::Car {
                source: CarError::MissingBlock { .. },
                ..
            } => Some(
                "the archive lacks a block its DAG links to (an incomplete CAR); nothing was changed"
                    .into(),
            ),
            ProviderError::Car {
                source: CarError::Unreachable { .. },
                ..
            } => Some(
                "the archive holds a block the requested root does not link to (a CAR of another DAG, or of more than one); nothing was changed"
                    .into(),
            ),
            ProviderError::Car {
                source: CarError::DagPb { .. },
                ..
            } => Some("a block is not well-formed dag-pb, so it is no UnixFS DAG memdir can read; nothing was changed".into()),
            ProviderError::Car { .. }
            | ProviderError::BadBlock { .. }
            | ProviderError::AllFailed { .. }
                if self.class() == Class::Integrity =>
            {
                Some("the data did not match its CID and was discarded; nothing was changed".into())
            }
            ProviderError::NotConfigured { var, .. } => {
                Some(format!(
                    "export {var} (`memdir push --help` lists each provider's variables)"
                ))
            }
            _ => None,
        }
    }
}

fn credential_vars(provider: &str) -> &'static str {
    match provider {
        "kubo" => "IPFS_API and IPFS_API_TOKEN",
        "pinata" => "PINATA_JWT",
        "filebase" => "FILEBASE_KEY, FILEBASE_SECRET and FILEBASE_BUCKET",
        "storacha" => "WEB3_STORAGE_TOKEN, STORACHA_AUTH and STORACHA_SPACE",
        "folder" => "MEMDIR_FOLDER",
        _ => "the provider's credentials",
    }
}
