#!/usr/bin/env bash
# memdir ⇄ the three.ws runtime's own memory module, both ways (issue 17).
#
#   ci/threews/run.sh
#
# The runtime (Apache-2.0) is read from `shared/oracles/threews/` beside the clone
# (`$THREEWS_ORACLE` overrides), never copied into the project. Builds the memdir binary,
# then runs ci/threews/harness.mjs under Node 20, which shims localStorage, fetch and the
# clock, builds memories with the runtime's API and drives memdir for the other side.
# Prints `N passed, M failed` last; exits non-zero on any failure.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
oracle="${THREEWS_ORACLE:-$root/../shared/oracles/threews}"
if [ ! -f "$oracle/index.js" ]; then
    echo "the three.ws runtime is not at $oracle (expected shared/ beside the clone)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
node="${NODE:-node}"
major="$("$node" -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 20 ]; then
    echo "Node 20 or later is needed, found $("$node" --version)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
cargo build --quiet --locked
target="${CARGO_TARGET_DIR:-$root/target}"
exec "$node" "$root/ci/threews/harness.mjs" "$oracle" "$target/debug/memdir"
