"""Replacing a chart's default values, as Flux's source-controller does for `valuesFiles`.

The chart's `values.yaml` is replaced by the merge of the listed files (in order,
maps merged, anything else replaced); the chart's own `values.yaml` counts only
when it is listed. The result is a new chart archive in a scratch directory: the
original chart (cached archive or repository directory) is never changed.
"""

from __future__ import annotations

import io
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reviewer import values as values_mod
from reviewer import yamlio
from reviewer.charts.errors import CORRUPT_ARCHIVE, ChartError
from reviewer.errors import ReviewerError

VALUES_FILE = "values.yaml"


@dataclass(frozen=True)
class ChartDefaults:
    """What replaces a chart's `values.yaml`: files inside the chart, or the text itself."""

    files: tuple[str, ...] = ()
    ignore_missing: bool = False
    text: str | None = None
    """The new `values.yaml` (already merged, e.g. from files of the repository)."""


# Maps merge recursively; anything else from `higher` replaces: the hierarchy's merge.
merge_maps = values_mod.merge


def replace_defaults(chart: Path, defaults: ChartDefaults, work: Path, *, ref: str) -> Path:
    """A copy of `chart` (directory or archive) as an archive in `work`, its `values.yaml`
    replaced; raises `ChartError` when a listed file is missing (unless ignored)."""
    members = _members(chart, ref=ref)
    top = next(iter(members)).split("/", 1)[0] if members else "chart"
    text = defaults.text
    if text is None:
        text = _merged(members, top, defaults, ref=ref)
    members[f"{top}/{VALUES_FILE}"] = text.encode("utf-8")
    work.mkdir(parents=True, exist_ok=True)
    target = work / f"{top}.tgz"
    with tarfile.open(target, "w:gz") as archive:
        for name in sorted(members):
            info = tarfile.TarInfo(name)
            info.size = len(members[name])
            archive.addfile(info, io.BytesIO(members[name]))
    return target


def _merged(members: dict[str, bytes], top: str, defaults: ChartDefaults, *, ref: str) -> str:
    merged: dict[str, Any] = {}
    for name in defaults.files:
        data = members.get(f"{top}/{name.removeprefix('./')}")
        if data is None:
            if defaults.ignore_missing:
                continue
            raise ChartError(ref, CORRUPT_ARCHIVE, f"the chart has no values file '{name}'")
        try:
            values = yamlio.load_mapping(data.decode("utf-8"), source=name)
        except (UnicodeDecodeError, ReviewerError):
            raise ChartError(ref, CORRUPT_ARCHIVE, f"values file '{name}' is not YAML") from None
        merged = merge_maps(merged, values)
    return yamlio.dump(merged) if merged else ""


def _members(chart: Path, *, ref: str) -> dict[str, bytes]:
    """Every regular file of the chart by archive path (`<chart>/<file>`)."""
    if chart.is_dir():
        return {
            f"{chart.name}/{path.relative_to(chart).as_posix()}": path.read_bytes()
            for path in sorted(chart.rglob("*"))
            if path.is_file() and not path.is_symlink()
        }
    try:
        with tarfile.open(chart, "r:gz") as archive:
            found: dict[str, bytes] = {}
            for member in archive:
                stream = archive.extractfile(member) if member.isfile() else None
                if stream is not None:
                    found[member.name] = stream.read()
            return found
    except (OSError, tarfile.TarError, EOFError):
        raise ChartError(ref, CORRUPT_ARCHIVE, "cannot read the chart archive") from None
