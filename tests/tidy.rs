//! The house rules of the source tree, checked on every `cargo test`
//! (spec/architecture.md#wings): each wing imports only the wings below it, every
//! module says what it owns in a `//!` line and has its row in the code map, and
//! each absence spec/architecture.md#what-is-absent-on-purpose promises (the disk,
//! the clock, the environment, the network, printing, `.memdir` paths) holds outside
//! the places allowed to break it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The wings from the bottom up. A module may name `crate::<wing>` only for a wing
/// of a lower rank, or its own; wings of one rank stay independent of each other.
/// The last ones ([`BINARY_WINGS`]) are modules of the binary (`src/main.rs`), not of
/// the library: they reach the library as `memdir::…`, its public API only (the
/// compiler refuses the rest), and `crate::` names only each other.
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

/// The wings that are modules of the binary: `src/main.rs` declares them, `src/lib.rs`
/// does not (spec/architecture.md#the-binary-and-the-library).
const BINARY_WINGS: &[&str] = &["mcp", "cli"];

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

/// Whether `text` (a crate root) declares the module `name` (`mod name;` or
/// `pub mod name;`, under any `#[cfg]`).
fn declares(text: &str, name: &str) -> bool {
    text.lines().any(|l| {
        let l = l.trim();
        let l = l.strip_prefix("pub ").unwrap_or(l);
        let l = l.strip_prefix("pub(crate) ").unwrap_or(l);
        l == format!("mod {name};")
    })
}

/// What is wrong with where the front ends live, given the text of `lib.rs` and
/// `main.rs`: each binary wing is a module of the binary and none of the library.
fn front_end_misplaced(lib: &str, main: &str) -> Vec<String> {
    let mut out = Vec::new();
    for wing in BINARY_WINGS {
        if declares(lib, wing) {
            out.push(format!("src/lib.rs declares `{wing}`: the front ends are modules of the binary, using the library's public API"));
        }
        if !declares(main, wing) {
            out.push(format!("src/main.rs does not declare `mod {wing};`"));
        }
    }
    out
}

#[test]
fn the_front_ends_live_in_the_binary() {
    // spec/architecture.md#the-binary-and-the-library (ripgrep's split): the CLI and
    // the MCP server see only what an embedder sees.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let main = std::fs::read_to_string(src.join("main.rs")).unwrap();
    let problems = front_end_misplaced(&lib, &main);
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
    // The check bites: the layout before the split is refused on both counts.
    let before = front_end_misplaced(
        "#[cfg(feature = \"cli\")]\npub mod cli;\n#[cfg(feature = \"mcp\")]\npub mod mcp;\n",
        "fn main() {\n    std::process::exit(memdir::cli::main());\n}\n",
    );
    assert_eq!(before.len(), 4, "{before:?}");
    assert!(
        front_end_misplaced(
            "mod clock;\n",
            "mod cli;\n#[cfg(feature = \"mcp\")]\nmod mcp;\n"
        )
        .is_empty()
    );
}

/// The lints `src/lib.rs` turns on for the library's public surface (CI's clippy runs
/// with `-D warnings`, so each is an error there): issue 28's "a small public API".
const LIBRARY_LINTS: &[&str] = &["unreachable_pub", "missing_docs"];

/// The lints of [`LIBRARY_LINTS`] that the crate-level `#![warn(…)]` of `lib` lacks.
fn lints_missing(lib: &str) -> Vec<&'static str> {
    let on: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("#![warn("))
        .flat_map(|l| l.trim_end_matches(")]").split(','))
        .map(str::trim)
        .collect();
    LIBRARY_LINTS
        .iter()
        .copied()
        .filter(|l| !on.contains(l))
        .collect()
}

#[test]
fn the_library_lints_its_public_surface() {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    assert_eq!(lints_missing(&lib), Vec::<&str>::new());
    assert_eq!(lints_missing("//! x\nmod clock;\n"), LIBRARY_LINTS);
    assert!(lints_missing("#![warn(missing_debug_implementations)]\n") == LIBRARY_LINTS);
    assert_eq!(
        lints_missing("#![warn(unreachable_pub)]\n"),
        ["missing_docs"]
    );
    // No module of the library opts out of them.
    let exempt: Vec<String> = sources()
        .into_iter()
        .filter(|(_, text)| exempts_itself(text))
        .map(|(rel, _)| format!("src/{}", rel.display()))
        .collect();
    assert!(exempt.is_empty(), "allows a library lint: {exempt:?}");
    assert!(exempts_itself(
        "#[allow(unreachable_pub, missing_docs)]\nmod retrieval;\n"
    ));
    assert!(exempts_itself("#![allow(missing_docs)]\n"));
    assert!(!exempts_itself("#![allow(dead_code)]\n"));
}

