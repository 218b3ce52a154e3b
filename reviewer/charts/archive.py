"""Chart archives: their sha256 digest, their `Chart.yaml`, and checking they hold the chart."""

from __future__ import annotations

import hashlib
import tarfile
from pathlib import Path
from typing import Any

from reviewer import jail, yamlio
from reviewer.charts.errors import CORRUPT_ARCHIVE, ChartError
from reviewer.errors import ReviewerError


def sha256_file(path: Path) -> str:
    """The sha256 hex digest of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def archive_chart_yaml(path: Path) -> str:
    """The text of `<dir>/Chart.yaml` inside a chart archive ("" when absent)."""
    with tarfile.open(path, "r:gz") as archive:
        for member in archive:
            if (
                member.isfile()
                and member.name.count("/") == 1
                and member.name.endswith("/Chart.yaml")
            ):
                stream = archive.extractfile(member)
                return stream.read().decode("utf-8") if stream else ""
    return ""


def chart_yaml(chart: Path, *, ref: str) -> dict[str, Any]:
    """The `Chart.yaml` of a chart directory or archive; `ChartError` when unreadable."""
    try:
        text = (
            (chart / "Chart.yaml").read_text(encoding="utf-8")
            if chart.is_dir()
            else archive_chart_yaml(chart)
        )
        return yamlio.load_mapping(text, source="Chart.yaml")
    except (OSError, tarfile.TarError, EOFError, UnicodeDecodeError, ReviewerError):
        raise ChartError(ref, CORRUPT_ARCHIVE, "cannot read its Chart.yaml") from None


def check_archive(path: Path, *, name: str, ref: str, version: str) -> None:
    """A readable gzip tar holding `<dir>/Chart.yaml` of the expected chart, and only
    files and directories (see `jail.archive_problem`): nothing else enters the cache."""
    problem = jail.archive_problem(path)
    if problem is not None:
        raise ChartError(ref, CORRUPT_ARCHIVE, problem, version=version)
    try:
        text = archive_chart_yaml(path)
    except (OSError, tarfile.TarError, EOFError, UnicodeDecodeError) as exc:
        detail = f"not a gzip-compressed chart archive ({exc.__class__.__name__})"
        raise ChartError(ref, CORRUPT_ARCHIVE, detail, version=version) from None
    if not text:
        raise ChartError(ref, CORRUPT_ARCHIVE, "the archive holds no Chart.yaml", version=version)
    found = chart_yaml(path, ref=ref).get("name")
    if found != name:
        detail = f"the archive holds chart '{found}', not '{name}'"
        raise ChartError(ref, CORRUPT_ARCHIVE, detail, version=version)
