"""Go templates (`*.gotmpl`) rendered by Helm's own template engine, in-process.

The text becomes the only template of a throwaway chart built in memory, so it
gets exactly Helm's function set (sprig, toYaml, required, tpl, ...) and
nothing else: helmfile's `exec`, `readFile`, `env` and friends do not exist
there, which is what keeps rendering from running commands or reading the
environment.

Every template sees ATLAS's context: the values as `.Values` and also bare
(`{{ .key }}` is `{{ .Values.key }}`), plus `.Release` (the release's name,
namespace, labels and chart once known, empty strings before). `.` is a plain
map, as in helmfile: `{{ .YAML }}` is a key, alone or in a batch.
"""

from __future__ import annotations

import hashlib
import io
import json
import marshal
import re
import tarfile
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import helm_python

from reviewer import gotmpl_fields
from reviewer.errors import ConfigError
from reviewer.limits import Limits
from reviewer.sandbox import LimitExceeded, Sandbox, Task, TimeLimitExceeded

_CHART = "gotmpl"
_TEMPLATE = "templates/source"
_INTERNAL_NAME = f"{_CHART}/{_TEMPLATE}"
# Text with `define` blocks cannot sit inside `with`; it becomes a partial rendered by include.
_PARTIAL = "templates/_source.tpl"
_PARTIAL_NAME = f"{_CHART}/{_PARTIAL}"
# The text as it is, parsed but never executed beside a wrapped copy: a wrapper must not make
# text Helm refuses render (an unbalanced `{{ end }}` or `{{ else }}` would close the
# wrapper's `with` and reach past the context, in a batch into the other copies' contexts).
_RAW = "templates/_raw.tpl"
_RAW_NAME = f"{_CHART}/{_RAW}"
# `.` is the context as a plain map, as in a batch (`.Values.cN`) and in helmfile: Helm's
# `.Values` is `chartutil.Values`, whose methods (`.YAML`, `.AsMap`, `.Table`) would shadow
# keys of those names, so the answer would depend on how a render was batched and narrowing
# to the keys a template names would change it. `omit` with no keys is a shallow copy of
# the plain type; `$.Values` stays the context.
_PLAIN_CONTEXT = "omit .Values"
_INCLUDE_PARTIAL = f'{{{{ include "{_PARTIAL_NAME}" ({_PLAIN_CONTEXT}) }}}}'.encode()
_DEFINE = re.compile(r"\{\{-?\s*(define|block)\b")
# `.` becomes the context; the wrapper adds no line, so error lines stay the file's lines.
_OPEN_CONTEXT = f"{{{{ with {_PLAIN_CONTEXT} }}}}"
_CLOSE_CONTEXT = "{{ end }}"
_CHART_YAML = b"apiVersion: v2\nname: gotmpl\nversion: 0.0.0\n"
_UNDEFINED_FUNCTION = re.compile(r'function "([^"]+)" not defined')
_POSITION = re.compile(
    "(?:"
    + "|".join(map(re.escape, (_PARTIAL_NAME, _INTERNAL_NAME, _RAW_NAME)))
    + r"):(\d+)(?::\d+)?"
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
        files = [
            (_RAW, text.encode()),
            (_TEMPLATE, f"{_OPEN_CONTEXT}{text}{_CLOSE_CONTEXT}".encode()),
        ]
    return _tar(files)


def _tar(files: Sequence[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in (("Chart.yaml", _CHART_YAML), *files):
            info = tarfile.TarInfo(f"{_CHART}/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


Charts = dict[str | tuple[int, str], helm_python.Chart]
"""The sandbox child's throwaway charts: by text, and by (copies, text) for batches."""


@dataclass(frozen=True)
class TemplateRequest:
    """One render `TemplateRenderer.render` would be asked for: text, `.Values`, `.Release`."""

    text: str
    values: dict[str, Any]
    release: Mapping[str, Any] = field(default_factory=lambda: NO_RELEASE)


# Renders per round trip to the child (forecasts and renders waiting together): enough to
# amortise the trip, few enough that one slow template delays little else.
_BATCH = 64
# Template texts whose reachable keys are remembered; beyond these the memo starts again.
_MAX_TEXTS = 4096
_UNREAD: tuple[str, ...] = ("\0unread",)
"""`_fields` has no entry for the text (None is an entry: every key)."""
_LIMIT = "limit"
"""The status of a render the time limit stopped (beside Helm's "ok" and "error")."""


class TemplateRenderer:
    """Renders Go template files with a given `.Values`; caches by (text, values) digest.

    Rendering runs in a sandbox child under the time and memory limits (`limits`), started
    at the first template that needs it.
    """

    def __init__(self, limits: Limits | None = None) -> None:
        # Per (text, context) digest: Helm's answer, ("ok", output) or ("error", message), or
        # (_LIMIT, message) for a render the time limit stopped.
        self._cache: dict[str, tuple[str, str]] = {}
        # Per template text: the context keys it can reach (sorted), or None for all of them.
        self._fields: dict[str, tuple[str, ...] | None] = {}
        self._sandbox = Sandbox(limits or Limits())
        # Renders asked for by planning threads at the same time share one round trip.
        self._waiting: list[_Waiting] = []
        self._waiting_lock = threading.Lock()
        self._turn = threading.Lock()
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
        key, context, narrowed = self._request(text, values, release)
        answer = self._cache.get(key)
        if answer is None:
            answer = self._render(text, values=context, key=key)
            if answer[0] == "ok":
                self._cache[key] = answer  # (a limit is kept by `_answer_all`)
            elif narrowed and answer[0] != _LIMIT:
                # Errors are Helm's answer for the whole context, word for word.
                answer = self._render(text, values=context_of(values, release))
                if answer[0] == "ok":
                    # The whole context renders: the text reads a key the reading missed. Its
                    # answer is not the narrowed key's, and the text is not narrowed again.
                    self._fields[text] = None
        status, result = answer
        if status == _LIMIT:
            raise ConfigError(source, result)
        if status != "ok":
            raise _template_error(result, source)
        return result

    def prefetch(self, requests: Iterable[TemplateRequest]) -> None:
        """Render `requests` ahead, many per round trip to the child, for later `render` calls.

        Only answers are kept: a round trip that crosses a limit is dropped, and each of its
        templates is rendered alone when asked for, so errors name the right file.
        """
        pending: dict[str, _Waiting] = {}
        for request in requests:
            if "{{" not in request.text:
                continue
            key, context, _ = self._request(request.text, request.values, request.release)
            if key not in self._cache and key not in pending:
                pending[key] = _Waiting((request.text, context), key=key, forecast=True)
        if len(pending) < 2:
            return  # one render gains nothing from going ahead of its turn
        self._wait_for(list(pending.values()))
        for key, waiting in pending.items():
            if waiting.answer is not None and waiting.answer[0] == "ok":
                self._cache[key] = waiting.answer  # errors are raised by planning's own render

    def close(self) -> None:
        """Stop the sandbox child."""
        self._sandbox.close()

    def end(self) -> None:
        """The run is ending: the template rendering now and every later one fail at once."""
        self._sandbox.end()

    def _request(
        self, text: str, values: Mapping[str, Any], release: Mapping[str, Any]
    ) -> tuple[str, dict[str, Any], bool]:
        """The cache key, the context to render `text` with and whether it was narrowed to
        the keys `text` can reach (`gotmpl_fields`): renders reading the same keys share
        one answer."""
        # One lookup: another planning thread may clear the memo between two.
        names = self._fields.get(text, _UNREAD)
        if names is _UNREAD:
            if len(self._fields) >= _MAX_TEXTS:
                self._fields.clear()
            found = gotmpl_fields.reachable(text)
            names = self._fields[text] = None if found is None else tuple(sorted(found))
        if names is None:
            return _key(text, ("whole", values, release)), context_of(values, release), False
        context = narrowed_context(values, release, names)
        return _key(text, ("narrowed", context)), context, True

    def _render(self, text: str, *, values: dict[str, Any], key: str = "") -> tuple[str, str]:
        """Helm's answer, or (_LIMIT, message) when a limit stopped the render."""
        waiting = _Waiting((text, values), key=key)
        self._wait_for([waiting])
        if waiting.limit is not None:
            return _LIMIT, waiting.limit
        if waiting.answer is None:
            raise RuntimeError("the template sandbox failed") from waiting.failure
        return waiting.answer

    def _wait_for(self, mine: list[_Waiting]) -> None:
        """Answer `mine`, together with whatever other planning threads wait for: one
        thread at a time talks to the child and takes every render waiting then."""
        with self._waiting_lock:
            self._waiting += mine
        with self._turn:
            while not all(waiting.done for waiting in mine):
                with self._waiting_lock:
                    taken = self._waiting[:_BATCH]
                    del self._waiting[:_BATCH]
                self._answer(taken)

    def _answer(self, taken: list[_Waiting]) -> None:
        """Answer `taken`; what goes wrong on the way (not a limit: a bug, a broken pipe)
        reaches every thread that waited for them, not only this one."""
        try:
            self._answer_all(taken)
        except BaseException as error:
            for waiting in taken:
                waiting.failure = error
            raise
        finally:
            for waiting in taken:
                waiting.done = True

    def _answer_all(self, taken: list[_Waiting]) -> None:
        """One round trip for all; when it crosses a limit, each render (not forecast) alone,
        so that a limit is reported for the template that crossed it. A render the time
        limit stopped before is not run again: many deployments may read that file."""
        taken = [waiting for waiting in taken if not self._stopped_before(waiting)]
        if len(taken) > 1:
            answers = self._run_batch([waiting.payload for waiting in taken])
            if answers is not None:
                for waiting, answer in zip(taken, answers, strict=True):
                    waiting.answer = answer
                return
        for waiting in taken:
            # Again here: another render of this loop may have been stopped with its key.
            if waiting.forecast or self._stopped_before(waiting):
                continue
            try:
                waiting.answer = self._sandbox.run(Task("gotmpl", waiting.payload))
            except LimitExceeded as error:
                waiting.limit = error.message
                # A time limit only: a child that died may have been killed from outside, or
                # filled by earlier renders; a fresh one may render the next request.
                if waiting.key and isinstance(error, TimeLimitExceeded):
                    self._cache[waiting.key] = (_LIMIT, error.message)

    def _stopped_before(self, waiting: _Waiting) -> bool:
        """Whether the time limit stopped this render before (now answered with its
        message)."""
        known = self._cache.get(waiting.key) if waiting.key else None
        if known is None or known[0] != _LIMIT:
            return False
        waiting.limit = known[1]
        return True

    def _run_batch(self, payload: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, str]] | None:
        """One answer per template in one round trip; None when the batch hit a limit."""
        try:
            answers = self._sandbox.run(Task("gotmpl-batch", payload))
        except LimitExceeded:
            return None
        # Anything but one answer per template: the child gave up (out of memory).
        if isinstance(answers, list) and len(answers) == len(payload):
            return answers
        return None


@dataclass
class _Waiting:
    """A render waiting for its turn at the sandbox child, and what came back."""

    payload: tuple[str, dict[str, Any]]
    key: str = ""
    """The render's cache key, when known: renders with equal keys have one answer."""
    forecast: bool = False
    """Asked for ahead by `prefetch`: no answer is fine, planning renders it again."""
    done: bool = False
    """Taken by a round trip (answered, stopped at a limit, or a forecast given up)."""
    answer: tuple[str, str] | None = None
    limit: str | None = None
    """The limit message when the render was stopped."""
    failure: BaseException | None = None
    """What broke the round trip that took this render, if anything did."""


def _key(text: str, context: tuple[Any, ...]) -> str:
    """The cache key of a render: digest of the text and the exact context."""
    try:
        # marshal (format 2: no back-references) is several times cheaper than JSON and
        # keeps types apart; equal contexts built in another key order only miss the cache.
        # Plain dicts only: marshal refuses any other mapping.
        payload = b"m" + marshal.dumps(context, 2)
    except ValueError:  # a type marshal does not take
        payload = b"j" + json.dumps(context, sort_keys=True, default=str).encode()
    data = text.encode()
    return _sha256(len(data).to_bytes(8, "big") + data + payload)


# hashlib lets other threads run while it hashes 2 KiB or more at once: for a context of a
# few KiB that costs more than it saves, as every planning thread then queues for the GIL
# again. Fed in smaller pieces, the digest is the same and the GIL stays held.
_GIL_FREE_CHUNK = 2047


def _sha256(data: bytes) -> str:
    digest = hashlib.sha256()
    view = memoryview(data)
    for start in range(0, len(view), _GIL_FREE_CHUNK):
        digest.update(view[start : start + _GIL_FREE_CHUNK])
    return digest.hexdigest()


def render_template(charts: Charts, text: str, values: dict[str, Any]) -> tuple[str, str]:
    """("ok", output) or ("error", Helm's message): runs in the sandbox child.

    `charts` keeps one throwaway chart per distinct template text: building and loading
    the archive costs more than rendering it.
    """
    try:
        chart = _loaded(charts, text, lambda: _archive(text))
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


# Charts the child keeps loaded: beyond these it starts again empty, so that how batches
# happened to group (threads) never decides whether the child reaches its memory limit.
_MAX_CHARTS = 256


def _loaded(
    charts: Charts, key: str | tuple[int, str], archive: Callable[[], bytes]
) -> helm_python.Chart:
    chart = charts.get(key)
    if chart is None:
        if len(charts) >= _MAX_CHARTS:
            charts.clear()
        chart = charts[key] = helm_python.Chart.load_archive(archive())
    return chart


def render_batch(
    charts: Charts, items: Sequence[tuple[str, dict[str, Any]]]
) -> list[tuple[str, str]]:
    """`render_template` of every (text, context) item: runs in the sandbox child.

    Items sharing a text that can be rendered side by side (`_shares_a_chart`) are rendered
    by one call of Helm's engine, each copy of the text seeing its own context: every call
    pays for building the function map and coalescing the values, which costs more than
    rendering a small template. When that call fails, each item is rendered alone, so an
    error is Helm's answer for that template exactly.
    """
    answers: list[tuple[str, str] | None] = [None] * len(items)
    by_text: dict[str, list[int]] = {}
    for index, (text, _) in enumerate(items):
        by_text.setdefault(text, []).append(index)
    for text, indexes in by_text.items():
        if len(indexes) > 1 and _shares_a_chart(text):
            together = _render_copies(charts, text, [items[index][1] for index in indexes])
            if together is not None:
                for index, answer in zip(indexes, together, strict=True):
                    answers[index] = ("ok", answer)
                continue
        for index in indexes:
            answers[index] = render_template(charts, text, items[index][1])
    return [answer for answer in answers if answer is not None]


# Copies of one text can share a chart only when nothing in it sees past its own context:
# `$` is the chart's top level (every copy's contexts), and `define`d names would collide.
_ROOT = re.compile(r"\$(?![\w])")


def _shares_a_chart(text: str) -> bool:
    return not _DEFINE.search(text) and not _ROOT.search(text)


def _render_copies(
    charts: Charts, text: str, contexts: Sequence[dict[str, Any]]
) -> list[str] | None:
    """Each context's render of `text` from one engine call; None when Helm fails."""
    size = 1 << (len(contexts) - 1).bit_length()  # few distinct charts per text
    key = (size, text)
    try:
        chart = _loaded(charts, key, lambda: _copies_archive(text, size))
        values = {f"c{index}": context for index, context in enumerate(contexts)}
        rendered = chart.render(values=values, name=_CHART, namespace="default")
    except helm_python.HelmError:
        return None
    return [rendered.get(f"{_CHART}/{_copy_name(index)}", "") for index in range(len(contexts))]


def _copy_name(index: int) -> str:
    return f"templates/copy-{index:04d}"


def _copies_archive(text: str, size: int) -> bytes:
    files = [
        (_copy_name(index), f"{{{{ with .Values.c{index} }}}}{text}{_CLOSE_CONTEXT}".encode())
        for index in range(size)
    ]
    return _tar([(_RAW, text.encode()), *files])


def context_of(values: Mapping[str, Any], release: Mapping[str, Any]) -> dict[str, Any]:
    """ATLAS's template context: values bare, again under `Values`, and `Release`.

    `Values` is a copy, not a self-reference, so the context stays serialisable.
    """
    return {**values, "Values": dict(values), "Release": dict(release)}


def narrowed_context(
    values: Mapping[str, Any], release: Mapping[str, Any], names: Iterable[str]
) -> dict[str, Any]:
    """`context_of` with only the keys in `names`: what a template that can reach no other
    key renders the same with. `Release` always stays, so the context is never empty
    (the wrapper's `with` would skip the whole template)."""
    seen = {name: values[name] for name in names if name in values}
    context = dict(seen)
    if "Values" in names:
        context["Values"] = seen
    context["Release"] = dict(release)
    return context


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
    message = message.replace(_INTERNAL_NAME, source).replace(_RAW_NAME, source)
    message = " ".join(message.split())
    return ConfigError(source, f"template error: {message}", line=line)
