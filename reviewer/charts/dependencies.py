"""Dependencies: charts whose `Chart.yaml` declares dependencies missing from `charts/`
get them like `helm dependency build`."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import helm_python

from reviewer import jail, yamlio
from reviewer.charts.archive import chart_yaml
from reviewer.charts.errors import CORRUPT_ARCHIVE, DEPENDENCY_MISSING, ChartError
from reviewer.charts.once import Once
from reviewer.charts.remote import dependency_remote
from reviewer.charts.source import ChartSource
from reviewer.charts.workdir import WorkDir
from reviewer.errors import ReviewerError


class DependencyBuilder:
    """Fills in missing dependencies from `charts` (remote) or the checkout (`file://`),
    in working copies under `workdir`; each chart at most once."""

    def __init__(self, charts: ChartSource, workdir: WorkDir) -> None:
        self._charts = charts
        self._workdir = workdir
        self._built: Once[Path] = Once()

    def build(self, chart: Path, *, ref: str, root: Path | None) -> Path:
        """`chart` itself, or a working copy whose `charts/` holds the missing dependencies.

        `root` is the checkout a local chart comes from (None for downloads): `file://`
        dependencies must stay inside it."""
        return self._built.get(chart, lambda: self._with_dependencies(chart, ref=ref, root=root))

    def _with_dependencies(self, chart: Path, *, ref: str, root: Path | None) -> Path:
        try:
            declared = chart_yaml(chart, ref=ref).get("dependencies") or []
        except ChartError:
            return chart  # the engine reports why the chart does not load
        if not isinstance(declared, list) or not declared:
            return chart
        present = _loaded_subcharts(chart)
        if present is None:
            return chart  # the engine reports why the chart does not load
        missing = [d for d in declared if isinstance(d, dict) and d.get("name") not in present]
        if not missing:
            return chart
        work = self._working_copy(chart, ref=ref)
        locked = _locked(work, ref=ref)
        for dependency in missing:
            self._add_dependency(work, dependency, locked, ref=ref, origin=chart, root=root)
        return work

    def _working_copy(self, chart: Path, *, ref: str) -> Path:
        target = Path(tempfile.mkdtemp(dir=self._workdir.path()))
        try:
            if chart.is_dir():
                shutil.copytree(chart, target / chart.name)
            else:
                helm_python.expand(target, chart)
            return next(p for p in target.iterdir() if p.is_dir())
        except (OSError, helm_python.HelmError, StopIteration):
            raise ChartError(ref, CORRUPT_ARCHIVE, "cannot unpack the chart") from None

    def _add_dependency(
        self,
        work: Path,
        dependency: dict[str, Any],
        locked: dict[str, dict[str, Any]] | None,
        *,
        ref: str,
        origin: Path,
        root: Path | None,
    ) -> None:
        name = str(dependency.get("name"))
        entry = dependency if locked is None else locked.get(name)
        if entry is None:
            raise ChartError(
                ref,
                DEPENDENCY_MISSING,
                f"'{name}' is declared in Chart.yaml but not in Chart.lock",
                hint="run `helm dependency update` and commit Chart.lock",
            )
        repository = str(entry.get("repository") or "")
        wanted = str(entry.get("version") or "") or None
        target = work / "charts"
        target.mkdir(exist_ok=True)
        if repository.startswith("file://"):
            self._copy_local_dependency(target, name, repository, ref=ref, origin=origin, root=root)
            return
        if not repository.startswith(("http://", "https://", "oci://")):
            detail = (
                f"'{name}' is not in charts/ and has no repository URL"
                if not repository
                else f"'{name}' names repository '{repository}'; only http(s)://, oci:// "
                "and file:// repositories can be fetched"
            )
            raise ChartError(ref, DEPENDENCY_MISSING, detail)
        remote = dependency_remote(f"{repository.rstrip('/')}/{name}", repository, name)
        try:
            fetched = self._charts.download(remote, wanted)
        except ChartError as error:
            raise ChartError(
                ref, DEPENDENCY_MISSING, f"'{name}' ({wanted or 'any version'}): {error.message}"
            ) from None
        shutil.copyfile(fetched.path, target / f"{name}-{fetched.version}.tgz")

    def _copy_local_dependency(
        self, target: Path, name: str, repository: str, *, ref: str, origin: Path, root: Path | None
    ) -> None:
        relative = repository[len("file://") :]
        source = (origin / relative).resolve() if origin.is_dir() else None
        if source is None or root is None or not source.is_relative_to(root.resolve()):
            raise ChartError(
                ref,
                DEPENDENCY_MISSING,
                f"'{name}' from {repository}: file:// dependencies must stay inside the "
                "repository under review",
            )
        if not (source / "Chart.yaml").is_file():
            raise ChartError(ref, DEPENDENCY_MISSING, f"'{name}': no chart at {repository}")
        jail.check_tree(root, source, archives=True)
        shutil.copytree(source, target / name)


def _loaded_subcharts(chart: Path) -> set[str] | None:
    """Names of the subcharts Helm finds in `charts/`; None when the chart does not load."""
    try:
        with helm_python.Chart.load(chart) as loaded:
            return {str(dep.get("name")) for dep in loaded.dependencies}
    except helm_python.HelmError:
        return None


def _locked(chart: Path, *, ref: str) -> dict[str, dict[str, Any]] | None:
    """Chart.lock's dependencies by name; None when the chart has no lock (resolve ranges)."""
    lock = chart / "Chart.lock"
    if not lock.is_file():
        return None
    try:
        document = yamlio.read_mapping(lock, source="Chart.lock")
    except ReviewerError:
        raise ChartError(ref, DEPENDENCY_MISSING, "Chart.lock is not valid YAML") from None
    entries = document.get("dependencies") or []
    if not isinstance(entries, list):
        raise ChartError(ref, DEPENDENCY_MISSING, "Chart.lock: 'dependencies' must be a list")
    return {str(e.get("name")): e for e in entries if isinstance(e, dict)}
