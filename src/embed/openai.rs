//! The OpenAI-compatible `/v1/embeddings` client (OpenAI, Ollama, llama.cpp, vLLM, TEI):
//! POST `{"model", "input": [...]}`, read `data[i].embedding`.
//!
//! Blocking for its callers: each call is a task on a runtime of one worker thread that
//! the process keeps, with one HTTP client per timeout ([`shared`]), so connections
//! (and TLS sessions) are reused from call to call; the caller waits on a channel, so
//! it may itself be inside a tokio runtime (the MCP server). Every request has
//! the configured timeout; a server error or a dropped connection is retried at most
//! [`RETRIES`] times while less than the timeout has passed, a timeout is not (a slow
//! endpoint stays slow). The API key is read
//! from the environment when the client is made and sent only as a bearer token.
//! Every error names the endpoint as [`super::redact_url`] shows it (no userinfo, no
//! query), and never the key.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::{Config, EmbedError, Embedder, redact_url, scrub};

/// Retries after the first attempt of one batch.
pub(crate) const RETRIES: u32 = 2;

/// The client.
#[derive(Clone)]
pub(crate) struct OpenAi {
    url: String,
    /// `url` as errors show it.
    shown: String,
    batch: usize,
    model: String,
    dimensions: usize,
    key: Option<String>,
    timeout: Duration,
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

impl OpenAi {
    /// A client for `config`.
    pub(crate) fn new(config: &Config) -> Result<OpenAi, EmbedError> {
        let base = config.url.trim_end_matches('/');
        let url = if base.ends_with("/embeddings") {
            base.to_string()
        } else if base.ends_with("/v1") {
            format!("{base}/embeddings")
        } else {
            format!("{base}/v1/embeddings")
        };
        let key = std::env::var(&config.api_key_env)
            .ok()
            .filter(|k| !k.is_empty());
        Ok(OpenAi {
            shown: redact_url(&url),
            url,
            batch: config.batch_size.max(1),
            model: config.model.clone(),
            dimensions: config.dimensions,
            key,
            timeout: config.timeout,
        })
    }

    /// Embeds `texts` in batches, one request after the other.
    async fn embed_all(
        &self,
        client: &reqwest::Client,
        texts: &[String],
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.batch) {
            out.extend(self.batch(client, chunk).await?);
        }
        Ok(out)
    }

    async fn batch(
        &self,
        client: &reqwest::Client,
        texts: &[String],
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut attempt = 0;
        let start = std::time::Instant::now();
        loop {
            let r = self.once(client, texts).await;
            let retry = match &r {
                Err(EmbedError::Status { status, .. }) => *status == 429 || *status >= 500,
                Err(EmbedError::Endpoint { .. }) => true,
                _ => false,
            };
            // No retry once the timeout has been spent: a batch takes at most about
            // twice the configured timeout, failures included.
            if !retry || attempt >= RETRIES || start.elapsed() >= self.timeout {
                return r;
            }
            attempt += 1;
            tokio::time::sleep(Duration::from_millis(100 * u64::from(attempt))).await;
        }
    }

    async fn once(
        &self,
        client: &reqwest::Client,
        texts: &[String],
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut req = client
            .post(&self.url)
            .json(&json!({"model": self.model, "input": texts}));
        if let Some(k) = &self.key {
            req = req.bearer_auth(k);
        }
        let resp = req.send().await.map_err(|e| self.transport(e))?;
        let status = resp.status();
        if !status.is_success() {
            return Err(EmbedError::Status {
                url: self.shown.clone(),
                status: status.as_u16(),
            });
        }
        let body: Response = resp.json().await.map_err(|e| self.transport(e))?;
        if body.data.len() != texts.len() {
            return Err(EmbedError::Count {
                url: self.shown.clone(),
                expected: texts.len(),
                got: body.data.len(),
            });
        }
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        // Each vector's length and values are checked by `super::Checked`, which
        // wraps every embedder.
        for (pos, item) in body.data.into_iter().enumerate() {
            let at = item.index.unwrap_or(pos);
            if let Some(slot) = out.get_mut(at) {
                *slot = Some(item.embedding);
            }
        }
        out.into_iter()
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| EmbedError::Endpoint {
                url: self.shown.clone(),
                reason: "the response's indices do not cover the input".into(),
            })
    }

    fn transport(&self, e: reqwest::Error) -> EmbedError {
        if e.is_timeout() {
            EmbedError::Timeout {
                url: self.shown.clone(),
                ms: self.timeout.as_millis() as u64,
            }
        } else {
            // Without its URL (which may carry userinfo): the shown one is beside it.
            // The key is a header and never in the text; scrubbed all the same.
            EmbedError::Endpoint {
                url: self.shown.clone(),
                reason: scrub(&error_chain(&e.without_url()), self.key.as_deref()),
            }
        }
    }
}

/// An error and its sources, `: `-joined (reqwest's own text says only "error sending
/// request"; the cause, such as "connection refused", is in the chain).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut at = e.source();
    while let Some(s) = at {
        let t = s.to_string();
        if !out.contains(&t) {
            out.push_str(": ");
            out.push_str(&t);
        }
        at = s.source();
    }
    out
}

/// What every call of this process with one timeout shares: the runtime its requests
/// run on (one worker thread, started on first use, kept until the process ends) and
/// the client, whose connection pool lives on that runtime.
struct Shared {
    runtime: tokio::runtime::Runtime,
    client: reqwest::Client,
}

