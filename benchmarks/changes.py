"""Which files differ between the sides: read from git vs hashing every file, in-process.

The base side is a fresh worktree of `--base` (as `reviewer diff` makes it), the head
side the fleet's working tree. Prints the median of `--repeat` runs of each way, the
load average, and whether both gave the same changes.

    python benchmarks/changes.py REPO --base main --repeat 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from reviewer.changes import changes_between, hashed_changes
from reviewer.checkout import ignored_paths, worktree


def _median(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--base", default="main")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    head: Path = args.repo
    sha = subprocess.run(
        ["git", "-C", str(head), "rev-parse", args.base], capture_output=True, text=True, check=True
    ).stdout.strip()
    with worktree(head, sha) as base:
        ignored = ignored_paths(head)
        files = sum(1 for path in base.rglob("*") if path.is_file())
        from_git = _median(lambda: changes_between(base, head, ignored=ignored), args.repeat)
        hashed = _median(lambda: hashed_changes(base, head, ignored=ignored), args.repeat)
        found, expected = (
            way(base, head, ignored=ignored) for way in (changes_between, hashed_changes)
        )
        same = (found.files, found.reported, found.known) == (
            expected.files,
            expected.reported,
            expected.known,
        )
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"{files} files per side, load average {load}")
    print(f"from git: {from_git:.3f} s   hashing every file: {hashed:.3f} s   same: {same}")


if __name__ == "__main__":
    main()
