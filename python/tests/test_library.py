"""The Rust library's scenario through the Python package: remember, recall, read,
edit, context within its budget, forget, rename, a two-directory folder sync, and
memdir's errors as exceptions with message and hint (tests/library.rs, tests/sync.rs
do the same in Rust)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

import memdir
from memdir import InputError, MemdirError, Memory, UsageError

ROLE_BODY = "Plays weekly 5-a-side football on Saturdays.\nSupports Argentina."


def seed(mem: Memory) -> None:
    assert mem.remember("user_role", ROLE_BODY, name="Role", description="Argentina fan, plays 5-a-side", type="user", tags=["football"]) == "created"
    assert mem.remember("project_deploy", "# Deploy\nRun `make release` then tag the commit.\n") == "created"
    assert mem.remember("feedback_tone", "Keep answers short; no bullet lists unless asked.", name="Tone", description="how to answer") == "created"


def test_remember_read_and_the_file_on_disk(tmp_path: Path) -> None:
    mem = Memory(tmp_path / "memory")
    seed(mem)
    r = mem.read("user_role")
    assert (r.key, r.type, r.name, r.description, r.tags) == ("user_role", "user", "Role", "Argentina fan, plays 5-a-side", ["football"])
    assert r.body == ROLE_BODY
    assert r.created == r.updated == "2026-04-14"
    assert len(r.hash) == 64
    # Name, description and type derived as the memory tool derives them.
    d = mem.read("project_deploy")
    assert (d.name, d.description, d.type) == ("Deploy", "Run `make release` then tag the commit.", "project")
    text = (tmp_path / "memory" / "user_role.md").read_text()
    assert text.startswith("---\nname: Role\n") and text.endswith(ROLE_BODY + "\n")
    index = (tmp_path / "memory" / "MEMORY.md").read_text()
    assert "[Role](user_role.md)" in index and "[Deploy](project_deploy.md)" in index
    # The same content again changes nothing; another content is refused unless replace.
    assert mem.remember("user_role", ROLE_BODY, name="Role", description="Argentina fan, plays 5-a-side", type="user") == "unchanged"
    with pytest.raises(InputError) as e:
        mem.remember("user_role", "other", name="Role", description="x", type="user")
    assert "user_role" in e.value.message and e.value.hint
    assert mem.remember("user_role", "other", name="Role", description="x", type="user", replace=True) == "updated"
    assert mem.read("user_role").body == "other"
    # Compare-and-swap on the version hash.
    h = mem.read("user_role").hash
    with pytest.raises(InputError):
        mem.remember("user_role", "third", name="Role", description="x", expected_hash="0" * 64)
    assert mem.remember("user_role", "third", name="Role", description="x", expected_hash=h) == "updated"


def test_recall_ranks_and_returns_hits(tmp_path: Path) -> None:
    mem = Memory(tmp_path / "memory")
    seed(mem)
    hits = mem.recall("saturday football", limit=5)
    assert [h.key for h in hits][0] == "user_role"
    h = hits[0]
    assert (h.type, h.name, h.updated) == ("user", "Role", "2026-04-14")
    assert h.score > 0 and h.relevance > 0
    assert h.line == "Plays weekly 5-a-side football on Saturdays."
    assert len(mem.recall("the", limit=1)) <= 1
    assert mem.recall("zebra quantum") == []
    with pytest.raises(UsageError) as e:
        mem.recall("   ")
    assert e.value.exit_code == 2


@pytest.mark.parametrize("budget", [60, 120, 400, 2048])
def test_context_stays_within_its_budget(tmp_path: Path, budget: int) -> None:
    mem = Memory(tmp_path / "memory")
    seed(mem)
    for i in range(30):
        mem.remember(f"project_note_{i}", f"Note {i}\n" + "Details of the weekly planning meeting. " * 20)
    c = mem.context(max_tokens=budget, query="deploy release")
    assert c.max_tokens == budget
    assert c.tokens <= budget
    # memdir's token estimate: characters / 4, so the text is never over 4 × budget
    # characters (spec/ranking.md#budget).
    assert len(c.text) <= budget * 4
    assert c.text.startswith("# Agent Memory")
    assert str(c) == c.text
    if budget >= 400:
        assert c.memories[0] == "project_deploy"
        assert "make release" in c.text


def test_context_without_query_and_the_default_budget(tmp_path: Path) -> None:
    mem = Memory(tmp_path / "memory")
    seed(mem)
    c = mem.context()
    assert c.max_tokens == memdir.DEFAULT_MAX_TOKENS
    assert set(c.memories) == {"user_role", "project_deploy", "feedback_tone"}
    assert c.excerpts == [] and c.problems == []


def test_edit_forget_rename(tmp_path: Path) -> None:
    dir = tmp_path / "memory"
    mem = Memory(dir)
    seed(mem)
    assert mem.edit("project_deploy", append="Then announce it.") == "updated"
    assert mem.read("project_deploy").body.endswith("Then announce it.")
    assert mem.edit("project_deploy", find="make release", replace="make ship", count=1) == "updated"
    assert "make ship" in mem.read("project_deploy").body
    with pytest.raises(InputError):
        mem.edit("project_deploy", find="absent text", replace="x", count=1)
    assert mem.edit("project_deploy", important=True, tags=["ops"]) == "updated"
    r = mem.read("project_deploy")
    assert r.important and r.tags == ["ops"]
    with pytest.raises(UsageError) as e:
        mem.edit("project_deploy")
    assert "nothing to edit" in e.value.message and e.value.hint
    with pytest.raises(UsageError):
        mem.edit("project_deploy", find="x")
    mem.rename("feedback_tone", "feedback_style")
    assert mem.read("feedback_style").name == "Tone"
    mem.forget("feedback_style", reason="no longer true")
    with pytest.raises(InputError) as e:
        mem.read("feedback_style")
    assert "feedback_style" in e.value.message
    assert not (dir / "feedback_style.md").exists()
    events = [json.loads(line) for f in sorted((dir / "timeline").glob("*.jsonl")) for line in f.read_text().splitlines()]
    assert any(e["type"] == "forgot" and e["key"] == "feedback_style" and e.get("reason") == "no longer true" for e in events)
    assert any(e["type"] == "renamed" for e in events)


def test_errors_are_exceptions_with_message_and_hint(tmp_path: Path) -> None:
    mem = Memory(tmp_path / "memory")
    with pytest.raises(InputError) as e:
        mem.remember("Bad Key", "x")
    err = e.value
    assert isinstance(err, MemdirError) and isinstance(err, Exception)
    assert err.message.startswith("key `Bad Key`") and str(err) == err.message
    assert err.hint == "use snake_case keys such as `user_role` (convention: <type>_<topic>)"
    assert err.exit_code == 1 and isinstance(err.causes, list)
    with pytest.raises(InputError) as e:
        mem.remember("reference_token", "ghp_abcdefghijklmnopqrstuvwxyz0123456789")
    assert "reference_token" in e.value.message and "credentials" in (e.value.hint or "")
    assert not (tmp_path / "memory" / "reference_token.md").exists()
    with pytest.raises(InputError):
        mem.remember("user_x", "x", type="boss")
    # A malformed file names the file and line, and the good memories still load.
    mem.remember("user_ok", "fine")
    (tmp_path / "memory" / "user_bad.md").write_text("---\nname: [unclosed\n---\nbody\n")
    with pytest.raises(InputError) as e:
        mem.read("user_bad")
    assert "user_bad.md" in e.value.message
    c = mem.context()
    assert "user_ok" in c.memories and any("user_bad.md" in p for p in c.problems)
    with pytest.raises(UsageError) as e:
        mem.sync(folder=tmp_path / "remote", mode="local")
    assert "mode `local`" in e.value.message


def test_in_memory_store(tmp_path: Path) -> None:
    mem = Memory.in_memory()
    seed(mem)
    assert mem.recall("deploy")[0].key == "project_deploy"
    assert "Deploy" in mem.context(max_tokens=500).text
    assert "(memory)" in str(mem.root)


def test_threads_share_one_memory(tmp_path: Path) -> None:
    # Calls release the GIL; writes from several threads all land.
    mem = Memory(tmp_path / "memory")
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(5):
                mem.remember(f"project_t{n}_{i}", f"thread {n} note {i}")
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    assert len(list((tmp_path / "memory").glob("project_t*.md"))) == 20


def test_two_directories_sync_through_a_folder(tmp_path: Path) -> None:
    remote = tmp_path / "remote"
    a = Memory(tmp_path / "a")
    b = Memory(tmp_path / "b")
    a.remember("user_role", ROLE_BODY, name="Role", description="Argentina fan", type="user")
    b.remember("project_deploy", "Run make release.", name="Deploy", description="how to ship")
    first = a.sync(folder=remote)
    assert first.pulled is None and first.pushed.startswith("bafy")
    second = b.sync(folder=remote)
    assert second.pulled == first.pushed and second.written >= 1
    third = a.sync(folder=remote)
    assert third.pulled == second.pushed
    for mem, root in ((a, tmp_path / "a"), (b, tmp_path / "b")):
        assert mem.read("user_role").body == ROLE_BODY
        assert mem.read("project_deploy").body == "Run make release."
        assert {p.name for p in root.glob("*.md")} == {"MEMORY.md", "user_role.md", "project_deploy.md"}
    assert (tmp_path / "a" / "user_role.md").read_bytes() == (tmp_path / "b" / "user_role.md").read_bytes()
    # A forget travels as a tombstone: B syncs it, A pulls it, the memory stays gone.
    b.forget("user_role")
    b.sync(folder=remote)
    a.sync(folder=remote)
    with pytest.raises(InputError):
        a.read("user_role")
    assert a.sync(folder=remote).up_to_date


def test_sync_errors_name_what_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mem = Memory(tmp_path / "a")
    mem.remember("user_x", "x")
    monkeypatch.delenv("MEMDIR_FOLDER", raising=False)
    with pytest.raises(MemdirError) as e:
        mem.sync(provider="folder")
    assert "MEMDIR_FOLDER" in e.value.message or "MEMDIR_FOLDER" in (e.value.hint or "")
    # The environment names the folder, as for `memdir sync --provider folder`.
    monkeypatch.setenv("MEMDIR_FOLDER", str(tmp_path / "remote"))
    assert mem.sync(provider="folder").pushed.startswith("bafy")
    with pytest.raises(UsageError):
        mem.sync(folder=tmp_path / "remote", provider="folder")
    with pytest.raises(UsageError):
        mem.sync(folder=tmp_path / "remote", strategy="clobber")
