#!/usr/bin/env python3
"""Drive `memdir mcp` with the official MCP Python SDK (the `mcp` package).

A real client, over stdio only: it initializes, lists and calls every tool (edit,
rename, recent activity, search/fetch included; `memory`, Claude's memory tool, against
the `anthropic` SDK's reference implementation), reads the resources and the template,
completes keys, gets the prompts, checks the files on disk after each call, checks the error results of bad
input, edits a memory file by hand while the server runs and waits for the server to
say so (2025 protocol: resources/subscribe; 2026 protocol: subscriptions/listen), runs
two servers on one directory at once, and configures the server with a three.ws
manifest.

    python tests/mcp/client.py --memdir target/debug/memdir

Prints one line per check and a final `N passed, M failed`; exits non-zero on any
failure. ci/mcp/run.sh installs the pinned SDK and runs this.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import traceback
import warnings
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, ClientSession, MCPDeprecationWarning, MCPError, StdioServerParameters
from mcp import types
from mcp.client.stdio import stdio_client

# resources/subscribe is deprecated in the 2026 protocol, but 2025 clients use it: test it.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

NOW = "2026-04-14T12:00:00Z"
DAY = "2026-04-14"
# The tools of a local directory; the sync tools are listed only when it syncs
# (spec/mcp.md#tools).
TOOLS = {
    "remember", "recall", "read_memory", "forget", "note", "memory_context", "list_memories",
    "edit_memory", "rename_memory", "recent_activity", "related", "search", "fetch",
    "get_state", "set_state", "session_transcript", "memory",
}
SYNC_TOOLS = {"sync", "sync_status"}
# What every conversation pays for tools/list, in tokens (characters / 4).
TOOLS_LIST_LIMIT = 4000
STEP_TIMEOUT = 60  # seconds for one scenario; every wait below is bounded
NOTIFY_TIMEOUT = 10


class Suite:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def check(self, name: str, ok: bool, detail: Any = "") -> bool:
        if ok:
            self.passed += 1
            print(f"ok    {name}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL  {name}: {detail}", flush=True)
        return ok


S = Suite()
MEMDIR = "memdir"


def cli(dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Runs the memdir CLI on `dir` with the fixed clock."""
    env = {k: v for k, v in os.environ.items() if k != "MEMDIR_DIR"}
    env["MEMDIR_NOW"] = NOW
    return subprocess.run(
        [MEMDIR, "--dir", str(dir), *args],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
        timeout=30,
    )


def params(dir: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        # --create: the suite's directories are new (only init or --create makes one).
        command=MEMDIR, args=["--dir", str(dir), "mcp", "--create", *extra], env={"MEMDIR_NOW": NOW}
    )


def text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def disk_ok(name: str, dir: Path) -> None:
    """After a call: `memdir check` finds nothing wrong (index up to date, no temp files)."""
    r = cli(dir, "check")
    S.check(f"{name}: memdir check is clean", r.returncode == 0, r.stderr)
    tmp = [p.name for p in dir.iterdir() if p.name.endswith(".tmp")]
    S.check(f"{name}: no temporary files left", not tmp, tmp)


class Inbox:
    """Collects server notifications from the session's message handler."""

    def __init__(self) -> None:
        self.items: list[tuple[str, dict[str, Any]]] = []
        self.changed = asyncio.Event()

    async def handler(self, message: Any) -> None:
        msg = getattr(message, "root", message)
        method = getattr(msg, "method", None)
        if method is None:
            return
        p = getattr(msg, "params", None)
        data = p.model_dump(by_alias=True) if hasattr(p, "model_dump") else {}
        self.items.append((method, data))
        self.changed.set()

    async def wait(self, method: str, uri: str | None = None) -> bool:
        """Waits (bounded) for a notification; consumes it."""
        with anyio.move_on_after(NOTIFY_TIMEOUT):
            while True:
                for i, (m, d) in enumerate(self.items):
                    if m == method and (uri is None or d.get("uri") == uri):
                        del self.items[i]
                        return True
                self.changed.clear()
                await self.changed.wait()
        return False


@asynccontextmanager
async def session(dir: Path, *extra: str, inbox: Inbox | None = None, errlog: Any = None):
    """A legacy (initialize handshake) session with a fresh server process."""
    async with AsyncExitStack() as stack:
        log = errlog or stack.enter_context(tempfile.TemporaryFile("w+"))
        read, write = await stack.enter_async_context(stdio_client(params(dir, *extra), errlog=log))
        s = await stack.enter_async_context(
            ClientSession(read, write, message_handler=inbox.handler if inbox else None)
        )
        init = await s.initialize()
        yield s, init


def editor_save(path: Path, content: str) -> None:
    """Saves like an editor: write a temp file, then rename it over the target."""
    tmp = path.with_name("." + path.name + ".swp")
    tmp.write_text(content)
    os.replace(tmp, path)


ROLE = {
    "key": "user_role",
    "name": "Role",
    "description": "Argentina fan, plays 5-a-side on Saturdays",
    "type": "user",
    "body": "Plays weekly 5-a-side football on Saturdays.",
    "tags": ["football"],
}


