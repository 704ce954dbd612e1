//! The knowledge graph end to end (spec/memory-format.md#links, spec/cli.md#graph):
//! odd file names and names through the Mermaid and DOT printers, checked for
//! structure always and with Graphviz's own parser (`dot -Tsvg`) when it is installed.

use std::io::Write;
use std::process::{Command, Stdio};

use memdir::{Direction, GraphFormat, Memory, render_graph};

/// A store whose keys (from file names a person chose) and names need escaping.
fn store() -> (tempfile::TempDir, Memory) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("memory");
    std::fs::create_dir_all(&dir).unwrap();
    let file = |stem: &str, name: &str, body: &str| {
        std::fs::write(
            dir.join(format!("{stem}.md")),
            format!(
                "---\nname: '{name}'\ndescription: d\ntype: user\ncreated: 2026-01-01\nupdated: 2026-01-01\n---\n\n{body}\n"
            ),
        )
        .unwrap();
    };
    file(
        "hub",
        "Hub \"quoted\" \\ back",
        "- knows:: [[we\"ird]]\n- likes:: [[semi;colon]]\n- end:: [[brace}]]",
    );
    file(
        "we\"ird",
        "Weird ]\" name",
        "- knows:: [[hub]] (a \"context\")",
    );
    file("semi;colon", "graph LR; click", "[[hub]] [[%%comment]]");
    file("brace}", "x --> y", "- subgraph:: [[hub]]");
    let mem = Memory::open(&dir).unwrap();
    (tmp, mem)
}

#[test]
fn mermaid_is_well_formed() {
    let (_tmp, mem) = store();
    let walk = mem.graph("hub", 2, None, Direction::Both).unwrap().value;
    assert_eq!(walk.nodes.len(), 4);
    let text = render_graph(&walk, GraphFormat::Mermaid, 100_000).text;
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("graph LR"));
    let mut nodes = 0;
    let mut edges = 0;
    for line in lines {
        let l = line
            .strip_prefix("  ")
            .unwrap_or_else(|| panic!("{line:?}"));
        // Ids are generated (`n0`…), never a key; every label is one quoted string
        // holding no quote.
        if let Some(rest) = l.split_once('[')
            && !l.contains("-->")
        {
            let (id, label) = rest;
            assert!(
                id.starts_with('n') && id[1..].bytes().all(|b| b.is_ascii_digit()),
                "{l}"
            );
            let inner = label
                .strip_prefix('"')
                .and_then(|x| x.strip_suffix("\"]"))
                .unwrap();
            assert!(!inner.contains('"'), "{l}");
            nodes += 1;
        } else {
            let (from, rest) = l.split_once(" -->|\"").unwrap_or_else(|| panic!("{l}"));
            let (label, to) = rest.split_once("\"| ").unwrap();
            assert!(!label.contains('"'), "{l}");
            for id in [from, to] {
                assert!(
                    id.starts_with('n') && id[1..].bytes().all(|b| b.is_ascii_digit()),
                    "{l}"
                );
            }
            edges += 1;
        }
    }
    assert_eq!((nodes, edges), (4, 6), "{text}");
}

#[test]
fn dot_parses_with_graphviz() {
    let (_tmp, mem) = store();
    let walk = mem.graph("hub", 3, None, Direction::Both).unwrap().value;
    let text = render_graph(&walk, GraphFormat::Dot, 100_000).text;
    assert!(
        text.starts_with("digraph memdir {\n") && text.ends_with("}\n"),
        "{text}"
    );
    assert!(
        text.contains("\"we\\\"ird\" [label=\"we\\\"ird\\nWeird ]\\\" name\"];"),
        "{text}"
    );
    // Every statement line is `"a" [label=…];` or `"a" -> "b" [label=…];`.
    for line in text.lines().skip(1).filter(|l| *l != "}") {
        assert!(line.starts_with("  \"") && line.ends_with("];"), "{line}");
    }
    let Ok(mut child) = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        eprintln!(
            "note: Graphviz `dot` is not installed; only the structure of the DOT output was checked (apt-get install graphviz)"
        );
        return;
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && err.trim().is_empty(),
        "dot: {err}\n{text}"
    );
    let svg = String::from_utf8_lossy(&out.stdout);
    assert!(svg.contains("<svg") && svg.contains("semi;colon"), "{svg}");
    assert_eq!(svg.matches("class=\"node\"").count(), 4, "{svg}");
    assert_eq!(svg.matches("class=\"edge\"").count(), 6, "{svg}");
}
