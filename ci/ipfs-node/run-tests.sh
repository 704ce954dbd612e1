#!/usr/bin/env bash
# The real-node provider suite: starts a throw-away js-ipfs node on 127.0.0.1
# (ci/ipfs-node/start.sh; installs it on first use), runs the provider tests
# (provider conformance, the sync suite's node tests and the MCP server's push to
# the node) with MEMDIR_REQUIRE_IPFS=1 so a missing node fails instead of skipping,
# always stops the node, and exits with the tests' status. js-ipfs is deprecated
# upstream and kept pinned only as a Kubo-RPC server (see start.sh).
#
#   ci/ipfs-node/run-tests.sh [extra cargo test args...]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
state="$(mktemp -d -t memdir-ipfs-node.XXXXXX)"
cleanup() {
  "$here/stop.sh" "$state" || true
  rm -rf "$state"
}
trap cleanup EXIT

exports="$("$here/start.sh" "$state")"
eval "$exports"
echo "[ipfs-node] IPFS_API=$IPFS_API IPFS_GATEWAY=$IPFS_GATEWAY pid $IPFS_NODE_PID" >&2

cd "$root"
status=0
MEMDIR_REQUIRE_IPFS=1 cargo test --locked --test integration "$@" -- providers:: sync::node:: mcp_remote::node:: || status=$?
exit "$status"
