//! push / pull / sync / status through the CLI (spec/sync.md), two or three "devices"
//! (memory directories) sharing one remote. The `folder` provider (a directory of CAR
//! files and head pointers) runs everywhere; the `node` module repeats the essentials
//! against a real js-ipfs node when IPFS_API is set (ci/ipfs-node/run-tests.sh).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cid::Cid;
use serde_json::Value;

use crate::common::{memdir, run, stderr, stdout, tree};

mod conflicts;
mod foreign;
mod hostile;
mod races;
mod rotate;
mod state;

/// A memory directory on one "device", syncing through `remote`.
struct Device {
    dir: PathBuf,
    remote: PathBuf,
    key: Option<PathBuf>,
    home: PathBuf,
}

impl Device {
    fn new(root: &Path, name: &str, remote: &Path) -> Device {
        let home = root.join(format!("{name}-home"));
        std::fs::create_dir_all(&home).unwrap();
        Device {
            dir: root.join(name),
            remote: remote.to_path_buf(),
            key: None,
            home,
        }
    }

    fn cmd(&self) -> Command {
        let mut c = memdir(&self.dir);
        c.env("MEMDIR_FOLDER", &self.remote);
        c.env("HOME", &self.home);
        c.env_remove("XDG_CONFIG_HOME");
        c.env_remove("MEMDIR_OFFLINE");
        for v in [
            "IPFS_API",
            "PINATA_JWT",
            "FILEBASE_KEY",
            "WEB3_STORAGE_TOKEN",
        ] {
            c.env_remove(v);
        }
        match &self.key {
            Some(k) => c.env("MEMDIR_KEY_FILE", k),
            None => c.env_remove("MEMDIR_KEY_FILE"),
        };
        c
    }

    /// Runs `memdir <args>` and returns the output.
    fn run(&self, args: &[&str]) -> Output {
        run(self.cmd().args(args))
    }

    /// Runs `memdir <args>`, asserting success.
    fn ok(&self, args: &[&str]) -> Output {
        let o = self.run(args);
        assert!(
            o.status.success(),
            "memdir {args:?} in {}: exit {:?}\n{}{}",
            self.dir.display(),
            o.status.code(),
            stdout(&o),
            stderr(&o)
        );
        o
    }

    /// Runs `memdir <args>` with `MEMDIR_OFFLINE` set, asserting success.
    fn ok_env(&self, args: &[&str], offline: &str) -> Output {
        let o = run(self.cmd().env("MEMDIR_OFFLINE", offline).args(args));
        assert!(
            o.status.success(),
            "MEMDIR_OFFLINE={offline} memdir {args:?}: exit {:?}\n{}",
            o.status.code(),
            stderr(&o)
        );
        o
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut a = vec!["--json"];
        a.extend_from_slice(args);
        serde_json::from_str(&stdout(&self.ok(&a))).expect("JSON output")
    }

    /// A person editing a memory file (or deleting it with `None`).
    fn edit(&self, key: &str, body: Option<&str>) {
        let path = self.dir.join(format!("{key}.md"));
        match body {
            Some(b) => std::fs::write(path, memory_text(key, b)).unwrap(),
            None => std::fs::remove_file(path).unwrap(),
        }
    }

    /// The memory files (`*.md` except MEMORY.md) with their bodies.
    fn memories(&self) -> Vec<(String, String)> {
        tree(&self.dir)
            .into_iter()
            .filter(|(p, _)| p.ends_with(".md") && p != "MEMORY.md" && !p.contains('/'))
            .map(|(p, b)| {
                let text = String::from_utf8(b).unwrap();
                let body = text
                    .splitn(3, "---\n")
                    .nth(2)
                    .unwrap_or("")
                    .trim()
                    .to_string();
                (p.trim_end_matches(".md").to_string(), body)
            })
            .collect()
    }

