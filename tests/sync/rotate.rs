//! Key rotation in encrypted-ipfs mode (issue 31 item 14, spec/sync.md#key-rotation):
//! a push with another key re-seals the same version to it, a device holding the new
//! key opens it, one holding only the old key cannot, and a second push is a no-op.

use super::{Device, code, keygen};
use crate::common::{stderr, tree};

#[test]
fn rotating_the_key_reseals_and_pushes() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = tmp.path().join("remote");
    let mut a = Device::new(tmp.path(), "a", &remote);
    keygen(&mut a, "key-a");
    a.ok(&["init", "--mode", "encrypted-ipfs", "--provider", "folder"]);
    a.edit("user_hobby", Some("Collects antique typewriters"));
    a.ok(&["note", "--offline", "met", "who=Zoltan"]);
    let first = a.json(&["push"]);
    let root_a = first["root"].as_str().unwrap().to_string();

    // A device that holds only key A, synced to the version sealed with it.
    let mut old = Device::new(tmp.path(), "old", &remote);
    old.key = a.key.clone();
    old.ok(&["init", "--mode", "encrypted-ipfs", "--provider", "folder"]);
    old.ok(&["sync"]);
    assert_eq!(old.memories(), a.memories());

    // Rotate: a new key, the config pointed at it (key_file, no MEMDIR_KEY_FILE), push.
    let key_b = keygen(&mut a, "key-b");
    a.key = None;
    let config = a.dir.join(".memdir/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!("key_file = {:?}\n", key_b.to_str().unwrap()));
    std::fs::write(&config, text).unwrap();
    let second = a.json(&["push"]);
    assert_eq!(second["up_to_date"], false, "{second}");
    let root_b = second["root"].as_str().unwrap().to_string();
    assert_ne!(root_b, root_a, "the same sealed blob was kept");
    assert_eq!(second["plain_root"], first["plain_root"]);
    assert_eq!(second["head_updated"], true, "{second}");

    // A device holding key B syncs the head and opens it: nothing lost.
    let mut b = Device::new(tmp.path(), "b", &remote);
    b.key = Some(key_b.clone());
    b.ok(&["init", "--mode", "encrypted-ipfs", "--provider", "folder"]);
    b.ok(&["sync"]);
    assert_eq!(tree(&b.dir), tree(&a.dir));
    assert!(!b.memories().is_empty());

    // The device with only key A cannot open the new version, says why, changes nothing.
    let before = old.snapshot();
    let o = old.run(&["sync"]);
    assert_eq!(code(&o), Some(4), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("does not open with this key"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("another key"), "{}", stderr(&o));
    assert_eq!(old.snapshot(), before);
    // Given key B, the same device pulls it.
    old.key = Some(key_b);
    old.ok(&["sync"]);
    assert_eq!(tree(&old.dir), tree(&a.dir));

    // Pushing again with key B sends nothing.
    let third = a.json(&["push"]);
    assert_eq!(third["up_to_date"], true, "{third}");
    assert_eq!(third["root"], root_b.as_str());
    assert!(stderr(&a.ok(&["push"])).contains("already holds this version"));
}

// A state file written before key fingerprints were recorded: the key that sealed the
// base is unknown, so the next push re-seals (once) instead of trusting it.
#[test]
fn a_state_without_key_fingerprints_reseals_once() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = tmp.path().join("remote");
    let mut a = Device::new(tmp.path(), "a", &remote);
    keygen(&mut a, "key");
    a.ok(&["init", "--mode", "encrypted-ipfs", "--provider", "folder"]);
    a.edit("user_hobby", Some("Collects antique typewriters"));
    let first = a.json(&["push"]);
    let path = a.dir.join(".memdir/sync/state.json");
    let mut state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(state["base"]["key_fingerprint"].is_string(), "{state}");
    state["base"]
        .as_object_mut()
        .unwrap()
        .remove("key_fingerprint");
    for p in state["pushes"]["folder"].as_array_mut().unwrap() {
        p.as_object_mut().unwrap().remove("key_fingerprint");
    }
    std::fs::write(&path, serde_json::to_string_pretty(&state).unwrap()).unwrap();
    let second = a.json(&["push"]);
    assert_eq!(second["up_to_date"], false, "{second}");
    assert_ne!(second["root"], first["root"]);
    assert_eq!(a.json(&["push"])["up_to_date"], true);
}
