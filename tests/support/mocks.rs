//! Loopback stand-ins for the services memdir cannot reach from CI: a Kubo RPC
//! node in the Filebase-RPC flavour (bearer token, no `dag/export` unless
//! asked), Pinata v3, Filebase S3 (SigV4 checked), the Storacha UCAN bridge,
//! and trustless gateways. Each follows the documented request and answer
//! shapes, checks credentials, and imports uploaded CARs through
//! `memdir::ipfs::car::read_car`, answering the root it verified.
//!
//! Every mock can be told to fail the next requests with a status, to delay
//! every answer, or to report a wrong root.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cid::Cid;
use memdir::ipfs::car::{CarError, CarLimits, read_car};
use memdir::ipfs::unixfs::{Node, build};
use memdir::provider::{CODEC_CAR, sigv4};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::http::{Framing, Request, Response, Server, Stop, multipart};
use super::ipfs::{GatewayMode, Store, car_of, car_root, dfs, other_cid, sections, serve_gateway};

/// Faults to inject, shared by every mock.
#[derive(Debug, Default)]
pub struct Faults {
    /// Statuses to answer the next requests with, in order.
    pub fail: VecDeque<u16>,
    /// Delay before every answer.
    pub delay: Option<Duration>,
    /// Report a root other than the uploaded one.
    pub wrong_root: bool,
    /// The next this many answers with a body break off halfway through it (the
    /// whole length announced; gateway and Kubo mocks).
    pub cut: usize,
}

/// State every mock has: faults, a request log, a block store and the
/// gateway's behaviour.
#[derive(Default)]
pub struct Common {
    pub faults: Mutex<Faults>,
    pub log: Mutex<Vec<String>>,
    pub blocks: Mutex<Store>,
    pub gateway: Mutex<GatewayMode>,
}

impl Common {
    /// Logs the request, applies the delay, and answers an injected failure
    /// if one is queued.
    fn pre(&self, req: &Request, stop: &Stop) -> Option<Response> {
        self.log
            .lock()
            .unwrap()
            .push(format!("{} {}", req.method, req.path));
        let (delay, fail) = {
            let mut f = self.faults.lock().unwrap();
            (f.delay, f.fail.pop_front())
        };
        if let Some(d) = delay {
            stop.sleep(d);
        }
        fail.map(|status| Response::text(status, "injected failure"))
    }

    /// `resp`, broken off halfway through its body when a cut is queued.
    fn cut(&self, mut resp: Response) -> Response {
        let mut f = self.faults.lock().unwrap();
        if f.cut > 0 && resp.body.len() > 1 {
            f.cut -= 1;
            resp.framing = Framing::Cut(resp.body.len() / 2);
        }
        resp
    }

    fn gateway(&self, req: &Request) -> Option<Response> {
        let store = self.blocks.lock().unwrap();
        serve_gateway(req, &store, *self.gateway.lock().unwrap())
    }

    /// Requests whose "METHOD path" starts with `prefix`.
    pub fn count(&self, prefix: &str) -> usize {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.starts_with(prefix))
            .count()
    }

    pub fn wrong_root(&self) -> bool {
        self.faults.lock().unwrap().wrong_root
    }

    /// Verifies a complete CAR with the strict reader and stores its blocks;
    /// returns the root the header names, which the reader verified.
    fn import_full(&self, car: &[u8]) -> Result<Cid, String> {
        let root = car_root(car).ok_or("no root in the CAR header")?;
        let blocks = read_car(car, &root, &CarLimits::default()).map_err(|e| e.to_string())?;
        self.blocks.lock().unwrap().extend(blocks);
        Ok(root)
    }

    pub fn holds(&self, root: &Cid) -> bool {
        let store = self.blocks.lock().unwrap();
        store.contains_key(root) && dfs(&store, root).1
    }
}

fn json_error(status: u16, message: &str) -> Response {
    Response::json(
        status,
        &json!({ "error": { "reason": message, "details": message } }),
    )
}

/// A stand-in for a Kubo RPC endpoint.
pub struct KuboMock {
    pub common: Arc<Common>,
    pub pins: Arc<Mutex<Vec<Cid>>>,
    /// Blocks other peers provide: the node lacks them until asked, then
    /// fetches them (after a short wait) as a real node does over bitswap.
    pub network: Arc<Mutex<Store>>,
    server: Server,
}

