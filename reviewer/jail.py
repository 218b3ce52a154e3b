"""The filesystem jail: every file read from a side resolves inside that side's checkout.

A pull request controls the files of its checkout, symlinks included. A symlink may point
anywhere inside the checkout; one that resolves outside it (`/proc/self/environ`, `~/.ssh`,
another checkout) and every special file (FIFO, device, socket) is refused with an error
naming the repository-relative path, before anything reads it. Chart directories are walked
the same way before Helm's engine loads them (see `check_tree`), and chart archives are
checked entry by entry before anything extracts or loads them (see `archive_problem`).
"""

from __future__ import annotations

import gzip
import os
import stat
import tarfile
from pathlib import Path
from typing import IO

from reviewer.errors import SHORTAGES, ConfigError

OUTSIDE = "is a symlink that resolves outside the repository"
SPECIAL = "is not a regular file or directory (device, FIFO or socket)"
_HINT = "files a review reads must live inside the repository under review"


def resolve_file(root: Path, source: str) -> Path:
    """The real path of the repo-relative file `source`; `ConfigError` when it resolves
    outside `root` or is not a regular file (a missing file is returned as is)."""
    real_root = Path(os.path.realpath(root))
    return _checked(Path(os.path.realpath(root / source)), real_root, source)


class Jail:
    """`resolve_file` for the many files of one checkout: each directory's real path is
    resolved once, then only a file's own name is checked (with `lstat`) per lookup."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._real_root = Path(os.path.realpath(root))
        self._real_directories: dict[str, Path] = {}

    def resolve_file(self, source: str) -> Path:
        """As `resolve_file(root, source)`: refuses escaping symlinks and special files."""
        directory, _, name = source.rpartition("/")
        # An absolute source replaces the root when joined (`root / "/x"` is `/x`), which
        # `resolve_file` refuses; the directory of `/x` would be "" here, that is the root.
        if name in ("", ".", "..") or os.path.isabs(source):
            return resolve_file(self.root, source)
        real_directory = self._real_directories.get(directory)
        if real_directory is None:
            real_directory = Path(os.path.realpath(self.root / directory))
            self._real_directories[directory] = real_directory
        target = real_directory / name
        try:
            link = stat.S_ISLNK(os.lstat(target).st_mode)
        except OSError:
            link = False  # missing: resolves to itself, as realpath has it
        if link:
            target = Path(os.path.realpath(target))
        return _checked(target, self._real_root, source)


def _checked(target: Path, real_root: Path, source: str) -> Path:
    if not target.is_relative_to(real_root):
        raise ConfigError(source, OUTSIDE, hint=_HINT)
    try:
        mode = target.stat().st_mode
    except OSError:
        return target  # missing: the caller reports it in its own words
    if not stat.S_ISREG(mode):
        raise ConfigError(source, SPECIAL if not stat.S_ISDIR(mode) else "is a directory")
    return target


def read_text(root: Path, source: str) -> str:
    """The UTF-8 text of the repo-relative file `source`, read only if it passes the jail."""
    return read_file_text(resolve_file(root, source), source)


def read_file_text(path: Path, source: str) -> str:
    """The UTF-8 text of `path`; a file that cannot be read (a loop of links, a link to
    nothing, a directory) is a `ConfigError` naming `source`."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(source, "not UTF-8 text") from None
    except OSError as error:
        if error.errno in SHORTAGES:
            raise
        raise ConfigError(source, f"cannot be read ({error.strerror or error})") from None


