"""The command line as a user meets it: exit codes and messages at the edge."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from reviewer.cli import main
from reviewer.errors import ExitStatus
from reviewer.marker_keys import shared_marker_key
from reviewer.shards import SHARD_FILE


def test_a_malformed_shard_file_exits_3_naming_file_and_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in [n for n in os.environ if n.startswith("GITHUB_")]:
        monkeypatch.delenv(name)
    bundle = tmp_path / "shard-1"
    bundle.mkdir()
    facts = {
        "schema": "reviewer.ci-shard/v1",
        "shard": {"index": 1, "total": "one"},
        "commits": {"target": "a" * 40, "merge": "b" * 40, "head": "c" * 40, "fallback": False},
    }
    (bundle / SHARD_FILE).write_text(json.dumps(facts), encoding="utf-8")
    with pytest.raises(SystemExit) as done:
        main(["ci", "--from-shards", str(bundle), "--dry-run"])
    assert done.value.code == ExitStatus.INVALID_REPOSITORY
    err = capsys.readouterr().err
    assert f"{bundle / SHARD_FILE}: shard.total: is not a positive whole number" in err


def test_an_unreadable_age_key_file_is_reported_not_ignored(tmp_path: Path) -> None:
    warnings: list[str] = []
    missing = tmp_path / "nowhere" / "keys.txt"
    key = shared_marker_key({"SOPS_AGE_KEY_FILE": str(missing)}, warn=warnings.append)
    assert key is None, "markers fall back to a random key"
    (warning,) = warnings
    assert str(missing) in warning and "cannot be read" in warning


def test_the_marker_key_is_shared_within_a_run_only(tmp_path: Path) -> None:
    key_file = tmp_path / "keys.txt"
    key_file.write_text("AGE-SECRET-KEY-1EXAMPLE\n", encoding="utf-8")
    env = {"SOPS_AGE_KEY_FILE": str(key_file), "GITHUB_RUN_ID": "41"}
    warnings: list[str] = []
    first = shared_marker_key(env, warn=warnings.append)
    assert first is not None and first == shared_marker_key(env, warn=warnings.append)
    assert first != shared_marker_key({**env, "GITHUB_RUN_ID": "42"}, warn=warnings.append)
    assert warnings == []
