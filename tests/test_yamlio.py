"""YAML read as Helm reads it, written in a stable order; errors name the file and line only."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewer import yamlio
from reviewer.errors import ConfigError


def test_values_mean_what_helm_makes_of_them() -> None:
    loaded = yamlio.load_mapping("a: on\nb: 010\nc: 1e3\nd: ~\ne: 'on'\n", source="v.yaml")
    assert loaded == {"a": True, "b": 8, "c": 1000, "d": None, "e": "on"}


def test_a_stream_yields_its_non_empty_mappings() -> None:
    text = "a: 1\n---\n---  # comment\nb: 2\n--- \n"
    assert yamlio.load_documents(text, source="m.yaml") == [{"a": 1}, {"b": 2}]
    assert yamlio.load_mapping("", source="empty.yaml") == {}


def test_several_documents_where_one_is_expected_is_an_error() -> None:
    with pytest.raises(ConfigError) as failure:
        yamlio.load_mapping("a: 1\n---\nb: 2\n", source="v.yaml")
    assert failure.value.file == "v.yaml"


def test_a_parse_error_names_the_line_in_the_whole_stream_but_no_content() -> None:
    text = "a: 1\n---\nb: 2\nc: [secret-value\n"
    with pytest.raises(ConfigError) as failure:
        yamlio.load_documents(text, source="s.yaml", cache=False)
    assert failure.value.line is not None and failure.value.line >= 4
    assert failure.value.file == f"s.yaml:{failure.value.line}"
    assert "secret-value" not in failure.value.render()


def test_a_list_at_the_top_is_not_a_mapping() -> None:
    with pytest.raises(ConfigError, match="mapping"):
        yamlio.load_mapping("- a\n- b\n", source="l.yaml")


def test_a_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError) as failure:
        yamlio.read_mapping(path, source="latin1.yaml")
    assert failure.value.file == "latin1.yaml"


def test_normalize_puts_kubernetes_keys_first_then_sorts() -> None:
    document = {"z": 1, "spec": {"b": 1, "a": 2}, "kind": "X", "apiVersion": "v1", "data": {}}
    normalized = yamlio.normalize(document)
    assert list(normalized) == ["apiVersion", "kind", "spec", "data", "z"]
    assert list(normalized["spec"]) == ["a", "b"]


def test_dump_keeps_order_quotes_yaml11_booleans_and_blocks_multiline_text() -> None:
    text = yamlio.dump({"b": "yes", "a": "line1\nline2\n", "emoji": "ok \U0001f680"})
    assert text == "b: 'yes'\na: |\n  line1\n  line2\nemoji: ok \U0001f680\n"
    assert yamlio.load_mapping(text, source="round-trip") == {
        "b": "yes",
        "a": "line1\nline2\n",
        "emoji": "ok \U0001f680",
    }