/// How the Kubo mock behaves.
#[derive(Clone, Debug)]
pub struct KuboOptions {
    /// Required bearer token (Filebase RPC), if any.
    pub token: Option<String>,
    /// Serve `dag/export` (Kubo) or answer 404 (Filebase RPC).
    pub export: bool,
    /// How long an import whose DAG is incomplete waits before failing
    /// (js-ipfs waits for the missing blocks forever).
    pub incomplete_wait: Duration,
    /// How long `dag/export` and `block/get` wait for a block no one has before
    /// failing (a real Kubo node waits without end; zero fails at once).
    pub missing_wait: Duration,
    /// How long `routing/findprovs` takes before it reports (a DHT query).
    pub routing_wait: Duration,
}

/// The peer `routing/findprovs` names for blocks in [`KuboMock::network`].
pub const PEER: &str = "12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN";

fn kubo_error(message: &str) -> Response {
    Response::json(
        500,
        &json!({ "Message": message, "Code": 0, "Type": "error" }),
    )
}

impl KuboMock {
    pub fn start(opts: KuboOptions) -> KuboMock {
        let common = Arc::new(Common::default());
        let pins: Arc<Mutex<Vec<Cid>>> = Arc::default();
        let network: Arc<Mutex<Store>> = Arc::default();
        let (c, p, net) = (common.clone(), pins.clone(), network.clone());
        let server = Server::start(move |req, stop| {
            if let Some(r) = c.pre(req, stop) {
                return r;
            }
            if let Some(t) = &opts.token
                && req.header("authorization") != Some(&format!("Bearer {t}"))
            {
                return Response::text(401, "Unauthorized");
            }
            if req.method != "POST" {
                return Response::text(405, "405 - Method Not Allowed");
            }
            let arg = req.query("arg").and_then(|a| Cid::try_from(a).ok());
            if let Some(r) = kubo_routing(&c, &net, req, stop, &opts, arg) {
                return r;
            }
            match req.path.as_str() {
                "/api/v0/version" => Response::json(200, &json!({ "Version": "mock" })),
                "/api/v0/dag/import" => kubo_import(&c, &p, req, stop, &opts),
                "/api/v0/pin/ls" => match arg {
                    Some(cid) if p.lock().unwrap().contains(&cid) => Response::json(
                        200,
                        &json!({ "Keys": { cid.to_string(): { "Type": "recursive" } } }),
                    ),
                    Some(cid) => kubo_error(&format!("path '{cid}' is not pinned")),
                    None => kubo_error("argument \"ipfs-path\" is required"),
                },
                "/api/v0/pin/rm" => match arg {
                    Some(cid) => {
                        let mut pins = p.lock().unwrap();
                        if let Some(i) = pins.iter().position(|x| *x == cid) {
                            pins.remove(i);
                            Response::json(200, &json!({ "Pins": [cid.to_string()] }))
                        } else {
                            kubo_error(&format!("Failed to remove pin: {cid} is not pinned"))
                        }
                    }
                    None => kubo_error("argument \"ipfs-path\" is required"),
                },
                "/api/v0/block/get" => {
                    match arg.and_then(|cid| c.blocks.lock().unwrap().get(&cid).cloned()) {
                        Some(data) => Response::bytes(200, "application/octet-stream", data),
                        None => kubo_error("block not found"),
                    }
                }
                "/api/v0/dag/export" if opts.export => match arg {
                    Some(cid) if c.blocks.lock().unwrap().contains_key(&cid) => {
                        let (blocks, _) = dfs(&c.blocks.lock().unwrap(), &cid);
                        c.cut(Response::bytes(
                            200,
                            "application/vnd.ipld.car",
                            car_of(&cid, &blocks),
                        ))
                    }
                    _ => kubo_error("block not found"),
                },
                _ => Response::json(
                    404,
                    &json!({ "Message": "Not Found", "Code": 3, "Type": "error" }),
                ),
            }
        });
        KuboMock {
            common,
            pins,
            network,
            server,
        }
    }

    pub fn url(&self) -> String {
        self.server.url()
    }
}

