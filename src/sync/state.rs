//! The sync state under `.memdir/sync/`: the last synced base and the roots pushed
//! to each provider, written atomically.

// Errors carry CIDs by value; see the note in `crate::ipfs::car`.
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use cid::Cid;
use serde::{Deserialize, Serialize};

use crate::engine::Locked;
use crate::memory::layout::{MAX_SYNC_STATE, SYNC_DIR, SYNC_STATE_FILE};
use crate::store::Backend;
use crate::sync::config::Mode;
use crate::sync::error::Result;
use crate::sync::error::SyncError;

const STATE_VERSION: u32 = 1;

/// The last synced version: what the three-way merge compares against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Base {
    /// Root of the plaintext directory DAG.
    #[serde(with = "cid_text")]
    pub root: Cid,
    /// Root the provider holds: equal to `root` in `ipfs` mode, the sealed blob's root
    /// in `encrypted-ipfs` mode.
    #[serde(with = "cid_text")]
    pub network_root: Cid,
    /// The sync mode of that version.
    pub mode: Mode,
    /// The provider it was synced with.
    pub provider: String,
    /// `push` or `pull`.
    pub via: String,
    /// When it was synced.
    pub at: DateTime<Utc>,
    /// `encrypted-ipfs`: the fingerprint ([`crate::sync::seal::Key::fingerprint`],
    /// never the key) of the key `network_root` is sealed to. `None` in `ipfs` mode and
    /// in a state written before it was recorded: an unknown key, so the next push
    /// re-seals (spec/sync.md#key-rotation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_fingerprint: Option<String>,
}

/// One push a provider accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pushed {
    /// Root the provider holds (pinned).
    #[serde(with = "cid_text")]
    pub root: Cid,
    /// The plaintext root it carries.
    #[serde(with = "cid_text")]
    pub plain_root: Cid,
    /// The provider's handle for the pin.
    pub provider_id: String,
    /// Bytes sent.
    pub car_bytes: u64,
    /// Whether only new blocks were sent.
    pub delta: bool,
    /// When the provider accepted it.
    pub at: DateTime<Utc>,
    /// `encrypted-ipfs`: the fingerprint of the key it was sealed to (as in
    /// [`Base::key_fingerprint`]); `None` in `ipfs` mode or when written before it
    /// was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_fingerprint: Option<String>,
}

/// `.memdir/sync/state.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// The state file's format version.
    pub version: u32,
    /// The last synced version; `None` when the directory never synced.
    #[serde(default)]
    pub base: Option<Base>,
    /// Per provider, oldest first: the pins memdir made and has not removed.
    #[serde(default)]
    pub pushes: BTreeMap<String, Vec<Pushed>>,
    /// Network roots of the versions this directory's content includes, newest first:
    /// the base, the versions before it and those merged into it (at most
    /// [`HISTORY_MAX`]; spec/sync.md#lineage). A head among them is behind.
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "cids_text")]
    pub history: Vec<Cid>,
}

/// A CID in the state file is its text (`bafy…`, `Qm…`), as memdir has always
/// written it; text that is not a CID is refused when the file is read.
mod cid_text {
    use cid::Cid;
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(cid: &Cid, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(cid)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Cid, D::Error> {
        let text = String::deserialize(d)?;
        parse(&text).map_err(D::Error::custom)
    }

    pub(super) fn parse(text: &str) -> Result<Cid, String> {
        Cid::try_from(text).map_err(|e| format!("`{text}` is not a CID: {e}"))
    }
}

/// A list of CIDs in the state file: an array of their texts.
mod cids_text {
    use cid::Cid;
    use serde::ser::SerializeSeq;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(cids: &[Cid], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(cids.len()))?;
        for cid in cids {
            seq.serialize_element(&cid.to_string())?;
        }
        seq.end()
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Cid>, D::Error> {
        // Each element parsed as it is read, so an error points at its line.
        struct Text(Cid);
        impl<'de> Deserialize<'de> for Text {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
                super::cid_text::deserialize(d).map(Text)
            }
        }
        Ok(Vec::<Text>::deserialize(d)?
            .into_iter()
            .map(|t| t.0)
            .collect())
    }
}

/// Roots kept in [`State::history`].
pub const HISTORY_MAX: usize = 1024;

pub(super) fn base_car_name(root: &Cid) -> String {
    format!("{SYNC_DIR}/base-{root}.car")
}

