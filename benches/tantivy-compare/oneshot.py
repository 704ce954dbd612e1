#!/usr/bin/env python3
"""Interleaved one-shot wall/peak-RSS timing: tantivy-compare query vs memdir recall/context.
Usage: oneshot.py ROUNDS OUT.csv   (env MEMDIR_BIN, default memdir on PATH; MEMDIR_COMPARE, below)
Each round: for each of the first 20 queries, run the 3 commands once each, order rotated per round.
Wall = perf_counter around posix_spawn..wait4; peak RSS = ru_maxrss of the child (same source as /usr/bin/time %M)."""
import os, sys, time, statistics, csv
TB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "target", "release", "tantivy-compare")
MB = os.environ.get("MEMDIR_BIN", "memdir")
# (name, memory directory, tantivy index, questions): MEMDIR_COMPARE names them as
# name:dir:index:questions, comma-separated.
CORPORA = [tuple(c.split(":")) for c in os.environ.get(
    "MEMDIR_COMPARE",
    "10k:/dev/shm/r10k:/dev/shm/tantivy-10k:/dev/shm/queries.txt,"
    "100k:/dev/shm/big/r100k:/dev/shm/tantivy-100k:/dev/shm/big/queries.txt").split(",")]
rounds = int(sys.argv[1]); out = sys.argv[2]
devnull = os.open(os.devnull, os.O_WRONLY)
def run(argv):
    fa = [(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)]
    t0 = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=fa)
    _, status, ru = os.wait4(pid, 0)
    t = time.perf_counter() - t0
    return t, ru.ru_maxrss, os.waitstatus_to_exitcode(status)
rows = []
for name, d, idx, qf in CORPORA:
    qs = [l.rstrip("\n") for l in open(qf) if l.strip()][:20]
    cmds = {
        "tantivy_query": lambda q: [TB, "query", idx, q],
        "memdir_recall": lambda q: [MB, "--dir", d, "recall", q],
        "memdir_context": lambda q: [MB, "--dir", d, "context", "--max-tokens", "8192", "--query", q],
    }
    names = list(cmds)
    for q in qs[:2]:  # warm-up, not counted
        for n in names: run(cmds[n](q))
    la0 = open("/proc/loadavg").read().split()[:3]
    for r in range(rounds):
        order = names[r % 3:] + names[:r % 3]
        for qi, q in enumerate(qs):
            for n in order:
                t, rss, rc = run(cmds[n](q))
                rows.append((name, n, r, qi, t, rss, rc))
    la1 = open("/proc/loadavg").read().split()[:3]
    print(f"[{name}] loadavg before {la0} after {la1}", flush=True)
with open(out, "w", newline="") as f:
    w = csv.writer(f); w.writerow(["corpus", "cmd", "round", "query", "wall_s", "maxrss_kb", "rc"]); w.writerows(rows)
def p(xs, q):
    xs = sorted(xs); k = (len(xs) - 1) * q; i = int(k)
    return xs[i] if i + 1 >= len(xs) else xs[i] + (xs[i + 1] - xs[i]) * (k - i)
print(f"{'corpus':6} {'cmd':15} {'n':>4} {'min_ms':>8} {'med_ms':>8} {'p95_ms':>8} {'max_ms':>8} {'medRSS_MB':>9} {'maxRSS_MB':>9} bad_rc")
for name, *_ in CORPORA:
    for n in ["tantivy_query", "memdir_recall", "memdir_context"]:
        s = [r for r in rows if r[0] == name and r[1] == n]
        ts = [r[4] * 1000 for r in s]; rs = [r[5] / 1024 for r in s]
        print(f"{name:6} {n:15} {len(s):4} {min(ts):8.1f} {statistics.median(ts):8.1f} {p(ts,.95):8.1f} {max(ts):8.1f} {statistics.median(rs):9.1f} {max(rs):9.1f} {sum(1 for r in s if r[6])}")