/// What a node connected to a network does: `block/stat?offline=true` answers
/// from the local store alone; `routing/findprovs` names [`PEER`] for blocks in
/// `network`, none for others; `dag/export` and `block/get` of a block the node
/// lacks fetch it from `network` or wait `missing_wait` for it. `None`: the
/// request is answered from the local store as before.
fn kubo_routing(
    c: &Common,
    network: &Mutex<Store>,
    req: &Request,
    stop: &Stop,
    opts: &KuboOptions,
    arg: Option<Cid>,
) -> Option<Response> {
    let cid = arg?;
    let held = c.blocks.lock().unwrap().contains_key(&cid);
    match req.path.as_str() {
        "/api/v0/block/stat" if req.query("offline") == Some("true") => Some(if held {
            let size = c.blocks.lock().unwrap()[&cid].len();
            Response::json(200, &json!({ "Key": cid.to_string(), "Size": size }))
        } else {
            kubo_error(&format!(
                "block was not found locally (offline): ipld: could not find {cid}"
            ))
        }),
        "/api/v0/routing/findprovs" => {
            stop.sleep(opts.routing_wait);
            let mut lines =
                json!({ "Extra": "", "ID": "", "Responses": null, "Type": 0 }).to_string();
            if network.lock().unwrap().contains_key(&cid) {
                let found = json!({ "Extra": "", "ID": "", "Type": 4,
                    "Responses": [{ "Addrs": ["/ip4/127.0.0.1/tcp/4001"], "ID": PEER }] });
                lines.push('\n');
                lines.push_str(&found.to_string());
            }
            lines.push('\n');
            Some(Response::text(200, &lines))
        }
        "/api/v0/dag/export" | "/api/v0/block/get" if !held => {
            let from_network = network.lock().unwrap().clone();
            if from_network.contains_key(&cid) {
                stop.sleep(Duration::from_millis(300));
                c.blocks.lock().unwrap().extend(from_network);
                None
            } else {
                stop.sleep(opts.missing_wait);
                Some(kubo_error("block not found"))
            }
        }
        _ => None,
    }
}

/// `dag/import`: blocks go into the store, then the root is pinned; a DAG
/// that is still incomplete waits (bounded) like js-ipfs, then fails.
fn kubo_import(
    c: &Common,
    pins: &Mutex<Vec<Cid>>,
    req: &Request,
    stop: &Stop,
    opts: &KuboOptions,
) -> Response {
    let Some(parts) = multipart(req) else {
        return kubo_error("file argument 'path' is required");
    };
    let Some(file) = parts.iter().find(|p| p.filename.is_some()) else {
        return kubo_error("file argument 'path' is required");
    };
    // As js-ipfs 0.66 (measured): a file part needs a content type.
    if file.content_type.is_none() {
        return kubo_error("Failed to import DAG: No content-type in multipart part");
    }
    let Some(root) = car_root(&file.data) else {
        return kubo_error("invalid CAR header");
    };
    let new = match sections(&file.data) {
        Ok(s) => s,
        Err(e) => return kubo_error(&e),
    };
    // The earlier blocks this node keeps count for the pin, so the check runs
    // over the union, through the strict reader.
    let mut union: Store = c.blocks.lock().unwrap().clone();
    union.extend(new.iter().cloned());
    let (walk, complete) = dfs(&union, &root);
    if !complete {
        stop.sleep(opts.incomplete_wait);
        return kubo_error("context deadline exceeded: missing blocks");
    }
    if let Err(e) = read_car(
        car_of(&root, &walk).as_slice(),
        &root,
        &CarLimits::default(),
    ) {
        return kubo_error(&e.to_string());
    }
    c.blocks.lock().unwrap().extend(new);
    {
        let mut p = pins.lock().unwrap();
        if !p.contains(&root) {
            p.push(root);
        }
    }
    let reported = if c.wrong_root() { other_cid() } else { root };
    let line = json!({ "Root": { "Cid": { "/": reported.to_string() }, "PinErrorMsg": "" } });
    Response::bytes(200, "application/json", format!("{line}\n").into_bytes())
}

/// Pinata files: id -> (cid, name, network).
pub type PinataFiles = Arc<Mutex<HashMap<String, (Cid, String, String)>>>;

/// A stand-in for Pinata's uploads and API hosts (one server for both).
pub struct PinataMock {
    pub common: Arc<Common>,
    pub files: PinataFiles,
    server: Server,
}

