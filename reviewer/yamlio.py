"""YAML reading (with Helm's own parser) and normalized writing (ruamel.yaml).

Reading goes through Helm's parser so that values mean exactly what Helm makes
of them (YAML 1.1 booleans such as `on`, octal `010`, float64 numbers). Parse
errors name the file and the line but never quote the document: a values file
may hold secrets.
"""

from __future__ import annotations

import functools
import io
import re
from pathlib import Path
from typing import Any

import helm_python
from ruamel.yaml import YAML
from ruamel.yaml.representer import SafeRepresenter

from reviewer import jail, yamlemit
from reviewer.errors import ConfigError
from reviewer.limits import MAX_DEPTH, too_deep
from reviewer.visible import visible

# Keys listed here come first in a normalized Kubernetes object, in this order;
# everything else follows alphabetically, so key order never causes a diff.
_LEADING_KEYS = ("apiVersion", "kind", "metadata", "spec", "data", "stringData")

_DOCUMENT_SEPARATOR = re.compile(r"^---(?:[ \t].*)?$", re.MULTILINE)
_TOO_DEEP = f"nested deeper than the depth limit of {MAX_DEPTH} levels"
# Helm's manifest splitter (releaseutil.SplitManifests) is the Go expression
# `(?:^|\s*\n)---\s*`: `---` at the start of the text or of a line ends a document,
# whatever follows it on that line, and the whitespace around it (newlines included)
# goes. Go's `\s` is ASCII whitespace. A backtracking regex takes quadratic time in
# long runs of indentation (JSON dashboards), so `_manifest_separators` finds the same
# spans by searching for `\n---` and widening over the whitespace around it.
_GO_SPACE = frozenset("\t\n\f\r ")
_LINE = re.compile(r"line (\d+): (.*)")
# Characters YAML does not allow in a stream. Helm's reader stops at a NUL without a word
# (the rest of the file would be dropped) and refuses the others without saying where.
_NOT_YAML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x80-\x84\x86-\x9f\ufffe\uffff]")
_CONFLICT = re.compile(r"^<<<<<<< ", re.MULTILINE)
# Why Helm's reader refused a document, in its fixed words (its other messages may quote
# the document, which may hold a secret rendered into it): what we say instead.
_REASONS = (
    ("unsupported value: NaN", "NaN is not allowed (values are JSON, which has no NaN)"),
    ("unsupported value: +Inf", "an infinity is not allowed (values are JSON, which has none)"),
    ("unsupported value: -Inf", "an infinity is not allowed (values are JSON, which has none)"),
    ("value contains itself", "an alias refers to the anchor it is in"),
    ("map merge requires", "a merge key (<<) takes a map or a list of maps"),
    ("!!binary value contains invalid base64", "a !!binary value is not base64"),
    ("excessive aliasing", "too many aliases (each expands the document again)"),
)
# Strings a YAML 1.1 reader (kubectl, Helm) would take for booleans: quote them.
_YAML11_BOOL = re.compile(r"^(?:y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF)$")


