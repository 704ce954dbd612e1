//! The HTTP plumbing every provider shares: one reqwest client with timeouts,
//! bounded retries with exponential backoff for transient failures, errors
//! that name the provider, method, redacted URL and status, and the streaming
//! bridge that feeds a response body through the strict CAR reader.

use std::io::{self, Read};
use std::time::Duration;

use cid::Cid;
use reqwest::{Method, RequestBuilder, Response, StatusCode, Url};
use sha2::{Digest, Sha256};

use super::{Blocks, Direction, Env, Progress, ProviderError};
use crate::ipfs::car::{self, CarError, CarLimits};
use crate::ipfs::unixfs::{cid_problem, is_supported_cid};

/// Environment variable: request timeout in seconds.
pub(crate) const TIMEOUT_VAR: &str = "MEMDIR_HTTP_TIMEOUT";
/// Environment variable: attempts per request (1 = no retries).
pub(crate) const ATTEMPTS_VAR: &str = "MEMDIR_HTTP_ATTEMPTS";

/// Most bytes of an error body kept for the error message.
const ERROR_BODY_LIMIT: usize = 2048;
/// Most bytes of a JSON answer we parse (answers are small; CARs are streamed).
pub(crate) const JSON_LIMIT: usize = 4 << 20;

/// Timeouts and retry policy for provider requests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpConfig {
    /// Limit for one small request (answer included).
    pub timeout: Duration,
    /// Limit for one CAR upload or download, body included.
    pub transfer_timeout: Duration,
    /// Limit for establishing a connection.
    pub connect_timeout: Duration,
    /// Attempts per request, the first included (at least 1).
    pub attempts: u32,
    /// Wait before the first retry; doubled each time.
    pub backoff: Duration,
    /// Longest wait between attempts (also caps `Retry-After`).
    pub max_backoff: Duration,
    /// How long [`super::Kubo`] waits for a delta import before sending the full CAR.
    pub delta_timeout: Duration,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            timeout: Duration::from_secs(60),
            transfer_timeout: Duration::from_secs(600),
            connect_timeout: Duration::from_secs(15),
            attempts: 4,
            backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            delta_timeout: Duration::from_secs(30),
        }
    }
}

impl HttpConfig {
    /// The defaults, with `MEMDIR_HTTP_TIMEOUT` (seconds, applies to small
    /// requests; transfers get ten times as long) and `MEMDIR_HTTP_ATTEMPTS`.
    pub fn from_env(env: Env<'_>) -> Result<HttpConfig, ProviderError> {
        let mut cfg = HttpConfig::default();
        let bad = |var: &'static str, value: String| ProviderError::BadConfig {
            provider: "http".into(),
            var,
            value,
            reason: "expected a positive whole number".into(),
        };
        if let Some(v) = env(TIMEOUT_VAR) {
            let secs: u64 = v
                .trim()
                .parse()
                .ok()
                .filter(|&s| s > 0)
                .ok_or_else(|| bad(TIMEOUT_VAR, v.clone()))?;
            cfg.timeout = Duration::from_secs(secs);
            cfg.transfer_timeout = Duration::from_secs(secs.saturating_mul(10));
        }
        if let Some(v) = env(ATTEMPTS_VAR) {
            cfg.attempts = v
                .trim()
                .parse()
                .ok()
                .filter(|&n: &u32| (1..=20).contains(&n))
                .ok_or_else(|| bad(ATTEMPTS_VAR, v.clone()))?;
        }
        Ok(cfg)
    }

    /// The wait before retry number `retry` (1-based), honouring `Retry-After`.
    fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        let exp = self
            .backoff
            .saturating_mul(1u32 << retry.saturating_sub(1).min(16));
        retry_after.unwrap_or(exp).min(self.max_backoff)
    }
}

/// Decides whether an error status is worth retrying (from the status and the
/// start of the body).
pub(crate) type Transient = fn(u16, &[u8]) -> bool;

/// 408, 425, 429 and 5xx except 501 (not implemented) and 505.
pub(crate) fn default_transient(status: u16, _body: &[u8]) -> bool {
    matches!(status, 408 | 425 | 429) || (status >= 500 && status != 501 && status != 505)
}

/// One request's shape for [`Http::send`].
pub(crate) struct Call<'a> {
    pub method: Method,
    pub url: Url,
    /// Overrides the configured attempts (1 for requests that must not repeat).
    pub attempts: Option<u32>,
    /// Overrides the timeout.
    pub timeout: Option<Duration>,
    /// Non-2xx statuses handed back to the caller instead of failing.
    pub pass: &'a [u16],
}

