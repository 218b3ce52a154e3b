"""The kustomize lock-down's tree check, run before kustomize ever starts.

The kustomization tree is walked and refused if any entry could reach outside
the repository: remote resources or bases, paths (symlinks included) leaving the
root, Helm inflation, and any plugin that is not a built-in one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from reviewer import paths, yamlio
from reviewer.errors import ConfigError

KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
REMOTE = re.compile(r"^[a-z][a-z0-9+.-]*://|^git@|^github\.com/|^gitlab\.com/|\?ref=|//", re.I)

_TREE_FIELDS = ("resources", "bases", "components")
_FILE_LIST_FIELDS = ("crds", "configurations")
_PLUGIN_FIELDS = ("generators", "transformers", "validators")
_HELM_FIELDS = ("helmCharts", "helmChartInflationGenerator", "helmGlobals")
_FUNCTION_ANNOTATIONS = ("config.kubernetes.io/function", "config.k8s.io/function")
_REFUSED_BUILTINS = ("HelmChartInflationGenerator",)


def find_kustomization(directory: Path) -> Path | None:
    """The kustomization file of `directory`, by kustomize's recognised names."""
    found = [directory / name for name in KUSTOMIZATION_NAMES if (directory / name).is_file()]
    return found[0] if found else None


# --- the tree walk -------------------------------------------------------------------


def check_tree(root: Path, directory: Path) -> None:
    """Refuse a kustomization tree that could load anything remote, outside `root` or a plugin."""
    Walker(Path(os.path.realpath(root))).kustomization(directory, plugins=False)


