//! Compatibility with the three.ws runtime's `memory/0.1` blob, both ways.
//!
//! fixtures/threews/export.json is shaped exactly as the three.ws `Memory.export()`
//! writes it (spec/decisions.md lists the behaviour we reproduced: `# Memory` index,
//! files without a trailing newline, millisecond `ts`, raw unquoted values). The
//! reverse direction checks our export against the three.ws reader's documented
//! rules (its frontmatter regex and its line-based `key: value` split), reimplemented
//! here as a model of that reader. CI also runs the runtime itself both ways
//! (ci/threews/run.sh, issue 17).

use crate::common::*;

#[test]
fn a_threews_export_imports_into_memdir() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    assert!(run(memdir(&dir).arg("init")).status.success());
    let o = run(memdir(&dir)
        .arg("--json")
        .arg("import")
        .arg(fixture("threews/export.json")));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(report["added"], 4, "{report}");
    assert_eq!(report["skipped"], 1, "{report}");
    // Raw `key: value` lines that are not YAML are read the three.ws way and stored as YAML.
    assert_eq!(report["converted"][0]["item"], "ops_runbook.md", "{report}");
    assert_eq!(report["converted"].as_array().unwrap().len(), 1, "{report}");
    let reasons = report["skipped_items"].to_string();
    assert!(
        reasons.contains("crlf_file.md") && reasons.contains("`description` is missing"),
        "{reasons}"
    );
    let mem = memdir::Memory::open(&dir).unwrap();
    let r = mem.read("feedback_tone").unwrap();
    assert_eq!(r.meta.name, "Tone");
    assert_eq!(
        r.body,
        "User prefers direct critique over encouragement-first framing."
    );
    assert_eq!(mem.events().unwrap().events.len(), 3);
    let index = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
    assert!(index.starts_with("# Agent Memory\n"));
    let runbook = mem.read("ops_runbook").unwrap();
    assert_eq!(runbook.meta.name, "Runbook: deploys");
    assert_eq!(
        runbook.meta.description,
        "time: 10:30 UTC — unknown type, value with colons"
    );
    // What is on disk is valid YAML: `check` finds no error.
    let o = run(memdir(&dir).arg("check"));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
}

/// fixtures/threews/runtime-export.json was written by the three.ws runtime itself
/// (`src/memory/index.js` of nirholas/three.ws at 2071392c: `Memory.write`, `note` and
/// `export` run under Node 20); see spec/decisions.md.
#[test]
fn the_threews_runtime_export_imports_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    assert!(run(memdir(&dir).arg("init")).status.success());
    let o = run(memdir(&dir)
        .args(["--json", "import"])
        .arg(fixture("threews/runtime-export.json")));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let counts = (
        report["added"].as_u64(),
        report["skipped"].as_u64(),
        report["events_added"].as_u64(),
    );
    assert_eq!(counts, (Some(4), Some(0), Some(2)), "{report}");
    let mem = memdir::Memory::open(&dir).unwrap();
    let season = mem.read("project_season").unwrap();
    assert_eq!(season.meta.decay, Some(memdir::Decay::Days(90)));
    assert_eq!(season.body, "Tournament in June.\n\nTrains twice a week.");
    assert_eq!(
        mem.read("ops_runbook").unwrap().meta.name,
        "Runbook: deploys"
    );
    let o = run(memdir(&dir).arg("check"));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
}

/// The three.ws reader: `^---\n([\s\S]*?)\n---\n?([\s\S]*)$`, each frontmatter line
/// split at its first colon, values trimmed, quotes kept.
fn threews_parse(raw: &str) -> Option<(Vec<(String, String)>, String)> {
    let rest = raw.strip_prefix("---\n")?;
    let end = rest.find("\n---")?;
    let (fm, after) = (&rest[..end], &rest[end + 4..]);
    let body = after.strip_prefix('\n').unwrap_or(after).to_string();
    let meta = fm
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            if k.is_empty() {
                return None;
            }
            Some((k.trim().to_string(), v.trim().to_string()))
        })
        .collect();
    Some((meta, body))
}

