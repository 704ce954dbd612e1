//! The Kubo RPC API (`/api/v0/...`): a local or remote Kubo-compatible node,
//! including Filebase's IPFS RPC (`https://rpc.filebase.io`, bearer token).
//!
//! Upload is `dag/import?pin-roots=true` with the CAR as a multipart file and
//! the reported root checked; download is `dag/export` streamed through the CAR
//! reader, or, where the node has no `dag/export` (Filebase), a walk of the DAG
//! with `block/get`, each block verified before its links are followed.

use std::collections::HashSet;

use cid::Cid;
use reqwest::header::AUTHORIZATION;
use reqwest::multipart::Form;
use reqwest::{Method, RequestBuilder, Url};
use serde_json::Value;

use super::http::{
    Call, CarFailure, Http, Try, Want, base_url, car_part, check_block, default_transient, join,
    redact,
};
use super::{
    Blocks, BoxFuture, Capabilities, Direction, Env, HeadSwap, Progress, Provider, ProviderError,
    Receipt, Settings, check_root,
};
use crate::ipfs::car::{self, CarError, CarLimits};
use crate::ipfs::unixfs::{CODEC_DAG_PB, decode_pb};

mod mfs;
mod probe;

/// Environment variable: the RPC base URL, e.g. `http://127.0.0.1:5001`.
pub(crate) const API_VAR: &str = "IPFS_API";
/// Environment variable: optional bearer token (Filebase RPC bucket token).
pub(crate) const TOKEN_VAR: &str = "IPFS_API_TOKEN";

const NAME: &str = "kubo";
/// Concurrent `block/get` requests while walking a DAG.
const WALK_CONCURRENCY: usize = 8;

/// A Kubo RPC endpoint.
#[derive(Clone)]
pub struct Kubo {
    http: Http,
    base: Url,
    token: Option<String>,
}

impl std::fmt::Debug for Kubo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kubo")
            .field("api", &redact(&self.base))
            .field("token", &self.token.as_ref().map(|_| "(set)"))
            .finish()
    }
}

/// Kubo answers every command error with 500 and a JSON `{"Type":"error"}`
/// body; those are final. Other 5xx (a proxy in front of the node) may pass.
fn kubo_transient(status: u16, body: &[u8]) -> bool {
    if status == 500
        && serde_json::from_slice::<Value>(body)
            .map(|v| v["Type"] == "error")
            .unwrap_or(false)
    {
        return false;
    }
    default_transient(status, body)
}

impl Kubo {
    /// An RPC endpoint at `api` with an optional bearer token.
    pub fn new(
        api: &str,
        token: Option<String>,
        settings: &Settings,
    ) -> Result<Kubo, ProviderError> {
        Ok(Kubo {
            http: Http::new(NAME, &settings.http)?.with_transient(kubo_transient),
            base: base_url(NAME, API_VAR, api)?,
            token,
        })
    }

    /// `IPFS_API` and optional `IPFS_API_TOKEN`.
    pub fn from_env(env: Env<'_>, settings: &Settings) -> Result<Kubo, ProviderError> {
        let api = env(API_VAR).ok_or(ProviderError::NotConfigured {
            provider: NAME.into(),
            var: API_VAR,
        })?;
        Kubo::new(&api, env(TOKEN_VAR), settings)
    }

    fn rpc(&self, command: &str, args: &[(&str, &str)]) -> Url {
        let mut url = join(&self.base, &format!("api/v0/{command}"));
        if !args.is_empty() {
            url.query_pairs_mut().extend_pairs(args);
        }
        url
    }

    fn auth(&self, rb: RequestBuilder) -> RequestBuilder {
        match &self.token {
            Some(t) => rb.header(AUTHORIZATION, format!("Bearer {t}")),
            None => rb,
        }
    }

