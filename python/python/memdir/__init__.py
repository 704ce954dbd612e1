"""memdir: durable, human-editable memory for AI agents.

A memory is one Markdown file with YAML frontmatter in a memory directory;
``MEMORY.md`` indexes them and ``timeline/`` logs events. ``Memory`` is the memdir
Rust library (its Python bindings, built from the repository's ``python/``):

    from memdir import Memory
    mem = Memory("memory")
    mem.remember("user_coffee", "Likes it black.", type="user")
    mem.recall("coffee")            # [Hit(key='user_coffee', ...)]
    str(mem.context(max_tokens=1024))

``MemdirMemoryTool`` (``memdir.memory_tool``) plugs a memory directory into the
``anthropic`` SDK's memory tool helper.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._memdir import (
    DEFAULT_MAX_TOKENS,
    Context,
    Hit,
    InputError,
    IntegrityError,
    MemdirError,
    Memory,
    Record,
    RemoteError,
    SyncReport,
    ToolReply,
    UsageError,
)

if TYPE_CHECKING:
    from .memory_tool import MemdirMemoryTool

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "Context",
    "Hit",
    "InputError",
    "IntegrityError",
    "MemdirError",
    "MemdirMemoryTool",
    "Memory",
    "Record",
    "RemoteError",
    "SyncReport",
    "ToolReply",
    "UsageError",
]


def __getattr__(name: str) -> Any:
    # The anthropic SDK is optional: it is imported only when MemdirMemoryTool is.
    if name == "MemdirMemoryTool":
        from .memory_tool import MemdirMemoryTool

        return MemdirMemoryTool
    raise AttributeError(f"module 'memdir' has no attribute {name!r}")
