//! Filebase through its S3 API: `PUT /<bucket>/<key>` with
//! `x-amz-meta-import: car` makes Filebase import the CAR into IPFS; `HEAD` of
//! the object then carries the root in `x-amz-meta-cid`; deleting the object
//! unpins it. Requests are signed with AWS Signature V4 ([`super::sigv4`]).
//! Pulls go through trustless gateways (Filebase's first).

use cid::Cid;
use reqwest::header::AUTHORIZATION;
use reqwest::{Method, RequestBuilder, Url};

use super::gateway::{self, Gateways};
use super::http::{Call, Http, base_url, redact};
use super::sigv4;
use super::{
    Blocks, BoxFuture, Capabilities, Direction, Env, Progress, Provider, ProviderError, Receipt,
    Settings, check_root,
};
use crate::clock::Clock;
use crate::ipfs::car::CarLimits;

/// Environment variable: S3 access key id.
pub(crate) const KEY_VAR: &str = "FILEBASE_KEY";
/// Environment variable: S3 secret access key.
pub(crate) const SECRET_VAR: &str = "FILEBASE_SECRET";
/// Environment variable: the (IPFS) bucket.
pub(crate) const BUCKET_VAR: &str = "FILEBASE_BUCKET";
/// Environment variable: S3 endpoint (default `https://s3.filebase.com`).
pub(crate) const ENDPOINT_VAR: &str = "FILEBASE_ENDPOINT";
/// Environment variable: object key prefix (default `memdir/`).
pub(crate) const PREFIX_VAR: &str = "FILEBASE_PREFIX";
/// Environment variable: gateway tried first for pulls (default `https://ipfs.filebase.io`).
pub(crate) const GATEWAY_VAR: &str = "FILEBASE_GATEWAY";

const NAME: &str = "filebase";
const DEFAULT_ENDPOINT: &str = "https://s3.filebase.com";
const DEFAULT_GATEWAY: &str = "https://ipfs.filebase.io";
const DEFAULT_PREFIX: &str = "memdir/";
/// Filebase's S3 API lives in this region.
pub(crate) const REGION: &str = "us-east-1";
const SERVICE: &str = "s3";
const CAR_TYPE: &str = "application/vnd.ipld.car";

/// A Filebase bucket reached through S3.
#[derive(Clone)]
pub struct Filebase {
    http: Http,
    endpoint: Url,
    bucket: String,
    access_key: String,
    secret: String,
    prefix: String,
    clock: Clock,
    gateways: Gateways,
}

impl std::fmt::Debug for Filebase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Filebase")
            .field("endpoint", &redact(&self.endpoint))
            .field("bucket", &self.bucket)
            .finish_non_exhaustive()
    }
}