    /// `dag/import?pin-roots=true` with `call`'s limits; checks the root.
    async fn import(
        &self,
        root: &Cid,
        car_data: &[u8],
        progress: &dyn Progress,
        call: Call<'_>,
    ) -> Result<Receipt, ProviderError> {
        let (method, url) = (call.method.clone(), call.url.clone());
        let total = car_data.len() as u64;
        progress.progress(Direction::Upload, 0, Some(total));
        let response = self
            .http
            .send(call, |rb| {
                let part = car_part(car_data, "memdir.car");
                self.auth(rb).multipart(Form::new().part("file", part))
            })
            .await?;
        let body = self
            .http
            .body(&method, &url, response, super::http::JSON_LIMIT)
            .await?;
        progress.progress(Direction::Upload, total, Some(total));
        // Newline-delimited JSON: one {"Root": {"Cid": {"/": ...}, "PinErrorMsg": ...}}
        // per root in the CAR header, possibly followed by {"Stats": ...}.
        let mut roots = Vec::new();
        for line in body
            .split(|&b| b == b'\n')
            .filter(|l| !l.trim_ascii().is_empty())
        {
            let v: Value = serde_json::from_slice(line).map_err(|e| {
                self.http
                    .bad_response(&method, &url, format!("invalid JSON line: {e}"))
            })?;
            let Some(r) = v.get("Root") else { continue };
            let cid = r["Cid"]["/"]
                .as_str()
                .or_else(|| r["Cid"].as_str())
                .unwrap_or_default()
                .to_string();
            let pin_error = r["PinErrorMsg"].as_str().unwrap_or_default();
            if !pin_error.is_empty() {
                return Err(ProviderError::Rejected {
                    provider: NAME.into(),
                    operation: format!("pinning {cid}"),
                    detail: pin_error.chars().take(300).collect(),
                });
            }
            roots.push(cid);
        }
        if roots.is_empty() {
            return Err(self
                .http
                .bad_response(&method, &url, "no root reported".into()));
        }
        for reported in &roots {
            check_root(NAME, root, reported)?;
        }
        Ok(Receipt {
            provider: NAME.into(),
            root: *root,
            provider_id: root.to_string(),
            car_bytes: total,
            delta: false,
        })
    }

    async fn put_full(
        &self,
        root: &Cid,
        car_data: &[u8],
        progress: &dyn Progress,
    ) -> Result<Receipt, ProviderError> {
        let call = Call {
            timeout: Some(self.http.cfg.transfer_timeout),
            ..Call::new(
                Method::POST,
                self.rpc("dag/import", &[("pin-roots", "true")]),
            )
        };
        self.import(root, car_data, progress, call).await
    }

    async fn put_delta(
        &self,
        root: &Cid,
        delta: &[u8],
        full: &[u8],
        progress: &dyn Progress,
    ) -> Result<Receipt, ProviderError> {
        if delta.len() >= full.len() {
            return self.put_full(root, full, progress).await;
        }
        // A node that lacks the earlier blocks may wait for them forever
        // (measured on js-ipfs), so the delta gets one short attempt.
        let call = Call {
            timeout: Some(self.http.cfg.delta_timeout),
            attempts: Some(1),
            ..Call::new(
                Method::POST,
                self.rpc("dag/import", &[("pin-roots", "true")]),
            )
        };
        match self.import(root, delta, progress, call).await {
            Ok(receipt) => Ok(Receipt {
                delta: true,
                ..receipt
            }),
            Err(e) if e.class() == crate::error::Class::Integrity => Err(e),
            Err(_) => self.put_full(root, full, progress).await,
        }
    }

    /// Downloads `root`; when the node says it lacks the root, asks its routing
    /// for providers meanwhile, and fails at once if the query finishes with
    /// none while the root has still not arrived (spec/providers.md#kubo).
    async fn export(
        &self,
        root: &Cid,
        limits: &CarLimits,
        progress: &dyn Progress,
    ) -> Result<Blocks, ProviderError> {
        if self.held_locally(root).await != probe::Local::Missing {
            return self.export_car(root, limits, progress).await;
        }
        let download = self.export_car(root, limits, progress);
        tokio::pin!(download);
        tokio::select! {
            biased;
            done = &mut download => done,
            routing = self.providers(root) => {
                if routing == probe::Routing::NoneFound
                    && self.held_locally(root).await == probe::Local::Missing
                {
                    return Err(self.not_available(root));
                }
                download.await
            }
        }
    }

    async fn export_car(
        &self,
        root: &Cid,
        limits: &CarLimits,
        progress: &dyn Progress,
    ) -> Result<Blocks, ProviderError> {
        let method = Method::POST;
        let root_s = root.to_string();
        let url = self.rpc("dag/export", &[("arg", root_s.as_str())]);
        // `None`: no dag/export here.
        let (method, url) = (&method, &url);
        let exported = self
            .http
            .retry_stream(move || async move {
                let call = Call {
                    timeout: Some(self.http.cfg.transfer_timeout),
                    attempts: Some(1),
                    pass: &[404, 405, 501],
                    ..Call::new(method.clone(), url.clone())
                };
                let response = match self.http.send(call, |rb| self.auth(rb)).await {
                    Ok(r) => r,
                    Err(e) if is_retryable(&e) => return Try::Again(e),
                    Err(e) => return Try::Done(Err(e)),
                };
                if matches!(response.status().as_u16(), 404 | 405 | 501) {
                    return Try::Done(Ok(None));
                }
                let want = Want {
                    root,
                    limits,
                    progress,
                    keep: false,
                };
                match self.http.verify_car(method, url, response, want).await {
                    Ok((blocks, _)) => Try::Done(Ok(Some(blocks))),
                    Err(CarFailure::Remote(e)) => Try::Again(e),
                    Err(f) => Try::Done(Err(f.into_error())),
                }
            })
            .await??;
        match exported {
            Some(blocks) => Ok(blocks),
            // No dag/export here (Filebase RPC): walk with block/get.
            None => self.walk(root, limits, progress).await,
        }
    }

