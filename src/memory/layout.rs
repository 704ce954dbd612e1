//! The memory directory's layout: every name memdir gives a file or folder, and every
//! size limit it reads under, in one place (spec/architecture.md#layout).
//!
//! Paths are relative to the memory directory and `/`-separated. Everything memdir
//! keeps for itself lives under the dot folder [`STATE_DIR`], so it is never a memory,
//! never indexed and never synced. Pure: names and numbers only, no IO.

use sha2::{Digest, Sha256};

/// The generated index: never merged, always rebuilt.
pub const INDEX_FILE: &str = "MEMORY.md";
/// How much of an agent's MEMORY.md Claude Code loads at each session start: the first
/// 200 lines or 25 KB, whichever comes first (spec/index-format.md#agent-index).
pub const AGENT_INDEX_LINES: usize = 200;
/// See [`AGENT_INDEX_LINES`].
pub const AGENT_INDEX_BYTES: usize = 25_000;
/// The timeline folder: one JSONL file per UTC day.
pub const TIMELINE_DIR: &str = "timeline";
/// Local state: configuration, lock, sync state, caches, backups, conflict copies.
pub const STATE_DIR: &str = ".memdir";
/// The cross-process lock every mutation holds.
pub const LOCK_FILE: &str = ".memdir/lock";
/// The SHA-256 of the MEMORY.md memdir wrote last (and of the one before it), which
/// tells a hand edit from ours.
pub const INDEX_HASH_FILE: &str = ".memdir/index.sha256";
/// The order of the memories in the `memory/0.1` blobs imported so far (one key a
/// line): the three.ws runtime's file order, which `export` gives back.
pub const BLOB_ORDER_FILE: &str = ".memdir/blob-order";
/// Where a hand-edited MEMORY.md is saved before it is replaced.
pub const BACKUPS_DIR: &str = ".memdir/backups";
/// Derived data, deletable at any time.
pub const CACHE_DIR: &str = ".memdir/cache";
/// The search index: every memory file's stat, content hash, text, parsed
/// frontmatter and term data (spec/architecture.md#search-index).
pub const SEARCH_INDEX_FILE: &str = ".memdir/cache/index-v2.bin";
/// What changed since [`SEARCH_INDEX_FILE`] was written, until it is folded in.
pub const SEARCH_DELTA_FILE: &str = ".memdir/cache/index-v2.delta.bin";
/// The postings of the memories of [`SEARCH_INDEX_FILE`] (its generation's), read in
/// place by a one-shot query (spec/architecture.md#search-index).
pub const SEARCH_POSTINGS_FILE: &str = ".memdir/cache/postings-v1.bin";
/// What MEMORY.md was last found to hold: the contents of the store it was rendered
/// from (a digest of every memory's key and content hash) and its stat then, so that
/// a one-shot `context` need not render it again (spec/index-format.md#rebuild).
pub const INDEX_CHECK_FILE: &str = ".memdir/cache/index-check";
/// The largest index check read (it is one short line of text).
pub const MAX_INDEX_CHECK: u64 = 4096;
/// The parse cache of memdir before the search index; removed when the index is written.
pub const LEGACY_PARSE_CACHE: &str = ".memdir/cache/frontmatter-v1.bin";
/// The largest search index file read (a corrupt or hostile one is ignored past this).
pub const MAX_SEARCH_INDEX: u64 = 2 * 1024 * 1024 * 1024;
/// The device-local access log: one `{ts, key, via}` line per read
/// (spec/cli.md#access-log); never synced.
pub const ACCESS_LOG_FILE: &str = ".memdir/cache/access.jsonl";
/// The access log's previous part, kept after a rotation.
pub const ACCESS_LOG_OLD_FILE: &str = ".memdir/cache/access.1.jsonl";
/// The sync configuration.
pub const CONFIG_FILE: &str = ".memdir/config.toml";
/// The sync folder: the state and the base CAR of the last synced version.
pub const SYNC_DIR: &str = ".memdir/sync";
/// The sync state.
pub const SYNC_STATE_FILE: &str = ".memdir/sync/state.json";
/// Where conflict copies are saved: a folder of the memory directory, so that a
/// copy syncs like any file and both devices see the conflict open until one of
/// them deletes it (spec/sync.md#conflict-copies). Not top-level, so a copy is never
/// a memory and never indexed.
pub const CONFLICTS_DIR: &str = "conflicts";
/// Where memdir saved conflict copies before they synced: local to one device, still
/// listed (and resolved the same way) when a directory has some.
pub const LEGACY_CONFLICTS_DIR: &str = ".memdir/conflicts";

