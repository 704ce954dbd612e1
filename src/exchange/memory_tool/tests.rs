//! The memory tool's texts (spec/memory-tool.md#replies): each case is a command's
//! input and the reference implementation's reply, byte for byte.

use serde_json::json;

use super::*;

fn check_place(path: &str, want: Result<Place, Refusal>) {
    assert_eq!(place(path), want, "{path}");
}

#[test]
fn paths_map_to_names_in_the_directory() {
    // spec/memory-tool.md#paths
    let name = |n: &str| Ok(Place::Name(n.into()));
    check_place("/memories", Ok(Place::Root));
    check_place("/memories/", Ok(Place::Root));
    check_place("/memories/user_role.md", name("user_role.md"));
    check_place("/memories//./user_role.md", name("user_role.md"));
    check_place("/memories/a/../b.md", name("b.md"));
    check_place("/memories/a/b.md", Ok(Place::Nested("a/b.md".into())));
    check_place("/memories/MEMORY.md", name("MEMORY.md"));
    // As in the reference, what follows the prefix is the relative path.
    check_place("/memoriesx.md", name("x.md"));
    let prefix = |p: &str| Err(Refusal::Prefix { path: p.into() });
    check_place("/etc/passwd", prefix("/etc/passwd"));
    check_place("memories/x.md", prefix("memories/x.md"));
    check_place("", prefix(""));
    let escape = |p: &str| Err(Refusal::Escape { path: p.into() });
    check_place("/memories/../etc/passwd", escape("/memories/../etc/passwd"));
    check_place("/memories/a/../../x", escape("/memories/a/../../x"));
    check_place("/memories/..", escape("/memories/.."));
}

#[test]
fn refusals_read_as_the_reference_writes_them() {
    let p = || "/memories/x.md".to_string();
    let cases: Vec<(Refusal, &str)> = vec![
        (
            Refusal::Prefix {
                path: "/tmp/x".into(),
            },
            "Path must start with /memories, got: /tmp/x",
        ),
        (
            Refusal::Escape {
                path: "/memories/../x".into(),
            },
            "Path /memories/../x would escape /memories directory",
        ),
        (
            Refusal::Symlink,
            "Path would escape /memories directory via symlink",
        ),
        (
            Refusal::Missing { path: p() },
            "The path /memories/x.md does not exist. Please provide a valid path.",
        ),
        (
            Refusal::Gone { path: p() },
            "The path /memories/x.md does not exist",
        ),
        (
            Refusal::NotAFile {
                path: "/memories".into(),
            },
            "The path /memories is not a file.",
        ),
        (
            Refusal::Exists { path: p() },
            "File /memories/x.md already exists",
        ),
        (
            Refusal::Destination { path: p() },
            "The destination /memories/x.md already exists",
        ),
        (
            Refusal::DeleteRoot,
            "Cannot delete the /memories directory itself",
        ),
        (
            Refusal::RenameRoot,
            "Cannot rename the /memories directory itself",
        ),
        (
            Refusal::InsertLine { line: 7, max: 3 },
            "Invalid `insert_line` parameter: 7. It should be within the range [0, 3].",
        ),
        (
            Refusal::TooLong { path: p() },
            "File /memories/x.md exceeds maximum line limit of 999,999 lines.",
        ),
    ];
    for (r, want) in cases {
        assert_eq!(r.to_string(), want);
    }
}

#[test]
fn commands_parse_from_the_json_the_model_sends() {
    let c = |v: serde_json::Value| Command::parse(&v);
    assert_eq!(
        c(json!({"command": "view", "path": "/memories", "view_range": [1, -1]})),
        Ok(Command::View {
            path: "/memories".into(),
            view_range: Some((1, -1))
        })
    );
    assert_eq!(
        c(json!({"command": "view", "path": "/memories", "view_range": null})),
        Ok(Command::View {
            path: "/memories".into(),
            view_range: None
        })
    );
    assert_eq!(
        c(
            json!({"command": "insert", "path": "/memories/a.md", "insert_line": 0, "insert_text": "x"})
        ),
        Ok(Command::Insert {
            path: "/memories/a.md".into(),
            insert_line: 0,
            insert_text: "x".into()
        })
    );
    assert_eq!(
        c(json!({"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b.md"})),
        Ok(Command::Rename {
            old_path: "/memories/a.md".into(),
            new_path: "/memories/b.md".into()
        })
    );
    let err = |v: serde_json::Value| c(v).unwrap_err().to_string();
    assert_eq!(
        err(json!({"command": "create", "path": "/memories/a.md"})),
        "Invalid memory tool command: missing field `file_text`"
    );
    assert_eq!(
        err(
            json!({"command": "insert", "path": "/memories/a.md", "insert_line": "2", "insert_text": "x"})
        ),
        "Invalid memory tool command: `insert_line` must be an integer, got \"2\""
    );
    assert_eq!(
        err(json!({"command": "view", "path": "/memories", "view_range": [1]})),
        "Invalid memory tool command: `view_range` must be two integers [start, end], got [1]"
    );
    assert!(err(json!({"command": "clear"})).contains("unknown command `clear`"));
    assert!(err(json!(["view"])).contains("expected a JSON object"));
    assert!(err(json!({"path": "/memories"})).contains("missing field `command`"));
}

