//! Storacha (the successor of Web3.Storage) through its HTTP-UCAN bridge.
//! Experimental: the service is moving from `store/*` to `space/blob/*`.
//!
//! Every call is `POST <bridge>` with the two pre-generated headers
//! (`X-Auth-Secret`, `Authorization`, from `w3 bridge generate-tokens`) and a
//! JSON body `{"tasks": [[ability, space-did, args]]}`; the answer is a list
//! of receipts whose `out` is `{"ok": ...}` or `{"error": ...}`. Upload:
//! `store/add {link: <CAR CID>, size}` gives a presigned URL and headers (or
//! `done` if the CAR is already stored), the CAR is `PUT` there, then
//! `upload/add {root, shards}` registers the DAG, and the root it echoes must
//! be ours.

use cid::Cid;
use reqwest::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE};
use reqwest::{Method, Url};
use serde_json::{Value, json};

use super::gateway::{self, Gateways};
use super::http::{Call, Http, base_url, redact};
use super::{
    Blocks, BoxFuture, Capabilities, Direction, Env, Progress, Provider, ProviderError, Receipt,
    Settings, car_cid, check_root,
};
use crate::ipfs::car::CarLimits;

/// Environment variable: the bridge's `X-Auth-Secret` header value.
pub(crate) const SECRET_VAR: &str = "WEB3_STORAGE_TOKEN";
/// Environment variable: the bridge's `Authorization` header value (a UCAN delegation).
pub(crate) const AUTH_VAR: &str = "STORACHA_AUTH";
/// Environment variable: the space DID (`did:key:...`).
pub(crate) const SPACE_VAR: &str = "STORACHA_SPACE";
/// Environment variable: bridge endpoint (default `https://up.storacha.network/bridge`).
pub(crate) const URL_VAR: &str = "STORACHA_BRIDGE_URL";
/// Environment variable: gateway tried first for pulls (default `https://w3s.link`).
pub(crate) const GATEWAY_VAR: &str = "STORACHA_GATEWAY";

const NAME: &str = "storacha";
const DEFAULT_BRIDGE: &str = "https://up.storacha.network/bridge";
const DEFAULT_GATEWAY: &str = "https://w3s.link";

/// A Storacha space reached through the UCAN bridge.
#[derive(Clone)]
pub struct Storacha {
    http: Http,
    bridge: Url,
    secret: String,
    auth: String,
    space: String,
    gateways: Gateways,
}

impl std::fmt::Debug for Storacha {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Storacha")
            .field("bridge", &redact(&self.bridge))
            .field("space", &self.space)
            .finish_non_exhaustive()
    }
}

