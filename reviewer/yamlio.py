"""YAML reading (with Helm's own parser) and normalized writing (ruamel.yaml).

Reading goes through Helm's parser so that values mean exactly what Helm makes
of them (YAML 1.1 booleans such as `on`, octal `010`, float64 numbers). Parse
errors name the file and the line but never quote the document: a values file
may hold secrets.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import helm_python
from ruamel.yaml import YAML
from ruamel.yaml.representer import SafeRepresenter

from reviewer.errors import ConfigError

# Keys listed here come first in a normalized Kubernetes object, in this order;
# everything else follows alphabetically, so key order never causes a diff.
_LEADING_KEYS = ("apiVersion", "kind", "metadata", "spec", "data", "stringData")

_DOCUMENT_SEPARATOR = re.compile(r"^---(?:[ \t].*)?$", re.MULTILINE)
_LINE = re.compile(r"line (\d+): (.*)")
# Strings a YAML 1.1 reader (kubectl, Helm) would take for booleans: quote them.
_YAML11_BOOL = re.compile(r"^(?:y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF)$")


def _parse_error(source: str, detail: str, first_line: int) -> ConfigError:
    found = _LINE.search(detail)
    if found is None:
        return ConfigError(source, "malformed YAML")
    line = int(found.group(1)) + first_line - 1
    return ConfigError(source, f"malformed YAML: {found.group(2).strip()}", line=line)


def _parse_document(text: str, *, source: str, first_line: int = 1) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        parsed: dict[str, Any] = helm_python.values_from_yaml(text)
    except helm_python.HelmError as exc:
        if "cannot unmarshal" in str(exc):
            raise ConfigError(
                source, "expected a mapping at the top level", line=first_line
            ) from None
        raise _parse_error(source, str(exc), first_line) from None
    return parsed


def load_mapping(text: str, *, source: str) -> dict[str, Any]:
    """Parse a single-document YAML mapping; an empty document is an empty mapping."""
    documents = load_documents(text, source=source)
    if len(documents) > 1:
        raise ConfigError(source, "expected one YAML document, found several")
    return documents[0] if documents else {}


def load_documents(text: str, *, source: str) -> list[dict[str, Any]]:
    """Parse every mapping document of a YAML stream; empty documents are dropped."""
    documents: list[dict[str, Any]] = []
    start = 0
    line = 1
    for separator in _DOCUMENT_SEPARATOR.finditer(text):
        chunk = text[start : separator.start()]
        documents.append(_parse_document(chunk, source=source, first_line=line))
        line += chunk.count("\n")
        start = separator.end()
    documents.append(_parse_document(text[start:], source=source, first_line=line))
    return [doc for doc in documents if doc]


def read_text(path: Path, *, source: str) -> str:
    """Read a UTF-8 text file; `source` is the name shown in errors."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(source, "not UTF-8 text") from None


def read_mapping(path: Path, *, source: str) -> dict[str, Any]:
    """Read and parse a YAML mapping file."""
    return load_mapping(read_text(path, source=source), source=source)


def normalize(value: Any, *, top: bool = True) -> Any:
    """Return a copy with a stable key order (Kubernetes leading keys first, then sorted)."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (_rank(k) if top else 0, str(k)))
        return {key: normalize(value[key], top=False) for key in keys}
    if isinstance(value, list):
        return [normalize(item, top=False) for item in value]
    return value


def _rank(key: Any) -> int:
    return _LEADING_KEYS.index(key) if key in _LEADING_KEYS else len(_LEADING_KEYS)


def _represent_str(representer: SafeRepresenter, data: str) -> Any:
    if "\n" in data:
        return representer.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    if _YAML11_BOOL.match(data):
        return representer.represent_scalar("tag:yaml.org,2002:str", data, style="'")
    return representer.represent_str(data)


def _dumper() -> YAML:
    yaml = YAML(typ="safe", pure=False)
    yaml.default_flow_style = False
    yaml.allow_unicode = True
    yaml.width = 4096
    # Keep the order normalize() chose instead of ruamel's alphabetical default.
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]
    yaml.representer.add_representer(str, _represent_str)
    return yaml


_DUMPER = _dumper()


def dump(value: Any) -> str:
    """Serialize one document as block-style YAML, keeping the given key order."""
    stream = io.StringIO()
    _DUMPER.dump(value, stream)
    return stream.getvalue()
