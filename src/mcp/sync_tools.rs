//! The `sync` and `sync_status` tools: one sync round (pull, merge, push) on demand,
//! and what is synced, unpushed and pending (spec/mcp.md#sync).
//!
//! `sync` runs `memdir sync` (the library's [`memdir::sync::sync`]) on the blocking
//! pool while holding the publisher's network slot; its result is what the command
//! prints, with `--json` as structured content, and its errors are the CLI's (same
//! message, hint and exit class). Both refuse with "sync is not configured" when the
//! server serves an in-memory store (mode `none`) or the mode is `local`. These tools
//! must not print to stdout or decide merges.

// Built without the `sync` feature, the server lists no sync tool and never
// pushes: the parts of this module only sync uses are then unused.
#![cfg_attr(not(feature = "sync"), allow(dead_code, unused_imports))]

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::core::{MemoryServer, Shared};
use memdir::Class;

/// Arguments of `sync`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct SyncArgs {
    /// On a conflict: merge keeps this device's version (default), replace the remote's.
    #[serde(default)]
    #[schemars(extend("enum" = ["merge", "replace"]))]
    pub strategy: Option<String>,
    /// Pull this CID instead of the provider's head.
    #[serde(default)]
    pub cid: Option<String>,
}

/// Why the sync tools cannot run at all.
fn not_configured(why: &str, hint: &str) -> CallToolResult {
    let message = format!("sync is not configured: {why}");
    let mut r = CallToolResult::error(vec![ContentBlock::text(memdir::report::lines(
        &message,
        Some(hint),
    ))]);
    r.structured_content = Some(json!({"error": {
        "message": message,
        "causes": [],
        "hint": hint,
        "exit_code": Class::Usage.exit_code(),
    }}));
    r
}

const NONE_WHY: &str =
    "this server serves an in-memory store (mode none); nothing is kept on disk or synced";
const NONE_HINT: &str = "serve a memory directory in mode ipfs or encrypted-ipfs (the manifest's memory.mode, or `memdir init --mode ipfs --provider NAME`)";
#[cfg(feature = "sync")]
const LOCAL_WHY: &str = "the memory directory is in mode local";
#[cfg(feature = "sync")]
const LOCAL_HINT: &str = "set a sync mode and provider: `memdir init --mode ipfs --provider NAME` (or encrypted-ipfs), or the manifest's memory.mode and memory.provider; providers: kubo, pinata, filebase, storacha, folder";

/// The tools `tools/list` shows only when the served directory syncs
/// (spec/mcp.md#sync); called anyway, they say sync is not configured.
pub const SYNC_ONLY: [&str; 2] = ["sync", "sync_status"];

/// Whether the served memory syncs: a directory whose mode (the manifest's, else
/// `.memdir/config.toml`'s) is ipfs or encrypted-ipfs. A configuration that cannot
/// be read counts as not syncing here; the sync tools report its error when called.
#[cfg(feature = "sync")]
pub fn configured(s: &Shared) -> bool {
    s.publisher
        .target()
        .is_some_and(|t| matches!(super::publish::mode(&s.mem, t), Ok(m) if m.syncs()))
}

/// Without the `sync` feature nothing syncs.
#[cfg(not(feature = "sync"))]
pub fn configured(_: &Shared) -> bool {
    false
}

/// The router of these tools, to add to the server's.
pub fn router() -> rmcp::handler::server::router::tool::ToolRouter<MemoryServer> {
    MemoryServer::sync_tool_router()
}

#[tool_router(router = sync_tool_router, vis = "pub(super)")]
impl MemoryServer {
    #[tool(
        name = "sync",
        description = "Sync with the other devices now: pull the provider's latest version, merge it in (strategy merge or replace), push the result. Writes are also pushed automatically.",
        annotations(
            title = "Sync",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = true
        )
    )]
    async fn sync(&self, Parameters(a): Parameters<SyncArgs>) -> CallToolResult {
        let shared = self.shared().clone();
        match tokio::task::spawn_blocking(move || run_sync(&shared, a)).await {
            Ok(r) => r,
            Err(e) => CallToolResult::error(vec![ContentBlock::text(memdir::report::lines(
                &format!("internal error in memdir: {e}"),
                None,
            ))]),
        }
    }

    #[tool(
        name = "sync_status",
        description = "Sync status without the network: mode, provider, last synced version, unpushed changes, conflict copies and the automatic push.",
        annotations(title = "Sync status", read_only_hint = true, open_world_hint = false)
    )]
    async fn sync_status(&self) -> CallToolResult {
        let shared = self.shared().clone();
        match tokio::task::spawn_blocking(move || run_status(&shared)).await {
            Ok(r) => r,
            Err(e) => CallToolResult::error(vec![ContentBlock::text(memdir::report::lines(
                &format!("internal error in memdir: {e}"),
                None,
            ))]),
        }
    }
}

