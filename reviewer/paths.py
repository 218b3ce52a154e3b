"""Repository-relative paths that can never leave the repository."""

from __future__ import annotations

from pathlib import Path

from reviewer.errors import ConfigError


def inside(root: Path, base: str, relative: str, *, file: str, field: str) -> str:
    """Resolve `relative` against the repo-relative directory `base`; refuse escapes.

    Returns the repository-relative POSIX path. Symlinks are resolved first, so a
    link pointing outside the repository is refused too.
    """
    if Path(relative).is_absolute():
        raise ConfigError(
            file,
            f"absolute path '{relative}' is not allowed",
            field=field,
            hint="use a path relative to the file that names it",
        )
    real_root = root.resolve()
    target = (real_root / base / relative).resolve()
    if not target.is_relative_to(real_root):
        raise ConfigError(
            file,
            f"path '{relative}' leaves the repository",
            field=field,
            hint="files must live inside the repository under review",
        )
    return target.relative_to(real_root).as_posix()
