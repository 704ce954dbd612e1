//! AWS Signature Version 4 for S3-compatible services (Filebase), written in
//! house over `sha2`: HMAC-SHA256 (RFC 2104), the canonical request, the string
//! to sign, the derived signing key and the `Authorization` header.
//!
//! Everything here is pure: callers pass the time (`amz_date`, `YYYYMMDDTHHMMSSZ`)
//! and the exact header values that will go on the wire. The S3 flavour is
//! used: the path is URI-encoded once and never normalised, and the payload
//! hash is sent in `x-amz-content-sha256`. The same functions let a test
//! server recompute a signature from the request it received.

use sha2::{Digest, Sha256};

/// The only algorithm we sign with.
pub const ALGORITHM: &str = "AWS4-HMAC-SHA256";
/// The hex sha256 of an empty payload.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

const BLOCK: usize = 64;

/// HMAC-SHA256 of `data` under `key` (RFC 2104 with SHA-256's 64-byte block).
pub fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut ipad = [0x36u8; BLOCK];
    let mut opad = [0x5cu8; BLOCK];
    for i in 0..BLOCK {
        ipad[i] ^= block[i];
        opad[i] ^= block[i];
    }
    let inner = Sha256::new()
        .chain_update(ipad)
        .chain_update(data)
        .finalize();
    let outer = Sha256::new()
        .chain_update(opad)
        .chain_update(inner)
        .finalize();
    outer.into()
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    data_encoding::HEXLOWER.encode(bytes)
}

/// Lowercase hex sha256 of `data`, the payload hash SigV4 signs.
pub fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

/// URI-encodes `s` the way SigV4 requires: unreserved characters
/// (`A-Z a-z 0-9 - _ . ~`) stay, everything else becomes `%XX` (upper hex) byte
/// by byte; `/` stays only when `keep_slash` (object key paths).
pub fn uri_encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        let keep = b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'_' | b'.' | b'~')
            || (keep_slash && b == b'/');
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The parts of a request that SigV4 covers.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// HTTP method in upper case.
    pub method: &'a str,
    /// The path exactly as sent on the wire (already URI-encoded), `/` if empty.
    pub path: &'a str,
    /// Decoded query parameters; they are encoded and sorted here.
    pub query: &'a [(String, String)],
    /// The headers to sign (any case; values as sent).
    pub headers: &'a [(String, String)],
    /// Hex sha256 of the body, or `UNSIGNED-PAYLOAD`.
    pub payload_hash: &'a str,
}

/// The canonical request and the `SignedHeaders` list for `req`.
pub fn canonical_request(req: &Request<'_>) -> (String, String) {
    let path = if req.path.is_empty() { "/" } else { req.path };
    let mut query: Vec<(String, String)> = req
        .query
        .iter()
        .map(|(k, v)| (uri_encode(k, false), uri_encode(v, false)))
        .collect();
    query.sort();
    let query = query
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&");
    // Lowercase names, trimmed values with inner runs of spaces collapsed;
    // repeated names are joined with commas in the order they appear.
    let mut headers: Vec<(String, String)> = Vec::new();
    for (name, value) in req.headers {
        let name = name.trim().to_ascii_lowercase();
        let value = value.split_whitespace().collect::<Vec<_>>().join(" ");
        match headers.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => {
                v.push(',');
                v.push_str(&value);
            }
            None => headers.push((name, value)),
        }
    }
    headers.sort_by(|a, b| a.0.cmp(&b.0));
    let canonical_headers: String = headers.iter().map(|(n, v)| format!("{n}:{v}\n")).collect();
    let signed = headers
        .iter()
        .map(|(n, _)| n.as_str())
        .collect::<Vec<_>>()
        .join(";");
    let canonical = format!(
        "{}\n{}\n{}\n{}\n{}\n{}",
        req.method, path, query, canonical_headers, signed, req.payload_hash
    );
    (canonical, signed)
}

/// The credential scope `YYYYMMDD/region/service/aws4_request`.
pub fn scope(amz_date: &str, region: &str, service: &str) -> String {
    let day = amz_date.get(..8).unwrap_or(amz_date);
    format!("{day}/{region}/{service}/aws4_request")
}

/// The string to sign for a canonical request.
pub fn string_to_sign(amz_date: &str, scope: &str, canonical_request: &str) -> String {
    format!(
        "{ALGORITHM}\n{amz_date}\n{scope}\n{}",
        sha256_hex(canonical_request.as_bytes())
    )
}

