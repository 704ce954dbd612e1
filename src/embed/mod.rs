//! Embeddings for hybrid recall (spec/ranking.md#hybrid-recall): the provider trait,
//! the `[embeddings]` section of `.memdir/config.toml`, the OpenAI-compatible
//! `/v1/embeddings` client and the vector cache under `.memdir/cache/`.
//!
//! Off unless `[embeddings]` names a URL, a model and the dimensions. Vectors are
//! derived data: they live only in `.memdir/cache/vectors-<model-hash>.bin`, keyed by
//! the SHA-256 of the exact text embedded, never in memory files, blobs or sync. The
//! API key comes only from the environment variable the configuration names and is
//! never written anywhere. Must not rank: `retrieval::hybrid` fuses, the engine decides.

#[cfg(feature = "embed-builtin")]
pub(crate) mod builtin;
pub(crate) mod cache;
#[cfg(feature = "sync")]
pub(crate) mod openai;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The default environment variable holding the API key.
pub(crate) const DEFAULT_KEY_VAR: &str = "MEMDIR_EMBED_API_KEY";

/// The default time one request may take.
pub(crate) const DEFAULT_TIMEOUT_MS: u64 = 2000;

/// The default most texts embedded on the query path of one recall (the rest wait
/// for the next call or `memdir index --embeddings`): with the query, one request.
pub(crate) const DEFAULT_QUERY_BUDGET: usize = 63;

/// The default texts per request.
pub(crate) const BATCH: usize = 64;

/// An embedding failed or is not configured right.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// `[embeddings]` is not valid.
    #[error("{path}: [embeddings]: {reason}")]
    Config {
        /// The configuration file.
        path: PathBuf,
        /// What is wrong with the section.
        reason: String,
    },
    /// The configuration file itself could not be read or parsed (so `[embeddings]`
    /// cannot be known).
    #[error("{}{}: {message}", .path.display(), .line.map(|l| format!(":{l}")).unwrap_or_default())]
    ConfigFile {
        /// The configuration file.
        path: PathBuf,
        /// The line, when the error has one.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// The endpoint could not be reached or its answer not read.
    #[error("embedding endpoint {url}: {reason}")]
    Endpoint {
        /// The endpoint, redacted.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// The endpoint answered with an HTTP error status.
    #[error("embedding endpoint {url} answered HTTP {status}")]
    Status {
        /// The endpoint, redacted.
        url: String,
        /// The HTTP status.
        status: u16,
    },
    /// The endpoint did not answer in time.
    #[error("embedding endpoint {url} timed out after {ms} ms")]
    Timeout {
        /// The endpoint, redacted.
        url: String,
        /// The timeout in milliseconds.
        ms: u64,
    },
    /// An embedder answered a vector that cannot be compared (spec/ranking.md#hybrid-recall):
    /// nothing of that answer is kept.
    #[error(
        "embedding model {model} at {endpoint}: the vector of text {index} (of {count}, counted from 0) {problem}; none of this answer was kept"
    )]
    Invalid {
        /// The model.
        model: String,
        /// The endpoint, redacted (`builtin` for the builtin model).
        endpoint: String,
        /// Which text's vector is wrong, counted from 0.
        index: usize,
        /// How many texts were sent.
        count: usize,
        /// What is wrong with the vector.
        problem: String,
    },
    /// The endpoint answered with a number of vectors other than the number of texts.
    #[error("embedding endpoint {url}: expected {expected} vectors, got {got}")]
    Count {
        /// The endpoint, redacted.
        url: String,
        /// How many vectors were expected.
        expected: usize,
        /// How many it sent.
        got: usize,
    },
    /// An endpoint configured in a build without the `sync` feature.
    #[error("embeddings need the `sync` feature (reqwest), which this build leaves out")]
    NotBuilt,
    #[error(
        "the builtin embedding model needs the `embed-builtin` feature, which this build leaves out"
    )]
    /// The builtin model configured in a build without the `embed-builtin` feature.
    NoBuiltin,
    /// The builtin model failed.
    #[error("builtin embedding model: {reason}")]
    Builtin {
        /// What went wrong.
        reason: String,
    },
}

/// `url` as it may be shown (in a fallback reason, a warning, a log): without the
/// userinfo (`http://user:secret@host` → `http://host`), and without the query and
/// fragment, where some services take a key. Text that is not a URL is kept whole.
pub fn redact_url(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => (&url[..i + 3], &url[i + 3..]),
        None => ("", url),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let path = tail.split(['?', '#']).next().unwrap_or_default();
    format!("{scheme}{host}{path}")
}

/// `text` with every occurrence of `secret` replaced (a key a server echoed back).
#[cfg_attr(not(feature = "sync"), allow(dead_code))]
pub(crate) fn scrub(text: &str, secret: Option<&str>) -> String {
    match secret.filter(|s| s.len() >= 4) {
        Some(s) => text.replace(s, "[redacted]"),
        None => text.to_string(),
    }
}