/// Whether a source turns off one of [`LIBRARY_LINTS`] for something in it.
fn exempts_itself(text: &str) -> bool {
    text.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with('#')
            && l.contains("allow(")
            && LIBRARY_LINTS.iter().any(|lint| l.contains(lint))
    })
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

/// One promised absence: code that matches any of `needles` appears only in the
/// files under `allowed` (a path under `src/`: a folder ending in `/` or one file).
/// Test code (a top-level `#[cfg(test)]` item to the end of the file, or a file
/// named `tests.rs`) is exempt: tests plant files and read the clock to check the
/// code under them.
struct Absence {
    name: &'static str,
    needles: &'static [&'static str],
    allowed: &'static [&'static str],
    /// Whether string literals count (a path is a string; a needle like `std::fs`
    /// is code, and help text that names it is not a use).
    in_strings: bool,
}

/// The absences of spec/architecture.md#what-is-absent-on-purpose, each with the
/// places allowed to break it.
const ABSENCES: &[Absence] = &[
    Absence {
        // Only the store touches the memory directory; files outside it are read
        // where they belong.
        name: "the disk",
        needles: &["std::fs", "tokio::fs"],
        allowed: &[
            "store/",                // the memory directory
            "provider/folder.rs",    // the folder provider's remote
            "sync/seal/key_file.rs", // the key file
            "cli/",                  // a file the user named
            "bench/",                // a data set
        ],
        in_strings: false,
    },
    Absence {
        // Only `clock` reads the wall clock; everything below takes `now`. A
        // monotonic `Instant` (timeouts, backoff) is not the clock.
        name: "the clock",
        needles: &["SystemTime::now", "Utc::now", "Local::now"],
        allowed: &["clock.rs"],
        in_strings: false,
    },
    Absence {
        // The environment is read where a person's setting or a credential enters.
        name: "the environment",
        needles: &["env::var", "env::vars"],
        allowed: &[
            "clock.rs",        // MEMDIR_NOW
            "provider/env.rs", // provider credentials
            "embed/openai.rs", // the endpoint's key, named by `api_key_env`
            "sync/open.rs",    // MEMDIR_KEY_FILE and the default key path
            "mcp/",            // MEMDIR_SESSION
            "cli/",
            "main.rs",
        ],
        in_strings: false,
    },
    Absence {
        // Only the sync and embed wings reach the network (and the MCP server's
        // HTTP transport listens on it).
        name: "the network",
        needles: &[
            "reqwest",
            "hyper",
            "tokio::net",
            "std::net",
            "TcpStream",
            "TcpListener",
            "UdpSocket",
        ],
        allowed: &["provider/", "embed/openai.rs", "mcp/"],
        in_strings: false,
    },
    Absence {
        // Only the front ends print.
        name: "printing",
        needles: &["println!", "print!(", "dbg!(", "io::stdout", "io::stderr"],
        allowed: &["cli/", "mcp/", "main.rs"],
        in_strings: false,
    },
    Absence {
        // An error is rendered once, by `report`, for the front end that shows it.
        name: "error lines",
        needles: &["\"error: ", "\"hint: ", "\"caused by: "],
        allowed: &[
            "report.rs",
            "memory/frontmatter", // reads the YAML library's own `error:` prefix off
        ],
        in_strings: true,
    },
    Absence {
        // A user has the binary, not the repository: messages, hints and help text
        // name commands (`memdir push --help`), never a file under spec/ (comments
        // may; clap help from doc comments is checked by cli's help test).
        name: "a repository file in a message",
        needles: &["spec/"],
        allowed: &[],
        in_strings: true,
    },
    Absence {
        // Every file and folder name memdir uses is in `memory::layout`.
        name: "a `.memdir` path",
        needles: &["\".memdir"],
        allowed: &["memory/layout.rs"],
        in_strings: true,
    },
];