    fn conflict_copies(&self) -> Vec<String> {
        let dir = self.dir.join("conflicts");
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .map(|rd| {
                rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// Everything in the directory, `.memdir/` included, for "nothing changed" checks.
    fn snapshot(&self) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        for e in walkdir::WalkDir::new(&self.dir).sort_by_file_name() {
            let e = e.unwrap();
            if e.file_type().is_file() && !e.path().ends_with(".memdir/lock") {
                let rel = e.path().strip_prefix(&self.dir).unwrap();
                out.push((rel.display().to_string(), std::fs::read(e.path()).unwrap()));
            }
        }
        out
    }
}

fn memory_text(key: &str, body: &str) -> String {
    format!(
        "---\nname: {key}\ndescription: about {key}\ntype: user\ncreated: 2026-04-01\nupdated: 2026-04-01\n---\n{body}\n"
    )
}

fn code(o: &Output) -> Option<i32> {
    o.status.code()
}

/// Two devices on one folder remote: A pushed `base`, B pulled it.
fn two_devices(base: &[(&str, &str)]) -> (tempfile::TempDir, Device, Device) {
    let tmp = tempfile::tempdir().unwrap();
    let remote = tmp.path().join("remote");
    let a = Device::new(tmp.path(), "a", &remote);
    let b = Device::new(tmp.path(), "b", &remote);
    for d in [&a, &b] {
        d.ok(&["init", "--provider", "folder"]);
    }
    for (k, v) in base {
        a.edit(k, Some(v));
    }
    a.ok(&["sync"]);
    b.ok(&["sync"]);
    assert_eq!(a.memories(), b.memories());
    (tmp, a, b)
}

type Edits = &'static [(&'static str, Option<&'static str>)];

// spec/sync.md#three-way-merge-case-table, through the executor: A changes and syncs,
// B changes and syncs with the strategy, then A syncs again and both converge.
#[test]
fn merge_cases_converge() {
    struct Case {
        row: &'static str,
        base: &'static [(&'static str, &'static str)],
        a: Edits,
        b: Edits,
        strategy: &'static str,
        /// B's memories after its sync (and A's after the final sync).
        expect: &'static [(&'static str, &'static str)],
        /// Conflict copies B keeps.
        copies: usize,
    }
    let cases = [
        Case {
            row: "2 remote edit taken",
            base: &[("x", "1")],
            a: &[("x", Some("2"))],
            b: &[],
            strategy: "merge",
            expect: &[("x", "2")],
            copies: 0,
        },
        Case {
            row: "3 local edit kept",
            base: &[("x", "1"), ("y", "1")],
            a: &[("y", Some("2"))],
            b: &[("x", Some("2"))],
            strategy: "merge",
            expect: &[("x", "2"), ("y", "2")],
            copies: 0,
        },
        Case {
            row: "4 same edit converges",
            base: &[("x", "1")],
            a: &[("x", Some("2"))],
            b: &[("x", Some("2"))],
            strategy: "merge",
            expect: &[("x", "2")],
            copies: 0,
        },
        Case {
            row: "5 conflict, merge keeps local",
            base: &[("x", "1")],
            a: &[("x", Some("2"))],
            b: &[("x", Some("3"))],
            strategy: "merge",
            expect: &[("x", "3")],
            copies: 1,
        },
        Case {
            row: "5 conflict, replace takes remote",
            base: &[("x", "1")],
            a: &[("x", Some("2"))],
            b: &[("x", Some("3"))],
            strategy: "replace",
            expect: &[("x", "2")],
            copies: 1,
        },
        Case {
            row: "6 forget propagates",
            base: &[("x", "1"), ("y", "1")],
            a: &[("x", None)],
            b: &[],
            strategy: "merge",
            expect: &[("y", "1")],
            copies: 0,
        },
        Case {
            row: "7 local forget stays",
            base: &[("x", "1"), ("y", "1")],
            a: &[("y", Some("2"))],
            b: &[("x", None)],
            strategy: "merge",
            expect: &[("y", "2")],
            copies: 0,
        },
        Case {
            row: "9 remote edit beats local delete",
            base: &[("x", "1")],
            a: &[("x", Some("2"))],
            b: &[("x", None)],
            strategy: "merge",
            expect: &[("x", "2")],
            copies: 0,
        },
        Case {
            row: "10 local edit beats remote delete",
            base: &[("x", "1")],
            a: &[("x", None)],
            b: &[("x", Some("3"))],
            strategy: "replace",
            expect: &[("x", "3")],
            copies: 0,
        },
        Case {
            row: "11 remote add",
            base: &[],
            a: &[("z", Some("1"))],
            b: &[],
            strategy: "merge",
            expect: &[("z", "1")],
            copies: 0,
        },
        Case {
            row: "14 added on both sides",
            base: &[("x", "1")],
            a: &[("z", Some("1"))],
            b: &[("z", Some("2"))],
            strategy: "merge",
            expect: &[("x", "1"), ("z", "2")],
            copies: 1,
        },
    ];
    for c in cases {
        let (_tmp, a, b) = two_devices(c.base);
        for (k, v) in c.a {
            a.edit(k, *v);
        }
        a.ok(&["sync"]);
        for (k, v) in c.b {
            b.edit(k, *v);
        }
        b.ok(&["sync", "--strategy", c.strategy]);
        let want: Vec<(String, String)> = c
            .expect
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(b.memories(), want, "row {}: B", c.row);
        assert_eq!(b.conflict_copies().len(), c.copies, "row {}: copies", c.row);
        a.ok(&["sync"]);
        assert_eq!(a.memories(), want, "row {}: A after its next sync", c.row);
        assert_eq!(
            tree(&a.dir),
            tree(&b.dir),
            "row {}: A and B converge (index included)",
            c.row
        );
        // Nothing is left unpushed on either side, and a conflict is listed by status
        // and check.
        for d in [&a, &b] {
            let st = d.json(&["status"]);
            assert_eq!(st["unpushed"], Value::Array(vec![]), "row {}: {st}", c.row);
        }
        if c.copies > 0 {
            let st = b.json(&["status"]);
            assert_eq!(st["conflicts"].as_array().unwrap().len(), c.copies);
            let check = b.run(&["check"]);
            assert!(
                (stdout(&check) + &stderr(&check)).contains("conflict copy"),
                "row {}: {}{}",
                c.row,
                stdout(&check),
                stderr(&check)
            );
        }
    }
}

// The losing version of a conflict is kept byte for byte, and the next sync does not
// undo the resolution (the merged result was recorded as the base when it was pushed).
#[test]
fn conflict_copy_holds_the_other_version_and_stays_resolved() {
    let (_tmp, a, b) = two_devices(&[("x", "1")]);
    a.edit("x", Some("from A"));
    a.ok(&["sync"]);
    b.edit("x", Some("from B"));
    b.ok(&["sync"]);
    let copies = b.conflict_copies();
    assert_eq!(copies.len(), 1);
    assert!(
        copies[0].starts_with("x.") && copies[0].ends_with(".md"),
        "{copies:?}"
    );
    let copy = std::fs::read_to_string(b.dir.join("conflicts").join(&copies[0])).unwrap();
    assert_eq!(copy, memory_text("x", "from A"));
    let again = b.json(&["sync"]);
    assert_eq!(again["pulled"], Value::Null);
    assert_eq!(again["pushed"]["up_to_date"], true);
    a.ok(&["sync"]);
    assert_eq!(a.memories(), vec![("x".to_string(), "from B".to_string())]);
}

// spec/sync.md#line-wise-merge (row 5a), through the executor and the folder
// provider: two devices that each add a link and a tag to the same memory both keep
// theirs, with no conflict copy, and converge.
#[test]
fn links_and_tags_added_on_two_devices_both_stay() {
    let (_tmp, a, b) = two_devices(&[("x", "Body."), ("y", "Y."), ("z", "Z.")]);
    a.ok(&["link", "x", "knows", "y"]);
    a.ok(&["edit", "x", "--tag", "from_a"]);
    a.ok(&["sync"]);
    b.ok(&["link", "x", "works_at", "z", "--context", "since 2024"]);
    b.ok(&["edit", "x", "--tag", "from_b"]);
    let report = b.json(&["sync"]);
    assert!(b.conflict_copies().is_empty(), "{report}");
    a.ok(&["sync"]);
    assert!(a.conflict_copies().is_empty());
    assert_eq!(a.memories(), b.memories());
    let text = std::fs::read_to_string(b.dir.join("x.md")).unwrap();
    let parsed = memdir::memory::frontmatter::parse(&text).unwrap();
    assert_eq!(parsed.meta.tags, vec!["from_b", "from_a"], "{text}");
    assert_eq!(
        parsed.body, "Body.\n- works_at:: [[z]] (since 2024)\n- knows:: [[y]]",
        "{text}"
    );
    let graph = a.json(&["graph", "x", "--out"]);
    assert_eq!(graph["edges"].as_array().unwrap().len(), 2, "{graph}");
}

// Timelines are unioned line by line, without duplicates; MEMORY.md is rebuilt.
#[test]
fn timelines_union_and_index_is_rebuilt() {
    let (_tmp, a, b) = two_devices(&[("x", "1")]);
    a.ok(&["note", "seen", "who=a"]);
    a.ok(&["sync"]);
    b.ok(&["note", "seen", "who=b"]);
    b.edit("y", Some("new on B"));
    b.ok(&["sync"]);
    a.ok(&["sync"]);
    for d in [&a, &b] {
        let day = std::fs::read_to_string(d.dir.join("timeline/2026-04-14.jsonl")).unwrap();
        let lines: Vec<&str> = day.lines().collect();
        assert_eq!(lines.len(), 2, "{day}");
        assert!(
            day.contains("\"who\":\"a\"") && day.contains("\"who\":\"b\""),
            "{day}"
        );
        let index = std::fs::read_to_string(d.dir.join("MEMORY.md")).unwrap();
        assert!(index.contains("y.md"), "{index}");
    }
}

// push prints the same root `memdir cid` computes; a pull on an empty device
// reproduces every file byte for byte.
#[test]
fn push_then_pull_reproduces_the_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = tmp.path().join("remote");
    let a = Device::new(tmp.path(), "a", &remote);
    crate::common::copy_tree(&crate::common::fixture("example"), &a.dir);
    a.ok(&["index"]);
    let cid = stdout(&a.ok(&["cid"])).trim().to_string();
    let pushed = a.json(&["push", "--provider", "folder"]);
    assert_eq!(pushed["root"], cid.as_str());
    assert_eq!(pushed["car_bytes"], pushed["full_car_bytes"]);
    let b = Device::new(tmp.path(), "b", &remote);
    let out = b.ok(&["pull", &cid, "--provider", "folder", "--create"]);
    assert!(stdout(&out).contains("first sync"), "{}", stdout(&out));
    assert_eq!(tree(&a.dir), tree(&b.dir));
    assert_eq!(stdout(&b.ok(&["cid"])).trim(), cid);
    let st = b.json(&["status"]);
    assert_eq!(st["base"]["root"], cid.as_str());
    assert_eq!(st["base"]["via"], "pull");
    // Pushing the same version again sends nothing.
    let again = a.json(&["push", "--provider", "folder"]);
    assert_eq!(again["up_to_date"], true);
}

// spec/sync.md#content-addressing-memdir-cid-srcipfsunixfsrs: a folder holding no file
// (nor one holding only empty folders) is not part of the memory, so `cid`, `push`
// and `status` agree with what `pull` recreates and two devices settle.
#[test]
fn empty_folders_are_not_part_of_the_memory() {
    let (_tmp, a, b) = two_devices(&[("one", "1")]);
    let before = stdout(&a.ok(&["cid"])).trim().to_string();
    std::fs::create_dir_all(a.dir.join("empty")).unwrap();
    std::fs::create_dir_all(a.dir.join("outer/inner")).unwrap();
    assert_eq!(
        stdout(&a.ok(&["cid"])).trim(),
        before,
        "empty folders change the CID"
    );
    let st = a.json(&["status"]);
    assert_eq!(st["local_root"], before.as_str());
    assert_eq!(st["unpushed"], serde_json::json!([]));
    a.edit("two", Some("2"));
    a.ok(&["sync"]);
    b.ok(&["sync"]);
    let root = |d: &Device| d.json(&["status"])["local_root"].clone();
    assert_eq!(root(&a), root(&b));
    let head = || std::fs::read_to_string(a.remote.join("heads/default")).unwrap();
    assert_eq!(head().trim(), root(&a).as_str().unwrap());
    let h = head();
    for d in [&a, &b, &a] {
        d.ok(&["sync"]);
        assert_eq!(head(), h, "a second sync pushed a new version");
    }
    assert_eq!(a.json(&["status"])["unpushed"], serde_json::json!([]));
}

// spec/providers.md#folder: CARs, heads and lineage files are written 0644 (less what
// the umask takes away), so other accounts on a shared drive can read them; in
// encrypted mode the CAR is a sealed blob, so 0644 is safe there too.
#[cfg(unix)]
#[test]
fn folder_files_are_readable_by_other_accounts() {
    use std::os::unix::fs::PermissionsExt;
    let (tmp, a, _b) = two_devices(&[("x", "1")]);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    // What the umask leaves of 0666 for a plain new file, to compare against.
    let probe = tmp.path().join("probe");
    std::fs::write(&probe, "").unwrap();
    let want = 0o644 & mode(&probe);
    let mut seen = 0;
    for sub in ["cars", "heads", "lineage"] {
        for e in std::fs::read_dir(a.remote.join(sub)).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() {
                assert_eq!(mode(&p), want, "{}", p.display());
                seen += 1;
            }
        }
    }
    assert!(seen >= 3, "a CAR, a head and a lineage file: {seen}");
}

