"""The persistent render cache: rendered releases on disk, by input digest (docs/cache.md).

Only releases no secret reaches are stored: their values hold no SOPS leaf (no secret
layer, the real plan equals its redacted twin, and no known secret is spelled in them),
so neither an entry nor its name carries anything derived from a secret. Entries are
written atomically (temporary file, then rename) and checked when read: an entry of
another format, of another key, or whose content does not match its digest is ignored
and rendered again.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reviewer.engine import ChartInfo
from reviewer.model import ReleaseId, Resource, ResourceKey
from reviewer.plan import Plan, ReleasePlan
from reviewer.redact import is_distinctive, leaf_texts
from reviewer.workers import Outcome

FORMAT = "reviewer-render-cache/1"
"""Written in every entry's first line; part of every key."""

DEFAULT_MAX_MIB = 512
_SUFFIX = ".entry"
_TEMP_PREFIX = ".tmp-"
_STALE_TEMP_SECONDS = 3600.0


def default_render_cache_dir(environ: Mapping[str, str]) -> Path:
    """`$XDG_CACHE_HOME/reviewer/render`, else `~/.cache/reviewer/render` (beside the charts)."""
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "reviewer" / "render"


def plans_dir(render_cache: Path) -> Path:
    """Where the plan cache (reviewer/plan_cache.py) keeps its entries: inside the render
    cache's directory, so that clearing one clears both, but counted and bounded apart."""
    return render_cache / "plans"


@functools.cache
def code_digest() -> str:
    """sha256 of reviewer's own source: a new reviewer never reads an older one's entries."""
    package = Path(__file__).parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def secret_free(real: Plan, twin: Plan, secrets: Iterable[str] = ()) -> frozenset[ReleaseId]:
    """Releases no SOPS value reaches: no secret layer, a twin plan equal to the real one,
    and no known secret (a distinctive one of `secrets`) spelled in their values or labels."""
    twins = {release.id: release for release in twin.releases}
    spelled = spelling(real.releases, secrets)
    return frozenset(
        release.id
        for release in real.releases
        if not any(layer.secret for layer in release.layers)
        and twins.get(release.id) == release
        and release.id not in spelled
    )


def spelling(releases: Iterable[ReleasePlan], secrets: Iterable[str]) -> frozenset[ReleaseId]:
    """Releases whose values or labels spell a known secret (a distinctive one of `secrets`)."""
    spelled = _spelling(secrets)
    if spelled is None:
        return frozenset()
    return frozenset(release.id for release in releases if spelled.search(_texts(release)))


def _spelling(secrets: Iterable[str]) -> re.Pattern[str] | None:
    # The second line of defence, like the leak guard: a secret that reached a release
    # some other way than the twins can see. Common words would match everywhere.
    guarded = sorted({text for text in secrets if is_distinctive(text)}, key=len, reverse=True)
    return re.compile("|".join(map(re.escape, guarded))) if guarded else None


def _texts(release: ReleasePlan) -> str:
    texts = [release.id.release, release.namespace, *leaf_texts(release.labels)]
    return "\0".join([*texts, *leaf_texts(release.values)])


@dataclass(frozen=True)
class Usage:
    """What the cache holds."""

    entries: int
    size: int
    """Bytes of every entry."""


