//! Helpers for the engine's unit tests: a fixed clock, a draft, a store in a temp
//! folder. Test-only; it must not be used by non-test code.

use crate::clock::Clock;
use crate::engine::{Draft, Memory};

/// The time the tests' stores are at.
pub(super) const NOW: &str = "2026-04-14T12:00:00Z";

/// A fixed clock at `t` (RFC 3339).
pub(super) fn at(t: &str) -> Clock {
    Clock::fixed(t.parse().expect("a test time"))
}

/// A draft of a `kind` memory `key` with `body`, named after its key.
pub(super) fn draft(key: &str, kind: &str, body: &str) -> Draft {
    Draft {
        key: key.into(),
        name: key.replace('_', " "),
        description: format!("about {key}"),
        kind: kind.into(),
        body: body.into(),
        ..Draft::default()
    }
}

/// A store in a fresh temp folder (`m/` inside it) at [`NOW`]; keep the folder
/// alive while the store is used.
pub(super) fn dir_store() -> (tempfile::TempDir, Memory) {
    let tmp = tempfile::tempdir().expect("a temp folder");
    let mem = Memory::open(tmp.path().join("m"))
        .expect("open")
        .with_clock(at(NOW));
    (tmp, mem)
}
