//! Providers (spec/providers.md): one conformance suite run against every
//! provider implementation through loopback mocks of the real services,
//! hostile trustless gateways, and the Kubo provider against a real IPFS node
//! (js-ipfs, started by ci/ipfs-node/start.sh) when `IPFS_API` is set.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cid::Cid;
use memdir::Clock;
use memdir::ipfs::car::{CarLimits, car_bytes};
use memdir::ipfs::unixfs::{Dag, Limits, Node, build, decode};
use memdir::provider::{
    Blocking, Direction, Gateways, HttpConfig, Kubo, NoProgress, Progress, ProviderError, Receipt,
    Settings, delta_car,
};
use memdir::{Class, Failure};

use crate::support::http::request;
use crate::support::ipfs::{GatewayMode, Store};
use crate::support::mocks::{
    Common, FilebaseMock, GatewayMock, KuboMock, KuboOptions, PinataMock, StorachaMock,
};

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// Short timeouts and backoff so failure tests stay fast.
fn fast_http() -> HttpConfig {
    HttpConfig {
        timeout: Duration::from_secs(5),
        transfer_timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(2),
        attempts: 3,
        backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(100),
        delta_timeout: Duration::from_millis(700),
    }
}

fn settings(http: HttpConfig) -> Settings {
    Settings {
        http,
        clock: Clock::system(),
    }
}

/// A generated memory directory: index, memories with frontmatter, a
/// timeline, a nested folder, an empty file and folder, and optionally a
/// multi-chunk file. `tag` makes every tree (and so every CID) unique.
fn memory_tree(tag: &str, memories: usize, big: bool) -> Node {
    let mut root = BTreeMap::new();
    let mut index = String::from("# Memory index\n\n");
    for i in 0..memories {
        let kind = ["user", "feedback", "project", "reference"][i % 4];
        let key = format!("{kind}_note_{i:03}");
        index.push_str(&format!("- [{key}]({key}.md)\n"));
        let body = format!(
            "---\nname: {key}\ndescription: note {i} of {tag}\ntype: {kind}\n---\n{}\n",
            "Remembered detail. ".repeat(i % 7 + 1)
        );
        root.insert(format!("{key}.md"), Node::File(body.into_bytes()));
    }
    root.insert("MEMORY.md".into(), Node::File(index.into_bytes()));
    let mut timeline = BTreeMap::new();
    let lines: String = (0..memories)
        .map(|i| {
            format!(
                "{{\"t\":\"2026-04-14T12:00:{:02}Z\",\"op\":\"create\",\"tag\":\"{tag}\"}}\n",
                i % 60
            )
        })
        .collect();
    timeline.insert("2026-04-14.jsonl".into(), Node::File(lines.into_bytes()));
    timeline.insert("2026-04-15.jsonl".into(), Node::File(Vec::new()));
    root.insert("timeline".into(), Node::Dir(timeline));
    let mut nested = BTreeMap::new();
    nested.insert("empty".into(), Node::Dir(BTreeMap::new()));
    nested.insert(
        "café notes.md".into(),
        Node::File(format!("unicode and a space in the name ({tag})\n").into_bytes()),
    );
    root.insert("projects".into(), Node::Dir(nested));
    if big {
        let data: Vec<u8> = (0..(1 << 20) + (1 << 19))
            .map(|i: u32| (i.wrapping_mul(2654435761) >> 13) as u8 ^ tag.len() as u8)
            .collect();
        root.insert("attachments.bin".into(), Node::File(data));
    }
    Node::Dir(root)
}

/// Every file in a tree with its path.
fn files(node: &Node, prefix: &str, out: &mut Vec<(String, Vec<u8>)>) {
    match node {
        Node::File(bytes) => out.push((prefix.to_string(), bytes.clone())),
        Node::Dir(entries) => {
            for (name, child) in entries {
                let path = if prefix.is_empty() {
                    name.clone()
                } else {
                    format!("{prefix}/{name}")
                };
                files(child, &path, out);
            }
        }
    }
}

fn dag_of(tree: &Node) -> (Dag, Vec<u8>) {
    let dag = build(tree).expect("build the DAG");
    let car = car_bytes(&dag);
    (dag, car)
}

fn decoded(blocks: &HashMap<Cid, Vec<u8>>, root: &Cid) -> Node {
    decode(root, blocks, &Limits::default()).expect("decode the pulled DAG")
}

/// Records progress callbacks.
#[derive(Default)]
struct Recorder(Mutex<Vec<(Direction, u64, Option<u64>)>>);

impl Progress for Recorder {
    fn progress(&self, direction: Direction, done: u64, total: Option<u64>) {
        self.0.lock().unwrap().push((direction, done, total));
    }
}

impl Recorder {
    fn last(&self, direction: Direction) -> Option<(u64, Option<u64>)> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .rev()
            .find(|(d, _, _)| *d == direction)
            .map(|(_, done, total)| (*done, *total))
    }
}

fn env_of(map: HashMap<String, String>) -> impl Fn(&str) -> Option<String> {
    move |k: &str| map.get(k).cloned()
}

fn expect_err<T: std::fmt::Debug>(r: Result<T, ProviderError>, what: &str) -> ProviderError {
    match r {
        Ok(v) => panic!("{what}: expected an error, got {v:?}"),
        Err(e) => e,
    }
}

// ---------------------------------------------------------------------------
// The conformance suite: one set of checks, every provider
// ---------------------------------------------------------------------------

const KUBO_TOKEN: &str = "kubo-bucket-token-SECRET";
const PINATA_JWT: &str = "eyJhbGciOiJIUzI1NiJ9.pinata.SECRET";
const FB_KEY: &str = "FBKEYEXAMPLE";
const FB_SECRET: &str = "fb/secret+key/SECRET";
const FB_BUCKET: &str = "memdir-test";
const W3_SECRET: &str = "uOGQyYzRhYWQwNmY3NtEwOTg1ZWU0NDU0NjByNTg2SECRET";
const W3_AUTH: &str = "uOqJlcm9vdHOB2CpYKQABcRIgYVymlT6sxiDd45CA0fSECRET";
const W3_SPACE: &str = "did:key:z6MkmockspaceforthememdirtestsuiteXXXXXXXXXXXX";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Kubo,
    Pinata,
    Filebase,
    Storacha,
}

enum Mock {
    Kubo(KuboMock),
    Pinata(PinataMock),
    Filebase(FilebaseMock),
    Storacha(StorachaMock),
}

struct Fixture {
    kind: Kind,
    mock: Mock,
}