// `pull --dry-run` plans and writes nothing.
#[test]
fn dry_run_writes_nothing() {
    let (_tmp, a, b) = two_devices(&[("x", "1")]);
    a.edit("x", Some("2"));
    let root = a.json(&["push"])["root"].as_str().unwrap().to_string();
    let before = b.snapshot();
    let plan = b.json(&["pull", &root, "--provider", "folder", "--dry-run"]);
    assert_eq!(plan["written"], 1);
    assert_eq!(plan["decisions"][0]["outcome"], "took_remote");
    assert_eq!(b.snapshot(), before);
}

// A tampered download, a CID that is not there, a file pushed where a directory is
// expected: exit 4 or 3, and not one byte of the device changes.
#[test]
fn bad_downloads_change_nothing() {
    let (_tmp, a, b) = two_devices(&[("x", "1"), ("y", "1")]);
    a.edit("x", Some("changed on A"));
    let root = a.json(&["push"])["root"].as_str().unwrap().to_string();
    b.edit("y", Some("local edit"));
    let before = b.snapshot();
    let car = a.remote.join("cars").join(format!("{root}.car"));
    let good = std::fs::read(&car).unwrap();
    // Flip one byte in the last block of the CAR (file content).
    let mut bad = good.clone();
    let at = bad.len() - 3;
    bad[at] ^= 0x01;
    std::fs::write(&car, &bad).unwrap();
    let o = b.run(&["pull", &root]);
    assert_eq!(code(&o), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("nothing was changed"), "{}", stderr(&o));
    assert_eq!(b.snapshot(), before);
    // Truncated.
    std::fs::write(&car, &good[..good.len() / 2]).unwrap();
    let o = b.run(&["pull", &root]);
    assert_eq!(code(&o), Some(4), "{}", stderr(&o));
    assert_eq!(b.snapshot(), before);
    // Missing: a remote failure.
    std::fs::remove_file(&car).unwrap();
    let o = b.run(&["pull", &root]);
    assert_eq!(code(&o), Some(3), "{}", stderr(&o));
    assert_eq!(b.snapshot(), before);
    // Not a CID at all: usage.
    let o = b.run(&["pull", "not-a-cid"]);
    assert_eq!(code(&o), Some(2));
    assert_eq!(b.snapshot(), before);
}