async def tools_and_resources(root: Path) -> None:
    dir = root / "memory"
    errlog = open(root / "server1.log", "w+")
    async with session(dir, errlog=errlog) as (s, init):
        S.check("initialize: server is memdir", init.server_info.name == "memdir", init.server_info)
        caps = init.capabilities.resources
        S.check(
            "initialize: resources with subscribe and listChanged",
            caps is not None and caps.subscribe and caps.list_changed,
            caps,
        )
        S.check("initialize: instructions for the model", bool(init.instructions))
        S.check("server created the directory", (dir / "MEMORY.md").is_file())

        listed = await s.list_tools()
        tools = listed.tools
        names = {t.name for t in tools}
        S.check("tools/list: every tool, no sync tools in mode local", names == TOOLS, names)
        tokens = len(listed.model_dump_json(by_alias=True, exclude_none=True)) // 4
        S.check(f"tools/list: at most {TOOLS_LIST_LIMIT} tokens", tokens <= TOOLS_LIST_LIMIT, tokens)
        for t in tools:
            schema = t.input_schema
            S.check(
                f"tools/list: {t.name} has an object input schema and a description",
                schema.get("type") == "object" and len(t.description or "") > 40,
                schema,
            )
        remember = next(t for t in tools if t.name == "remember")
        S.check(
            "remember: required key, name, description, type, body",
            set(remember.input_schema.get("required", []))
            == {"key", "name", "description", "type", "body"},
            remember.input_schema.get("required"),
        )
        props = remember.input_schema["properties"]
        S.check(
            "remember: optional tags, important, decay, source",
            all(p in props for p in ["tags", "important", "decay", "source"]),
            list(props),
        )
        S.check(
            "remember: type lists the four types",
            props["type"].get("enum") == ["user", "feedback", "project", "reference"],
            props["type"],
        )

        res = (await s.list_resources()).resources
        S.check("resources/list: only the index at first", [str(r.uri) for r in res] == ["memory://index"], res)

        # remember
        r = await s.call_tool("remember", ROLE)
        S.check("remember: created", not r.is_error and text(r) == "created user_role", text(r))
        S.check("remember: structured outcome", r.structured_content == {"key": "user_role", "outcome": "created"}, r.structured_content)
        f = dir / "user_role.md"
        body = f.read_text() if f.exists() else ""
        S.check(
            "remember: the file has the frontmatter and body",
            "name: Role" in body and "type: user" in body and f"updated: {DAY}" in body
            and "Plays weekly 5-a-side football on Saturdays." in body and "- football" in body,
            body,
        )
        S.check("remember: MEMORY.md links it", "[Role](user_role.md)" in (dir / "MEMORY.md").read_text())
        disk_ok("remember", dir)

        before = f.stat().st_mtime_ns
        r = await s.call_tool("remember", ROLE)
        S.check("remember again: unchanged", text(r) == "unchanged user_role", text(r))
        S.check("remember again: file untouched", f.stat().st_mtime_ns == before)

        r = await s.call_tool("remember", {**ROLE, "body": "Plays 5-a-side on Saturdays and Wednesdays.", "important": True, "decay": "30d", "source": "chat 2026-04-14"})
        S.check("remember an existing key without replace: refused", r.is_error and "already exists" in text(r), text(r))
        r = await s.call_tool("remember", {**ROLE, "body": "Plays 5-a-side on Saturdays and Wednesdays.", "important": True, "decay": "30d", "source": "chat 2026-04-14", "replace": True})
        body = f.read_text()
        S.check("remember update: updated", text(r) == "updated user_role", text(r))
        S.check(
            "remember update: the file changed",
            "Wednesdays" in body and "important: true" in body and "decay: 30d" in body and "source: chat 2026-04-14" in body,
            body,
        )
        disk_ok("remember update", dir)

        await s.call_tool("remember", {"key": "feedback_tone", "name": "Tone", "description": "wants direct critique", "type": "feedback", "body": "Lead with the issue, then the fix."})
        await s.call_tool("remember", {"key": "project_season", "name": "Season", "description": "training for the spring league", "type": "project", "body": "League starts in May."})
        disk_ok("remember more", dir)

        # recall
        r = await s.call_tool("recall", {"query": "wednesdays"})
        hits = (r.structured_content or {}).get("hits", [])
        S.check("recall: finds the memory", not r.is_error and hits and hits[0]["key"] == "user_role", r.structured_content)
        S.check("recall: text names the hit", "user_role" in text(r), text(r))
        r = await s.call_tool("recall", {"query": "e", "limit": 1})
        S.check("recall: limit", len(r.structured_content["hits"]) == 1, r.structured_content)
        r = await s.call_tool("recall", {"query": "nothing matches this"})
        S.check("recall: no hits", not r.is_error and text(r) == "no hits", text(r))

        # read_memory
        r = await s.call_tool("read_memory", {"key": "user_role"})
        sc = r.structured_content or {}
        S.check("read_memory: body", "Wednesdays" in text(r) and sc.get("body", "").startswith("Plays 5-a-side"), sc)
        S.check(
            "read_memory: meta",
            sc.get("meta", {}).get("name") == "Role" and sc["meta"].get("tags") == ["football"]
            and sc["meta"].get("important") is True and sc["meta"].get("decay") == "30d",
            sc.get("meta"),
        )
        cli_json = json.loads(cli(dir, "--json", "read", "user_role").stdout)
        S.check("read_memory: same document as `memdir --json read`", sc == cli_json, (sc, cli_json))

        # list_memories
        r = await s.call_tool("list_memories", {})
        keys = [m["key"] for m in r.structured_content["memories"]]
        S.check("list_memories: all three", sorted(keys) == ["feedback_tone", "project_season", "user_role"], keys)
        S.check("list_memories: important first", keys[0] == "user_role", keys)
        r = await s.call_tool("list_memories", {"type": "feedback"})
        S.check("list_memories: by type", [m["key"] for m in r.structured_content["memories"]] == ["feedback_tone"], r.structured_content)

        # note
        r = await s.call_tool("note", {"type": "user_said", "fields": {"text": "how's my form?", "mood": 3}})
        day = dir / "timeline" / f"{DAY}.jsonl"
        lines = day.read_text().splitlines() if day.exists() else []
        S.check(
            "note: one line appended",
            not r.is_error and len(lines) == 1
            and json.loads(lines[0]) == {"ts": "2026-04-14T12:00:00.000Z", "type": "user_said", "text": "how's my form?", "mood": 3},
            lines,
        )
        r = await s.call_tool("note", {"type": "session_start"})
        S.check("note: fields are optional", not r.is_error and len(day.read_text().splitlines()) == 2, text(r))
        disk_ok("note", dir)

        # memory_context
        r = await s.call_tool("memory_context", {})
        t = text(r)
        S.check("memory_context: starts with the index", t.startswith("# Agent Memory"), t[:80])
        S.check("memory_context: has memories and events", "Wednesdays" in t and "how's my form?" in t, t)
        S.check("memory_context: default budget 2048", r.structured_content["max_tokens"] == 2048, r.structured_content)
        S.check("memory_context: same text as `memdir context`", t == cli(dir, "context", "--max-tokens", "2048").stdout.rstrip("\n") or t == cli(dir, "context", "--max-tokens", "2048").stdout, t)
        r = await s.call_tool("memory_context", {"max_tokens": 120, "query": "spring league"})
        t = text(r)
        index_len = len((dir / "MEMORY.md").read_text())
        S.check("memory_context: fits the budget", len(t) <= max(120 * 4, index_len), len(t))
        S.check("memory_context: query ranks the relevant memory first", r.structured_content["memories"][:1] == [{"key": "project_season", "excerpt": False}] or r.structured_content["memories"] == [], r.structured_content["memories"])

        # resources
        res = (await s.list_resources()).resources
        uris = [str(r.uri) for r in res]
        S.check("resources/list: index and every memory", uris == ["memory://index", "memory://feedback_tone", "memory://project_season", "memory://user_role"], uris)
        role = next(r for r in res if str(r.uri) == "memory://user_role")
        S.check("resources/list: title and description from the frontmatter", role.title == "Role" and role.description.startswith("Argentina fan"), role)
        rr = await s.read_resource("memory://index")
        S.check("resources/read memory://index = MEMORY.md", rr.contents[0].text == (dir / "MEMORY.md").read_text(), rr.contents[0].text)
        rr = await s.read_resource("memory://user_role")
        S.check("resources/read memory://user_role = the file", rr.contents[0].text == f.read_text() and rr.contents[0].mime_type == "text/markdown", rr.contents[0])
        rr = await s.read_resource("memory://user_role.md")
        S.check("resources/read memory://<key>.md works too", rr.contents[0].text == f.read_text())
        for bad in ["memory://nobody", "memory://../etc/passwd", "file:///etc/passwd"]:
            try:
                await s.read_resource(bad)
                S.check(f"resources/read {bad}: error", False, "no error")
            except MCPError as e:
                S.check(f"resources/read {bad}: error", True)
                if bad == "memory://nobody":
                    S.check("resources/read unknown key: CLI message", "no memory with key `nobody`" in str(e), str(e))

        # errors: tool results flagged isError with the CLI's message; nothing written
        snapshot = sorted(p.name for p in dir.iterdir())
        bad = {**ROLE, "key": "Bad Key"}
        r = await s.call_tool("remember", bad)
        c = cli(dir, "write", "Bad Key", "--name", "Role", "--description", "d", "--type", "user", "--body", "b")
        S.check("bad key: isError", r.is_error is True, r)
        S.check("bad key: the CLI's message", text(r) == c.stderr.rstrip("\n") and "hint: use snake_case keys" in text(r), (text(r), c.stderr))
        S.check("bad key: exit code in the structured error", r.structured_content["error"]["exit_code"] == 1, r.structured_content)

        r = await s.call_tool("remember", {**ROLE, "key": "reference_keys", "body": "the key is sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"})
        S.check("secret: refused", r.is_error is True and "refused to store reference_keys" in text(r) and "hint:" in text(r), text(r))
        S.check("secret: nothing written", not (dir / "reference_keys.md").exists())

        r = await s.call_tool("remember", {**ROLE, "type": "person"})
        S.check("bad type: refused with hint", r.is_error is True and "type `person`" in text(r) and "hint:" in text(r), text(r))
        r = await s.call_tool("remember", {**ROLE, "decay": "forever"})
        S.check("bad decay: refused", r.is_error is True and "decay `forever`" in text(r), text(r))
        r = await s.call_tool("remember", {**ROLE, "name": "  "})
        S.check("empty name: refused", r.is_error is True and "`name` must not be empty" in text(r), text(r))
        r = await s.call_tool("remember", {"key": "user_x"})
        S.check("missing arguments: tool error naming the field", r.is_error is True and "invalid arguments for `remember`" in text(r) and "missing field" in text(r), text(r))
        r = await s.call_tool("recall", {"query": 42})
        S.check("wrong argument type: tool error", r.is_error is True and "invalid arguments for `recall`" in text(r), text(r))
        r = await s.call_tool("read_memory", {"key": "user_nobody"})
        S.check("unknown memory: read", r.is_error is True and text(r) == "error: no memory with key `user_nobody`\nhint: `list_memories` shows the keys", text(r))
        r = await s.call_tool("forget", {"key": "user_nobody"})
        S.check("unknown memory: forget", r.is_error is True and "no memory with key `user_nobody`" in text(r), text(r))
        r = await s.call_tool("read_memory", {"key": "../MEMORY"})
        S.check("path in key: refused", r.is_error is True, text(r))
        r = await s.call_tool("recall", {"query": "   "})
        S.check("empty query: refused", r.is_error is True and "the query is empty" in text(r), text(r))
        r = await s.call_tool("note", {"type": "x", "fields": {"ts": "now"}})
        S.check("note with reserved field: refused", r.is_error is True, text(r))
        r = await s.call_tool("note", {"type": "bad type!"})
        S.check("note with bad type: refused", r.is_error is True, text(r))
        r = await s.call_tool("note", {"type": "user_said", "fields": {"text": "my token is ghp_abcdefghijklmnopqrstuvwxyz0123456789"}})
        S.check("note with a secret: refused", r.is_error is True and "refused to store" in text(r), text(r))
        try:
            r = await s.call_tool("no_such_tool", {})
            S.check("unknown tool: error", r.is_error is True, r)
        except MCPError:
            S.check("unknown tool: error", True)
        S.check("errors wrote nothing", sorted(p.name for p in dir.iterdir()) == snapshot, sorted(p.name for p in dir.iterdir()))
        S.check("timeline unchanged by refused notes", len(day.read_text().splitlines()) == 2)
        disk_ok("errors", dir)

        # forget
        r = await s.call_tool("forget", {"key": "project_season", "reason": "season over"})
        S.check("forget: ok", not r.is_error and text(r) == "forgot project_season", text(r))
        S.check("forget: file gone", not (dir / "project_season.md").exists())
        last = json.loads(day.read_text().splitlines()[-1])
        S.check("forget: forgot event", last == {"ts": "2026-04-14T12:00:00.000Z", "type": "forgot", "key": "project_season", "reason": "season over"}, last)
        S.check("forget: index updated", "project_season" not in (dir / "MEMORY.md").read_text())
        disk_ok("forget", dir)

        r = await s.call_tool("list_memories", {})
        S.check("server still healthy after errors", not r.is_error and len(r.structured_content["memories"]) == 2, r)
    errlog.seek(0)
    log = errlog.read()
    S.check("server stderr: no panic", "panicked" not in log, log)
    S.check("server stderr: says what it serves", "memdir mcp: serving" in log, log)