/// The derived key `HMAC(HMAC(HMAC(HMAC("AWS4" + secret, day), region), service), "aws4_request")`.
pub fn signing_key(secret: &str, day: &str, region: &str, service: &str) -> [u8; 32] {
    let k_date = hmac_sha256(format!("AWS4{secret}").as_bytes(), day.as_bytes());
    let k_region = hmac_sha256(&k_date, region.as_bytes());
    let k_service = hmac_sha256(&k_region, service.as_bytes());
    hmac_sha256(&k_service, b"aws4_request")
}

/// Hex signature of `req` at `amz_date` for `secret`, `region` and `service`.
pub fn signature(
    req: &Request<'_>,
    secret: &str,
    amz_date: &str,
    region: &str,
    service: &str,
) -> (String, String) {
    let (canonical, signed) = canonical_request(req);
    let scope = scope(amz_date, region, service);
    let sts = string_to_sign(amz_date, &scope, &canonical);
    let day = amz_date.get(..8).unwrap_or(amz_date);
    let key = signing_key(secret, day, region, service);
    (hex(&hmac_sha256(&key, sts.as_bytes())), signed)
}

/// The complete `Authorization` header value for `req`.
pub fn authorization(
    req: &Request<'_>,
    access_key: &str,
    secret: &str,
    amz_date: &str,
    region: &str,
    service: &str,
) -> String {
    let (sig, signed) = signature(req, secret, amz_date, region, service);
    format!(
        "{ALGORITHM} Credential={access_key}/{}, SignedHeaders={signed}, Signature={sig}",
        scope(amz_date, region, service)
    )
}

/// The fields of a parsed `Authorization: AWS4-HMAC-SHA256 ...` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedAuthorization {
    /// The access key id.
    pub access_key: String,
    /// `YYYYMMDD/region/service/aws4_request`.
    pub scope: String,
    /// Lowercase header names, in the order given.
    pub signed_headers: Vec<String>,
    /// The hex signature.
    pub signature: String,
}