/// One embedding provider: texts in, one vector of [`Embedder::dimensions`] per text out.
pub trait Embedder {
    /// Embeds `texts`, one vector per text in order.
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;
    /// Embeds the first text and as many of the rest, in order, as `budget` allows:
    /// the vectors of a prefix of `texts`, never empty when `texts` is not. An
    /// endpoint answers all of them or fails (its timeout is the budget); the builtin
    /// model stops between texts once the budget is spent (the query path's lazily
    /// embedded memories).
    fn embed_within(
        &self,
        texts: &[String],
        budget: Duration,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let _ = budget;
        self.embed(texts)
    }
    /// The length of every vector.
    fn dimensions(&self) -> usize;
    /// The model's name, as the configuration gives it.
    fn model_id(&self) -> &str;
}

/// The raw `[embeddings]` table as the sync configuration keeps it (so writing that
/// file back keeps this section untouched).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Section(pub toml::Table);

// Equality of configurations is only compared on files that were read (tests, "did
// it change"); a `nan` (which TOML can spell) makes a section unequal to itself, which
// such comparisons tolerate, and `Config::load` refuses it as a floor.
impl Eq for Section {}

/// Where vectors come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// An OpenAI-compatible `/v1/embeddings` endpoint (`url`, `model`, `dimensions`).
    OpenAi,
    /// The model inside the binary (feature `embed-builtin`).
    Builtin,
}

/// The model id of the builtin model (`provider = "builtin"`), which its cached
/// vectors are filed under.
pub const BUILTIN_MODEL: &str = "pocket-encoder/minilm-l3-q4-g32-v1";
/// The length of the builtin model's vectors.
pub const BUILTIN_DIMENSIONS: usize = 384;

/// The `[embeddings]` section, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Where vectors come from.
    pub provider: Provider,
    /// The endpoint: a base URL (`/v1/embeddings` is appended unless it ends so);
    /// empty for the builtin model.
    pub url: String,
    /// The model's name (the builtin model's id for `builtin`).
    pub model: String,
    /// The length of its vectors.
    pub dimensions: usize,
    /// The environment variable holding the API key (`MEMDIR_EMBED_API_KEY` unless set).
    pub api_key_env: String,
    /// How long one request may take.
    pub timeout: Duration,
    /// The similarity a vector-only hit must reach.
    pub floor: f32,
    /// Most texts embedded on the query path of one call.
    pub query_budget: usize,
    /// Texts per request (64 unless set).
    pub batch_size: usize,
    /// Whether a context compares the best memories' lines with the query one by
    /// one (spec/ranking.md#passages); off unless set.
    pub passages: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    provider: Option<String>,
    url: Option<String>,
    model: Option<String>,
    dimensions: Option<usize>,
    api_key_env: Option<String>,
    timeout_ms: Option<u64>,
    floor: Option<f32>,
    query_budget: Option<usize>,
    batch_size: Option<usize>,
    passages: Option<bool>,
}

