//! The house rules of the source tree, checked on every `cargo test`
//! (spec/architecture.md#wings): each wing imports only the wings below it, and
//! every module says what it owns in a `//!` line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The wings from the bottom up. A module may name `crate::<wing>` only for a wing
/// of a lower rank, or its own; wings of one rank stay independent of each other.
const WINGS: &[(&str, u32)] = &[
    ("clock", 0),
    ("memory", 1),
    ("ipfs", 1),
    ("exchange", 2),
    ("retrieval", 2),
    ("error", 3),
    ("store", 4),
    ("embed", 4),
    ("engine", 5),
    ("provider", 5),
    ("sync", 6),
    ("bench", 6),
    ("report", 7),
    ("mcp", 8),
    ("cli", 9),
];

/// The wing a file under `src/` belongs to: its first folder, or its stem. `None`
/// for `lib.rs` and `main.rs`, which stand above every wing.
fn wing_of(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    let wing = first.strip_suffix(".rs").unwrap_or(first);
    (wing != "lib" && wing != "main").then(|| wing.to_string())
}

fn rank(wing: &str) -> Option<u32> {
    WINGS.iter().find(|(w, _)| *w == wing).map(|(_, r)| *r)
}

/// The layering violations in one file's text: every `crate::<wing>` that names a
/// wing of the same or a higher rank than `wing`, and every `use crate::{…}` group
/// (which hides the wings it reaches). Comments, including doc links, are skipped.
fn violations(wing: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Some(own) = rank(wing) else {
        out.push(format!("`{wing}` is not a wing listed in tests/tidy.rs"));
        return out;
    };
    for (n, line) in text.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        // A trailing comment is not code either (`http://` in a string has no space before it).
        let code = code.split(" //").next().unwrap_or_default();
        if code.contains("crate::{") {
            out.push(format!(
                "line {}: `crate::{{…}}` groups hide which wings are imported; name each path",
                n + 1
            ));
        }
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if name.is_empty() || name == wing {
                continue;
            }
            match rank(&name) {
                Some(r) if r < own => {}
                Some(r) => out.push(format!(
                    "line {}: `{wing}` (rank {own}) imports `{name}` (rank {r}): a wing imports only wings below it",
                    n + 1
                )),
                None => out.push(format!(
                    "line {}: `crate::{name}` is not a wing listed in tests/tidy.rs",
                    n + 1
                )),
            }
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn sources() -> BTreeMap<PathBuf, String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p.strip_prefix(&src).unwrap().to_path_buf(), text)
        })
        .collect()
}

#[test]
fn wings_import_only_downward() {
    // spec/architecture.md#wings
    let mut problems = Vec::new();
    for (rel, text) in sources() {
        if let Some(wing) = wing_of(&rel) {
            for v in violations(&wing, &text) {
                problems.push(format!("src/{}: {v}", rel.display()));
            }
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn every_module_says_what_it_owns() {
    // spec/architecture.md#code-map: every module starts with a `//!` line.
    let missing: Vec<String> = sources()
        .into_iter()
        .filter(|(_, text)| !text.trim_start().starts_with("//!"))
        .map(|(rel, _)| format!("src/{}", rel.display()))
        .collect();
    assert!(missing.is_empty(), "no `//!` line: {missing:?}");
}

#[test]
fn the_checker_sees_what_it_forbids() {
    // The rules above would pass an empty tree; these cases show each one bites.
    let up = violations("store", "use crate::engine::Memory;\n");
    assert_eq!(up.len(), 1, "{up:?}");
    assert!(up[0].contains("imports `engine`"), "{up:?}");
    let sideways = violations("exchange", "let x = crate::retrieval::rank::order();");
    assert_eq!(sideways.len(), 1, "{sideways:?}");
    let group = violations("cli", "use crate::{engine, error};");
    assert!(group.iter().any(|v| v.contains("groups")), "{group:?}");
    let unknown = violations("cli", "use crate::utils::x;");
    assert!(unknown[0].contains("not a wing"), "{unknown:?}");
    assert!(violations("sync", "use crate::engine::Memory; // crate::cli").is_empty());
    assert!(violations("sync", "// use crate::cli::main;").is_empty());
    assert!(violations("memory", "use crate::memory::layout::INDEX_FILE;").is_empty());
    assert_eq!(wing_of(Path::new("sync/push.rs")).as_deref(), Some("sync"));
    assert_eq!(wing_of(Path::new("report.rs")).as_deref(), Some("report"));
    assert_eq!(wing_of(Path::new("lib.rs")), None);
}