#[test]
fn sizes_are_human_as_the_reference_shows_them() {
    // A whole size has no decimal (the reference tests `size == int(size)`).
    for (bytes, want) in [
        (0, "0B"),
        (1, "1B"),
        (1023, "1023B"),
        (1024, "1K"),
        (1536, "1.5K"),
        (1100, "1.1K"),
        (4096, "4K"),
        (1_048_535, "1024.0K"),
        (1_048_576, "1M"),
        (5 * 1024 * 1024 * 1024 * 1024, "5120G"),
    ] {
        assert_eq!(format_size(bytes), want, "{bytes}");
    }
}

#[test]
fn a_directory_view_lists_each_entry_under_the_header() {
    let entries = vec![
        ("MEMORY.md".to_string(), 80),
        ("user_role.md".to_string(), 2048),
    ];
    assert_eq!(
        view_dir("/memories", &entries),
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n\
         2.1K\t/memories\n80B\t/memories/MEMORY.md\n2K\t/memories/user_role.md"
    );
    assert_eq!(
        view_dir("/memories", &[]),
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n0B\t/memories"
    );
}

fn check_view(text: &str, range: Option<(i64, i64)>, want_lines: &str) {
    let got = view_file("/memories/a.md", text, range).unwrap();
    let want = format!("Here's the content of /memories/a.md with line numbers:\n{want_lines}");
    assert_eq!(got, want, "{text:?} {range:?}");
}

#[test]
fn a_file_view_numbers_its_lines() {
    // A final newline shows as an empty last line, as in the reference.
    check_view("one\ntwo\n", None, "     1\tone\n     2\ttwo\n     3\t");
    check_view("one", None, "     1\tone");
    check_view("", None, "     1\t");
    let text = "a\nb\nc\nd\ne";
    check_view(text, Some((2, 3)), "     2\tb\n     3\tc");
    check_view(text, Some((4, -1)), "     4\td\n     5\te");
    check_view(text, Some((0, 1)), "     1\ta");
    check_view(text, Some((-5, 2)), "     1\ta\n     2\tb");
    // Python slices: an end past the file stops at it, a start past it shows
    // nothing, another negative end counts from the end.
    check_view(text, Some((4, 99)), "     4\td\n     5\te");
    check_view(text, Some((9, 12)), "");
    check_view(text, Some((3, 2)), "");
    check_view(text, Some((2, -2)), "     2\tb\n     3\tc");
    check_view(&"x\n".repeat(9), Some((9, 10)), "     9\tx\n    10\t");
    let long = "\n".repeat(MAX_LINES);
    assert_eq!(
        view_file("/memories/a.md", &long, None),
        Err(Refusal::TooLong {
            path: "/memories/a.md".into()
        })
    );
}

#[test]
fn str_replace_needs_exactly_one_occurrence() {
    let path = "/memories/a.md";
    assert_eq!(
        str_replace(path, "alpha\nbeta\n", "gamma", "x")
            .unwrap_err()
            .to_string(),
        "No replacement was performed, old_str `gamma` did not appear verbatim in /memories/a.md."
    );
    let text = "a\nx\nb\nc\nx\n";
    assert_eq!(
        str_replace(path, text, "x", "y").unwrap_err().to_string(),
        "No replacement was performed. Multiple occurrences of old_str `x` in lines: 2, 5. Please ensure it is unique"
    );
    // Occurrences on one line are listed once each; overlapping ones too, as the
    // reference finds them (but `aa` in `aaa` counts once, so it is unique).
    assert_eq!(
        str_replace(path, "xx x", "x", "y").unwrap_err(),
        Refusal::Multiple {
            old: "x".into(),
            lines: vec![1, 1, 1]
        }
    );
    assert_eq!(str_replace(path, "aaa", "aa", "b").unwrap().0, "ba");
    assert_eq!(
        str_replace(path, "ab", "", "y").unwrap_err(),
        Refusal::Multiple {
            old: String::new(),
            lines: vec![1, 1, 1]
        }
    );
    assert_eq!(str_replace(path, "", "", "new").unwrap().0, "new");
    // Multi-byte text: positions are characters.
    assert_eq!(
        str_replace(path, "é\né", "é", "e").unwrap_err(),
        Refusal::Multiple {
            old: "é".into(),
            lines: vec![1, 2]
        }
    );
}

