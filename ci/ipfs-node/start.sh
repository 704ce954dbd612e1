#!/usr/bin/env bash
# Starts a throw-away IPFS node for memdir's provider tests: js-ipfs 0.66.1
# (pinned by package-lock.json next to this script), offline, its Kubo-style
# RPC API and its gateway bound to free ports on 127.0.0.1 only.
#
# js-ipfs is deprecated upstream (archived; superseded by Helia, which has no Kubo
# RPC server) and Kubo cannot be installed offline here, so it stays pinned at
# 0.66.1 for one job: serving the Kubo RPC subset memdir's kubo provider speaks.
# Interoperability with today's JS stack (Helia, ipfs-car, @ipld/car, the
# exporter) is checked by ci/verify/ instead (spec/decisions.md, 2026-11-24).
#
#   eval "$(ci/ipfs-node/start.sh STATE_DIR)"
#
# Prints on stdout (everything else goes to stderr):
#   export IPFS_API=http://127.0.0.1:<port> IPFS_GATEWAY=http://127.0.0.1:<port> IPFS_NODE_PID=<pid>
# Stop it with ci/ipfs-node/stop.sh STATE_DIR (kills only the PID recorded there).
# Optional: IPFS_NODE_START_TIMEOUT (seconds to wait for the API, default 60).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
state="${1:?usage: start.sh STATE_DIR}"
mkdir -p "$state"
state="$(cd "$state" && pwd)"
say() { echo "[ipfs-node] $*" >&2; }

command -v node >/dev/null || { say "node is not installed"; exit 2; }
command -v curl >/dev/null || { say "curl is not installed"; exit 2; }

# 1. Install the pinned tree once (992 packages, ~290 MB; minutes on a cold cache).
jsipfs="$here/node_modules/.bin/jsipfs"
if [ ! -x "$jsipfs" ]; then
  say "installing ipfs@0.66.1 from package-lock.json ..."
  t0=$(date +%s)
  # Not `npm ci`: it refuses this lock because one optional dependency deep in
  # the tree (electron-fetch -> headless) points at a GitHub tarball. `npm
  # install --no-save` installs exactly the locked versions, skips that optional
  # package, and leaves package-lock.json untouched.
  (cd "$here" && npm install --no-save --no-audit --no-fund --loglevel=error >&2)
  say "installed in $(( $(date +%s) - t0 )) s"
fi

# 2. Node 20 lacks Promise.withResolvers, which the dependency tree calls.
export NODE_OPTIONS="--require $here/promise-with-resolvers.cjs ${NODE_OPTIONS:-}"
export IPFS_PATH="$state/repo"

# 3. Two free loopback ports, asked from the kernel.
free_port() {
  node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { process.stdout.write(String(s.address().port)); s.close() })'
}
api_port="$(free_port)"
gw_port="$(free_port)"
while [ "$gw_port" = "$api_port" ]; do gw_port="$(free_port)"; done

# 4. A fresh repo: no bootstrap peers, no discovery, no swarm listeners, and the
#    API and gateway on 127.0.0.1 only.
if [ ! -f "$IPFS_PATH/config" ]; then
  "$jsipfs" init --profile test --empty-repo >"$state/init.log" 2>&1 || {
    say "jsipfs init failed:"; cat "$state/init.log" >&2; exit 1; }
fi
node - "$IPFS_PATH/config" "$api_port" "$gw_port" <<'JS'
const fs = require('fs')
const [file, api, gw] = process.argv.slice(2)
const config = JSON.parse(fs.readFileSync(file, 'utf8'))
config.Addresses = {
  ...config.Addresses,
  Swarm: [], Announce: [], NoAnnounce: [], Delegates: [], RPC: '',
  API: `/ip4/127.0.0.1/tcp/${api}`,
  Gateway: `/ip4/127.0.0.1/tcp/${gw}`
}
config.Bootstrap = []
config.Discovery = { MDNS: { Enabled: false, Interval: 10 }, webRTCStar: { Enabled: false } }
config.Pubsub = { ...(config.Pubsub || {}), Enabled: false }
fs.writeFileSync(file, JSON.stringify(config, null, 2))
JS

# 5. Start offline (no libp2p at all) and wait, bounded, for the API.
t0=$(date +%s%N)
nohup "$jsipfs" daemon --offline >"$state/daemon.log" 2>&1 </dev/null &
pid=$!
echo "$pid" >"$state/daemon.pid"
deadline=$(( $(date +%s) + ${IPFS_NODE_START_TIMEOUT:-60} ))
until curl -sf -X POST "http://127.0.0.1:$api_port/api/v0/version" >/dev/null 2>&1; do
  if ! kill -0 "$pid" 2>/dev/null; then
    say "the daemon exited:"; cat "$state/daemon.log" >&2; exit 1
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    say "the API did not answer in time:"; cat "$state/daemon.log" >&2
    kill "$pid" 2>/dev/null || true
    exit 1
  fi
  sleep 0.1
done
say "ready in $(( ($(date +%s%N) - t0) / 1000000 )) ms (pid $pid, state $state)"
echo "export IPFS_API=http://127.0.0.1:$api_port IPFS_GATEWAY=http://127.0.0.1:$gw_port IPFS_NODE_PID=$pid"
