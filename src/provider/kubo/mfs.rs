//! The node's MFS (`files/*`) as the place memdir keeps state on a Kubo node: one head
//! entry per channel under `/memdir`, the compare-and-swap of a head behind an MFS lock,
//! and the lineage of versions under `/memdir/.lineage`. It must not move CARs or blocks.

use cid::Cid;
use reqwest::Method;
use reqwest::multipart::Form;
use serde_json::Value;

use super::{Kubo, NAME};
use crate::provider::http::{Call, redact};
use crate::provider::{HeadSwap, ProviderError};

/// The MFS folder that holds one head entry per channel.
const HEAD_DIR: &str = "/memdir";

impl Kubo {
    pub(super) fn head_path(channel: &str) -> Result<String, ProviderError> {
        crate::provider::check_channel(NAME, channel)?;
        Ok(format!("{HEAD_DIR}/{channel}"))
    }

    /// A JSON RPC call without retries of its own beyond the client's; `Ok(None)`
    /// when the node answers that the MFS path does not exist.
    pub(super) async fn mfs(
        &self,
        command: &str,
        args: &[(&str, &str)],
    ) -> Result<Option<Value>, ProviderError> {
        let method = Method::POST;
        let url = self.rpc(command, args);
        let response = match self
            .http
            .send(Call::new(method.clone(), url.clone()), |rb| self.auth(rb))
            .await
        {
            Ok(r) => r,
            Err(e) if is_missing_path(&e) => return Ok(None),
            // A node without the MFS API (Filebase's IPFS RPC) keeps no head.
            Err(ProviderError::Status {
                status: 404 | 405 | 501,
                ..
            }) => {
                return Err(ProviderError::Unsupported {
                    provider: NAME.into(),
                    operation: "keep a head pointer: this node has no MFS (`files/*`) API; pass the CID to pull or sync",
                });
            }
            Err(e) => return Err(e),
        };
        let body = self
            .http
            .body(&method, &url, response, crate::provider::http::JSON_LIMIT)
            .await?;
        if body.trim_ascii().is_empty() {
            return Ok(Some(Value::Null));
        }
        serde_json::from_slice(&body).map(Some).map_err(|e| {
            self.http
                .bad_response(&method, &url, format!("invalid JSON: {e}"))
        })
    }

    /// `files/stat` of the channel's MFS entry.
    pub(super) async fn read_head(&self, channel: &str) -> Result<Option<Cid>, ProviderError> {
        let path = Self::head_path(channel)?;
        let Some(v) = self
            .mfs("files/stat", &[("arg", path.as_str()), ("hash", "true")])
            .await?
        else {
            return Ok(None);
        };
        let hash = v["Hash"].as_str().unwrap_or_default();
        Cid::try_from(hash).map(Some).map_err(|e| {
            self.http.bad_response(
                &Method::POST,
                &self.rpc("files/stat", &[]),
                format!("`Hash` {hash:?} is not a CID: {e}"),
            )
        })
    }

    /// Points the channel's MFS entry at `root` (`files/rm` then `files/cp`; the node
    /// holds the blocks already, since `root` was just imported).
    pub(super) async fn write_head(&self, channel: &str, root: &Cid) -> Result<(), ProviderError> {
        let path = Self::head_path(channel)?;
        let source = format!("/ipfs/{root}");
        self.mfs("files/mkdir", &[("arg", HEAD_DIR), ("parents", "true")])
            .await?;
        self.mfs(
            "files/rm",
            &[
                ("arg", path.as_str()),
                ("recursive", "true"),
                ("force", "true"),
            ],
        )
        .await?;
        self.mfs(
            "files/cp",
            &[("arg", source.as_str()), ("arg", path.as_str())],
        )
        .await?;
        match self.read_head(channel).await? {
            Some(c) if c == *root => Ok(()),
            other => Err(ProviderError::BadResponse {
                provider: NAME.into(),
                method: "POST".into(),
                url: redact(&self.rpc("files/stat", &[])),
                detail: format!(
                    "head {path} reads {} after it was set to {root}",
                    other
                        .map(|c| c.to_string())
                        .unwrap_or_else(|| "nothing".into())
                ),
            }),
        }
    }
}

/// How long a head swap waits for another writer's MFS lock; then the lock is taken
/// to be a dead writer's and removed.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

