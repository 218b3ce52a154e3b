"""Go templates (`*.gotmpl`) rendered by Helm's own template engine, in-process.

The text becomes the only template of a throwaway chart built in memory, so it
gets exactly Helm's function set (sprig, toYaml, required, tpl, ...) and
nothing else: helmfile's `exec`, `readFile`, `env` and friends do not exist
there, which is what keeps rendering from running commands or reading the
environment.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
import weakref
from typing import Any

import helm_python

from reviewer.errors import ConfigError
from reviewer.limits import Limits
from reviewer.sandbox import LimitExceeded, Sandbox, Task

_CHART = "gotmpl"
_TEMPLATE = "templates/source"
_INTERNAL_NAME = f"{_CHART}/{_TEMPLATE}"
_CHART_YAML = b"apiVersion: v2\nname: gotmpl\nversion: 0.0.0\n"
_UNDEFINED_FUNCTION = re.compile(r'function "([^"]+)" not defined')
_POSITION = re.compile(re.escape(_INTERNAL_NAME) + r":(\d+)(?::\d+)?")

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
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in (("Chart.yaml", _CHART_YAML), (_TEMPLATE, text.encode())):
            info = tarfile.TarInfo(f"{_CHART}/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class TemplateRenderer:
    """Renders Go template files with a given `.Values`; caches by (text, values) digest.

    Rendering runs in a sandbox child under the time and memory limits (`limits`), started
    at the first template that needs it.
    """

    def __init__(self, limits: Limits | None = None) -> None:
        self._cache: dict[str, str] = {}
        self._sandbox = Sandbox(limits or Limits())
        weakref.finalize(self, self._sandbox.close)

    def render(self, text: str, *, values: dict[str, Any], source: str) -> str:
        """Render `text` with `.Values` = `values`; errors name `source` and the line."""
        if "{{" not in text:
            return text
        key = hashlib.sha256(
            text.encode() + b"\0" + json.dumps(values, sort_keys=True, default=str).encode()
        ).hexdigest()
        cached = self._cache.get(key)
        if cached is None:
            cached = self._render(text, values=values, source=source)
            self._cache[key] = cached
        return cached

    def close(self) -> None:
        """Stop the sandbox child."""
        self._sandbox.close()

    def _render(self, text: str, *, values: dict[str, Any], source: str) -> str:
        try:
            status, result = self._sandbox.run(Task("gotmpl", (text, values)))
        except LimitExceeded as error:
            raise ConfigError(source, error.message) from None
        if status != "ok":
            raise _template_error(result, source)
        rendered: str = result
        return rendered


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
        rendered = chart.render(values=values, name="gotmpl", namespace="default")
    except helm_python.HelmError as exc:
        return "error", str(exc)
    return "ok", rendered.get(_INTERNAL_NAME, "")


def _template_error(detail: str, source: str) -> ConfigError:
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
    message = _POSITION.sub(source, detail).replace(_INTERNAL_NAME, source)
    message = " ".join(message.split())
    return ConfigError(source, f"template error: {message}", line=line)