impl PinataMock {
    pub fn start(jwt: &str) -> PinataMock {
        let common = Arc::new(Common::default());
        let files: PinataFiles = Arc::default();
        let (c, f) = (common.clone(), files.clone());
        let bearer = format!("Bearer {jwt}");
        let server = Server::start(move |req, stop| {
            if let Some(r) = c.pre(req, stop) {
                return r;
            }
            if let Some(r) = c.gateway(req) {
                return r;
            }
            if req.header("authorization") != Some(bearer.as_str()) {
                return json_error(401, "INVALID_CREDENTIALS");
            }
            match (req.method.as_str(), req.path.as_str()) {
                ("POST", "/v3/files") => pinata_upload(&c, &f, req),
                ("GET", "/v3/files/public") => {
                    let want = req.query("cid").and_then(|s| Cid::try_from(s).ok());
                    let list: Vec<Value> = f
                        .lock()
                        .unwrap()
                        .iter()
                        .filter(|(_, (cid, _, net))| {
                            net == "public" && want.is_none_or(|w| w == *cid)
                        })
                        .map(|(id, (cid, name, _))| pinata_file(id, cid, name))
                        .collect();
                    Response::json(
                        200,
                        &json!({ "data": { "files": list, "next_page_token": "" } }),
                    )
                }
                ("DELETE", path) if path.starts_with("/v3/files/public/") => {
                    let id = &path["/v3/files/public/".len()..];
                    if f.lock().unwrap().remove(id).is_some() {
                        Response::json(200, &json!({ "data": null }))
                    } else {
                        json_error(404, "NOT_FOUND")
                    }
                }
                _ => json_error(404, "NOT_FOUND"),
            }
        });
        PinataMock {
            common,
            files,
            server,
        }
    }

    pub fn url(&self) -> String {
        self.server.url()
    }
}

fn pinata_file(id: &str, cid: &Cid, name: &str) -> Value {
    json!({
        "id": id, "name": name, "cid": cid.to_string(), "size": 0, "number_of_files": 1,
        "mime_type": "application/vnd.ipld.car", "group_id": null, "keyvalues": {},
        "created_at": "2026-04-14T12:00:00Z", "network": "public",
    })
}

fn pinata_upload(
    c: &Common,
    files: &Mutex<HashMap<String, (Cid, String, String)>>,
    req: &Request,
) -> Response {
    let Some(parts) = multipart(req) else {
        return json_error(400, "expected multipart/form-data");
    };
    let field = |n: &str| {
        parts
            .iter()
            .find(|p| p.name == n)
            .map(|p| String::from_utf8_lossy(&p.data).into_owned())
    };
    let Some(file) = parts
        .iter()
        .find(|p| p.name == "file" && p.filename.is_some())
    else {
        return json_error(400, "file is required");
    };
    let network = field("network").unwrap_or_else(|| "private".into());
    let name = field("name").unwrap_or_else(|| file.filename.clone().unwrap_or_default());
    // car=true imports the DAG; otherwise the bytes become one UnixFS file.
    let cid = if field("car").as_deref() == Some("true") {
        match c.import_full(&file.data) {
            Ok(root) => root,
            Err(e) => return json_error(400, &format!("invalid CAR: {e}")),
        }
    } else {
        match build(&Node::File(file.data.clone())) {
            Ok(dag) => {
                c.blocks.lock().unwrap().extend(dag.blocks);
                dag.root
            }
            Err(e) => return json_error(400, &e.to_string()),
        }
    };
    let reported = if c.wrong_root() { other_cid() } else { cid };
    let id = format!("0195{:012x}", files.lock().unwrap().len() + 1);
    files
        .lock()
        .unwrap()
        .insert(id.clone(), (reported, name.clone(), network));
    Response::json(200, &json!({ "data": pinata_file(&id, &reported, &name) }))
}

/// S3 objects: key -> (body, cid).
pub type Objects = Arc<Mutex<HashMap<String, (Vec<u8>, Cid)>>>;

/// A stand-in for Filebase's S3 endpoint (path-style) and gateway.
pub struct FilebaseMock {
    pub common: Arc<Common>,
    pub objects: Objects,
    server: Server,
}

fn s3_error(status: u16, code: &str) -> Response {
    Response::bytes(
        status,
        "application/xml",
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{code}</Message></Error>"
        )
        .into_bytes(),
    )
}