impl Fixture {
    fn start(kind: Kind) -> Fixture {
        let mock = match kind {
            Kind::Kubo => Mock::Kubo(KuboMock::start(KuboOptions {
                token: Some(KUBO_TOKEN.into()),
                export: false,
                incomplete_wait: Duration::from_secs(3),
                missing_wait: Duration::ZERO,
                routing_wait: Duration::ZERO,
            })),
            Kind::Pinata => Mock::Pinata(PinataMock::start(PINATA_JWT)),
            Kind::Filebase => Mock::Filebase(FilebaseMock::start(FB_BUCKET, FB_KEY, FB_SECRET)),
            Kind::Storacha => Mock::Storacha(StorachaMock::start(W3_SECRET, W3_AUTH, W3_SPACE)),
        };
        Fixture { kind, mock }
    }

    fn common(&self) -> &Common {
        match &self.mock {
            Mock::Kubo(m) => &m.common,
            Mock::Pinata(m) => &m.common,
            Mock::Filebase(m) => &m.common,
            Mock::Storacha(m) => &m.common,
        }
    }

    fn url(&self) -> String {
        match &self.mock {
            Mock::Kubo(m) => m.url(),
            Mock::Pinata(m) => m.url(),
            Mock::Filebase(m) => m.url(),
            Mock::Storacha(m) => m.url(),
        }
    }

    /// The environment a user would set; `good = false` spoils the credentials.
    fn env(&self, good: bool) -> HashMap<String, String> {
        let url = self.url();
        let spoil = |s: &str| {
            if good {
                s.to_string()
            } else {
                format!("{s}-wrong")
            }
        };
        let pairs: Vec<(&str, String)> = match self.kind {
            Kind::Kubo => vec![("IPFS_API", url), ("IPFS_API_TOKEN", spoil(KUBO_TOKEN))],
            Kind::Pinata => vec![
                ("PINATA_JWT", spoil(PINATA_JWT)),
                ("PINATA_API_URL", url.clone()),
                ("PINATA_UPLOAD_URL", url.clone()),
                ("PINATA_GATEWAY", url),
            ],
            Kind::Filebase => vec![
                ("FILEBASE_KEY", FB_KEY.into()),
                ("FILEBASE_SECRET", spoil(FB_SECRET)),
                ("FILEBASE_BUCKET", FB_BUCKET.into()),
                ("FILEBASE_ENDPOINT", url.clone()),
                ("FILEBASE_GATEWAY", url),
            ],
            Kind::Storacha => vec![
                ("WEB3_STORAGE_TOKEN", spoil(W3_SECRET)),
                ("STORACHA_AUTH", W3_AUTH.into()),
                ("STORACHA_SPACE", W3_SPACE.into()),
                ("STORACHA_BRIDGE_URL", format!("{url}/bridge")),
                ("STORACHA_GATEWAY", url),
            ],
        };
        let mut map: HashMap<String, String> =
            pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        // Pull only from the mock, never from public gateways.
        map.insert("MEMDIR_GATEWAYS".into(), self.url());
        map
    }

    fn secret(&self) -> &'static str {
        match self.kind {
            Kind::Kubo => KUBO_TOKEN,
            Kind::Pinata => PINATA_JWT,
            Kind::Filebase => FB_SECRET,
            Kind::Storacha => W3_SECRET,
        }
    }

    fn name(&self) -> &'static str {
        match self.kind {
            Kind::Kubo => "kubo",
            Kind::Pinata => "pinata",
            Kind::Filebase => "filebase",
            Kind::Storacha => "storacha",
        }
    }

    fn provider_with(&self, good: bool, http: HttpConfig) -> Blocking {
        let env = env_of(self.env(good));
        let p = memdir::provider::from_env(self.name(), &env, &settings(http))
            .expect("provider from the environment");
        Blocking::new(p).expect("runtime")
    }

    fn provider(&self) -> Blocking {
        self.provider_with(true, fast_http())
    }

    /// Makes the data this provider serves wrong: the gateway alters a block,
    /// or (Kubo) a stored block's bytes change.
    fn corrupt(&self, dag: &Dag) {
        match self.kind {
            Kind::Kubo => {
                let mut blocks = self.common().blocks.lock().unwrap();
                let (cid, _) = dag.blocks.last().expect("a block");
                if let Some(data) = blocks.get_mut(cid) {
                    data.push(b'!');
                }
            }
            _ => *self.common().gateway.lock().unwrap() = GatewayMode::WrongBlock,
        }
    }
}

// spec/providers.md#contract: push reports our root, has, pull back verified, unpin.
fn push_has_pull_unpin(kind: Kind) {
    let fx = Fixture::start(kind);
    let p = fx.provider();
    let tree = memory_tree(&format!("conformance-{kind:?}"), 12, false);
    let (dag, car) = dag_of(&tree);
    assert_eq!(p.name(), fx.name());
    assert!(p.capabilities().push);
    assert!(!p.has(&dag.root).expect("has before push"), "{kind:?}");

    let up = Recorder::default();
    let receipt = p.put_car(&dag.root, &car, &up).expect("push");
    assert_eq!(receipt.root, dag.root);
    assert_eq!(receipt.provider, fx.name());
    assert_eq!(receipt.car_bytes, car.len() as u64);
    assert!(!receipt.delta);
    assert!(!receipt.provider_id.is_empty());
    let total = car.len() as u64;
    assert_eq!(up.last(Direction::Upload), Some((total, Some(total))));
    assert!(
        fx.common().holds(&dag.root),
        "the service verified and stored the whole DAG"
    );
    assert!(p.has(&dag.root).expect("has after push"));

    let down = Recorder::default();
    let blocks = p
        .get_car(&dag.root, &CarLimits::default(), &down)
        .expect("pull");
    assert_eq!(decoded(&blocks, &dag.root), tree);
    let (done, _) = down.last(Direction::Download).expect("download progress");
    assert!(done > 0);

    p.unpin(&receipt).expect("unpin");
    assert!(!p.has(&dag.root).expect("has after unpin"));
    p.unpin(&receipt).expect("unpinning twice is fine");

    // A lost receipt: unpin by root alone.
    p.put_car(&dag.root, &car, &NoProgress).expect("push again");
    assert!(p.has(&dag.root).expect("has"));
    p.unpin(&Receipt::for_root(fx.name(), dag.root))
        .expect("unpin by root");
    assert!(!p.has(&dag.root).expect("has after unpin by root"));
}

