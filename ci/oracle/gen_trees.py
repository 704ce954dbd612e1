#!/usr/bin/env python3
"""Create deterministic test trees for comparing memdir's CIDs with the oracle.

Usage: python3 gen_trees.py OUT_DIR

Each immediate subdirectory of OUT_DIR (and the file ``big.bin``) is one test
input; hand each to ``node oracle.mjs`` and to our own CID tool and compare.
The trees cover the profile's edge cases: chunking around 1 MiB, flat
directories on both sides of the 262144-byte shard threshold, HAMT shards
(also nested inside a flat directory), Unicode names in NFC and NFD, empty
files and directories, deep nesting, and hidden entries that must be ignored.

Standard library only; the output is byte-for-byte the same on every run.
"""

import os
import sys
import unicodedata


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def pattern(size):
    """Bytes i mod 251 (a prime, so chunks never repeat by accident)."""
    block = bytes(i % 251 for i in range(251))
    reps = size // 251 + 1
    return (block * reps)[:size]


def memdir(base):
    write(f"{base}/MEMORY.md", b"# Memory index\n\n- [user-prefs](user-prefs.md)\n")
    write(
        f"{base}/user-prefs.md",
        b"---\nname: user-prefs\ntype: user\n---\nPrefers concise answers.\n",
    )
    write(
        f"{base}/timeline/2026-01-01.jsonl",
        b'{"t":"2026-01-01T00:00:00Z","op":"create","file":"user-prefs.md"}\n',
    )
    # Hidden entries: both tools must leave them out of the DAG.
    write(f"{base}/.memsync/state.json", b'{"version":1}\n')
    write(f"{base}/.draft.md.swp", b"swap\n")


def flat_files(base, names, content):
    os.makedirs(base, exist_ok=True)
    for name in names:
        write(f"{base}/{name}", content(name))


def threshold(base, last_name_len):
    """4766 one-byte files: 4765 names of 11 bytes (55-byte links) and one of
    ``last_name_len`` bytes. 21 gives a flat block of exactly 262144 bytes, 22
    one byte more, which must shard."""
    count = 4766
    names = [f"n{i:010d}" for i in range(count - 1)]
    names.append("z" + str(count - 1).rjust(last_name_len - 1, "0"))
    flat_files(base, names, lambda _: b"x")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_trees.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)

    memdir(f"{out}/memdir")

    # Sort order (raw UTF-8 bytes: upper case first) and an empty file.
    for name, data in [("b.md", b"b\n"), ("a.md", b"a\n"), ("B.md", b"B\n"),
                       ("a-b.md", b"ab\n"), ("empty.md", b"")]:
        write(f"{out}/names/{name}", data)

    # A file over 1 MiB, alone and inside a directory.
    write(f"{out}/big.bin", pattern(3 * 1024 * 1024 + 17))
    write(f"{out}/big/big.bin", pattern(3 * 1024 * 1024 + 17))

    # Chunk boundaries; the two identical zero chunks become one block.
    write(f"{out}/chunks/exactly-1mib.bin", pattern(1024 * 1024))
    write(f"{out}/chunks/1mib-plus-1.bin", pattern(1024 * 1024 + 1))
    write(f"{out}/chunks/zeros-2mib.bin", bytes(2 * 1024 * 1024))

    # 1200 entries: still flat.
    flat_files(f"{out}/many", [f"note-{i:04d}.md" for i in range(1200)],
               lambda n: f"note {int(n[5:9])}\n".encode())

    # 4000 (the reference vector) and 4500 entries: HAMT shards.
    for count in (4000, 4500):
        flat_files(
            f"{out}/huge{count}",
            [f"memory-note-with-a-fairly-long-name-{i:05d}.md" for i in range(count)],
            lambda n: f"---\nname: n{int(n[36:41])}\n---\nbody {int(n[36:41])}\n".encode(),
        )

    # Exactly at and one byte over the shard threshold.
    threshold(f"{out}/at-threshold", 21)
    threshold(f"{out}/over-threshold", 22)

    # Unicode names: the same word in NFC and NFD are two different entries,
    # plus emoji, CJK, Hangul, RTL script and a space.
    cafe = "café"
    for i, name in enumerate([
        unicodedata.normalize("NFC", cafe) + ".md",
        unicodedata.normalize("NFD", cafe) + ".md",
        "🦀 crab notes.md",
        "👩‍💻.md",
        "日本語のメモ.md",
        "中文笔记.md",
        "한국어.md",
        "مرحبا.md",
        "Ünïcödé/ß.md",
    ]):
        write(f"{out}/unicode/{name}", f"unicode {i}\n".encode())

    # Empty file, empty directory, deep nesting, hidden entries at depth.
    write(f"{out}/mixed/empty.md", b"")
    os.makedirs(f"{out}/mixed/empty-dir", exist_ok=True)
    os.makedirs(f"{out}/mixed/only-hidden/.git", exist_ok=True)
    write(f"{out}/mixed/only-hidden/.gitkeep", b"")
    write(f"{out}/mixed/a/b/c/d/e/f/deep.md", b"deep\n")
    write(f"{out}/mixed/a/b/sibling.md", b"sibling\n")
    write(f"{out}/mixed/a/.hidden/secret.md", b"secret\n")

    # A HAMT nested inside a flat directory, next to a multi-chunk file.
    flat_files(
        f"{out}/nested-hamt/archive",
        [f"archived-memory-with-a-long-descriptive-name-{i:05d}.md" for i in range(4200)],
        lambda n: n.encode() + b"\n",
    )
    write(f"{out}/nested-hamt/MEMORY.md", b"# Memory index\n")
    write(f"{out}/nested-hamt/attachment.bin", pattern(1024 * 1024 + 4096))

    # An empty directory as the root.
    os.makedirs(f"{out}/empty-root", exist_ok=True)


if __name__ == "__main__":
    main()