#[test]
fn str_replace_shows_two_lines_around_the_change() {
    let text = "1\n2\n3\n4\n5\n6\n7\n";
    let (new, reply) = str_replace("/memories/a.md", text, "4", "four\nFOUR").unwrap();
    assert_eq!(new, "1\n2\n3\nfour\nFOUR\n5\n6\n7\n");
    assert_eq!(
        reply,
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n\
         \x20    2\t2\n     3\t3\n     4\tfour\n     5\tFOUR\n     6\t5"
    );
    // At the top and at the end, the snippet stops at the file's edges.
    let (_, reply) = str_replace("/memories/a.md", "a\nb\n", "a", "A").unwrap();
    assert!(
        reply.ends_with(":\n     1\tA\n     2\tb\n     3\t"),
        "{reply:?}"
    );
    let (_, reply) = str_replace("/memories/a.md", "a\nb", "b", "B").unwrap();
    assert!(reply.ends_with(":\n     1\ta\n     2\tB"), "{reply:?}");
}

#[test]
fn insert_puts_a_line_after_the_one_named() {
    assert_eq!(insert("a\nb\n", 0, "x").unwrap(), "x\na\nb\n");
    assert_eq!(insert("a\nb\n", 1, "x\n").unwrap(), "a\nx\nb\n");
    assert_eq!(insert("a\nb\n", 2, "x").unwrap(), "a\nb\nx\n");
    assert_eq!(insert("a\nb", 2, "x\ny\n\n").unwrap(), "a\nb\nx\ny\n");
    assert_eq!(insert("", 0, "x").unwrap(), "x\n");
    assert_eq!(insert("", 0, "").unwrap(), "\n");
    assert_eq!(
        insert("a\nb\n", 3, "x"),
        Err(Refusal::InsertLine { line: 3, max: 2 })
    );
    assert_eq!(
        insert("a\nb\n", -1, "x"),
        Err(Refusal::InsertLine { line: -1, max: 2 })
    );
}

#[test]
fn success_replies() {
    assert_eq!(
        created("/memories/a.md"),
        "File created successfully at: /memories/a.md"
    );
    assert_eq!(
        edited("/memories/a.md"),
        "The file /memories/a.md has been edited."
    );
    assert_eq!(
        deleted("/memories/a.md"),
        "Successfully deleted /memories/a.md"
    );
    assert_eq!(
        renamed("/memories/a.md", "/memories/b.md"),
        "Successfully renamed /memories/a.md to /memories/b.md"
    );
}

#[test]
fn edges_split_and_join_back_to_the_text() {
    // spec/memory-tool.md#text: lead + body + trail is the text the tool wrote.
    for text in [
        "plain",
        "plain\n",
        "\n\nlead\n",
        "trail  \n\t\n",
        "",
        "\n",
        "  \n",
        "  indented\n",
        "a\n\nb\n\n",
    ] {
        let (body, edges) = Edges::split(text);
        assert_eq!(edges.join(&body), text, "{text:?}");
        assert_eq!(body, crate::memory::normalize_body(text), "{text:?}");
        let recorded = edges.value(&body);
        assert_eq!(Edges::read(recorded.as_ref(), &body), edges, "{text:?}");
    }
    // The usual edges (what memdir writes) need no frontmatter key.
    assert_eq!(Edges::split("body\n").1.value("body"), None);
    assert_eq!(Edges::split("").1.value(""), None);
    assert_eq!(
        Edges::split("body").1.value("body"),
        Some(json!({"trail": ""}))
    );
    // A recorded edge that is not white space is not shown.
    let odd = json!({"lead": "x\n", "trail": "tail"});
    assert_eq!(Edges::read(Some(&odd), "b"), Edges::usual("b"));
}

#[test]
fn names_and_descriptions_come_from_the_text() {
    let d = |body: &str| derive_fields(body, "the_key");
    assert_eq!(
        d("# Coffee\nLikes it black.\nNo sugar."),
        ("Coffee".into(), "Likes it black.".into())
    );
    assert_eq!(
        d("Likes it black.\nNo sugar."),
        ("Likes it black.".into(), "No sugar.".into())
    );
    assert_eq!(d("only line"), ("only line".into(), "only line".into()));
    assert_eq!(d(""), ("the_key".into(), "the_key".into()));
    assert_eq!(d("## A\n## B"), ("A".into(), "A".into()));
    let long = "w".repeat(300);
    let (name, desc) = d(&long);
    assert_eq!(name.chars().count(), NAME_CHARS);
    assert!(name.ends_with('…'));
    assert_eq!(desc.chars().count(), DESCRIPTION_CHARS);
}

#[test]
fn a_key_prefix_names_the_type() {
    assert_eq!(kind_of_key("user_coffee"), "user");
    assert_eq!(kind_of_key("feedback-tone"), "feedback");
    assert_eq!(kind_of_key("reference_links"), "reference");
    assert_eq!(kind_of_key("users"), "project");
    assert_eq!(kind_of_key("progress"), "project");
}

#[test]
fn carriage_returns_are_refused() {
    assert_eq!(check_text("file_text", "a\nb"), Ok(()));
    assert_eq!(
        check_text("file_text", "a\r\nb").unwrap_err().to_string(),
        "The file_text holds a carriage return (\\r): memdir keeps memory files with \\n line endings; send the text with \\n only"
    );
}
