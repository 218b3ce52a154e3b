"""The floor of a review: read and hash every input file of both sides, render nothing.

The base side is read from git's object store (`git cat-file --batch`, every blob of
the commit), the head side from the working tree, every file hashed with sha256. No
review can do less than this, so `run.py` prints each reviewer time beside it.

    python benchmarks/floor.py REPO --base main
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
from pathlib import Path


def hash_commit(repo: Path, ref: str) -> tuple[int, int]:
    """(files, bytes) of every blob of `ref`, read through one `git cat-file --batch`."""
    listing = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "-z", "--format=%(objectname)", ref],
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    blobs = [blob for blob in listing if blob]
    done = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch"],
        input=b"\n".join(blobs) + b"\n",
        check=True,
        capture_output=True,
    ).stdout
    position, total = 0, 0
    for _ in blobs:
        header_end = done.index(b"\n", position)
        size = int(done[position:header_end].rsplit(b" ", 1)[1])
        start = header_end + 1
        hashlib.sha256(done[start : start + size]).digest()
        total += size
        position = start + size + 1
    return len(blobs), total


def hash_tree(root: Path) -> tuple[int, int]:
    """(files, bytes) of every file below `root`, `.git` left out."""
    files, total = 0, 0
    for directory, subdirectories, names in os.walk(root):
        subdirectories[:] = [name for name in subdirectories if name != ".git"]
        for name in names:
            data = Path(directory, name).read_bytes()
            hashlib.sha256(data).digest()
            files, total = files + 1, total + len(data)
    return files, total


def main(argv: list[str]) -> int:
    """Hash both sides; print what was read."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--base", default="main", help="the base side's commit (default main)")
    args = parser.parse_args(argv)
    base = hash_commit(args.repo, args.base)
    head = hash_tree(args.repo)
    print(f"base {base[0]} files {base[1]} bytes; head {head[0]} files {head[1]} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