// spec/providers.md#errors: refused credentials are a remote error, not retried,
// and the secret never appears in the message.
fn auth_failure_is_remote(kind: Kind) {
    let fx = Fixture::start(kind);
    let p = fx.provider_with(false, fast_http());
    let (dag, car) = dag_of(&memory_tree("auth", 3, false));
    let err = expect_err(p.put_car(&dag.root, &car, &NoProgress), "bad credentials");
    assert_eq!(err.class(), Class::Remote, "{err}");
    assert!(matches!(err.status(), Some(401 | 403)), "{err}");
    let shown = format!("{err} {err:?} {}", err.hint().unwrap_or_default());
    assert!(!shown.contains(fx.secret()), "secret leaked: {shown}");
    assert!(shown.contains(fx.name()), "{shown}");
    assert!(shown.contains("127.0.0.1"), "names the URL: {shown}");
    assert_eq!(
        fx.common().log.lock().unwrap().len(),
        1,
        "auth failures are not retried"
    );
    let exit = Failure::from(err).class().exit_code();
    assert_eq!(exit, 3);
}

// spec/providers.md#errors: a provider that reports another root is an integrity error.
fn wrong_root_is_integrity(kind: Kind) {
    let fx = Fixture::start(kind);
    fx.common().faults.lock().unwrap().wrong_root = true;
    let p = fx.provider();
    let (dag, car) = dag_of(&memory_tree("wrong-root", 3, false));
    let err = expect_err(p.put_car(&dag.root, &car, &NoProgress), "wrong root");
    assert!(matches!(err, ProviderError::WrongRoot { .. }), "{err}");
    assert_eq!(err.class(), Class::Integrity);
    assert!(err.to_string().contains(&dag.root.to_string()), "{err}");
    assert_eq!(Failure::from(err).class().exit_code(), 4);
    if let Mock::Pinata(m) = &fx.mock {
        assert!(
            m.files.lock().unwrap().is_empty(),
            "the wrong pin was removed"
        );
    }
    if let Mock::Filebase(m) = &fx.mock {
        assert!(
            m.objects.lock().unwrap().is_empty(),
            "the wrong object was removed"
        );
    }
}

// spec/providers.md#retries: 429 and 5xx are retried with backoff, then succeed.
fn transient_failures_are_retried(kind: Kind) {
    let fx = Fixture::start(kind);
    fx.common().faults.lock().unwrap().fail.extend([500, 429]);
    let p = fx.provider();
    let (dag, car) = dag_of(&memory_tree("retry", 3, false));
    let receipt = p
        .put_car(&dag.root, &car, &NoProgress)
        .expect("push after retries");
    assert_eq!(receipt.root, dag.root);
    let log = fx.common().log.lock().unwrap().clone();
    assert!(log.len() >= 3, "two failures then success: {log:?}");
    assert_eq!(log[0], log[1], "the same request was repeated: {log:?}");
    assert_eq!(log[1], log[2], "the same request was repeated: {log:?}");
}

// spec/providers.md#retries: retries are bounded.
fn retries_are_bounded(kind: Kind) {
    let fx = Fixture::start(kind);
    fx.common().faults.lock().unwrap().fail.extend([503; 10]);
    let p = fx.provider();
    let (dag, car) = dag_of(&memory_tree("bounded", 3, false));
    let err = expect_err(p.put_car(&dag.root, &car, &NoProgress), "always 503");
    assert_eq!(err.status(), Some(503), "{err}");
    assert_eq!(err.class(), Class::Remote);
    assert_eq!(fx.common().log.lock().unwrap().len(), 3, "attempts = 3");
}

// spec/providers.md#timeouts: a provider that does not answer in time is a remote error.
fn timeout_is_remote(kind: Kind) {
    let fx = Fixture::start(kind);
    fx.common().faults.lock().unwrap().delay = Some(Duration::from_secs(3));
    let http = HttpConfig {
        timeout: Duration::from_millis(300),
        transfer_timeout: Duration::from_millis(300),
        attempts: 2,
        ..fast_http()
    };
    let p = fx.provider_with(true, http);
    let (dag, car) = dag_of(&memory_tree("timeout", 3, false));
    let start = Instant::now();
    let err = expect_err(p.put_car(&dag.root, &car, &NoProgress), "slow provider");
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    assert!(matches!(err, ProviderError::Timeout { .. }), "{err}");
    assert_eq!(err.class(), Class::Remote);
    assert_eq!(
        fx.common().log.lock().unwrap().len(),
        2,
        "timeouts are retried, bounded"
    );
}

// spec/providers.md#pull: data that does not match its CID is an integrity error.
fn corrupt_pull_is_integrity(kind: Kind) {
    let fx = Fixture::start(kind);
    let p = fx.provider();
    let tree = memory_tree("corrupt-pull", 5, false);
    let (dag, car) = dag_of(&tree);
    p.put_car(&dag.root, &car, &NoProgress).expect("push");
    fx.corrupt(&dag);
    let err = expect_err(
        p.get_car(&dag.root, &CarLimits::default(), &NoProgress),
        "corrupt pull",
    );
    assert_eq!(err.class(), Class::Integrity, "{err}");
}

