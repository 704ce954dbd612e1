#!/usr/bin/env bash
# libsodium interop for the encrypted-ipfs envelope (src/sync/seal.rs), with real PyNaCl.
#
#   ci/seal/run.sh
#
# Creates a virtualenv under target/seal-venv (or $SEAL_VENV), installs PyNaCl pinned in
# ci/seal/requirements.txt, then:
#   1. Rust (tests/seal.rs `pynacl_interop`, phase export) writes a memdir-v1 key file and
#      boxes sealed by memdir;
#   2. ci/seal/interop.py opens them with PyNaCl's SealedBox (the plaintext must be exactly
#      the envelope Python builds independently), then seals boxes of its own to the
#      public key from memdir's key file: valid ones, forgeries, tampered ones;
#   3. Rust (phase import) opens PyNaCl's boxes; each must open or fail as expected.
# Prints `N passed, M failed` last; exits non-zero on any failure.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"
venv="${SEAL_VENV:-$target/seal-venv}"
req="$root/ci/seal/requirements.txt"

. "$root/ci/venv.sh"
venv_with "$venv" "$req"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

rust_phase() {
    MEMDIR_SEAL_INTEROP_DIR="$work" MEMDIR_SEAL_INTEROP_PHASE="$1" \
        cargo test --quiet --locked --test integration seal::pynacl_interop -- --exact >"$work/cargo-$1.log" 2>&1
}

status=0
rust_phase export || { echo "fail rust export phase (see below)" >"$work/py-results.txt"; cat "$work/cargo-export.log" >&2; status=1; }
if [ "$status" = 0 ]; then
    "$venv/bin/python" "$root/ci/seal/interop.py" check-rust "$work" || status=1
fi
if [ "$status" = 0 ]; then
    rust_phase import || cat "$work/cargo-import.log" >&2
fi
"$venv/bin/python" "$root/ci/seal/interop.py" summary "$work"
