#!/usr/bin/env bash
# Drives `memdir mcp` with the official MCP Python SDK (tests/mcp/client.py).
#
#   ci/mcp/run.sh
#
# Creates a virtualenv under target/mcp-venv (or $MCP_VENV), installs the SDK pinned in
# ci/mcp/requirements.txt, builds memdir, and runs the client against
# `target/debug/memdir mcp --dir <tmp>`. The client talks to the server over stdio only.
# Prints `N passed, M failed` last; exits non-zero on any failure.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"
venv="${MCP_VENV:-$target/mcp-venv}"
req="$root/ci/mcp/requirements.txt"

. "$root/ci/venv.sh"
venv_with "$venv" "$req"

cargo build --quiet --locked --bin memdir
exec "$venv/bin/python" "$root/tests/mcp/client.py" --memdir "$target/debug/memdir"