// The user's path through each service: `memdir push --provider P` and `memdir pull`
// on a second device, plain and encrypted; after the encrypted push nothing the
// service stored holds a memory's name or body.
fn cli_push_pull(kind: Kind) {
    use crate::common::{copy_tree, fixture, memdir, run, stderr, stdout, tree};
    let fx = Fixture::start(kind);
    let tmp = tempfile::tempdir().unwrap();
    let cmd = |dir: &std::path::Path, args: &[&str]| {
        let mut c = memdir(dir);
        c.envs(fx.env(true));
        c.env("MEMDIR_KEY_FILE", tmp.path().join("key"));
        c.env("HOME", tmp.path());
        c.args(args);
        let o = run(&mut c);
        assert!(o.status.success(), "{kind:?} {args:?}: {}", stderr(&o));
        stdout(&o).trim().to_string()
    };
    let a = tmp.path().join("a");
    copy_tree(&fixture("example"), &a);
    cmd(&a, &["index"]);
    let root = cmd(&a, &["push", "--provider", fx.name()]);
    assert_eq!(root, cmd(&a, &["cid"]));
    let b = tmp.path().join("b");
    cmd(&b, &["pull", &root, "--provider", fx.name(), "--create"]);
    assert_eq!(tree(&a), tree(&b), "{kind:?}: plain round trip");
    // None of these services keeps a head pointer (the Kubo mock is Filebase's RPC,
    // which has no MFS): `sync` needs the CID, and says so.
    let mut c = memdir(&b);
    c.envs(fx.env(true)).args(["sync", "--provider", fx.name()]);
    let o = run(&mut c);
    assert_eq!(o.status.code(), Some(2), "{kind:?}: {}", stderr(&o));
    assert!(
        stderr(&o).contains("keeps no head"),
        "{kind:?}: {}",
        stderr(&o)
    );
    std::fs::write(b.join("b_note.md"), "---\nname: n\ndescription: d\ntype: user\ncreated: 2026-04-01\nupdated: 2026-04-01\n---\nfrom b\n").unwrap();
    let synced = cmd(&b, &["sync", &root, "--provider", fx.name()]);
    let synced_cid: Cid = synced.lines().last().unwrap().parse().unwrap();
    assert!(
        fx.common().holds(&synced_cid),
        "{kind:?}: sync pushed the merged version"
    );

    cmd(&a, &["keygen"]);
    let sealed = cmd(
        &a,
        &["push", "--provider", fx.name(), "--mode", "encrypted-ipfs"],
    );
    assert_ne!(sealed, root);
    let sealed_cid: Cid = sealed.parse().unwrap();
    assert!(
        fx.common().holds(&sealed_cid),
        "{kind:?}: the service stored the blob"
    );
    let c = tmp.path().join("c");
    cmd(
        &c,
        &[
            "pull",
            &sealed,
            "--provider",
            fx.name(),
            "--mode",
            "encrypted-ipfs",
            "--create",
        ],
    );
    assert_eq!(tree(&a), tree(&c), "{kind:?}: encrypted round trip");
    // Only the blob's blocks were added by the encrypted push; none of them holds
    // a name or a body line of the example memories.
    let blob = fx.common().blocks.lock().unwrap();
    let (sealed_blocks, _) = crate::support::ipfs::dfs(&blob, &sealed_cid);
    assert!(!sealed_blocks.is_empty());
    for (cid, data) in sealed_blocks {
        for needle in [&b"user_role"[..], b"Argentina", b"feedback_tone"] {
            assert!(
                !data.windows(needle.len()).any(|w| w == needle),
                "{kind:?}: block {cid} of the sealed push holds {}",
                String::from_utf8_lossy(needle)
            );
        }
    }
}

macro_rules! conformance {
    ($($module:ident => $kind:expr),* $(,)?) => {$(
        mod $module {
            use super::*;
            #[test] fn cli_push_pull() { super::cli_push_pull($kind) }
            #[test] fn push_has_pull_unpin() { super::push_has_pull_unpin($kind) }
            #[test] fn auth_failure_is_remote() { super::auth_failure_is_remote($kind) }
            #[test] fn wrong_root_is_integrity() { super::wrong_root_is_integrity($kind) }
            #[test] fn transient_failures_are_retried() { super::transient_failures_are_retried($kind) }
            #[test] fn retries_are_bounded() { super::retries_are_bounded($kind) }
            #[test] fn timeout_is_remote() { super::timeout_is_remote($kind) }
            #[test] fn corrupt_pull_is_integrity() { super::corrupt_pull_is_integrity($kind) }
        }
    )*};
}

conformance! {
    conformance_kubo => Kind::Kubo,
    conformance_pinata => Kind::Pinata,
    conformance_filebase => Kind::Filebase,
    conformance_storacha => Kind::Storacha,
}

// ---------------------------------------------------------------------------
// Provider-specific behaviour
// ---------------------------------------------------------------------------

fn kubo_mock(export: bool, incomplete_wait: Duration) -> (KuboMock, Blocking) {
    let mock = KuboMock::start(KuboOptions {
        token: None,
        export,
        incomplete_wait,
        missing_wait: Duration::ZERO,
        routing_wait: Duration::ZERO,
    });
    let kubo = Kubo::new(&mock.url(), None, &settings(fast_http())).expect("kubo");
    (mock, Blocking::new(Box::new(kubo)).expect("runtime"))
}

fn two_versions(tag: &str) -> (Node, Dag, Node, Dag) {
    let v1 = memory_tree(tag, 10, false);
    let Node::Dir(mut entries) = v1.clone() else {
        unreachable!()
    };
    entries.insert(
        "user_note_000.md".into(),
        Node::File(
            format!("---\nname: user_note_000\ntype: user\n---\nChanged in v2 ({tag}).\n")
                .into_bytes(),
        ),
    );
    let v2 = Node::Dir(entries);
    let d1 = build(&v1).expect("v1");
    let d2 = build(&v2).expect("v2");
    (v1, d1, v2, d2)
}

// spec/providers.md#delta: Kubo keeps earlier blocks, so a delta CAR suffices.
#[test]
fn kubo_delta_sends_only_new_blocks() {
    let (mock, p) = kubo_mock(false, Duration::from_secs(3));
    assert!(p.capabilities().keeps_blocks);
    let (_, d1, v2, d2) = two_versions("mock-delta");
    p.put_car(&d1.root, &car_bytes(&d1), &NoProgress)
        .expect("v1");
    let known: HashSet<Cid> = d1.blocks.iter().map(|(c, _)| *c).collect();
    let delta = delta_car(&d2, &known);
    let full = car_bytes(&d2);
    let receipt = p
        .put_car_delta(&d2.root, &delta, &full, &NoProgress)
        .expect("delta push");
    assert!(receipt.delta);
    assert_eq!(receipt.car_bytes, delta.len() as u64);
    assert!(receipt.car_bytes < full.len() as u64);
    assert!(mock.common.holds(&d2.root));
    let blocks = p
        .get_car(&d2.root, &CarLimits::default(), &NoProgress)
        .expect("pull v2");
    assert_eq!(decoded(&blocks, &d2.root), v2);
}

// spec/providers.md#delta: without the earlier blocks the import stalls; the
// delta attempt times out and the full CAR goes instead.
#[test]
fn kubo_delta_falls_back_to_full_car() {
    let (mock, p) = kubo_mock(false, Duration::from_secs(5));
    let (_, d1, _, d2) = two_versions("mock-fallback");
    let known: HashSet<Cid> = d1.blocks.iter().map(|(c, _)| *c).collect();
    let delta = delta_car(&d2, &known);
    let full = car_bytes(&d2);
    let start = Instant::now();
    let receipt = p
        .put_car_delta(&d2.root, &delta, &full, &NoProgress)
        .expect("fallback push");
    assert!(!receipt.delta);
    assert_eq!(receipt.car_bytes, full.len() as u64);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert!(mock.common.holds(&d2.root));
    assert_eq!(mock.common.count("POST /api/v0/dag/import"), 2);
}