// Pushing over a head this device has not pulled is refused (it would hide the other
// device's changes from the next sync); sync resolves it; --force overrides.
#[test]
fn push_refuses_an_unpulled_head() {
    let (_tmp, a, b) = two_devices(&[("x", "1")]);
    a.edit("x", Some("A"));
    a.ok(&["push"]);
    b.edit("y", Some("B"));
    let o = b.run(&["push"]);
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("memdir sync"), "{}", stderr(&o));
    let st = b.json(&["status"]);
    assert_eq!(st["unpushed"][0]["path"], "y.md");
    b.ok(&["sync"]);
    assert_eq!(
        b.memories(),
        vec![("x".into(), "A".into()), ("y".into(), "B".into())]
    );
    // A is now behind; --force publishes anyway.
    a.edit("z", Some("forced"));
    assert_eq!(code(&a.run(&["push"])), Some(1));
    a.ok(&["push", "--force"]);
}

// In ipfs mode write / forget / note push by themselves; --offline does not; a failed
// push keeps the local change, exits 0 with a warning, and status lists it.
#[test]
fn push_after_write() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = tmp.path().join("remote");
    let a = Device::new(tmp.path(), "a", &remote);
    a.ok(&["init", "--mode", "ipfs", "--provider", "folder"]);
    let write = [
        "write",
        "user_role",
        "--name",
        "Role",
        "--type",
        "user",
        "--description",
        "d",
        "--body",
        "b1",
    ];
    let o = a.ok(&write);
    assert!(stderr(&o).contains("pushed"), "{}", stderr(&o));
    let head = |d: &Device| std::fs::read_to_string(d.remote.join("heads/default")).unwrap();
    assert_eq!(head(&a).trim(), stdout(&a.ok(&["cid"])).trim());
    let h1 = head(&a);
    a.ok(&["note", "--offline", "seen"]);
    assert_eq!(head(&a), h1, "--offline must not push");
    // spec/cli.md#commands: MEMDIR_OFFLINE takes 1/0, true/false, yes/no.
    for on in ["1", "true", "yes"] {
        a.ok_env(&["note", "seen", &format!("offline={on}")], on);
        assert_eq!(head(&a), h1, "MEMDIR_OFFLINE={on} must not push");
    }
    let o = run(a.cmd().env("MEMDIR_OFFLINE", "maybe").args(["note", "x"]));
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("'maybe' for '--offline': expected 1 or 0"),
        "{}",
        stderr(&o)
    );
    a.ok_env(&["note", "seen", "offline=0"], "0");
    assert_ne!(head(&a), h1, "MEMDIR_OFFLINE=0 pushes");
    let h1 = head(&a);
    a.ok_env(&["note", "seen", "offline=empty"], "");
    assert_ne!(head(&a), h1, "an empty MEMDIR_OFFLINE pushes");
    let h1 = head(&a);
    a.ok(&["note", "seen", "again=1"]);
    assert_ne!(head(&a), h1, "note pushes");
    a.ok(&["forget", "user_role"]);
    assert_eq!(head(&a).trim(), stdout(&a.ok(&["cid"])).trim());
    // Break the remote: the folder is now a file.
    std::fs::remove_dir_all(&remote).unwrap();
    std::fs::write(&remote, b"not a folder").unwrap();
    let mut w2 = write;
    w2[9] = "b2";
    let o = a.run(&w2);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("saved locally but was not pushed"),
        "{}",
        stderr(&o)
    );
    assert!(a.dir.join("user_role.md").is_file());
    let st = a.json(&["status"]);
    assert_eq!(st["unpushed"][0]["path"], "user_role.md");
    assert_eq!(st["unpushed"][0]["change"], "added");
}

// Pins beyond keep_versions are removed after a push.
#[test]
fn old_versions_are_unpinned() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = tmp.path().join("remote");
    let a = Device::new(tmp.path(), "a", &remote);
    a.ok(&["init", "--provider", "folder"]);
    let cfg = a.dir.join(".memdir/config.toml");
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    text.push_str("keep_versions = 2\n");
    std::fs::write(&cfg, text).unwrap();
    let mut roots = Vec::new();
    for i in 0..4 {
        a.edit("x", Some(&format!("version {i}")));
        roots.push(a.json(&["push"])["root"].as_str().unwrap().to_string());
    }
    let mut cars: Vec<String> = std::fs::read_dir(remote.join("cars"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    cars.sort();
    let mut want: Vec<String> = roots[2..].iter().map(|r| format!("{r}.car")).collect();
    want.sort();
    assert_eq!(cars, want);
    let st = a.json(&["status"]);
    assert_eq!(st["pushes"]["folder"].as_array().unwrap().len(), 2);
}

// Bad configuration names the file and line; nothing is pushed with it.
#[test]
fn bad_config_is_reported_with_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let a = Device::new(tmp.path(), "a", &tmp.path().join("remote"));
    a.ok(&["init"]);
    std::fs::write(
        a.dir.join(".memdir/config.toml"),
        "mode = \"ipfs\"\npassword = \"x\"\n",
    )
    .unwrap();
    let o = a.run(&["push"]);
    assert_eq!(code(&o), Some(1));
    assert!(stderr(&o).contains("config.toml:2"), "{}", stderr(&o));
    let o = a.run(&["push", "--provider", "nope"]);
    assert_ne!(code(&o), Some(0));
}

const LEAK: &str = "token ghp_0123456789abcdefghijABCDEFGHIJ012345";

