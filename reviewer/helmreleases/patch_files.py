"""Files kustomization files use as patches: partial objects, never objects of their own.

An overlay's `patches: [{path: podinfo-values.yaml}]` names a file that looks like a
HelmRelease (or a Flux Kustomization) but holds only the fields it changes; kustomize
merges it into the object it targets and never emits it. Readers of a `flux` source's
files skip these files.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from reviewer import jail, yamlio
from reviewer.errors import ReviewerError
from reviewer.kustomize_check import KUSTOMIZATION_NAMES


def patch_files(root: Path, files: Iterable[str]) -> set[str]:
    """The repository files that a kustomization file in a directory of `files` names as a
    patch (`patches[].path`, `patchesStrategicMerge`, `patchesJson6902[].path`)."""
    directories = {posixpath.dirname(file) for file in files}
    found: set[str] = set()
    for directory in sorted(directories):
        for name in KUSTOMIZATION_NAMES:
            source = posixpath.join(directory, name) if directory else name
            if (root / source).is_file():
                found |= set(_patches_of(root, source, directory))
                break
    return found


def _patches_of(root: Path, source: str, directory: str) -> Iterator[str]:
    try:
        document = yamlio.load_mapping(jail.read_text(root, source), source=source)
    except ReviewerError:
        return  # kustomize reports a kustomization file it cannot read
    for path in _named_paths(document):
        joined = posixpath.normpath(posixpath.join(directory, path))
        if not joined.startswith("../"):
            yield joined


def _named_paths(document: Mapping[str, Any]) -> Iterator[str]:
    for key in ("patches", "patchesJson6902"):
        entries = document.get(key)
        for entry in entries if isinstance(entries, list) else ():
            if isinstance(entry, Mapping) and isinstance(entry.get("path"), str):
                yield entry["path"]
    merges = document.get("patchesStrategicMerge")
    for entry in merges if isinstance(merges, list) else ():
        # An entry is a file name or an inline patch; only a one-line one can be a file.
        if isinstance(entry, str) and "\n" not in entry:
            yield entry