async def hand_edits(root: Path) -> None:
    dir = root / "memory"
    cli(dir, "--create", "write", "user_role", "--name", "Role", "--description", "plays on Saturdays", "--type", "user", "--body", "Plays 5-a-side.")
    inbox = Inbox()
    async with session(dir, inbox=inbox) as (s, _):
        await s.subscribe_resource("memory://user_role")
        await s.subscribe_resource("memory://index")
        f = dir / "user_role.md"
        original = (await s.read_resource("memory://user_role")).contents[0].text
        # No pause: the server arms its watch before it answers `initialize`.

        editor_save(f, original.replace("Plays 5-a-side.", "Plays 7-a-side now."))
        S.check("hand edit: resources/updated for the memory", await inbox.wait("notifications/resources/updated", "memory://user_role"), inbox.items)
        fresh = (await s.read_resource("memory://user_role")).contents[0].text
        S.check("hand edit: the next read has the new text", "7-a-side" in fresh and fresh == f.read_text(), fresh)
        r = await s.call_tool("read_memory", {"key": "user_role"})
        S.check("hand edit: read_memory sees it", "7-a-side" in text(r), text(r))
        r = await s.call_tool("recall", {"query": "7-a-side"})
        S.check("hand edit: recall finds it", r.structured_content["hits"][:1] and r.structured_content["hits"][0]["key"] == "user_role", r.structured_content)

        new = f"---\nname: Boots\ndescription: wears size 42 boots\ntype: user\ncreated: {DAY}\nupdated: {DAY}\n---\n\nSize 42.\n"
        editor_save(dir / "user_boots.md", new)
        S.check("new file: resources/list_changed", await inbox.wait("notifications/resources/list_changed"), inbox.items)
        S.check("new file: the index is rebuilt and announced", await inbox.wait("notifications/resources/updated", "memory://index"), inbox.items)
        uris = [str(r.uri) for r in (await s.list_resources()).resources]
        S.check("new file: listed", "memory://user_boots" in uris, uris)
        idx = (await s.read_resource("memory://index")).contents[0].text
        S.check("new file: in the index", "[Boots](user_boots.md)" in idx, idx)

        broken = "---\nname: [unclosed\n---\n\nbody\n"
        editor_save(dir / "user_boots.md", broken)
        S.check("malformed edit: the memory leaves the list", await inbox.wait("notifications/resources/list_changed"), inbox.items)
        r = await s.call_tool("read_memory", {"key": "user_boots"})
        S.check("malformed edit: read_memory says why, with the hint", r.is_error is True and "hint: memdir will not overwrite a file it cannot read" in text(r), text(r))
        r = await s.call_tool("remember", {"key": "user_boots", "name": "Boots", "description": "d", "type": "user", "body": "b"})
        S.check("malformed edit: remember refuses to overwrite", r.is_error is True, text(r))
        S.check("malformed edit: the file is untouched", (dir / "user_boots.md").read_text() == broken)
        r = await s.call_tool("list_memories", {})
        S.check("malformed edit: other memories still work", [m["key"] for m in r.structured_content["memories"]] == ["user_role"] and r.structured_content["problems"], r.structured_content)

        editor_save(dir / "user_boots.md", new)
        S.check("repaired file: back in the list", await inbox.wait("notifications/resources/list_changed"), inbox.items)
        (dir / "user_boots.md").unlink()
        S.check("deleted file: resources/list_changed", await inbox.wait("notifications/resources/list_changed"), inbox.items)
        S.check("deleted file: the index is rebuilt and announced", await inbox.wait("notifications/resources/updated", "memory://index"), inbox.items)

        await s.unsubscribe_resource("memory://user_role")
        inbox.items.clear()
        editor_save(f, original)
        await inbox.wait("notifications/resources/updated", "memory://index")  # settle
        await anyio.sleep(0.5)
        S.check("unsubscribed: no resources/updated for it", not any(d.get("uri") == "memory://user_role" for _, d in inbox.items), inbox.items)


