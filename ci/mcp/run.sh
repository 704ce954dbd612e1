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
python="${PYTHON:-python3}"
target="${CARGO_TARGET_DIR:-$root/target}"
venv="${MCP_VENV:-$target/mcp-venv}"
req="$root/ci/mcp/requirements.txt"

if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
# Reinstall only when the pins changed.
stamp="$venv/.requirements"
if ! cmp -s "$req" "$stamp" 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
    cp "$req" "$stamp"
fi

cargo build --quiet --locked --bin memdir
exec "$venv/bin/python" "$root/tests/mcp/client.py" --memdir "$target/debug/memdir"