impl Call<'_> {
    pub(crate) fn new(method: Method, url: Url) -> Call<'static> {
        Call {
            method,
            url,
            attempts: None,
            timeout: None,
            pass: &[],
        }
    }
}

/// A client bound to one provider's name and retry policy.
#[derive(Clone)]
pub(crate) struct Http {
    client: reqwest::Client,
    pub cfg: HttpConfig,
    pub provider: &'static str,
    transient: Transient,
}

impl Http {
    pub(crate) fn new(provider: &'static str, cfg: &HttpConfig) -> Result<Http, ProviderError> {
        // reqwest is built without a crypto provider (Cargo.toml: ring, not aws-lc-rs,
        // which builds C for minutes); a provider an embedder installed stays.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .connect_timeout(cfg.connect_timeout)
            .user_agent(concat!("memdir/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|source| ProviderError::Transport {
                provider: provider.to_string(),
                method: "-".into(),
                url: "-".into(),
                source,
            })?;
        Ok(Http {
            client,
            cfg: cfg.clone(),
            provider,
            transient: default_transient,
        })
    }

    pub(crate) fn with_transient(mut self, transient: Transient) -> Http {
        self.transient = transient;
        self
    }

    pub(crate) fn timeout_error(
        &self,
        method: &Method,
        url: &Url,
        after: Duration,
    ) -> ProviderError {
        ProviderError::Timeout {
            provider: self.provider.to_string(),
            method: method.to_string(),
            url: redact(url),
            after,
        }
    }

    pub(crate) fn bad_response(&self, method: &Method, url: &Url, detail: String) -> ProviderError {
        ProviderError::BadResponse {
            provider: self.provider.to_string(),
            method: method.to_string(),
            url: redact(url),
            detail,
        }
    }

    fn transport(&self, method: &Method, url: &Url, source: reqwest::Error) -> ProviderError {
        ProviderError::Transport {
            provider: self.provider.to_string(),
            method: method.to_string(),
            url: redact(url),
            source: source.without_url(),
        }
    }

