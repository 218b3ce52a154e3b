"""The on-disk chart cache, shared by both sides of a diff and across runs.

Downloads are keyed by source, name, version and sha256 digest.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path

from reviewer.charts.archive import _sha256_file
from reviewer.charts.credentials import _bare
from reviewer.charts.errors import ChartError

_SAFE_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


def default_cache_dir() -> Path:
    """`$XDG_CACHE_HOME/reviewer/charts`, else `~/.cache/reviewer/charts`."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "reviewer" / "charts"


def _check_segment(text: str, *, ref: str, what: str, reason: str) -> str:
    # Names and versions become cache paths: never let one form a path of its own.
    if not _SAFE_SEGMENT.match(text) or ".." in text:
        raise ChartError(ref, reason, f"refusing unsafe {what} {json.dumps(text)}")
    return text


class _Cache:
    """`<root>/<source>/<name>/<version>/<sha256>.tgz`, written atomically."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _dir(self, source: str, name: str, version: str | None = None) -> Path:
        slug = re.sub(r"[^A-Za-z0-9.-]+", "_", _bare(source))[:80]
        key = hashlib.sha256(source.encode()).hexdigest()[:12]
        base = self.root / f"{slug}-{key}" / name
        return base / version if version is not None else base

    def versions(self, source: str, name: str) -> list[str]:
        base = self._dir(source, name)
        if not base.is_dir():
            return []
        return sorted(p.name for p in base.iterdir() if any(p.glob("*.tgz")))

    def find(self, source: str, name: str, version: str, digest: str | None = None) -> Path | None:
        directory = self._dir(source, name, version)
        if digest:
            exact = directory / f"{digest}.tgz"
            return exact if exact.is_file() else None
        candidates = sorted(directory.glob("*.tgz"), key=lambda p: p.stat().st_mtime)
        return candidates[-1] if candidates else None

    def scratch(self) -> Path:
        (self.root / ".tmp").mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(dir=self.root / ".tmp"))

    def store(self, source: str, name: str, version: str, archive: Path) -> tuple[Path, str]:
        digest = _sha256_file(archive)
        target = self._dir(source, name, version) / f"{digest}.tgz"
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(archive, target)
        return target, digest
