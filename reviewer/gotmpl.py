"""Go templates (`*.gotmpl`) rendered by Helm's own template engine, in-process.

The text becomes the only template of a throwaway chart built in memory, so it
gets exactly Helm's function set (sprig, toYaml, required, tpl, ...) and
nothing else: helmfile's `exec`, `readFile`, `env` and friends do not exist
there, which is what keeps rendering from running commands or reading the
environment.

Every template sees ATLAS's context: the values as `.Values` and also bare
(`{{ .key }}` is `{{ .Values.key }}`), plus `.Release` (the release's name,
namespace, labels and chart once known, empty strings before).
"""

from __future__ import annotations

import hashlib
import io
import json
import marshal
import re
import tarfile
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import helm_python

from reviewer.errors import ConfigError
from reviewer.limits import Limits
from reviewer.sandbox import LimitExceeded, Sandbox, Task

_CHART = "gotmpl"
_TEMPLATE = "templates/source"
_INTERNAL_NAME = f"{_CHART}/{_TEMPLATE}"
# Text with `define` blocks cannot sit inside `with`; it becomes a partial rendered by include.
_PARTIAL = "templates/_source.tpl"
_PARTIAL_NAME = f"{_CHART}/{_PARTIAL}"
_INCLUDE_PARTIAL = f'{{{{ include "{_PARTIAL_NAME}" .Values }}}}'.encode()
_DEFINE = re.compile(r"\{\{-?\s*(define|block)\b")
# `.` becomes the context; the wrapper adds no line, so error lines stay the file's lines.
_OPEN_CONTEXT = "{{ with .Values }}"
_CLOSE_CONTEXT = "{{ end }}"
_CHART_YAML = b"apiVersion: v2\nname: gotmpl\nversion: 0.0.0\n"
_UNDEFINED_FUNCTION = re.compile(r'function "([^"]+)" not defined')
_POSITION = re.compile(
    "(?:" + re.escape(_PARTIAL_NAME) + "|" + re.escape(_INTERNAL_NAME) + r"):(\d+)(?::\d+)?"
)
# The wrapper that includes a partial; what matters is the partial's own error.
_INCLUDE_WRAPPER = re.compile(r"^.*error calling include:\s*", re.DOTALL)
NO_RELEASE: dict[str, Any] = {"Name": "", "Namespace": ""}
"""`.Release` before the release exists (ATLAS's placeholder while building state)."""

# Functions helmfile adds on top of Helm's; named in errors so users know why.
HELMFILE_ONLY_FUNCTIONS = frozenset(
    {
        "exec",
        "envExec",
        "readFile",
        "readDir",
        "readDirEntries",
        "env",
        "requiredEnv",
        "expandenv",
        "fetchSecretValue",
        "expandSecretRefs",
        "isFile",
        "isDir",
        "getOrNil",
        "setValueAtPath",
        "harvest",
    }
)


