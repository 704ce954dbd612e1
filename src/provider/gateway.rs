//! Trustless HTTP gateways (the pull path): `GET /ipfs/<root>?format=car`
//! from a list of gateways, each answer verified block by block, the next
//! gateway tried when one fails, single missing blocks fetched with
//! `?format=raw`.

use cid::Cid;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::{Method, Url};

use super::http::{Call, CarFailure, Http, Try, Want, base_url, check_block, join, redact};
use super::{
    Blocks, BoxFuture, Capabilities, Env, Progress, Provider, ProviderError, Receipt, Settings,
};
use crate::ipfs::car::{self, CarError, CarLimits};

/// Environment variable: comma-separated gateway base URLs.
pub(crate) const GATEWAYS_VAR: &str = "MEMDIR_GATEWAYS";
/// Public trustless gateways used when nothing else is configured.
pub(crate) const DEFAULT_GATEWAYS: [&str; 2] =
    ["https://trustless-gateway.link", "https://ipfs.io"];

/// What we ask for: a CARv1, depth-first, no duplicates (the gateway may still
/// send any order; the reader does not rely on it).
const ACCEPT_CAR: &str = "application/vnd.ipld.car; version=1; order=dfs; dups=n";
const ACCEPT_RAW: &str = "application/vnd.ipld.raw";
/// Most missing blocks fetched one by one after a short CAR.
const MAX_REPAIRS: usize = 64;

/// An ordered list of trustless gateways.
#[derive(Clone)]
pub struct Gateways {
    http: Http,
    urls: Vec<Url>,
    name: &'static str,
}

impl Gateways {
    /// Gateways at `urls` (base URLs such as `https://ipfs.io`), tried in order.
    pub fn new(urls: &[&str], settings: &Settings) -> Result<Gateways, ProviderError> {
        Self::named("gateway", urls, settings)
    }

    pub(crate) fn named(
        name: &'static str,
        urls: &[&str],
        settings: &Settings,
    ) -> Result<Gateways, ProviderError> {
        let urls = urls
            .iter()
            .map(|u| base_url(name, GATEWAYS_VAR, u))
            .collect::<Result<Vec<_>, _>>()?;
        if urls.is_empty() {
            return Err(ProviderError::NotConfigured {
                provider: name.to_string(),
                var: GATEWAYS_VAR,
            });
        }
        Ok(Gateways {
            http: Http::new(name, &settings.http)?,
            urls,
            name,
        })
    }

    /// `MEMDIR_GATEWAYS`, or the public defaults.
    pub fn from_env(env: Env<'_>, settings: &Settings) -> Result<Gateways, ProviderError> {
        Self::for_provider("gateway", &[], env, settings)
    }

    /// The gateways a push provider pulls through: its own (`first`) followed
    /// by `MEMDIR_GATEWAYS`, or by the public defaults when that is unset.
    pub(crate) fn for_provider(
        name: &'static str,
        first: &[String],
        env: Env<'_>,
        settings: &Settings,
    ) -> Result<Gateways, ProviderError> {
        let mut list: Vec<String> = first.to_vec();
        match env(GATEWAYS_VAR) {
            Some(v) => list.extend(
                v.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
            ),
            None if list.is_empty() => list.extend(DEFAULT_GATEWAYS.iter().map(|s| s.to_string())),
            None => {}
        }
        let refs: Vec<&str> = list.iter().map(String::as_str).collect();
        Self::named(name, &refs, settings)
    }

    /// The gateway base URLs in the order they are tried.
    pub fn urls(&self) -> Vec<String> {
        self.urls.iter().map(redact).collect()
    }