/// The runtime and client for `timeout`, made on first use.
fn shared(timeout: Duration) -> Result<Arc<Shared>, String> {
    static POOL: Mutex<Vec<(Duration, Arc<Shared>)>> = Mutex::new(Vec::new());
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, s)) = pool.iter().find(|(t, _)| *t == timeout) {
        return Ok(Arc::clone(s));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("memdir-embed")
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    // reqwest is built without a crypto provider (Cargo.toml: ring, not aws-lc-rs);
    // a provider an embedder installed stays.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout)
        .build()
        .map_err(|e| format!("client: {e}"))?;
    let s = Arc::new(Shared { runtime, client });
    pool.push((timeout, Arc::clone(&s)));
    Ok(s)
}

impl Embedder for OpenAi {
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let endpoint = |reason: String| EmbedError::Endpoint {
            url: self.shown.clone(),
            reason,
        };
        let shared = shared(self.timeout).map_err(endpoint)?;
        let (tx, rx) = std::sync::mpsc::channel();
        let me = self.clone();
        let texts = texts.to_vec();
        let client = shared.client.clone();
        shared.runtime.spawn(async move {
            // The caller may have given up waiting; nothing to do then.
            let _ = tx.send(me.embed_all(&client, &texts).await);
        });
        rx.recv()
            .unwrap_or_else(|_| Err(endpoint("the embedding task stopped".into())))
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn model_id(&self) -> &str {
        &self.model
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // spec/ranking.md#hybrid-recall: a fallback reason names the endpoint without
    // its userinfo and never carries the key.
    #[test]
    fn errors_show_no_userinfo_and_no_key() {
        // A port nothing listens on (127.0.0.1 only): bind one, then free it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let config = Config {
            provider: crate::embed::Provider::OpenAi,
            url: format!("http://user:hunter2secret@127.0.0.1:{port}"),
            model: "m".into(),
            dimensions: 2,
            api_key_env: "MEMDIR_TEST_UNSET_KEY_VAR".into(),
            timeout: Duration::from_millis(500),
            floor: 0.3,
            query_budget: 1,
            batch_size: 1,
            passages: false,
        };
        let mut client = OpenAi::new(&config).unwrap();
        client.key = Some("sk-live-do-not-show".into());
        let e = client.embed(&["a".to_string()]).unwrap_err().to_string();
        assert!(
            e.contains(&format!("http://127.0.0.1:{port}/v1/embeddings")),
            "{e}"
        );
        assert!(!e.contains("hunter2secret") && !e.contains("user:"), "{e}");
        assert!(!e.contains("sk-live"), "{e}");
    }

    /// A loopback `/v1/embeddings` server speaking HTTP/1.1 with keep-alive: answers
    /// `requests` requests (each text gets `[1, 0]`), then stops. Returns its port and
    /// a handle giving the number of connections it accepted.
    fn keep_alive_server(requests: usize) -> (u16, std::thread::JoinHandle<usize>) {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let handle = std::thread::spawn(move || {
            let (mut served, mut connections) = (0, 0);
            while served < requests {
                let (stream, _) = listener.accept().unwrap();
                connections += 1;
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut out = stream;
                while served < requests {
                    let mut len = 0usize;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            break;
                        }
                        let lower = line.to_ascii_lowercase();
                        if let Some(v) = lower.strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap();
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    if line != "\r\n" {
                        break; // the client closed this connection
                    }
                    let mut body = vec![0; len];
                    reader.read_exact(&mut body).unwrap();
                    let req: serde_json::Value = serde_json::from_slice(&body).unwrap();
                    let n = req["input"].as_array().unwrap().len();
                    let data: Vec<_> = (0..n)
                        .map(|i| json!({"index": i, "embedding": [1.0, 0.0]}))
                        .collect();
                    let reply = json!({ "data": data }).to_string();
                    write!(
                        out,
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{reply}",
                        reply.len()
                    )
                    .unwrap();
                    served += 1;
                }
            }
            connections
        });
        (port, handle)
    }

    fn config(port: u16) -> Config {
        Config {
            provider: crate::embed::Provider::OpenAi,
            url: format!("http://127.0.0.1:{port}"),
            model: "m".into(),
            dimensions: 2,
            api_key_env: "MEMDIR_TEST_UNSET_KEY_VAR".into(),
            timeout: Duration::from_millis(5000),
            floor: 0.3,
            query_budget: 1,
            batch_size: 2,
            passages: false,
        }
    }

    // spec/ranking.md#hybrid-recall: calls share one client, so a warm process keeps
    // its connection to the endpoint (and, over HTTPS, its TLS session) between calls,
    // also across clients made from the same configuration, and from inside a tokio
    // runtime (the MCP server's case).
    #[test]
    fn calls_reuse_one_connection() {
        let (port, server) = keep_alive_server(4);
        let texts = ["a".to_string(), "b".to_string(), "c".to_string()];
        // Two requests (batches of two), then one more from a new client.
        let v = OpenAi::new(&config(port)).unwrap().embed(&texts).unwrap();
        assert_eq!(v, vec![vec![1.0, 0.0]; 3]);
        let again = OpenAi::new(&config(port)).unwrap();
        assert_eq!(again.embed(&texts[..1]).unwrap(), vec![vec![1.0, 0.0]]);
        let inside = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let got = inside.block_on(async { again.embed(&texts[..1]) });
        assert_eq!(got.unwrap(), vec![vec![1.0, 0.0]]);
        assert_eq!(server.join().unwrap(), 1, "connections accepted");
    }
}