impl Config {
    /// Validates the `[embeddings]` table of the configuration file at `path` (as
    /// its one reader, `store::config`, hands it over): `Ok(None)` when there is no
    /// such table (the keyword-only default).
    pub fn from_section(
        section: Option<&toml::Value>,
        path: &Path,
    ) -> Result<Option<Config>, EmbedError> {
        let bad = |reason: String| EmbedError::Config {
            path: path.to_path_buf(),
            reason,
        };
        let Some(section) = section else {
            return Ok(None);
        };
        let Some(table) = section.as_table() else {
            return Err(bad("`embeddings` must be a table: [embeddings]".into()));
        };
        let raw: Raw = table.clone().try_into().map_err(|e| bad(format!("{e}")))?;
        let provider = match raw.provider.as_deref() {
            None | Some("openai") => Provider::OpenAi,
            Some("builtin") => Provider::Builtin,
            Some(other) => {
                return Err(bad(format!(
                    "`provider` is \"openai\" (the default: an endpoint) or \"builtin\", not {other:?}"
                )));
            }
        };
        let (url, model, dimensions) = match provider {
            Provider::OpenAi => {
                let url = raw.url.ok_or_else(|| bad("missing `url`".into()))?;
                let model = raw.model.ok_or_else(|| bad("missing `model`".into()))?;
                let dimensions = raw
                    .dimensions
                    .filter(|d| (1..=65536).contains(d))
                    .ok_or_else(|| bad("`dimensions` must be a number from 1 to 65536".into()))?;
                (url, model, dimensions)
            }
            Provider::Builtin => {
                if raw.url.is_some() {
                    return Err(bad(
                        "`url` is for an endpoint; the builtin model runs in process".into(),
                    ));
                }
                if raw.model.as_deref().is_some_and(|m| m != BUILTIN_MODEL) {
                    return Err(bad(format!(
                        "the builtin model is {BUILTIN_MODEL:?}; leave `model` out"
                    )));
                }
                if raw.dimensions.is_some_and(|d| d != BUILTIN_DIMENSIONS) {
                    return Err(bad(format!(
                        "the builtin model has {BUILTIN_DIMENSIONS} dimensions; leave `dimensions` out"
                    )));
                }
                (String::new(), BUILTIN_MODEL.to_string(), BUILTIN_DIMENSIONS)
            }
        };
        let batch_size = raw.batch_size.unwrap_or(BATCH).clamp(1, 2048);
        let floor = raw.floor.unwrap_or(crate::retrieval::hybrid::DEFAULT_FLOOR);
        if !(-1.0..=1.0).contains(&floor) {
            return Err(bad(
                "`floor` must be a cosine similarity from -1 to 1".into()
            ));
        }
        Ok(Some(Config {
            provider,
            url,
            model,
            dimensions,
            api_key_env: raw.api_key_env.unwrap_or_else(|| DEFAULT_KEY_VAR.into()),
            timeout: Duration::from_millis(raw.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS).max(1)),
            floor,
            query_budget: raw.query_budget.unwrap_or(DEFAULT_QUERY_BUDGET),
            batch_size,
            passages: raw.passages.unwrap_or(false),
        }))
    }

    /// The provider this configuration names, its answers checked (one vector
    /// per text, each checked before it is used or cached).
    pub fn embedder(&self) -> Result<Box<dyn Embedder>, EmbedError> {
        let endpoint = match self.provider {
            Provider::OpenAi => redact_url(&self.url),
            Provider::Builtin => "builtin".to_string(),
        };
        Ok(Box::new(Checked {
            inner: self.unchecked()?,
            endpoint,
        }))
    }

    fn unchecked(&self) -> Result<Box<dyn Embedder>, EmbedError> {
        match self.provider {
            Provider::OpenAi => {
                #[cfg(feature = "sync")]
                {
                    Ok(Box::new(openai::OpenAi::new(self)?))
                }
                #[cfg(not(feature = "sync"))]
                {
                    Err(EmbedError::NotBuilt)
                }
            }
            Provider::Builtin => {
                #[cfg(feature = "embed-builtin")]
                {
                    Ok(Box::new(builtin::Builtin::new()?))
                }
                #[cfg(not(feature = "embed-builtin"))]
                {
                    Err(EmbedError::NoBuiltin)
                }
            }
        }
    }
}

/// An embedder whose every answer is checked before anyone uses or caches it: one
/// vector per text (a prefix for [`Embedder::embed_within`], never empty), each one
/// [`cache::vector_problem`] accepts. A bad vector fails the whole call with
/// [`EmbedError::Invalid`].
pub(crate) struct Checked {
    inner: Box<dyn Embedder>,
    /// The endpoint as errors show it ([`redact_url`]), or `builtin`.
    endpoint: String,
}

impl Checked {
    fn check(
        &self,
        texts: &[String],
        vectors: Vec<Vec<f32>>,
        whole: bool,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let count = texts.len();
        let invalid = |index: usize, problem: String| EmbedError::Invalid {
            model: self.inner.model_id().to_string(),
            endpoint: self.endpoint.clone(),
            index,
            count,
            problem,
        };
        let short = if whole {
            vectors.len() != count
        } else {
            vectors.len() > count || (vectors.is_empty() && count > 0)
        };
        if short {
            return Err(invalid(
                vectors.len().min(count),
                format!("is missing: {} vectors came back", vectors.len()),
            ));
        }
        for (i, v) in vectors.iter().enumerate() {
            if let Some(problem) = cache::vector_problem(v, self.inner.dimensions()) {
                return Err(invalid(i, problem));
            }
        }
        Ok(vectors)
    }
}