async def modern_protocol(root: Path) -> None:
    """The 2026-07-28 protocol: no initialize, changes through subscriptions/listen."""
    dir = root / "memory"
    cli(dir, "--create", "write", "user_role", "--name", "Role", "--description", "plays on Saturdays", "--type", "user", "--body", "Plays 5-a-side.")
    with tempfile.TemporaryFile("w+") as log:
        async with Client(stdio_client(params(dir), errlog=log), mode="auto", cache=None) as c:
            S.check("2026 protocol: negotiated by discover", c.protocol_version == "2026-07-28", c.protocol_version)
            names = {t.name for t in (await c.list_tools()).tools}
            S.check("2026 protocol: every tool", names == TOOLS, names)
            r = await c.call_tool("remember", {**ROLE, "key": "user_team", "name": "Team"})
            S.check("2026 protocol: remember", not r.is_error and (dir / "user_team.md").exists(), text(r))
            r = await c.call_tool("read_memory", {"key": "nobody"})
            S.check("2026 protocol: tool error", r.is_error is True and "no memory with key" in text(r), text(r))
            async with c.listen(resources_list_changed=True, resource_subscriptions=["memory://user_role"]) as sub:
                S.check("listen: honored", sub.honored is not None and sub.honored.resources_list_changed and sub.honored.resource_subscriptions == ["memory://user_role"], sub.honored)
                f = dir / "user_role.md"
                editor_save(f, f.read_text().replace("Plays 5-a-side.", "Plays futsal."))
                got = None
                with anyio.move_on_after(NOTIFY_TIMEOUT):
                    async for event in sub:
                        if getattr(event, "uri", None) == "memory://user_role":
                            got = event
                            break
                S.check("listen: resource updated after a hand edit", got is not None, got)
                editor_save(dir / "user_new.md", f"---\nname: New\ndescription: d\ntype: user\ncreated: {DAY}\nupdated: {DAY}\n---\n\nx\n")
                got = None
                with anyio.move_on_after(NOTIFY_TIMEOUT):
                    async for event in sub:
                        if type(event).__name__ == "ResourcesListChanged":
                            got = event
                            break
                S.check("listen: list changed after a new file", got is not None, got)
            rr = await c.read_resource("memory://user_role")
            S.check("2026 protocol: fresh read", "futsal" in rr.contents[0].text, rr.contents[0].text)
            r = await c.call_tool("edit_memory", {"key": "user_role", "append": "- and Wednesdays"})
            S.check("2026 protocol: edit_memory", not r.is_error and "Wednesdays" in (dir / "user_role.md").read_text(), text(r))
            r = await c.call_tool("search", {"query": "futsal"})
            S.check("2026 protocol: search", json.loads(text(r)) == {"results": [{"id": "user_role", "title": "Role", "url": "memory://user_role"}]}, text(r))
            names = [p.name for p in (await c.list_prompts()).prompts]
            S.check("2026 protocol: prompts/list", names == ["remember_conversation", "review_memories"], names)
            c_ = await c.complete(types.ResourceTemplateReference(uri="memory://{key}"), {"name": "key", "value": "user_t"})
            S.check("2026 protocol: completion", c_.completion.values == ["user_team"], c_.completion)


