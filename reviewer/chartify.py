"""Throwaway Helm charts from directories that are not charts (helmfile's chartify).

A directory of plain manifests, or one with a kustomization (built first by the
locked-down kustomize), becomes a chart whose templates only include the
manifests verbatim: each manifest is stored under `files/` and its template is
`{{ .Files.Get "files/templates/<name>" }}`, so Go template text inside a
manifest (alerting rules, dashboards) reaches the output unrendered, as helmfile does.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from reviewer import kustomize, kustomize_check, yamlio
from reviewer.errors import ConfigError
from reviewer.proc import Programs

DEFAULT_CHART_VERSION = "1.0.0"
KUSTOMIZED_MANIFEST = "kustomized.yaml"


def is_chart(directory: Path) -> bool:
    """Whether `directory` is already a Helm chart (it has a Chart.yaml)."""
    return (directory / "Chart.yaml").is_file()


def chartify(
    directory: Path,
    *,
    root: Path,
    work_dir: Path,
    release_name: str,
    namespace: str | None = None,
    chart_version: str = DEFAULT_CHART_VERSION,
    timeout: float = kustomize.DEFAULT_TIMEOUT,
    programs: Programs | None = None,
) -> Path:
    """Write a chart for `directory` (inside `root`) under `work_dir`; return its path.

    With a kustomization the build output is the chart's one manifest; otherwise
    every `.yaml`/`.yml` file below `directory` is one, and `namespace` (if given)
    is set on objects that have none, as helmfile does for plain manifests. `programs`
    says where kubectl is found (default: the pinned one).
    """
    real_root = Path(os.path.realpath(root))
    where = _display(real_root, directory)
    if is_chart(directory):
        raise ConfigError(where, "is already a Helm chart; render it as one")
    chart = work_dir / release_name
    if chart.exists():
        shutil.rmtree(chart)
    files = chart / "files" / "templates"
    files.mkdir(parents=True)
    if kustomize_check.find_kustomization(directory) is not None:
        kubectl = kustomize.find_kubectl((programs or Programs()).lookup())
        built = kustomize.build(real_root, directory, timeout=timeout, kubectl=kubectl)
        (files / KUSTOMIZED_MANIFEST).write_text(built, encoding="utf-8")
    else:
        _copy_manifests(real_root, directory, files, namespace=namespace)
    _write_includes(chart)
    chart_yaml = {"apiVersion": "v2", "name": directory.resolve().name, "version": chart_version}
    (chart / "Chart.yaml").write_text(yamlio.dump(chart_yaml), encoding="utf-8")
    return chart


def _copy_manifests(root: Path, directory: Path, files: Path, *, namespace: str | None) -> None:
    for relative in _manifests(root, directory):
        source = relative.as_posix()
        text = yamlio.read_text(directory / relative, source=source)
        if namespace:
            text = _with_namespace(text, namespace, source=source)
        target = files / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def _manifests(root: Path, directory: Path, relative: Path = Path()) -> Iterator[Path]:
    for child in sorted((directory / relative).iterdir(), key=lambda path: path.name):
        if not Path(os.path.realpath(child)).is_relative_to(root):
            raise ConfigError(
                _display(root, child),
                "path leaves the repository",
                hint="files must live inside the repository under review",
            )
        if child.is_dir():
            yield from _manifests(root, directory, relative / child.name)
        elif child.suffix in (".yaml", ".yml"):
            yield relative / child.name


def _with_namespace(text: str, namespace: str, *, source: str) -> str:
    documents = yamlio.load_documents(text, source=source, cache=False)
    for document in documents:
        metadata = document.setdefault("metadata", {})
        if isinstance(metadata, dict) and not metadata.get("namespace"):
            metadata["namespace"] = namespace
    return "---\n".join(yamlio.dump(document) for document in documents)


def _write_includes(chart: Path) -> None:
    stored = chart / "files"
    for path in sorted(stored.rglob("*")):
        if not path.is_file():
            continue
        relative = path.relative_to(stored).as_posix()
        template = chart / relative
        template.parent.mkdir(parents=True, exist_ok=True)
        template.write_text(f'{{{{ .Files.Get "files/{relative}" }}}}', encoding="utf-8")


def _display(root: Path, path: Path) -> str:
    absolute = Path(os.path.abspath(path))
    return absolute.relative_to(root).as_posix() if absolute.is_relative_to(root) else path.name
