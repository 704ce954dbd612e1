//! Issue 31 item 13: a sync conflict is open on both devices until someone resolves
//! it (spec/sync.md#conflict-copies). The copy of the losing version is a file that
//! syncs (`conflicts/`), so the device whose edit lost learns of it on its next pull;
//! `status`, the sync output and MCP `sync_status` list it on both sides; deleting
//! the copy on either device resolves it on both.

use std::io::Write;
use std::process::Stdio;

use serde_json::Value;

use super::{Device, memory_text};
use crate::common::{stdout, tree};

/// Two devices in mode `ipfs` on one folder remote, holding `x`.
fn devices(root: &std::path::Path) -> (Device, Device) {
    let remote = root.join("remote");
    let a = Device::new(root, "a", &remote);
    let b = Device::new(root, "b", &remote);
    for d in [&a, &b] {
        d.ok(&["init", "--mode", "ipfs", "--provider", "folder"]);
    }
    a.edit("x", Some("base"));
    a.ok(&["sync"]);
    b.ok(&["sync"]);
    (a, b)
}

/// The open conflicts `status --json` lists, as (path, copy).
fn status_conflicts(d: &Device) -> Vec<(String, String)> {
    let st = d.json(&["status"]);
    st["conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap().to_string(),
                c["copy"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// What MCP `sync_status` says, as (its text, its structured content).
fn mcp_sync_status(d: &Device) -> (String, Value) {
    let mut child = d
        .cmd()
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sync_status","arguments":{}}}"#,
    ];
    let mut stdin = child.stdin.take().unwrap();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let reply: Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["id"] == 2)
        .unwrap_or_else(|| panic!("no reply to sync_status: {text}"));
    let r = &reply["result"];
    (
        r["content"][0]["text"].as_str().unwrap_or("").to_string(),
        r["structuredContent"].clone(),
    )
}

/// Every version of `x` either device holds: the file and the conflict copies.
fn versions(d: &Device) -> Vec<String> {
    tree(&d.dir)
        .into_iter()
        .filter(|(p, _)| p == "x.md" || p.starts_with("conflicts/"))
        .map(|(_, b)| String::from_utf8(b).unwrap())
        .collect()
}

#[test]
fn a_conflict_is_open_on_both_devices_until_resolved() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = devices(tmp.path());
    let mut lost = Vec::new();
    for round in 0..4 {
        let (mine, theirs) = (format!("A edit {round}"), format!("B edit {round}"));
        a.edit("x", Some(&mine));
        a.ok(&["sync"]);
        b.edit("x", Some(&theirs));
        // B syncs second: it keeps its edit and saves A's as the conflict copy, and
        // says the conflict is open.
        let out = b.ok(&["sync"]);
        assert!(stdout(&out).contains("open conflict"), "{}", stdout(&out));
        // A's next sync takes B's version, and says A's edit is in an open conflict.
        let out = a.ok(&["sync"]);
        let text = stdout(&out);
        assert!(text.contains("open conflict"), "round {round}: {text}");
        let json = a.json(&["sync"]);
        assert_eq!(
            json["open_conflicts"].as_array().map(Vec::len),
            Some(1),
            "{json}"
        );
        for d in [&a, &b] {
            let open = status_conflicts(d);
            assert_eq!(
                open.len(),
                1,
                "round {round}, {}: {open:?}",
                d.dir.display()
            );
            assert_eq!(open[0].0, "x.md");
            let (text, doc) = mcp_sync_status(d);
            assert!(text.contains("x.md"), "{text}");
            assert_eq!(doc["conflicts"].as_array().map(Vec::len), Some(1), "{doc}");
            // No edit lost: both versions are on both devices.
            let held = versions(d);
            for edit in [&mine, &theirs] {
                if !held.contains(&memory_text("x", edit)) {
                    lost.push(format!("round {round}: {edit} on {}", d.dir.display()));
                }
            }
        }
        // Resolved on one device (alternately): keep B's text, delete the copy. The
        // deletion syncs, and neither device reports the conflict any more.
        let (fixer, other) = if round % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let copy = status_conflicts(fixer)[0].1.clone();
        std::fs::remove_file(fixer.dir.join(&copy)).unwrap();
        fixer.ok(&["sync"]);
        let out = other.ok(&["sync"]);
        assert!(!stdout(&out).contains("open conflict"), "{}", stdout(&out));
        for d in [&a, &b] {
            assert_eq!(status_conflicts(d), [], "round {round}");
            assert_eq!(d.memories(), [("x".to_string(), theirs.clone())]);
        }
    }
    assert!(lost.is_empty(), "edits lost: {lost:?}");
}

// A conflict copy that cannot be saved (a file named `conflicts` where the folder
// goes) refuses the whole pull before anything is written: the other changes of that
// version are not applied either, and the edit stays.
#[test]
fn a_copy_that_cannot_be_saved_refuses_the_pull_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = devices(tmp.path());
    a.edit("a", Some("new on A"));
    a.edit("x", Some("A's edit"));
    a.ok(&["sync"]);
    b.edit("x", Some("B's edit"));
    std::fs::write(b.dir.join("conflicts"), "a note of B's\n").unwrap();
    let before = tree(&b.dir);
    let o = b.run(&["sync"]);
    assert_eq!(super::code(&o), Some(4), "{}", crate::common::stderr(&o));
    assert!(
        crate::common::stderr(&o).contains("conflicts is a file here"),
        "{}",
        crate::common::stderr(&o)
    );
    assert_eq!(tree(&b.dir), before, "a refused pull changed the directory");
}
