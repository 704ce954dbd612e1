#!/usr/bin/env python3
"""libsodium interop for memdir's encrypted-ipfs envelope, with PyNaCl as the oracle.

An independent implementation of the envelope (src/sync/seal.rs module docs) and of the
`memdir-key-v1` key file format, in Python, on top of PyNaCl's `SealedBox`
(libsodium `crypto_box_seal`). Driven by ci/seal/run.sh:

  interop.py check-rust DIR   open every box memdir sealed (DIR/rust-cases.txt) with
                              PyNaCl; the plaintext must be exactly the envelope this
                              file builds. Then seal boxes for memdir to open
                              (DIR/py-cases.txt: `name expected-result`).
  interop.py summary DIR      merge DIR/py-results.txt and DIR/rust-results.txt, print
                              every result and `N passed, M failed` last; exit 1 on failure.
  interop.py vector           print the fixed envelope vector used in src/sync/seal.rs.
"""

import base64
import hashlib
import hmac
import os
import sys
from pathlib import Path

MAGIC = b"MEMDIR-SEAL-1"
MAC_KEY_LABEL = b"memdir-seal-1 mac key"
MIN_BUCKET = 4096
POW2_LIMIT = 1 << 20
LARGE_STEP = 64 << 10
OVERHEAD = 48