impl Embedder for Checked {
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let vectors = self.inner.embed(texts)?;
        self.check(texts, vectors, true)
    }

    fn embed_within(
        &self,
        texts: &[String],
        budget: Duration,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let vectors = self.inner.embed_within(texts, budget)?;
        self.check(texts, vectors, false)
    }

    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }

    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` as a store's `.memdir/config.toml`, its `[embeddings]` validated (the
    /// file itself is parsed by `store::config`; a file that does not parse is its
    /// error, tested there and in tests/embed.rs).
    fn load(text: &str) -> Result<Option<Config>, EmbedError> {
        let table: toml::Table = toml::from_str(text).expect("the cases are TOML");
        Config::from_section(table.get("embeddings"), Path::new(".memdir/config.toml"))
    }

    /// `[embeddings]` text → `Ok(Some(model))`, `Ok(None)` (off) or an error containing a word.
    fn check(text: &str, expect: Result<Option<&str>, &str>) {
        match (load(text), expect) {
            (Ok(c), Ok(m)) => assert_eq!(c.map(|c| c.model).as_deref(), m, "{text}"),
            (Err(e), Err(word)) => assert!(e.to_string().contains(word), "{text}: {e}"),
            (got, expect) => panic!("{text}: got {got:?}, expected {expect:?}"),
        }
    }

    // spec/ranking.md#hybrid-recall: off unless configured; a bad section is an error
    // the engine turns into a keyword fallback.
    #[test]
    fn config_cases() {
        check("", Ok(None));
        check("mode = \"local\"\n", Ok(None));
        check("embeddings = 3\n", Err("must be a table"));
        check(
            "[embeddings]\nurl = \"u\"\nmodel = \"m\"\ndimensions = 8\n",
            Ok(Some("m")),
        );
        check("[embeddings]\nurl = \"u\"\ndimensions = 8\n", Err("model"));
        check(
            "[embeddings]\nurl = \"u\"\nmodel = \"m\"\n",
            Err("dimensions"),
        );
        check(
            "[embeddings]\nurl = \"u\"\nmodel = \"m\"\ndimensions = 0\n",
            Err("dimensions"),
        );
        check(
            "[embeddings]\nurl = \"u\"\nmodel = \"m\"\ndimensions = 8\nfloor = 2.0\n",
            Err("floor"),
        );
        check(
            "[embeddings]\nurl = \"u\"\nmodel = \"m\"\ndimensions = 8\nkey = \"secret\"\n",
            Err("unknown field"),
        );
        // The builtin model needs nothing else, and refuses another model or length.
        check(
            "[embeddings]\nprovider = \"builtin\"\n",
            Ok(Some(BUILTIN_MODEL)),
        );
        check(
            "[embeddings]\nprovider = \"builtin\"\nquery_budget = 5\n",
            Ok(Some(BUILTIN_MODEL)),
        );
        check(
            "[embeddings]\nprovider = \"builtin\"\nmodel = \"all-minilm\"\n",
            Err("leave `model` out"),
        );
        check(
            "[embeddings]\nprovider = \"builtin\"\ndimensions = 768\n",
            Err("leave `dimensions` out"),
        );
        check(
            "[embeddings]\nprovider = \"builtin\"\nurl = \"http://x\"\n",
            Err("runs in process"),
        );
        check("[embeddings]\nprovider = \"onnx\"\n", Err("\"onnx\""));
    }

    // Without the feature the builtin model is a clear error (a keyword fallback on
    // the query path); with it, the constants are the crate's own.
    #[test]
    fn the_builtin_provider_is_the_feature() {
        let c = load("[embeddings]\nprovider = \"builtin\"\n")
            .unwrap()
            .unwrap();
        assert_eq!(c.provider, Provider::Builtin);
        #[cfg(not(feature = "embed-builtin"))]
        assert!(
            c.embedder()
                .err()
                .unwrap()
                .to_string()
                .contains("`embed-builtin` feature")
        );
        #[cfg(feature = "embed-builtin")]
        {
            let info = pocket_encoder::model_info();
            assert_eq!(info.id, BUILTIN_MODEL);
            assert_eq!(info.dimensions, BUILTIN_DIMENSIONS);
            let e = c.embedder().unwrap();
            assert_eq!((e.model_id(), e.dimensions()), (BUILTIN_MODEL, 384));
        }
    }

    #[test]
    fn defaults() {
        let c = load("[embeddings]\nurl = \"u\"\nmodel = \"m\"\ndimensions = 8\n")
            .unwrap()
            .unwrap();
        assert_eq!(c.api_key_env, DEFAULT_KEY_VAR);
        assert_eq!(c.timeout, Duration::from_millis(DEFAULT_TIMEOUT_MS));
        assert_eq!(c.floor, crate::retrieval::hybrid::DEFAULT_FLOOR);
        assert_eq!(c.query_budget, DEFAULT_QUERY_BUDGET);
        assert_eq!(c.batch_size, BATCH);
    }

    // spec/ranking.md#hybrid-recall: a URL is shown without its userinfo or query.
    #[test]
    fn redaction_cases() {
        for (url, shown) in [
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
            (
                "http://user:secret@host/v1/embeddings",
                "http://host/v1/embeddings",
            ),
            ("https://secret@host:443", "https://host:443"),
            ("http://u:p@ss@host/x", "http://host/x"),
            ("https://host/v1?api_key=secret#frag", "https://host/v1"),
            ("http://host/path@x", "http://host/path@x"),
            ("user:secret@host", "host"),
            ("u", "u"),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
        }
        assert_eq!(
            scrub("got sk-123 back", Some("sk-123")),
            "got [redacted] back"
        );
        assert_eq!(scrub("abc", None), "abc");
    }
}