    /// Fetches the DAG block by block from the root, verifying each block
    /// before following its links, then checks the whole set as a CAR.
    async fn walk(
        &self,
        root: &Cid,
        limits: &CarLimits,
        progress: &dyn Progress,
    ) -> Result<Blocks, ProviderError> {
        let mut blocks = Blocks::new();
        let mut seen: HashSet<Cid> = HashSet::from([*root]);
        let mut queue = vec![*root];
        let mut tasks = tokio::task::JoinSet::new();
        let mut total = 0u64;
        loop {
            while tasks.len() < WALK_CONCURRENCY {
                let Some(cid) = queue.pop() else { break };
                let this = self.clone();
                let limits = *limits;
                tasks.spawn(async move { (cid, this.block(&cid, &limits).await) });
            }
            let Some(joined) = tasks.join_next().await else {
                break;
            };
            let (cid, data) = joined.map_err(|e| {
                self.http
                    .bad_response(&Method::POST, &self.base, format!("block task failed: {e}"))
            })?;
            let data = data?;
            total += data.len() as u64;
            if total > limits.max_total_bytes {
                return Err(ProviderError::Car {
                    provider: NAME.into(),
                    url: redact(&self.rpc("block/get", &[])),
                    source: CarError::TotalTooLarge {
                        offset: total,
                        limit: limits.max_total_bytes,
                    },
                });
            }
            progress.progress(Direction::Download, total, None);
            if cid.codec() == CODEC_DAG_PB {
                let node = decode_pb(&data).map_err(|source| ProviderError::Car {
                    provider: NAME.into(),
                    url: redact(&self.rpc("block/get", &[])),
                    source: CarError::DagPb { cid, source },
                })?;
                for link in node.links {
                    if seen.insert(link.cid) {
                        queue.push(link.cid);
                    }
                }
            }
            blocks.insert(cid, data);
        }
        // The same checks a downloaded CAR gets, so both paths accept exactly
        // the same DAGs.
        let mut car_data = Vec::new();
        car::write_car_blocks(
            root,
            blocks.iter().map(|(c, d)| (c, d.as_slice())),
            &mut car_data,
        )
        .expect("writing into a Vec cannot fail");
        let unlimited = CarLimits {
            max_total_bytes: u64::MAX,
            ..*limits
        };
        car::read_car(car_data.as_slice(), root, &unlimited).map_err(|source| ProviderError::Car {
            provider: NAME.into(),
            url: redact(&self.rpc("block/get", &[])),
            source,
        })
    }

    async fn block(&self, cid: &Cid, limits: &CarLimits) -> Result<Vec<u8>, ProviderError> {
        let cid_s = cid.to_string();
        let url = self.rpc("block/get", &[("arg", cid_s.as_str())]);
        let method = Method::POST;
        let response = self
            .http
            .send(Call::new(method.clone(), url.clone()), |rb| self.auth(rb))
            .await?;
        let data = self
            .http
            .body(&method, &url, response, limits.max_block_size + 1)
            .await
            .map_err(|e| match e {
                ProviderError::BadResponse { .. } => ProviderError::BadBlock {
                    provider: NAME.into(),
                    url: redact(&url),
                    cid: *cid,
                    problem: format!("is over the limit of {} bytes", limits.max_block_size),
                },
                other => other,
            })?;
        check_block(cid, &data, limits).map_err(|problem| ProviderError::BadBlock {
            provider: NAME.into(),
            url: redact(&url),
            cid: *cid,
            problem,
        })?;
        Ok(data)
    }