/// A file's lines that are code: comments dropped, test code cut off, and (unless
/// `keep_strings`) the contents of string literals blanked.
fn code_lines(rel: &Path, text: &str, keep_strings: bool) -> Vec<(usize, String)> {
    if rel.file_name().is_some_and(|n| n == "tests.rs") {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        let trimmed = line.trim_start();
        if trimmed.starts_with("//") {
            continue;
        }
        let mut code = String::new();
        let mut in_str = false;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if !in_str && c == '/' && chars.peek() == Some(&'/') {
                break;
            }
            if c == '"' {
                in_str = !in_str;
                code.push(c);
                continue;
            }
            if in_str && c == '\\' {
                if let Some(next) = chars.next()
                    && keep_strings
                {
                    code.push(c);
                    code.push(next);
                }
                continue;
            }
            if !in_str || keep_strings {
                code.push(c);
            }
        }
        out.push((n + 1, code));
    }
    out
}

/// Whether the allow-list entry `a` takes in the file `path`: a folder (`cli/`),
/// one file (`clock.rs`), or a module whichever its shape (`memory/frontmatter`
/// is `memory/frontmatter.rs` or everything under `memory/frontmatter/`).
fn allows(a: &str, path: &str) -> bool {
    if a.ends_with('/') {
        path.starts_with(a)
    } else if a.ends_with(".rs") {
        path == a
    } else {
        path == format!("{a}.rs") || path.starts_with(&format!("{a}/"))
    }
}

/// Where `rule` is broken in the file `rel` (a path under `src/`).
fn absences_broken(rule: &Absence, rel: &Path, text: &str) -> Vec<String> {
    let path = rel.to_string_lossy().replace('\\', "/");
    if rule.allowed.iter().any(|a| allows(a, &path)) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (n, code) in code_lines(rel, text, rule.in_strings) {
        if let Some(needle) = rule.needles.iter().find(|needle| code.contains(*needle)) {
            out.push(format!(
                "src/{path}:{n}: {} (`{needle}`) outside {}",
                rule.name,
                rule.allowed.join(", ")
            ));
        }
    }
    out
}

