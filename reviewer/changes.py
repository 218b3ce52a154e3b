"""Changes: which files differ between the two checkouts a diff compares.

Read from git where both roots are git work trees of one object format (a file git
vouches is unmodified is named by its blob id; only the rest is read and hashed), else by
hashing every file of both. Both ways name the same files, equal where their bytes are.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from reviewer.filedigests import differing, file_digests, reported
from reviewer.gitdigests import tree_digests
from reviewer.proc import ISOLATED_GIT


@dataclass(frozen=True)
class Changes:
    """Files that differ between two checkouts, and every file either side holds."""

    files: frozenset[str]
    """Added, removed or modified files, git-ignored ones included (planning reads them)."""
    reported: tuple[str, ...]
    """What the blast radius lists: `files` without the head side's git-ignored paths."""
    known: frozenset[str]
    """Every file of both sides and every directory above one."""
    sides: tuple[Mapping[str, str], ...] = ()
    """{file: content digest} of each side (base, head), when known (the plan cache's keys)."""
    dirty: frozenset[str] = field(init=False)
    """Changed files and every directory above one."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "dirty", frozenset(with_parents(self.files)))

    def touches(self, path: str) -> bool:
        """Whether the file (or anything under the directory) `path` differs between the sides."""
        return path in self.dirty


def changes_between(
    base: Path, head: Path, *, ignored: Iterable[str] = (), env: Mapping[str, str] = ISOLATED_GIT
) -> Changes:
    """What differs between the checkouts, from git where it can tell (git sees `env`, the
    one that checked them out), else by hashing every file."""
    with ThreadPoolExecutor(max_workers=2) as pool:  # mostly waiting for git
        old, new = pool.map(functools.partial(tree_digests, env=env), (base, head))
    if old is None or new is None or old.object_format != new.object_format:
        return hashed_changes(base, head, ignored=ignored)
    return _changes(old.digests, new.digests, ignored)


def hashed_changes(base: Path, head: Path, *, ignored: Iterable[str] = ()) -> Changes:
    """What differs between the checkouts, by hashing every file of both (sha256)."""
    return _changes(file_digests(base), file_digests(head), ignored)


def _changes(old: dict[str, str], new: dict[str, str], ignored: Iterable[str]) -> Changes:
    files = differing(old, new)
    return Changes(
        files,
        reported(files, ignored),
        frozenset(with_parents(old.keys() | new.keys())),
        (old, new),
    )


def with_parents(files: Iterable[str]) -> set[str]:
    """`files` and every directory above one."""
    found: set[str] = set()
    for name in files:
        found.add(name)
        while "/" in name:
            name = name.rsplit("/", 1)[0]
            if name in found:
                break
            found.add(name)
    return found