impl Filebase {
    /// `FILEBASE_KEY`, `FILEBASE_SECRET`, `FILEBASE_BUCKET`, optional
    /// `FILEBASE_ENDPOINT`, `FILEBASE_PREFIX`, `FILEBASE_GATEWAY`, `MEMDIR_GATEWAYS`.
    pub fn from_env(env: Env<'_>, settings: &Settings) -> Result<Filebase, ProviderError> {
        let need = |var: &'static str| {
            env(var).ok_or(ProviderError::NotConfigured {
                provider: NAME.into(),
                var,
            })
        };
        let access_key = need(KEY_VAR)?.trim().to_string();
        let secret = need(SECRET_VAR)?.trim().to_string();
        let bucket = need(BUCKET_VAR)?.trim().to_string();
        if bucket.contains('/') {
            return Err(ProviderError::BadConfig {
                provider: NAME.into(),
                var: BUCKET_VAR,
                value: bucket,
                reason: "a bucket name has no `/`".into(),
            });
        }
        let endpoint = env(ENDPOINT_VAR).unwrap_or_else(|| DEFAULT_ENDPOINT.into());
        let prefix = env(PREFIX_VAR).unwrap_or_else(|| DEFAULT_PREFIX.into());
        let first = vec![env(GATEWAY_VAR).unwrap_or_else(|| DEFAULT_GATEWAY.into())];
        Ok(Filebase {
            http: Http::new(NAME, &settings.http)?,
            endpoint: base_url(NAME, ENDPOINT_VAR, &endpoint)?,
            bucket,
            access_key,
            secret,
            prefix: prefix.trim_start_matches('/').to_string(),
            clock: settings.clock,
            gateways: Gateways::for_provider(NAME, &first, env, settings)?,
        })
    }

    /// The object key for a root: `<prefix><root>.car`.
    pub fn key_for(&self, root: &Cid) -> String {
        format!("{}{root}.car", self.prefix)
    }

    /// Path-style object URL, the key URI-encoded once as SigV4 signs it.
    fn object_url(&self, key: &str) -> Url {
        let mut url = self.endpoint.clone();
        let path = format!(
            "{}{}/{}",
            self.endpoint.path(),
            sigv4::uri_encode(&self.bucket, false),
            sigv4::uri_encode(key, true)
        );
        url.set_path(&path);
        url
    }

    /// Adds the SigV4 headers for `method url` with the given payload hash and
    /// extra signed headers.
    fn sign(
        &self,
        rb: RequestBuilder,
        method: &Method,
        url: &Url,
        payload_hash: &str,
        extra: &[(&str, &str)],
    ) -> RequestBuilder {
        let amz_date = self.clock.now().format("%Y%m%dT%H%M%SZ").to_string();
        let host = match url.port() {
            Some(p) => format!("{}:{p}", url.host_str().unwrap_or_default()),
            None => url.host_str().unwrap_or_default().to_string(),
        };
        let mut headers: Vec<(String, String)> = vec![
            ("host".into(), host),
            ("x-amz-content-sha256".into(), payload_hash.into()),
            ("x-amz-date".into(), amz_date.clone()),
        ];
        headers.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let query: Vec<(String, String)> = url
            .query_pairs()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        let auth = sigv4::authorization(
            &sigv4::Request {
                method: method.as_str(),
                path: url.path(),
                query: &query,
                headers: &headers,
                payload_hash,
            },
            &self.access_key,
            &self.secret,
            &amz_date,
            REGION,
            SERVICE,
        );
        let mut rb = rb;
        // `host` is set by the client from the URL, exactly as signed.
        for (k, v) in headers.iter().skip(1) {
            rb = rb.header(k.as_str(), v.as_str());
        }
        rb.header(AUTHORIZATION, auth)
    }

    async fn put(
        &self,
        root: &Cid,
        car: &[u8],
        progress: &dyn Progress,
    ) -> Result<Receipt, ProviderError> {
        let key = self.key_for(root);
        let url = self.object_url(&key);
        let method = Method::PUT;
        let total = car.len() as u64;
        let payload_hash = sigv4::sha256_hex(car);
        progress.progress(Direction::Upload, 0, Some(total));
        let call = Call {
            timeout: Some(self.http.cfg.transfer_timeout),
            ..Call::new(method.clone(), url.clone())
        };
        self.http
            .send(call, |rb| {
                self.sign(
                    rb,
                    &method,
                    &url,
                    &payload_hash,
                    &[("content-type", CAR_TYPE), ("x-amz-meta-import", "car")],
                )
                .body(car.to_vec())
            })
            .await?;
        progress.progress(Direction::Upload, total, Some(total));
        match self.head(&key).await? {
            Some(reported) => {
                if let Err(e) = check_root(NAME, root, &reported) {
                    let _ = self.delete(&key).await;
                    return Err(e);
                }
            }
            None => {
                return Err(self.http.bad_response(
                    &Method::HEAD,
                    &url,
                    "no x-amz-meta-cid on the object (is the bucket an IPFS bucket?)".into(),
                ));
            }
        }
        Ok(Receipt {
            provider: NAME.into(),
            root: *root,
            provider_id: key,
            car_bytes: total,
            delta: false,
        })
    }

    /// The object's `x-amz-meta-cid`, `Ok(None)` if the object has none, and
    /// an error status 404 if it does not exist.
    async fn head(&self, key: &str) -> Result<Option<String>, ProviderError> {
        let url = self.object_url(key);
        let method = Method::HEAD;
        let response = self
            .http
            .send(Call::new(method.clone(), url.clone()), |rb| {
                self.sign(rb, &method, &url, sigv4::EMPTY_SHA256, &[])
            })
            .await?;
        Ok(response
            .headers()
            .get("x-amz-meta-cid")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string))
    }

    async fn exists(&self, root: &Cid) -> Result<bool, ProviderError> {
        match self.head(&self.key_for(root)).await {
            Ok(Some(reported)) => Ok(check_root(NAME, root, &reported).is_ok()),
            Ok(None) => Ok(false),
            Err(ProviderError::Status { status: 404, .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn delete(&self, key: &str) -> Result<(), ProviderError> {
        let url = self.object_url(key);
        let method = Method::DELETE;
        self.http
            .send(
                Call {
                    pass: &[404],
                    ..Call::new(method.clone(), url.clone())
                },
                |rb| self.sign(rb, &method, &url, sigv4::EMPTY_SHA256, &[]),
            )
            .await?;
        Ok(())
    }
}

impl Provider for Filebase {
    fn name(&self) -> &str {
        NAME
    }

    fn capabilities(&self) -> Capabilities {
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
        Box::pin(self.put(root, car, progress))
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
        Box::pin(self.exists(root))
    }

    fn unpin<'a>(&'a self, receipt: &'a Receipt) -> BoxFuture<'a, Result<(), ProviderError>> {
        Box::pin(async move {
            let key = if receipt.provider_id.is_empty() {
                self.key_for(&receipt.root)
            } else {
                receipt.provider_id.clone()
            };
            self.delete(&key).await
        })
    }
}
