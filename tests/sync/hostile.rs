//! Hostile or foreign remotes (issue 11 §6): a remote tree is checked whole before any
//! of it is applied, expansion is bounded, a FIFO never hangs a sync, and a dry run
//! creates nothing (spec/sync.md#pull).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use memdir::ipfs::unixfs::{self, Node};

use super::{Device, code, stderr, stdout, two_devices};

/// Stores `tree` in the folder remote as a push would and returns its root.
fn store(remote: &Path, tree: &Node) -> String {
    let dag = unixfs::build(tree).unwrap();
    let car = memdir::ipfs::car::car_bytes(&dag);
    std::fs::create_dir_all(remote.join("cars")).unwrap();
    std::fs::write(remote.join("cars").join(format!("{}.car", dag.root)), car).unwrap();
    dag.root.to_string()
}

fn file(text: &str) -> Node {
    Node::File(text.as_bytes().to_vec())
}

fn dir(entries: Vec<(&str, Node)>) -> Node {
    Node::Dir(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect::<BTreeMap<_, _>>(),
    )
}

/// Runs `memdir <args>` on `d`, killing it (and failing) if it takes over 30 s.
fn run_bounded(d: &Device, args: &[&str]) -> std::process::Output {
    bounded(d.cmd(), args)
}

fn bounded(mut cmd: std::process::Command, args: &[&str]) -> std::process::Output {
    let mut child = cmd
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("memdir {args:?} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

// spec/sync.md#pull — names and shapes a memory directory may not hold are refused
// before anything is written (exit 4), and the next pull of a good version works.
#[test]
fn foreign_trees_are_refused_whole() {
    let (_tmp, _a, b) = two_devices(&[("x", "1")]);
    let memory = "---\nname: n\ndescription: d\ntype: user\ncreated: 2026-04-01\nupdated: 2026-04-01\n---\nb\n";
    let long = format!("{}.md", "a".repeat(300));
    let cases: Vec<(&str, Node)> = vec![
        (
            "300-byte name",
            dir(vec![("good.md", file(memory)), (&long, file(memory))]),
        ),
        (
            "timeline as a file",
            dir(vec![("good.md", file(memory)), ("timeline", file("x"))]),
        ),
        (
            "MEMORY.md as a folder",
            dir(vec![
                ("good.md", file(memory)),
                ("MEMORY.md", dir(vec![("a", file("x"))])),
            ]),
        ),
        (
            "memory file as a folder",
            dir(vec![
                ("good.md", file(memory)),
                ("user_role.md", dir(vec![("a", file("x"))])),
            ]),
        ),
        (
            "day file as a folder",
            dir(vec![
                ("good.md", file(memory)),
                (
                    "timeline",
                    dir(vec![("2026-04-14.jsonl", dir(vec![("a", file("x"))]))]),
                ),
            ]),
        ),
        (
            "newline in a name",
            dir(vec![("good.md", file(memory)), ("a\nb.md", file(memory))]),
        ),
        (
            "terminal escape in a name",
            dir(vec![
                ("good.md", file(memory)),
                ("\u{1b}[31mred.md", file(memory)),
            ]),
        ),
    ];
    for (what, tree) in cases {
        let root = store(&b.remote, &tree);
        let before = b.snapshot();
        let o = b.run(&["pull", &root]);
        assert_eq!(code(&o), Some(4), "{what}: {}{}", stdout(&o), stderr(&o));
        assert!(
            stderr(&o).contains("not a memory directory"),
            "{what}: {}",
            stderr(&o)
        );
        assert!(
            !stderr(&o).contains('\u{1b}') && !stderr(&o).contains("a\nb"),
            "{what}: names are printed escaped: {}",
            stderr(&o)
        );
        assert_eq!(b.snapshot(), before, "{what}: nothing changed");
    }
    // A file here where the remote has a folder: refused, nothing written.
    std::fs::write(b.dir.join("notes"), "a file").unwrap();
    let root = store(
        &b.remote,
        &dir(vec![
            ("good.md", file(memory)),
            ("notes", dir(vec![("a.txt", file("x"))])),
        ]),
    );
    let before = b.snapshot();
    let o = b.run(&["pull", &root]);
    assert_eq!(code(&o), Some(4), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("notes is a file here"),
        "{}",
        stderr(&o)
    );
    assert_eq!(b.snapshot(), before);
    // Every later sync still works.
    b.ok(&["sync"]);
}

// spec/sync.md#pull — names sharing one block cannot expand a small download into a
// large tree: 40 names x one 1 MiB block (a 1 MiB CAR, 40 MiB of files) is refused.
#[test]
fn expansion_is_bounded() {
    let (_tmp, _a, b) = two_devices(&[("x", "1")]);
    let block = Node::File(vec![b'x'; 1 << 20]);
    let entries: BTreeMap<String, Node> = (0..40)
        .map(|i| (format!("f{i:02}.txt"), block.clone()))
        .collect();
    let root = store(&b.remote, &Node::Dir(entries));
    let car = std::fs::metadata(b.remote.join("cars").join(format!("{root}.car")))
        .unwrap()
        .len();
    assert!(car < 2 << 20, "the CAR holds the block once: {car}");
    let before = b.snapshot();
    let o = b.run(&["pull", &root]);
    assert_eq!(code(&o), Some(4), "{}", stderr(&o));
    assert_eq!(b.snapshot(), before);
    // A few identical small files (a legitimate shared block) still pull.
    let same = file("same text\n");
    let root = store(
        &b.remote,
        &dir(vec![
            ("a.txt", same.clone()),
            ("b.txt", same.clone()),
            ("c.txt", same),
        ]),
    );
    b.ok(&["pull", &root]);
    assert!(b.dir.join("c.txt").is_file());
}

// spec/sync.md#pull — a FIFO in place of a CAR, a head or a lineage file is an error
// (exit 3), never a read that waits forever.
#[test]
fn a_fifo_in_the_remote_never_hangs() {
    let (_tmp, a, b) = two_devices(&[("x", "1")]);
    let head = std::fs::read_to_string(a.remote.join("heads/default")).unwrap();
    let car = a.remote.join("cars").join(format!("{}.car", head.trim()));
    let fifo = |p: &Path| {
        std::fs::remove_file(p).unwrap();
        let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    };
    fifo(&car);
    let fresh = Device::new(a.dir.parent().unwrap(), "fresh", &a.remote);
    let o = run_bounded(
        &fresh,
        &["pull", head.trim(), "--provider", "folder", "--create"],
    );
    assert_eq!(code(&o), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("not a regular file"), "{}", stderr(&o));
    fifo(&a.remote.join("heads/default"));
    let o = run_bounded(&b, &["sync"]);
    assert_eq!(code(&o), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("not a regular file"), "{}", stderr(&o));
}

// spec/sync.md#pull — `pull --dry-run` into a directory that does not exist creates
// nothing: without --create it is refused (spec/cli.md#the-memory-directory), and
// with --create into an initialized empty store it only reports.
#[test]
fn a_dry_run_into_a_missing_directory_creates_nothing() {
    let (_tmp, a, _b) = two_devices(&[("x", "1")]);
    let head = std::fs::read_to_string(a.remote.join("heads/default")).unwrap();
    let fresh = Device::new(a.dir.parent().unwrap(), "never-made", &a.remote);
    let o = fresh.run(&["pull", head.trim(), "--provider", "folder", "--dry-run"]);
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
    assert!(
        !fresh.dir.exists(),
        "the dry run created {}",
        fresh.dir.display()
    );
    fresh.ok(&["init"]);
    let before = fresh.snapshot();
    let o = fresh.ok(&["pull", head.trim(), "--provider", "folder", "--dry-run"]);
    assert!(stdout(&o).contains("would pull"), "{}", stdout(&o));
    assert_eq!(fresh.snapshot(), before, "the dry run changed the store");
}

// spec/sync.md#pull — a transfer that gets no answer is abandoned at the overall
// deadline (MEMDIR_TRANSFER_DEADLINE), exit 3 with a hint, nothing changed.
#[test]
fn a_silent_provider_hits_the_overall_deadline() {
    let (_tmp, a, b) = two_devices(&[("x", "1")]);
    let head = std::fs::read_to_string(a.remote.join("heads/default")).unwrap();
    // Accepts connections and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let held = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = held.clone();
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            keep.lock().unwrap().push(s);
        }
    });
    let before = b.snapshot();
    let start = Instant::now();
    let mut c = b.cmd();
    c.env("MEMDIR_TRANSFER_DEADLINE", "2");
    let o = bounded(c, &["pull", head.trim(), "--gateway", &url]);
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(code(&o), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("timed out after 2 s"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("MEMDIR_TRANSFER_DEADLINE"),
        "{}",
        stderr(&o)
    );
    assert_eq!(b.snapshot(), before);
    assert!(
        !held.lock().unwrap().is_empty(),
        "the pull reached the server"
    );
}

