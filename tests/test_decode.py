"""The decoding layer: every bad field is reported with its file, path and what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewer import decode
from reviewer.errors import ConfigError

AT = decode.Field("deployments/a/deployment.yaml")


def test_nested_field_paths_name_keys_and_indexes() -> None:
    where = AT.key("apps").index(2).key("values")
    assert where.name == "apps[2].values"
    error = where.error("must be a map")
    assert str(error).startswith("deployments/a/deployment.yaml: apps[2].values: must be a map")


def test_unknown_key_lists_the_allowed_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        decode.mapping({"chart": "x", "chrat": "y"}, AT, allowed=("chart", "version"))
    assert caught.value.field == "chrat"
    assert "allowed: chart, version" in caught.value.message


def test_required_key_missing() -> None:
    with pytest.raises(ConfigError) as caught:
        decode.mapping({}, AT.key("releases").index(0), required=("chart",))
    assert caught.value.field == "releases[0].chart"


def test_quoted_false_is_not_true() -> None:
    assert decode.boolean(False, AT) is False
    with pytest.raises(ConfigError) as caught:
        decode.boolean("false", AT.key("skipSchemaValidation"))
    assert caught.value.field == "skipSchemaValidation"
    assert "not a string" in caught.value.message


def test_integer_refuses_booleans_and_enforces_minimum() -> None:
    assert decode.integer(3.0, AT) == 3
    with pytest.raises(ConfigError):
        decode.integer(True, AT)
    with pytest.raises(ConfigError, match="at least 1"):
        decode.integer(0, AT, minimum=1)


def test_choices_and_empty_strings() -> None:
    assert decode.string("json", AT, choices=("json", "text")) == "json"
    with pytest.raises(ConfigError, match="one of: json, text"):
        decode.string("yaml", AT, choices=("json", "text"))
    with pytest.raises(ConfigError, match="must not be empty"):
        decode.string("", AT, empty=False)


def test_optional_and_required_helpers() -> None:
    data = {"labels": {"tier": "web"}, "none": None}
    nothing: dict[str, str] = {}
    assert decode.optional(data, "labels", AT, decode.string_map, nothing) == {"tier": "web"}
    assert decode.optional(data, "none", AT, decode.string_map, nothing) == {}
    assert decode.strings(["a", "b"], AT) == ("a", "b")
    with pytest.raises(ConfigError) as caught:
        decode.required(data, "chart", AT, decode.string)
    assert caught.value.field == "chart"
    with pytest.raises(ConfigError) as caught:
        decode.strings(["a", 1], AT.key("needs"))
    assert caught.value.field == "needs[1]"


def test_read_json_names_the_file_and_line_not_the_text(tmp_path: Path) -> None:
    path = tmp_path / "review.json"
    path.write_text('{"secret": "hunter2",\n oops}', encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        decode.read_json(path, source="shard/review.json")
    assert caught.value.file == "shard/review.json:2"
    assert "hunter2" not in str(caught.value)
    with pytest.raises(ConfigError, match="file not found"):
        decode.read_json(tmp_path / "absent.json", source="absent.json")
    assert decode.read_json(_written(tmp_path, '{"a": [1]}'), source="x") == {"a": [1]}


def _written(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ok.json"
    path.write_text(text, encoding="utf-8")
    return path


def test_text_reads_scalars_as_go_yaml_reads_them_into_strings() -> None:
    assert decode.text_map({"tier": "web", "rank": 2, "on": True}, AT) == {
        "tier": "web",
        "rank": "2",
        "on": "true",
    }
    assert decode.text(1.5, AT) == "1.5"
    with pytest.raises(ConfigError) as caught:
        decode.text_map({"tier": ["web"]}, AT.key("labels"))
    assert caught.value.field == "labels.tier"


def test_optional_map_is_empty_when_absent_and_checked_when_present() -> None:
    assert decode.optional_map({"settings": None}, "settings", AT) == {}
    assert decode.optional_map({"settings": {"a": 1}}, "settings", AT) == {"a": 1}
    with pytest.raises(ConfigError, match="settings: must be a map"):
        decode.optional_map({"settings": ["a"]}, "settings", AT)
