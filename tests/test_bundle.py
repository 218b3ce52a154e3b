"""`reviewer merge` reads each shard's review.json: damage is an error naming file and field."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reviewer import bundle
from reviewer.cli import main
from reviewer.errors import ExitStatus
from reviewer.explain import Explanation, FileImpact, NoEffect, Origin, ValueChange
from reviewer.model import ReleaseId, ResourceKey, Snapshot
from reviewer.noise import NoiseRules
from reviewer.report import SideInfo

WEB = ReleaseId("g/c1", "shop", "web")
EXPLANATION = Explanation(
    values={
        WEB: (
            ValueChange(
                "image.tag", 'image.tag: "1" → "2"', None, Origin("g/c1/cluster.yaml", "cluster")
            ),
        )
    },
    blast_radius=(FileImpact("g/c1/cluster.yaml", (WEB,), 1),),
    no_effect=(NoEffect("global.yaml", "unused", "no template reads it"),),
)


def _no_guard(text: str, location: str) -> None:
    return None


def saved(tmp_path: Path) -> Path:
    """A bundle of two empty sides, as `reviewer diff --save` writes it."""
    pair = bundle.RenderedPair(
        base=Snapshot(),
        head=Snapshot(warnings=("secrets were not decrypted",)),
        base_info=SideInfo("main", "a" * 40),
        head_info=SideInfo("feature", "b" * 40),
        warnings=("a warning",),
        noise=NoiseRules.from_mapping({"kinds": ["Event"]}),
        explanation=EXPLANATION,
        hidden=frozenset({(WEB, ResourceKey("", "Secret", "shop", "web"))}),
    )
    directory = tmp_path / "shard"
    bundle.save(pair, directory, guard=_no_guard)
    return directory


def merge(directory: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int | str | None, str]:
    """Run `reviewer merge DIR`: its exit status and standard error."""
    with pytest.raises(SystemExit) as done:
        main(["merge", str(directory), "--format", "json"])
    return done.value.code, capsys.readouterr().err


def test_a_saved_bundle_loads_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = saved(tmp_path)
    pair = bundle.load(directory)
    assert (pair.base_info, pair.head_info) == (
        SideInfo("main", "a" * 40),
        SideInfo("feature", "b" * 40),
    )
    assert pair.warnings == ("a warning",)
    assert pair.noise.kinds == ("Event",)
    assert pair.explanation == EXPLANATION
    assert pair.hidden == {(WEB, ResourceKey("", "Secret", "shop", "web"))}
    code, _ = merge(directory, capsys)
    assert code == ExitStatus.OK


def _edit(change: Callable[[dict[str, Any]], object]) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        meta = json.loads(path.read_text(encoding="utf-8"))
        change(meta)
        path.write_text(json.dumps(meta), encoding="utf-8")

    return damage


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (lambda p: p.write_text('{"schema": "reviewer.bundle/v1",\n  oops'), "review.json:2: "),
        (lambda p: p.write_text("[1, 2]"), "review.json: must be a map"),
        (_edit(lambda m: m.pop("head")), "review.json: head: is required"),
        (_edit(lambda m: m["base"].pop("ref")), "review.json: base.ref: is required"),
        (_edit(lambda m: m.update(warnings="one")), "review.json: warnings: must be a list"),
        (_edit(lambda m: m.update(schema="x/v9")), "review.json: schema: must be reviewer.bundle"),
        (_edit(lambda m: m["base"].update(sha=7)), "review.json: base.sha: must be a string"),
        (
            _edit(lambda m: m.update(hidden=[["x", "", "Pod", "ns", "p"]])),
            "review.json: hidden[0][0]",
        ),
        (
            _edit(lambda m: m["explain"]["noEffect"].insert(0, {"file": "f"})),
            "review.json: explain.noEffect[0].path: is required",
        ),
        (
            _edit(lambda m: m["noise"].update(kinds="Event")),
            "review.json: noise.kinds: must be a list",
        ),
    ],
)
def test_a_damaged_review_json_names_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: Any, expected: str
) -> None:
    directory = saved(tmp_path)
    damage(directory / "review.json")
    code, stderr = merge(directory, capsys)
    assert code == ExitStatus.INVALID_REPOSITORY
    assert f"{directory}/{expected}" in stderr
    assert "this is a bug" not in stderr


def test_a_missing_review_json_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = saved(tmp_path)
    (directory / "review.json").unlink()
    code, stderr = merge(directory, capsys)
    assert code == ExitStatus.INVALID_REPOSITORY
    assert f"{directory}/review.json: file not found" in stderr
