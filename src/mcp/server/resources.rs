//! The `memory://` resources: the list (the index first, then every memory by key),
//! the text behind a URI, and the protocol errors of resource requests, run on the
//! blocking pool. The `memory://{key}` template and its completion are in
//! `mcp::prompts`. It must not touch files except through the engine.

use rmcp::ErrorData as McpError;
use rmcp::model::Resource;

use super::super::core::{MemoryServer, Shared, report};
use super::super::uri::{self, Target};
use memdir::IndexOwner;
use memdir::memory::layout::MAX_MEMORY_FILE;
use memdir::report::Failure;
use memdir::{Class, Error};

/// How many resources one `resources/list` page holds.
pub const RESOURCES_PAGE: usize = 200;

/// A protocol error for a resource request, carrying the CLI's message.
fn resource_error(e: Failure) -> McpError {
    let (text, _) = report(&e);
    match e {
        Failure::Core(Error::NotFound { .. }) => McpError::resource_not_found(text, None),
        _ if e.class() == Class::Input || e.class() == Class::Usage => {
            McpError::invalid_params(text, None)
        }
        _ => McpError::internal_error(text, None),
    }
}

impl MemoryServer {
    /// Runs `f` on the blocking pool for a resource request.
    pub(super) async fn blocking<T, F>(&self, f: F) -> Result<T, McpError>
    where
        T: Send + 'static,
        F: FnOnce(&Shared) -> Result<T, Error> + Send + 'static,
    {
        let shared = self.shared.clone();
        match tokio::task::spawn_blocking(move || f(&shared)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(resource_error(e.into())),
            Err(e) => Err(McpError::internal_error(
                format!("internal error in memdir: {e}"),
                None,
            )),
        }
    }
}

/// The resources of the store: the index first, then every memory by key.
pub(super) fn resources(s: &Shared) -> Result<Vec<Resource>, Error> {
    let snap = s.mem.load()?;
    let mut out = vec![
        Resource::new(uri::INDEX, "MEMORY.md")
            .with_title("Memory index")
            .with_description("MEMORY.md: every memory by type, one line each")
            .with_mime_type("text/markdown"),
    ];
    let mut records = snap.records;
    records.sort_by(|a, b| a.key.cmp(&b.key));
    for r in records {
        let key = r.key.as_str();
        let mut res = Resource::new(uri::for_key(key), key)
            .with_title(r.meta.name.clone())
            .with_description(r.meta.description.clone())
            .with_mime_type("text/markdown");
        if let Some(t) = snap.texts.get(key) {
            res = res.with_size(t.len() as u64);
        }
        out.push(res);
    }
    Ok(out)
}

/// The text behind a resource URI: the index as it is on disk after a rebuild if
/// stale, or a memory's file byte for byte.
pub(super) fn resource_text(s: &Shared, target: &Target) -> Result<String, Error> {
    match target {
        Target::Index => {
            s.mem.index()?;
            // memdir's is generated, so bounded by the memories themselves: no
            // file-size limit (spec/index-format.md#rebuild). The agent's is any file
            // the agent wrote: read within a memory file's limit.
            let limit = match s.mem.index_owner()? {
                IndexOwner::Agent => MAX_MEMORY_FILE,
                IndexOwner::Memdir => u64::MAX,
            };
            Ok(s.mem.index_text(limit)?.unwrap_or_default())
        }
        Target::Memory(key) => {
            let r = s.mem.read_via(key, memdir::Via::Resource)?;
            s.mem.file_text(&r.key)?.ok_or_else(|| Error::NotFound {
                key: r.key.to_string(),
            })
        }
    }
}

pub(super) fn unknown_uri(uri: &str) -> McpError {
    McpError::resource_not_found(
        memdir::report::lines(
            &format!("no resource {uri}"),
            Some("the resources are memory://index and memory://<key>"),
        ),
        None,
    )
}
