//! The native module `memdir._memdir`: memdir's library as a Python class
//! (`Memory`), its results as read-only classes (`types`) and its errors as
//! exceptions (`errors`). Every call releases the GIL while memdir works. The pure
//! Python package (`python/python/memdir/`) re-exports it and adds
//! `MemdirMemoryTool`.

mod errors;
mod types;

use std::path::PathBuf;

use memdir::sync::config::Mode;
use memdir::{ContextRequest, Draft, Edit, FindReplace, IfExists, RecallRequest, SectionEdit};
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::errors::Raised;
use crate::types::{Context, Hit, Record, SyncReport, ToolReply};

/// Runs `work` without the GIL and turns its error into the Python exception.
fn run<T, E>(py: Python<'_>, work: impl FnOnce() -> Result<T, E> + Send) -> PyResult<T>
where
    T: Send,
    E: Into<Raised> + Send,
{
    py.detach(work).map_err(|e| e.into().into_py(py))
}

/// A memory directory (or an in-memory store) and memdir's operations on it.
#[pyclass(frozen, module = "memdir")]
struct Memory {
    inner: memdir::Memory,
}

#[pymethods]
impl Memory {
    /// Opens the memory directory at `path` (created by the first write). The clock
    /// is the system's, or `MEMDIR_NOW` when set.
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Memory> {
        let inner = run(py, || memdir::Memory::open(&path))?;
        Ok(Memory { inner })
    }

    /// A store that keeps everything in memory (nothing on disk).
    #[staticmethod]
    fn in_memory() -> Memory {
        Memory {
            inner: memdir::Memory::in_memory(),
        }
    }

    /// The directory (`(memory)` for an in-memory store).
    #[getter]
    fn root(&self) -> PathBuf {
        self.inner.root()
    }

    fn __repr__(&self) -> String {
        format!("Memory({:?})", self.inner.root().display().to_string())
    }

    /// Creates the directory with MEMORY.md, `timeline/` and `.memdir/`; whether
    /// anything was created.
    fn init(&self, py: Python<'_>) -> PyResult<bool> {
        run(py, || self.inner.init())
    }

    /// Writes memory `key`: `created`, `updated` or `unchanged`.
    #[pyo3(signature = (key, body, *, name=None, description=None, r#type=None, tags=None,
        important=None, decay=None, source=None, supersedes=None, valid_until=None,
        replace=false, expected_hash=None))]
    #[allow(clippy::too_many_arguments)]
    fn remember(
        &self,
        py: Python<'_>,
        key: String,
        body: String,
        name: Option<String>,
        description: Option<String>,
        r#type: Option<String>,
        tags: Option<Vec<String>>,
        important: Option<bool>,
        decay: Option<String>,
        source: Option<String>,
        supersedes: Option<Vec<String>>,
        valid_until: Option<String>,
        replace: bool,
        expected_hash: Option<String>,
    ) -> PyResult<&'static str> {
        let (derived_name, derived_description) =
            memdir::exchange::memory_tool::derive_fields(&body, &key);
        let kind =
            r#type.unwrap_or_else(|| memdir::exchange::memory_tool::kind_of_key(&key).to_string());
        let draft = Draft {
            name: name.unwrap_or(derived_name),
            description: description.unwrap_or(derived_description),
            kind: memdir::Kind::from(kind),
            key,
            body,
            tags,
            important,
            decay,
            source,
            supersedes,
            valid_until,
        };
        let if_exists = match (expected_hash, replace) {
            (Some(h), _) => IfExists::ReplaceIfHash(h),
            (None, true) => IfExists::Replace,
            (None, false) => IfExists::Refuse,
        };
        run(py, || self.inner.write_if(&draft, &if_exists)).map(|w| w.outcome.as_str())
    }

    /// The memories most relevant to `query`, best first, at most `limit`.
    #[pyo3(signature = (query, limit=10))]
    fn recall(&self, py: Python<'_>, query: String, limit: usize) -> PyResult<Vec<Hit>> {
        let req = RecallRequest::new(query, limit);
        let recall = run(py, || self.inner.recall(&req))?;
        Ok(recall.hits.into_iter().map(Hit::from).collect())
    }

    /// The context block of at most `max_tokens` tokens, ordered by relevance to
    /// `query` when given (else by rank).
    #[pyo3(signature = (max_tokens=memdir::DEFAULT_MAX_TOKENS, query=None))]
    fn context(
        &self,
        py: Python<'_>,
        max_tokens: usize,
        query: Option<String>,
    ) -> PyResult<Context> {
        let mut req = ContextRequest::new(max_tokens);
        if let Some(q) = query {
            req = req.with_query(q);
        }
        run(py, || self.inner.context(&req)).map(Context::from)
    }

    /// Memory `key` as stored.
    fn read(&self, py: Python<'_>, key: String) -> PyResult<Record> {
        run(py, || self.inner.read(&key)).map(Record::from)
    }

    /// Forgets memory `key`: a `forgot` event (with `reason`), the file removed; sync
    /// carries the deletion to other devices.
    #[pyo3(signature = (key, reason=None))]
    fn forget(&self, py: Python<'_>, key: String, reason: Option<String>) -> PyResult<()> {
        run(py, || self.inner.forget(&key, reason.as_deref())).map(|_| ())
    }

    /// Renames memory `old` to `new` (a `renamed` event; links to `old` dangle).
    fn rename(&self, py: Python<'_>, old: String, new: String) -> PyResult<()> {
        run(py, || self.inner.rename(&old, &new)).map(|_| ())
    }

    /// Edits memory `key` in place: `created`, `updated` or `unchanged`. Body
    /// changes apply in this order: `find`/`replace` (every occurrence; exactly
    /// `count` of them when given), `section`/`section_text` (the text under a
    /// heading), `prepend`, `append`; a field left None keeps its value.
    #[pyo3(signature = (key, *, append=None, prepend=None, find=None, replace=None, count=None,
        section=None, section_text=None, name=None, description=None, r#type=None, tags=None,
        important=None, decay=None, source=None))]
    #[allow(clippy::too_many_arguments)]
    fn edit(
        &self,
        py: Python<'_>,
        key: String,
        append: Option<String>,
        prepend: Option<String>,
        find: Option<String>,
        replace: Option<String>,
        count: Option<usize>,
        section: Option<String>,
        section_text: Option<String>,
        name: Option<String>,
        description: Option<String>,
        r#type: Option<String>,
        tags: Option<Vec<String>>,
        important: Option<bool>,
        decay: Option<String>,
        source: Option<String>,
    ) -> PyResult<&'static str> {
        let find_replace = match (find, replace) {
            (Some(find), Some(replace)) => Some(FindReplace {
                find,
                replace,
                expected_count: count,
            }),
            (None, None) if count.is_none() => None,
            _ => return Err(usage("find and replace go together (count with them)", py)),
        };
        let replace_section = match (section, section_text) {
            (Some(heading), Some(content)) => Some(SectionEdit { heading, content }),
            (None, None) => None,
            _ => return Err(usage("section and section_text go together", py)),
        };
        let e = Edit {
            append,
            prepend,
            replace_section,
            find_replace,
            name,
            description,
            kind: r#type,
            tags,
            important,
            decay,
            source,
        };
        run(py, || self.inner.edit(&key, &e)).map(|w| w.outcome.as_str())
    }

    /// One command of Claude's memory tool (`memory_20250818`), as the dict (or
    /// JSON text) the model sends; the reply text, an error reply's included.
    fn memory_tool(&self, py: Python<'_>, command: &Bound<'_, PyAny>) -> PyResult<String> {
        Ok(self.memory_tool_reply(py, command)?.text)
    }

    /// `memory_tool` with whether the reply is an error reply.
    fn memory_tool_reply(&self, py: Python<'_>, command: &Bound<'_, PyAny>) -> PyResult<ToolReply> {
        let json: String = if command.is_instance_of::<PyString>() {
            command.extract()?
        } else {
            py.import("json")?
                .call_method1("dumps", (command,))?
                .extract()?
        };
        Ok(py.detach(|| self.inner.memory_tool_json(&json)).into())
    }

    /// Pulls what the remote has that this directory lacks, merges, and pushes the
    /// result. `folder`: a folder remote at that path (a shared drive); else
    /// `provider` (`kubo`, `pinata`, `filebase`, `storacha`, `folder`), configured
    /// by the environment as for `memdir sync`, else the configured provider.
    /// `mode`: `ipfs` or `encrypted-ipfs` (default: the configured one, else
    /// `ipfs`); `strategy`: `merge` or `replace`.
    #[pyo3(signature = (*, folder=None, provider=None, mode=None, strategy="merge"))]
    fn sync(
        &self,
        py: Python<'_>,
        folder: Option<PathBuf>,
        provider: Option<String>,
        mode: Option<String>,
        strategy: &str,
    ) -> PyResult<SyncReport> {
        let mode = match mode.as_deref() {
            None => None,
            Some(m) => match Mode::parse(m) {
                Some(Mode::Ipfs | Mode::EncryptedIpfs) => Mode::parse(m),
                _ => return Err(usage_of("mode", m, "ipfs, encrypted-ipfs", py)),
            },
        };
        let Some(strategy) = memdir::Strategy::parse(strategy) else {
            return Err(usage_of("strategy", strategy, "merge, replace", py));
        };
        if folder.is_some() && provider.is_some() {
            return Err(usage("give folder or provider, not both", py));
        }
        let mem = &self.inner;
        let report = run(py, || -> Result<_, Raised> {
            let opened = match folder {
                Some(path) => {
                    let p = memdir::provider::Blocking::new(Box::new(
                        memdir::provider::Folder::new(path),
                    ))?;
                    memdir::sync::open_provider(mem, p, mode)?
                }
                None => {
                    let choice = memdir::sync::Choice {
                        provider,
                        mode,
                        ..Default::default()
                    };
                    memdir::sync::open(mem, &choice)?
                }
            };
            let progress = memdir::provider::NoProgress;
            Ok(memdir::sync::sync(
                mem,
                &opened.remote(&progress),
                None,
                strategy,
            )?)
        })?;
        Ok(report.into())
    }
}

fn usage(message: &str, py: Python<'_>) -> PyErr {
    Raised::usage(message.to_string(), None).into_py(py)
}

fn usage_of(what: &str, value: &str, allowed: &str, py: Python<'_>) -> PyErr {
    Raised::usage(
        format!("{what} `{value}` is not one of {allowed}"),
        Some(format!("pass {what}= one of {allowed}")),
    )
    .into_py(py)
}

#[pymodule]
fn _memdir(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Memory>()?;
    m.add_class::<Hit>()?;
    m.add_class::<Context>()?;
    m.add_class::<Record>()?;
    m.add_class::<ToolReply>()?;
    m.add_class::<SyncReport>()?;
    m.add("DEFAULT_MAX_TOKENS", memdir::DEFAULT_MAX_TOKENS)?;
    errors::register(m)
}