#[test]
fn every_absence_holds() {
    // spec/architecture.md#what-is-absent-on-purpose
    let mut problems = Vec::new();
    for (rel, text) in sources() {
        for rule in ABSENCES {
            problems.extend(absences_broken(rule, &rel, &text));
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

fn rule(name: &str) -> &'static Absence {
    ABSENCES.iter().find(|r| r.name == name).unwrap()
}

#[test]
fn each_absence_bites_on_a_planted_violation() {
    // Each rule, planted where it is not allowed, is caught; the same line where
    // it is allowed, in a comment or in test code is not.
    let cases: &[(&str, &str, &str, &str)] = &[
        // (rule, a place it is not allowed, the planted line, a place it is)
        (
            "the disk",
            "engine/hybrid.rs",
            "let m = std::fs::metadata(p)?;",
            "store/mod.rs",
        ),
        (
            "the disk",
            "embed/cache.rs",
            "use tokio::fs;",
            "cli/write.rs",
        ),
        (
            "the clock",
            "store/cache.rs",
            "let t = std::time::SystemTime::now();",
            "clock.rs",
        ),
        (
            "the clock",
            "engine/warm.rs",
            "let now = chrono::Utc::now();",
            "clock.rs",
        ),
        (
            "the environment",
            "engine/mod.rs",
            "let v = std::env::var(\"X\");",
            "cli/mcp.rs",
        ),
        (
            "the environment",
            "provider/kubo.rs",
            "std::env::var_os(\"HOME\")",
            "provider/env.rs",
        ),
        (
            "the network",
            "engine/hybrid.rs",
            "let c = reqwest::Client::new();",
            "provider/http.rs",
        ),
        (
            "the network",
            "store/mod.rs",
            "use std::net::TcpStream;",
            "mcp/http.rs",
        ),
        (
            "printing",
            "engine/mod.rs",
            "eprintln!(\"x\");",
            "cli/output.rs",
        ),
        (
            "printing",
            "sync/push.rs",
            "let o = std::io::stdout();",
            "mcp/mod.rs",
        ),
        (
            "error lines",
            "cli/mcp.rs",
            "out.note(&format!(\"hint: {}\", h));",
            "report.rs",
        ),
        (
            "a `.memdir` path",
            "store/mod.rs",
            "let p = \".memdir/cache\";",
            "memory/layout.rs",
        ),
    ];
    for (name, bad, line, good) in cases {
        let r = rule(name);
        let text = format!("//! x\nfn f() {{\n    {line}\n}}\n");
        let found = absences_broken(r, Path::new(bad), &text);
        assert_eq!(found.len(), 1, "{name} planted in {bad}: {found:?}");
        assert!(
            found[0].starts_with(&format!("src/{bad}:3: {name}")),
            "{found:?}"
        );
        assert!(
            absences_broken(r, Path::new(good), &text).is_empty(),
            "{name} in {good}"
        );
        let commented = format!("//! x\n// {line}\nfn f() {{}} // {line}\n");
        assert!(
            absences_broken(r, Path::new(bad), &commented).is_empty(),
            "{name} in a comment"
        );
        let in_test = format!("//! x\n#[cfg(test)]\nmod tests {{\n    {line}\n}}\n");
        assert!(
            absences_broken(r, Path::new(bad), &in_test).is_empty(),
            "{name} in test code"
        );
        assert!(absences_broken(r, Path::new("ipfs/car/tests.rs"), &text).is_empty());
    }
    // A needle that is code does not match inside a string (help text may name it);
    // a path needle does.
    let help = "//! x\nconst HELP: &str = \"files are read with std::fs\";\n";
    assert!(absences_broken(rule("the disk"), Path::new("engine/mod.rs"), help).is_empty());
    let path = "//! x\nconst P: &str = \".memdir/config.toml\";\n";
    assert_eq!(
        absences_broken(rule("a `.memdir` path"), Path::new("sync/config.rs"), path).len(),
        1
    );
    assert!(allows("memory/frontmatter", "memory/frontmatter.rs"));
    assert!(allows("memory/frontmatter", "memory/frontmatter/yaml.rs"));
    assert!(!allows("memory/frontmatter", "memory/frontmatterx.rs"));
    assert!(allows("cli/", "cli/mcp.rs") && !allows("clock.rs", "clock/x.rs"));
    // A sentence that mentions the folder is text for people, not a path.
    let prose = "//! x\nconst H: &str = \"see key_file in .memdir/config.toml\";\n";
    assert!(
        absences_broken(rule("a `.memdir` path"), Path::new("sync/error.rs"), prose).is_empty()
    );
}

#[test]
fn a_repository_file_in_a_message_is_caught() {
    // Allowed nowhere: planted in a hint it is caught; in a comment or test code not.
    let r = rule("a repository file in a message");
    let hint = "//! x\nfn f() {\n    Some(\"export X (see spec/providers.md)\".into())\n}\n";
    let found = absences_broken(r, Path::new("provider/error.rs"), hint);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("src/provider/error.rs:3: a repository file in a message"));
    let comment = "//! x\n// spec/providers.md#kubo\nfn f() {} // spec/sync.md\n";
    assert!(absences_broken(r, Path::new("provider/error.rs"), comment).is_empty());
    let test = "//! x\n#[cfg(test)]\nmod tests {\n    const S: &str = \"spec/x.md\";\n}\n";
    assert!(absences_broken(r, Path::new("cli/mod.rs"), test).is_empty());
}

/// The module paths of the files under `src/` (`engine::warm` for
/// `engine/warm.rs`, `store` for `store/mod.rs`), less `lib`, `main` and test files.
fn module_paths() -> Vec<String> {
    sources()
        .keys()
        .filter(|rel| rel.file_name().is_some_and(|n| n != "tests.rs"))
        .filter_map(|rel| {
            let s = rel.to_string_lossy().replace('\\', "/");
            let s = s.strip_suffix(".rs")?;
            let s = s.strip_suffix("/mod").unwrap_or(s);
            (s != "lib" && s != "main").then(|| s.replace('/', "::"))
        })
        .collect()
}

/// The modules the code map of spec/architecture.md names: each row's first cell,
/// where `a::b` is a path and a bare `c` after it is a sibling (`sync::state`,
/// `listing`, `remote` names `sync::listing` and `sync::remote` too).
fn code_map(spec: &str) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    let Some(start) = spec.find("## Code map") else {
        return names;
    };
    let section = &spec[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    for row in section.lines().filter(|l| l.starts_with("| `")) {
        let cell = row[1..].split(" | ").next().unwrap_or_default();
        // `embed::openai` (feature `sync`): what stands in brackets is no module.
        let cell = cell.split(" (").next().unwrap_or_default();
        // `embed::openai` (feature `sync`): what stands in brackets is no module.
        let cell = cell.split(" (").next().unwrap_or_default();
        let mut parent = String::new();
        for name in cell.split('`').skip(1).step_by(2) {
            let name = name.trim();
            if let Some((p, _)) = name.rsplit_once("::") {
                parent = p.to_string();
                names.insert(name.to_string());
            } else if parent.is_empty() {
                names.insert(name.to_string());
            } else {
                names.insert(format!("{parent}::{name}"));
            }
        }
    }
    names
}

#[test]
fn every_module_is_in_the_code_map() {
    // spec/architecture.md#code-map names every module under src/.
    let spec =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("spec/architecture.md"))
            .unwrap();
    let map = code_map(&spec);
    // `cli::*` covers the command modules, one per command.
    let covered = |m: &String| {
        map.contains(m)
            || m.rsplit_once("::")
                .is_some_and(|(parent, _)| map.contains(&format!("{parent}::*")))
    };
    let missing: Vec<String> = module_paths().into_iter().filter(|m| !covered(m)).collect();
    assert!(
        missing.is_empty(),
        "modules missing from spec/architecture.md#code-map: {missing:?}"
    );
}