impl State {
    /// [`State::history`] with the base first (a state written before the history
    /// existed has only its base).
    pub fn lineage(&self) -> Vec<Cid> {
        let mut out = Vec::new();
        if let Some(b) = &self.base {
            out.push(b.network_root);
        }
        for r in &self.history {
            if !out.contains(r) {
                out.push(*r);
            }
        }
        out
    }

    /// Whether this directory has passed `root`: the base or a version before it.
    pub fn has_seen(&self, root: &Cid) -> bool {
        self.base.as_ref().is_some_and(|b| b.network_root == *root) || self.history.contains(root)
    }

    /// Puts `roots` (newest first) in front of the history, without duplicates.
    pub(super) fn remember(&mut self, roots: impl IntoIterator<Item = Cid>) {
        let mut out: Vec<Cid> = Vec::new();
        for r in roots.into_iter().chain(self.lineage()) {
            if !out.contains(&r) {
                out.push(r);
            }
        }
        out.truncate(HISTORY_MAX);
        self.history = out;
    }

    /// Reads the state; a missing file is a directory that never synced.
    pub(crate) fn load(backend: &Backend) -> Result<State> {
        let Some(bytes) = backend.read(SYNC_STATE_FILE, MAX_SYNC_STATE)? else {
            return Ok(State {
                version: STATE_VERSION,
                ..State::default()
            });
        };
        let path = backend.display_path(SYNC_STATE_FILE).display().to_string();
        let state: State = serde_json::from_slice(&bytes).map_err(|e| SyncError::State {
            path: path.clone(),
            message: format!("line {} column {}: {e}", e.line(), e.column()),
        })?;
        if state.version != STATE_VERSION {
            return Err(SyncError::State {
                path,
                message: format!(
                    "version {} is not {STATE_VERSION} (written by another memdir)",
                    state.version
                ),
            });
        }
        Ok(state)
    }

    pub(super) fn save(&self, files: &Locked<'_>) -> Result<()> {
        let mut text = serde_json::to_string_pretty(self).expect("state serializes");
        text.push('\n');
        Ok(files.write_atomic(SYNC_STATE_FILE, text.as_bytes())?)
    }

    /// Records `base` with its plaintext CAR: the CAR first under a name of its own,
    /// then the state that points at it, then the old CAR is removed. Whatever the
    /// moment of a crash, the state names a CAR that is complete.
    pub(super) fn record_base(
        &mut self,
        files: &Locked<'_>,
        base: Base,
        plain_root: &Cid,
        plain_car: &[u8],
    ) -> Result<()> {
        let old = self.base.as_ref().map(|b| b.root);
        files.write_atomic(&base_car_name(plain_root), plain_car)?;
        self.base = Some(base);
        self.save(files)?;
        if let Some(old) = old.filter(|o| o != plain_root) {
            let _ = files.remove(&base_car_name(&old));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Memory;
    use crate::error::Class;

    fn cid(n: u8) -> Cid {
        crate::ipfs::unixfs::block_cid(crate::ipfs::unixfs::CODEC_RAW, &[n])
    }

    // The CIDs are typed in memory and text on disk: a state file as memdir has
    // always written it (CIDv1 base32, a CIDv0 `Qm…` among the history) reads into
    // `Cid`s and writes back byte for byte.
    #[test]
    fn state_cids_read_from_and_write_as_text() {
        let (r, n, old) = (cid(1), cid(2), cid(3));
        let v0 = Cid::try_from("QmdfTbBqBPQ7VNxZEYEj14VmRuZBkqFbiwReogJgS1zR1n").unwrap();
        let text = format!(
            r#"{{
  "version": 1,
  "base": {{
    "root": "{r}",
    "network_root": "{n}",
    "mode": "ipfs",
    "provider": "folder",
    "via": "push",
    "at": "2026-04-01T00:00:00Z"
  }},
  "pushes": {{
    "folder": [
      {{
        "root": "{n}",
        "plain_root": "{r}",
        "provider_id": "",
        "car_bytes": 1,
        "delta": false,
        "at": "2026-04-01T00:00:00Z"
      }}
    ]
  }},
  "history": [
    "{old}",
    "{v0}"
  ]
}}
"#
        );
        let mem = Memory::in_memory();
        mem.backend()
            .write_atomic(SYNC_STATE_FILE, text.as_bytes())
            .unwrap();
        let s = State::load(mem.backend()).unwrap();
        let base = s.base.as_ref().unwrap();
        assert_eq!((base.root, base.network_root), (r, n));
        assert_eq!(
            (s.pushes["folder"][0].root, s.pushes["folder"][0].plain_root),
            (n, r)
        );
        assert_eq!(s.history, [old, v0]);
        assert_eq!(s.lineage(), [n, old, v0]);
        assert!(s.has_seen(&v0) && !s.has_seen(&r));
        // Saved as `save` writes it: the same text.
        mem.with_lock(|files| s.save(files)).unwrap();
        let again = mem.backend().read(SYNC_STATE_FILE, u64::MAX).unwrap();
        assert_eq!(String::from_utf8(again.unwrap()).unwrap(), text);
    }

