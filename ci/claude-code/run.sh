#!/usr/bin/env bash
# The real Claude Code CLI (@anthropic-ai/claude-code 2.1.332 from npm) as the MCP client
# of memdir, set up the way the README tells a new user to, talking to a SCRIPTED model:
# ci/claude-code/model.py answers Anthropic's Messages API on 127.0.0.1 with replies
# written in advance. No model runs and nothing leaves the machine; the client, its MCP
# wiring and memdir are real.
#
#   ci/claude-code/run.sh path/to/memdir
#
# 1. `memdir --dir ~/agent/memory init`, `mcp config --client claude-code`, and the
#    `claude mcp add …` line it prints run as printed; `claude mcp list` connects.
# 2. `claude -p "Remember that my favourite editor is Helix."`: the scripted model finds
#    memdir's tools offered (2.1.332 defers MCP tools: it loads remember's schema with
#    Claude Code's ToolSearch tool first) and calls remember with an input checked
#    against that schema; a memory file holding "Helix" is on disk afterwards.
# 3. A new `claude -p "What is my favourite editor?"`: the scripted model calls recall;
#    the tool_result Claude Code sends back holds "Helix", and the answer (which quotes
#    that tool_result) does too.
# 4. A new `claude -p "What do you remember about me?"` with ENABLE_TOOL_SEARCH=false
#    (all of memdir's tools in the request, at most 4,000 tokens as characters / 4):
#    memory_context, the same way.
#
# HOME is a fresh temporary folder, so nothing of this machine's user is read or
# written. Installs the pinned package with `npm ci` (package-lock.json; the native
# binary comes in the optional dependency @anthropic-ai/claude-code-linux-x64). Needs
# python3 (standard library only) for the model and the checks. Prints each check,
# `N passed, M failed` last; exits non-zero on any failure.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="${1:?usage: ci/claude-code/run.sh path/to/memdir}"
[ -x "$bin" ] || { echo "claude-code: $bin is not built (cargo build)" >&2; exit 2; }
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"

cd "$here"
# Reinstall only when the lock file changed. The package says engines node>=22; npm ci
# only warns (engine-strict is off), and the CLI is a native binary that needs no node.
stamp="node_modules/.package-lock.stamp"
if ! cmp -s package-lock.json "$stamp" 2>/dev/null; then
    npm ci --no-audit --no-fund --loglevel=error --engine-strict=false
    cp package-lock.json "$stamp"
fi
claude_bin="$here/node_modules/.bin"

work="$(mktemp -d)"
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/home" "$work/tmp" "$work/project"

python3 "$here/model.py" "$work/port" "$work/requests.jsonl" 2>"$work/model.err" &
server_pid=$!
for _ in $(seq 1 50); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { echo "claude-code: the scripted model did not start" >&2; cat "$work/model.err" >&2; exit 1; }
port="$(cat "$work/port")"
echo "scripted model (not a model: replies written in advance) on http://127.0.0.1:$port"

# Everything Claude Code reads comes from here: a clean environment, a fresh HOME, the
# loopback API, and every switch that stops a request to anywhere else.
run() {
    env -i PATH="$claude_bin:/usr/local/bin:/usr/bin:/bin" HOME="$work/home" TMPDIR="$work/tmp" \
        LANG=C.UTF-8 TERM=dumb \
        ANTHROPIC_BASE_URL="http://127.0.0.1:$port" ANTHROPIC_API_KEY=test-key \
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 \
        DISABLE_ERROR_REPORTING=1 DISABLE_BUG_COMMAND=1 CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY=1 \
        CLAUDE_CODE_DISABLE_AUTO_MEMORY=1 \
        "$@"
}

version="$(run timeout 60 claude --version)"
[ "$version" = "2.1.332 (Claude Code)" ] || { echo "claude-code: unexpected version: $version" >&2; exit 1; }
echo "claude --version: $version"

# Step 1, as the README's "The first hour" says (HOME is the temporary one).
export HOME="$work/home"
mem=~/agent/memory
"$bin" --dir ~/agent/memory init >"$work/init.out"
"$bin" --dir ~/agent/memory mcp config --client claude-code >"$work/add.line"
line="$(cat "$work/add.line")"
echo "memdir printed: $line"
case "$line" in
    "claude mcp add "*) ;;
    *) echo "claude-code: mcp config did not print a \`claude mcp add\` line" >&2; exit 1 ;;
esac
# The printed line, run as printed by a shell, with the real claude first on PATH.
(cd "$work/project" && run timeout 60 bash -c "$line") >"$work/add.out" 2>&1 || { cat "$work/add.out" >&2; exit 1; }
(cd "$work/project" && run timeout 60 claude mcp list) >"$work/list.out" 2>&1 || true
cat "$work/list.out"

# Steps 2 to 4: three separate `claude -p` processes in a project folder.
converse() {  # NAME PROMPT TOOL [VAR=VALUE…]
    local name="$1" prompt="$2" tool="$3" rc=0
    shift 3
    (cd "$work/project" && run "$@" timeout 120 claude -p "$prompt" --output-format json \
        --allowedTools "$tool") >"$work/$name.json" 2>"$work/$name.err" </dev/null || rc=$?
    echo "$rc" >"$work/$name.rc"
    echo "${*:+$* }claude -p \"$prompt\" --output-format json --allowedTools $tool: exit $rc"
}
# Claude Code's defaults: MCP tools are deferred, the model loads one with ToolSearch.
converse remember "Remember that my favourite editor is Helix." mcp__memdir__remember
converse recall "What is my favourite editor?" mcp__memdir__recall
# Tool search off: every memdir tool's schema is in the request's tools from the start.
converse context "What do you remember about me?" mcp__memdir__memory_context ENABLE_TOOL_SEARCH=false

python3 "$here/check.py" "$work" "$mem" "$bin"