#[test]
fn a_memdir_export_reads_in_threews() {
    let (_tmp, dir) = example_copy();
    let o = run(memdir(&dir).arg("export"));
    let blob: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(blob["version"], "memory/0.1");
    let files = blob["files"].as_object().unwrap();
    assert_eq!(files.len(), 5);
    for (name, raw) in files {
        let (meta, body) =
            threews_parse(raw.as_str().unwrap()).unwrap_or_else(|| panic!("{name} does not parse"));
        let get = |k: &str| meta.iter().find(|(mk, _)| mk == k).map(|(_, v)| v.clone());
        let ours = memdir::memory::frontmatter::parse_portable(raw.as_str().unwrap())
            .unwrap()
            .parsed;
        assert_eq!(get("name").unwrap(), ours.meta.name, "{name}");
        assert_eq!(get("description").unwrap(), ours.meta.description, "{name}");
        assert_eq!(get("type").unwrap(), ours.meta.kind.as_str(), "{name}");
        assert_eq!(body.trim(), ours.body, "{name}");
        // spec/cli.md#export: every key the runtime sees is a field, tags included as
        // one value (a YAML block list would give it one junk key per tag).
        let known = [
            "name",
            "description",
            "type",
            "created",
            "updated",
            "source",
            "decay",
            "tags",
            "important",
        ];
        assert!(
            meta.iter().all(|(k, _)| known.contains(&k.as_str())),
            "{name}: {meta:?}"
        );
        if !ours.meta.tags.is_empty() {
            assert!(get("tags").unwrap().starts_with('['), "{name}: {meta:?}");
        }
    }
    for e in blob["timeline"].as_array().unwrap() {
        let o = e.as_object().unwrap();
        let keys: Vec<&String> = o.keys().collect();
        assert_eq!(&keys[..2], &["ts", "type"]);
    }
}

/// spec/cli.md#import: the runtime's `write` drops `source`, `decay`, tags and
/// `important`; a `replace` import of a memory it rewrote keeps memdir's values of them.
#[test]
fn a_replace_import_of_a_runtime_rewrite_keeps_memdir_only_fields() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    assert!(run(memdir(&dir).arg("init")).status.success());
    let o = run(memdir(&dir).args([
        "write",
        "user_role",
        "--name",
        "Role",
        "--description",
        "plays on Saturdays",
        "--type",
        "user",
        "--tag",
        "football",
        "--important",
        "--decay",
        "30d",
        "--source",
        "chat 1",
        "--body",
        "Saturdays.",
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let blob = tmp.path().join("b.json");
    std::fs::write(
        &blob,
        serde_json::json!({"version": "memory/0.1", "files": {"user_role.md":
            "---\nname: Role\ndescription: now plays on Sundays\ntype: user\ncreated: 2026-04-01\nupdated: 2026-04-15\n---\n\nSundays now."}})
        .to_string(),
    )
    .unwrap();
    let o = run(memdir(&dir)
        .args(["--json", "import", "--strategy", "replace"])
        .arg(&blob));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mem = memdir::Memory::open(&dir).unwrap();
    let r = mem.read("user_role").unwrap();
    assert_eq!(r.meta.description, "now plays on Sundays");
    assert_eq!(r.body, "Sundays now.");
    assert_eq!(r.meta.tags, vec!["football"]);
    assert!(r.meta.important);
    assert_eq!(r.meta.decay, Some(memdir::Decay::Days(30)));
    assert_eq!(r.meta.source.as_deref(), Some("chat 1"));
}

/// spec/cli.md#export: a blob the runtime wrote comes back from memdir with the same
/// files, byte for byte, in the runtime's order, and the same events.
#[test]
fn the_runtime_export_round_trips_through_memdir_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    assert!(run(memdir(&dir).arg("init")).status.success());
    let path = fixture("threews/runtime-export.json");
    let o = run(memdir(&dir).arg("import").arg(&path));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(memdir(&dir).arg("export"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let back: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let orig: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let files = |v: &serde_json::Value| -> Vec<(String, String)> {
        v["files"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, t)| (k.clone(), t.as_str().unwrap().to_string()))
            .collect()
    };
    assert_eq!(files(&back), files(&orig));
    assert_eq!(back["timeline"], orig["timeline"]);
}

/// spec/decisions.md (2026-11-23, replace scope): unlike the runtime's `replace`, which
/// swaps the whole store, memdir's lets the blob win where both have a key and keeps
/// the memories only memdir has.
#[test]
fn replace_keeps_memories_the_blob_does_not_have() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    assert!(run(memdir(&dir).arg("init")).status.success());
    let o = run(memdir(&dir).args([
        "write",
        "user_local",
        "--name",
        "Local",
        "--description",
        "only here",
        "--type",
        "user",
        "--body",
        "x",
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(memdir(&dir)
        .args(["import", "--strategy", "replace"])
        .arg(fixture("threews/runtime-export.json")));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mem = memdir::Memory::open(&dir).unwrap();
    assert_eq!(mem.read("user_local").unwrap().meta.name, "Local");
    assert_eq!(mem.read("user_role").unwrap().meta.name, "Role");
}
