//! The OpenAI-compatible `/v1/embeddings` client (OpenAI, Ollama, llama.cpp, vLLM, TEI):
//! POST `{"model", "input": [...]}`, read `data[i].embedding`.
//!
//! Blocking for its callers: each call runs on a current-thread runtime of its own, on
//! a thread of its own when the caller is already inside a tokio runtime (where
//! blocking on another would panic). Every request has
//! the configured timeout; a server error or a dropped connection is retried at most
//! [`RETRIES`] times while less than the timeout has passed, a timeout is not (a slow
//! endpoint stays slow). The API key is read
//! from the environment when the client is made and sent only as a bearer token.
//! Every error names the endpoint as [`super::redact_url`] shows it (no userinfo, no
//! query), and never the key.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::{Config, EmbedError, Embedder, redact_url, scrub};

/// Retries after the first attempt of one batch.
pub const RETRIES: u32 = 2;

/// The client.
pub struct OpenAi {
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
    pub fn new(config: &Config) -> Result<OpenAi, EmbedError> {
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

    /// Embeds `texts` in batches on a runtime and a client made for this call (a
    /// client's connections belong to the runtime that opened them).
    fn embed_here(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let endpoint = |reason: String| EmbedError::Endpoint {
            url: self.shown.clone(),
            reason,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| endpoint(format!("runtime: {e}")))?;
        let client = reqwest::Client::builder()
            .timeout(self.timeout)
            .connect_timeout(self.timeout)
            .build()
            .map_err(|e| endpoint(format!("client: {e}")))?;
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.batch) {
            out.extend(runtime.block_on(self.batch(&client, chunk))?);
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
        for (pos, item) in body.data.into_iter().enumerate() {
            if item.embedding.len() != self.dimensions {
                return Err(EmbedError::Dimensions {
                    model: self.model.clone(),
                    expected: self.dimensions,
                    got: item.embedding.len(),
                });
            }
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

impl Embedder for OpenAi {
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return self.embed_here(texts);
        }
        std::thread::scope(|s| {
            s.spawn(|| self.embed_here(texts))
                .join()
                .unwrap_or_else(|_| {
                    Err(EmbedError::Endpoint {
                        url: self.shown.clone(),
                        reason: "the embedding thread stopped".into(),
                    })
                })
        })
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
            url: format!("http://user:hunter2secret@127.0.0.1:{port}"),
            model: "m".into(),
            dimensions: 2,
            api_key_env: "MEMDIR_TEST_UNSET_KEY_VAR".into(),
            timeout: Duration::from_millis(500),
            floor: 0.3,
            query_budget: 1,
            batch_size: 1,
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
}
