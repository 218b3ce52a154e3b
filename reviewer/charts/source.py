"""What every chart source shares: `ResolvedChart`, the `ChartSource` protocol, and the
choice of a version among those a source offers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from reviewer.charts.cache import check_segment
from reviewer.charts.errors import CORRUPT_ARCHIVE, VERSION_NOT_FOUND, ChartError
from reviewer.charts.remote import Remote
from reviewer.charts.semver import select_version
from reviewer.charts.transport import display_url


@dataclass(frozen=True)
class ResolvedChart:
    """A chart ready to render: its path and, for downloads, what was resolved."""

    path: Path
    source: str  # "local", or the repository / registry it came from
    name: str = ""
    version: str = ""
    digest: str = ""  # sha256 of the archive, for downloaded charts


class ChartSource(Protocol):
    """Somewhere remote charts come from: a repository, a registry, the cache."""

    def download(self, remote: Remote, version: str | None) -> ResolvedChart:
        """The chart `remote` names at `version` (a version, a range, or None for the newest),
        as an archive in the cache; raises `ChartError`."""
        ...


def resolved(remote: Remote, version: str, path: Path) -> ResolvedChart:
    """What was resolved for `remote`: a cached archive is named by its digest."""
    return ResolvedChart(path, remote.source, remote.name, version, path.stem)


def choose_version(remote: Remote, available: list[str], version: str | None) -> str | None:
    """Helm's choice among `available` for `version`; None when nothing fits."""
    try:
        chosen = select_version(available, version)
    except ValueError:
        raise ChartError(
            remote.ref, VERSION_NOT_FOUND, "not a valid version or range", version=version
        ) from None
    if chosen is not None:
        check_segment(chosen, ref=remote.ref, what="version", reason=CORRUPT_ARCHIVE)
    return chosen


def no_version(remote: Remote, available: list[str], version: str | None) -> ChartError:
    """The error for a source that offers no version matching `version`."""
    newest = select_version(available, ">=0.0.0-0") or "none"
    return ChartError(
        remote.ref,
        VERSION_NOT_FOUND,
        f"no version of '{remote.name}' in {display_url(remote.source)} matches "
        f"(newest: {newest}, {len(available)} version(s) published)",
        version=version,
    )