#[cfg(not(feature = "sync"))]
fn run_sync(s: &Shared, _: SyncArgs) -> CallToolResult {
    unsupported(s)
}

#[cfg(not(feature = "sync"))]
fn run_status(s: &Shared) -> CallToolResult {
    unsupported(s)
}

#[cfg(not(feature = "sync"))]
fn unsupported(s: &Shared) -> CallToolResult {
    if !s.publisher.has_directory() {
        return not_configured(NONE_WHY, NONE_HINT);
    }
    not_configured(
        "this memdir was built without the `sync` feature",
        "build memdir with its default features",
    )
}

#[cfg(feature = "sync")]
fn failure(e: impl Into<memdir::report::Failure>) -> CallToolResult {
    super::core::tool_error(e.into())
}

#[cfg(feature = "sync")]
#[allow(clippy::result_large_err)]
fn run_sync(s: &Shared, a: SyncArgs) -> CallToolResult {
    let Some(target) = s.publisher.target().cloned() else {
        return not_configured(NONE_WHY, NONE_HINT);
    };
    match super::publish::mode(&s.mem, &target) {
        Ok(m) if m.syncs() => {}
        Ok(_) => return not_configured(LOCAL_WHY, LOCAL_HINT),
        Err(e) => return failure(e),
    }
    let (strategy, from) = match sync_arguments(&a) {
        Ok(v) => v,
        Err(e) => return failure(e),
    };
    let result = s.publisher.exclusive(
        || -> Result<memdir::sync::SyncReport, memdir::sync::SyncError> {
            s.mem.create()?;
            let opened = memdir::sync::open(&s.mem, &super::publish::choice(&target))?;
            memdir::sync::sync(
                &s.mem,
                &opened.remote(&memdir::provider::NoProgress),
                from.as_ref(),
                strategy,
            )
        },
        Result::is_ok,
    );
    let r = match result {
        Ok(r) => r,
        Err(e) => return failure(e),
    };
    // What the pull changed, the client hears of as of any other change.
    s.hub.refresh(&s.mem);
    super::core::tool_ok(sync_text(&r), sync_doc(&r))
}

/// The strategy and the root to pull from that `sync`'s arguments name; a bad value
/// is an error naming its argument.
#[cfg(feature = "sync")]
fn sync_arguments(
    a: &SyncArgs,
) -> Result<(memdir::exchange::merge::Strategy, Option<cid::Cid>), memdir::Error> {
    use memdir::exchange::merge::Strategy;

    let strategy = match a.strategy.as_deref() {
        None => Strategy::default(),
        Some(t) => match Strategy::parse(t) {
            Some(st) => st,
            None => {
                return Err(memdir::Error::Argument {
                    arg: "strategy".into(),
                    message: format!("`{t}` is not a strategy; expected merge or replace"),
                });
            }
        },
    };
    let from = match a.cid.as_deref().map(|c| c.trim().parse::<cid::Cid>()) {
        None => None,
        Some(Ok(c)) => Some(c),
        Some(Err(_)) => {
            return Err(memdir::Error::Argument {
                arg: "cid".into(),
                message: format!("`{}` is not a CID", a.cid.as_deref().unwrap_or_default()),
            });
        }
    };
    Ok((strategy, from))
}

/// The text content of a `sync` result: what was pulled, then what was pushed.
#[cfg(feature = "sync")]
fn sync_text(r: &memdir::sync::SyncReport) -> String {
    let mut text = Vec::new();
    match (&r.pulled, &r.behind) {
        (Some(p), _) => {
            text.push(format!(
                "pulled {} from {}: {} written, {} deleted, {} conflict(s)",
                p.root,
                p.provider,
                p.written,
                p.deleted,
                p.conflicts.len()
            ));
            for c in &p.conflicts {
                text.push(format!(
                    "  conflict: the other version of {} is saved as {}",
                    c.path, c.copy
                ));
            }
            for w in &p.warnings {
                text.push(format!("warning: {w}"));
            }
        }
        (None, Some(h)) => text.push(format!(
            "the remote is behind: its head {h} is a version this directory already passed; not applied, pushed over"
        )),
        (None, None) => text.push("nothing new on the provider".into()),
    }
    if r.rounds > 1 {
        text.push(format!(
            "another device pushed at the same time: merged and pushed again ({} rounds)",
            r.rounds
        ));
    }
    if r.pushed.up_to_date {
        text.push(format!(
            "up to date: {} is on {}",
            r.pushed.network_root, r.pushed.provider
        ));
    } else {
        text.push(format!(
            "pushed {} to {}",
            r.pushed.network_root, r.pushed.provider
        ));
    }
    for w in &r.pushed.warnings {
        text.push(format!("warning: {w}"));
    }
    open_lines(&r.open_conflicts, &mut text);
    text.join("\n")
}