/// Parses an `Authorization` header value; `None` if it is not a SigV4 header.
pub fn parse_authorization(value: &str) -> Option<ParsedAuthorization> {
    let rest = value.strip_prefix(ALGORITHM)?.trim_start();
    let mut credential = None;
    let mut signed = None;
    let mut sig = None;
    for part in rest.split(',') {
        let (k, v) = part.trim().split_once('=')?;
        match k {
            "Credential" => credential = Some(v),
            "SignedHeaders" => signed = Some(v),
            "Signature" => sig = Some(v),
            _ => return None,
        }
    }
    let (access_key, scope) = credential?.split_once('/')?;
    Some(ParsedAuthorization {
        access_key: access_key.to_string(),
        scope: scope.to_string(),
        signed_headers: signed?.split(';').map(str::to_string).collect(),
        signature: sig?.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        data_encoding::HEXLOWER_PERMISSIVE
            .decode(s.as_bytes())
            .expect("test hex")
    }

    fn check_hmac(key: &[u8], data: &[u8], expect: &str) {
        let mac = hex(&hmac_sha256(key, data));
        assert!(mac.starts_with(expect), "HMAC {mac} != {expect}");
    }

    // RFC 4231 section 4: the HMAC-SHA-256 test cases 1 to 7.
    #[test]
    fn hmac_rfc4231() {
        check_hmac(
            &[0x0b; 20],
            b"Hi There",
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
        );
        check_hmac(
            b"Jefe",
            b"what do ya want for nothing?",
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
        );
        check_hmac(
            &[0xaa; 20],
            &[0xdd; 50],
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe",
        );
        check_hmac(
            &unhex("0102030405060708090a0b0c0d0e0f10111213141516171819"),
            &[0xcd; 50],
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b",
        );
        // Case 5 is truncated to 128 bits.
        check_hmac(
            &[0x0c; 20],
            b"Test With Truncation",
            "a3b6167473100ee06e0c796c2955552b",
        );
        check_hmac(
            &[0xaa; 131],
            b"Test Using Larger Than Block-Size Key - Hash Key First",
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
        );
        check_hmac(
            &[0xaa; 131],
            b"This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.",
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
        );
    }

    fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    const SUITE_SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
    const SUITE_DATE: &str = "20150830T123600Z";

    /// A case from the AWS SigV4 test suite (service `service`, us-east-1).
    fn suite(method: &str, query: &[(&str, &str)], expect_sts_hash: Option<&str>, expect: &str) {
        let query: Vec<(String, String)> = query
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let h = headers(&[
            ("Host", "example.amazonaws.com"),
            ("X-Amz-Date", SUITE_DATE),
        ]);
        let req = Request {
            method,
            path: "/",
            query: &query,
            headers: &h,
            payload_hash: EMPTY_SHA256,
        };
        let (canonical, signed) = canonical_request(&req);
        assert_eq!(signed, "host;x-amz-date");
        if let Some(hash) = expect_sts_hash {
            assert_eq!(sha256_hex(canonical.as_bytes()), hash);
        }
        let auth = authorization(
            &req,
            "AKIDEXAMPLE",
            SUITE_SECRET,
            SUITE_DATE,
            "us-east-1",
            "service",
        );
        assert_eq!(
            auth,
            format!(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature={expect}"
            )
        );
        let parsed = parse_authorization(&auth).expect("parse");
        assert_eq!(parsed.signature, expect);
        assert_eq!(parsed.signed_headers, ["host", "x-amz-date"]);
    }

    // AWS SigV4 test suite: get-vanilla, post-vanilla, get-vanilla-empty-query-key.
    #[test]
    fn aws_test_suite_vanilla() {
        suite(
            "GET",
            &[],
            Some("bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63"),
            "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
        );
        suite(
            "POST",
            &[],
            None,
            "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
        );
        suite(
            "GET",
            &[("Param1", "value1")],
            None,
            "a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb",
        );
    }

    const S3_KEY: &str = "AKIAIOSFODNN7EXAMPLE";
    const S3_SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

    // Amazon S3 API reference, "Signature Calculations for the Authorization
    // Header: Transferring Payload in a Single Chunk", example GET Object.
    #[test]
    fn s3_example_get_object() {
        let h = headers(&[
            ("Host", "examplebucket.s3.amazonaws.com"),
            ("Range", "bytes=0-9"),
            ("x-amz-content-sha256", EMPTY_SHA256),
            ("x-amz-date", "20130524T000000Z"),
        ]);
        let req = Request {
            method: "GET",
            path: "/test.txt",
            query: &[],
            headers: &h,
            payload_hash: EMPTY_SHA256,
        };
        let (canonical, _) = canonical_request(&req);
        let sts = string_to_sign(
            "20130524T000000Z",
            &scope("20130524T000000Z", "us-east-1", "s3"),
            &canonical,
        );
        assert!(
            sts.ends_with("7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972"),
            "{sts}"
        );
        let (sig, signed) = signature(&req, S3_SECRET, "20130524T000000Z", "us-east-1", "s3");
        assert_eq!(signed, "host;range;x-amz-content-sha256;x-amz-date");
        assert_eq!(
            sig,
            "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
        let _ = S3_KEY;
    }

    // Same document, example PUT Object: a body, a `$` in the key and a Date header.
    #[test]
    fn s3_example_put_object() {
        let body = b"Welcome to Amazon S3.";
        let payload = sha256_hex(body);
        assert_eq!(
            payload,
            "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"
        );
        let h = headers(&[
            ("Host", "examplebucket.s3.amazonaws.com"),
            ("Date", "Fri, 24 May 2013 00:00:00 GMT"),
            ("x-amz-date", "20130524T000000Z"),
            ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
            ("x-amz-content-sha256", &payload),
        ]);
        let path = format!("/{}", uri_encode("test$file.text", true));
        assert_eq!(path, "/test%24file.text");
        let req = Request {
            method: "PUT",
            path: &path,
            query: &[],
            headers: &h,
            payload_hash: &payload,
        };
        let (sig, signed) = signature(&req, S3_SECRET, "20130524T000000Z", "us-east-1", "s3");
        assert_eq!(
            signed,
            "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class"
        );
        assert_eq!(
            sig,
            "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"
        );
    }

    #[test]
    fn encoding_and_header_folding() {
        assert_eq!(uri_encode("a b/c~d", false), "a%20b%2Fc~d");
        assert_eq!(uri_encode("memdir/bafy.car", true), "memdir/bafy.car");
        assert_eq!(uri_encode("é", true), "%C3%A9");
        let h = headers(&[("My-Header1", "  a   b  "), ("my-header1", "c")]);
        let req = Request {
            method: "GET",
            path: "",
            query: &[("b".into(), "2".into()), ("a".into(), "x y".into())],
            headers: &h,
            payload_hash: EMPTY_SHA256,
        };
        let (canonical, signed) = canonical_request(&req);
        assert_eq!(signed, "my-header1");
        assert_eq!(
            canonical,
            format!("GET\n/\na=x%20y&b=2\nmy-header1:a b,c\n\nmy-header1\n{EMPTY_SHA256}")
        );
        assert_eq!(parse_authorization("Bearer x"), None);
    }
}
