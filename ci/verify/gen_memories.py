#!/usr/bin/env python3
"""Writes the memory directories the verify suite pushes (test-only).

Usage: gen_memories.py OUT [foreign]. Each OUT/<name>/ is a memory directory memdir pushes
as it is: unicode names and contents, empty files, a note above 1 MiB (two
chunks), many files (4,000: a HAMT under the profile), the nested timeline/ folder.
"""
import os
import sys


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode("utf-8"))


def note(name, body):
    return f"---\nname: {name}\ndescription: {name}\ntype: user\n---\n\n{body}\n"


def foreign(out):
    """A 1,200-entry memory with a long note: ipfs-car shards it (over 1,000 entries),
    the 256 KiB chunkers split the note; the profile keeps it flat, one leaf."""
    base = f"{out}/many1200"
    write(f"{base}/MEMORY.md", "# Memory index\n")
    for i in range(1199):
        write(f"{base}/note-{i:04}.md", note(f"n{i}", f"body {i}"))
    body = "".join(f"line {i:06}: the quick brown fox jumps over the lazy dog\n" for i in range(6000))
    write(f"{base}/timeline/2026-01-01.jsonl", '{"ts":"2026-01-01T00:00:00Z","type":"user_said","text":"x"}\n')
    write(f"{base}/reference_long.md", note("long", body))


def main():
    out = sys.argv[1]
    if sys.argv[2:] == ["foreign"]:
        foreign(out)
        return
    # Unicode in names (NFC and NFD spellings are two entries), contents, timeline.
    base = f"{out}/unicode"
    write(f"{base}/MEMORY.md", "# Memory index\n")
    write(f"{base}/caf\u00e9.md", note("café NFC", "Prefers café au lait ☕"))
    write(f"{base}/cafe\u0301.md", note("café NFD", "Same word, decomposed"))
    write(f"{base}/日本語.md", note("日本語", "東京 — 한국어 — עברית — 🚀"))
    write(f"{base}/timeline/2026-01-01.jsonl", '{"ts":"2026-01-01T00:00:00Z","type":"user_said","text":"héllo ✓"}\n')
    # Empty files next to ordinary ones.
    base = f"{out}/empty-files"
    write(f"{base}/MEMORY.md", "")
    write(f"{base}/empty.md", "")
    write(f"{base}/user_role.md", note("role", "Writes Rust."))
    write(f"{base}/timeline/2026-01-02.jsonl", "")
    # A note above 1 MiB: two raw leaves under a dag-pb file node.
    base = f"{out}/big"
    write(f"{base}/MEMORY.md", "# Memory index\n")
    body = "".join(f"line {i:06}: the quick brown fox jumps over the lazy dog\n" for i in range(20000))
    write(f"{base}/reference_big.md", note("big", body))
    # Many files: 4,000 long names shard the root into a HAMT under the profile.
    base = f"{out}/many"
    write(f"{base}/MEMORY.md", "# Memory index\n")
    for i in range(4000):
        write(f"{base}/memory-note-with-a-fairly-long-name-{i:05}.md", note(f"n{i}", f"body {i}"))
    # The nested timeline/ folder with several days and a memory beside it.
    base = f"{out}/timeline"
    write(f"{base}/MEMORY.md", "# Memory index\n\n- [prefs](user_preferences.md)\n")
    write(f"{base}/user_preferences.md", note("prefs", "Concise answers."))
    for day in range(1, 32):
        write(f"{base}/timeline/2026-03-{day:02}.jsonl",
              "".join(f'{{"ts":"2026-03-{day:02}T{h:02}:00:00Z","type":"user_said","text":"event {h}"}}\n' for h in range(24)))


if __name__ == "__main__":
    main()