// spec/providers.md#kubo: dag/export is streamed through the CAR reader when the
// node has it; otherwise the DAG is walked with block/get.
#[test]
fn kubo_pull_uses_dag_export_or_block_walk() {
    for export in [true, false] {
        let (mock, p) = kubo_mock(export, Duration::from_secs(1));
        let tree = memory_tree("export-or-walk", 6, true);
        let (dag, car) = dag_of(&tree);
        p.put_car(&dag.root, &car, &NoProgress).expect("push");
        let blocks = p
            .get_car(&dag.root, &CarLimits::default(), &NoProgress)
            .expect("pull");
        assert_eq!(decoded(&blocks, &dag.root), tree);
        let (exports, gets) = (
            mock.common.count("POST /api/v0/dag/export"),
            mock.common.count("POST /api/v0/block/get"),
        );
        if export {
            assert_eq!((exports, gets), (1, 0));
        } else {
            assert_eq!((exports, gets), (1, dag.blocks.len()));
        }
    }
}

// spec/providers.md#pull: limits bound what a provider may send.
#[test]
fn kubo_pull_respects_limits() {
    let (_mock, p) = kubo_mock(true, Duration::from_secs(1));
    let (dag, car) = dag_of(&memory_tree("limits", 6, true));
    p.put_car(&dag.root, &car, &NoProgress).expect("push");
    let small = CarLimits {
        max_total_bytes: 64 << 10,
        ..CarLimits::default()
    };
    let err = expect_err(p.get_car(&dag.root, &small, &NoProgress), "over the limit");
    assert_eq!(err.class(), Class::Integrity, "{err}");
}

/// A Kubo node (mock) connected to a network: it waits `missing_wait` for a
/// block no one has, and its DHT query takes `routing_wait`.
fn kubo_online(missing_wait: Duration, routing_wait: Duration) -> KuboMock {
    KuboMock::start(KuboOptions {
        token: None,
        export: true,
        incomplete_wait: Duration::from_secs(1),
        missing_wait,
        routing_wait,
    })
}

fn kubo_blocking(mock: &KuboMock) -> Blocking {
    let kubo = Kubo::new(&mock.url(), None, &settings(fast_http())).expect("kubo");
    Blocking::new(Box::new(kubo)).expect("runtime")
}

// spec/providers.md#kubo (issue 31 item 15): a CID the node does not hold and no
// one provides fails at once with an error naming the CID and the node, instead
// of waiting out the deadline.
#[test]
fn kubo_pull_of_a_cid_no_one_has_fails_fast() {
    let mock = kubo_online(Duration::from_secs(60), Duration::from_millis(300));
    let p = kubo_blocking(&mock);
    assert_eq!(p.deadline(), memdir::provider::DEFAULT_DEADLINE);
    let (dag, _) = dag_of(&memory_tree("no-one-has-it", 3, false));
    let start = Instant::now();
    let err = expect_err(
        p.get_car(&dag.root, &CarLimits::default(), &NoProgress),
        "a CID no one has",
    );
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert!(matches!(err, ProviderError::NotAvailable { .. }), "{err:?}");
    assert_eq!(err.class(), Class::Remote, "{err}");
    let text = err.to_string();
    for part in [
        dag.root.to_string(),
        format!("kubo at {}", mock.url()),
        "not available".into(),
        "found no provider".into(),
    ] {
        assert!(text.contains(&part), "{part:?} missing from {text}");
    }
    assert!(err.hint().unwrap().contains("nothing was changed"));
    assert_eq!(mock.common.count("POST /api/v0/routing/findprovs"), 1);
}

// spec/providers.md#kubo: a CID the node lacks but the network provides is
// fetched; the provider check does not cut the download short.
#[test]
fn kubo_pull_waits_for_a_cid_the_network_has() {
    let mock = kubo_online(Duration::from_secs(60), Duration::ZERO);
    let p = kubo_blocking(&mock);
    let tree = memory_tree("the-network-has-it", 3, false);
    let (dag, _) = dag_of(&tree);
    mock.network
        .lock()
        .unwrap()
        .extend(dag.blocks.iter().cloned());
    let blocks = p
        .get_car(&dag.root, &CarLimits::default(), &NoProgress)
        .expect("fetched from the network");
    assert_eq!(decoded(&blocks, &dag.root), tree);
    assert_eq!(mock.common.count("POST /api/v0/routing/findprovs"), 1);
}

/// Records every [`Progress::waiting`] call.
#[derive(Default)]
struct Waits(Mutex<Vec<(String, String, Duration, Duration)>>);

impl Progress for Waits {
    fn progress(&self, _: Direction, _: u64, _: Option<u64>) {}

    fn waiting(&self, w: &memdir::provider::Waiting<'_>) {
        self.0.lock().unwrap().push((
            w.root.to_string(),
            w.provider.to_string(),
            w.elapsed,
            w.deadline,
        ));
    }
}

// spec/sync.md#pull (issue 31 item 15): while a download receives nothing, the
// caller hears about it at every interval until the overall deadline ends it.
#[test]
fn a_silent_download_reports_that_it_is_waiting() {
    // The DHT query never finishes in time, so only the deadline ends the wait.
    let mock = kubo_online(Duration::from_secs(60), Duration::from_secs(60));
    let deadline = Duration::from_millis(1500);
    let p = kubo_blocking(&mock)
        .with_deadline(deadline)
        .with_wait_every(Duration::from_millis(300));
    let (dag, _) = dag_of(&memory_tree("silent", 2, false));
    let waits = Waits::default();
    let start = Instant::now();
    let err = expect_err(
        p.get_car(&dag.root, &CarLimits::default(), &waits),
        "silence",
    );
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );
    assert!(
        matches!(&err, ProviderError::Timeout { method, after, .. } if method == "transfer" && *after == deadline),
        "{err:?}"
    );
    let waits = waits.0.lock().unwrap();
    assert!((3..=5).contains(&waits.len()), "{waits:?}");
    for (i, (root, provider, elapsed, told)) in waits.iter().enumerate() {
        assert_eq!(root, &dag.root.to_string());
        assert_eq!(provider, "kubo");
        assert_eq!(*told, deadline);
        assert!(
            *elapsed >= Duration::from_millis(300 * (i as u64 + 1)),
            "{waits:?}"
        );
        assert!(*elapsed < deadline, "{waits:?}");
    }
}

