//! Status: what is synced and what is not, offline.

// Errors carry CIDs by value; see the note in `crate::ipfs::car`.
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;

use serde::Serialize;

use crate::engine::Memory;
use crate::sync::error::Result;
use crate::sync::listing::{Change, base_listing, build, changes, listing};
use crate::sync::remote::ConflictCopy;
use crate::sync::state::{Base, Pushed, State};

/// What `status` shows; computed offline.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// The root the directory has now.
    pub local_root: String,
    /// The last synced version, if any.
    pub base: Option<Base>,
    /// Changes since the base (everything, when never synced).
    pub unpushed: Vec<Change>,
    /// Losing versions kept by merges.
    pub conflicts: Vec<ConflictCopy>,
    /// Pins per provider, oldest first.
    pub pushes: BTreeMap<String, Vec<Pushed>>,
    /// What did not stop the status but should be known.
    pub warnings: Vec<String>,
}

/// The sync status of the directory, without the network.
pub fn status(mem: &Memory) -> Result<Status> {
    let backend = mem.backend();
    let state = State::load(backend)?;
    let tree = backend.tree()?;
    let local_root = build(&tree, mem)?.root;
    let mut warnings = Vec::new();
    let unpushed = if state.base.as_ref().is_some_and(|b| b.root == local_root) {
        Vec::new()
    } else {
        changes(&base_listing(mem, &state, &mut warnings).1, &listing(&tree))
    };
    Ok(Status {
        local_root: local_root.to_string(),
        base: state.base,
        unpushed,
        conflicts: mem
            .conflicts()?
            .into_iter()
            .map(|(path, copy)| ConflictCopy { path, copy })
            .collect(),
        pushes: state.pushes,
        warnings,
    })
}