impl FilebaseMock {
    pub fn start(bucket: &str, access_key: &str, secret: &str) -> FilebaseMock {
        let common = Arc::new(Common::default());
        let objects: Objects = Arc::default();
        let (c, o) = (common.clone(), objects.clone());
        let (bucket, access_key, secret) = (
            bucket.to_string(),
            access_key.to_string(),
            secret.to_string(),
        );
        let server = Server::start(move |req, stop| {
            if let Some(r) = c.pre(req, stop) {
                return r;
            }
            if let Some(r) = c.gateway(req) {
                return r;
            }
            if let Err(code) = verify_sigv4(req, &access_key, &secret) {
                return s3_error(403, code);
            }
            let Some((b, key)) = req.path.trim_start_matches('/').split_once('/') else {
                return s3_error(400, "InvalidRequest");
            };
            if b != bucket {
                return s3_error(404, "NoSuchBucket");
            }
            let key = key.to_string();
            match req.method.as_str() {
                "PUT" => {
                    let cid = if req.header("x-amz-meta-import") == Some("car") {
                        match c.import_full(&req.body) {
                            Ok(root) => root,
                            Err(_) => return s3_error(400, "InvalidCAR"),
                        }
                    } else {
                        match build(&Node::File(req.body.clone())) {
                            Ok(dag) => {
                                c.blocks.lock().unwrap().extend(dag.blocks);
                                dag.root
                            }
                            Err(_) => return s3_error(400, "InvalidRequest"),
                        }
                    };
                    let reported = if c.wrong_root() { other_cid() } else { cid };
                    let etag = format!("\"{}\"", sigv4::sha256_hex(&req.body));
                    o.lock().unwrap().insert(key, (req.body.clone(), reported));
                    Response::new(200)
                        .with_header("etag", &etag)
                        .with_header("x-amz-meta-cid", &reported.to_string())
                }
                "HEAD" | "GET" => match o.lock().unwrap().get(&key) {
                    Some((body, cid)) => {
                        let mut r = Response::bytes(200, "application/vnd.ipld.car", body.clone())
                            .with_header("x-amz-meta-cid", &cid.to_string());
                        r.head_length = Some(body.len());
                        r
                    }
                    None => s3_error(404, "NoSuchKey"),
                },
                "DELETE" => {
                    o.lock().unwrap().remove(&key);
                    Response::new(204)
                }
                _ => s3_error(405, "MethodNotAllowed"),
            }
        });
        FilebaseMock {
            common,
            objects,
            server,
        }
    }

    pub fn url(&self) -> String {
        self.server.url()
    }
}

/// Server-side SigV4 check, rebuilt from the request as received: the scope,
/// the signed headers (host included), the payload hash against the body,
/// the clock skew (15 minutes, as S3), then the signature itself.
pub fn verify_sigv4(req: &Request, access_key: &str, secret: &str) -> Result<(), &'static str> {
    let auth = req.header("authorization").ok_or("AccessDenied")?;
    let parsed = sigv4::parse_authorization(auth).ok_or("AuthorizationHeaderMalformed")?;
    if parsed.access_key != access_key {
        return Err("InvalidAccessKeyId");
    }
    let amz_date = req.header("x-amz-date").ok_or("AccessDenied")?;
    let scope: Vec<&str> = parsed.scope.split('/').collect();
    if scope.len() != 4
        || Some(scope[0]) != amz_date.get(..8)
        || scope[1] != "us-east-1"
        || scope[2] != "s3"
        || scope[3] != "aws4_request"
    {
        return Err("AuthorizationHeaderMalformed");
    }
    let when = chrono::NaiveDateTime::parse_from_str(amz_date, "%Y%m%dT%H%M%SZ")
        .map_err(|_| "AccessDenied")?
        .and_utc();
    if (chrono::Utc::now() - when).num_seconds().abs() > 15 * 60 {
        return Err("RequestTimeTooSkewed");
    }
    if !parsed.signed_headers.iter().any(|h| h == "host") {
        return Err("AccessDenied");
    }
    let payload = req.header("x-amz-content-sha256").ok_or("InvalidRequest")?;
    if payload != "UNSIGNED-PAYLOAD" && payload != sigv4::sha256_hex(&req.body) {
        return Err("XAmzContentSHA256Mismatch");
    }
    let mut headers = Vec::new();
    for name in &parsed.signed_headers {
        let values: Vec<&str> = req
            .headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect();
        if values.is_empty() {
            return Err("AccessDenied");
        }
        for v in values {
            headers.push((name.clone(), v.to_string()));
        }
    }
    let (expected, _) = sigv4::signature(
        &sigv4::Request {
            method: &req.method,
            path: &req.path,
            query: &req.query,
            headers: &headers,
            payload_hash: payload,
        },
        secret,
        amz_date,
        "us-east-1",
        "s3",
    );
    if expected != parsed.signature {
        return Err("SignatureDoesNotMatch");
    }
    Ok(())
}