#[test]
fn the_code_map_reader_sees_grouped_rows() {
    let spec = "## Code map\n\n| module | owns |\n|---|---|\n| `sync::state`, `listing`, `remote` | x |\n| `clock` | y |\n| `ipfs::unixfs`, `ipfs::car` | z |\n| `embed::openai` (feature `sync`) | v |\n\n## Next\n| `nope` | w |\n";
    let map = code_map(spec);
    let want = [
        "clock",
        "embed::openai",
        "ipfs::car",
        "ipfs::unixfs",
        "sync::listing",
        "sync::remote",
        "sync::state",
    ];
    assert_eq!(map.into_iter().collect::<Vec<_>>(), want);
}

/// The longest a file under `src/` may be, in lines, without a stated reason: a room
/// read in one sitting (spec/architecture.md#code-map).
const MAX_FILE_LINES: usize = 800;
/// The longest a function may be, in lines, without a stated reason.
const MAX_FN_LINES: usize = 100;

/// Files allowed over [`MAX_FILE_LINES`], and why.
const LONG_FILES: &[(&str, &str)] = &[(
    "ipfs/unixfs/tests.rs",
    "test data: the reference importers' vectors and the decoder's refusals, one case per block",
)];

/// Functions (`file:name`) allowed over [`MAX_FN_LINES`], and why.
const LONG_FNS: &[(&str, &str)] = &[];

/// The functions of a file's code (test code left out, as for the absences) longer
/// than `max` lines: `(first line, name, lines)`.
fn long_fns(rel: &Path, text: &str, max: usize) -> Vec<(usize, String, usize)> {
    let lines = code_lines(rel, text, false);
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let (n, code) = &lines[i];
        let Some(name) = fn_name(code) else {
            i += 1;
            continue;
        };
        // Count braces (char literals such as '{' blanked) to the body's end.
        let (mut depth, mut started, mut j) = (0i64, false, i);
        while j < lines.len() {
            let l = lines[j].1.replace("'{'", "").replace("'}'", "");
            for c in l.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        started = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if (started && depth <= 0) || (!started && l.trim_end().ends_with(';')) {
                break;
            }
            j += 1;
        }
        let len = lines.get(j).map_or(0, |(m, _)| m + 1 - n);
        if len > max {
            out.push((*n, name, len));
        }
        i += 1;
    }
    out
}

/// The name of the function a line of code starts, if it starts one.
fn fn_name(code: &str) -> Option<String> {
    let mut words = code.split_whitespace().peekable();
    while let Some(w) = words.next() {
        match w {
            "fn" => {
                let name: String = words
                    .next()?
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                return (!name.is_empty()).then_some(name);
            }
            "pub" | "async" | "const" | "unsafe" | "extern" => {}
            w if w.starts_with("pub(") => {}
            _ => return None,
        }
    }
    None
}