impl Kubo {
    /// Compare-and-swap of the head among memdir writers: `files/mkdir` of
    /// `/memdir/<channel>.lock` (no parents: it fails when the lock exists) guards
    /// read, compare, `files/rm` + `files/cp`; the lock is removed after. Writers that
    /// are not memdir are caught by the lineage check of the next sync.
    pub(super) async fn swap(
        &self,
        channel: &str,
        expected: Option<&Cid>,
        root: &Cid,
    ) -> Result<HeadSwap, ProviderError> {
        Self::head_path(channel)?;
        let lock = format!("{HEAD_DIR}/{channel}.lock");
        let unlock = [
            ("arg", lock.as_str()),
            ("recursive", "true"),
            ("force", "true"),
        ];
        self.mfs("files/mkdir", &[("arg", HEAD_DIR), ("parents", "true")])
            .await?;
        let mut start = std::time::Instant::now();
        let mut pause = std::time::Duration::from_millis(5);
        loop {
            match self.mfs("files/mkdir", &[("arg", lock.as_str())]).await {
                Ok(_) => break,
                Err(ProviderError::Status {
                    status: 500,
                    detail,
                    ..
                }) if detail.to_ascii_lowercase().contains("exists") => {
                    if start.elapsed() > LOCK_WAIT {
                        self.mfs("files/rm", &unlock).await?;
                        start = std::time::Instant::now();
                        continue;
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(std::time::Duration::from_millis(100));
                }
                Err(e) => return Err(e),
            }
        }
        let result = async {
            let found = self.read_head(channel).await?;
            if found.as_ref() != expected {
                return Ok(HeadSwap::Changed { found });
            }
            self.write_head(channel, root).await?;
            Ok(HeadSwap::Moved)
        }
        .await;
        let unlocked = self.mfs("files/rm", &unlock).await;
        let swapped = result?;
        unlocked?;
        Ok(swapped)
    }
}

/// The MFS folder that holds the lineage of plain versions (spec/sync.md#lineage),
/// one file per root. A dot name, so it never clashes with a channel.
const LINEAGE_DIR: &str = "/memdir/.lineage";

/// Largest lineage file read back.
const LINEAGE_LIMIT: usize = 1 << 20;

impl Kubo {
    /// `files/write` of `/memdir/.lineage/<root>` (created with its parents).
    pub(super) async fn write_lineage(&self, root: &Cid, data: &[u8]) -> Result<(), ProviderError> {
        let path = format!("{LINEAGE_DIR}/{root}");
        let method = Method::POST;
        let url = self.rpc(
            "files/write",
            &[
                ("arg", path.as_str()),
                ("create", "true"),
                ("parents", "true"),
                ("truncate", "true"),
            ],
        );
        let response = match self
            .http
            .send(Call::new(method.clone(), url.clone()), |rb| {
                let part = reqwest::multipart::Part::bytes(data.to_vec())
                    .file_name("lineage")
                    .mime_str("application/octet-stream")
                    .expect("a constant media type parses");
                self.auth(rb).multipart(Form::new().part("file", part))
            })
            .await
        {
            Ok(r) => r,
            Err(ProviderError::Status {
                status: 404 | 405 | 501,
                ..
            }) => {
                return Err(ProviderError::Unsupported {
                    provider: NAME.into(),
                    operation: "keep the lineage of a version: this node has no MFS (`files/*`) API",
                });
            }
            Err(e) => return Err(e),
        };
        self.http
            .body(&method, &url, response, crate::provider::http::JSON_LIMIT)
            .await?;
        Ok(())
    }

    /// `files/read` of `/memdir/.lineage/<root>`; `None` when there is none.
    pub(super) async fn read_lineage(&self, root: &Cid) -> Result<Option<Vec<u8>>, ProviderError> {
        let path = format!("{LINEAGE_DIR}/{root}");
        let method = Method::POST;
        let url = self.rpc("files/read", &[("arg", path.as_str())]);
        match self
            .http
            .send(Call::new(method.clone(), url.clone()), |rb| self.auth(rb))
            .await
        {
            Ok(r) => self
                .http
                .body(&method, &url, r, LINEAGE_LIMIT)
                .await
                .map(Some),
            Err(e) if is_missing_path(&e) => Ok(None),
            Err(ProviderError::Status {
                status: 404 | 405 | 501,
                ..
            }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// Kubo answers `file does not exist`, js-ipfs `<path> does not exist`, both with
/// HTTP 500.
fn is_missing_path(e: &ProviderError) -> bool {
    matches!(e, ProviderError::Status { status: 500, detail, .. }
        if detail.to_ascii_lowercase().contains("does not exist"))
}
