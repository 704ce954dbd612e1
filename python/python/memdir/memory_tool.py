"""``MemdirMemoryTool``: Claude's memory tool (``memory_20250818``) stored in memdir.

A subclass of the ``anthropic`` SDK's ``BetaAbstractMemoryTool``, so an app that
hands the SDK a memory tool gets memdir's directory (search, budgeted context,
sync, secret refusal, history) with one line::

    from memdir.memory_tool import MemdirMemoryTool
    runner = client.beta.messages.tool_runner(..., tools=[MemdirMemoryTool("memory")])

Each command method hands the command to ``Memory.memory_tool_reply`` and returns
the reply text; an error reply raises the SDK's ``ToolError`` with that text, where
the SDK's reference ``BetaLocalFilesystemMemoryTool`` raises it, so the tool runner
sends it to the model as an error result. The replies are the reference's, byte for
byte, except where memdir differs on purpose (MEMORY.md, folders, names that are not
keys, refused secrets, the directory's own size). This module imports ``anthropic``;
``import memdir`` does not.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Union

from anthropic.lib.tools._beta_functions import ToolError
from anthropic.tools.memory import BetaAbstractMemoryTool
from anthropic.types.beta import (
    BetaCacheControlEphemeralParam,
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)

from ._memdir import Memory

__all__ = ["MemdirMemoryTool"]


def _as_dict(command: Any) -> Any:
    """The command as the JSON object the model sent: an SDK command model's fields
    as given (none added), or a mapping as it is."""
    if isinstance(command, Mapping):
        return dict(command)
    to_dict = getattr(command, "to_dict", None)
    if to_dict is not None:
        return to_dict(mode="json", exclude_unset=True, warnings=False)
    return command


class MemdirMemoryTool(BetaAbstractMemoryTool):
    """Claude's memory tool over the memdir memory directory ``memory`` (a path or
    a ``Memory``): ``/memories/<key>.md`` is memory ``<key>``."""

    def __init__(
        self,
        memory: Union[Memory, str, "os.PathLike[str]"] = "./memory",
        *,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        super().__init__(cache_control=cache_control)
        self.memory = memory if isinstance(memory, Memory) else Memory(memory)

    def _run(self, command: Any) -> str:
        reply = self.memory.memory_tool_reply(_as_dict(command))
        if reply.is_error:
            raise ToolError(reply.text)
        return reply.text

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return self._run(command)

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return self._run(command)

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return self._run(command)

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return self._run(command)

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return self._run(command)

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return self._run(command)
