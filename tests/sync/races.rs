//! Devices that push at the same moment, heads that go backwards, and random
//! interleavings of write / forget / sync: nothing written and not forgotten is lost,
//! nothing forgotten comes back (spec/sync.md#lineage, #heads, #tombstones).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Child;

use super::{Device, code, stderr, stdout, two_devices};

fn head(remote: &Path) -> String {
    std::fs::read_to_string(remote.join("heads/default")).unwrap()
}

fn keys(d: &Device) -> BTreeSet<String> {
    d.memories().into_iter().map(|(k, _)| k).collect()
}

/// `memdir write KEY` without the push (the sync after it is what races).
fn write_offline(d: &Device, key: &str) {
    d.ok(&[
        "write",
        "--offline",
        key,
        "--name",
        key,
        "--type",
        "user",
        "--description",
        "d",
        "--body",
        key,
    ]);
}

fn spawn(d: &Device, args: &[&str]) -> Child {
    d.cmd()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Starts `memdir sync` on every device at once and waits for all of them. A sync that
/// lost every round to the others must say so (exit 1, "at the same time"). Returns
/// how many did, and how many met another device's push and merged it in a further
/// round.
fn sync_all_at_once(devices: &[&Device]) -> (usize, usize) {
    let children: Vec<Child> = devices.iter().map(|d| spawn(d, &["sync"])).collect();
    let mut lost = 0;
    let mut retried = 0;
    for c in children {
        let o = c.wait_with_output().unwrap();
        if stderr(&o).contains("merged and pushed again") {
            retried += 1;
        }
        if !o.status.success() {
            let err = stderr(&o);
            assert_eq!(code(&o), Some(1), "{err}");
            assert!(
                err.contains("at the same time") || err.contains("has not pulled"),
                "a failed sync must say it lost the race: {err}"
            );
            lost += 1;
        }
    }
    (lost, retried)
}

// spec/sync.md#lineage — the reproduction from issue 11: both devices build on head H;
// A publishes, the head is put back to H, B publishes over it. A's next sync must
// merge B's version, not delete what only A had.
#[test]
fn a_lost_update_is_merged_not_deleted() {
    for unpinned_ancestor in [false, true] {
        let (_tmp, a, b) = two_devices(&[("shared", "1"), ("old", "1")]);
        let h = head(&a.remote);
        a.edit("a_only", Some("from A"));
        a.ok(&["sync"]);
        std::fs::write(a.remote.join("heads/default"), &h).unwrap();
        b.edit("b_only", Some("from B"));
        b.ok(&["forget", "--offline", "old"]);
        b.ok(&["sync"]);
        if unpinned_ancestor {
            // The version both share is gone from the remote: merged without a base.
            std::fs::remove_file(a.remote.join("cars").join(format!("{}.car", h.trim()))).unwrap();
        }
        let o = a.ok(&["sync"]);
        let out = stdout(&o) + &stderr(&o);
        assert!(!out.contains("a_only.md: deleted"), "{out}");
        assert!(out.contains("diverged"), "{out}");
        let want: BTreeSet<String> = ["a_only", "b_only", "shared"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            keys(&a),
            want,
            "A after its sync ({unpinned_ancestor})\n{out}"
        );
        b.ok(&["sync"]);
        assert_eq!(keys(&b), want, "B ({unpinned_ancestor})");
        a.ok(&["sync"]);
        assert_eq!(a.memories(), b.memories());
    }
}

// spec/sync.md#heads — the folder head moves by compare-and-swap: a push whose head
// moved after it was read is refused (exit 1, says so) and records nothing here; the
// next sync merges both versions.
#[test]
fn a_push_that_loses_the_swap_says_so_and_records_nothing() {
    let (_tmp, a, b) = two_devices(&[("shared", "1")]);
    let h = head(&a.remote);
    a.edit("a_only", Some("from A"));
    a.ok(&["push"]);
    let a_head = head(&a.remote);
    std::fs::write(a.remote.join("heads/default"), &h).unwrap();
    // Another writer holds the head lock: B reads H, uploads, then waits to swap.
    let lock = a.remote.join("heads/default.lock");
    std::fs::write(&lock, b"other writer").unwrap();
    b.edit("b_only", Some("from B"));
    let state = b.dir.join(".memdir/sync/state.json");
    let state_before = std::fs::read(&state).unwrap();
    let cars = || std::fs::read_dir(a.remote.join("cars")).unwrap().count();
    let before = cars();
    let child = spawn(&b, &["push"]);
    let start = std::time::Instant::now();
    while cars() == before {
        assert!(start.elapsed().as_secs() < 30, "B never uploaded");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // While B waits, the other writer moves the head to A's version and lets go.
    std::fs::write(a.remote.join("heads/default"), &a_head).unwrap();
    std::fs::remove_file(&lock).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(code(&o), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("at the same time"), "{}", stderr(&o));
    assert!(stderr(&o).contains("memdir sync"), "{}", stderr(&o));
    assert_eq!(
        head(&a.remote),
        a_head,
        "the head was left as the other writer set it"
    );
    assert_eq!(
        std::fs::read(&state).unwrap(),
        state_before,
        "nothing recorded"
    );
    b.ok(&["sync"]);
    a.ok(&["sync"]);
    assert_eq!(a.memories(), b.memories());
    assert_eq!(keys(&a).len(), 3);
}

/// Devices on one folder remote, `rounds` times: each writes a memory of its own, then
/// all sync at the same instant (real processes); then every device syncs twice.
/// Returns (memories written, lost, syncs that reported a lost race, syncs that
/// merged another device's concurrent push).
fn race(devices: usize, rounds: usize) -> (usize, usize, usize, usize) {
    let tmp = tempfile::tempdir().unwrap();
    let remote = tmp.path().join("remote");
    let devs: Vec<Device> = (0..devices)
        .map(|i| Device::new(tmp.path(), &format!("d{i}"), &remote))
        .collect();
    for d in &devs {
        d.ok(&["init", "--provider", "folder"]);
    }
    let mut written = BTreeSet::new();
    let mut reported = 0;
    let mut retried = 0;
    for r in 0..rounds {
        for (i, d) in devs.iter().enumerate() {
            let key = format!("r{r:02}_d{i}");
            write_offline(d, &key);
            written.insert(key);
        }
        let (l, m) = sync_all_at_once(&devs.iter().collect::<Vec<_>>());
        reported += l;
        retried += m;
    }
    for _ in 0..2 {
        for d in &devs {
            d.ok(&["sync"]);
        }
    }
    let mut lost = 0;
    for d in &devs {
        let have = keys(d);
        lost += written.difference(&have).count();
    }
    (written.len(), lost, reported, retried)
}

// spec/sync.md#heads, #lineage — the race itself: two devices, 30 rounds of both
// syncing at the same moment.
#[test]
fn two_devices_syncing_at_once_lose_nothing() {
    let (written, lost, reported, retried) = race(2, 30);
    println!(
        "race: 2 devices, 30 rounds: {written} memories, lost: {lost}, syncs that met another push and merged it: {retried}, syncs that lost every round: {reported}"
    );
    assert_eq!(lost, 0);
}

// spec/sync.md#heads, #lineage — three devices, 30 rounds.
#[test]
fn three_devices_syncing_at_once_lose_nothing() {
    let (written, lost, reported, retried) = race(3, 30);
    println!(
        "race: 3 devices, 30 rounds: {written} memories, lost: {lost}, syncs that met another push and merged it: {retried}, syncs that lost every round: {reported}"
    );
    assert_eq!(lost, 0);
}

// spec/sync.md#heads — `write` pushing by itself on two devices at the same instant:
// a push that loses is a warning, the write stays, the next sync merges.
#[test]
fn writes_pushing_at_once_lose_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = tmp.path().join("remote");
    let devs: Vec<Device> = (0..2)
        .map(|i| Device::new(tmp.path(), &format!("w{i}"), &remote))
        .collect();
    for d in &devs {
        d.ok(&["init", "--mode", "ipfs", "--provider", "folder"]);
    }
    let mut written = BTreeSet::new();
    for r in 0..20 {
        let children: Vec<Child> = devs
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let key = format!("w{r:02}_{i}");
                written.insert(key.clone());
                spawn(
                    d,
                    &[
                        "write",
                        &key,
                        "--name",
                        "n",
                        "--type",
                        "user",
                        "--description",
                        "d",
                        "--body",
                        "b",
                    ],
                )
            })
            .collect();
        for c in children {
            let o = c.wait_with_output().unwrap();
            assert!(o.status.success(), "{}", stderr(&o));
        }
    }
    for _ in 0..2 {
        for d in &devs {
            d.ok(&["sync"]);
        }
    }
    let lost: usize = devs
        .iter()
        .map(|d| written.difference(&keys(d)).count())
        .sum();
    println!(
        "writes pushing at once: 2 devices, 20 rounds: {} memories, lost: {lost}",
        written.len()
    );
    assert_eq!(lost, 0);
}