class RenderStore:
    """`<root>/<2 hex>/<key>.entry`: one successful render outcome per input digest."""

    def __init__(self, root: Path, *, max_bytes: int, context: str = "") -> None:
        self.root = root
        self.max_bytes = max_bytes
        self.written = 0  # entries written: a run that wrote none leaves the size as it was
        self._made: set[Path] = set()  # entry directories known to exist
        self._temporaries = itertools.count()
        # What else decides an outcome without being part of the input digest (render limits).
        self._salt = f"{FORMAT}\0{code_digest()}\0{context}\0"

    def __getstate__(self) -> dict[str, Any]:
        # Another process (a planning share, reviewer/plan_parts.py) counts its own writes
        # and names its own temporaries.
        return {**self.__dict__, "written": 0, "_made": set(), "_temporaries": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._temporaries = itertools.count()

    def key(self, digest: str) -> str:
        """The entry's name for a release's input digest."""
        return hashlib.sha256((self._salt + digest).encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}{_SUFFIX}"

    def load(self, digest: str) -> Outcome | None:
        """The stored outcome for `digest`; None when absent, corrupt or foreign."""
        payload = self.load_data(digest)
        return None if payload is None else _outcome(payload)

    def save(self, digest: str, outcome: Outcome) -> bool:
        """Store a successful outcome (atomically); False when it is not stored."""
        if outcome.error is not None or outcome.chart is None:
            return False  # failures may come from limits or load; render them again
        return self.save_data(digest, _outcome_data(outcome))

    def load_data(self, digest: str) -> Any:
        """The JSON data stored for `digest`; None when absent, corrupt or foreign."""
        key = self.key(digest)
        path = self._path(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        payload = _decode(data, key)
        if payload is not None:
            with contextlib.suppress(OSError):
                os.utime(path)  # recently used: evicted last
        return payload

    def holds(self, digest: str) -> bool:
        """Whether an entry is stored for `digest` (not read, nor checked)."""
        return self._path(self.key(digest)).is_file()

    def save_data(self, digest: str, payload: object) -> bool:
        """Store JSON data for `digest` (atomically); False when it is not stored."""
        key = self.key(digest)
        path = self._path(key)
        try:
            data = _encode(payload, key)
            handle, temporary = self._temporary(path.parent)
        except (OSError, TypeError, ValueError):
            return False  # not JSON data, or no room: the next run renders it again
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(data)
            os.replace(temporary, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            return False
        self.written += 1
        return True

    def forget(self, digest: str) -> None:
        """Remove the entry stored for `digest`, if any; when it cannot be removed, the
        whole cache goes (an entry is forgotten because it must not be kept)."""
        path = self._path(self.key(digest))
        try:
            path.unlink()
        except FileNotFoundError:
            return
        except OSError:
            self.clear()
            if path.exists():
                raise

    def _temporary(self, directory: Path) -> tuple[int, str]:
        """A new private file in `directory`: named by this process and a counter (no
        random names to draw), or by `mkstemp` should that name be taken."""
        if directory not in self._made:
            directory.mkdir(parents=True, exist_ok=True)
            self._made.add(directory)
        name = str(directory / f"{_TEMP_PREFIX}{os.getpid()}-{next(self._temporaries)}")
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), name
        except FileExistsError:
            return tempfile.mkstemp(dir=directory, prefix=_TEMP_PREFIX)
        except FileNotFoundError:  # removed meanwhile (the cache was cleared)
            directory.mkdir(parents=True, exist_ok=True)
            return tempfile.mkstemp(dir=directory, prefix=_TEMP_PREFIX)

    def usage(self) -> Usage:
        """How many entries the cache holds and their total size."""
        sizes = [size for _, size, _ in self._entries()]
        return Usage(len(sizes), sum(sizes))

    def trim(self) -> int:
        """Evict the least recently used entries until the total fits; the number evicted."""
        entries = sorted(self._entries(), key=lambda entry: entry[2])
        total = sum(size for _, size, _ in entries)
        evicted = 0
        for path, size, _ in entries:
            if total <= self.max_bytes:
                break
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            total -= size
            evicted += 1
        self._remove_stale_temporaries()
        return evicted

    def clear(self) -> None:
        """Remove every entry (and the directory)."""
        shutil.rmtree(self.root, ignore_errors=True)

    def _entries(self) -> Iterator[tuple[Path, int, float]]:
        """(path, size, last use) of every entry."""
        if not self.root.is_dir():
            return
        for path in self.root.glob(f"??/*{_SUFFIX}"):
            with contextlib.suppress(FileNotFoundError):
                status = path.stat()
                yield path, status.st_size, status.st_mtime

    def _remove_stale_temporaries(self) -> None:
        """Temporary files a killed writer left behind (a live writer's are recent)."""
        cutoff = time.time() - _STALE_TEMP_SECONDS
        for path in self.root.glob(f"??/{_TEMP_PREFIX}*"):
            with contextlib.suppress(FileNotFoundError):
                if path.stat().st_mtime < cutoff:
                    path.unlink()


# --- the entry format: one header line, then the data as JSON --------------------------------
#
# `<FORMAT> <key> <sha256 of the JSON>\n<JSON>`. The key binds the entry to its name (a
# file copied under another name is foreign); the digest catches truncation and bit rot.


def _encode(payload: object, key: str) -> bytes:
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    encoded = body.encode()
    header = f"{FORMAT} {key} {hashlib.sha256(encoded).hexdigest()}\n"
    return header.encode() + encoded


def _decode(data: bytes, key: str) -> Any:
    header, newline, encoded = data.partition(b"\n")
    if not newline or header.decode("ascii", "replace").split(" ") != [
        FORMAT,
        key,
        hashlib.sha256(encoded).hexdigest(),
    ]:
        return None
    try:
        return json.loads(encoded)
    except ValueError:
        return None


def _outcome_data(outcome: Outcome) -> dict[str, Any]:
    assert outcome.chart is not None
    return {
        "chart": {"name": outcome.chart.name, "version": outcome.chart.version},
        "resources": [_resource_data(resource) for resource in outcome.resources],
    }


def _resource_data(resource: Resource) -> dict[str, Any]:
    key = resource.key
    return {
        "group": key.group,
        "kind": key.kind,
        "namespace": key.namespace,
        "name": key.name,
        "apiVersion": resource.api_version,
        "source": resource.source,
        "body": resource.body,
    }


def _outcome(payload: Any) -> Outcome | None:
    try:
        chart = payload["chart"]
        info = ChartInfo(_text(chart["name"]), _text(chart["version"]))
        resources = tuple(_resource(item) for item in payload["resources"])
    except (ValueError, KeyError, TypeError):
        return None
    return Outcome(info, resources)


def _resource(item: dict[str, Any]) -> Resource:
    body = item["body"]
    if not isinstance(body, dict):
        raise TypeError("an object's body must be a mapping")
    key = ResourceKey(
        group=_text(item["group"]),
        kind=_text(item["kind"]),
        namespace=_text(item["namespace"]),
        name=_text(item["name"]),
    )
    return Resource(
        key=key, api_version=_text(item["apiVersion"]), body=body, source=_text(item["source"])
    )


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return value
