#!/usr/bin/env bash
# Stops the node that ci/ipfs-node/start.sh STATE_DIR started: only the PID
# recorded in STATE_DIR/daemon.pid, first politely, then (after 5 s) for good.
set -euo pipefail
state="${1:?usage: stop.sh STATE_DIR}"
pidfile="$state/daemon.pid"
[ -f "$pidfile" ] || { echo "[ipfs-node] no $pidfile; nothing to stop" >&2; exit 0; }
pid="$(cat "$pidfile")"
case "$pid" in ''|*[!0-9]*) echo "[ipfs-node] bad pid file $pidfile" >&2; exit 1 ;; esac
if kill -0 "$pid" 2>/dev/null; then
  kill "$pid"
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid"; fi
fi
rm -f "$pidfile"
echo "[ipfs-node] stopped $pid" >&2
