"""Repository-relative paths that can never leave the repository."""

from __future__ import annotations

import functools
import os
from pathlib import Path

from reviewer.errors import ConfigError

CHECKOUT_ROOT = "/repo"
"""The absolute path templates see as the repository root (`atlas.cwd`).

A fixed stand-in, not the checkout's real location: rendered output (and any
checksum a chart computes over its values) must not depend on where the
checkout lives. Paths under it resolve inside the checkout like relative ones.
"""


def inside(root: Path, base: str, relative: str, *, file: str, field: str) -> str:
    """Resolve `relative` against the repo-relative directory `base`; refuse escapes.

    Returns the repository-relative POSIX path. Symlinks are resolved first, so a
    link pointing outside the repository is refused too. An absolute path under
    `CHECKOUT_ROOT` (built from `atlas.cwd`) is taken from the repository root.
    """
    if relative == CHECKOUT_ROOT or relative.startswith(CHECKOUT_ROOT + "/"):
        base, relative = ".", relative[len(CHECKOUT_ROOT) :].lstrip("/") or "."
    # What `Path(relative).is_absolute()` answers on POSIX, without building a Path per
    # values entry of every release.
    if relative.startswith("/"):
        raise ConfigError(
            file,
            f"absolute path '{relative}' is not allowed",
            field=field,
            hint="use a path relative to the file that names it",
        )
    resolved = _resolve(str(root), base, relative)
    if resolved is None:
        raise ConfigError(
            file,
            f"path '{relative}' leaves the repository",
            field=field,
            hint="files must live inside the repository under review",
        )
    return resolved


# Fleets name the same files from thousands of releases; resolving symlinks is the costly part.
@functools.lru_cache(maxsize=65536)
def _resolve(root: str, base: str, relative: str) -> str | None:
    real_root = Path(os.path.realpath(root))
    target = Path(os.path.realpath(real_root / base / relative))
    if not target.is_relative_to(real_root):
        return None
    return target.relative_to(real_root).as_posix()