/// A small deterministic generator (xorshift64*), so a failing seed can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

// spec/sync.md#tombstones, #lineage — random interleavings (seeded, bounded) of write,
// forget, sync, concurrent syncs and a rolled-back head on two or three devices:
// afterwards every memory not forgotten is on every device and every forgotten one on
// none.
#[test]
fn random_interleavings_keep_every_memory_and_every_forget() {
    for seed in [1u64, 7, 42, 1234] {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let n = 2 + rng.below(2);
        let tmp = tempfile::tempdir().unwrap();
        let remote = tmp.path().join("remote");
        let devs: Vec<Device> = (0..n)
            .map(|i| Device::new(tmp.path(), &format!("f{i}"), &remote))
            .collect();
        for d in &devs {
            d.ok(&["init", "--provider", "folder"]);
        }
        let mut written: BTreeSet<String> = BTreeSet::new();
        let mut forgotten: BTreeSet<String> = BTreeSet::new();
        let mut saved_heads: Vec<String> = Vec::new();
        let mut log = Vec::new();
        for step in 0..40 {
            let d = rng.below(n);
            match rng.below(10) {
                0..=3 => {
                    let key = format!("k{step:02}_{d}");
                    write_offline(&devs[d], &key);
                    written.insert(key.clone());
                    log.push(format!("{d} write {key}"));
                }
                4 => {
                    let have: Vec<String> = keys(&devs[d])
                        .into_iter()
                        .filter(|k| !forgotten.contains(k))
                        .collect();
                    if !have.is_empty() {
                        let key = have[rng.below(have.len())].clone();
                        devs[d].ok(&["forget", "--offline", &key]);
                        forgotten.insert(key.clone());
                        log.push(format!("{d} forget {key}"));
                    }
                }
                5..=6 => {
                    let o = devs[d].run(&["sync"]);
                    assert!(o.status.success(), "seed {seed}: {log:?}\n{}", stderr(&o));
                    log.push(format!("{d} sync"));
                }
                7..=8 => {
                    let _ = sync_all_at_once(&devs.iter().collect::<Vec<_>>());
                    log.push("all sync".into());
                }
                _ => {
                    // Someone puts an old head back (a restored backup).
                    if let Ok(h) = std::fs::read_to_string(remote.join("heads/default")) {
                        saved_heads.push(h);
                    }
                    if saved_heads.len() > 1 {
                        let old = saved_heads[rng.below(saved_heads.len())].clone();
                        std::fs::write(remote.join("heads/default"), old).unwrap();
                        log.push("head rolled back".into());
                    }
                }
            }
        }
        for _ in 0..2 {
            for d in &devs {
                let o = d.run(&["sync"]);
                assert!(o.status.success(), "seed {seed}: {log:?}\n{}", stderr(&o));
            }
        }
        let live: BTreeSet<String> = written.difference(&forgotten).cloned().collect();
        for (i, d) in devs.iter().enumerate() {
            let have = keys(d);
            let lost: Vec<&String> = live.difference(&have).collect();
            let back: Vec<&String> = forgotten.intersection(&have).collect();
            assert!(
                lost.is_empty() && back.is_empty(),
                "seed {seed}, device {i}: lost {lost:?}, forgotten but back {back:?}\n{log:?}"
            );
        }
        println!(
            "fuzz seed {seed}: {n} devices, {} written, {} forgotten, lost: 0, resurrected: 0",
            written.len(),
            forgotten.len()
        );
    }
}