async def two_servers(root: Path) -> None:
    dir = root / "memory"
    n = 15

    async def worker(w: int) -> None:
        async with session(dir) as (s, _):
            async def one(i: int) -> None:
                r = await s.call_tool("remember", {"key": f"project_w{w}_{i}", "name": f"Item {w}-{i}", "description": f"from server {w}", "type": "project", "body": f"body {w} {i}"})
                assert not r.is_error, text(r)
                r = await s.call_tool("note", {"type": "step", "fields": {"w": w, "i": i}})
                assert not r.is_error, text(r)
            await asyncio.gather(*(one(i) for i in range(n)))
            await s.call_tool("remember", {"key": "project_shared", "name": "Shared", "description": f"last writer {w}", "type": "project", "body": f"written by {w}", "replace": True})

    await asyncio.gather(worker(0), worker(1))
    missing = [f"project_w{w}_{i}" for w in range(2) for i in range(n) if not (dir / f"project_w{w}_{i}.md").exists()]
    S.check("two servers: every memory written", not missing, missing)
    idx = (dir / "MEMORY.md").read_text()
    absent = [f"project_w{w}_{i}" for w in range(2) for i in range(n) if f"(project_w{w}_{i}.md)" not in idx]
    S.check("two servers: the index lists every memory", not absent, absent)
    lines = (dir / "timeline" / f"{DAY}.jsonl").read_text().splitlines()
    S.check("two servers: every event logged, one per line", len(lines) == 2 * n and all(json.loads(l)["type"] == "step" for l in lines), len(lines))
    shared = (dir / "project_shared.md").read_text()
    S.check("two servers: a contended key holds one whole version", shared.count("---") == 2 and ("written by 0" in shared) != ("written by 1" in shared), shared)
    disk_ok("two servers", dir)


async def manifest(root: Path) -> None:
    agent = root / "agent"
    dir = agent / "memory"
    agent.mkdir()
    (agent / "manifest.json").write_text(json.dumps({"name": "coach", "memory": {"mode": "local", "provider": "none", "maxTokens": 640}}))
    async with session(dir) as (s, _):
        r = await s.call_tool("memory_context", {})
        S.check("manifest: maxTokens is the default budget", r.structured_content["max_tokens"] == 640, r.structured_content)
        r = await s.call_tool("memory_context", {"max_tokens": 100})
        S.check("manifest: an explicit budget wins", r.structured_content["max_tokens"] == 100, r.structured_content)

    (agent / "manifest.json").write_text(json.dumps({"memory": {"mode": "encrypted-ipfs", "provider": "pinata"}}))
    with tempfile.TemporaryFile("w+") as log:
        async with session(dir, errlog=log) as (s, _):
            names = {t.name for t in (await s.list_tools()).tools}
            S.check("manifest sync mode: the sync tools are listed", names == TOOLS | SYNC_TOOLS, names)
            r = await s.call_tool("remember", ROLE)
            S.check("manifest sync mode: still serves the directory", not r.is_error and (dir / "user_role.md").exists(), text(r))
        log.seek(0)
        err = log.read()
        S.check("manifest sync mode: reported on stderr", "mode encrypted-ipfs: writes are pushed" in err, err)
        # No PINATA_JWT reaches the server: the push after the write fails, the write stands.
        S.check("manifest sync mode: a failed push is logged", "saved locally but was not pushed" in err, err)

    none = root / "none.json"
    none.write_text(json.dumps({"memory": {"mode": "none", "maxTokens": 300}}))
    ghost = root / "ghost"
    async with session(ghost, "--manifest", str(none)) as (s, _):
        r = await s.call_tool("remember", ROLE)
        S.check("mode none: remember works", not r.is_error, text(r))
        r = await s.call_tool("memory_context", {})
        S.check("mode none: context has it", "Plays weekly" in text(r) and r.structured_content["max_tokens"] == 300, r.structured_content)
        rr = await s.read_resource("memory://user_role")
        S.check("mode none: resource readable", "Plays weekly" in rr.contents[0].text)
    S.check("mode none: nothing on disk", not ghost.exists())


