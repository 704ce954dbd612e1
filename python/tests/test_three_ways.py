"""Three ways in, byte-identical (issue 32, spec/memory-tool.md): one script of
memory-tool commands (fixtures/memory-tool/script.json) run through (a) the MCP tool
`memory` of `memdir mcp` with the official MCP Python SDK as the client, (b) `memdir
memory-tool`, one command per process on stdin, and (c) the Python package, each on
its own fresh directory; every reply (text and error flag) and every memory file at
the end must be the same bytes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from conftest import NOW, memdir_bin, script_steps
from memdir import Memory

Reply = tuple[str, bool]
COMMANDS = [s["command"] for s in script_steps()]
TIMEOUT = 120  # seconds for the whole MCP session; every wait is bounded


def env() -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if k not in ("MEMDIR_DIR", "MEMDIR_SESSION")}
    e["MEMDIR_NOW"] = NOW
    return e


def init(dir: Path) -> None:
    """The same fresh directory for each way in: `memdir init`."""
    r = subprocess.run(
        [str(memdir_bin()), "--dir", str(dir), "init"],
        capture_output=True, text=True, env=env(), stdin=subprocess.DEVNULL, timeout=60,
    )
    assert r.returncode == 0, r.stderr


def through_mcp(dir: Path) -> list[Reply]:
    async def go() -> list[Reply]:
        params = StdioServerParameters(command=str(memdir_bin()), args=["--dir", str(dir), "mcp"], env=env())
        out: list[Reply] = []
        with anyio.fail_after(TIMEOUT):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                for command in COMMANDS:
                    r = await s.call_tool("memory", command)
                    out.append(("".join(getattr(c, "text", "") for c in r.content), bool(r.is_error)))
        return out

    return anyio.run(go)


def through_cli(dir: Path) -> list[Reply]:
    out: list[Reply] = []
    for command in COMMANDS:
        # --json: the exact text (plain output escapes control characters).
        r = subprocess.run(
            [str(memdir_bin()), "--dir", str(dir), "--json", "memory-tool"],
            input=json.dumps(command), capture_output=True, text=True, env=env(), timeout=60,
        )
        doc = json.loads(r.stdout)
        assert (r.returncode == 1) == doc["is_error"] and r.returncode in (0, 1), (command, r.returncode, r.stderr)
        out.append((doc["text"], doc["is_error"]))
    return out


def through_python(dir: Path) -> list[Reply]:
    mem = Memory(dir)
    out: list[Reply] = []
    for command in COMMANDS:
        reply = mem.memory_tool_reply(command)
        out.append((reply.text, reply.is_error))
    return out


def files(dir: Path) -> dict[str, bytes]:
    """The memory files and MEMORY.md (the timeline is compared by its events)."""
    return {p.name: p.read_bytes() for p in sorted(dir.iterdir()) if p.is_file()}


def events(dir: Path) -> list[dict[str, Any]]:
    lines = [line for f in sorted((dir / "timeline").glob("*.jsonl")) for line in f.read_text().splitlines()]
    return [json.loads(line) for line in lines]


def test_mcp_cli_and_python_give_the_same_bytes(tmp_path: Path) -> None:
    dirs = {way: tmp_path / way for way in ("mcp", "cli", "python")}
    for d in dirs.values():
        init(d)
    replies = {
        "mcp": through_mcp(dirs["mcp"]),
        "cli": through_cli(dirs["cli"]),
        "python": through_python(dirs["python"]),
    }
    assert len(replies["python"]) == len(COMMANDS)
    diffs = []
    for i, command in enumerate(COMMANDS):
        mine = {way: replies[way][i] for way in replies}
        if len(set(mine.values())) != 1:
            diffs.append(f"step {i} {json.dumps(command)}: {mine!r}")
    assert not diffs, "\n".join(diffs)
    # The script exercises both outcomes, so the flags are compared, not all one way.
    flags = {e for _, e in replies["python"]}
    assert flags == {True, False}
    memory = {way: files(d) for way, d in dirs.items()}
    assert memory["mcp"] == memory["cli"] == memory["python"]
    assert {"MEMORY.md", "user_beverages.md", "progress.md", "project_links.md"} <= set(memory["python"])
    # The timeline too: the same events (the clock is fixed, no session is set).
    logged = {way: events(d) for way, d in dirs.items()}
    assert logged["mcp"] == logged["cli"] == logged["python"]
    assert any(e["type"] == "forgot" and e["key"] == "edges" for e in logged["python"])