// spec/sync.md#lineage — a head put back to a version this directory already passed is
// behind: not applied (nothing forgotten comes back, nothing newer is deleted), and
// `sync` pushes over it; `pull` of it applies nothing.
#[test]
fn a_rolled_back_head_is_behind() {
    let (_tmp, a, b) = two_devices(&[("x", "1"), ("y", "1")]);
    let old = head(&a.remote);
    a.ok(&["forget", "--offline", "x"]);
    a.edit("y", Some("2"));
    a.edit("z", Some("new"));
    a.ok(&["sync"]);
    b.ok(&["sync"]);
    let want = vec![
        ("y".to_string(), "2".to_string()),
        ("z".into(), "new".into()),
    ];
    assert_eq!(b.memories(), want);
    std::fs::write(a.remote.join("heads/default"), &old).unwrap();
    for d in [&a, &b] {
        let before = d.snapshot();
        let o = d.ok(&["pull", old.trim()]);
        assert!(
            stdout(&o).contains("the remote is behind"),
            "{}",
            stdout(&o)
        );
        assert_eq!(
            d.snapshot(),
            before,
            "pull of an old version changed nothing"
        );
    }
    let o = b.ok(&["sync"]);
    assert!(
        stderr(&o).contains("the remote is behind"),
        "{}",
        stderr(&o)
    );
    assert_eq!(b.memories(), want);
    assert_ne!(head(&a.remote), old, "sync pushed over the old head");
    a.ok(&["sync"]);
    assert_eq!(a.memories(), want);
}