    async fn pinned(&self, root: &Cid) -> Result<bool, ProviderError> {
        let method = Method::POST;
        let root_s = root.to_string();
        let url = self.rpc("pin/ls", &[("arg", root_s.as_str()), ("type", "recursive")]);
        let response = match self
            .http
            .send(Call::new(method.clone(), url.clone()), |rb| self.auth(rb))
            .await
        {
            Ok(r) => r,
            Err(e) if is_not_pinned(&e) => return Ok(false),
            Err(e) => return Err(e),
        };
        let body = self
            .http
            .body(&method, &url, response, super::http::JSON_LIMIT)
            .await?;
        // Either {"Keys": {"<cid>": {"Type": ...}}} or, streamed, one
        // {"Cid": "<cid>", "Type": ...} per line.
        for line in body
            .split(|&b| b == b'\n')
            .filter(|l| !l.trim_ascii().is_empty())
        {
            let v: Value = serde_json::from_slice(line).map_err(|e| {
                self.http
                    .bad_response(&method, &url, format!("invalid JSON: {e}"))
            })?;
            let mut keys: Vec<String> = v["Keys"]
                .as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            if let Some(c) = v["Cid"].as_str() {
                keys.push(c.to_string());
            }
            if keys
                .iter()
                .any(|k| Cid::try_from(k.as_str()).is_ok_and(|c| c == *root))
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    async fn unpin_root(&self, root: &Cid) -> Result<(), ProviderError> {
        let root_s = root.to_string();
        let url = self.rpc("pin/rm", &[("arg", root_s.as_str()), ("recursive", "true")]);
        match self
            .http
            .send(Call::new(Method::POST, url), |rb| self.auth(rb))
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_not_pinned(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

fn is_retryable(e: &ProviderError) -> bool {
    match e {
        ProviderError::Transport { .. } | ProviderError::Timeout { .. } => true,
        ProviderError::Status { status, .. } => default_transient(*status, b""),
        _ => false,
    }
}

/// Kubo and js-ipfs answer "not pinned" (or "is not pinned") with HTTP 500.
fn is_not_pinned(e: &ProviderError) -> bool {
    matches!(e, ProviderError::Status { status: 500, detail, .. }
        if detail.to_ascii_lowercase().contains("not pinned"))
}

impl Provider for Kubo {
    fn name(&self) -> &str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            push: true,
            keeps_blocks: true,
            unpin: true,
        }
    }

    fn put_car<'a>(
        &'a self,
        root: &'a Cid,
        car: &'a [u8],
        progress: &'a dyn Progress,
    ) -> BoxFuture<'a, Result<Receipt, ProviderError>> {
        Box::pin(self.put_full(root, car, progress))
    }

    fn put_car_delta<'a>(
        &'a self,
        root: &'a Cid,
        delta: &'a [u8],
        full: &'a [u8],
        progress: &'a dyn Progress,
    ) -> BoxFuture<'a, Result<Receipt, ProviderError>> {
        Box::pin(self.put_delta(root, delta, full, progress))
    }

    fn get_car<'a>(
        &'a self,
        root: &'a Cid,
        limits: &'a CarLimits,
        progress: &'a dyn Progress,
    ) -> BoxFuture<'a, Result<Blocks, ProviderError>> {
        Box::pin(self.export(root, limits, progress))
    }

    fn has<'a>(&'a self, root: &'a Cid) -> BoxFuture<'a, Result<bool, ProviderError>> {
        Box::pin(self.pinned(root))
    }

    fn unpin<'a>(&'a self, receipt: &'a Receipt) -> BoxFuture<'a, Result<(), ProviderError>> {
        Box::pin(self.unpin_root(&receipt.root))
    }

    /// The root at MFS `/memdir/<channel>`.
    fn head<'a>(&'a self, channel: &'a str) -> BoxFuture<'a, Result<Option<Cid>, ProviderError>> {
        Box::pin(self.read_head(channel))
    }

    fn set_head<'a>(
        &'a self,
        channel: &'a str,
        root: &'a Cid,
    ) -> BoxFuture<'a, Result<(), ProviderError>> {
        Box::pin(self.write_head(channel, root))
    }

    fn swap_head<'a>(
        &'a self,
        channel: &'a str,
        expected: Option<&'a Cid>,
        root: &'a Cid,
    ) -> BoxFuture<'a, Result<HeadSwap, ProviderError>> {
        Box::pin(self.swap(channel, expected, root))
    }

    /// MFS `/memdir/.lineage/<root>`.
    fn put_lineage<'a>(
        &'a self,
        root: &'a Cid,
        lineage: &'a [u8],
    ) -> BoxFuture<'a, Result<(), ProviderError>> {
        Box::pin(self.write_lineage(root, lineage))
    }

    fn lineage<'a>(
        &'a self,
        root: &'a Cid,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, ProviderError>> {
        Box::pin(self.read_lineage(root))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_errors_are_final() {
        assert!(!kubo_transient(
            500,
            br#"{"Message":"x","Code":0,"Type":"error"}"#
        ));
        assert!(kubo_transient(500, b"Internal Server Error"));
        assert!(kubo_transient(503, b""));
        assert!(!kubo_transient(401, b""));
    }

    #[test]
    fn debug_hides_the_token() {
        let k = Kubo::new(
            "http://127.0.0.1:5001",
            Some("s3cr3t".into()),
            &Settings::default(),
        )
        .expect("kubo");
        assert!(!format!("{k:?}").contains("s3cr3t"));
        assert_eq!(
            k.rpc("pin/ls", &[("arg", "x")]).as_str(),
            "http://127.0.0.1:5001/api/v0/pin/ls?arg=x"
        );
    }
}
