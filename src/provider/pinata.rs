//! Pinata, API v3: `POST /v3/files` on the uploads host with the CAR as a
//! multipart file and `car=true` (Pinata imports the DAG instead of wrapping
//! the file), listing by CID and deleting by file id on the API host. Pulls go
//! through trustless gateways (`PINATA_GATEWAY` first).

use cid::Cid;
use reqwest::header::AUTHORIZATION;
use reqwest::multipart::Form;
use reqwest::{Method, RequestBuilder, Url};
use serde_json::Value;

use super::gateway::{self, Gateways};
use super::http::{Call, Http, base_url, car_part, join, redact};
use super::{
    Blocks, BoxFuture, Capabilities, Direction, Env, Progress, Provider, ProviderError, Receipt,
    Settings, check_root,
};
use crate::ipfs::car::CarLimits;

/// Environment variable: the API key's JWT.
pub(crate) const JWT_VAR: &str = "PINATA_JWT";
/// Environment variable: API base URL (default `https://api.pinata.cloud`).
pub(crate) const API_URL_VAR: &str = "PINATA_API_URL";
/// Environment variable: uploads base URL (default `https://uploads.pinata.cloud`).
pub(crate) const UPLOAD_URL_VAR: &str = "PINATA_UPLOAD_URL";
/// Environment variable: optional dedicated gateway, tried first for pulls.
pub(crate) const GATEWAY_VAR: &str = "PINATA_GATEWAY";

const NAME: &str = "pinata";
const DEFAULT_API: &str = "https://api.pinata.cloud";
const DEFAULT_UPLOAD: &str = "https://uploads.pinata.cloud";
/// Neutral name for every upload: the store's name never leaves the device.
pub(crate) const UPLOAD_NAME: &str = "memdir.car";

/// A Pinata account.
#[derive(Clone)]
pub struct Pinata {
    http: Http,
    api: Url,
    upload: Url,
    jwt: String,
    gateways: Gateways,
}

impl std::fmt::Debug for Pinata {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pinata")
            .field("api", &redact(&self.api))
            .field("upload", &redact(&self.upload))
            .finish_non_exhaustive()
    }
}

impl Pinata {
    /// `PINATA_JWT`, optional `PINATA_API_URL`, `PINATA_UPLOAD_URL`,
    /// `PINATA_GATEWAY` and `MEMDIR_GATEWAYS`.
    pub fn from_env(env: Env<'_>, settings: &Settings) -> Result<Pinata, ProviderError> {
        let jwt = env(JWT_VAR).ok_or(ProviderError::NotConfigured {
            provider: NAME.into(),
            var: JWT_VAR,
        })?;
        let api = env(API_URL_VAR).unwrap_or_else(|| DEFAULT_API.into());
        let upload = env(UPLOAD_URL_VAR).unwrap_or_else(|| DEFAULT_UPLOAD.into());
        let first: Vec<String> = env(GATEWAY_VAR).into_iter().collect();
        Ok(Pinata {
            http: Http::new(NAME, &settings.http)?,
            api: base_url(NAME, API_URL_VAR, &api)?,
            upload: base_url(NAME, UPLOAD_URL_VAR, &upload)?,
            jwt: jwt.trim().to_string(),
            gateways: Gateways::for_provider(NAME, &first, env, settings)?,
        })
    }

    fn auth(&self, rb: RequestBuilder) -> RequestBuilder {
        rb.header(AUTHORIZATION, format!("Bearer {}", self.jwt))
    }

    async fn upload(
        &self,
        root: &Cid,
        car: &[u8],
        progress: &dyn Progress,
    ) -> Result<Receipt, ProviderError> {
        let url = join(&self.upload, "v3/files");
        let method = Method::POST;
        let total = car.len() as u64;
        progress.progress(Direction::Upload, 0, Some(total));
        let call = Call {
            timeout: Some(self.http.cfg.transfer_timeout),
            ..Call::new(method.clone(), url.clone())
        };
        let response = self
            .http
            .send(call, |rb| {
                let file = car_part(car, UPLOAD_NAME);
                let form = Form::new()
                    .part("file", file)
                    .text("network", "public")
                    .text("car", "true")
                    .text("name", UPLOAD_NAME);
                self.auth(rb).multipart(form)
            })
            .await?;
        let v = self.http.json(&method, &url, response).await?;
        progress.progress(Direction::Upload, total, Some(total));
        let data = &v["data"];
        let (Some(reported), Some(id)) = (data["cid"].as_str(), data["id"].as_str()) else {
            return Err(self.http.bad_response(
                &method,
                &url,
                "no data.cid / data.id in the answer".into(),
            ));
        };
        if let Err(e) = check_root(NAME, root, reported) {
            // Do not leave a pin of something we did not mean to store.
            let _ = self.delete(id).await;
            return Err(e);
        }
        Ok(Receipt {
            provider: NAME.into(),
            root: *root,
            provider_id: id.to_string(),
            car_bytes: total,
            delta: false,
        })
    }

    /// File ids of public files with CID `root`.
    async fn list(&self, root: &Cid) -> Result<Vec<String>, ProviderError> {
        let mut url = join(&self.api, "v3/files/public");
        url.query_pairs_mut()
            .append_pair("cid", &root.to_string())
            .append_pair("limit", "100");
        let method = Method::GET;
        let response = self
            .http
            .send(Call::new(method.clone(), url.clone()), |rb| self.auth(rb))
            .await?;
        let v: Value = self.http.json(&method, &url, response).await?;
        let Some(files) = v["data"]["files"].as_array() else {
            return Err(self.http.bad_response(
                &method,
                &url,
                "no data.files in the answer".into(),
            ));
        };
        Ok(files
            .iter()
            .filter(|f| {
                f["cid"]
                    .as_str()
                    .and_then(|c| Cid::try_from(c).ok())
                    .is_some_and(|c| c == *root)
            })
            .filter_map(|f| f["id"].as_str().map(str::to_string))
            .collect())
    }

    async fn delete(&self, id: &str) -> Result<(), ProviderError> {
        let mut url = join(&self.api, "v3/files/public");
        if let Ok(mut segments) = url.path_segments_mut() {
            segments.pop_if_empty().push(id);
        }
        match self
            .http
            .send(
                Call {
                    pass: &[404],
                    ..Call::new(Method::DELETE, url)
                },
                |rb| self.auth(rb),
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn unpin_receipt(&self, receipt: &Receipt) -> Result<(), ProviderError> {
        let ids = if receipt.provider_id.is_empty() {
            self.list(&receipt.root).await?
        } else {
            vec![receipt.provider_id.clone()]
        };
        for id in ids {
            self.delete(&id).await?;
        }
        Ok(())
    }
}

impl Provider for Pinata {
    fn name(&self) -> &str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
        // Whether a CAR with `car=true` may omit blocks of an earlier upload
        // is not documented; send full CARs.
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
        Box::pin(async move { Ok(!self.list(root).await?.is_empty()) })
    }

    fn unpin<'a>(&'a self, receipt: &'a Receipt) -> BoxFuture<'a, Result<(), ProviderError>> {
        Box::pin(self.unpin_receipt(receipt))
    }
}
