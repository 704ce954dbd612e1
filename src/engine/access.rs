//! The access log (spec/cli.md#access-log): which memory this device read, when and
//! through which path, in `.memdir/cache/access.jsonl`.
//!
//! Device-local and derived: never synced, never written into a memory file, deletable
//! at any time. Appends are lock-free single writes of short lines and every failure is
//! ignored, so a read never fails or waits because of the log. The log is bounded: past
//! [`MAX_LOG_BYTES`] it is rotated to `access.1.jsonl`, replacing the previous part.
//! Access does not change ranking.

use std::collections::HashMap;

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::json;

use crate::memory::layout::{ACCESS_LOG_FILE, ACCESS_LOG_OLD_FILE};
use crate::store::Backend;

/// Size past which the log is rotated (the two parts together stay under about twice it).
pub(crate) const MAX_LOG_BYTES: u64 = 1024 * 1024;

/// Longest line written; keys are at most a few hundred bytes, so this holds, and it
/// stays under `PIPE_BUF` (4096 on Linux) so appends of whole lines never interleave.
const MAX_LINE: usize = 1024;

/// The read path that touched a memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// `memdir read`, the library's `read`.
    Read,
    /// A recall hit.
    Recall,
    /// Packed into a context block.
    Context,
    /// The MCP `read_memory` tool.
    McpRead,
    /// An MCP `memory://` resource.
    Resource,
}

impl Via {
    /// The name the access log records the read path as.
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Read => "read",
            Via::Recall => "recall",
            Via::Context => "context",
            Via::McpRead => "read_memory",
            Via::Resource => "resource",
        }
    }
}

/// Appends one line per key, in one write. Failures are ignored.
pub(crate) fn record<'a>(
    backend: &Backend,
    now: DateTime<Utc>,
    keys: impl Iterator<Item = &'a str>,
    via: Via,
) {
    let ts = now.to_rfc3339_opts(SecondsFormat::Millis, true);
    let mut data = Vec::new();
    for key in keys {
        let line = json!({"ts": ts, "key": key, "via": via.as_str()}).to_string();
        // A longer line could interleave with another process's append; it is skipped.
        if line.len() < MAX_LINE {
            // Lines go in one write only when the whole buffer stays short; else each
            // line is its own write.
            if data.len() + line.len() + 1 > MAX_LINE && !data.is_empty() {
                backend.append_log(ACCESS_LOG_FILE, ACCESS_LOG_OLD_FILE, &data, MAX_LOG_BYTES);
                data.clear();
            }
            data.extend_from_slice(line.as_bytes());
            data.push(b'\n');
        }
    }
    if !data.is_empty() {
        backend.append_log(ACCESS_LOG_FILE, ACCESS_LOG_OLD_FILE, &data, MAX_LOG_BYTES);
    }
}

/// The newest `ts` per key, from both parts of the log. Unreadable files and
/// malformed lines are skipped.
pub(crate) fn last_reads(backend: &Backend) -> HashMap<String, String> {
    let mut out: HashMap<String, String> = HashMap::new();
    for rel in [ACCESS_LOG_OLD_FILE, ACCESS_LOG_FILE] {
        let Ok(Some(bytes)) = backend.read(rel, 4 * MAX_LOG_BYTES) else {
            continue;
        };
        for line in bytes.split(|b| *b == b'\n') {
            let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) else {
                continue;
            };
            let (Some(key), Some(ts)) = (v["key"].as_str(), v["ts"].as_str()) else {
                continue;
            };
            // Timestamps are written in one format (UTC, milliseconds), so text order
            // is time order.
            match out.get_mut(key) {
                Some(t) if t.as_str() >= ts => {}
                Some(t) => *t = ts.to_string(),
                None => {
                    out.insert(key.to_string(), ts.to_string());
                }
            }
        }
    }
    out
}
