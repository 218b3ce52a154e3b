"""The shard bundle format on its own: `ci-shard.json` decoding, naming file and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reviewer.commits import Commits
from reviewer.errors import ConfigError, ReviewerError
from reviewer.shards import SHARD_FILE, ShardFacts, bundle_dirs, read_shard_facts
from reviewer.side import Shard

COMMITS = Commits(target="a" * 40, merge="b" * 40, head="c" * 40)
FACTS: dict[str, Any] = {
    "schema": "reviewer.ci-shard/v1",
    "shard": {"index": 2, "total": 3},
    "number": 12,
    "repository": "acme/fleet",
    "commits": {"target": "a" * 40, "merge": "b" * 40, "head": "c" * 40, "fallback": False},
}


def write(directory: Path, data: object) -> Path:
    directory.mkdir(exist_ok=True)
    (directory / SHARD_FILE).write_text(json.dumps(data), encoding="utf-8")
    return directory


def test_facts_read_back(tmp_path: Path) -> None:
    facts = read_shard_facts(write(tmp_path, FACTS))
    assert facts == ShardFacts(Shard(2, 3), 12, "acme/fleet", COMMITS)
    assert facts.describe() == f"shard 2/3 of #12, target {'a' * 7}, merge {'b' * 7}"


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"shard": {"index": 2}}, "shard.total", "is required"),
        ({"shard": {"index": 0, "total": 3}}, "shard.index", "is not a positive whole number"),
        ({"number": "12"}, "number", "is not a positive whole number"),
        ({"repository": "fleet"}, "repository", "must be OWNER/NAME"),
        ({"commits": {**FACTS["commits"], "fallback": "false"}}, "commits.fallback", "boolean"),
        ({"commits": {**FACTS["commits"], "head": "c" * 39}}, "commits.head", "not a commit SHA"),
        ({"commits": None}, "commits", "is required"),
    ],
)
def test_a_bad_field_is_named_with_its_file(
    tmp_path: Path, change: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        read_shard_facts(write(tmp_path, {**FACTS, **change}))
    assert refused.value.field == field
    assert message in refused.value.message
    assert refused.value.file == str(tmp_path / SHARD_FILE)


def test_values_never_appear_in_the_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as refused:
        read_shard_facts(write(tmp_path, {**FACTS, "repository": "s3cr3t-value"}))
    assert "s3cr3t-value" not in refused.value.render()


def test_bundle_directories_are_found_one_level_down(tmp_path: Path) -> None:
    one, two = write(tmp_path / "one", FACTS), write(tmp_path / "two", FACTS)
    assert bundle_dirs([tmp_path]) == [one, two]
    assert bundle_dirs([one]) == [one]
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReviewerError, match="holds no shard bundle"):
        bundle_dirs([tmp_path / "empty"])