    /// Sends the request `build` makes (called again for every attempt) and
    /// returns the response if its status is 2xx or listed in `call.pass`.
    ///
    /// Connection failures, timeouts and transient statuses are retried up to
    /// the configured attempts with exponential backoff; other statuses
    /// (401, 403, 404, ...) fail at once.
    pub(crate) async fn send(
        &self,
        call: Call<'_>,
        build: impl Fn(RequestBuilder) -> RequestBuilder,
    ) -> Result<Response, ProviderError> {
        let attempts = call.attempts.unwrap_or(self.cfg.attempts).max(1);
        let timeout = call.timeout.unwrap_or(self.cfg.timeout);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let request = build(
                self.client
                    .request(call.method.clone(), call.url.clone())
                    .timeout(timeout),
            );
            let (err, retry_after) = match request.send().await {
                Ok(response) => {
                    let status = response.status();
                    if status.is_success() || call.pass.contains(&status.as_u16()) {
                        return Ok(response);
                    }
                    let retry_after = retry_after(&response);
                    let body = read_capped(response, ERROR_BODY_LIMIT).await;
                    let retry = (self.transient)(status.as_u16(), &body);
                    let err = ProviderError::Status {
                        provider: self.provider.to_string(),
                        method: call.method.to_string(),
                        url: redact(&call.url),
                        status: status.as_u16(),
                        detail: error_detail(status, &body),
                    };
                    if !retry {
                        return Err(err);
                    }
                    (err, retry_after)
                }
                Err(e) if e.is_builder() => return Err(self.transport(&call.method, &call.url, e)),
                Err(e) if e.is_timeout() => {
                    (self.timeout_error(&call.method, &call.url, timeout), None)
                }
                Err(e) => (self.transport(&call.method, &call.url, e), None),
            };
            if attempt >= attempts {
                return Err(err);
            }
            tokio::time::sleep(self.cfg.delay(attempt, retry_after)).await;
        }
    }

    /// Reads a whole (small) answer body, bounded.
    pub(crate) async fn body(
        &self,
        method: &Method,
        url: &Url,
        mut response: Response,
        limit: usize,
    ) -> Result<Vec<u8>, ProviderError> {
        let mut out = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if out.len() + chunk.len() > limit {
                        return Err(self.bad_response(
                            method,
                            url,
                            format!("answer is larger than {limit} bytes"),
                        ));
                    }
                    out.extend_from_slice(&chunk);
                }
                Ok(None) => return Ok(out),
                Err(e) if e.is_timeout() => {
                    return Err(self.timeout_error(method, url, self.cfg.timeout));
                }
                Err(e) => return Err(self.transport(method, url, e)),
            }
        }
    }

    /// Reads and parses a JSON answer.
    pub(crate) async fn json(
        &self,
        method: &Method,
        url: &Url,
        response: Response,
    ) -> Result<serde_json::Value, ProviderError> {
        let body = self.body(method, url, response, JSON_LIMIT).await?;
        serde_json::from_slice(&body)
            .map_err(|e| self.bad_response(method, url, format!("invalid JSON: {e}")))
    }

    /// Streams a CAR answer through [`car::read_car`] as it arrives, reporting
    /// progress; stops reading as soon as the reader rejects something.
    ///
    /// A network failure mid-stream is a remote error (the caller may retry);
    /// anything the reader rejects on its own is an integrity error.
    pub(crate) async fn verify_car(
        &self,
        method: &Method,
        url: &Url,
        response: Response,
        want: Want<'_>,
    ) -> Result<(Blocks, Vec<u8>), CarFailure> {
        let Want {
            root,
            limits,
            progress,
            keep,
        } = want;
        let mut response = response;
        let total = response.content_length();
        let (tx, rx) = tokio::sync::mpsc::channel::<Vec<u8>>(16);
        let (root_owned, limits_owned) = (*root, *limits);
        let reader = tokio::task::spawn_blocking(move || {
            car::read_car(
                ChannelReader {
                    rx,
                    buf: Vec::new(),
                    pos: 0,
                },
                &root_owned,
                &limits_owned,
            )
        });
        let mut done = 0u64;
        let mut copy = Vec::new();
        let mut net_err = None;
        progress.progress(Direction::Download, 0, total);
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    done += chunk.len() as u64;
                    progress.progress(Direction::Download, done, total);
                    if keep && copy.len() as u64 <= limits.max_total_bytes {
                        copy.extend_from_slice(&chunk);
                    }
                    if tx.send(chunk.to_vec()).await.is_err() {
                        // The reader stopped: it has already decided.
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    net_err = Some(if e.is_timeout() {
                        self.timeout_error(method, url, self.cfg.transfer_timeout)
                    } else {
                        self.transport(method, url, e)
                    });
                    break;
                }
            }
        }
        drop(tx);
        let verdict = reader.await.map_err(|e| {
            CarFailure::Remote(self.bad_response(method, url, format!("reader task failed: {e}")))
        })?;
        match (verdict, net_err) {
            (Ok(blocks), None) => Ok((blocks, copy)),
            // The stream broke; the reader only saw a short archive. Unless it
            // had already found something false, this is the network's fault.
            (Err(e), Some(net)) if is_short_read(&e) => Err(CarFailure::Remote(net)),
            (Ok(_), Some(net)) => Err(CarFailure::Remote(net)),
            (Err(e), _) => Err(CarFailure::Integrity {
                error: ProviderError::Car {
                    provider: self.provider.to_string(),
                    url: redact(url),
                    source: e,
                },
                copy,
            }),
        }
    }
}

/// What [`Http::verify_car`] expects of a CAR stream.
pub(crate) struct Want<'a> {
    /// The root every block must hang from.
    pub root: &'a Cid,
    /// Bounds on blocks and on the whole stream.
    pub limits: &'a CarLimits,
    /// Receives download progress.
    pub progress: &'a dyn Progress,
    /// Keep a copy of the bytes, for repairing a short CAR.
    pub keep: bool,
}

/// What one try of a streamed transfer came to (see [`Http::retry_stream`]).
// Returned once per try and matched at once: the size of the larger variant costs a
// move, not memory kept.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Try<T> {
    /// The transfer's answer: a result, or a failure no other try would mend.
    Done(T),
    /// A failure another try may mend (the connection broke mid-stream); the last
    /// one is the error when the attempts run out.
    Again(ProviderError),
}

impl Http {
    /// Runs `one` until it is [`Try::Done`], or until it has said [`Try::Again`]
    /// as many times as the configured attempts (then its last error), waiting the
    /// configured backoff between tries. The retry loop of the transfers whose body
    /// is checked while it streams (a CAR from a gateway or `dag/export`): `send`
    /// retries a request until its status, not a body that breaks off later.
    pub(crate) async fn retry_stream<T, F: Future<Output = Try<T>>>(
        &self,
        mut one: impl FnMut() -> F,
    ) -> Result<T, ProviderError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match one().await {
                Try::Done(t) => return Ok(t),
                Try::Again(e) if attempt >= self.cfg.attempts => return Err(e),
                Try::Again(_) => tokio::time::sleep(self.cfg.backoff).await,
            }
        }
    }
}

