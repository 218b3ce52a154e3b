"""Which files differ between two checkouts, by content (sha256), never reading outside one."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path

ContentId = Callable[[bytes], str]
"""How a file's content is named: sha256 here, git's blob id in `gitdigests`."""


def sha256(content: bytes) -> str:
    """The content's sha256, in hex."""
    return hashlib.sha256(content).hexdigest()


def file_digests(root: Path) -> dict[str, str]:
    """{repo-relative file: sha256} for every regular file (links to files followed).

    Directories that are symlinks are not entered: files under them are unknown,
    and a deployment reading one is never reused.
    """
    digests: dict[str, str] = {}
    real_root = os.path.realpath(root)
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = [d for d in subdirectories if d != ".git"]
        for name in files:
            if name == ".git":  # a worktree's link to its repository
                continue
            path = Path(directory) / name
            digest = digest_of(path, real_root)
            if digest is not None:
                digests[path.relative_to(root).as_posix()] = digest
    return digests


def digest_of(path: Path, real_root: str, content_id: ContentId = sha256) -> str | None:
    """The file's content id (None: not a file); a link leading out of the checkout is
    known by its target's name only, as nothing outside the checkout is ever read."""
    target = os.path.realpath(path)
    if os.path.commonpath([real_root, target]) != real_root:
        return "outside:" + hashlib.sha256(os.readlink(path).encode()).hexdigest()
    if not os.path.isfile(target):
        return None
    return content_id(Path(target).read_bytes())


def differing(old: dict[str, str], new: dict[str, str]) -> frozenset[str]:
    """Files added, removed or modified between two digest maps."""
    return frozenset(name for name in old.keys() | new.keys() if old.get(name) != new.get(name))


def reported(files: Iterable[str], ignored: Iterable[str]) -> tuple[str, ...]:
    """`files`, sorted, without the git-ignored paths (directories end in `/`)."""
    skipped = tuple(ignored)
    return tuple(sorted(name for name in files if not _ignored(name, skipped)))


def _ignored(name: str, ignored: tuple[str, ...]) -> bool:
    return any(name == path or (path.endswith("/") and name.startswith(path)) for path in ignored)