#[test]
fn rooms_can_be_read_in_one_sitting() {
    // issue 28: no file over about 800 lines and no function over about 100 without
    // a stated reason (the lists above).
    let mut problems = Vec::new();
    for (rel, text) in sources() {
        let path = rel.to_string_lossy().replace('\\', "/");
        let n = text.lines().count();
        if n > MAX_FILE_LINES && !LONG_FILES.iter().any(|(f, _)| *f == path) {
            problems.push(format!("src/{path}: {n} lines (over {MAX_FILE_LINES}; split it, or state why in LONG_FILES)"));
        }
        for (line, name, len) in long_fns(&rel, &text, MAX_FN_LINES) {
            let id = format!("{path}:{name}");
            if !LONG_FNS.iter().any(|(f, _)| *f == id) {
                problems.push(format!("src/{path}:{line}: fn {name} is {len} lines (over {MAX_FN_LINES}; split it, or state why in LONG_FNS)"));
            }
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn the_length_checker_measures_functions() {
    let body = |n: usize| {
        (0..n)
            .map(|i| format!("    let x{i} = '{{';\n"))
            .collect::<String>()
    };
    let text = format!(
        "//! x\npub(crate) fn short() {{\n{}}}\nasync fn long(a: u8)\n    -> u8\n{{\n{}}}\nfn decl();\n#[cfg(test)]\nfn in_test() {{\n{}}}\n",
        body(3),
        body(120),
        body(200)
    );
    let found = long_fns(Path::new("x.rs"), &text, 100);
    assert_eq!(found, [(7, "long".to_string(), 124)]);
    assert_eq!(
        fn_name("    pub(super) async fn go<T>(x: T) {"),
        Some("go".into())
    );
    assert_eq!(fn_name("let f = |x| x; // fn not"), None);
}

/// The crates the Python package's build needs of the root crate's: every required
/// dependency of `memdir` and those of the `sync` feature (python/Cargo.toml builds
/// memdir with `default-features = false, features = ["sync"]`).
fn python_build_deps(manifest: &str) -> std::collections::BTreeSet<String> {
    let doc: toml::Table = manifest.parse().expect("Cargo.toml parses");
    let mut out = std::collections::BTreeSet::new();
    for (name, spec) in doc["dependencies"].as_table().expect("[dependencies]") {
        let optional = spec.get("optional").and_then(|o| o.as_bool()) == Some(true);
        if !optional {
            out.insert(name.clone());
        }
    }
    for feature in doc["features"]["sync"].as_array().expect("feature sync") {
        if let Some(dep) = feature.as_str().and_then(|f| f.strip_prefix("dep:")) {
            out.insert(dep.to_string());
        }
    }
    out
}

/// The dependencies python/Cargo.lock records for `memdir` (a name, or `name version`
/// when the lock holds two versions).
fn locked_memdir_deps(lock: &str) -> std::collections::BTreeSet<String> {
    let doc: toml::Table = lock.parse().expect("Cargo.lock parses");
    let packages = doc["package"].as_array().expect("[[package]]");
    let memdir = packages
        .iter()
        .find(|p| p["name"].as_str() == Some("memdir"))
        .expect("memdir in the lock");
    memdir["dependencies"]
        .as_array()
        .map(|deps| {
            deps.iter()
                .filter_map(|d| d.as_str()?.split(' ').next().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_python_lock_follows_the_root_dependencies() {
    // spec/python.md#building: python/ is built --locked with its own Cargo.lock, so a
    // dependency added to the root must reach that lock too, or CI's Python suite fails.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let lock = std::fs::read_to_string(root.join("python/Cargo.lock")).unwrap();
    let locked = locked_memdir_deps(&lock);
    let missing: Vec<String> = python_build_deps(&manifest)
        .into_iter()
        .filter(|d| !locked.contains(d))
        .collect();
    assert!(
        missing.is_empty(),
        "python/Cargo.lock lacks {missing:?}: run `cargo check --manifest-path python/Cargo.toml` (without --locked) and commit python/Cargo.lock"
    );
}

#[test]
fn the_python_lock_check_sees_a_missing_crate() {
    let manifest = "[dependencies]\na = \"1\"\nb = { version = \"1\", optional = true }\nc = { version = \"1\", optional = true }\n[features]\nsync = [\"dep:c\"]\n";
    assert_eq!(
        python_build_deps(manifest).into_iter().collect::<Vec<_>>(),
        ["a", "c"]
    );
    let lock = "[[package]]\nname = \"memdir\"\nversion = \"0.1.0\"\ndependencies = [\"a\", \"d 0.2.0\"]\n";
    assert_eq!(
        locked_memdir_deps(lock).into_iter().collect::<Vec<_>>(),
        ["a", "d"]
    );
}
