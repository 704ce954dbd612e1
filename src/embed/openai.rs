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

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::{BATCH, Config, EmbedError, Embedder};

/// Retries after the first attempt of one batch.
pub const RETRIES: u32 = 2;

/// The client.
pub struct OpenAi {
    url: String,
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
            url,
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
            url: self.url.clone(),
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
        for chunk in texts.chunks(BATCH) {
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
                url: self.url.clone(),
                status: status.as_u16(),
            });
        }
        let body: Response = resp.json().await.map_err(|e| self.transport(e))?;
        if body.data.len() != texts.len() {
            return Err(EmbedError::Count {
                url: self.url.clone(),
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
                url: self.url.clone(),
                reason: "the response's indices do not cover the input".into(),
            })
    }

    fn transport(&self, e: reqwest::Error) -> EmbedError {
        if e.is_timeout() {
            EmbedError::Timeout {
                url: self.url.clone(),
                ms: self.timeout.as_millis() as u64,
            }
        } else {
            // The error text names the URL but never the key (it is a header).
            EmbedError::Endpoint {
                url: self.url.clone(),
                reason: e.to_string(),
            }
        }
    }
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
                        url: self.url.clone(),
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
