#!/usr/bin/env bash
# Independent verifiers of what memdir pushes, and CARs from other tools it must pull
# (spec/sync.md#interop, spec/sync.md#foreign-dags). Test-only; Node 20, no network but
# `npm ci` (pinned by package-lock.json); about 30 s of CPU, under 2 minutes here.
#
# 1. For generated memory directories (unicode names, empty files, a note above 1 MiB,
#    4,000 files, the timeline/ folder): `memdir push` to a folder remote, then
#    verify.mjs checks the CAR with @ipld/car (every block re-hashed), exports every
#    path with ipfs-unixfs-exporter and compares it with the disk, and imports the
#    directory with @helia/unixfs under the unixfs-v1-2025 settings: same root as
#    `memdir cid`. A tampered copy must fail the check (the check can fail).
# 2. foreign.mjs writes CARs of a 1,200-entry memory as other tools do (ipfs-car,
#    which shards it into a HAMT; Helia without a profile; CIDv0 with dag-pb leaves and
#    256 KiB chunks; HAMT everywhere; mtime/mode): `memdir pull` must accept each, give
#    the same files, and report the profile root the importer computes; a tampered
#    copy exits 4.
# Usage: ci/verify/run.sh [path/to/memdir]   (default: target/debug/memdir)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${1:-$root/target/debug/memdir}"
[ -x "$bin" ] || { echo "verify: $bin is not built (cargo build)" >&2; exit 2; }
if [ ! -d "$here/node_modules/@helia/unixfs" ]; then
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export HOME="$work/home"
mkdir -p "$HOME"
unset XDG_CONFIG_HOME MEMDIR_OFFLINE IPFS_API PINATA_JWT FILEBASE_KEY WEB3_STORAGE_TOKEN MEMDIR_KEY_FILE
passed=0; failed=0
ok() { passed=$((passed + 1)); echo "ok    $*"; }
bad() { failed=$((failed + 1)); echo "FAIL  $*"; }
json() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get(sys.argv[1], ""))' "$1"; }

echo "-- what memdir pushes, checked by @ipld/car, ipfs-unixfs-exporter and Helia"
python3 "$here/gen_memories.py" "$work/m"
for dir in "$work"/m/*/; do
  dir="${dir%/}"; name="$(basename "$dir")"
  remote="$work/remote-$name"
  "$bin" --dir "$dir" init --provider folder >/dev/null
  cid="$("$bin" --dir "$dir" cid)"
  pushed="$(MEMDIR_FOLDER="$remote" "$bin" --dir "$dir" push --json | json root)"
  if [ "$pushed" != "$cid" ]; then bad "$name: push $pushed != cid $cid"; continue; fi
  if out="$(cd "$here" && node verify.mjs "$remote/cars/$pushed.car" "$dir" "$cid" 2>&1)"; then
    ok "$name: $out"
  else
    bad "$name: $out"
  fi
done
# The check can fail: one byte of the 1 MiB note flipped in a copy of its CAR.
big="$work/m/big"; car="$(ls "$work"/remote-big/cars/*.car)"
cp "$car" "$work/tampered.car"
python3 - "$work/tampered.car" <<'PY'
import sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[len(b) // 2] ^= 1; open(p, "wb").write(b)
PY
if (cd "$here" && node verify.mjs "$work/tampered.car" "$big" "$("$bin" --dir "$big" cid)") >/dev/null 2>&1; then
  bad "a tampered CAR passed verify.mjs"
else
  ok "a tampered CAR fails verify.mjs"
fi

echo "-- CARs other tools write, pulled by memdir"
python3 "$here/gen_memories.py" "$work/f" foreign
src="$work/f/many1200"
mkdir -p "$work/foreign"
(cd "$here" && node foreign.mjs "$src" "$work/foreign" ipfs-car helia-default cidv0-dagpb-256k cidv1-256k-trickle hamt-small mtime-mode) > "$work/foreign/roots.jsonl"
while read -r line; do
  case_="$(echo "$line" | json case)"; froot="$(echo "$line" | json root)"; proot="$(echo "$line" | json profile_root)"
  remote="$work/fremote-$case_"; dir="$work/fdir-$case_"
  mkdir -p "$remote/cars"
  cp "$work/foreign/$case_.car" "$remote/cars/$froot.car"
  "$bin" --dir "$dir" init --provider folder >/dev/null
  if ! report="$(MEMDIR_FOLDER="$remote" "$bin" --dir "$dir" pull "$froot" --json 2>"$work/err")"; then
    bad "$case_ ($froot): pull failed: $(cat "$work/err")"; continue
  fi
  got="$(echo "$report" | json plain_root)"
  if [ "$got" != "$proot" ]; then bad "$case_: re-encoded to $got, the importer's profile root is $proot"; continue; fi
  flag="$(echo "$report" | json re_encoded)"
  if [ "$froot" != "$proot" ] && [ "$flag" != "True" ]; then bad "$case_: re_encoded is not reported"; continue; fi
  if [ "$froot" = "$proot" ] && [ -n "$flag" ]; then bad "$case_: re_encoded reported for a profile root"; continue; fi
  # MEMORY.md is rebuilt after a pull; every other file must be byte-identical.
  if ! diff -r -x .memdir -x MEMORY.md "$src" "$dir" >/dev/null; then bad "$case_: pulled files differ from the source"; continue; fi
  if [ "$froot" = "$proot" ]; then
    ok "$case_: $froot pulled (already the profile root)"
  else
    ok "$case_: $froot pulled, re-encoded to $proot"
  fi
done < "$work/foreign/roots.jsonl"
# A tampered foreign CAR (CIDv0, dag-pb leaves) still exits 4.
line="$(grep '"cidv0-dagpb-256k"' "$work/foreign/roots.jsonl")"; froot="$(echo "$line" | json root)"
remote="$work/tremote"; mkdir -p "$remote/cars"
cp "$work/foreign/cidv0-dagpb-256k.car" "$remote/cars/$froot.car"
python3 - "$remote/cars/$froot.car" <<'PY'
import sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[len(b) - 100] ^= 1; open(p, "wb").write(b)
PY
"$bin" --dir "$work/tdir" init --provider folder >/dev/null
set +e
MEMDIR_FOLDER="$remote" "$bin" --dir "$work/tdir" pull "$froot" >/dev/null 2>"$work/err"; code=$?
set -e
if [ "$code" = 4 ] && grep -q "does not match its hash" "$work/err"; then
  ok "a tampered foreign CAR exits 4 ($(head -1 "$work/err" | cut -c1-140))"
else
  bad "a tampered foreign CAR: exit $code: $(cat "$work/err")"
fi

echo "verify: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