async def more_tools(root: Path) -> None:
    """edit_memory, rename_memory, recent_activity, search/fetch, the template, completion, prompts."""
    dir = root / "memory"
    async with session(dir) as (s, init):
        S.check("initialize: prompts and completions", init.capabilities.prompts is not None and init.capabilities.completions is not None, init.capabilities)
        tools = {t.name: t for t in (await s.list_tools()).tools}
        for name in ["edit_memory", "rename_memory", "recent_activity", "related", "search", "fetch"]:
            t = tools.get(name)
            S.check(f"tools/list: {name} has a schema and a description", t is not None and t.input_schema.get("type") == "object" and len(t.description or "") > 40, t)
        schema = json.dumps(tools["edit_memory"].input_schema)
        S.check("edit_memory: no null alternatives, no uint format", '"null"' not in schema and "uint" not in schema, schema)

        await s.call_tool("remember", {**ROLE, "body": "Plays 5-a-side.\n\n## Why\n\nold reason\n\n## Team\n\nBoca"})
        f = dir / "user_role.md"

        # edit_memory
        r = await s.call_tool("edit_memory", {"key": "user_role", "replace_section": {"heading": "Why", "content": "new reason"}, "append": "- also futsal", "tags": ["football", "futsal"]})
        body = f.read_text()
        S.check("edit_memory: updated", not r.is_error and text(r) == "updated user_role" and r.structured_content == {"key": "user_role", "outcome": "updated"}, (text(r), r.structured_content))
        S.check("edit_memory: section replaced, text appended, the rest kept", body.endswith("## Why\n\nnew reason\n\n## Team\n\nBoca\n- also futsal\n") and "name: Role" in body and "- futsal" in body, body)
        S.check("edit_memory: MEMORY.md still links it", "[Role](user_role.md)" in (dir / "MEMORY.md").read_text())
        disk_ok("edit_memory", dir)
        before = f.read_bytes()
        for args, want in [
            ({"key": "user_role", "replace_section": {"heading": "When", "content": "x"}}, "error: cannot edit `user_role`: no section headed `When`"),
            ({"key": "user_role", "find_replace": {"find": "Boca", "replace": "River", "expected_count": 3}}, "error: cannot edit `user_role`: the text to find (`Boca`) occurs once, expected 3"),
            ({"key": "user_role", "prepend": "token sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"}, "error: refused to store user_role"),
            ({"key": "user_nobody", "append": "x"}, "error: no memory with key `user_nobody`"),
            ({"key": "user_role"}, "error: nothing to edit in `user_role`"),
            ({"key": "user_role", "append": "x", "colour": "red"}, "error: invalid arguments for `edit_memory`: unknown argument `colour`"),
        ]:
            r = await s.call_tool("edit_memory", args)
            S.check(f"edit_memory refused: {want[:60]}", r.is_error is True and text(r).startswith(want), text(r))
        S.check("edit_memory refusals: the file is byte-identical", f.read_bytes() == before)
        r = await s.call_tool("edit_memory", {"key": "user_role", "find_replace": {"find": "Boca", "replace": "River", "expected_count": 1}})
        S.check("edit_memory: find_replace with the right count", not r.is_error and "River" in f.read_text() and "Boca" not in f.read_text(), text(r))
        r = await s.call_tool("edit_memory", {"key": "user_role", "find_replace": {"find": "River", "replace": "River"}})
        S.check("edit_memory: the same text is unchanged", text(r) == "unchanged user_role", text(r))

        # search / fetch (the ChatGPT connector convention)
        r = await s.call_tool("search", {"query": "futsal"})
        doc = json.loads(text(r)) if not r.is_error else {}
        S.check("search: one text item of JSON results", len(r.content) == 1 and doc == {"results": [{"id": "user_role", "title": "Role", "url": "memory://user_role"}]}, text(r))
        S.check("search: structured content is the same document", r.structured_content == doc, r.structured_content)
        r = await s.call_tool("search", {"query": "nothing like this"})
        S.check("search: no results", json.loads(text(r)) == {"results": []}, text(r))
        r = await s.call_tool("fetch", {"id": "user_role"})
        doc = json.loads(text(r)) if not r.is_error else {}
        S.check("fetch: id, title, text, url, metadata", doc.get("id") == "user_role" and doc.get("title") == "Role" and "River" in doc.get("text", "") and doc.get("url") == "memory://user_role" and doc.get("metadata", {}).get("type") == "user", doc)
        r = await s.call_tool("fetch", {"id": "user_nobody"})
        S.check("fetch: unknown id is a tool error naming it", r.is_error is True and "no memory with key `user_nobody`" in text(r), text(r))

        # rename_memory
        r = await s.call_tool("rename_memory", {"key": "user_role", "new_key": "user_football"})
        S.check("rename_memory: renamed", not r.is_error and text(r) == "renamed user_role to user_football", text(r))
        S.check("rename_memory: old file gone, new one there", not f.exists() and (dir / "user_football.md").exists())
        idx = (dir / "MEMORY.md").read_text()
        S.check("rename_memory: index updated", "(user_football.md)" in idx and "user_role" not in idx, idx)
        disk_ok("rename_memory", dir)
        await s.call_tool("remember", {**ROLE, "key": "user_team", "name": "Team"})
        snapshot = sorted(p.name for p in dir.iterdir())
        for args, want in [
            ({"key": "user_football", "new_key": "user_team"}, "error: cannot rename `user_football` to `user_team`: a memory with key `user_team` already exists"),
            ({"key": "user_football", "new_key": "Bad Key"}, "error: key `Bad Key` must start"),
            ({"key": "user_gone", "new_key": "user_x"}, "error: no memory with key `user_gone`"),
        ]:
            r = await s.call_tool("rename_memory", args)
            S.check(f"rename_memory refused: {want[:50]}", r.is_error is True and text(r).startswith(want), text(r))
        S.check("rename_memory refusals: nothing changed", sorted(p.name for p in dir.iterdir()) == snapshot)

        # recent_activity
        for i in range(3):
            await s.call_tool("note", {"type": "user_said", "fields": {"i": i}})
        r = await s.call_tool("recent_activity", {"limit": 2})
        evs = (r.structured_content or {}).get("events", [])
        S.check("recent_activity: newest first, limited", [e.get("i") for e in evs] == [2, 1] and r.structured_content.get("more") is True, r.structured_content)
        r = await s.call_tool("recent_activity", {"types": ["renamed"]})
        evs = (r.structured_content or {}).get("events", [])
        S.check("recent_activity: by type; the rename is logged", len(evs) == 1 and evs[0]["from"] == "user_role" and evs[0]["to"] == "user_football", evs)
        r = await s.call_tool("recent_activity", {"since": "2030-01-01"})
        S.check("recent_activity: since", text(r) == "no events", text(r))
        r = await s.call_tool("recent_activity", {"limit": 0})
        S.check("recent_activity: limit out of range", r.is_error is True and "limit: 0 is out of range; expected 1 to 1000" in text(r), text(r))

        # related: the graph walk; an incoming link is derived, never written
        r = await s.call_tool("remember", {"key": "org_acme", "name": "Acme", "description": "a company", "type": "reference", "body": "- ceo:: [[user_football]]"})
        S.check("related: a memory with a typed link", not r.is_error, text(r))
        before = (dir / "user_football.md").read_text()
        r = await s.call_tool("related", {"key": "user_football", "depth": 2})
        doc = r.structured_content or {}
        nodes = doc.get("nodes", [])
        S.check("related: the incoming link is found", not r.is_error and [n.get("key") for n in nodes] == ["user_football", "org_acme"] and nodes[1]["path"][0]["incoming"] is True, doc)
        S.check("related: the target file is not written", (dir / "user_football.md").read_text() == before)
        r = await s.call_tool("related", {"key": "user_football", "direction": "sideways"})
        S.check("related: a bad direction is a tool error", r.is_error is True and "direction: must be in, out or both" in text(r), text(r))

        # the template and completion
        templates = (await s.list_resource_templates()).resource_templates
        S.check("resources/templates/list: memory://{key}", [t.uri_template for t in templates] == ["memory://{key}"], templates)
        ref = types.ResourceTemplateReference(uri="memory://{key}")
        c = (await s.complete(ref, {"name": "key", "value": "user_f"})).completion
        S.check("completion: prefix match over keys", c.values == ["user_football"] and c.total == 1 and c.has_more is False, c)
        c = (await s.complete(ref, {"name": "key", "value": "user_"})).completion
        S.check("completion: every key with the prefix", c.values == ["user_football", "user_team"], c)
        rr = await s.read_resource("memory://user_football")
        S.check("template URI reads the memory", "River" in rr.contents[0].text)

        # prompts
        prompts = (await s.list_prompts()).prompts
        S.check("prompts/list: two prompts", [p.name for p in prompts] == ["remember_conversation", "review_memories"], prompts)
        g = await s.get_prompt("remember_conversation", {"focus": "the spring league"})
        t = g.messages[0].content.text
        S.check("prompts/get remember_conversation: teaches the real tools", all(x in t for x in ["memory_context", "recall", "edit_memory", "remember", "forget", "secret"]) and "the spring league" in t, t)
        g = await s.get_prompt("review_memories", {})
        t = g.messages[0].content.text
        S.check("prompts/get review_memories: lists the memories", "- user_football (user, updated" in t and "- user_team (user" in t and "rename_memory" in t and "forget" in t, t)
        g = await s.get_prompt("review_memories", {"type": "project"})
        S.check("prompts/get review_memories: by type", "Memories of type project (0)" in g.messages[0].content.text, g.messages[0].content.text)
        try:
            await s.get_prompt("no_such_prompt")
            S.check("prompts/get unknown: error", False, "no error")
        except MCPError as e:
            S.check("prompts/get unknown: error", "no prompt `no_such_prompt`" in str(e), str(e))
        disk_ok("more tools", dir)


