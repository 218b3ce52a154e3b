"""Rendered output is split and parsed as Helm does (releaseutil.SplitManifests)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from chartrepo import write_chart
from hypothesis import given, settings
from hypothesis import strategies as st

from reviewer import yamlio
from reviewer.engine import EmbeddedEngine, RenderRequest
from reviewer.errors import ConfigError
from reviewer.workers import manifests

CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"

# Each template is one case Helm's splitter handles; the chart is also rendered by
# both engines in test_engines.py, which must agree on it.
SEPARATOR_CHART = {
    "Chart.yaml": "apiVersion: v2\nname: separators\nversion: 0.1.0\n",
    # cert-manager: `{{- if -}}` trims the newline, leaving a comment glued to `---`.
    "templates/glued-comment.yaml": (
        "{{- if true -}}\n---# a comment right after the separator\n"
        + CONFIG_MAP.format(name="glued-comment")
        + "{{- end }}\n"
    ),
    "templates/glued-document.yaml": "---" + CONFIG_MAP.format(name="glued-document"),
    "templates/empty-documents.yaml": (
        "\n  \n---\n---   \n\n---\n" + CONFIG_MAP.format(name="after-empty") + "---\n\n"
    ),
    "templates/comment-only.yaml": "# nothing here\n---\n# nor here\n",
    "templates/blank.yaml": "{{- if false }}\nnever: rendered\n{{- end }}\n",
    "templates/trailing-spaces.yaml": (
        CONFIG_MAP.format(name="first") + "--- \t\n" + CONFIG_MAP.format(name="second")
    ),
    "templates/list.yaml": (
        "apiVersion: v1\nkind: List\nitems:\n"
        "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: listed}\n"
        "- apiVersion: v1\n  kind: Secret\n  metadata: {name: listed}\n"
        "---\napiVersion: v1\nkind: ConfigMapList\nitems:\n"
        "- metadata: {name: typed-list-item}\n  data: {a: '1'}\n"
    ),
}


def render(tmp_path: Path, files: dict[str, str]) -> list[str]:
    chart = write_chart(tmp_path, "separators", "0.1.0", files)
    engine = EmbeddedEngine()
    try:
        rendered = engine.render(RenderRequest(chart, {}, "rel", "ns"))
    finally:
        engine.close()
    return [f"{r.source.rpartition('/')[2]}: {r.key}" for r in manifests(rendered)]


def test_every_separator_case_helm_accepts_renders(tmp_path: Path) -> None:
    assert render(tmp_path, SEPARATOR_CHART) == [
        "empty-documents.yaml: ConfigMap after-empty",
        "trailing-spaces.yaml: ConfigMap first",
        "glued-comment.yaml: ConfigMap glued-comment",
        "glued-document.yaml: ConfigMap glued-document",
        "list.yaml: ConfigMap listed",
        "cm.yaml: ConfigMap rel-separators",
        "trailing-spaces.yaml: ConfigMap second",
        "list.yaml: ConfigMap typed-list-item",
        "list.yaml: Secret listed",
    ]


@pytest.mark.parametrize(
    ("text", "documents"),
    [
        ("---# comment\na: 1\n", ["# comment\na: 1"]),
        ("---a: 1\n", ["a: 1"]),
        ("a: 1\n---\nb: 2\n", ["a: 1", "b: 2"]),
        ("a: 1\n---   \t\nb: 2", ["a: 1", "b: 2"]),
        ("\n\n---\n  \n", []),
        # The first separator takes the blank lines after it; the second is left as a
        # document of its own, which YAML reads as empty.
        ("---\n\n---\n", ["---"]),
        ("# only a comment\n", ["# only a comment"]),
        # An indented `---` separates nothing: it belongs to the document.
        ("a: 1\n  ---\n", ["a: 1\n  ---"]),
        # Helm's splitter takes the first of two separators; YAML reads the second.
        ("a: 1\n---\n---\nb: 2\n", ["a: 1", "---\nb: 2"]),
    ],
)
def test_split_follows_helms_separator_rules(text: str, documents: list[str]) -> None:
    assert [chunk for _, chunk in yamlio.split_manifests(text)] == documents


def test_documents_that_hold_only_comments_are_dropped() -> None:
    assert yamlio.load_manifests("# a\n---\n# b\n---\na: 1\n", source="t.yaml") == [{"a": 1}]


def test_parse_errors_name_the_template_and_the_line_of_the_stream() -> None:
    with pytest.raises(ConfigError) as caught:
        yamlio.load_manifests("a: 1\n---\nb: [\n", source="templates/x.yaml")
    message = caught.value.render()
    assert "templates/x.yaml" in message and ":3" in message and "malformed YAML" in message


def test_a_document_that_is_not_a_mapping_fails_as_in_helm() -> None:
    with pytest.raises(ConfigError, match="expected a mapping"):
        yamlio.load_manifests("---\njust text\n", source="templates/x.yaml")


# Helm's expression itself, for comparison: Python's backtracking takes quadratic time
# on long whitespace runs, which is why the splitter does not use it.
_HELM_SEPARATOR = re.compile(r"(?:\A|[\t\n\f\r ]*\n)---[\t\n\f\r ]*")


def _split_with_the_expression(text: str) -> list[str]:
    body = text.lstrip()
    chunks, start = [], 0
    for separator in [*_HELM_SEPARATOR.finditer(body), None]:
        chunk = body[start : len(body) if separator is None else separator.start()]
        if chunk.strip():
            chunks.append(chunk.strip())
        if separator is not None:
            start = separator.end()
    return chunks


@given(st.text(alphabet=["-", "\n", " ", "\t", "\r", "a", ":", "#"], max_size=60))
@settings(max_examples=400, deadline=None)
def test_split_finds_exactly_what_helms_expression_finds(text: str) -> None:
    assert [chunk for _, chunk in yamlio.split_manifests(text)] == _split_with_the_expression(text)
