#!/usr/bin/env bash
# CID oracle suite: `memdir cid` must print the same root CID as the reference JS
# importer (ipfs-unixfs-importer 17.1.1, profile unixfs-v1-2025) on generated trees:
# a memory directory, files over 1 MiB, directories over 1,000 and 4,000 entries (HAMT),
# the flat/HAMT threshold, unicode names, empty files and folders.
# Usage: ci/oracle/check.sh [path/to/memdir]   (default: target/debug/memdir)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${1:-$root/target/debug/memdir}"
[ -x "$bin" ] || { echo "oracle: $bin is not built (cargo build)" >&2; exit 2; }
if [ ! -d "$here/node_modules/ipfs-unixfs-importer" ]; then
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 "$here/gen_trees.py" "$work/trees" >/dev/null
passed=0; failed=0
for tree in "$work"/trees/*/; do
  tree="${tree%/}"
  name="$(basename "$tree")"
  want="$(node "$here/oracle.mjs" "$tree")"
  got="$("$bin" --dir "$tree" cid)"
  if [ "$want" = "$got" ]; then
    passed=$((passed + 1)); echo "ok    $name $got"
  else
    failed=$((failed + 1)); echo "FAIL  $name oracle=$want memdir=$got"
  fi
done
echo "oracle: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