# The memory tool (spec/memory-tool.md): a script run through the MCP tool `memory` and
# through the reference implementation, the `anthropic` SDK's
# BetaLocalFilesystemMemoryTool on a plain folder; the replies must be byte-identical.
# Left out: what memdir does differently on purpose (MEMORY.md, folders, names that are
# not keys, the links a rename leaves dangling, the directory's own size).
MEMORY_SCRIPT: list[dict[str, Any]] = [
    {"command": "create", "path": "/memories/user_coffee.md", "file_text": "# Coffee\nLikes it black.\nNo sugar.\n"},
    {"command": "create", "path": "/memories/progress.md", "file_text": "step one\nstep two\nstep three"},
    {"command": "create", "path": "/memories/edges.md", "file_text": "\n\nlead and trail  \n\n"},
    {"command": "create", "path": "/memories/empty.md", "file_text": ""},
    {"command": "create", "path": "/memories/user_coffee.md", "file_text": "again"},
    {"command": "view", "path": "/memories/user_coffee.md"},
    {"command": "view", "path": "/memories/progress.md"},
    {"command": "view", "path": "/memories/edges.md"},
    {"command": "view", "path": "/memories/empty.md"},
    {"command": "view", "path": "/memories/progress.md", "view_range": [2, 3]},
    {"command": "view", "path": "/memories/progress.md", "view_range": [2, -1]},
    {"command": "view", "path": "/memories/progress.md", "view_range": [0, 99]},
    {"command": "view", "path": "/memories/progress.md", "view_range": [5, 7]},
    {"command": "view", "path": "/memories/none.md"},
    {"command": "str_replace", "path": "/memories/progress.md", "old_str": "step", "new_str": "x"},
    {"command": "str_replace", "path": "/memories/progress.md", "old_str": "step four", "new_str": "x"},
    {"command": "str_replace", "path": "/memories/progress.md", "old_str": "step two", "new_str": "step two: done\nand checked"},
    {"command": "str_replace", "path": "/memories/none.md", "old_str": "a", "new_str": "b"},
    {"command": "str_replace", "path": "/memories", "old_str": "a", "new_str": "b"},
    {"command": "insert", "path": "/memories/progress.md", "insert_line": 0, "insert_text": "# Progress\n"},
    {"command": "insert", "path": "/memories/progress.md", "insert_line": 5, "insert_text": "last"},
    {"command": "insert", "path": "/memories/progress.md", "insert_line": 9, "insert_text": "x"},
    {"command": "insert", "path": "/memories/progress.md", "insert_line": -1, "insert_text": "x"},
    {"command": "insert", "path": "/memories/empty.md", "insert_line": 0, "insert_text": ""},
    {"command": "view", "path": "/memories/progress.md"},
    {"command": "view", "path": "/memories/empty.md"},
    {"command": "rename", "old_path": "/memories/user_coffee.md", "new_path": "/memories/progress.md"},
    {"command": "rename", "old_path": "/memories/none.md", "new_path": "/memories/other.md"},
    {"command": "rename", "old_path": "/memories", "new_path": "/memories/other.md"},
    {"command": "rename", "old_path": "/memories/user_coffee.md", "new_path": "/memories/user_drinks.md"},
    {"command": "view", "path": "/memories/user_drinks.md"},
    {"command": "delete", "path": "/memories"},
    {"command": "delete", "path": "/memories/edges.md"},
    {"command": "delete", "path": "/memories/edges.md"},
    {"command": "view", "path": "/etc/passwd"},
    {"command": "create", "path": "/tmp/x.md", "file_text": "x"},
    {"command": "view", "path": "/memories/../etc/passwd"},
    {"command": "delete", "path": "/memories/a/../../x.md"},
    {"command": "view", "path": "/memories"},
]


