//! The memory tool on a store (spec/memory-tool.md): each command's replies, what it
//! writes, and what it refuses without changing anything.

use serde_json::{Value, json};

use crate::engine::Memory;
use crate::engine::testing::{dir_store, draft};

/// Runs one command; the reply's text, and whether it is an error.
fn run(mem: &Memory, cmd: Value) -> (String, bool) {
    let r = mem.memory_tool(&cmd);
    (r.text, r.is_error)
}

fn ok(mem: &Memory, cmd: Value) -> String {
    let (text, err) = run(mem, cmd.clone());
    assert!(!err, "{cmd}: {text}");
    text
}

fn err(mem: &Memory, cmd: Value) -> String {
    let (text, err) = run(mem, cmd.clone());
    assert!(err, "{cmd}: {text}");
    text
}

fn create(mem: &Memory, path: &str, text: &str) -> String {
    ok(
        mem,
        json!({"command": "create", "path": path, "file_text": text}),
    )
}

fn view(mem: &Memory, path: &str) -> String {
    ok(mem, json!({"command": "view", "path": path}))
}

/// The text a view of a file shows, without the header and line numbers.
fn shown(mem: &Memory, path: &str) -> String {
    let v = view(mem, path);
    let (_, lines) = v.split_once('\n').unwrap();
    lines
        .split('\n')
        .map(|l| l.split_once('\t').unwrap().1)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every file in the directory with its bytes (dot entries and the timeline too).
fn files(mem: &Memory) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let root = mem.root();
    for e in walk(&root) {
        let rel = e.strip_prefix(&root).unwrap().to_string_lossy().to_string();
        out.push((rel, std::fs::read(&e).unwrap()));
    }
    out.sort();
    out
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn create_then_view_shows_exactly_what_was_written() {
    // spec/memory-tool.md#text: the view of a file shows the text `create` wrote,
    // whatever its edges; memdir stores it as a memory with derived frontmatter.
    let (_tmp, mem) = dir_store();
    for (i, text) in [
        "# Coffee\nLikes it black.\n",
        "no newline at the end",
        "\n\nblank lines first\n\n\n",
        "trailing spaces   \n\t",
        "",
        "---\nname: own frontmatter\n---\nbody\n",
    ]
    .iter()
    .enumerate()
    {
        let path = format!("/memories/user_note{i}.md");
        assert_eq!(
            create(&mem, &path, text),
            format!("File created successfully at: {path}")
        );
        assert_eq!(shown(&mem, &path), *text, "{text:?}");
    }
    let r = mem.read("user_note0").unwrap();
    assert_eq!(r.meta.name, "Coffee");
    assert_eq!(r.meta.description, "Likes it black.");
    assert_eq!(r.meta.kind.as_str(), "user");
    assert_eq!(r.body, "# Coffee\nLikes it black.");
    // The usual edges need no key; others are recorded.
    let file = std::fs::read_to_string(mem.root().join("user_note0.md")).unwrap();
    assert!(!file.contains("tool_text"), "{file}");
    let file = std::fs::read_to_string(mem.root().join("user_note1.md")).unwrap();
    assert!(file.contains("tool_text:"), "{file}");
    // MEMORY.md lists them.
    let index = std::fs::read_to_string(mem.root().join("MEMORY.md")).unwrap();
    assert!(index.contains("[Coffee](user_note0.md)"), "{index}");
}

#[test]
fn view_of_the_directory_lists_the_index_and_the_memories() {
    // spec/memory-tool.md#view: MEMORY.md and memory files, each with the size of
    // the text the tool sees; the timeline, `.memdir/` and other files are hidden.
    let (_tmp, mem) = dir_store();
    assert_eq!(
        view(&mem, "/memories"),
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n0B\t/memories"
    );
    create(&mem, "/memories/b_note.md", "hello\n");
    mem.write(&draft("a_note", "user", "from memdir")).unwrap();
    mem.note("user_said", serde_json::Map::new()).unwrap();
    std::fs::write(mem.root().join("notes.txt"), "not a memory").unwrap();
    let index_size = std::fs::metadata(mem.root().join("MEMORY.md"))
        .unwrap()
        .len();
    let v = view(&mem, "/memories");
    let want = format!(
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n\
         {}\t/memories\n{index_size}B\t/memories/MEMORY.md\n12B\t/memories/a_note.md\n6B\t/memories/b_note.md",
        crate::exchange::memory_tool::format_size(index_size + 18)
    );
    assert_eq!(v, want);
    // A memory memdir wrote shows its body and the newline the file ends with.
    assert_eq!(shown(&mem, "/memories/a_note.md"), "from memdir\n");
    assert!(shown(&mem, "/memories/MEMORY.md").starts_with("# Agent Memory"));
    for hidden in [
        "/memories/timeline",
        "/memories/.memdir/config.toml",
        "/memories/notes.txt",
        "/memories/missing.md",
        "/memories/timeline/2026-04-14.jsonl",
    ] {
        assert_eq!(
            err(&mem, json!({"command": "view", "path": hidden})),
            format!("The path {hidden} does not exist. Please provide a valid path.")
        );
    }
}

#[test]
fn view_range_picks_lines() {
    let (_tmp, mem) = dir_store();
    create(&mem, "/memories/n.md", "a\nb\nc\n");
    assert_eq!(
        ok(
            &mem,
            json!({"command": "view", "path": "/memories/n.md", "view_range": [2, -1]})
        ),
        "Here's the content of /memories/n.md with line numbers:\n     2\tb\n     3\tc\n     4\t"
    );
    assert_eq!(
        ok(
            &mem,
            json!({"command": "view", "path": "/memories/n.md", "view_range": [1, 1]})
        ),
        "Here's the content of /memories/n.md with line numbers:\n     1\ta"
    );
}

#[test]
fn create_refuses_an_existing_file_and_bad_paths() {
    // spec/memory-tool.md#create: an existing file is not overwritten (as the SDK's
    // reference does); nothing changes.
    let (_tmp, mem) = dir_store();
    create(&mem, "/memories/n.md", "first\n");
    let before = files(&mem);
    assert_eq!(
        err(
            &mem,
            json!({"command": "create", "path": "/memories/n.md", "file_text": "second\n"})
        ),
        "File /memories/n.md already exists"
    );
    assert_eq!(
        err(
            &mem,
            json!({"command": "create", "path": "/memories", "file_text": "x"})
        ),
        "File /memories already exists"
    );
    for bad in [
        "/memories/notes.txt",
        "/memories/Has Space.md",
        "/memories/sub/dir/n.md",
        "/memories/.hidden.md",
        "/memories/timeline/x.md",
    ] {
        let e = err(
            &mem,
            json!({"command": "create", "path": bad, "file_text": "x"}),
        );
        assert!(
            e.starts_with(&format!(
                "{bad} is not a memory file: memdir keeps each memory as /memories/<key>.md"
            )),
            "{e}"
        );
    }
    let e = err(
        &mem,
        json!({"command": "create", "path": "/memories/MEMORY.md", "file_text": "x"}),
    );
    assert!(e.contains("memdir's index"), "{e}");
    assert_eq!(
        err(
            &mem,
            json!({"command": "create", "path": "/memories/../x.md", "file_text": "x"})
        ),
        "Path /memories/../x.md would escape /memories directory"
    );
    assert_eq!(
        err(
            &mem,
            json!({"command": "create", "path": "/tmp/x.md", "file_text": "x"})
        ),
        "Path must start with /memories, got: /tmp/x.md"
    );
    assert_eq!(files(&mem), before);
}

#[test]
fn a_secret_is_refused_and_nothing_is_written() {
    // spec/memory-format.md#secrets through the tool: create, str_replace and insert.
    let (_tmp, mem) = dir_store();
    create(&mem, "/memories/n.md", "safe\n");
    let before = files(&mem);
    let key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD";
    let e = err(
        &mem,
        json!({"command": "create", "path": "/memories/m.md", "file_text": format!("key {key}\n")}),
    );
    assert!(e.starts_with("refused to store m: the"), "{e}");
    let e = err(
        &mem,
        json!({"command": "str_replace", "path": "/memories/n.md", "old_str": "safe", "new_str": key}),
    );
    assert!(e.starts_with("refused to store n"), "{e}");
    let e = err(
        &mem,
        json!({"command": "insert", "path": "/memories/n.md", "insert_line": 0, "insert_text": key}),
    );
    assert!(e.starts_with("refused to store n"), "{e}");
    assert_eq!(files(&mem), before);
}

#[test]
fn str_replace_edits_one_occurrence_and_shows_the_snippet() {
    let (_tmp, mem) = dir_store();
    create(&mem, "/memories/n.md", "# Progress\nstep one\nstep two\n");
    let path = "/memories/n.md";
    assert_eq!(
        err(
            &mem,
            json!({"command": "str_replace", "path": path, "old_str": "step three", "new_str": "x"})
        ),
        "No replacement was performed, old_str `step three` did not appear verbatim in /memories/n.md."
    );
    assert_eq!(
        err(
            &mem,
            json!({"command": "str_replace", "path": path, "old_str": "step", "new_str": "x"})
        ),
        "No replacement was performed. Multiple occurrences of old_str `step` in lines: 2, 3. Please ensure it is unique"
    );
    assert_eq!(
        ok(
            &mem,
            json!({"command": "str_replace", "path": path, "old_str": "step two", "new_str": "step 2 done"})
        ),
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\t# Progress\n     2\tstep one\n     3\tstep 2 done\n     4\t"
    );
    assert_eq!(shown(&mem, path), "# Progress\nstep one\nstep 2 done\n");
    // The derived description follows the text.
    ok(
        &mem,
        json!({"command": "str_replace", "path": path, "old_str": "step one", "new_str": "step 1 done"}),
    );
    assert_eq!(mem.read("n").unwrap().meta.description, "step 1 done");
    for (missing, want) in [
        (
            "/memories/none.md",
            "The path /memories/none.md does not exist. Please provide a valid path.",
        ),
        ("/memories", "The path /memories is not a file."),
    ] {
        assert_eq!(
            err(
                &mem,
                json!({"command": "str_replace", "path": missing, "old_str": "a", "new_str": "b"})
            ),
            want
        );
    }
}

#[test]
fn an_edit_keeps_a_name_a_person_gave() {
    let (_tmp, mem) = dir_store();
    mem.write(&draft("user_role", "user", "Argentina fan."))
        .unwrap();
    ok(
        &mem,
        json!({"command": "str_replace", "path": "/memories/user_role.md", "old_str": "Argentina", "new_str": "Uruguay"}),
    );
    let r = mem.read("user_role").unwrap();
    assert_eq!(
        (r.meta.name.as_str(), r.meta.description.as_str()),
        ("user role", "about user_role")
    );
    assert_eq!(r.body, "Uruguay fan.");
    assert_eq!(shown(&mem, "/memories/user_role.md"), "Uruguay fan.\n");
}

#[test]
fn insert_at_the_top_the_end_and_out_of_range() {
    let (_tmp, mem) = dir_store();
    let path = "/memories/n.md";
    create(&mem, path, "a\nb\n");
    let ins = |line: i64, text: &str| {
        run(
            &mem,
            json!({"command": "insert", "path": path, "insert_line": line, "insert_text": text}),
        )
    };
    assert_eq!(
        ins(0, "top"),
        ("The file /memories/n.md has been edited.".into(), false)
    );
    assert!(!ins(3, "end\n").1);
    assert_eq!(shown(&mem, path), "top\na\nb\nend\n");
    let before = files(&mem);
    assert_eq!(
        ins(5, "x"),
        (
            "Invalid `insert_line` parameter: 5. It should be within the range [0, 4].".into(),
            true
        )
    );
    assert_eq!(
        ins(-1, "x"),
        (
            "Invalid `insert_line` parameter: -1. It should be within the range [0, 4].".into(),
            true
        )
    );
    let e = ins(1, "a\r\nb").0;
    assert!(e.contains("carriage return"), "{e}");
    assert_eq!(files(&mem), before);
}

#[test]
fn delete_is_a_forget_and_never_the_directory() {
    // spec/memory-tool.md#delete: a `forgot` event (the tombstone sync carries).
    let (_tmp, mem) = dir_store();
    create(&mem, "/memories/n.md", "x\n");
    assert_eq!(
        err(&mem, json!({"command": "delete", "path": "/memories"})),
        "Cannot delete the /memories directory itself"
    );
    assert_eq!(
        err(&mem, json!({"command": "delete", "path": "/memories/"})),
        "Cannot delete the /memories directory itself"
    );
    let e = err(
        &mem,
        json!({"command": "delete", "path": "/memories/MEMORY.md"}),
    );
    assert!(e.contains("memdir's index"), "{e}");
    assert_eq!(
        ok(&mem, json!({"command": "delete", "path": "/memories/n.md"})),
        "Successfully deleted /memories/n.md"
    );
    assert!(!mem.root().join("n.md").exists());
    let events = mem.events().unwrap().events;
    assert_eq!(events.last().unwrap().kind, "forgot");
    assert_eq!(events.last().unwrap().fields["key"], "n");
    assert_eq!(
        err(&mem, json!({"command": "delete", "path": "/memories/n.md"})),
        "The path /memories/n.md does not exist"
    );
    assert_eq!(
        err(
            &mem,
            json!({"command": "delete", "path": "/memories/timeline"})
        ),
        "The path /memories/timeline does not exist"
    );
}

#[test]
fn rename_moves_a_memory_and_reports_dangling_links() {
    // spec/memory-tool.md#rename
    let (_tmp, mem) = dir_store();
    create(&mem, "/memories/old.md", "the text\n");
    create(&mem, "/memories/other.md", "see [[old]]\n");
    create(&mem, "/memories/taken.md", "x\n");
    let before = files(&mem);
    assert_eq!(
        err(
            &mem,
            json!({"command": "rename", "old_path": "/memories/old.md", "new_path": "/memories/taken.md"})
        ),
        "The destination /memories/taken.md already exists"
    );
    assert_eq!(
        err(
            &mem,
            json!({"command": "rename", "old_path": "/memories", "new_path": "/memories/x.md"})
        ),
        "Cannot rename the /memories directory itself"
    );
    assert_eq!(
        err(
            &mem,
            json!({"command": "rename", "old_path": "/memories/none.md", "new_path": "/memories/x.md"})
        ),
        "The path /memories/none.md does not exist"
    );
    let e = err(
        &mem,
        json!({"command": "rename", "old_path": "/memories/old.md", "new_path": "/memories/New.md"}),
    );
    assert!(e.contains("is not a memory file"), "{e}");
    assert_eq!(
        err(
            &mem,
            json!({"command": "rename", "old_path": "/memories/old.md", "new_path": "/memories/../x.md"})
        ),
        "Path /memories/../x.md would escape /memories directory"
    );
    assert_eq!(files(&mem), before);
    assert_eq!(
        ok(
            &mem,
            json!({"command": "rename", "old_path": "/memories/old.md", "new_path": "/memories/new.md"})
        ),
        "Successfully renamed /memories/old.md to /memories/new.md\n\
         Links to [[old]] now dangle in: /memories/other.md line 1. Edit them to name the new key."
    );
    assert_eq!(shown(&mem, "/memories/new.md"), "the text\n");
    assert_eq!(
        ok(
            &mem,
            json!({"command": "rename", "old_path": "/memories/taken.md", "new_path": "/memories/free.md"})
        ),
        "Successfully renamed /memories/taken.md to /memories/free.md"
    );
}

#[cfg(unix)]
#[test]
fn symlinks_are_refused_with_the_reference_message() {
    // spec/memory-tool.md#paths: a link is never followed, wherever it points.
    let (tmp, mem) = dir_store();
    create(&mem, "/memories/n.md", "x\n");
    let outside = tmp.path().join("secret.md");
    std::fs::write(&outside, "outside\n").unwrap();
    std::os::unix::fs::symlink(&outside, mem.root().join("link.md")).unwrap();
    let msg = "Path would escape /memories directory via symlink";
    for cmd in [
        json!({"command": "view", "path": "/memories/link.md"}),
        json!({"command": "str_replace", "path": "/memories/link.md", "old_str": "outside", "new_str": "x"}),
        json!({"command": "insert", "path": "/memories/link.md", "insert_line": 0, "insert_text": "x"}),
        json!({"command": "create", "path": "/memories/link.md", "file_text": "x"}),
        json!({"command": "delete", "path": "/memories/link.md"}),
        json!({"command": "rename", "old_path": "/memories/link.md", "new_path": "/memories/m.md"}),
        json!({"command": "rename", "old_path": "/memories/n.md", "new_path": "/memories/link.md"}),
    ] {
        assert_eq!(err(&mem, cmd.clone()), msg, "{cmd}");
    }
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "outside\n");
    assert!(mem.root().join("n.md").exists());
    // The listing leaves the link out.
    assert!(!view(&mem, "/memories").contains("link.md"));
}