/// Largest memory file memdir reads (4 MiB); larger files are reported and skipped.
pub const MAX_MEMORY_FILE: u64 = 4 * 1024 * 1024;
/// Longest timeline line memdir reads (64 MiB); a longer line is reported and
/// skipped without being held. Day files are streamed line by line, whatever their
/// size.
pub const MAX_TIMELINE_LINE: u64 = 64 * 1024 * 1024;
/// Largest body a write takes (1 MiB).
pub const MAX_BODY: usize = 1024 * 1024;
/// Largest prune plan (`prune --apply --plan-file`) read (16 MiB: the keys of a
/// store of a hundred thousand memories, with room to spare).
pub const MAX_PLAN_FILE: u64 = 16 * 1024 * 1024;
/// Largest token file `memdir mcp --token-file` reads (a token is one short line).
pub const MAX_TOKEN_FILE: u64 = 64 * 1024;
/// Largest three.ws agent manifest `memdir mcp` reads.
pub const MAX_MANIFEST: u64 = 4 * 1024 * 1024;
/// Largest timeline event memdir writes, as its encoded line (1 MiB): a note, or the
/// reason of a `forget` (spec/timeline-format.md#lines).
pub const MAX_EVENT: usize = 1024 * 1024;

/// How the name of every temporary file memdir writes starts (`.memdir-XXXX.tmp`):
/// a dot entry, so never loaded or synced (spec/architecture.md#atomic-writes).
pub const TEMP_PREFIX: &str = ".memdir-";
/// How the name of every temporary file memdir writes ends.
pub const TEMP_SUFFIX: &str = ".tmp";
/// How a key file's temporary name starts while it is written (`keygen`).
pub const KEY_TEMP_PREFIX: &str = ".memdir-key-";
/// The vector cache of one model and dimension count, under [`CACHE_DIR`]:
/// `vectors-<16 hex digits>.bin` (spec/architecture.md#vectors-optional).
pub fn vectors_file(model_hash_hex: &str) -> String {
    format!("{CACHE_DIR}/vectors-{model_hash_hex}.bin")
}
/// Largest vector cache read (8 GiB: 10,000,000 vectors of 200 dimensions).
pub const MAX_VECTOR_FILE: u64 = 8 * 1024 * 1024 * 1024;

/// How long a temp file in a folder that memdir writes without the lock
/// (`.memdir/`, `.memdir/cache/`) must sit untouched before `check --fix` calls it
/// left over (spec/architecture.md#atomic-writes).
pub const STALE_TEMP: std::time::Duration = std::time::Duration::from_secs(10 * 60);
/// Longest name a synced file or folder may have, in bytes (what filesystems hold).
pub const MAX_NAME_BYTES: usize = 255;
/// Largest configuration file read.
pub const MAX_CONFIG: u64 = 64 * 1024;
/// Largest sync state file read.
pub const MAX_SYNC_STATE: u64 = 16 << 20;

/// Whether `c` is a usable channel name (it becomes a path on the provider: a head pointer's file or MFS entry).
pub fn valid_channel(c: &str) -> bool {
    (1..=64).contains(&c.len())
        && c.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// The path a losing version is saved at: `conflicts/<path stem>.<12 hex of its
/// sha-256>.<extension>`, e.g. `conflicts/user_role.3f2a9c1b0d4e.md`. The
/// hash makes the name deterministic (planning twice names the same copy) and keeps
/// different losing versions of one path apart.
pub fn conflict_copy_path(path: &str, content: &[u8]) -> String {
    let digest = Sha256::digest(content);
    let short = data_encoding::HEXLOWER.encode(&digest[..6]);
    let (dir, name) = match path.rsplit_once('/') {
        Some((d, n)) => (format!("{d}/"), n),
        None => (String::new(), path),
    };
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => {
            format!("{CONFLICTS_DIR}/{dir}{stem}.{short}.{ext}")
        }
        _ => format!("{CONFLICTS_DIR}/{dir}{name}.{short}"),
    }
}

/// The path a conflict copy (relative to [`CONFLICTS_DIR`]) was saved from: the
/// 12-hex-digit hash [`conflict_copy_path`] adds is removed again.
pub fn conflict_original(copy: &str) -> String {
    let (dir, name) = match copy.rsplit_once('/') {
        Some((d, n)) => (format!("{d}/"), n),
        None => (String::new(), copy),
    };
    let is_hash = |h: &str| h.len() == 12 && h.bytes().all(|b| b.is_ascii_hexdigit());
    let parts: Vec<&str> = name.split('.').collect();
    let original = match parts.as_slice() {
        [stem @ .., hash, ext] if !stem.is_empty() && is_hash(hash) => {
            format!("{}.{ext}", stem.join("."))
        }
        [stem @ .., hash] if !stem.is_empty() && is_hash(hash) => stem.join("."),
        _ => name.to_string(),
    };
    format!("{dir}{original}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflict_copy_names_round_trip() {
        for path in [
            "user_role.md",
            "timeline/2026-01-01.jsonl",
            "notes/a.b.txt",
            "README",
        ] {
            let copy = conflict_copy_path(path, b"content");
            let rel = copy.strip_prefix(&format!("{CONFLICTS_DIR}/")).unwrap();
            assert_eq!(conflict_original(rel), path, "{copy}");
        }
        assert_eq!(conflict_original("hand_made.md"), "hand_made.md");
    }
}