// spec/sync.md#pull — what no other device would pull is not pushed (exit 1, nothing
// sent), and names from the directory are printed escaped.
#[test]
fn an_unsyncable_name_is_not_pushed_and_is_printed_escaped() {
    let (_tmp, a, _b) = two_devices(&[("x", "1")]);
    let head = std::fs::read_to_string(a.remote.join("heads/default")).unwrap();
    std::fs::write(a.dir.join("a\nforged: line.txt"), "x").unwrap();
    let o = a.run(&["push"]);
    assert_eq!(code(&o), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("a\\nforged: line.txt"),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("a\nforged"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(a.remote.join("heads/default")).unwrap(),
        head
    );
    let st = a.ok(&["status"]);
    assert!(
        stdout(&st).contains("a\\nforged: line.txt"),
        "{}",
        stdout(&st)
    );
    assert!(!stdout(&st).contains("a\nforged"), "{}", stdout(&st));
}

// spec/sync.md#foreign-dags: IPFS data memdir refuses is refused with exit 4 and a message
// that says what it is, never "the data did not match its CID": a CIDv0 root whose
// block the archive does not hold, an unlinked CIDv0 block. (Data from other tools
// that is well-formed is accepted: tests/sync/foreign.rs.)
#[test]
fn foreign_ipfs_data_is_named_for_what_it_is() {
    let (_tmp, _a, b) = two_devices(&[("x", "1")]);
    let cars = b.remote.join("cars");
    let refused = |root: &str, expect: &str| {
        let before = b.snapshot();
        let o = b.run(&["pull", root]);
        assert_eq!(code(&o), Some(4), "{root}: {}{}", stdout(&o), stderr(&o));
        assert!(stderr(&o).contains(expect), "{root}: {}", stderr(&o));
        assert!(
            !stderr(&o).contains("did not match its CID"),
            "{root}: {}",
            stderr(&o)
        );
        assert_eq!(b.snapshot(), before, "{root}: nothing changed");
    };
    // A CIDv0 root: the CAR of a memdir tree (CIDv1 blocks), asked for by the root's
    // Qm… form, which names another block.
    let v1 = store(&b.remote, &dir(vec![("a.md", file("a"))]));
    let v1: cid::Cid = v1.parse().unwrap();
    let v0 = cid::Cid::new_v0(*v1.hash()).unwrap().to_string();
    std::fs::copy(
        cars.join(format!("{v1}.car")),
        cars.join(format!("{v0}.car")),
    )
    .unwrap();
    refused(&v0, &format!("block {v0} is missing"));
    // A CIDv0 block after a profile root, linked from nothing.
    let empty = unixfs::build(&dir(vec![])).unwrap();
    let mut car = memdir::ipfs::car::car_bytes(&empty);
    let data = b"x";
    let digest = sha2_256(data);
    let section: Vec<u8> = [&[0x12u8, 0x20][..], &digest, data].concat();
    car.push(section.len() as u8);
    car.extend_from_slice(&section);
    std::fs::write(cars.join(format!("{}.car", empty.root)), car).unwrap();
    refused(
        &empty.root.to_string(),
        "is not reachable from the requested root",
    );
}

fn sha2_256(data: &[u8]) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(data).to_vec()
}