// spec/sync.md#lineage, spec/sync.md#keys-and-sealed-boxes — encrypted-ipfs: an old
// sealed blob put back as the head is recognised, also by a device that never held it
// (it learned it from the lineage sealed, under the MAC, in a newer blob).
#[test]
fn a_replayed_sealed_blob_is_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = tmp.path().join("remote");
    let mut a = Device::new(tmp.path(), "a", &remote);
    let key = keygen_in(&mut a);
    a.ok(&["init", "--mode", "encrypted-ipfs", "--provider", "folder"]);
    a.edit("x", Some("1"));
    a.edit("y", Some("1"));
    a.ok(&["sync"]);
    let old = head(&remote);
    a.ok(&["forget", "--offline", "x"]);
    a.edit("y", Some("2"));
    a.edit("z", Some("new"));
    a.ok(&["sync"]);
    let want = vec![
        ("y".to_string(), "2".to_string()),
        ("z".into(), "new".into()),
    ];
    // C joins now: it never held the old blob.
    let mut c = Device::new(tmp.path(), "c", &remote);
    c.key = Some(key);
    c.ok(&["init", "--mode", "encrypted-ipfs", "--provider", "folder"]);
    c.ok(&["sync"]);
    assert_eq!(c.memories(), want);
    std::fs::write(remote.join("heads/default"), &old).unwrap();
    for d in [&a, &c] {
        let before = d.snapshot();
        let o = d.ok(&["pull", old.trim()]);
        assert!(
            stdout(&o).contains("the remote is behind"),
            "{}",
            stdout(&o)
        );
        assert_eq!(d.snapshot(), before, "nothing applied");
    }
    let o = c.ok(&["sync"]);
    assert!(
        stderr(&o).contains("the remote is behind"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        c.memories(),
        want,
        "nothing forgotten back, nothing newer deleted"
    );
    a.ok(&["sync"]);
    assert_eq!(a.memories(), want);
}

fn keygen_in(d: &mut Device) -> std::path::PathBuf {
    let path = d.home.join("key");
    d.ok(&["keygen", "--out", path.to_str().unwrap()]);
    d.key = Some(path.clone());
    path
}

// spec/sync.md#tombstones — a first sync is two-way, and a memory this device holds
// that the other side forgot (recorded) after its last update goes; one it never
// forgot stays.
#[test]
fn a_first_sync_takes_recorded_forgets() {
    let tmp = tempfile::tempdir().unwrap();
    let remote = tmp.path().join("remote");
    let a = Device::new(tmp.path(), "a", &remote);
    let b = Device::new(tmp.path(), "b", &remote);
    for d in [&a, &b] {
        d.ok(&["init", "--provider", "folder"]);
    }
    a.edit("x", Some("1"));
    a.edit("y", Some("1"));
    a.ok(&["forget", "--offline", "x"]);
    a.ok(&["sync"]);
    // B had a copy of both (an import, a copied folder) but never synced.
    b.edit("x", Some("1"));
    b.edit("y", Some("1"));
    b.edit("z", Some("mine"));
    b.ok(&["sync"]);
    let got: Vec<String> = b.memories().into_iter().map(|(k, _)| k).collect();
    assert_eq!(got, vec!["y", "z"]);
    a.ok(&["sync"]);
    assert_eq!(a.memories(), b.memories());
}