    /// Fetches and verifies the DAG under `root`, trying each gateway in turn.
    pub async fn fetch(
        &self,
        root: &Cid,
        limits: &CarLimits,
        progress: &dyn Progress,
    ) -> Result<Blocks, ProviderError> {
        let mut attempts = Vec::new();
        for base in &self.urls {
            match self.fetch_from(base, root, limits, progress).await {
                Ok(blocks) => return Ok(blocks),
                Err(e) => attempts.push(e),
            }
        }
        Err(ProviderError::AllFailed {
            provider: self.name.to_string(),
            root: *root,
            attempts,
        })
    }

    async fn fetch_from(
        &self,
        base: &Url,
        root: &Cid,
        limits: &CarLimits,
        progress: &dyn Progress,
    ) -> Result<Blocks, ProviderError> {
        let mut url = join(base, &format!("ipfs/{root}"));
        url.query_pairs_mut()
            .append_pair("format", "car")
            .append_pair("dag-scope", "all");
        let method = Method::GET;
        // Network failures mid-stream are retried like failed requests;
        // anything the verifier rejects is final for this gateway.
        let (method, url) = (&method, &url);
        let fetched = self
            .http
            .retry_stream(move || async move {
                let call = Call {
                    timeout: Some(self.http.cfg.transfer_timeout),
                    ..Call::new(method.clone(), url.clone())
                };
                let response = match self.http.send(call, |r| r.header(ACCEPT, ACCEPT_CAR)).await {
                    Ok(r) => r,
                    Err(e) => return Try::Done(Err(CarFailure::Remote(e))),
                };
                if let Some(ct) = response.headers().get(CONTENT_TYPE) {
                    let ct = ct.to_str().unwrap_or("").to_ascii_lowercase();
                    if !ct.starts_with("application/vnd.ipld.car") {
                        return Try::Done(Err(CarFailure::Remote(self.http.bad_response(
                            method,
                            url,
                            format!("content type {ct:?}, not a CAR (not a trustless gateway?)"),
                        ))));
                    }
                }
                let want = Want {
                    root,
                    limits,
                    progress,
                    keep: true,
                };
                match self.http.verify_car(method, url, response, want).await {
                    Ok((blocks, _)) => Try::Done(Ok(blocks)),
                    Err(CarFailure::Remote(e)) => Try::Again(e),
                    Err(integrity) => Try::Done(Err(integrity)),
                }
            })
            .await?;
        let (copy, failure) = match fetched {
            Ok(blocks) => return Ok(blocks),
            Err(CarFailure::Remote(e)) => return Err(e),
            Err(CarFailure::Integrity { error, copy }) => (copy, error),
        };
        // A CAR that ends early at a block boundary (the gateway lacked a
        // child) can be completed block by block; everything else is final.
        let ProviderError::Car {
            source: CarError::MissingBlock { .. },
            ..
        } = &failure
        else {
            return Err(failure);
        };
        self.repair(base, root, limits, copy, failure).await
    }

    /// Appends missing blocks fetched with `?format=raw` to the received CAR
    /// and verifies the whole again, until it is complete or a bound is hit.
    async fn repair(
        &self,
        base: &Url,
        root: &Cid,
        limits: &CarLimits,
        mut car_bytes: Vec<u8>,
        mut failure: ProviderError,
    ) -> Result<Blocks, ProviderError> {
        for _ in 0..MAX_REPAIRS {
            let ProviderError::Car {
                source: CarError::MissingBlock { cid },
                ..
            } = &failure
            else {
                return Err(failure);
            };
            let block = self.raw_block(base, cid, limits).await?;
            let mut section = Vec::new();
            car::write_car_blocks(root, [(cid, block.as_slice())], &mut section)
                .expect("writing into a Vec cannot fail");
            // Drop the header of the one-block CAR we just wrote.
            let header_len = car::car_header(root).len();
            car_bytes.extend_from_slice(&section[header_len..]);
            if car_bytes.len() as u64 > limits.max_total_bytes {
                return Err(failure);
            }
            let (r, l, bytes) = (*root, *limits, std::mem::take(&mut car_bytes));
            let (verdict, bytes) = tokio::task::spawn_blocking(move || {
                (car::read_car(bytes.as_slice(), &r, &l), bytes)
            })
            .await
            .map_err(|e| {
                self.http
                    .bad_response(&Method::GET, base, format!("verifier task failed: {e}"))
            })?;
            car_bytes = bytes;
            match verdict {
                Ok(blocks) => return Ok(blocks),
                Err(source) => {
                    failure = ProviderError::Car {
                        provider: self.name.to_string(),
                        url: redact(base),
                        source,
                    }
                }
            }
        }
        Err(failure)
    }

