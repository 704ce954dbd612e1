"""Type stubs of the native module memdir._memdir (python/src/*.rs)."""

import os
import pathlib
from typing import Any, Mapping, Optional, Union

DEFAULT_MAX_TOKENS: int

class MemdirError(Exception):
    """An error of memdir, with its message, hint, causes and CLI exit code."""

    message: str
    hint: Optional[str]
    causes: list[str]
    exit_code: int

class InputError(MemdirError):
    """Bad input or a data problem (a key, a secret, a malformed file, a missing memory)."""

class UsageError(MemdirError):
    """Bad usage of an operation (an empty query, nothing to edit, a bad argument)."""

class RemoteError(MemdirError):
    """A remote failure during sync; a retry may help."""

class IntegrityError(MemdirError):
    """Wrong CID, tampered or undecryptable data."""

class Hit:
    """One recall hit."""

    @property
    def key(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def updated(self) -> str: ...
    @property
    def score(self) -> float: ...
    @property
    def relevance(self) -> float: ...
    @property
    def line(self) -> Optional[str]: ...

class Context:
    """A context block: str(context) is its text."""

    @property
    def text(self) -> str: ...
    @property
    def tokens(self) -> int: ...
    @property
    def max_tokens(self) -> int: ...
    @property
    def memories(self) -> list[str]: ...
    @property
    def excerpts(self) -> list[str]: ...
    @property
    def events(self) -> int: ...
    @property
    def problems(self) -> list[str]: ...

class Record:
    """One memory as stored."""

    @property
    def key(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def body(self) -> str: ...
    @property
    def tags(self) -> list[str]: ...
    @property
    def important(self) -> bool: ...
    @property
    def created(self) -> str: ...
    @property
    def updated(self) -> str: ...
    @property
    def source(self) -> Optional[str]: ...
    @property
    def decay(self) -> Optional[str]: ...
    @property
    def supersedes(self) -> list[str]: ...
    @property
    def valid_until(self) -> Optional[str]: ...
    @property
    def hash(self) -> str: ...

class ToolReply:
    """The reply of one memory-tool command: str(reply) is its text."""

    @property
    def text(self) -> str: ...
    @property
    def is_error(self) -> bool: ...

class SyncReport:
    """What one sync did."""

    @property
    def pulled(self) -> Optional[str]: ...
    @property
    def written(self) -> int: ...
    @property
    def deleted(self) -> int: ...
    @property
    def pushed(self) -> str: ...
    @property
    def network_root(self) -> str: ...
    @property
    def up_to_date(self) -> bool: ...
    @property
    def conflicts(self) -> list[str]: ...
    @property
    def rounds(self) -> int: ...

class Memory:
    """A memory directory (or an in-memory store) and memdir's operations on it."""

    def __init__(self, path: Union[str, "os.PathLike[str]"]) -> None: ...
    @staticmethod
    def in_memory() -> "Memory": ...
    @property
    def root(self) -> pathlib.Path: ...
    def init(self) -> bool: ...
    def remember(
        self,
        key: str,
        body: str,
        *,
        name: Optional[str] = None,
        description: Optional[str] = None,
        type: Optional[str] = None,
        tags: Optional[list[str]] = None,
        important: Optional[bool] = None,
        decay: Optional[str] = None,
        source: Optional[str] = None,
        supersedes: Optional[list[str]] = None,
        valid_until: Optional[str] = None,
        replace: bool = False,
        expected_hash: Optional[str] = None,
    ) -> str: ...
    def recall(self, query: str, limit: int = 10) -> list[Hit]: ...
    def context(self, max_tokens: int = ..., query: Optional[str] = None) -> Context: ...
    def read(self, key: str) -> Record: ...
    def forget(self, key: str, reason: Optional[str] = None) -> None: ...
    def rename(self, old: str, new: str) -> None: ...
    def edit(
        self,
        key: str,
        *,
        append: Optional[str] = None,
        prepend: Optional[str] = None,
        find: Optional[str] = None,
        replace: Optional[str] = None,
        count: Optional[int] = None,
        section: Optional[str] = None,
        section_text: Optional[str] = None,
        name: Optional[str] = None,
        description: Optional[str] = None,
        type: Optional[str] = None,
        tags: Optional[list[str]] = None,
        important: Optional[bool] = None,
        decay: Optional[str] = None,
        source: Optional[str] = None,
    ) -> str: ...
    def memory_tool(self, command: Union[Mapping[str, Any], str]) -> str: ...
    def memory_tool_reply(self, command: Union[Mapping[str, Any], str]) -> ToolReply: ...
    def sync(
        self,
        *,
        folder: Optional[Union[str, "os.PathLike[str]"]] = None,
        provider: Optional[str] = None,
        mode: Optional[str] = None,
        strategy: str = "merge",
    ) -> SyncReport: ...