def _archive(text: str) -> bytes:
    if _DEFINE.search(text):
        files = [(_PARTIAL, text.encode()), (_TEMPLATE, _INCLUDE_PARTIAL)]
    else:
        files = [(_TEMPLATE, f"{_OPEN_CONTEXT}{text}{_CLOSE_CONTEXT}".encode())]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in (("Chart.yaml", _CHART_YAML), *files):
            info = tarfile.TarInfo(f"{_CHART}/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@dataclass(frozen=True)
class TemplateRequest:
    """One render `TemplateRenderer.render` would be asked for: text, `.Values`, `.Release`."""

    text: str
    values: dict[str, Any]
    release: Mapping[str, Any] = field(default_factory=lambda: NO_RELEASE)


# Renders per round trip to the child when prefetching: enough to amortise the trip,
# few enough that one slow template delays little else.
_BATCH = 64


class TemplateRenderer:
    """Renders Go template files with a given `.Values`; caches by (text, values) digest.

    Rendering runs in a sandbox child under the time and memory limits (`limits`), started
    at the first template that needs it.
    """

    def __init__(self, limits: Limits | None = None) -> None:
        # Helm's answer per (text, context) digest: ("ok", output) or ("error", message).
        self._cache: dict[str, tuple[str, str]] = {}
        self._sandbox = Sandbox(limits or Limits())
        weakref.finalize(self, self._sandbox.close)

    def render(
        self,
        text: str,
        *,
        values: dict[str, Any],
        source: str,
        release: Mapping[str, Any] = NO_RELEASE,
    ) -> str:
        """Render `text` in ATLAS's context; errors name `source` and the line.

        `.Values` and the bare top level are `values`; `.Release` is `release`.
        """
        if "{{" not in text:
            return text
        key = _key(text, values, release)
        answer = self._cache.get(key)
        if answer is None:
            answer = self._render(text, values=context_of(values, release), source=source)
            if answer[0] == "ok":
                self._cache[key] = answer
        status, result = answer
        if status != "ok":
            raise _template_error(result, source)
        return result

    def prefetch(self, requests: Iterable[TemplateRequest]) -> None:
        """Render `requests` ahead, many per round trip to the child, for later `render` calls.

        Only answers are kept: a batch that crosses a limit is dropped, and each of its
        templates is rendered alone when asked for, so errors name the right file.
        """
        pending: dict[str, TemplateRequest] = {}
        for request in requests:
            if "{{" not in request.text:
                continue
            key = _key(request.text, request.values, request.release)
            if key not in self._cache:
                pending[key] = request
        keys = list(pending)
        for start in range(0, len(keys), _BATCH):
            self._render_batch({key: pending[key] for key in keys[start : start + _BATCH]})

    def close(self) -> None:
        """Stop the sandbox child."""
        self._sandbox.close()

    def _render(self, text: str, *, values: dict[str, Any], source: str) -> tuple[str, str]:
        try:
            answer: tuple[str, str] = self._sandbox.run(Task("gotmpl", (text, values)))
        except LimitExceeded as error:
            raise ConfigError(source, error.message) from None
        return answer

    def _render_batch(self, batch: dict[str, TemplateRequest]) -> None:
        if len(batch) < 2:
            return  # one render gains nothing from going ahead of its turn
        payload = [(r.text, context_of(r.values, r.release)) for r in batch.values()]
        try:
            answers = self._sandbox.run(Task("gotmpl-batch", payload))
        except LimitExceeded:
            return
        # Anything but one answer per template: the child gave up (out of memory).
        if isinstance(answers, list) and len(answers) == len(batch):
            self._cache.update(zip(batch, answers, strict=True))


def _key(text: str, values: Mapping[str, Any], release: Mapping[str, Any]) -> str:
    """The cache key of a render: digest of the text and the exact context."""
    try:
        # marshal (format 2: no back-references) is several times cheaper than JSON and
        # keeps types apart; equal contexts built in another key order only miss the cache.
        pair: Any = (values, release)  # plain dicts; marshal refuses any other mapping
        payload = b"m" + marshal.dumps(pair, 2)
    except ValueError:  # a type marshal does not take
        payload = b"j" + json.dumps([values, release], sort_keys=True, default=str).encode()
    data = text.encode()
    return hashlib.sha256(len(data).to_bytes(8, "big") + data + payload).hexdigest()


def render_template(
    charts: dict[str, helm_python.Chart], text: str, values: dict[str, Any]
) -> tuple[str, str]:
    """("ok", output) or ("error", Helm's message): runs in the sandbox child.

    `charts` keeps one throwaway chart per distinct template text: building and loading
    the archive costs more than rendering it.
    """
    try:
        chart = charts.get(text)
        if chart is None:
            chart = helm_python.Chart.load_archive(_archive(text))
            charts[text] = chart
        # `$` is Helm's own top level: its `.Release` should name the same release.
        release = values.get("Release") or {}
        rendered = chart.render(
            values=values,
            name=str(release.get("Name") or _CHART),
            namespace=str(release.get("Namespace") or "default"),
        )
    except helm_python.HelmError as exc:
        return "error", str(exc)
    return "ok", rendered.get(_INTERNAL_NAME, "")


def context_of(values: Mapping[str, Any], release: Mapping[str, Any]) -> dict[str, Any]:
    """ATLAS's template context: values bare, again under `Values`, and `Release`.

    `Values` is a copy, not a self-reference, so the context stays serialisable.
    """
    return {**values, "Values": dict(values), "Release": dict(release)}


def _template_error(detail: str, source: str) -> ConfigError:
    detail = _INCLUDE_WRAPPER.sub("", detail)
    found = _POSITION.search(detail)
    line = int(found.group(1)) if found else None
    missing = _UNDEFINED_FUNCTION.search(detail)
    if missing:
        function = missing.group(1)
        if function in HELMFILE_ONLY_FUNCTIONS:
            return ConfigError(
                source,
                f"template function '{function}' is helmfile-only and not available",
                line=line,
                hint="reviewer renders with Helm's function set and never runs commands, "
                "reads files or the environment; pass the value through values files instead",
            )
        return ConfigError(source, f"template function '{function}' is not defined", line=line)
    message = _POSITION.sub(source, detail).replace(_PARTIAL_NAME, source)
    message = message.replace(_INTERNAL_NAME, source)
    message = " ".join(message.split())
    return ConfigError(source, f"template error: {message}", line=line)
