"""YAML read as Helm reads it, written in a stable order; errors name the file and line only."""

from __future__ import annotations

from collections.abc import Callable
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


@pytest.mark.parametrize("load", [yamlio.load_mapping, yamlio.load_manifests])
@pytest.mark.parametrize("stray", ["\x00", "\x01", "\x7f", "\x9b", "\ufffe"])
def test_a_control_character_is_refused_naming_its_line(
    load: Callable[..., object], stray: str
) -> None:
    """Helm's reader stopped at a NUL without a word, dropping the rest of the file."""
    text = f"kind: ConfigMap\nmetadata: {{name: a}}\n{stray}\ndata: {{hidden: secret-value}}\n"
    with pytest.raises(ConfigError) as failure:
        load(text, source="v.yaml")
    message = failure.value.render()
    assert message == (
        f"v.yaml:3: holds the control character \\u{ord(stray):04x}, which YAML does not allow"
    )


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("y: .nan\n", "NaN is not allowed"),
        ("z: -.inf\n", "an infinity is not allowed"),
        ("a: &a [secret-value, *a]\n", "an alias refers to the anchor it is in"),
        ("b: &b {x: 1}\nm:\n  <<: [*b, 5]\n", "a merge key (<<) takes a map or a list of maps"),
        ("a: !!binary secret-value\n", "a !!binary value is not base64"),
    ],
)
def test_a_malformed_document_says_why_in_its_own_words(text: str, reason: str) -> None:
    with pytest.raises(ConfigError) as failure:
        yamlio.load_mapping(text, source="v.yaml")
    assert failure.value.render().startswith(f"v.yaml: malformed YAML: {reason}")
    assert "secret-value" not in failure.value.render()


def test_a_file_left_in_a_merge_conflict_is_called_one() -> None:
    text = "a: 1\n<<<<<<< HEAD\nb: 2\n=======\nb: 3\n>>>>>>> feature\n"
    with pytest.raises(ConfigError) as failure:
        yamlio.load_mapping(text, source="v.yaml")
    assert failure.value.render() == (
        "v.yaml:2: holds an unresolved merge conflict (<<<<<<< ... >>>>>>>)"
    )
    assert yamlio.load_mapping("<<<<<<< x: 1\n", source="v.yaml") == {"<<<<<<< x": 1}


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
