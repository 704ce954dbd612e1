"""Claude's memory tool through the Python package: `Memory.memory_tool` and
`MemdirMemoryTool` (the anthropic SDK's BetaAbstractMemoryTool over memdir), driven
with the command JSON the API sends, through the call path the SDK's tool runner
uses (`tool.call(tool_use.input)`, a `ToolError` becoming an error result), and
checked byte for byte against the SDK's reference BetaLocalFilesystemMemoryTool run
on a sibling directory (spec/memory-tool.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from anthropic.lib.tools._beta_functions import ToolError
from anthropic.tools.memory import BetaAbstractMemoryTool, BetaLocalFilesystemMemoryTool

from conftest import comparable, script_steps
from memdir import Memory, MemdirMemoryTool


def run_tool(tool: BetaAbstractMemoryTool, command: dict[str, Any]) -> tuple[str, bool]:
    """One command as the tool runner runs it: the reply, or a ToolError's text."""
    try:
        return str(tool.call(command)), False
    except ToolError as e:
        return str(e), True


REFERENCE_STEPS = [s["command"] for s in script_steps() if s["reference"]]


def test_memdir_memory_tool_is_the_sdks_memory_tool(tmp_path: Path) -> None:
    tool = MemdirMemoryTool(tmp_path / "memory")
    assert isinstance(tool, BetaAbstractMemoryTool)
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
    cached = MemdirMemoryTool(Memory(tmp_path / "memory"), cache_control={"type": "ephemeral"})
    assert cached.to_dict()["cache_control"] == {"type": "ephemeral"}


def test_replies_match_the_reference_byte_for_byte(tmp_path: Path) -> None:
    reference = BetaLocalFilesystemMemoryTool(base_path=str(tmp_path / "reference"))
    tool = MemdirMemoryTool(tmp_path / "memory")
    mismatches = []
    for i, command in enumerate(REFERENCE_STEPS):
        want_text, want_error = run_tool(reference, command)
        got_text, got_error = run_tool(tool, command)
        want = (comparable(command, want_text), want_error)
        got = (comparable(command, got_text), got_error)
        if got != want:
            mismatches.append(f"step {i} {json.dumps(command)}:\n  memdir:    {got!r}\n  reference: {want!r}")
    assert not mismatches, "\n".join(mismatches)
    # Both directories hold the same files with the same text as the tool sees it.
    ref_root = tmp_path / "reference" / "memories"
    names = sorted(p.name for p in ref_root.iterdir())
    assert sorted(p.name for p in (tmp_path / "memory").glob("*.md") if p.name != "MEMORY.md") == names
    mem = Memory(tmp_path / "memory")
    for name in names:
        view = {"command": "view", "path": f"/memories/{name}"}
        assert mem.memory_tool(view) == reference.call(view), name


def test_each_command_method_and_tool_error(tmp_path: Path) -> None:
    from anthropic.types.beta import BetaMemoryTool20250818CreateCommand, BetaMemoryTool20250818ViewCommand

    tool = MemdirMemoryTool(str(tmp_path / "memory"))
    create = BetaMemoryTool20250818CreateCommand(command="create", path="/memories/user_tea.md", file_text="# Tea\nGreen, no milk.\n")
    assert tool.create(create) == "File created successfully at: /memories/user_tea.md"
    assert tool.view(BetaMemoryTool20250818ViewCommand(command="view", path="/memories/user_tea.md")) == (
        "Here's the content of /memories/user_tea.md with line numbers:\n     1\t# Tea\n     2\tGreen, no milk.\n     3\t"
    )
    with pytest.raises(ToolError) as e:
        tool.create(create)
    assert str(e.value) == "File /memories/user_tea.md already exists"
    # What the tool wrote is a memory: recall finds it, its frontmatter is memdir's.
    mem = tool.memory
    assert mem.recall("green tea")[0].key == "user_tea"
    r = mem.read("user_tea")
    assert (r.name, r.description, r.type) == ("Tea", "Green, no milk.", "user")
    # A secret is refused as an error result, and nothing is written.
    with pytest.raises(ToolError) as e:
        tool.call({"command": "create", "path": "/memories/k.md", "file_text": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"})
    assert "refused to store k" in str(e.value)
    assert not (tmp_path / "memory" / "k.md").exists()


def test_memory_tool_takes_a_dict_or_json_text(tmp_path: Path) -> None:
    mem = Memory(tmp_path / "memory")
    cmd = {"command": "create", "path": "/memories/user_coffee.md", "file_text": "Likes coffee black.\n"}
    assert mem.memory_tool(cmd) == "File created successfully at: /memories/user_coffee.md"
    view = json.dumps({"command": "view", "path": "/memories/user_coffee.md"})
    assert mem.memory_tool(view) == (
        "Here's the content of /memories/user_coffee.md with line numbers:\n     1\tLikes coffee black.\n     2\t"
    )
    reply = mem.memory_tool_reply({"command": "view", "path": "/memories/none.md"})
    assert reply.is_error and reply.text == "The path /memories/none.md does not exist. Please provide a valid path."
    assert str(reply) == reply.text
    bad = mem.memory_tool_reply("{not json")
    assert bad.is_error and bad.text.startswith("Invalid memory tool command: not JSON")
    assert mem.memory_tool({"command": "clear"}).startswith("Invalid memory tool command: unknown command `clear`")
    with pytest.raises(TypeError):
        mem.memory_tool({"command": "view", "path": object()})


def test_import_memdir_works_without_anthropic() -> None:
    # anthropic is optional: blocked, `import memdir` and the library still work, and
    # only MemdirMemoryTool needs it.
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['anthropic'] = None\n"
        "import memdir\n"
        "m = memdir.Memory.in_memory(); m.remember('user_x', 'works')\n"
        "assert m.recall('works')[0].key == 'user_x'\n"
        "try:\n"
        "    memdir.MemdirMemoryTool\n"
        "except ImportError:\n"
        "    print('needs anthropic')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "needs anthropic\n"


def test_the_tool_runner_sends_the_same_tool_results(tmp_path: Path) -> None:
    # The SDK's own path from a tool_use block to the tool_result block it sends back
    # (BetaToolRunner._run_tool: call, ToolError → is_error), for both tools.
    import anthropic
    from anthropic.types.beta import BetaToolUseBlock

    reference = BetaLocalFilesystemMemoryTool(base_path=str(tmp_path / "reference"))
    tool = MemdirMemoryTool(tmp_path / "memory")
    client = anthropic.Anthropic(api_key="unused: no request is sent")
    runner = client.beta.messages.tool_runner(
        model="claude-sonnet-5-5", max_tokens=1024, tools=[tool], messages=[{"role": "user", "content": "hi"}]
    )
    for i, command in enumerate(REFERENCE_STEPS):
        block = BetaToolUseBlock(id=f"toolu_{i:02d}", name="memory", input=command, type="tool_use")
        want = runner._run_tool(reference, block)
        got = runner._run_tool(tool, block)
        assert set(got) == set(want) and got.get("is_error") == want.get("is_error"), (command, got, want)
        assert comparable(command, str(got["content"])) == comparable(command, str(want["content"])), command