// A push never publishes what looks like a credential: the file is named, nothing is
// sent. A remote version holding one (written by another tool) is pulled without it.
#[test]
fn secrets_are_neither_pushed_nor_pulled() {
    let (_tmp, a, b) = two_devices(&[("x", "1")]);
    a.edit("leak", Some(LEAK));
    let cars = |d: &Device| std::fs::read_dir(d.remote.join("cars")).unwrap().count();
    let n = cars(&a);
    let o = a.run(&["push"]);
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("leak.md"), "{}", stderr(&o));
    assert_eq!(cars(&a), n, "nothing was sent");
    // Another tool published a version with the leak as the head.
    let mut files: std::collections::BTreeMap<String, memdir::ipfs::unixfs::Node> =
        Default::default();
    for (path, bytes) in tree(&a.dir) {
        if !path.contains('/') {
            files.insert(path, memdir::ipfs::unixfs::Node::File(bytes));
        }
    }
    let dag = memdir::ipfs::unixfs::build(&memdir::ipfs::unixfs::Node::Dir(files)).unwrap();
    std::fs::write(
        a.remote.join("cars").join(format!("{}.car", dag.root)),
        memdir::ipfs::car::car_bytes(&dag),
    )
    .unwrap();
    std::fs::write(a.remote.join("heads/default"), format!("{}\n", dag.root)).unwrap();
    let out = b.run(&["pull", &dag.root.to_string()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("skipped leak.md"), "{}", stderr(&out));
    assert!(!b.dir.join("leak.md").exists());
}

// spec/memory-format.md#secrets: memdir's own key file, copied into the directory, is
// refused by push like any other credential.
#[test]
fn a_key_file_inside_the_directory_is_not_pushed() {
    let (_tmp, mut a, _b) = two_devices(&[("x", "1")]);
    let key = keygen(&mut a, "key");
    std::fs::copy(&key, a.dir.join("key")).unwrap();
    let cars = |d: &Device| std::fs::read_dir(d.remote.join("cars")).unwrap().count();
    let n = cars(&a);
    let o = a.run(&["push"]);
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("key contains what looks like a memdir key file secret"),
        "{}",
        stderr(&o)
    );
    assert_eq!(cars(&a), n, "nothing was sent");
}

// ---------------------------------------------------------------------------
// encrypted-ipfs through the folder provider
// ---------------------------------------------------------------------------

fn keygen(d: &mut Device, name: &str) -> PathBuf {
    let path = d.home.join(name);
    d.ok(&["keygen", "--out", path.to_str().unwrap()]);
    d.key = Some(path.clone());
    path
}

/// The sealed blob as a UnixFS file DAG stored in the folder like a push would.
fn store_blob(remote: &Path, sealed: &[u8]) -> Cid {
    let dag =
        memdir::ipfs::unixfs::build(&memdir::ipfs::unixfs::Node::File(sealed.to_vec())).unwrap();
    let car = memdir::ipfs::car::car_bytes(&dag);
    std::fs::create_dir_all(remote.join("cars")).unwrap();
    std::fs::write(remote.join("cars").join(format!("{}.car", dag.root)), car).unwrap();
    dag.root
}

fn sealed_bytes(remote: &Path, root: &str) -> Vec<u8> {
    let car = std::fs::read(remote.join("cars").join(format!("{root}.car"))).unwrap();
    let root: Cid = root.parse().unwrap();
    let blocks = memdir::ipfs::car::read_car(
        car.as_slice(),
        &root,
        &memdir::ipfs::car::CarLimits::default(),
    )
    .unwrap();
    match memdir::ipfs::unixfs::decode(&root, &blocks, &memdir::ipfs::unixfs::Limits::default())
        .unwrap()
    {
        memdir::ipfs::unixfs::Node::File(b) => b,
        _ => panic!("not a file"),
    }
}

#[test]
fn encrypted_round_trip_and_every_rejection() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = tmp.path().join("remote");
    let mut a = Device::new(tmp.path(), "a", &remote);
    let key = keygen(&mut a, "key");
    a.ok(&["init", "--mode", "encrypted-ipfs", "--provider", "folder"]);
    a.edit("user_secret_hobby", Some("Collects antique typewriters"));
    a.ok(&["note", "--offline", "met", "who=Zoltan"]);
    let pushed = a.json(&["push"]);
    let root = pushed["root"].as_str().unwrap().to_string();
    let plain = pushed["plain_root"].as_str().unwrap().to_string();
    assert_ne!(root, plain);
    assert_eq!(plain, stdout(&a.ok(&["cid"])).trim());
    // The remote holds one CAR, the sealed blob's; no plaintext anywhere in it.
    let stored: Vec<u8> = std::fs::read(remote.join("cars").join(format!("{root}.car"))).unwrap();
    for needle in [
        "user_secret_hobby",
        "antique typewriters",
        "Zoltan",
        "about user_secret_hobby",
        "MEMORY",
    ] {
        assert!(
            !contains(&stored, needle.as_bytes()),
            "{needle} in the pushed CAR"
        );
    }
    let plain_cid: Cid = plain.parse().unwrap();
    assert!(
        !contains(&stored, &plain_cid.to_bytes()),
        "plaintext CID in the pushed CAR"
    );
    assert!(!remote.join("cars").join(format!("{plain}.car")).exists());
    // status shows both roots.
    let st = a.json(&["status"]);
    assert_eq!(st["base"]["network_root"], root.as_str());
    assert_eq!(st["base"]["root"], plain.as_str());
    assert!(stdout(&a.ok(&["status"])).contains("plaintext root (local only)"));

    // A second device with the key reproduces every file byte for byte.
    let mut b = Device::new(tmp.path(), "b", &remote);
    b.key = Some(key.clone());
    b.ok(&[
        "pull",
        &root,
        "--provider",
        "folder",
        "--mode",
        "encrypted-ipfs",
        "--create",
    ]);
    assert_eq!(tree(&a.dir), tree(&b.dir));

    // Devices that must fail, with exit 4 and nothing written: another key, a flipped
    // byte in the sealed blob, a truncated blob, a box sealed by someone else.
    let mut c = Device::new(tmp.path(), "c", &remote);
    keygen(&mut c, "other-key");
    c.ok(&["init"]);
    c.edit("mine", Some("local only"));
    let before = c.snapshot();
    let pull = |d: &Device, cid: &str| {
        d.run(&[
            "pull",
            cid,
            "--provider",
            "folder",
            "--mode",
            "encrypted-ipfs",
        ])
    };
    let o = pull(&c, &root);
    assert_eq!(code(&o), Some(4), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("does not open with this key"),
        "{}",
        stderr(&o)
    );
    assert_eq!(c.snapshot(), before);

    let sealed = sealed_bytes(&remote, &root);
    let key_c = memdir::sync::seal::read_key_file(c.key.as_ref().unwrap()).unwrap();
    let b_before = b.snapshot();
    let mut flipped = sealed.clone();
    flipped[sealed.len() / 2] ^= 0x20;
    let truncated = sealed[..sealed.len() - 1].to_vec();
    let key_a = memdir::sync::seal::read_key_file(&key).unwrap();
    // A forger knows A's public key and seals a well-formed envelope of a real CAR to
    // it, but cannot compute the MAC.
    let (forged_root, forged_car) = {
        let dag = memdir::ipfs::unixfs::build(&memdir::ipfs::unixfs::Node::Dir(
            [(
                "evil.md".to_string(),
                memdir::ipfs::unixfs::Node::File(memory_text("evil", "x").into_bytes()),
            )]
            .into_iter()
            .collect(),
        ))
        .unwrap();
        (dag.root, memdir::ipfs::car::car_bytes(&dag))
    };
    let forged = crate::seal::raw_seal(
        &crate::seal::build_envelope(&forged_root, &forged_car, &[7u8; 32]),
        &key_a,
    );
    for (what, blob, needle) in [
        ("flipped byte", flipped, "does not open"),
        ("truncated", truncated, "truncated"),
        ("forged", forged.as_bytes().to_vec(), "MAC"),
    ] {
        let cid = store_blob(&remote, &blob);
        let o = pull(&b, &cid.to_string());
        assert_eq!(code(&o), Some(4), "{what}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{what}: {}", stderr(&o));
        assert_eq!(b.snapshot(), b_before, "{what}: B changed");
    }
    let _ = key_c;
    // A plain pull of the sealed root, and an encrypted pull of a plain root, are
    // refused without writing.
    let o = b.run(&["pull", &root, "--provider", "folder", "--mode", "ipfs"]);
    assert_eq!(code(&o), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("encrypted-ipfs"), "{}", stderr(&o));
    assert_eq!(b.snapshot(), b_before);
    // Without any key file: a usage error naming where it looked.
    let mut d = Device::new(tmp.path(), "d", &remote);
    d.key = Some(tmp.path().join("no-such-key"));
    d.ok(&["init"]);
    let d_before = d.snapshot();
    let o = pull(&d, &root);
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no-such-key"), "{}", stderr(&o));
    assert_eq!(d.snapshot(), d_before);
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