/// A stand-in for the Storacha HTTP-UCAN bridge and its presigned "carpark".
pub struct StorachaMock {
    pub common: Arc<Common>,
    /// CAR CID -> bytes
    pub shards: Arc<Mutex<HashMap<Cid, Vec<u8>>>>,
    /// root -> shards
    pub uploads: Arc<Mutex<HashMap<Cid, Vec<Cid>>>>,
    server: Server,
}

fn receipt(out: Value) -> Value {
    json!({
        "p": {
            "fx": { "fork": [] }, "iss": "did:web:mock.storacha.network", "meta": {},
            "out": out, "prf": [],
            "ran": { "/": "bafyreib732osv25yuv4zs7fhr6ijywa4itb62g6o7chej2jh6ierf6o6jy" },
        },
        "s": { "/": { "bytes": "AAAA" } },
    })
}

fn link(v: &Value) -> Option<Cid> {
    v["/"].as_str().and_then(|s| Cid::try_from(s).ok())
}

impl StorachaMock {
    pub fn start(secret: &str, auth: &str, space: &str) -> StorachaMock {
        let common = Arc::new(Common::default());
        let shards: Arc<Mutex<HashMap<Cid, Vec<u8>>>> = Arc::default();
        let uploads: Arc<Mutex<HashMap<Cid, Vec<Cid>>>> = Arc::default();
        let (c, s, u) = (common.clone(), shards.clone(), uploads.clone());
        let (secret, auth, space) = (secret.to_string(), auth.to_string(), space.to_string());
        let server_url: Arc<Mutex<String>> = Arc::default();
        let url2 = server_url.clone();
        let server = Server::start(move |req, stop| {
            if let Some(r) = c.pre(req, stop) {
                return r;
            }
            if let Some(r) = c.gateway(req) {
                return r;
            }
            if req.method == "PUT" && req.path.starts_with("/carpark/") {
                return carpark_put(&s, req);
            }
            if req.method != "POST" || req.path != "/bridge" {
                return Response::text(404, "not found");
            }
            if req.header("x-auth-secret") != Some(secret.as_str())
                || req.header("authorization") != Some(auth.as_str())
            {
                return Response::json(
                    401,
                    &json!({ "error": "invalid X-Auth-Secret or Authorization" }),
                );
            }
            let Ok(body) = serde_json::from_slice::<Value>(&req.body) else {
                return Response::json(400, &json!({ "error": "body is not JSON" }));
            };
            let Some(tasks) = body["tasks"].as_array() else {
                return Response::json(400, &json!({ "error": "no tasks" }));
            };
            let base = url2.lock().unwrap().clone();
            let receipts: Vec<Value> = tasks
                .iter()
                .map(|t| receipt(bridge_task(&c, &s, &u, &space, &base, t)))
                .collect();
            Response::json(200, &Value::Array(receipts))
        });
        *server_url.lock().unwrap() = server.url();
        StorachaMock {
            common,
            shards,
            uploads,
            server,
        }
    }

    pub fn url(&self) -> String {
        self.server.url()
    }
}

fn ucan_error(name: &str, message: &str) -> Value {
    json!({ "error": { "name": name, "message": message } })
}