    // A state file whose CID is not one is refused when it is read, naming the file,
    // the line and the value (it used to load and fail, or be skipped, later).
    #[test]
    fn a_state_cid_that_is_not_a_cid_is_refused() {
        let mem = Memory::in_memory();
        let n = cid(2);
        let bad = format!("{{\n  \"version\": 1,\n  \"history\": [\"{n}\", \"nope\"]\n}}\n");
        mem.backend()
            .write_atomic(SYNC_STATE_FILE, bad.as_bytes())
            .unwrap();
        let e = State::load(mem.backend()).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("state.json"), "{text}");
        assert!(text.contains("line 3"), "{text}");
        assert!(text.contains("`nope` is not a CID"), "{text}");
        assert_eq!(e.class(), Class::Input);
        let base = format!(
            r#"{{"version": 1, "base": {{"root": "r", "network_root": "{n}", "mode": "ipfs", "provider": "folder", "via": "push", "at": "2026-04-01T00:00:00Z"}}}}"#
        );
        mem.backend()
            .write_atomic(SYNC_STATE_FILE, base.as_bytes())
            .unwrap();
        let e = State::load(mem.backend()).unwrap_err();
        assert!(e.to_string().contains("`r` is not a CID"), "{e}");
    }

    #[test]
    fn state_round_trip_and_version_check() {
        let mem = Memory::in_memory();
        let s = State::load(mem.backend()).unwrap();
        assert_eq!(s.version, STATE_VERSION);
        assert!(s.base.is_none());
        mem.backend()
            .write_atomic(SYNC_STATE_FILE, br#"{"version": 9}"#)
            .unwrap();
        let e = State::load(mem.backend()).unwrap_err();
        assert!(e.to_string().contains("version 9"), "{e}");
        mem.backend()
            .write_atomic(SYNC_STATE_FILE, b"{\n  nope")
            .unwrap();
        let e = State::load(mem.backend()).unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        assert_eq!(e.class(), Class::Input);
    }

    // A state written before key fingerprints were recorded still reads (an unknown
    // key: the next push re-seals), and one without a fingerprint writes none.
    #[test]
    fn state_without_key_fingerprints_reads() {
        let mem = Memory::in_memory();
        let (r, n) = (cid(1), cid(2));
        let old = format!(
            r#"{{
  "version": 1,
  "base": {{"root": "{r}", "network_root": "{n}", "mode": "encrypted-ipfs",
           "provider": "folder", "via": "push", "at": "2026-04-01T00:00:00Z"}},
  "pushes": {{"folder": [{{"root": "{n}", "plain_root": "{r}", "provider_id": "",
                         "car_bytes": 1, "delta": false, "at": "2026-04-01T00:00:00Z"}}]}}
}}"#
        );
        mem.backend()
            .write_atomic(SYNC_STATE_FILE, old.as_bytes())
            .unwrap();
        let s = State::load(mem.backend()).unwrap();
        let base = s.base.as_ref().unwrap();
        assert_eq!(base.key_fingerprint, None);
        assert_eq!(s.pushes["folder"][0].key_fingerprint, None);
        assert!(
            !serde_json::to_string(&s)
                .unwrap()
                .contains("key_fingerprint")
        );
        let mut with = s.clone();
        with.base.as_mut().unwrap().key_fingerprint = Some("x25519-sha256:00".into());
        let text = serde_json::to_string(&with).unwrap();
        assert!(
            text.contains(r#""key_fingerprint":"x25519-sha256:00""#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<State>(&text).unwrap(), with);
    }
}