/// How [`Http::verify_car`] failed.
pub(crate) enum CarFailure {
    /// The network failed; retrying may help.
    Remote(ProviderError),
    /// The data was wrong. `copy` holds the bytes received when asked to keep
    /// them, so a caller can repair missing blocks.
    Integrity { error: ProviderError, copy: Vec<u8> },
}

impl CarFailure {
    pub(crate) fn into_error(self) -> ProviderError {
        match self {
            CarFailure::Remote(e) | CarFailure::Integrity { error: e, .. } => e,
        }
    }
}

fn is_short_read(e: &CarError) -> bool {
    matches!(
        e,
        CarError::Truncated { .. }
            | CarError::TruncatedVarint { .. }
            | CarError::MissingBlock { .. }
            | CarError::Io { .. }
    )
}

/// The media type of CARv1 files.
pub(crate) const CAR_MIME: &str = "application/vnd.ipld.car";

/// A multipart file part holding a CAR. Kubo-compatible nodes refuse parts
/// without a content type (measured on js-ipfs: "No content-type in multipart
/// part").
pub(crate) fn car_part(car: &[u8], file_name: &'static str) -> reqwest::multipart::Part {
    reqwest::multipart::Part::bytes(car.to_vec())
        .file_name(file_name)
        .mime_str(CAR_MIME)
        .expect("a constant media type parses")
}

/// A blocking `Read` over chunks sent from the async side.
struct ChannelReader {
    rx: tokio::sync::mpsc::Receiver<Vec<u8>>,
    buf: Vec<u8>,
    pos: usize,
}