class Walker:
    """Checks kustomizations and records every file kustomize may load."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.seen: set[tuple[Path, bool]] = set()
        # Every file kustomize may load, for a private copy of the tree (kustomize_flux).
        self.loaded: set[Path] = set()

    def kustomization(self, directory: Path, *, plugins: bool) -> None:
        directory = Path(os.path.realpath(directory))
        if (directory, plugins) in self.seen:
            return
        self.seen.add((directory, plugins))
        file = find_kustomization(directory)
        where = display(self.root, file or directory)
        if file is None:
            raise ConfigError(where, "directory has no kustomization file")
        self.loaded.add(file)
        document = yamlio.read_mapping(file, source=where)
        for name in _HELM_FIELDS:
            if name in document:
                raise ConfigError(
                    where, "Helm chart inflation is not allowed", field=name, hint=_HELM_HINT
                )
        for field, entry in _entries(document, _TREE_FIELDS):
            self.tree_entry(directory, entry, file=where, field=field, plugins=plugins)
        for field, entry in _entries(document, _PLUGIN_FIELDS):
            self.plugin_entry(directory, entry, file=where, field=field)
        self.file_fields(directory, document, file=where)

    def tree_entry(self, base: Path, entry: Any, *, file: str, field: str, plugins: bool) -> None:
        target = self.local(base, entry, file=file, field=field)
        if target.is_dir():
            self.kustomization(target, plugins=plugins)
        elif plugins:
            _check_plugin_configs(target, file=display(self.root, target))

    def plugin_entry(self, base: Path, entry: Any, *, file: str, field: str) -> None:
        if isinstance(entry, str) and "\n" in entry:
            _check_plugin_text(entry, file=file, field=field)
            return
        self.tree_entry(base, entry, file=file, field=field, plugins=True)

    def file_fields(self, base: Path, document: Mapping[str, Any], *, file: str) -> None:
        for field, entry in _entries(document, _FILE_LIST_FIELDS):
            self.local(base, entry, file=file, field=field)
        for field, entry in _entries(document, ("patchesStrategicMerge",)):
            # An entry is a file path or an inline patch.
            if isinstance(entry, str) and "\n" not in entry and ":" not in entry:
                self.local(base, entry, file=file, field=field)
        for name in ("patches", "patchesJson6902", "replacements"):
            for field, entry in _entries(document, (name,)):
                if isinstance(entry, Mapping) and "path" in entry:
                    self.local(base, entry["path"], file=file, field=f"{field}.path")
        if isinstance(document.get("openapi"), Mapping) and "path" in document["openapi"]:
            self.local(base, document["openapi"]["path"], file=file, field="openapi.path")
        for name in ("configMapGenerator", "secretGenerator"):
            for field, generator in _entries(document, (name,)):
                self.generator_files(base, generator, file=file, field=field)

    def generator_files(self, base: Path, generator: Any, *, file: str, field: str) -> None:
        if not isinstance(generator, Mapping):
            return
        for key in ("files", "envs"):
            for index, entry in enumerate(as_list(generator.get(key))):
                # `files` entries may be `key=path`.
                name = entry.split("=", 1)[-1] if isinstance(entry, str) else entry
                self.local(base, name, file=file, field=f"{field}.{key}[{index}]")
        if generator.get("env") is not None:
            self.local(base, generator["env"], file=file, field=f"{field}.env")

    def local(self, base: Path, entry: Any, *, file: str, field: str) -> Path:
        if not isinstance(entry, str) or not entry.strip():
            raise ConfigError(file, "must be a non-empty path", field=field)
        # The entry itself is not shown: a remote URL may carry credentials.
        if REMOTE.search(entry):
            raise ConfigError(
                file, "remote resources are not allowed", field=field, hint=_REMOTE_HINT
            )
        relative_base = base.relative_to(self.root).as_posix() if base != self.root else "."
        resolved = paths.inside(self.root, relative_base, entry, file=file, field=field)
        target = self.root / resolved
        if not target.exists():
            raise ConfigError(
                file, "names no file or directory in the repository", field=field, hint=_REMOTE_HINT
            )
        if target.is_file():
            self.loaded.add(target)
            # Also under the name the kustomization uses, which may be a symlink.
            named = Path(os.path.normpath(base / entry))
            if named.is_relative_to(self.root):
                self.loaded.add(named)
        return target


_HELM_HINT = "render the chart as a release instead; kustomize runs without --enable-helm"
_REMOTE_HINT = "kustomize builds are offline: vendor the base into the repository"


def _entries(document: Mapping[str, Any], names: Sequence[str]) -> Iterator[tuple[str, Any]]:
    for name in names:
        for index, entry in enumerate(as_list(document.get(name))):
            yield f"{name}[{index}]", entry


def as_list(value: Any) -> list[Any]:
    """A kustomization field as a list (absent is empty, a scalar is one entry)."""
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _check_plugin_configs(path: Path, *, file: str) -> None:
    _check_plugin_text(yamlio.read_text(path, source=file), file=file, field=None)


def _check_plugin_text(text: str, *, file: str, field: str | None) -> None:
    for index, config in enumerate(yamlio.load_documents(text, source=file)):
        where = f"{field}[{index}]" if field else f"document {index + 1}"
        check_plugin_config(config, file=file, field=where)


def check_plugin_config(config: Mapping[str, Any], *, file: str, field: str) -> None:
    """Refuse a generator/transformer/validator config that is not a built-in plugin."""
    annotations = (config.get("metadata") or {}).get("annotations") or {}
    if any(key in annotations for key in _FUNCTION_ANNOTATIONS):
        raise ConfigError(
            file, "exec and container plugins are not allowed", field=field, hint=_PLUGIN_HINT
        )
    if config.get("apiVersion") != "builtin":
        raise ConfigError(
            file,
            "only built-in plugins (apiVersion: builtin) are allowed",
            field=field,
            hint=_PLUGIN_HINT,
        )
    if config.get("kind") in _REFUSED_BUILTINS:
        raise ConfigError(file, "Helm chart inflation is not allowed", field=field, hint=_HELM_HINT)


_PLUGIN_HINT = "kustomize runs without --enable-alpha-plugins; use built-in transformers"


def inside_root(root: Path, path: Path, *, file: str, field: str) -> Path:
    """The real path of `path`, refused when it leaves `root`."""
    real = Path(os.path.realpath(path))
    if not real.is_relative_to(root):
        raise ConfigError(
            file,
            "path leaves the repository",
            field=field,
            hint="files must live inside the repository under review",
        )
    return real


def display(root: Path, path: Path) -> str:
    """`path` relative to `root` for messages, or only its name when outside."""
    absolute = Path(os.path.abspath(path))
    return absolute.relative_to(root).as_posix() if absolute.is_relative_to(root) else path.name
