"""The checks of ci/claude-code/run.sh, on what it left in WORK.

Reads what Claude Code printed (WORK/<conversation>.json), what it sent to the scripted
model (WORK/requests.jsonl, written by model.py as the requests arrived) and the memory
directory on disk. Prints `ok` or `FAIL` per check and `N passed, M failed`; exits 1 on
any failure.
Usage: check.py WORK MEMORY_DIR MEMDIR_BIN
"""
import json
import os
import sys

work, mem, memdir = sys.argv[1:4]
PREFIX = "mcp__memdir__"
passed = failed = 0


def check(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok    {what}")
    else:
        failed += 1
        print(f"FAIL  {what}" + (f": {detail}" if detail else ""))


def read(name):
    try:
        with open(os.path.join(work, name), encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


prompts = {"remember": "Remember that my favourite editor is Helix.",
           "recall": "What is my favourite editor?",
           "context": "What do you remember about me?"}
requests = [json.loads(line) for line in read("requests.jsonl").splitlines() if line.strip()]
decided = [r.get("decided") or {} for r in requests]

# Step 1: the README's registration.
line = read("add.line").strip()
want = f"claude mcp add --scope user memdir -- {memdir} mcp --dir {mem} --text-only"
check(line == want, "memdir mcp config --client claude-code prints the user-scope `claude mcp add` line", f"{line!r}, expected {want!r}")
try:
    servers = json.loads(read("home/.claude.json")).get("mcpServers", {})
except ValueError:
    servers = {}
entry = servers.get("memdir", {})
check(entry.get("command") == memdir and entry.get("args") == ["mcp", "--dir", mem, "--text-only"],
      "the line run as printed put memdir in ~/.claude.json (user scope)", json.dumps(servers))
listed = read("list.out")
check(any(l.startswith("memdir:") and "Connected" in l for l in listed.splitlines()),
      "`claude mcp list` connects to memdir", listed.strip())


def conversation(name, tool, expect_on_disk=False):
    """Checks of one `claude -p` run whose scripted model calls TOOL once."""
    rc = read(f"{name}.rc").strip()
    out = read(f"{name}.json")
    try:
        result = json.loads(out)
    except ValueError:
        result = {}
    check(rc == "0" and result.get("type") == "result" and result.get("subtype") == "success"
          and result.get("is_error") is False,
          f"{name}: claude -p exits 0 with a success result", f"exit {rc}, {out.strip()[:400]} {read(name + '.err').strip()[:400]}")
    mine = [d for d in decided if d.get("prompt") == prompts[name]]
    firsts = [d for d in mine if d.get("kind") == "prompt"]
    check(len(firsts) == 1 and PREFIX + tool in firsts[0]["memdir_loaded"] + firsts[0]["memdir_deferred"],
          f"{name}: the first request offered {PREFIX + tool} "
          f"({'deferred, loaded by ToolSearch' if firsts and PREFIX + tool not in firsts[0]['memdir_loaded'] else 'in tools'})",
          json.dumps(firsts)[:600])
    check(firsts and firsts[0].get("memdir_instructions"), f"{name}: memdir's MCP instructions reached the system prompt")
    calls = [d for d in mine if (d.get("tool_use") or {}).get("name") == PREFIX + tool]
    check(len(calls) == 1 and not calls[0].get("problems") and PREFIX + tool in calls[0]["memdir_loaded"],
          f"{name}: with {tool}'s schema in the request, the scripted model called it: {json.dumps(calls[0]['tool_use']['input']) if calls else ''}",
          json.dumps(mine)[:800])
    if firsts and PREFIX + tool not in firsts[0]["memdir_loaded"]:
        searched = [d for d in mine if d.get("tool") == "ToolSearch"]
        check(len(searched) == 1 and searched[0].get("references") == [PREFIX + tool],
              f"{name}: Claude Code answered ToolSearch with a tool_reference to {tool}", json.dumps(searched)[:400])
    results = [d for d in mine if d.get("kind") == "tool_result" and d.get("tool") == PREFIX + tool]
    check(len(results) == 1 and not results[0].get("is_error"),
          f"{name}: Claude Code sent back the tool_result of {tool}, not an error",
          json.dumps(results)[:600])
    said = results[0]["content"] if results else ""
    return result, said, firsts, calls


# Step 2: remember.
result, said, firsts, calls = conversation("remember", "remember")
offered = firsts[0]["memdir_deferred"] if firsts else []
if firsts:
    f = firsts[0]
    print(f"      the first request: {len(f['tools'])} tools in `tools` ({', '.join(f['tools'])}); "
          f"{len(f['memdir_deferred'])} of memdir's named as deferred, none loaded")
if calls:
    c = calls[0]
    print(f"      after ToolSearch: {len(c['tools'])} tools; remember's definition as Claude Code sent it: "
          f"{c['memdir_tools_json_bytes']} bytes of compact JSON, {c['memdir_tools_json_chars']} characters "
          f"({c['memdir_tools_json_chars'] / 4:.0f} tokens at characters / 4); all tools {c['all_tools_json_bytes']} bytes")
check("created" in said, "remember: memdir's answer says created", said[:300])
files = {f: open(os.path.join(mem, f), encoding="utf-8").read()
         for f in sorted(os.listdir(mem)) if f.endswith(".md") and f != "MEMORY.md"} if os.path.isdir(mem) else {}
helix = [f for f, text in files.items() if "Helix" in text]
check(len(helix) == 1, "remember: the memory directory holds one memory file with \"Helix\" (read from disk)",
      f"files: {sorted(files)}")
if helix:
    print(f"      {os.path.join(mem, helix[0])}:")
    print("".join(f"        {l}\n" for l in files[helix[0]].splitlines()), end="")
index = open(os.path.join(mem, "MEMORY.md"), encoding="utf-8").read() if os.path.isfile(os.path.join(mem, "MEMORY.md")) else ""
check(helix and helix[0][:-3] in index, "remember: MEMORY.md lists it", index[:300])

# Step 3: recall, in a new process.
result, said, _, _ = conversation("recall", "recall")
print(f"      recall's tool_result as Claude Code sent it: {said!r}")
check("Helix" in said, "recall: the tool_result Claude Code sent to the model holds \"Helix\"", said[:300])
def is_json(text):
    try:
        json.loads(text)
        return True
    except ValueError:
        return False
# The entry `mcp config` printed serves --text-only, so the model reads memdir's text
# (spec/mcp.md#text-only), not the structured result Claude Code would hand it instead.
check(not is_json(said) and said.splitlines()[0].split()[1:2] == ["user_favourite_editor"],
      "recall: the model was handed memdir's text (score, key, name, the matching line), not JSON", said[:300])
answer = result.get("result", "")
check("Helix" in answer and answer == f'memdir\'s recall answered: "{said}"',
      "recall: claude -p's answer quotes that tool_result, \"Helix\" included", answer[:300])

# Step 4: memory_context, in a new process, tool search off.
result, said, firsts, _ = conversation("context", "memory_context")
if firsts and firsts[0].get("memdir_tools_json_chars"):
    f = firsts[0]
    tokens = f["memdir_tools_json_chars"] / 4
    print(f"      with ENABLE_TOOL_SEARCH=false the first request's tools: {len(f['tools'])}, "
          f"{len(f['memdir_loaded'])} of them memdir's; memdir's as Claude Code sent them: "
          f"{f['memdir_tools_json_bytes']} bytes of compact JSON, {f['memdir_tools_json_chars']} characters "
          f"= {tokens:.0f} tokens at characters / 4; all tools {f['all_tools_json_bytes']} bytes")
    check(not f["memdir_deferred"] and f["memdir_loaded"] == offered,
          "context: with tool search off, every memdir tool that remember's run deferred is in `tools`",
          f"in tools {f['memdir_loaded']}, deferred {f['memdir_deferred']}, deferred before {offered}")
    check(tokens <= 4000, "context: memdir's tools as Claude Code sends them stay within 4,000 tokens (characters / 4)", f"{tokens:.0f}")
else:
    check(False, "context: with tool search off the first request carries memdir's tools", json.dumps(firsts)[:400])
print(f"      memory_context's tool_result as Claude Code sent it: {said!r}")
check("Helix" in said, "memory_context: the context block Claude Code sent to the model holds \"Helix\"", said[:300])
check(said.startswith("# Agent Memory\n"), "memory_context: the model was handed the context block itself, not JSON", said[:300])
answer = result.get("result", "")
check("Helix" in answer and said in answer, "memory_context: claude -p's answer quotes it", answer[:300])

# What Claude Code asked of the loopback API.
endpoints = sorted({f"{r['method']} {r['path']}" for r in requests})
print(f"      Claude Code's requests to the loopback API: {len(requests)}, endpoints: {', '.join(endpoints)}")
check(all(r.get("headers", {}).get("x-api-key") == "test-key" for r in requests if r["method"] == "POST"),
      "every request carried ANTHROPIC_API_KEY (x-api-key: test-key)")
check(not [r for r in requests if r["path"].split("?")[0] not in ("/v1/messages", "/v1/messages/count_tokens")],
      "Claude Code asked only for endpoints the scripted model serves", ", ".join(endpoints))

print(f"claude-code: {passed} passed, {failed} failed")
sys.exit(1 if failed or not passed else 0)