// ---------------------------------------------------------------------------
// The same against a real IPFS node
// ---------------------------------------------------------------------------

mod node {
    use super::*;
    use crate::providers::{ipfs_node, node_cat, run_tag};
    use crate::support::http::request;

    /// A device on the node, on a channel of its own so tests do not meet.
    fn device(root: &Path, name: &str, api: &str, channel: &str) -> Device {
        let d = Device::new(root, name, &root.join("unused-folder"));
        let o = run(d.cmd().env("IPFS_API", api).args([
            "init",
            "--provider",
            "kubo",
            "--channel",
            channel,
        ]));
        assert!(o.status.success(), "{}", stderr(&o));
        d
    }

    fn on(d: &Device, api: &str, args: &[&str]) -> Output {
        let o = run(d.cmd().env("IPFS_API", api).args(args));
        assert!(
            o.status.success(),
            "memdir {args:?}: exit {:?}\n{}{}",
            o.status.code(),
            stdout(&o),
            stderr(&o)
        );
        o
    }

    fn rpc(api: &str, cmd: &str) -> (u16, Vec<u8>) {
        request("POST", &format!("{api}/api/v0/{cmd}"), b"").expect("rpc")
    }

    /// Every block the node holds, as the CID it lists (js-ipfs lists blocks by
    /// multihash, so compare digests, not CID strings).
    fn local_refs(api: &str) -> Vec<Cid> {
        let (status, body) = rpc(api, "refs/local");
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        String::from_utf8_lossy(&body)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| v["Ref"].as_str().and_then(|r| r.parse::<Cid>().ok()))
            .collect()
    }

    fn digests(cids: &[Cid]) -> std::collections::HashSet<Vec<u8>> {
        cids.iter().map(|c| c.hash().digest().to_vec()).collect()
    }

    // Push to the node, read every file back by path through it, pull on a second
    // device, then conflicting edits and a forget on the other side, synced through
    // the node's head pointer (MFS).
    #[test]
    fn node_push_cat_pull_merge() {
        let Some(api) = ipfs_node() else { return };
        let tag = run_tag("sync");
        let channel = format!("t{}", &sha_hex(&tag)[..16]);
        let tmp = tempfile::tempdir().unwrap();
        let a = device(tmp.path(), "a", &api, &channel);
        let b = device(tmp.path(), "b", &api, &channel);
        a.edit("x", Some(&format!("x {tag}")));
        a.edit("y", Some(&format!("y {tag}")));
        a.edit("gone", Some(&format!("to forget {tag}")));
        on(
            &a,
            &api,
            &["note", "--offline", "seen", &format!("tag={tag}")],
        );
        let root: Cid = stdout(&on(&a, &api, &["push"])).trim().parse().unwrap();
        for (path, bytes) in tree(&a.dir) {
            assert_eq!(
                node_cat(&api, &root, &path),
                bytes,
                "{path} through the node"
            );
        }
        let (status, body) = rpc(&api, &format!("pin/ls?arg={root}&type=recursive"));
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        on(&b, &api, &["sync"]);
        assert_eq!(tree(&a.dir), tree(&b.dir));
        // A: edit x, forget `gone`; B: edit x differently, edit y.
        a.edit("x", Some(&format!("x from A {tag}")));
        on(&a, &api, &["forget", "--offline", "gone"]);
        let second = on(&a, &api, &["--json", "sync"]);
        let v: Value = serde_json::from_str(&stdout(&second)).unwrap();
        assert_eq!(v["pushed"]["delta"], true, "the node keeps our blocks: {v}");
        assert!(v["pushed"]["car_bytes"].as_u64() < v["pushed"]["full_car_bytes"].as_u64());
        b.edit("x", Some(&format!("x from B {tag}")));
        b.edit("y", Some(&format!("y from B {tag}")));
        on(&b, &api, &["sync"]);
        let want = vec![
            ("x".to_string(), format!("x from B {tag}")),
            ("y".to_string(), format!("y from B {tag}")),
        ];
        assert_eq!(b.memories(), want);
        assert_eq!(b.conflict_copies().len(), 1);
        on(&a, &api, &["sync"]);
        assert_eq!(a.memories(), want);
        assert_eq!(tree(&a.dir), tree(&b.dir));
        let day = std::fs::read_to_string(a.dir.join("timeline/2026-04-14.jsonl")).unwrap();
        assert!(
            day.contains("\"forgot\"") && day.contains("\"seen\""),
            "{day}"
        );
        // The node lost the base's pin (someone ran `pin rm`; the MFS head still
        // holds the blocks, so a delta would even succeed): push asks first and
        // sends the full CAR, as it must when it cannot rely on what the node keeps.
        let head = stdout(&on(&a, &api, &["cid"])).trim().to_string();
        let (status, body) = rpc(&api, &format!("pin/rm?arg={head}&recursive=true"));
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        a.edit("y", Some(&format!("y after unpin {tag}")));
        let v: Value = serde_json::from_str(&stdout(&on(&a, &api, &["--json", "push"]))).unwrap();
        assert_eq!(v["delta"], false, "{v}");
        assert_eq!(v["car_bytes"], v["full_car_bytes"], "{v}");
    }

    /// Puts the MFS head of `channel` back to `root`, as a restored backup would.
    fn set_node_head(api: &str, channel: &str, root: &str) {
        let (status, body) = rpc(
            api,
            &format!("files/rm?arg=/memdir/{channel}&recursive=true&force=true"),
        );
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        let (status, body) = rpc(
            api,
            &format!("files/cp?arg=/ipfs/{root}&arg=/memdir/{channel}"),
        );
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    }

    // spec/sync.md#lineage, #heads on the node: the issue-11 reproduction through the
    // MFS head (a version pushed over a head that was put back is merged, not used to
    // delete), then a rolled-back head is behind and nothing is applied.
    #[test]
    fn node_lost_update_is_merged_and_rollback_is_behind() {
        let Some(api) = ipfs_node() else { return };
        let tag = run_tag("lineage");
        let channel = format!("l{}", &sha_hex(&tag)[..16]);
        let tmp = tempfile::tempdir().unwrap();
        let a = device(tmp.path(), "a", &api, &channel);
        let b = device(tmp.path(), "b", &api, &channel);
        a.edit("shared", Some(&format!("shared {tag}")));
        on(&a, &api, &["sync"]);
        on(&b, &api, &["sync"]);
        let h = stdout(&on(&a, &api, &["cid"])).trim().to_string();
        a.edit("a_only", Some(&format!("a {tag}")));
        on(&a, &api, &["sync"]);
        set_node_head(&api, &channel, &h);
        b.edit("b_only", Some(&format!("b {tag}")));
        on(&b, &api, &["sync"]);
        let o = on(&a, &api, &["sync"]);
        let out = stdout(&o) + &stderr(&o);
        assert!(!out.contains("a_only.md: deleted"), "{out}");
        assert!(out.contains("diverged"), "{out}");
        let keys = |d: &Device| d.memories().into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        assert_eq!(keys(&a), vec!["a_only", "b_only", "shared"], "{out}");
        on(&b, &api, &["sync"]);
        assert_eq!(a.memories(), b.memories());
        // Back to the first version: behind on both, nothing applied.
        set_node_head(&api, &channel, &h);
        let o = on(&b, &api, &["sync"]);
        assert!(
            stderr(&o).contains("the remote is behind"),
            "{}",
            stderr(&o)
        );
        assert_eq!(keys(&b), vec!["a_only", "b_only", "shared"]);
        on(&a, &api, &["sync"]);
        assert_eq!(a.memories(), b.memories());
    }

    // spec/sync.md#heads on the node: two devices syncing at the same instant, 10
    // rounds (real processes), then two settling syncs each: nothing lost.
    #[test]
    fn node_devices_syncing_at_once_lose_nothing() {
        let Some(api) = ipfs_node() else { return };
        let tag = run_tag("race");
        let channel = format!("r{}", &sha_hex(&tag)[..16]);
        let tmp = tempfile::tempdir().unwrap();
        let devs = [
            device(tmp.path(), "a", &api, &channel),
            device(tmp.path(), "b", &api, &channel),
        ];
        let mut written = std::collections::BTreeSet::new();
        for r in 0..10 {
            for (i, d) in devs.iter().enumerate() {
                let key = format!("r{r:02}_d{i}");
                d.edit(&key, Some(&format!("{key} {tag}")));
                written.insert(key);
            }
            let children: Vec<_> = devs
                .iter()
                .map(|d| {
                    d.cmd()
                        .env("IPFS_API", &api)
                        .arg("sync")
                        .stdout(std::process::Stdio::piped())
                        .stderr(std::process::Stdio::piped())
                        .spawn()
                        .unwrap()
                })
                .collect();
            for c in children {
                let o = c.wait_with_output().unwrap();
                if !o.status.success() {
                    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
                }
            }
        }
        for _ in 0..2 {
            for d in &devs {
                on(d, &api, &["sync"]);
            }
        }
        let mut lost = 0;
        for d in &devs {
            let have: std::collections::BTreeSet<String> =
                d.memories().into_iter().map(|(k, _)| k).collect();
            lost += written.difference(&have).count();
        }
        println!(
            "node race: 2 devices, 10 rounds: {} memories, lost: {lost}",
            written.len()
        );
        assert_eq!(lost, 0);
    }

    // encrypted-ipfs on the node: no block holds any plaintext name, description or
    // body, no plaintext CID is there; a device with the key reproduces the files, a
    // device with another key cannot.
    #[test]
    fn node_encrypted_push_reveals_nothing() {
        let Some(api) = ipfs_node() else { return };
        let tag = run_tag("sealed");
        let channel = format!("e{}", &sha_hex(&tag)[..16]);
        let tmp = tempfile::tempdir().unwrap();
        let mut a = device(tmp.path(), "a", &api, &channel);
        let key = keygen(&mut a, "key");
        on(&a, &api, &["init", "--mode", "encrypted-ipfs"]);
        let secrets = [
            format!("Prefers tea over coffee {tag}"),
            format!("Daughter's piano lesson Tuesdays {tag}"),
        ];
        a.edit("user_tea", Some(&secrets[0]));
        a.edit("user_piano", Some(&secrets[1]));
        on(
            &a,
            &api,
            &["note", "--offline", "seen", &format!("tag={tag}")],
        );
        let before = digests(&local_refs(&api));
        let v: Value = serde_json::from_str(&stdout(&on(&a, &api, &["--json", "push"]))).unwrap();
        let root: Cid = v["root"].as_str().unwrap().parse().unwrap();
        let plain = v["plain_root"].as_str().unwrap().to_string();
        // Every block on the node, old and new, searched for every plaintext string.
        let mut needles: Vec<Vec<u8>> = vec![
            b"user_tea".to_vec(),
            b"user_piano".to_vec(),
            b"about user_tea".to_vec(),
            tag.as_bytes().to_vec(),
        ];
        needles.extend(secrets.iter().map(|s| s.as_bytes().to_vec()));
        let refs = local_refs(&api);
        let all = digests(&refs);
        assert!(
            all.contains(root.hash().digest()),
            "the sealed root is on the node"
        );
        assert!(all.len() > before.len(), "the push added blocks");
        for r in &refs {
            let (status, block) = rpc(&api, &format!("block/get?arg={r}"));
            assert_eq!(status, 200);
            for n in &needles {
                assert!(
                    !contains(&block, n),
                    "block {r} holds {}",
                    String::from_utf8_lossy(n)
                );
            }
        }
        // No plaintext CID: neither the root nor any block of the plaintext DAG.
        let plain_dag =
            memdir::ipfs::unixfs::build(&memdir::Memory::open(&a.dir).unwrap().tree().unwrap())
                .unwrap();
        assert_eq!(plain_dag.root.to_string(), plain);
        for (cid, _) in &plain_dag.blocks {
            assert!(
                !all.contains(cid.hash().digest()),
                "plaintext block {cid} is on the node"
            );
        }
        let root = root.to_string();
        // The key holder reproduces every file; another key gets exit 4 and no files.
        let mut b = device(tmp.path(), "b", &api, &channel);
        b.key = Some(key);
        on(&b, &api, &["init", "--mode", "encrypted-ipfs"]);
        on(&b, &api, &["sync"]);
        assert_eq!(tree(&a.dir), tree(&b.dir));
        let mut c = device(tmp.path(), "c", &api, &channel);
        keygen(&mut c, "other");
        let before_c = c.snapshot();
        let o =
            run(c
                .cmd()
                .env("IPFS_API", &api)
                .args(["pull", &root, "--mode", "encrypted-ipfs"]));
        assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
        assert_eq!(c.snapshot(), before_c);
    }

    // Old pins are removed from the node after keep_versions pushes.
    #[test]
    fn node_unpins_old_versions() {
        let Some(api) = ipfs_node() else { return };
        let tag = run_tag("unpin");
        let channel = format!("u{}", &sha_hex(&tag)[..16]);
        let tmp = tempfile::tempdir().unwrap();
        let a = device(tmp.path(), "a", &api, &channel);
        let cfg = a.dir.join(".memdir/config.toml");
        let text = std::fs::read_to_string(&cfg).unwrap() + "keep_versions = 1\n";
        std::fs::write(&cfg, text).unwrap();
        let mut roots = Vec::new();
        for i in 0..3 {
            a.edit("x", Some(&format!("{tag} v{i}")));
            roots.push(stdout(&on(&a, &api, &["push"])).trim().to_string());
        }
        // pin/ls lists every recursive pin (js-ipfs spells CIDs in base58).
        let (status, body) = rpc(&api, "pin/ls?type=recursive");
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        let listed: Value = serde_json::from_slice(&body).unwrap();
        let pins: Vec<Cid> = listed["Keys"]
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.parse().unwrap())
            .collect();
        assert!(!pins.is_empty());
        let pinned = |r: &str| pins.contains(&r.parse::<Cid>().unwrap());
        assert!(!pinned(&roots[0]) && !pinned(&roots[1]), "old pins removed");
        assert!(pinned(&roots[2]), "the current version stays pinned");
    }

    fn sha_hex(s: &str) -> String {
        use sha2::Digest;
        data_encoding::HEXLOWER.encode(&sha2::Sha256::digest(s.as_bytes()))
    }
}