def bucket(n):
    if n <= MIN_BUCKET:
        return MIN_BUCKET
    if n <= POW2_LIMIT:
        return 1 << (n - 1).bit_length()
    return -(-n // LARGE_STEP) * LARGE_STEP


def envelope(root, car, secret):
    body = MAGIC + len(root).to_bytes(2, "big") + root + len(car).to_bytes(8, "big") + car
    mac_key = hmac.new(secret, MAC_KEY_LABEL, hashlib.sha256).digest()
    body += hmac.new(mac_key, body, hashlib.sha256).digest()
    return body + bytes(bucket(len(body)) - len(body))


MAGIC_2 = b"MEMDIR-SEAL-2"


def envelope2(root, lineage, car, secret):
    # Version 2: the lineage (each CID as 1 length byte and its bytes, after a 2-byte
    # count) between the root and the CAR length, under the same MAC.
    body = MAGIC_2 + len(root).to_bytes(2, "big") + root + len(lineage).to_bytes(2, "big")
    for c in lineage:
        body += bytes([len(c)]) + c
    body += len(car).to_bytes(8, "big") + car
    mac_key = hmac.new(secret, MAC_KEY_LABEL, hashlib.sha256).digest()
    body += hmac.new(mac_key, body, hashlib.sha256).digest()
    return body + bytes(bucket(len(body)) - len(body))


def read_lineage(path):
    data, out = path.read_bytes(), []
    while data:
        n = data[0]
        out.append(data[1 : 1 + n])
        data = data[1 + n :]
    return out


def lineage_file(lineage):
    return b"".join(bytes([len(c)]) + c for c in lineage)


def raw_cid(data):
    # CIDv1, raw codec (0x55), sha2-256 multihash.
    return bytes([0x01, 0x55, 0x12, 0x20]) + hashlib.sha256(data).digest()


def parse_key_file(path):
    lines = Path(path).read_text().split("\n")
    if lines[0].rstrip("\r") != "memdir-key-v1":
        raise ValueError(f"{path}: line 1 is not memdir-key-v1")
    fields = {}
    for line in lines[1:]:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, value = line.split(":", 1)
        fields[name.strip()] = base64.b64decode(value.strip(), validate=True)
    return fields["secret"], fields["public"]


def check_rust(d):
    from nacl.exceptions import CryptoError
    from nacl.public import PrivateKey, PublicKey, SealedBox

    d = Path(d)
    results = []

    def record(ok, what):
        results.append(("pass" if ok else "fail") + " " + what)

    key_path = d / "memdir.key"
    mode = os.stat(key_path).st_mode & 0o777
    record(mode == 0o600, f"key file mode is 0600 (got {mode:o})")
    secret, public = parse_key_file(key_path)
    sk = PrivateKey(secret)
    record(bytes(sk.public_key) == public, "key file public key matches its secret (X25519)")
    box = SealedBox(sk)

    for name in (d / "rust-cases.txt").read_text().split():
        root = (d / f"{name}.root").read_bytes()
        car = (d / f"{name}.car").read_bytes()
        sealed = (d / f"{name}.sealed").read_bytes()
        lineage_path = d / f"{name}.lineage"
        if lineage_path.exists():
            want = envelope2(root, read_lineage(lineage_path), car, secret)
        else:
            want = envelope(root, car, secret)
        try:
            got = box.decrypt(sealed)
            record(got == want, f"pynacl opens {name} ({len(car)}-byte CAR): envelope bytes identical")
        except CryptoError as e:
            record(False, f"pynacl opens {name}: {e}")
        record(len(sealed) == len(want) + OVERHEAD, f"{name} is {len(sealed)} bytes = bucket + 48")
        bad = bytearray(sealed)
        bad[len(bad) // 2] ^= 1
        try:
            box.decrypt(bytes(bad))
            record(False, f"pynacl rejects {name} with a flipped byte")
        except CryptoError:
            record(True, f"pynacl rejects {name} with a flipped byte")

    # Boxes for memdir to open, sealed by PyNaCl to the public key from memdir's key file.
    to_memdir = SealedBox(PublicKey(public))
    cases = []

    def write(name, root, car, sealed, expect, lineage=None):
        (d / f"{name}.root").write_bytes(root)
        (d / f"{name}.car").write_bytes(car)
        (d / f"{name}.sealed").write_bytes(sealed)
        if lineage is not None:
            (d / f"{name}.lineage").write_bytes(lineage_file(lineage))
        cases.append(f"{name} {expect}")

    # Version 2 (with a lineage): opens, and a box MACed with another key does not.
    lineage = [raw_cid(b"parent"), raw_cid(b"grandparent")]
    car = b"car with a lineage"
    root = raw_cid(car)
    write("py-l2", root, car, to_memdir.encrypt(envelope2(root, lineage, car, secret)), "ok", lineage)
    write("py-l0", root, car, to_memdir.encrypt(envelope2(root, [], car, secret)), "ok", [])
    forged_secret = bytes(PrivateKey.generate())
    write(
        "py-l2-forged", root, car,
        to_memdir.encrypt(envelope2(root, lineage, car, forged_secret)), "MacMismatch", lineage,
    )

    for i, n in enumerate([0, 7, 4040, 50_000, 300_000]):
        car = bytes((j * 7 + i) % 256 for j in range(n))
        root = raw_cid(car)
        write(f"py-{i}", root, car, to_memdir.encrypt(envelope(root, car, secret)), "ok")

    car = b"forged car"
    root = raw_cid(car)
    other_secret = bytes(PrivateKey.generate())
    write("py-forged", root, car, to_memdir.encrypt(envelope(root, car, other_secret)), "MacMismatch")
    write("py-forged-with-public", root, car, to_memdir.encrypt(envelope(root, car, public)), "MacMismatch")
    sealed = to_memdir.encrypt(envelope(root, car, secret))
    flipped = bytearray(sealed)
    flipped[-1] ^= 0x80
    write("py-flipped", root, car, bytes(flipped), "Decrypt")
    write("py-truncated", root, car, sealed[:100], "Truncated")
    other_pk = PrivateKey.generate().public_key
    write("py-other-recipient", root, car, SealedBox(other_pk).encrypt(envelope(root, car, secret)), "Decrypt")
    write("py-root-mismatch", raw_cid(b"another root"), car, sealed, "RootMismatch")
    bad_magic = bytearray(envelope(root, car, secret))
    bad_magic[0] ^= 1
    write("py-bad-magic", root, car, to_memdir.encrypt(bytes(bad_magic)), "BadMagic")
    nonzero_pad = bytearray(envelope(root, car, secret))
    nonzero_pad[-1] = 1
    write("py-nonzero-padding", root, car, to_memdir.encrypt(bytes(nonzero_pad)), "PaddingNotZero")
    write("py-unpadded", root, car, to_memdir.encrypt(envelope(root, car, secret) + bytes(4096)), "PaddingLength")

    (d / "py-cases.txt").write_text("\n".join(cases) + "\n")
    (d / "py-results.txt").write_text("\n".join(results) + "\n")


def summary(d):
    d = Path(d)
    lines = []
    for f in ["py-results.txt", "rust-results.txt"]:
        p = d / f
        if p.exists():
            lines += [l for l in p.read_text().splitlines() if l.strip()]
        else:
            lines.append(f"fail {f} missing (that phase did not run)")
    for l in lines:
        print(l)
    passed = sum(l.startswith("pass ") for l in lines)
    failed = len(lines) - passed
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def vector():
    secret = bytes([7] * 32)
    from nacl.public import PrivateKey

    root = raw_cid(b"memdir")
    env = envelope(root, b"car bytes", secret)
    print("public", bytes(PrivateKey(secret).public_key).hex())
    print("envelope_len", len(env))
    print("envelope_sha256", hashlib.sha256(env).hexdigest())


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "check-rust":
        check_rust(sys.argv[2])
    elif cmd == "summary":
        sys.exit(summary(sys.argv[2]))
    elif cmd == "vector":
        vector()
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
