"""The on-disk chart cache, shared by both sides of a diff and across runs.

Downloads are keyed by source, name, version and sha256 digest.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path

from reviewer.charts.archive import check_archive, sha256_file
from reviewer.charts.credentials import bare_url
from reviewer.charts.errors import CORRUPT_ARCHIVE, ChartError
from reviewer.charts.remote import Remote

_SAFE_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


def default_cache_dir(environ: Mapping[str, str]) -> Path:
    """`$XDG_CACHE_HOME/reviewer/charts`, else `~/.cache/reviewer/charts`."""
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "reviewer" / "charts"


def check_segment(text: str, *, ref: str, what: str, reason: str) -> str:
    """`text` itself when it is safe as one path segment; `ChartError` with `reason` if not."""
    # Names and versions become cache paths: never let one form a path of its own.
    if not _SAFE_SEGMENT.match(text) or ".." in text:
        raise ChartError(ref, reason, f"refusing unsafe {what} {json.dumps(text)}")
    return text


class ChartCache:
    """`<root>/<source>/<name>/<version>/<sha256>.tgz`, written atomically."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _dir(self, source: str, name: str, version: str | None = None) -> Path:
        slug = re.sub(r"[^A-Za-z0-9.-]+", "_", bare_url(source))[:80]
        key = hashlib.sha256(source.encode()).hexdigest()[:12]
        base = self.root / f"{slug}-{key}" / name
        return base / version if version is not None else base

    def versions(self, source: str, name: str) -> list[str]:
        """The versions of a chart held in the cache, sorted as text."""
        base = self._dir(source, name)
        if not base.is_dir():
            return []
        return sorted(p.name for p in base.iterdir() if any(p.glob("*.tgz")))

    def find(self, source: str, name: str, version: str, digest: str | None = None) -> Path | None:
        """The cached archive with that digest, or without one the newest stored; None if absent."""
        directory = self._dir(source, name, version)
        if digest:
            exact = directory / f"{digest}.tgz"
            return exact if exact.is_file() else None
        candidates = sorted(directory.glob("*.tgz"), key=lambda p: p.stat().st_mtime)
        return candidates[-1] if candidates else None

    def scratch(self) -> Path:
        """A new empty directory on the cache's file system, for downloads to land in."""
        (self.root / ".tmp").mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(dir=self.root / ".tmp"))

    def store(self, source: str, name: str, version: str, archive: Path) -> tuple[Path, str]:
        """Move `archive` into the cache; its new path and its digest."""
        digest = sha256_file(archive)
        target = self._dir(source, name, version) / f"{digest}.tgz"
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(archive, target)
        return target, digest

    def store_checked(
        self, remote: Remote, version: str, archive: Path, digest: str | None
    ) -> Path:
        """Store a downloaded archive once it matches `digest` and holds the expected chart."""
        if digest and sha256_file(archive) != digest:
            raise ChartError(
                remote.ref,
                CORRUPT_ARCHIVE,
                "the downloaded archive does not match the digest in the repository index",
                version=version,
            )
        check_archive(archive, name=remote.name, ref=remote.ref, version=version)
        path, _ = self.store(remote.source, remote.name, version, archive)
        return path