/// The lines naming the open conflicts (none: nothing), in `sync` and `sync_status`
/// (spec/sync.md#conflict-copies).
#[cfg(feature = "sync")]
fn open_lines(open: &[memdir::sync::ConflictCopy], text: &mut Vec<String>) {
    if open.is_empty() {
        return;
    }
    text.push(format!(
        "{} open conflict(s): keep what you want in the file, then delete the copy (the deletion resolves it on every device)",
        open.len()
    ));
    for c in open {
        text.push(format!(
            "  {}: the other version is {}",
            memdir::memory::printable::escape_line(&c.path),
            memdir::memory::printable::escape_line(&c.copy)
        ));
    }
}

/// The structured content of a `sync` result.
#[cfg(feature = "sync")]
fn sync_doc(r: &memdir::sync::SyncReport) -> Value {
    let mut doc = json!({"pushed": r.pushed, "open_conflicts": r.open_conflicts});
    if let Some(p) = &r.pulled {
        doc["pulled"] = serde_json::to_value(p).unwrap_or_default();
    }
    if let Some(h) = &r.behind {
        doc["behind"] = json!(h);
    }
    if r.rounds > 1 {
        doc["rounds"] = json!(r.rounds);
    }
    doc
}

#[cfg(feature = "sync")]
fn run_status(s: &Shared) -> CallToolResult {
    use memdir::sync::config::Config;

    let Some(target) = s.publisher.target().cloned() else {
        return not_configured(NONE_WHY, NONE_HINT);
    };
    let config = match Config::load(&s.mem) {
        Ok(c) => c,
        Err(e) => return failure(e),
    };
    let mode = target.mode.unwrap_or(config.mode);
    let provider = target.provider.clone().or(config.provider.clone());
    let st = match memdir::sync::status(&s.mem) {
        Ok(st) => st,
        Err(e) => return failure(e),
    };
    let push = s.publisher.state(mode.syncs());
    let mut t = vec![format!(
        "mode: {mode}  provider: {}  channel: {}",
        provider.as_deref().unwrap_or("(none)"),
        config.channel()
    )];
    t.push(format!("local root: {}", st.local_root));
    match &st.base {
        None => t.push("last synced: never".into()),
        Some(b) => t.push(format!(
            "last synced: {} ({} {} {})",
            b.network_root,
            b.via,
            if b.via == "push" { "to" } else { "from" },
            b.provider
        )),
    }
    if st.unpushed.is_empty() {
        t.push("unpushed changes: none".into());
    } else {
        t.push(format!("unpushed changes: {}", st.unpushed.len()));
    }
    t.push(format!("conflicts: {}", st.conflicts.len()));
    open_lines(&st.conflicts, &mut t);
    if !push.enabled {
        t.push("automatic push: off (mode local)".into());
    } else {
        let mut line = format!(
            "automatic push: on, {} ms after the last write",
            push.delay_ms
        );
        if push.pending {
            line.push_str("; a push is pending");
        }
        if push.running {
            line.push_str("; pushing now");
        }
        t.push(line);
        match &push.last {
            None => {}
            Some(a) if a.ok => t.push(format!(
                "last push: {} to {} at {}",
                a.root.as_deref().unwrap_or("?"),
                a.provider.as_deref().unwrap_or("?"),
                a.at
            )),
            Some(a) => t.push(format!(
                "last push failed at {}: {}",
                a.at,
                a.error
                    .as_ref()
                    .and_then(|e| e["message"].as_str())
                    .unwrap_or("unknown error")
            )),
        }
    }
    let mut doc = json!({
        "mode": mode,
        "channel": config.channel(),
        "local_root": st.local_root,
        "unpushed": st.unpushed,
        "conflicts": st.conflicts,
        "auto_push": push,
    });
    if let Some(p) = provider {
        doc["provider"] = json!(p);
    }
    if let Some(b) = &st.base {
        doc["base"] = serde_json::to_value(b).unwrap_or_default();
    }
    super::core::tool_ok(t.join("\n"), doc)
}