fn bridge_task(
    c: &Common,
    shards: &Mutex<HashMap<Cid, Vec<u8>>>,
    uploads: &Mutex<HashMap<Cid, Vec<Cid>>>,
    space: &str,
    base: &str,
    task: &Value,
) -> Value {
    let (Some(ability), Some(subject), args) = (task[0].as_str(), task[1].as_str(), &task[2])
    else {
        return ucan_error("MalformedTask", "expected [ability, subject, args]");
    };
    if subject != space {
        return ucan_error("Unauthorized", "the delegation does not cover this space");
    }
    match ability {
        "store/add" => {
            let Some(car) = link(&args["link"]).filter(|l| l.codec() == CODEC_CAR) else {
                return ucan_error("InvalidLink", "link must be a CAR CID (codec 0x0202)");
            };
            let Some(size) = args["size"].as_u64() else {
                return ucan_error("InvalidSize", "size is required");
            };
            if shards.lock().unwrap().contains_key(&car) {
                return json!({ "ok": { "status": "done", "allocated": 0, "link": { "/": car.to_string() }, "with": space } });
            }
            let checksum = data_encoding::BASE64.encode(car.hash().digest());
            json!({ "ok": {
                "status": "upload", "allocated": size,
                "link": { "/": car.to_string() },
                "url": format!("{base}/carpark/{car}/{car}.car?X-Amz-Signature=secretsig&X-Amz-Expires=86400"),
                "headers": { "content-length": size.to_string(), "x-amz-checksum-sha256": checksum },
                "with": space,
            } })
        }
        "upload/add" => {
            let Some(root) = link(&args["root"]) else {
                return ucan_error("InvalidRoot", "root is required");
            };
            let list: Vec<Cid> = args["shards"]
                .as_array()
                .map(|a| a.iter().filter_map(link).collect())
                .unwrap_or_default();
            if list.is_empty() {
                return ucan_error("InvalidShards", "shards are required");
            }
            for shard in &list {
                let Some(bytes) = shards.lock().unwrap().get(shard).cloned() else {
                    return ucan_error("ShardNotFound", &format!("{shard} was not stored"));
                };
                match read_car(bytes.as_slice(), &root, &CarLimits::default()) {
                    Ok(blocks) => c.blocks.lock().unwrap().extend(blocks),
                    Err(CarError::MissingBlock { cid }) => {
                        return ucan_error("IncompleteDAG", &format!("{cid} is missing"));
                    }
                    Err(e) => return ucan_error("InvalidCAR", &e.to_string()),
                }
            }
            uploads.lock().unwrap().insert(root, list.clone());
            let reported = if c.wrong_root() { other_cid() } else { root };
            json!({ "ok": {
                "root": { "/": reported.to_string() },
                "shards": list.iter().map(|s| json!({ "/": s.to_string() })).collect::<Vec<_>>(),
            } })
        }
        "upload/get" | "upload/remove" => {
            let Some(root) = link(&args["root"]) else {
                return ucan_error("InvalidRoot", "root is required");
            };
            let mut up = uploads.lock().unwrap();
            let found = if ability == "upload/get" {
                up.get(&root).cloned()
            } else {
                up.remove(&root)
            };
            match found {
                Some(list) => json!({ "ok": {
                    "root": { "/": root.to_string() },
                    "shards": list.iter().map(|s| json!({ "/": s.to_string() })).collect::<Vec<_>>(),
                    "insertedAt": "2026-04-14T12:00:00.000Z",
                } }),
                None => ucan_error("UploadNotFound", &format!("{root} not found")),
            }
        }
        other => ucan_error(
            "UnknownAbility",
            &format!("{other} is not supported by this mock"),
        ),
    }
}

/// The presigned PUT: the checksum header must match the body and the body
/// must hash to the CAR CID in the path.
fn carpark_put(shards: &Mutex<HashMap<Cid, Vec<u8>>>, req: &Request) -> Response {
    let Some(cid) = req
        .path
        .trim_start_matches("/carpark/")
        .split('/')
        .next()
        .and_then(|s| Cid::try_from(s).ok())
    else {
        return s3_error(400, "InvalidRequest");
    };
    if req.query("X-Amz-Signature") != Some("secretsig") {
        return s3_error(403, "SignatureDoesNotMatch");
    }
    let digest = Sha256::digest(&req.body);
    let checksum = data_encoding::BASE64.encode(&digest);
    if req.header("x-amz-checksum-sha256") != Some(checksum.as_str()) {
        return s3_error(400, "BadDigest");
    }
    if digest.as_slice() != cid.hash().digest() {
        return s3_error(400, "BadDigest");
    }
    shards.lock().unwrap().insert(cid, req.body.clone());
    Response::new(200)
}

/// A standalone trustless gateway over a fixed block store.
pub struct GatewayMock {
    pub common: Arc<Common>,
    server: Server,
}

impl GatewayMock {
    pub fn start(blocks: Store, mode: GatewayMode) -> GatewayMock {
        let common = Arc::new(Common::default());
        *common.blocks.lock().unwrap() = blocks;
        *common.gateway.lock().unwrap() = mode;
        let c = common.clone();
        let server = Server::start(move |req, stop| {
            if let Some(r) = c.pre(req, stop) {
                return r;
            }
            c.cut(
                c.gateway(req)
                    .unwrap_or_else(|| Response::text(404, "not found")),
            )
        });
        GatewayMock { common, server }
    }

    pub fn url(&self) -> String {
        self.server.url()
    }
}
