"""File digests of a git work tree read from its index instead of hashing every file.

A file git vouches for (tracked, unmodified since checkout by git's own check, a regular
file, no attribute that converts it on checkout) is named by its blob id, which is the
hash of its exact bytes. Everything else under the root (modified, untracked, ignored,
links, files with conversion attributes) is hashed the same way git names blobs. So the
digests name the same files, equal where their bytes are equal, as
`filedigests.file_digests` (links to files inside followed, links out known by their
text, symlinked directories not entered, `.git` skipped) at a fraction of the reads.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from reviewer.checkout import git
from reviewer.errors import CommandError
from reviewer.filedigests import ContentId, digest_of
from reviewer.proc import ISOLATED_GIT

_ATTRIBUTES = ".gitattributes"
# Attributes that make a checked-out file's bytes differ from its blob (or may).
_CONVERTING = ("text", "eol", "crlf", "filter", "ident", "working-tree-encoding")
_NO_CONVERSION = "attr:" + " ".join(f"!{name}" for name in _CONVERTING)
_UNCONVERTED = f":({_NO_CONVERSION})"
_WITH_ANY_CONVERSION = f":(exclude,{_NO_CONVERSION})"
_ANY_ATTRIBUTES_FILE = f":(top,glob)**/{_ATTRIBUTES}"
_REGULAR = ("100644", "100755")
_GITLINK = "160000"
_FALSE = ("false", "no", "off", "0", "")
_NO_HOOKS = ("-c", "core.fsmonitor=false")  # the listings run nothing but git


@dataclass(frozen=True)
class TreeDigests:
    """{root-relative file: id} of a work tree, ids comparable within one object format."""

    object_format: str
    digests: dict[str, str]


@dataclass(frozen=True)
class _Index:
    """The index under the root: blob ids of the files git checks, and the other paths."""

    checked: dict[str, str]
    unchecked: set[str]

    def paths(self) -> set[str]:
        """Every path the index holds under the root."""
        return self.checked.keys() | self.unchecked


def tree_digests(root: Path, *, env: Mapping[str, str] = ISOLATED_GIT) -> TreeDigests | None:
    """The root's file digests from git; None where git cannot vouch for them (not a work
    tree, submodules or nested repositories, line endings converted by configuration, a
    path git could not check)."""
    try:
        return _read(root, env)
    except (_Unsure, CommandError):
        return None


class _Unsure(Exception):
    """git cannot vouch for the work tree: hash every file instead."""


def _read(root: Path, env: Mapping[str, str]) -> TreeDigests:
    prefix, object_format = _location(root, env)
    index = _index(root, prefix, env)
    untracked = _listed(root, prefix, env, ("ls-files", "--others"), ".")
    if any(name.endswith("/") for name in untracked):
        raise _Unsure  # a nested repository: its files are walked by hashing, unknown to git
    if prefix:
        above = _attributes_above(prefix)
        untracked |= _listed(root, prefix, env, ("ls-files", "--others"), *above)
    # Files with conversion attributes are hashed: git is not asked (it would run filters).
    modified = _listed(
        root, prefix, env, ("diff-files", "--name-only"), _UNCONVERTED, _ANY_ATTRIBUTES_FILE
    )
    converted = _listed(root, prefix, env, ("ls-files",), ".", _WITH_ANY_CONVERSION)
    hashed = untracked | modified | converted | index.unchecked
    hashed |= _edited_attributes(modified | untracked, index.paths())
    # Named apart from sha256 digests: a file's bytes could be another's blob header + bytes.
    kind = f"git-{object_format}:"
    digests = {name: kind + blob for name, blob in index.checked.items() if name not in hashed}
    digests.update(_hash(root, hashed, _blob_id(object_format, kind)))
    return TreeDigests(object_format, digests)


def _output(root: Path, env: Mapping[str, str], *args: str) -> bytes:
    """What git prints; unsure when it warns (a path it could not check is not reported)."""
    done = git(root, *_NO_HOOKS, *args, env=env)
    if done.stderr.strip():
        raise _Unsure
    return done.stdout


def _location(root: Path, env: Mapping[str, str]) -> tuple[str, str]:
    """(root's path in the work tree with a trailing `/` or "", object format)."""
    found = git(root, "config", "--get", "core.autocrlf", ok_codes=(0, 1, 128), env=env)
    if os.fsdecode(found.stdout).strip().lower() not in _FALSE:
        raise _Unsure  # files no attribute names are converted
    where = _output(
        root, env, "rev-parse", "--show-toplevel", "--show-prefix", "--show-object-format"
    )
    lines = os.fsdecode(where).split("\n")
    if len(lines) != 4 or not _same_directory(lines[0] + "/" + lines[1], root):
        raise _Unsure  # a line break in a directory's name
    return lines[1], lines[2]


def _same_directory(listed: str, root: Path) -> bool:
    return os.path.realpath(listed) == os.path.realpath(root)


def _index(root: Path, prefix: str, env: Mapping[str, str]) -> _Index:
    """Index entries under the root; unsure when one is a submodule."""
    listed = _output(root, env, "ls-files", "-z", "-s", "-v", "--full-name", "--", ".")
    checked: dict[str, str] = {}
    unchecked: set[str] = set()
    for record in _records(listed):
        fields, _, name = record.partition("\t")
        tag, mode, blob, stage = fields.split(" ")
        name = name.removeprefix(prefix)
        # "H": tracked and checked by git (not assume-unchanged, skip-worktree or unmerged).
        if tag == "H" and mode in _REGULAR and stage == "0":
            checked[name] = blob
        elif mode == _GITLINK:
            raise _Unsure
        else:
            unchecked.add(name)
    return _Index(checked, unchecked)


def _listed(
    root: Path, prefix: str, env: Mapping[str, str], command: tuple[str, ...], *pathspecs: str
) -> set[str]:
    """Paths a listing command names: root-relative, or `../` and the full name outside it."""
    full = ("--full-name",) if command[0] == "ls-files" else ()
    listed = _output(root, env, command[0], "-z", *full, *command[1:], "--", *pathspecs)
    return {_relative(name, prefix) for name in _records(listed)}


def _attributes_above(prefix: str) -> list[str]:
    """The `.gitattributes` of every directory above the root (a separate listing: with
    other pathspecs, `ls-files --others` stops naming nested repositories)."""
    parts = prefix.split("/")[:-1]
    above = ["", *("/".join(parts[:depth]) + "/" for depth in range(1, len(parts)))]
    return [f":(top,literal){directory}{_ATTRIBUTES}" for directory in above]


def _relative(name: str, prefix: str) -> str:
    return name.removeprefix(prefix) if name.startswith(prefix) else "../" + name


def _records(output: bytes) -> list[str]:
    return [record for record in os.fsdecode(output).split("\0") if record]


def _edited_attributes(changed: set[str], index: set[str]) -> set[str]:
    """Tracked files a modified, added or removed `.gitattributes` governs: checked out
    under other attributes than git now reads, so their bytes are hashed."""
    governing = [
        name.rsplit("/", 1)[0] + "/" if "/" in name else ""
        for name in changed
        if name.rsplit("/", 1)[-1] == _ATTRIBUTES
    ]
    if any(directory == "" or directory.startswith("../") for directory in governing):
        return index
    return {name for name in index if name.startswith(tuple(governing))}


def _blob_id(object_format: str, kind: str) -> ContentId:
    def blob_id(content: bytes) -> str:
        digest = hashlib.new(object_format, b"blob %d\0" % len(content))
        digest.update(content)
        return kind + digest.hexdigest()

    return blob_id


def _hash(root: Path, names: Iterable[str], content_id: ContentId) -> dict[str, str]:
    """Each file a walk of the root reaches, hashed as `filedigests` does."""
    real_root = os.path.realpath(root)
    walked: dict[str, bool] = {"": True}
    digests: dict[str, str] = {}
    for name in names:
        if name.startswith("../") or not _reached(root, name, walked):
            continue
        path = root / name
        if os.path.isdir(path):
            continue  # a directory's link is a directory to a walk, which does not enter it
        digest = digest_of(path, real_root, content_id)
        if digest is not None:
            digests[name] = digest
    return digests


def _reached(root: Path, name: str, walked: dict[str, bool]) -> bool:
    """Whether a walk that enters no symlinked directory and no `.git` lists `name`."""
    if not os.path.lexists(root / name) or name.rsplit("/", 1)[-1] == ".git":
        return False
    directory = name.rsplit("/", 1)[0] if "/" in name else ""
    return _entered(root, directory, walked)


def _entered(root: Path, directory: str, walked: dict[str, bool]) -> bool:
    known = walked.get(directory)
    if known is not None:
        return known
    parent, _, base = directory.rpartition("/")
    entered = (
        base != ".git" and _entered(root, parent, walked) and _real_directory(root / directory)
    )
    walked[directory] = entered
    return entered


def _real_directory(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False