impl Storacha {
    /// `WEB3_STORAGE_TOKEN`, `STORACHA_AUTH`, `STORACHA_SPACE`, optional
    /// `STORACHA_BRIDGE_URL`, `STORACHA_GATEWAY`, `MEMDIR_GATEWAYS`.
    pub fn from_env(env: Env<'_>, settings: &Settings) -> Result<Storacha, ProviderError> {
        let need = |var: &'static str| {
            env(var).ok_or(ProviderError::NotConfigured {
                provider: NAME.into(),
                var,
            })
        };
        let secret = need(SECRET_VAR)?.trim().to_string();
        let auth = need(AUTH_VAR)?.trim().to_string();
        let space = need(SPACE_VAR)?.trim().to_string();
        if !space.starts_with("did:") {
            return Err(ProviderError::BadConfig {
                provider: NAME.into(),
                var: SPACE_VAR,
                value: space,
                reason: "expected a space DID such as did:key:z6Mk...".into(),
            });
        }
        let bridge = env(URL_VAR).unwrap_or_else(|| DEFAULT_BRIDGE.into());
        let mut bridge = base_url(NAME, URL_VAR, &bridge)?;
        // The bridge is one endpoint, not a base: no trailing slash.
        let path = bridge.path().trim_end_matches('/').to_string();
        bridge.set_path(if path.is_empty() { "/" } else { &path });
        let first = vec![env(GATEWAY_VAR).unwrap_or_else(|| DEFAULT_GATEWAY.into())];
        Ok(Storacha {
            http: Http::new(NAME, &settings.http)?,
            bridge,
            secret,
            auth,
            space,
            gateways: Gateways::for_provider(NAME, &first, env, settings)?,
        })
    }

    /// Runs one task on the bridge and returns its `out.ok` value.
    async fn invoke(&self, ability: &str, args: Value) -> Result<Value, ProviderError> {
        let method = Method::POST;
        let url = self.bridge.clone();
        let body = json!({ "tasks": [[ability, self.space, args]] }).to_string();
        let response = self
            .http
            .send(Call::new(method.clone(), url.clone()), |rb| {
                rb.header("X-Auth-Secret", &self.secret)
                    .header(AUTHORIZATION, &self.auth)
                    .header(CONTENT_TYPE, "application/json")
                    .body(body.clone())
            })
            .await?;
        let v = self.http.json(&method, &url, response).await?;
        // The spec calls the receipt payload `data`, the service sends `p`.
        let receipt = v.as_array().and_then(|a| a.first()).map(|r| {
            if r.get("p").is_some() {
                &r["p"]
            } else {
                &r["data"]
            }
        });
        let Some(out) = receipt.map(|r| &r["out"]) else {
            return Err(self
                .http
                .bad_response(&method, &url, "no receipt in the answer".into()));
        };
        if let Some(ok) = out.get("ok") {
            return Ok(ok.clone());
        }
        if let Some(err) = out.get("error") {
            let name = err["name"].as_str().unwrap_or("Error");
            let message = err["message"].as_str().unwrap_or("");
            return Err(ProviderError::Rejected {
                provider: NAME.into(),
                operation: ability.to_string(),
                detail: format!("{name}: {message}").chars().take(300).collect(),
            });
        }
        Err(self
            .http
            .bad_response(&method, &url, "receipt has neither ok nor error".into()))
    }

    async fn upload(
        &self,
        root: &Cid,
        car: &[u8],
        progress: &dyn Progress,
    ) -> Result<Receipt, ProviderError> {
        let shard = car_cid(car);
        let total = car.len() as u64;
        let ok = self
            .invoke(
                "store/add",
                json!({ "link": { "/": shard.to_string() }, "size": total }),
            )
            .await?;
        progress.progress(Direction::Upload, 0, Some(total));
        match ok["status"].as_str() {
            Some("done") => {}
            Some("upload") => self.put_shard(&ok, car).await?,
            other => {
                return Err(self.http.bad_response(
                    &Method::POST,
                    &self.bridge,
                    format!("store/add status {other:?}"),
                ));
            }
        }
        progress.progress(Direction::Upload, total, Some(total));
        let ok = self
            .invoke(
                "upload/add",
                json!({
                    "root": { "/": root.to_string() },
                    "shards": [{ "/": shard.to_string() }],
                }),
            )
            .await?;
        let reported = ok["root"]["/"].as_str().unwrap_or_default();
        check_root(NAME, root, reported)?;
        Ok(Receipt {
            provider: NAME.into(),
            root: *root,
            provider_id: shard.to_string(),
            car_bytes: total,
            delta: false,
        })
    }

    /// `PUT` the CAR to the presigned URL with the headers `store/add` gave.
    async fn put_shard(&self, ok: &Value, car: &[u8]) -> Result<(), ProviderError> {
        let bad = |detail: String| self.http.bad_response(&Method::POST, &self.bridge, detail);
        let url = ok["url"]
            .as_str()
            .and_then(|u| Url::parse(u).ok())
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| bad("store/add gave no usable upload URL".into()))?;
        let mut headers: Vec<(String, String)> = Vec::new();
        if let Some(map) = ok["headers"].as_object() {
            for (k, v) in map {
                let v = v.as_str().unwrap_or_default().to_string();
                if k.eq_ignore_ascii_case(CONTENT_LENGTH.as_str()) {
                    // The client sends the length itself; it must agree.
                    if v.trim() != car.len().to_string() {
                        return Err(bad(format!("store/add expects {v} bytes")));
                    }
                    continue;
                }
                headers.push((k.clone(), v));
            }
        }
        let call = Call {
            timeout: Some(self.http.cfg.transfer_timeout),
            ..Call::new(Method::PUT, url)
        };
        self.http
            .send(call, |rb| {
                headers
                    .iter()
                    .fold(rb, |rb, (k, v)| rb.header(k.as_str(), v.as_str()))
                    .body(car.to_vec())
            })
            .await?;
        Ok(())
    }

    async fn registered(&self, root: &Cid) -> Result<bool, ProviderError> {
        match self
            .invoke("upload/get", json!({ "root": { "/": root.to_string() } }))
            .await
        {
            Ok(ok) => Ok(ok["root"]["/"]
                .as_str()
                .and_then(|c| Cid::try_from(c).ok())
                .is_some_and(|c| c == *root)),
            Err(ProviderError::Rejected { detail, .. }) if detail.contains("NotFound") => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn remove(&self, root: &Cid) -> Result<(), ProviderError> {
        match self
            .invoke(
                "upload/remove",
                json!({ "root": { "/": root.to_string() } }),
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(ProviderError::Rejected { detail, .. }) if detail.contains("NotFound") => Ok(()),
            Err(e) => Err(e),
        }
    }
}

impl Provider for Storacha {
    fn name(&self) -> &str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        // Shards are stored separately, so a later upload could list the old
        // shards plus a delta shard; not done until verified against the
        // real service.
        Capabilities {
            push: true,
            keeps_blocks: false,
            unpin: true,
        }
    }

    fn put_car<'a>(
        &'a self,
        root: &'a Cid,
        car: &'a [u8],
        progress: &'a dyn Progress,
    ) -> BoxFuture<'a, Result<Receipt, ProviderError>> {
        Box::pin(self.upload(root, car, progress))
    }

    fn get_car<'a>(
        &'a self,
        root: &'a Cid,
        limits: &'a CarLimits,
        progress: &'a dyn Progress,
    ) -> BoxFuture<'a, Result<Blocks, ProviderError>> {
        Box::pin(gateway::pull(&self.gateways, root, limits, progress))
    }

    fn has<'a>(&'a self, root: &'a Cid) -> BoxFuture<'a, Result<bool, ProviderError>> {
        Box::pin(self.registered(root))
    }

    fn unpin<'a>(&'a self, receipt: &'a Receipt) -> BoxFuture<'a, Result<(), ProviderError>> {
        Box::pin(self.remove(&receipt.root))
    }
}