    /// One block with `?format=raw`, verified against its CID.
    pub(crate) async fn raw_block(
        &self,
        base: &Url,
        cid: &Cid,
        limits: &CarLimits,
    ) -> Result<Vec<u8>, ProviderError> {
        let mut url = join(base, &format!("ipfs/{cid}"));
        url.query_pairs_mut().append_pair("format", "raw");
        let method = Method::GET;
        let response = self
            .http
            .send(Call::new(method.clone(), url.clone()), |r| {
                r.header(ACCEPT, ACCEPT_RAW)
            })
            .await?;
        // One byte over the limit is enough to know the block is too large.
        let data = self
            .http
            .body(&method, &url, response, limits.max_block_size + 1)
            .await
            .map_err(|e| match e {
                ProviderError::BadResponse { .. } => ProviderError::BadBlock {
                    provider: self.name.to_string(),
                    url: redact(&url),
                    cid: *cid,
                    problem: format!("is over the limit of {} bytes", limits.max_block_size),
                },
                other => other,
            })?;
        check_block(cid, &data, limits).map_err(|problem| ProviderError::BadBlock {
            provider: self.name.to_string(),
            url: redact(&url),
            cid: *cid,
            problem,
        })?;
        Ok(data)
    }

    async fn has_root(&self, root: &Cid) -> Result<bool, ProviderError> {
        let mut last = None;
        for base in &self.urls {
            match self.raw_block(base, root, &CarLimits::default()).await {
                Ok(_) => return Ok(true),
                Err(ProviderError::Status { status: 404, .. }) => return Ok(false),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or(ProviderError::NotConfigured {
            provider: self.name.to_string(),
            var: GATEWAYS_VAR,
        }))
    }
}

impl Provider for Gateways {
    fn name(&self) -> &str {
        self.name
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            push: false,
            keeps_blocks: false,
            unpin: false,
        }
    }

    fn put_car<'a>(
        &'a self,
        _root: &'a Cid,
        _car: &'a [u8],
        _progress: &'a dyn Progress,
    ) -> BoxFuture<'a, Result<Receipt, ProviderError>> {
        Box::pin(async move {
            Err(ProviderError::Unsupported {
                provider: self.name.to_string(),
                operation: "upload (gateways are read-only)",
            })
        })
    }

    fn get_car<'a>(
        &'a self,
        root: &'a Cid,
        limits: &'a CarLimits,
        progress: &'a dyn Progress,
    ) -> BoxFuture<'a, Result<Blocks, ProviderError>> {
        Box::pin(self.fetch(root, limits, progress))
    }

    /// Whether the first gateway that answers serves the root block.
    fn has<'a>(&'a self, root: &'a Cid) -> BoxFuture<'a, Result<bool, ProviderError>> {
        Box::pin(self.has_root(root))
    }

    fn unpin<'a>(&'a self, _receipt: &'a Receipt) -> BoxFuture<'a, Result<(), ProviderError>> {
        Box::pin(async move {
            Err(ProviderError::Unsupported {
                provider: self.name.to_string(),
                operation: "unpin (gateways are read-only)",
            })
        })
    }
}

/// Used by push providers that pull through gateways.
pub(crate) async fn pull(
    gateways: &Gateways,
    root: &Cid,
    limits: &CarLimits,
    progress: &dyn Progress,
) -> Result<Blocks, ProviderError> {
    gateways.fetch(root, limits, progress).await
}