def reference_replies(base: Path) -> list[tuple[str, bool]]:
    """The script through the reference implementation, on a plain folder."""
    from anthropic.lib.tools._beta_functions import ToolError
    from anthropic.tools.memory import BetaLocalFilesystemMemoryTool

    tool = BetaLocalFilesystemMemoryTool(base_path=str(base))
    out = []
    for command in MEMORY_SCRIPT:
        try:
            out.append((str(tool.call(command)), False))
        except ToolError as e:
            out.append((str(e), True))
    return out


def comparable(command: dict[str, Any], reply: str) -> str:
    """A directory view without its first entry line, the directory's own size (the
    reference shows the folder's inode size) and, for memdir, MEMORY.md's line."""
    if command["command"] != "view" or command["path"] != "/memories":
        return reply
    head, _, rest = reply.partition("\n")
    entries = rest.split("\n")[1:]
    return "\n".join([head] + [e for e in entries if not e.endswith("/memories/MEMORY.md")])


async def memory_tool(root: Path) -> None:
    dir = root / "memory"
    ref = reference_replies(root / "reference")
    async with session(dir) as (s, _):
        listed = await s.list_tools()
        memory = next(t for t in listed.tools if t.name == "memory")
        S.check(
            "memory: the built-in tool's commands in the input schema",
            memory.input_schema["properties"]["command"]["enum"]
            == ["view", "create", "str_replace", "insert", "delete", "rename"]
            and memory.input_schema.get("required") == ["command"],
            memory.input_schema,
        )
        for i, command in enumerate(MEMORY_SCRIPT):
            r = await s.call_tool("memory", command)
            got = (comparable(command, text(r)), bool(r.is_error))
            want = (comparable(command, ref[i][0]), ref[i][1])
            S.check(f"memory {i} {command['command']}: the reference's reply", got == want, f"{got!r} != {want!r}")
            if command["command"] == "view":
                # A view (it changes nothing) through the CLI gives the same text.
                c = subprocess.run(
                    [MEMDIR, "--dir", str(dir), "memory-tool"],
                    input=json.dumps(command),
                    capture_output=True, text=True, timeout=30, env={**os.environ, "MEMDIR_NOW": NOW},
                )
                S.check(
                    f"memory {i}: memdir memory-tool prints the same",
                    c.stdout == text(r) + "\n" and (c.returncode == 1) == bool(r.is_error),
                    c.stdout,
                )
        # What the tool wrote is a memory memdir knows (derived frontmatter, index).
        r = await s.call_tool("read_memory", {"key": "user_drinks"})
        S.check("memory: a created file is a memory", not r.is_error and "name: Coffee" in text(r), text(r))
        r = await s.call_tool("recall", {"query": "black"})
        S.check("memory: recall finds what the tool wrote", "user_drinks" in text(r), text(r))
        r = await s.call_tool("memory", {"command": "create", "path": "/memories/k.md", "file_text": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"})
        S.check("memory: a secret is refused", r.is_error and "refused to store k" in text(r), text(r))
        r = await s.call_tool("memory", {"command": "view", "path": "/memories/MEMORY.md"})
        S.check("memory: MEMORY.md is viewable", not r.is_error and "# Agent Memory" in text(r), text(r))
        r = await s.call_tool("memory", {"command": "delete", "path": "/memories/MEMORY.md"})
        S.check("memory: MEMORY.md is not deletable", r.is_error and "memdir's index" in text(r), text(r))
        events = [json.loads(l) for f in sorted((dir / "timeline").glob("*.jsonl")) for l in f.read_text().splitlines()]
        S.check("memory: delete is a forget", any(e["type"] == "forgot" and e["key"] == "edges" for e in events), events)
    disk_ok("memory tool", dir)


SCENARIOS = [tools_and_resources, more_tools, memory_tool, hand_edits, modern_protocol, two_servers, manifest]


async def main() -> int:
    global MEMDIR
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--memdir", required=True, help="path to the memdir binary")
    args = ap.parse_args()
    MEMDIR = str(Path(args.memdir).resolve())
    for scenario in SCENARIOS:
        with tempfile.TemporaryDirectory(prefix="memdir-mcp-") as tmp:
            print(f"# {scenario.__name__}", flush=True)
            try:
                with anyio.fail_after(STEP_TIMEOUT):
                    await scenario(Path(tmp))
            except BaseException as e:  # a failed scenario is reported, the rest still run
                if isinstance(e, KeyboardInterrupt):
                    raise
                S.check(f"{scenario.__name__} ran to the end", False, "".join(traceback.format_exception(e)))
    print(f"{S.passed} passed, {S.failed} failed", flush=True)
    return 1 if S.failed or S.passed == 0 else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