// spec/cli.md#output: `--offline` is taken only by the commands that push after a
// change; elsewhere it is a usage error, not a flag that silently does nothing.
#[test]
fn offline_is_offered_only_where_it_means_something() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    assert!(run(memdir(&dir).arg("init")).status.success());
    for args in [
        &["note", "--offline", "seen"][..],
        &[
            "write",
            "k",
            "--name",
            "n",
            "--type",
            "user",
            "--description",
            "d",
            "--body",
            "b",
            "--offline",
        ],
        &["forget", "--offline", "k"],
    ] {
        let o = run(memdir(&dir).args(args));
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    }
    for args in [
        &["push", "--offline"][..],
        &["--offline", "note", "x"],
        &["status", "--offline"],
    ] {
        let o = run(memdir(&dir).args(args));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("--offline"), "{args:?}: {}", stderr(&o));
    }
}

// spec/sync.md#configuration: `open_provider` gives a provider the caller built (a
// folder named in code, as the Python package's `Memory.sync(folder=...)` does) the
// seal and configuration `open` would: two directories sync through it, and a
// directory configured for encrypted-ipfs without a key is refused before anything
// is sent.
#[test]
fn open_provider_syncs_through_a_folder_named_in_code() {
    use memdir::provider::{Blocking, Folder, NoProgress};
    use memdir::sync::{open_provider, sync};
    use memdir::{Draft, Memory, Strategy};
    let root = tempfile::tempdir().unwrap();
    let remote = root.path().join("remote");
    let draft = |key: &str, body: &str| Draft {
        key: key.into(),
        name: key.into(),
        description: body.into(),
        kind: "project".into(),
        body: body.into(),
        ..Draft::default()
    };
    let round = |mem: &Memory| {
        let provider = Blocking::new(Box::new(Folder::new(&remote))).unwrap();
        let opened = open_provider(mem, provider, None).unwrap();
        sync(mem, &opened.remote(&NoProgress), None, Strategy::Merge).unwrap()
    };
    let a = Memory::open(root.path().join("a")).unwrap();
    let b = Memory::open(root.path().join("b")).unwrap();
    a.write(&draft("project_a", "from a")).unwrap();
    b.write(&draft("project_b", "from b")).unwrap();
    let first = round(&a);
    assert!(first.pulled.is_none());
    let second = round(&b);
    assert_eq!(second.pulled.as_ref().unwrap().root, first.pushed.root);
    round(&a);
    for mem in [&a, &b] {
        assert_eq!(mem.read("project_a").unwrap().body, "from a");
        assert_eq!(mem.read("project_b").unwrap().body, "from b");
    }
    // The configuration is read: encrypted-ipfs wants a key, and there is none.
    let c = root.path().join("c");
    std::fs::create_dir_all(c.join(".memdir")).unwrap();
    std::fs::write(
        c.join(".memdir/config.toml"),
        format!(
            "mode = \"encrypted-ipfs\"\nkey_file = \"{}\"\n",
            root.path().join("no-key").display()
        ),
    )
    .unwrap();
    let provider = Blocking::new(Box::new(Folder::new(&remote))).unwrap();
    let err = open_provider(&Memory::open(&c).unwrap(), provider, None)
        .err()
        .expect("no key: refused");
    assert!(err.to_string().contains("no-key"), "{err}");
}