// spec/sync.md#pull (issue 31 item 15): `memdir pull` of a CID no one has, with the
// default deadline, fails within seconds (exit 3) naming the CID, and the store is
// unchanged.
#[test]
fn cli_pull_of_a_cid_no_one_has_fails_fast_and_changes_nothing() {
    use crate::common::{copy_tree, fixture, memdir, stderr};
    let mock = kubo_online(Duration::from_secs(60), Duration::from_millis(300));
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    copy_tree(&fixture("example"), &dir);
    let (dag, _) = dag_of(&memory_tree("cli-no-one-has-it", 2, false));
    let snapshot = |d: &std::path::Path| -> Vec<(String, Vec<u8>)> {
        walkdir::WalkDir::new(d)
            .sort_by_file_name()
            .into_iter()
            .map(|e| e.unwrap())
            .filter(|e| e.file_type().is_file() && !e.path().ends_with(".memdir/lock"))
            .map(|e| {
                (
                    e.path().display().to_string(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect()
    };
    let before = snapshot(&dir);
    let mut c = memdir(&dir);
    c.env("IPFS_API", mock.url())
        .env("HOME", tmp.path())
        .env_remove("MEMDIR_TRANSFER_DEADLINE")
        .args(["pull", &dag.root.to_string(), "--provider", "kubo"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("memdir pull of a CID no one has still waits after 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&dag.root.to_string()) && stderr(&o).contains("not available"),
        "{}",
        stderr(&o)
    );
    assert_eq!(snapshot(&dir), before, "the failed pull changed the store");
}

// spec/providers.md#filebase: S3 signatures are checked server-side; a skewed
// clock is refused like S3 does.
#[test]
fn filebase_refuses_a_skewed_clock() {
    let fx = Fixture::start(Kind::Filebase);
    let env = env_of(fx.env(true));
    let old = chrono::DateTime::parse_from_rfc3339("2013-05-24T00:00:00Z")
        .expect("time")
        .to_utc();
    let s = Settings {
        http: fast_http(),
        clock: Clock::fixed(old),
    };
    let p = Blocking::new(memdir::provider::from_env("filebase", &env, &s).expect("filebase"))
        .expect("runtime");
    let (dag, car) = dag_of(&memory_tree("skew", 2, false));
    let err = expect_err(p.put_car(&dag.root, &car, &NoProgress), "skewed clock");
    assert_eq!(err.status(), Some(403));
    assert!(err.to_string().contains("RequestTimeTooSkewed"), "{err}");
}

// spec/providers.md#storacha: an already stored shard is not uploaded again.
#[test]
fn storacha_skips_a_stored_shard() {
    let fx = Fixture::start(Kind::Storacha);
    let p = fx.provider();
    let (dag, car) = dag_of(&memory_tree("storacha-done", 4, false));
    p.put_car(&dag.root, &car, &NoProgress).expect("first");
    assert_eq!(fx.common().count("PUT /carpark/"), 1);
    p.put_car(&dag.root, &car, &NoProgress).expect("second");
    assert_eq!(
        fx.common().count("PUT /carpark/"),
        1,
        "status done: no second PUT"
    );
}

// spec/providers.md#configuration: credentials only from the environment;
// missing ones are usage errors naming the variable.
#[test]
fn configuration_from_the_environment() {
    let s = Settings::default();
    let none = |_: &str| None::<String>;
    for (name, var) in [
        ("kubo", "IPFS_API"),
        ("pinata", "PINATA_JWT"),
        ("filebase", "FILEBASE_KEY"),
        ("storacha", "WEB3_STORAGE_TOKEN"),
    ] {
        let err = expect_err(
            memdir::provider::from_env(name, &none, &s).map(|p| p.name().to_string()),
            name,
        );
        assert_eq!(err.class(), Class::Usage);
        assert!(err.to_string().contains(var), "{err}");
    }
    assert!(
        memdir::provider::configured(&none, &s)
            .expect("none")
            .is_empty()
    );
    let only_pinata = |k: &str| (k == "PINATA_JWT").then(|| "jwt".to_string());
    let list = memdir::provider::configured(&only_pinata, &s).expect("pinata");
    assert_eq!(
        list.iter()
            .map(|p| p.name().to_string())
            .collect::<Vec<_>>(),
        ["pinata"]
    );
    let partial = |k: &str| (k == "FILEBASE_KEY").then(|| "key".to_string());
    let err = expect_err(
        memdir::provider::configured(&partial, &s).map(|l| l.len()),
        "partial filebase",
    );
    assert!(err.to_string().contains("FILEBASE_SECRET"), "{err}");
    let gw = memdir::provider::from_env("gateway", &none, &s).expect("public gateways");
    assert!(!gw.capabilities().push);
}

// ---------------------------------------------------------------------------
// Trustless gateways, honest and hostile
// ---------------------------------------------------------------------------

fn gateway_fixture(tag: &str) -> (Node, Dag, Store) {
    let tree = memory_tree(tag, 8, false);
    let dag = build(&tree).expect("build");
    let store: Store = dag.blocks.iter().cloned().collect();
    (tree, dag, store)
}

fn gateways(urls: &[String]) -> Blocking {
    let refs: Vec<&str> = urls.iter().map(String::as_str).collect();
    Blocking::new(Box::new(
        Gateways::new(&refs, &settings(fast_http())).expect("gateways"),
    ))
    .expect("runtime")
}

// spec/providers.md#gateways: an honest gateway, verified end to end.
#[test]
fn gateway_honest_pull() {
    let (tree, dag, store) = gateway_fixture("honest");
    let gw = GatewayMock::start(store, GatewayMode::Honest);
    let p = gateways(&[gw.url()]);
    let rec = Recorder::default();
    let blocks = p
        .get_car(&dag.root, &CarLimits::default(), &rec)
        .expect("pull");
    assert_eq!(decoded(&blocks, &dag.root), tree);
    assert!(p.has(&dag.root).expect("has"));
    let (done, total) = rec.last(Direction::Download).expect("progress");
    assert_eq!(Some(done), total);
}

// spec/providers.md#gateways: every hostile answer is an integrity error and
// nothing is returned.
#[test]
fn gateway_hostile_answers_are_integrity_errors() {
    for mode in [
        GatewayMode::WrongBlock,
        GatewayMode::Truncated,
        GatewayMode::ExtraBlock,
        GatewayMode::HugeBlock,
        GatewayMode::EarlyEndBadRaw,
    ] {
        let (_, dag, store) = gateway_fixture(&format!("{mode:?}"));
        let gw = GatewayMock::start(store, mode);
        let p = gateways(&[gw.url()]);
        let err = expect_err(
            p.get_car(&dag.root, &CarLimits::default(), &NoProgress)
                .map(|b| b.len()),
            &format!("{mode:?}"),
        );
        assert_eq!(err.class(), Class::Integrity, "{mode:?}: {err}");
        assert!(err.to_string().contains("127.0.0.1"), "{mode:?}: {err}");
        assert_eq!(Failure::from(err).class().exit_code(), 4);
    }
}

// spec/providers.md#gateways: a stream that ends early at a block boundary is
// completed with ?format=raw, each block verified.
#[test]
fn gateway_missing_block_fetched_raw() {
    let (tree, dag, store) = gateway_fixture("early-end");
    let gw = GatewayMock::start(store, GatewayMode::EarlyEnd);
    let p = gateways(&[gw.url()]);
    let blocks = p
        .get_car(&dag.root, &CarLimits::default(), &NoProgress)
        .expect("repaired pull");
    assert_eq!(decoded(&blocks, &dag.root), tree);
    assert_eq!(gw.common.count("GET /ipfs/"), 2, "one CAR, one raw block");
}

// spec/providers.md#gateways: the next gateway is tried after a failure.
#[test]
fn gateway_falls_through_to_the_next() {
    let (tree, dag, store) = gateway_fixture("fallthrough");
    let bad = GatewayMock::start(store.clone(), GatewayMode::WrongBlock);
    let plain = GatewayMock::start(store.clone(), GatewayMode::NotCar);
    let empty = GatewayMock::start(Store::new(), GatewayMode::Honest);
    let good = GatewayMock::start(store, GatewayMode::Honest);
    let p = gateways(&[bad.url(), plain.url(), empty.url(), good.url()]);
    let blocks = p
        .get_car(&dag.root, &CarLimits::default(), &NoProgress)
        .expect("the good gateway");
    assert_eq!(decoded(&blocks, &dag.root), tree);
    for gw in [&bad, &plain, &empty, &good] {
        assert_eq!(gw.common.count("GET /ipfs/"), 1);
    }
}

// spec/providers.md#gateways: when every gateway fails for remote reasons the
// error is remote and lists each attempt.
#[test]
fn gateway_all_remote_failures() {
    let (_, dag, store) = gateway_fixture("all-remote");
    let plain = GatewayMock::start(store, GatewayMode::NotCar);
    let empty = GatewayMock::start(Store::new(), GatewayMode::Honest);
    let p = gateways(&[plain.url(), empty.url()]);
    let err = expect_err(
        p.get_car(&dag.root, &CarLimits::default(), &NoProgress)
            .map(|b| b.len()),
        "no gateway has it",
    );
    assert_eq!(err.class(), Class::Remote, "{err}");
    let text = err.to_string();
    assert!(
        text.contains(&plain.url()) && text.contains(&empty.url()),
        "{text}"
    );
    assert!(text.contains("404"), "{text}");
    // The plain gateway still serves single blocks; the empty one has nothing.
    assert!(p.has(&dag.root).expect("has via the first gateway"));
    assert!(
        !gateways(&[empty.url()])
            .has(&dag.root)
            .expect("has via the empty one")
    );
}

// spec/providers.md#retries: a gateway's 5xx is retried.
#[test]
fn gateway_retries_server_errors() {
    let (tree, dag, store) = gateway_fixture("gw-retry");
    let gw = GatewayMock::start(store, GatewayMode::Honest);
    gw.common.faults.lock().unwrap().fail.extend([502, 500]);
    let p = gateways(&[gw.url()]);
    let blocks = p
        .get_car(&dag.root, &CarLimits::default(), &NoProgress)
        .expect("after retries");
    assert_eq!(decoded(&blocks, &dag.root), tree);
    assert_eq!(gw.common.count("GET /ipfs/"), 3);
}

// spec/providers.md#retries: a CAR that breaks off mid-stream is asked for again, up
// to the configured attempts, then the last failure is the error.
#[test]
fn gateway_retries_a_stream_that_breaks_off() {
    let (tree, dag, store) = gateway_fixture("gw-cut");
    let gw = GatewayMock::start(store, GatewayMode::Honest);
    gw.common.faults.lock().unwrap().cut = 2;
    let p = gateways(&[gw.url()]);
    let blocks = p
        .get_car(&dag.root, &CarLimits::default(), &NoProgress)
        .expect("after two broken streams");
    assert_eq!(decoded(&blocks, &dag.root), tree);
    assert_eq!(gw.common.count("GET /ipfs/"), 3);

    let (_, dag, store) = gateway_fixture("gw-cut-always");
    let gw = GatewayMock::start(store, GatewayMode::Honest);
    gw.common.faults.lock().unwrap().cut = 10;
    let p = gateways(&[gw.url()]);
    let err = expect_err(
        p.get_car(&dag.root, &CarLimits::default(), &NoProgress),
        "every stream breaks off",
    );
    assert_eq!(err.class(), Class::Remote, "{err}");
    // Three tries (fast_http's attempts), no more.
    assert_eq!(gw.common.count("GET /ipfs/"), 3);
}

// spec/providers.md#kubo: a dag/export that breaks off mid-stream is asked for again.
#[test]
fn kubo_export_retries_a_stream_that_breaks_off() {
    let (mock, p) = kubo_mock(true, Duration::from_secs(1));
    let tree = memory_tree("export-cut", 6, true);
    let (dag, car) = dag_of(&tree);
    p.put_car(&dag.root, &car, &NoProgress).expect("push");
    mock.common.faults.lock().unwrap().cut = 1;
    let blocks = p
        .get_car(&dag.root, &CarLimits::default(), &NoProgress)
        .expect("pull after a broken export");
    assert_eq!(decoded(&blocks, &dag.root), tree);
    assert_eq!(mock.common.count("POST /api/v0/dag/export"), 2);
    assert_eq!(mock.common.count("POST /api/v0/block/get"), 0);
}

// ---------------------------------------------------------------------------
// A real IPFS node (js-ipfs via ci/ipfs-node/start.sh)
// ---------------------------------------------------------------------------

/// The node's RPC URL, or `None` (after a loud note) when no node is running;
/// with MEMDIR_REQUIRE_IPFS=1 a missing node is a failure.
pub(crate) fn ipfs_node() -> Option<String> {
    match std::env::var("IPFS_API") {
        Ok(api) if !api.trim().is_empty() => Some(api.trim().trim_end_matches('/').to_string()),
        _ => {
            assert!(
                std::env::var("MEMDIR_REQUIRE_IPFS").as_deref() != Ok("1"),
                "MEMDIR_REQUIRE_IPFS=1 but IPFS_API is not set: start a node with \
                 `eval \"$(ci/ipfs-node/start.sh DIR)\"` or run ci/ipfs-node/run-tests.sh"
            );
            // Straight to the stream, past libtest's output capture, so the
            // note shows even when the test passes.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "\n!!!!!! SKIPPED: real IPFS node test (IPFS_API is not set). \
                 Run ci/ipfs-node/run-tests.sh to run it. !!!!!!"
            );
            None
        }
    }
}

fn node_http() -> HttpConfig {
    HttpConfig {
        timeout: Duration::from_secs(30),
        transfer_timeout: Duration::from_secs(120),
        connect_timeout: Duration::from_secs(5),
        attempts: 3,
        backoff: Duration::from_millis(200),
        max_backoff: Duration::from_secs(2),
        delta_timeout: Duration::from_secs(4),
    }
}

fn node_provider(api: &str) -> Blocking {
    let kubo = Kubo::new(api, None, &settings(node_http())).expect("kubo");
    Blocking::new(Box::new(kubo)).expect("runtime")
}

/// Reads a file through the node's own path resolution.
pub(crate) fn node_cat(api: &str, root: &Cid, path: &str) -> Vec<u8> {
    let arg = memdir::provider::sigv4::uri_encode(&format!("/ipfs/{root}/{path}"), true);
    let (status, body) =
        request("POST", &format!("{api}/api/v0/cat?arg={arg}"), b"").expect("cat request");
    assert_eq!(
        status,
        200,
        "cat {path}: {}",
        String::from_utf8_lossy(&body)
    );
    body
}

/// A tag unique to this test run, so a reused node never has our blocks.
pub(crate) fn run_tag(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{name}-{}-{nanos}", std::process::id())
}

// spec/providers.md#kubo: push to a real node, the pin is there, every file reads
// back through the node's path resolution, the pulled DAG decodes to our tree.
#[test]
fn node_push_pin_cat_pull() {
    let Some(api) = ipfs_node() else { return };
    let p = node_provider(&api);
    let tree = memory_tree(&run_tag("node"), 20, true);
    let (dag, car) = dag_of(&tree);
    let receipt = p.put_car(&dag.root, &car, &NoProgress).expect("dag/import");
    assert_eq!(receipt.root, dag.root);
    assert!(p.has(&dag.root).expect("pin/ls"), "the root is pinned");
    let mut all = Vec::new();
    files(&tree, "", &mut all);
    assert!(all.len() > 20);
    for (path, bytes) in &all {
        assert_eq!(&node_cat(&api, &dag.root, path), bytes, "{path}");
    }
    let blocks = p
        .get_car(&dag.root, &CarLimits::default(), &NoProgress)
        .expect("dag/export");
    assert_eq!(blocks.len(), dag.blocks.len());
    assert_eq!(decoded(&blocks, &dag.root), tree);
    p.unpin(&receipt).expect("pin/rm");
    assert!(!p.has(&dag.root).expect("pin/ls after rm"));
    p.unpin(&receipt).expect("pin/rm of an unpinned root");
}

// spec/providers.md#delta: the second version goes as a delta CAR (only new
// blocks) and the node assembles the full DAG from it.
#[test]
fn node_delta_push() {
    let Some(api) = ipfs_node() else { return };
    let p = node_provider(&api);
    let (_, d1, v2, d2) = two_versions(&run_tag("node-delta"));
    p.put_car(&d1.root, &car_bytes(&d1), &NoProgress)
        .expect("v1");
    let known: HashSet<Cid> = d1.blocks.iter().map(|(c, _)| *c).collect();
    let delta = delta_car(&d2, &known);
    let full = car_bytes(&d2);
    let receipt = p
        .put_car_delta(&d2.root, &delta, &full, &NoProgress)
        .expect("delta push");
    eprintln!(
        "node: delta CAR {} bytes accepted instead of the full {} bytes",
        delta.len(),
        full.len()
    );
    assert!(receipt.delta, "the node accepted the delta");
    assert_eq!(receipt.car_bytes, delta.len() as u64);
    assert!(
        receipt.car_bytes < full.len() as u64,
        "delta {} bytes, full {}",
        delta.len(),
        full.len()
    );
    assert!(p.has(&d2.root).expect("pin/ls v2"));
    assert_eq!(
        node_cat(&api, &d2.root, "user_note_000.md"),
        match &v2 {
            Node::Dir(e) => match &e["user_note_000.md"] {
                Node::File(b) => b.clone(),
                Node::Dir(_) => unreachable!(),
            },
            Node::File(_) => unreachable!(),
        }
    );
    let blocks = p
        .get_car(&d2.root, &CarLimits::default(), &NoProgress)
        .expect("pull v2");
    assert_eq!(decoded(&blocks, &d2.root), v2);
}

// spec/providers.md#delta: a delta against a node that lacks the earlier blocks
// stalls on the real node; the provider gives up within the delta timeout and
// sends the full CAR.
#[test]
fn node_delta_without_base_falls_back() {
    let Some(api) = ipfs_node() else { return };
    let p = node_provider(&api);
    let (_, d1, v2, d2) = two_versions(&run_tag("node-fallback"));
    let known: HashSet<Cid> = d1.blocks.iter().map(|(c, _)| *c).collect();
    let delta = delta_car(&d2, &known);
    let full = car_bytes(&d2);
    let start = Instant::now();
    let receipt = p
        .put_car_delta(&d2.root, &delta, &full, &NoProgress)
        .expect("fallback push");
    let took = start.elapsed();
    eprintln!(
        "node: delta of {} bytes without its base fell back to the full CAR ({} bytes) in {took:?}",
        delta.len(),
        full.len()
    );
    assert!(!receipt.delta, "fell back to the full CAR");
    assert_eq!(receipt.car_bytes, full.len() as u64);
    assert!(
        took < node_http().delta_timeout + Duration::from_secs(30),
        "took {took:?}"
    );
    assert!(p.has(&d2.root).expect("pin/ls"));
    let blocks = p
        .get_car(&d2.root, &CarLimits::default(), &NoProgress)
        .expect("pull");
    assert_eq!(decoded(&blocks, &d2.root), v2);
}