def check_tree(root: Path, directory: Path, *, archives: bool = False) -> None:
    """Refuse a directory (a chart) holding an escaping symlink or a special file.

    Follows symlinks that stay inside `root` the way Helm's loader does, directories
    included, so every file the engine can load has been checked. With `archives`, every
    `.tgz` file in it (a packaged subchart) is checked with `archive_problem` too.
    `ConfigError` names the first offending path relative to `root`.
    """
    real_root = Path(os.path.realpath(root))
    seen: set[Path] = set()
    pending = [directory]
    while pending:
        current = pending.pop()
        real = Path(os.path.realpath(current))
        if real in seen:
            continue
        seen.add(real)
        for entry in sorted(os.scandir(current), key=lambda e: e.name):
            path = Path(entry.path)
            if _check_entry(path, real_root, root) and path.is_dir():
                pending.append(path)
            elif archives and entry.name.endswith(".tgz"):
                check_archive_file(root, path)


def check_archive_file(root: Path, path: Path) -> None:
    """Refuse the chart archive `path` (inside `root`) when `archive_problem` finds one."""
    problem = archive_problem(path)
    if problem is not None:
        raise ConfigError(_shown(path, root), problem, hint=_ARCHIVE_HINT)


def _check_entry(path: Path, real_root: Path, root: Path) -> bool:
    """True when `path` is a directory to walk into; raises for what the jail refuses."""
    shown = _shown(path, root)
    target = Path(os.path.realpath(path))
    if not target.is_relative_to(real_root):
        raise ConfigError(shown, OUTSIDE, hint=_HINT)
    try:
        mode = target.stat().st_mode
    except OSError:
        return False  # a dangling link: Helm reports it
    if stat.S_ISDIR(mode):
        return True
    if not stat.S_ISREG(mode):
        raise ConfigError(shown, SPECIAL, hint=_HINT)
    return False


def _shown(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.name


def archive_member_problem(name: str) -> str | None:
    """Why an archive entry name is refused (absolute, `..`, backslash), or None."""
    if name.startswith("/") or "\\" in name or ".." in name.split("/"):
        return f"archive entry '{name}' has an absolute or '..' path"
    return None


def archive_problem(path: Path) -> str | None:
    """Why the gzip tar `path` must be neither extracted nor loaded, or None.

    Refused: entries with absolute or `..` paths, symbolic and hard links, devices, FIFOs
    and every other entry that is not a file or a directory, also inside the packaged
    subcharts (`.tgz` entries) it carries. An unreadable archive is left to the loader."""
    try:
        with path.open("rb") as stream:
            return _stream_problem(stream, depth=0)
    except (OSError, tarfile.TarError, EOFError):
        return None


def _stream_problem(stream: IO[bytes], *, depth: int) -> str | None:
    if depth > _ARCHIVE_DEPTH:
        return f"archives nested more than {_ARCHIVE_DEPTH} deep"
    # Stream mode reads every entry once and never seeks: a nested archive is checked
    # straight from its parent's stream. gzip is undone by the gzip module, not by tarfile's
    # "r|gz": Python 3.11.2 (Debian 12) crashes on the FEXTRA header that Helm packages carry.
    with (
        gzip.GzipFile(fileobj=stream, mode="rb") as unzipped,
        tarfile.open(fileobj=unzipped, mode="r|") as archive,
    ):
        for member in archive:
            problem = _member_problem(member)
            if problem is None and member.isfile() and member.name.endswith(".tgz"):
                nested = archive.extractfile(member)
                problem = _stream_problem(nested, depth=depth + 1) if nested else None
                if problem is not None:
                    problem = f"in '{member.name}': {problem}"
            if problem is not None:
                return problem
    return None


def _member_problem(member: tarfile.TarInfo) -> str | None:
    named = archive_member_problem(member.name)
    if named is not None:
        return named
    if member.issym() or member.islnk():
        return f"archive entry '{member.name}' is a link ({_LINK_NOTE})"
    if not (member.isfile() or member.isdir()):
        return f"archive entry '{member.name}' is not a regular file or directory (device or FIFO)"
    return None


_ARCHIVE_DEPTH = 8
_LINK_NOTE = "links in chart archives are refused"
_ARCHIVE_HINT = "a chart archive may hold only regular files and directories under its chart"