impl Read for ChannelReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos >= self.buf.len() {
            match self.rx.blocking_recv() {
                Some(chunk) => {
                    self.buf = chunk;
                    self.pos = 0;
                }
                None => return Ok(0),
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Checks one block fetched on its own: a CID memdir can verify, within the
/// size limit, bytes hashing to the CID.
pub(crate) fn check_block(cid: &Cid, data: &[u8], limits: &CarLimits) -> Result<(), String> {
    if !is_supported_cid(cid) {
        return Err(format!("is not supported: {}", cid_problem(cid)));
    }
    if data.len() > limits.max_block_size {
        return Err(format!(
            "is {} bytes, over the limit of {}",
            data.len(),
            limits.max_block_size
        ));
    }
    if Sha256::digest(data).as_slice() != cid.hash().digest() {
        return Err("does not match its hash".into());
    }
    Ok(())
}

/// Up to `limit` bytes of a body, ignoring errors (used for error messages).
async fn read_capped(mut response: Response, limit: usize) -> Vec<u8> {
    let mut out = Vec::new();
    while out.len() < limit {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = limit - out.len();
                out.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            _ => break,
        }
    }
    out
}

fn retry_after(response: &Response) -> Option<Duration> {
    response
        .headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()
        .map(Duration::from_secs)
}

/// A short, single-line description of an error body: an S3 `<Code>`, a
/// JSON error message, or the start of the text.
fn error_detail(status: StatusCode, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    if let (Some(a), Some(b)) = (text.find("<Code>"), text.find("</Code>"))
        && a + 6 <= b
    {
        return text[a + 6..b].trim().to_string();
    }
    if let Ok(json) = serde_json::from_slice::<serde_json::Value>(body) {
        for path in [
            &["Message"][..],
            &["error", "message"],
            &["error", "reason"],
            &["error", "details"],
            &["error"],
            &["message"],
        ] {
            let mut v = &json;
            for key in path {
                v = &v[*key];
            }
            if let Some(s) = v.as_str().filter(|s| !s.is_empty()) {
                return one_line(s, 200);
            }
        }
    }
    let line = one_line(&text, 200);
    if line.is_empty() {
        status.canonical_reason().unwrap_or("").to_string()
    } else {
        line
    }
}

fn one_line(s: &str, max: usize) -> String {
    let joined = s.split_whitespace().collect::<Vec<_>>().join(" ");
    joined.chars().take(max).collect()
}

/// A URL safe to show: no user info, and query values whose names look like
/// credentials replaced by `REDACTED`.
pub(crate) fn redact(url: &Url) -> String {
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    if u.query().is_some() {
        let pairs: Vec<(String, String)> = u
            .query_pairs()
            .map(|(k, v)| {
                let lower = k.to_ascii_lowercase();
                let secret = ["signature", "token", "credential", "secret", "key", "auth"]
                    .iter()
                    .any(|s| lower.contains(s));
                let v = if secret {
                    "REDACTED".to_string()
                } else {
                    v.into_owned()
                };
                (k.into_owned(), v)
            })
            .collect();
        u.query_pairs_mut().clear().extend_pairs(pairs);
    }
    u.to_string()
}

/// Parses a base URL from the environment (http or https only).
pub(crate) fn base_url(
    provider: &str,
    var: &'static str,
    value: &str,
) -> Result<Url, ProviderError> {
    let bad = |reason: &str| ProviderError::BadConfig {
        provider: provider.to_string(),
        var,
        value: Url::parse(value)
            .map(|u| redact(&u))
            .unwrap_or_else(|_| "(unparsable)".into()),
        reason: reason.to_string(),
    };
    let mut url = Url::parse(value.trim()).map_err(|_| bad("not a URL"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("must be an http:// or https:// URL"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("must not contain credentials; use the token variables"));
    }
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Ok(url)
}

/// `base` joined with a relative path (`api/v0/...`), keeping base's own path.
pub(crate) fn join(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    let joined = format!("{}{}", base.path(), path.trim_start_matches('/'));
    url.set_path(&joined);
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction() {
        let url = Url::parse(
            "https://user:pw@example.com/x?arg=bafy&X-Amz-Signature=abc&X-Amz-Security-Token=t",
        )
        .expect("url");
        let shown = redact(&url);
        assert!(!shown.contains("pw") && !shown.contains("user"), "{shown}");
        assert!(!shown.contains("abc") && !shown.contains("=t"), "{shown}");
        assert!(shown.contains("arg=bafy"), "{shown}");
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let cfg = HttpConfig {
            backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(350),
            ..HttpConfig::default()
        };
        assert_eq!(cfg.delay(1, None), Duration::from_millis(100));
        assert_eq!(cfg.delay(2, None), Duration::from_millis(200));
        assert_eq!(cfg.delay(3, None), Duration::from_millis(350));
        assert_eq!(
            cfg.delay(1, Some(Duration::from_secs(60))),
            Duration::from_millis(350)
        );
    }

    #[test]
    fn transient_statuses() {
        for s in [408, 429, 500, 502, 503, 504] {
            assert!(default_transient(s, b""), "{s}");
        }
        for s in [400, 401, 403, 404, 409, 501] {
            assert!(!default_transient(s, b""), "{s}");
        }
    }

    #[test]
    fn error_details() {
        let s3 = b"<?xml version=\"1.0\"?><Error><Code>SignatureDoesNotMatch</Code><Message>x</Message></Error>";
        assert_eq!(
            error_detail(StatusCode::FORBIDDEN, s3),
            "SignatureDoesNotMatch"
        );
        let kubo = br#"{"Message":"not pinned","Code":0,"Type":"error"}"#;
        assert_eq!(
            error_detail(StatusCode::INTERNAL_SERVER_ERROR, kubo),
            "not pinned"
        );
        assert_eq!(error_detail(StatusCode::NOT_FOUND, b""), "Not Found");
    }

    #[test]
    fn config_from_env() {
        let env = |k: &str| match k {
            TIMEOUT_VAR => Some("7".to_string()),
            ATTEMPTS_VAR => Some("2".to_string()),
            _ => None,
        };
        let cfg = HttpConfig::from_env(&env).expect("cfg");
        assert_eq!(cfg.timeout, Duration::from_secs(7));
        assert_eq!(cfg.attempts, 2);
        let env = |k: &str| (k == ATTEMPTS_VAR).then(|| "0".to_string());
        assert!(HttpConfig::from_env(&env).is_err());
    }

    #[test]
    fn base_urls() {
        let u = base_url("kubo", "IPFS_API", "http://127.0.0.1:5001").expect("url");
        assert_eq!(
            join(&u, "api/v0/version").as_str(),
            "http://127.0.0.1:5001/api/v0/version"
        );
        let u = base_url("storacha", "X", "https://up.storacha.network/bridge").expect("url");
        assert_eq!(u.as_str(), "https://up.storacha.network/bridge/");
        assert!(base_url("kubo", "IPFS_API", "ftp://x").is_err());
        let err = base_url("kubo", "IPFS_API", "http://me:secret@x").expect_err("creds");
        assert!(!err.to_string().contains("secret"), "{err}");
    }
}
