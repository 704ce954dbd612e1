//! Imports from the tools people already use, and `export --format mcp-memory`
//! (spec/import-formats.md): each format's fixtures under fixtures/import/ go through
//! the binary, and the files it leaves are checked.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

/// A temp dir with an initialized, empty memory directory at `<tmp>/memory`.
fn empty_store() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    let o = run(memdir(&dir).arg("init"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    (tmp, dir)
}

fn import(dir: &Path, args: &[&str]) -> std::process::Output {
    run(memdir(dir).arg("import").args(args))
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every file of the directory, dot files included (but the load cache, which any
/// read may refresh), for "nothing was written".
fn everything(dir: &Path) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            (
                e.path().strip_prefix(dir).unwrap().display().to_string(),
                String::from_utf8_lossy(&std::fs::read(e.path()).unwrap()).into_owned(),
            )
        })
        .filter(|(p, _)| !p.starts_with(".memdir/cache"))
        .collect();
    out.sort();
    out
}

fn json(o: &std::process::Output) -> serde_json::Value {
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

// spec/import-formats.md#claude-code
#[test]
fn a_claude_code_folder_imports_with_dates_keys_and_a_timeline_event() {
    let (_tmp, dir) = empty_store();
    let src = fixture("import/claude-code/valid");
    let o = run(memdir(&dir).arg("--json").arg("import").arg(&src));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = json(&o);
    assert_eq!(r["format"], "claude-code");
    assert_eq!(r["added"], 4, "{r}");
    // CRLF in the source; today's dates added where Claude Code wrote none.
    assert_eq!(
        read(&dir, "user_role.md"),
        "---\nname: Role\ndescription: data scientist focused on observability and logging\ntype: user\ncreated: 2026-04-14\nupdated: 2026-04-14\n---\n\nThe user is a data scientist investigating what logging is in place.\nFrame answers around the data, not the infrastructure.\n"
    );
    // File names that are not memdir keys get safe keys, reported.
    assert!(read(&dir, "project_freeze.md").contains("name: Merge freeze\n"));
    assert!(read(&dir, "reference_grafana.md").contains("type: reference\n"));
    let converted = r["converted"].to_string();
    assert!(converted.contains("Project Freeze.md"), "{converted}");
    assert!(converted.contains("référence_grafana.md"), "{converted}");
    // Its MEMORY.md is not imported: memdir's index is rebuilt.
    let index = read(&dir, "MEMORY.md");
    assert!(index.starts_with("# Agent Memory"), "{index}");
    assert!(
        index.contains("[Merge freeze](project_freeze.md)"),
        "{index}"
    );
    let events = read(&dir, "timeline/2026-04-14.jsonl");
    assert_eq!(
        events,
        "{\"ts\":\"2026-04-14T12:00:00.000Z\",\"type\":\"imported\",\"from\":\"claude-code\",\"source\":\"valid\",\"count\":4,\"keys\":[\"feedback_testing\",\"project_freeze\",\"reference_grafana\",\"user_role\"]}\n"
    );
    // The same folder again changes nothing, and logs nothing.
    let before = everything(&dir);
    let o = run(memdir(&dir).arg("--json").arg("import").arg(&src));
    assert_eq!(json(&o)["unchanged"], 4);
    assert_eq!(everything(&dir), before);
}

// spec/import-formats.md#mcp-memory
#[test]
fn mcp_memory_entities_become_memories_and_relations_link_lines() {
    let (_tmp, dir) = empty_store();
    let o = run(memdir(&dir)
        .arg("--json")
        .arg("import")
        .arg(fixture("import/mcp-memory/memory.jsonl")));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = json(&o);
    assert_eq!(r["format"], "mcp-memory");
    let keys: Vec<&str> = r["plan"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["key"].as_str().unwrap())
        .collect();
    // Unicode names fold to keys; a name with nothing to fold gets a hash key; two
    // names that fold alike are numbered, deterministically.
    assert_eq!(
        keys,
        vec![
            "acme_corp",
            "entity_130016b2",
            "memdir",
            "zoe_muller",
            "zoe_muller_2"
        ]
    );
    // The duplicate entity's observations are merged into the first (without
    // repeating one), relations become link lines (spec/memory-format.md#links), a relation type is
    // written in snake_case, and a relation to a missing entity is kept as written.
    assert_eq!(
        read(&dir, "zoe_muller.md"),
        "---\nname: Zoë Müller\ndescription: \"person: Lives in Zürich\"\ntype: user\ncreated: 2026-04-14\nupdated: 2026-04-14\nsource: mcp-memory\nentity_type: person\n---\n\n- Lives in Zürich\n- Prefers morning meetings\n- Speaks German and Spanish\n\n- works_at:: [[acme_corp]]\n- contributes_to:: [[memdir]]\n- knows:: [[Bob Stone]]\n- visited:: [[entity_130016b2]]\n"
    );
    // An entity without observations is a memory without a body.
    assert_eq!(
        read(&dir, "acme_corp.md"),
        "---\nname: Acme Corp\ndescription: organization\ntype: reference\ncreated: 2026-04-14\nupdated: 2026-04-14\nsource: mcp-memory\nentity_type: organization\n---\n"
    );
    assert!(read(&dir, "memdir.md").contains("type: project\n"));
    assert!(read(&dir, "entity_130016b2.md").contains("name: 東京\n"));
    let unresolved = r["unresolved"].to_string();
    assert!(unresolved.contains("Bob Stone"), "{unresolved}");
    let skipped = r["skipped_items"].to_string();
    assert!(
        skipped.contains("memory.jsonl:12") && skipped.contains("Ghost"),
        "{skipped}"
    );
    assert!(r["converted"].to_string().contains("memory.jsonl:5"), "{r}");
}

// spec/import-formats.md#export
#[test]
fn mcp_memory_round_trips_through_memdir() {
    let (tmp, dir) = empty_store();
    let src = fixture("import/mcp-memory/roundtrip.jsonl");
    let o = import(&dir, &[path(&src)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = tmp.path().join("back.jsonl");
    let o = run(memdir(&dir)
        .args(["export", "--format", "mcp-memory", "-o"])
        .arg(&out));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let back = std::fs::read_to_string(&out).unwrap();
    let original = std::fs::read_to_string(&src).unwrap();
    // Entities come back in key order, then relations; each line is the same.
    let mut a: Vec<&str> = back.lines().collect();
    let mut b: Vec<&str> = original.lines().collect();
    a.sort();
    b.sort();
    assert_eq!(a, b);
    assert!(back.ends_with('\n'));
    // And the export imports again as the same memories.
    let o = run(memdir(&dir).arg("--json").arg("import").arg(&out));
    assert_eq!(json(&o)["unchanged"], 4, "{}", stdout(&o));
}

// spec/import-formats.md#basic-memory
#[test]
fn basic_memory_notes_become_memories_with_resolved_relations() {
    let (_tmp, dir) = empty_store();
    let o = run(memdir(&dir)
        .arg("--json")
        .arg("import")
        .arg(fixture("import/basic-memory/valid")));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = json(&o);
    assert_eq!(r["format"], "basic-memory");
    assert_eq!(r["added"], 5, "{r}");
    let brew = read(&dir, "coffee_coffee-brewing-methods.md");
    assert!(brew.contains("name: Coffee Brewing Methods\n"), "{brew}");
    assert!(brew.contains("permalink: coffee/coffee-brewing-methods\n"));
    assert!(brew.contains("tags:\n- coffee\n- brewing\n"), "{brew}");
    // Observations stay as written; relations resolve by title or permalink.
    assert!(
        brew.contains(
            "- [method] Pour over gives more flavor clarity than French press #brewing\n"
        )
    );
    assert!(brew.contains("- relates_to:: [[coffee-bean-origins]]\n"));
    assert!(brew.contains("- requires:: [[grinding]]\n"));
    assert!(brew.contains("- inspired_by:: [[people_zoe-muller]]\n"));
    assert!(brew.contains("- contrasts_with:: [[Tea Brewing Methods]] (different leaves)\n"));
    // A CRLF note with comma-separated tags.
    let origins = read(&dir, "coffee-bean-origins.md");
    assert!(origins.contains("- part_of:: [[coffee_coffee-brewing-methods]]\n"));
    assert!(
        origins.contains("tags:\n- coffee\n- origins\n"),
        "{origins}"
    );
    assert!(!origins.contains('\r'));
    // A note without frontmatter takes its file name as title.
    assert!(read(&dir, "grinding.md").contains("- used_by:: [[coffee_coffee-brewing-methods]]\n"));
    // A person is a user memory; custom fields are kept.
    let zoe = read(&dir, "people_zoe-muller.md");
    assert!(
        zoe.contains("type: user\n") && zoe.contains("status: active\n"),
        "{zoe}"
    );
    let unresolved = r["unresolved"].to_string();
    assert!(
        unresolved.contains("Tea Brewing Methods") && unresolved.contains("coffee/brewing.md:17"),
        "{unresolved}"
    );
    assert!(unresolved.contains("Bob Stone"), "{unresolved}");
}

// spec/import-formats.md#validation: a malformed line refuses the input, naming the
// file and line, and nothing is written (not even in a dry run's stead).
#[test]
fn a_malformed_input_names_file_and_line_and_writes_nothing() {
    let (_tmp, dir) = empty_store();
    let before = everything(&dir);
    for (src, from, want) in [
        (
            "import/mcp-memory/malformed.jsonl",
            None,
            "malformed.jsonl:3: not valid JSON",
        ),
        (
            "import/claude-code/malformed",
            Some("claude-code"),
            "malformed/user_role.md:4: column 5",
        ),
        (
            "import/basic-memory/malformed",
            None,
            "malformed/broken.md:4: column 10",
        ),
    ] {
        let src = fixture(src);
        let mut args = vec![path(&src)];
        if let Some(f) = from {
            args.extend(["--from", f]);
        }
        let o = import(&dir, &args);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains(want), "{}", stderr(&o));
        assert!(stderr(&o).contains("nothing was written"), "{}", stderr(&o));
        assert_eq!(everything(&dir), before, "{src:?}");
    }
}

// spec/import-formats.md#validation: `--dry-run` prints the plan and writes nothing.
#[test]
fn a_dry_run_of_each_format_writes_nothing() {
    let (_tmp, dir) = empty_store();
    let before = everything(&dir);
    for src in [
        "import/claude-code/valid",
        "import/mcp-memory/memory.jsonl",
        "import/basic-memory/valid",
    ] {
        let o = import(&dir, &[path(&fixture(src)), "--dry-run"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let text = stdout(&o);
        assert!(text.contains("dry run (nothing written): "), "{text}");
        assert!(text.contains("\nadd "), "{text}");
        assert_eq!(everything(&dir), before, "{src}");
    }
}

// spec/import-formats.md#detection
#[test]
fn detection_refuses_what_it_cannot_tell_and_names_the_flag() {
    let (tmp, dir) = empty_store();
    // Both kinds of folder in one: ambiguous.
    let o = import(&dir, &[path(&fixture("import"))]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("could be claude-code"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("--from"), "{}", stderr(&o));
    // A file that is neither a blob nor a memory.jsonl.
    let notes = tmp.path().join("notes.txt");
    std::fs::write(&notes, "just some text\n").unwrap();
    let o = import(&dir, &[path(&notes)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("cannot tell the format"),
        "{}",
        stderr(&o)
    );
    // A folder format named for a file, and an unknown --from value.
    let o = import(
        &dir,
        &[
            path(&fixture("import/mcp-memory/memory.jsonl")),
            "--from",
            "basic-memory",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("basic-memory reads a folder"),
        "{}",
        stderr(&o)
    );
    let o = import(&dir, &[path(&notes), "--from", "obsidian"]);
    assert_eq!(o.status.code(), Some(2));
    // An empty memory.jsonl is an empty graph when named.
    let empty = tmp.path().join("memory.jsonl");
    std::fs::write(&empty, "").unwrap();
    let o = import(&dir, &[path(&empty), "--from", "mcp-memory"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("0 added"), "{}", stdout(&o));
}

// spec/cli.md#import: merge keeps the local memory, replace takes the incoming one.
#[test]
fn strategies_apply_to_foreign_imports() {
    let (_tmp, dir) = empty_store();
    let src = fixture("import/mcp-memory/roundtrip.jsonl");
    assert_eq!(import(&dir, &[path(&src)]).status.code(), Some(0));
    let o = run(memdir(&dir).args([
        "write",
        "memdir",
        "--name",
        "memdir",
        "--type",
        "project",
        "--description",
        "edited here",
        "--body",
        "Local notes.",
        "--replace",
    ]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = run(memdir(&dir).arg("--json").arg("import").arg(&src));
    assert_eq!(json(&o)["kept"], 1);
    assert!(read(&dir, "memdir.md").contains("Local notes."));
    let o = run(memdir(&dir)
        .args(["--json", "import", "--strategy", "replace"])
        .arg(&src));
    assert_eq!(json(&o)["updated"], 1);
    assert!(read(&dir, "memdir.md").contains("- Stores one Markdown file per memory"));
}

// spec/import-formats.md#validation: secrets are refused as for writes.
#[test]
fn a_secret_in_a_foreign_memory_is_skipped_and_reported() {
    let (tmp, dir) = empty_store();
    let src = tmp.path().join("memory.jsonl");
    std::fs::write(
        &src,
        "{\"type\":\"entity\",\"name\":\"ci\",\"entityType\":\"service\",\"observations\":[\"key is sk-abcdefghijklmnopqrstuvwxyz123456\"]}\n{\"type\":\"entity\",\"name\":\"ok\",\"entityType\":\"service\",\"observations\":[\"fine\"]}\n",
    )
    .unwrap();
    let o = run(memdir(&dir).arg("--json").arg("import").arg(&src));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = json(&o);
    assert_eq!(r["added"], 1);
    assert!(r["skipped_items"].to_string().contains("ci.md"), "{r}");
    assert!(!dir.join("ci.md").exists());
}

#[test]
fn help_teaches_the_formats() {
    let o = run(Command::new(bin()).args(["import", "--help"]));
    let h = stdout(&o);
    for word in [
        "claude-code",
        "mcp-memory",
        "basic-memory",
        "blob",
        "--dry-run",
    ] {
        assert!(h.contains(word), "{word}: {h}");
    }
    let o = run(Command::new(bin()).args(["export", "--help"]));
    assert!(stdout(&o).contains("mcp-memory"), "{}", stdout(&o));
}

// spec/import-formats.md: the library imports the same way, with detection, on any
// store (here one in memory), and a dry run leaves it empty.
#[test]
fn the_library_imports_foreign_formats() {
    use memdir::exchange::foreign::{Format, Source};
    let mem = memdir::Memory::in_memory().with_clock(memdir::Clock::fixed(NOW.parse().unwrap()));
    let bytes = std::fs::read(fixture("import/mcp-memory/roundtrip.jsonl")).unwrap();
    let src = Source::File {
        name: "memory.jsonl",
        bytes: &bytes,
    };
    assert_eq!(
        memdir::exchange::foreign::detect(&src),
        Ok(Format::McpMemory)
    );
    let dry = mem
        .import_from(&src, None, memdir::Strategy::Merge, true)
        .unwrap();
    assert_eq!((dry.format, dry.counts.added), ("mcp-memory", 4));
    assert!(mem.read("default_user").is_err());
    let done = mem
        .import_from(&src, None, memdir::Strategy::Merge, false)
        .unwrap();
    assert_eq!(done.counts.added, 4);
    let user = mem.read("default_user").unwrap();
    assert_eq!(user.meta.kind, memdir::Kind::User);
    assert!(
        user.body.contains("- works_at:: [[acme_corp]]"),
        "{}",
        user.body
    );
}