#[test]
fn a_malformed_file_is_shown_whole_and_never_rewritten() {
    let (_tmp, mem) = dir_store();
    create(&mem, "/memories/n.md", "x\n");
    let bad = "---\nname: [unclosed\n---\nbody\n";
    std::fs::write(mem.root().join("broken.md"), bad).unwrap();
    assert_eq!(shown(&mem, "/memories/broken.md"), bad);
    let e = err(
        &mem,
        json!({"command": "str_replace", "path": "/memories/broken.md", "old_str": "body", "new_str": "b"}),
    );
    assert!(e.contains("broken.md"), "{e}");
    assert_eq!(
        std::fs::read_to_string(mem.root().join("broken.md")).unwrap(),
        bad
    );
}

#[test]
fn bad_json_is_an_error_reply() {
    let mem = Memory::in_memory();
    let r = mem.memory_tool_json("{not json");
    assert!(r.is_error);
    assert!(
        r.text.starts_with("Invalid memory tool command: not JSON:"),
        "{}",
        r.text
    );
    let r = mem.memory_tool_json(r#"{"command": "view", "path": "/memories"}"#);
    assert!(!r.is_error, "{}", r.text);
}

#[test]
fn the_none_mode_serves_the_tool_too() {
    let mem = Memory::in_memory();
    create(&mem, "/memories/n.md", "in memory\n");
    assert_eq!(shown(&mem, "/memories/n.md"), "in memory\n");
    assert!(view(&mem, "/memories").ends_with("10B\t/memories/n.md"));
}
