"""Shared fixtures of the memdir Python suite: a fixed clock, the memory-tool script
(fixtures/memory-tool/script.json) and the memdir binary for the three-way test."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
NOW = "2026-04-14T12:00:00Z"
SCRIPT = REPO / "fixtures" / "memory-tool" / "script.json"


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """memdir reads MEMDIR_NOW when a Memory is opened: every date is this day, so
    directories written by different front ends compare byte for byte."""
    monkeypatch.setenv("MEMDIR_NOW", NOW)
    monkeypatch.delenv("MEMDIR_DIR", raising=False)


def script_steps() -> list[dict[str, Any]]:
    return json.loads(SCRIPT.read_text(encoding="utf-8"))["steps"]


def memdir_bin() -> Path:
    """The `memdir` binary the three-way test drives: $MEMDIR_BIN, else the debug
    build (ci/python/run.sh builds it)."""
    return Path(os.environ.get("MEMDIR_BIN") or REPO / "target" / "debug" / "memdir")


def comparable(command: dict[str, Any], reply: str) -> str:
    """A directory view without its own size line (the reference shows the folder's
    inode size) and without MEMORY.md's line (the reference has no index)."""
    if command.get("command") != "view" or command.get("path") != "/memories":
        return reply
    head, _, rest = reply.partition("\n")
    entries = rest.split("\n")[1:]
    return "\n".join([head] + [e for e in entries if not e.endswith("/memories/MEMORY.md")])