class _ParseFailure(Exception):
    """A parse failure without a file name (added by the caller)."""

    def __init__(self, problem: str, line: int | None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line


def _failure(detail: str, first_line: int) -> _ParseFailure:
    if "cannot unmarshal" in detail:
        return _ParseFailure("expected a mapping at the top level", first_line)
    found = _LINE.search(detail)
    if found is None:
        reason = next((said for words, said in _REASONS if words in detail), None)
        return _ParseFailure(f"malformed YAML: {reason}" if reason else "malformed YAML", None)
    line = int(found.group(1)) + first_line - 1
    return _ParseFailure(f"malformed YAML: {found.group(2).strip()}", line)


def _parse_document(text: str, first_line: int) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        parsed: dict[str, Any] = helm_python.values_from_yaml(text)
    except helm_python.HelmError as exc:
        raise _failure(str(exc), first_line) from None
    except RecursionError:
        # Converting the parsed document to Python recurses once per level.
        raise _ParseFailure(_TOO_DEEP, first_line) from None
    if too_deep(parsed):
        raise _ParseFailure(_TOO_DEEP, first_line)
    return parsed


# Fleets read the same files (global values, templates) once per deployment and
# per side; parsing each distinct text once is most of the planning time saved.
# Callers treat the returned documents as read-only.
def _check_characters(text: str) -> None:
    stray = _NOT_YAML.search(text)
    if stray is not None:
        line = text.count("\n", 0, stray.start()) + 1
        problem = f"holds the control character {visible(stray.group())}, which YAML does not allow"
        raise _ParseFailure(problem, line)


def _check_conflict(text: str) -> None:
    """A file left with git's conflict markers that YAML refused: said as such."""
    marker = _CONFLICT.search(text)
    if marker is not None:
        line = text.count("\n", 0, marker.start()) + 1
        raise _ParseFailure("holds an unresolved merge conflict (<<<<<<< ... >>>>>>>)", line)


def _parse_stream(text: str) -> tuple[dict[str, Any], ...]:
    _check_characters(text)
    try:
        return _parse_documents(text)
    except _ParseFailure:
        _check_conflict(text)  # the likelier reason, when there are markers
        raise


def _parse_documents(text: str) -> tuple[dict[str, Any], ...]:
    documents: list[dict[str, Any]] = []
    start = 0
    line = 1
    for separator in _DOCUMENT_SEPARATOR.finditer(text):
        chunk = text[start : separator.start()]
        documents.append(_parse_document(chunk, line))
        line += chunk.count("\n")
        start = separator.end()
    documents.append(_parse_document(text[start:], line))
    return tuple(doc for doc in documents if doc)


_parse_cached = functools.lru_cache(maxsize=16384)(_parse_stream)


def load_documents(text: str, *, source: str, cache: bool = True) -> list[dict[str, Any]]:
    """Parse every mapping document of a YAML stream; empty documents are dropped.

    `cache=False` for texts seen once (rendered manifests), so they do not fill the cache.
    """
    try:
        return list(_parse_cached(text) if cache else _parse_stream(text))
    except _ParseFailure as failure:
        raise ConfigError(source, failure.problem, line=failure.line) from None


def split_manifests(text: str) -> list[tuple[int, str]]:
    """Split rendered template output into documents exactly as Helm does.

    Returns (first line, document) pairs; blank documents are left out, like Helm's.
    """
    body = text.lstrip()
    lines_before = text.count("\n", 0, len(text) - len(body))
    documents: list[tuple[int, str]] = []
    start = 0
    # Lines are counted from where the last count stopped: counting from the start of
    # the text for every document is quadratic in a template that renders many objects.
    counted, lines = 0, lines_before
    for separator in [*_manifest_separators(body), None]:
        end = len(body) if separator is None else separator[0]
        chunk = body[start:end]
        if chunk.strip():
            offset = start + len(chunk) - len(chunk.lstrip())
            lines += body.count("\n", counted, offset)
            counted = offset
            documents.append((lines + 1, chunk.strip()))
        if separator is not None:
            start = separator[1]
    return documents


def _manifest_separators(text: str) -> list[tuple[int, int]]:
    """(start, end) of every match of Helm's separator expression, leftmost first."""
    found: list[tuple[int, int]] = []
    position = 0
    if text.startswith("---"):
        position = _skip_space(text, 3)
        found.append((0, position))
    while (newline := text.find("\n---", position)) >= 0:
        start = newline
        while start > position and text[start - 1] in _GO_SPACE:
            start -= 1
        position = _skip_space(text, newline + 4)
        found.append((start, position))
    return found


def _skip_space(text: str, index: int) -> int:
    while index < len(text) and text[index] in _GO_SPACE:
        index += 1
    return index


def load_manifests(text: str, *, source: str) -> list[dict[str, Any]]:
    """Parse rendered template output as Helm does; documents holding only comments go."""
    try:
        _check_characters(text)
        parsed = (_parse_document(chunk, line) for line, chunk in split_manifests(text))
        return [document for document in parsed if document]
    except _ParseFailure as failure:
        raise ConfigError(source, failure.problem, line=failure.line) from None


def load_mapping(text: str, *, source: str) -> dict[str, Any]:
    """Parse a single-document YAML mapping; an empty document is an empty mapping."""
    documents = load_documents(text, source=source)
    if len(documents) > 1:
        raise ConfigError(source, "expected one YAML document, found several")
    return documents[0] if documents else {}


def read_text(path: Path, *, source: str) -> str:
    """Read a UTF-8 text file; `source` is the name shown in errors."""
    return jail.read_file_text(path, source)


def read_mapping(path: Path, *, source: str) -> dict[str, Any]:
    """Read and parse a YAML mapping file."""
    return load_mapping(read_text(path, source=source), source=source)


def normalize(value: Any, *, top: bool = True) -> Any:
    """Return a copy with a stable key order (Kubernetes leading keys first, then sorted)."""
    if isinstance(value, dict):
        keys = sorted(value, key=_leading_first) if top else sorted(value, key=str)
        return {key: normalize(value[key], top=False) for key in keys}
    if isinstance(value, list):
        return [normalize(item, top=False) for item in value]
    return value


def _leading_first(key: Any) -> tuple[int, str]:
    return _rank(key), str(key)


def _rank(key: Any) -> int:
    return _LEADING_KEYS.index(key) if key in _LEADING_KEYS else len(_LEADING_KEYS)


def _represent_str(representer: SafeRepresenter, data: str) -> Any:
    if "\n" in data:
        return representer.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    if _YAML11_BOOL.match(data):
        return representer.represent_scalar("tag:yaml.org,2002:str", data, style="'")
    return representer.represent_str(data)


def _dumper(*, pure: bool) -> YAML:
    yaml = YAML(typ="safe", pure=pure)
    yaml.default_flow_style = False
    yaml.allow_unicode = True
    yaml.width = 4096
    # Keep the order normalize() chose instead of ruamel's alphabetical default.
    yaml.representer.sort_base_mapping_type_on_output = False
    yaml.representer.add_representer(str, _represent_str)
    return yaml


# libyaml's emitter (ruamel.yaml.clib) is about ten times faster, but escapes
# characters beyond the Basic Multilingual Plane (emoji) and then quotes the
# whole scalar; such documents are written again by the pure-Python emitter.
_FAST = _dumper(pure=False)
_EXACT = _dumper(pure=True)
_ASCII = _dumper(pure=True)
_ASCII.allow_unicode = False
# A literal block would keep its characters raw: such text is double-quoted, with escapes.
_ASCII.representer.add_representer(
    str,
    lambda representer, data: (
        _represent_str(representer, data)
        if visible(data, keep_newlines=True) == data
        else representer.represent_scalar("tag:yaml.org,2002:str", data, style='"')
    ),
)


def dump(value: Any) -> str:
    """Serialize one document as block-style YAML, keeping the given key order."""
    text = yamlemit.block_yaml(value, _spell)
    if text is None:
        text = _dump(_FAST, value)
    return _dump(_EXACT, value) if "\\U" in text else text


def dump_printable(value: Any) -> str:
    """`dump`, but characters a terminal would obey or hide (escape sequences, U+202E) are
    spelled with YAML's own escapes (`"\\e"`, `"\\u202E"`), which load back as they were."""
    text = dump(value)
    return text if visible(text, keep_newlines=True) == text else _dump(_ASCII, value)


def dump_with_ruamel(value: Any) -> str:
    """`dump` without the direct writer: what it must match byte for byte."""
    text = _dump(_FAST, value)
    return _dump(_EXACT, value) if "\\U" in text else text


def _spell(scalar: Any) -> str:
    """A scalar as ruamel.yaml writes it as a block mapping value (one line only)."""
    # Strings only are cached: equal numbers may be spelled differently (0.0 and -0.0).
    return _spell_string(scalar) if isinstance(scalar, str) else _spell_once(scalar)


@functools.lru_cache(maxsize=65536)
def _spell_string(scalar: str) -> str:
    return _spell_once(scalar)


def _spell_once(scalar: Any) -> str:
    text = _dump(_FAST, {"k": scalar})
    if not text.startswith("k: ") or text.count("\n") != 1 or not text.endswith("\n"):
        raise yamlemit.Unsupported("scalar written on several lines")
    return text[3:-1]


def _dump(yaml: YAML, value: Any) -> str:
    stream = io.StringIO()
    yaml.dump(value, stream)
    return stream.getvalue()
