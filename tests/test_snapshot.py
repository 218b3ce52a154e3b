"""Snapshots on disk: what `write` saves, `read` gives back, and a damaged index.json is named."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reviewer import bundle, snapshot
from reviewer.bundle import RenderedPair
from reviewer.cli import main
from reviewer.errors import ConfigError, ExitStatus
from reviewer.model import ReleaseId, RenderedRelease, Resource, Snapshot
from reviewer.noise import NoiseRules
from reviewer.report import SideInfo

WEB = ReleaseId("eu/prod-1", "shop", "web")


def config_map(name: str, value: str) -> Resource:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "shop"},
    }
    return Resource.from_body({**body, "data": {"key": value}}, source="web/templates/cm.yaml")


def sample() -> Snapshot:
    rendered = RenderedRelease(
        id=WEB,
        namespace="shop",
        chart="web",
        version="1.0.0",
        labels={"team": "shop"},
        resources=(config_map("a", "1"), config_map("b", "2")),
        reproduce="reviewer values ...",
    )
    failed = RenderedRelease(
        id=ReleaseId("eu/prod-1", "shop", "api"), namespace="shop", error="chart api: not found"
    )
    return Snapshot(releases=(failed, rendered), errors=("one",), warnings=("two",))


def test_a_written_snapshot_reads_back_equal(tmp_path: Path) -> None:
    original = sample()
    snapshot.write(original, tmp_path / "snap")
    assert snapshot.read(tmp_path / "snap") == original


def _index(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((root / "index.json").read_text(encoding="utf-8"))
    return data


def _rewrite(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], object]:
    def damage(root: Path) -> None:
        index = _index(root)
        change(index)
        (root / "index.json").write_text(json.dumps(index), encoding="utf-8")

    return damage


def _set(where: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(index: dict[str, Any]) -> None:
        index["releases"][1][where] = value

    return change


def _drop(where: str) -> Callable[[dict[str, Any]], None]:
    def change(index: dict[str, Any]) -> None:
        del index["releases"][1][where]

    return change


DAMAGES: list[tuple[Callable[[Path], object], str]] = [
    (lambda root: (root / "index.json").write_text("{", encoding="utf-8"), "not valid JSON"),
    (lambda root: (root / "index.json").write_bytes(b"\xff"), "not valid JSON"),
    (_rewrite(lambda index: index.pop("schema")), "not a reviewer.snapshot/v1 index"),
    (_rewrite(_drop("cluster")), "releases[1].cluster: must be a string"),
    (_rewrite(_set("release", 7)), "releases[1].release: must be a string"),
    (_rewrite(_set("labels", ["team"])), "releases[1].labels: must be a map of strings"),
    (_rewrite(_set("error", {"x": 1})), "releases[1].error: must be a string or null"),
    (_rewrite(_set("files", {"configmap-a.yaml": 3})), "releases[1].files: must be a map"),
    (_rewrite(lambda index: index.update(releases="x")), "releases: must be a list"),
    (_rewrite(lambda index: index["releases"].append(3)), "releases[2]: must be an object"),
    (_rewrite(lambda index: index.update(warnings=[1])), "warnings[0]: must be a string"),
]


@pytest.mark.parametrize(("damage", "message"), DAMAGES)
def test_a_damaged_index_names_the_file_and_field(
    tmp_path: Path, damage: Callable[[Path], object], message: str
) -> None:
    root = tmp_path / "snap"
    snapshot.write(sample(), root)
    damage(root)
    with pytest.raises(ConfigError) as caught:
        snapshot.read(root)
    assert str(root / "index.json") in caught.value.render()
    assert message in caught.value.render()


def test_an_index_naming_a_missing_object_file_names_that_file(tmp_path: Path) -> None:
    root = tmp_path / "snap"
    snapshot.write(sample(), root)
    (snapshot.release_dir(root, WEB) / "configmap-b.yaml").unlink()
    with pytest.raises(ConfigError, match=r"configmap-b\.yaml: listed in index\.json but missing"):
        snapshot.read(root)


def _saved_pair(directory: Path) -> Path:
    pair = RenderedPair(
        base=sample(),
        head=sample(),
        base_info=SideInfo("main", None),
        head_info=SideInfo("feature", None),
        warnings=(),
        noise=NoiseRules(),
    )
    bundle.save(pair, directory, guard=lambda text, where: None)
    return directory


@pytest.mark.parametrize(
    ("damage", "message"),
    [DAMAGES[0], DAMAGES[3], DAMAGES[4]],
)
def test_reviewer_merge_of_a_damaged_index_exits_3_naming_file_and_field(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    damage: Callable[[Path], object],
    message: str,
) -> None:
    saved = _saved_pair(tmp_path / "shard")
    damage(saved / "head")
    with pytest.raises(SystemExit) as done:
        main(["merge", str(saved), "--format", "json"])
    assert done.value.code == ExitStatus.INVALID_REPOSITORY
    err = capsys.readouterr().err
    assert str(saved / "head" / "index.json") in err
    assert message in err


def test_reviewer_merge_of_an_intact_bundle_reports_no_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = _saved_pair(tmp_path / "shard")
    with pytest.raises(SystemExit) as done:
        main(["merge", str(saved), "--format", "json"])
    # The sample's failed release fails the same way on both sides: still failing, a warning.
    assert done.value.code == ExitStatus.OK
    report = json.loads(capsys.readouterr().out)
    assert report["schema"] == "reviewer.report/v1"
    assert report["stillFailing"] and report["head"]["errors"] == []
    with pytest.raises(SystemExit) as done:
        main(["merge", str(saved), "--format", "json", "--fail-on-preexisting"])
    assert done.value.code == ExitStatus.RENDER_FAILED, "the sample holds one failed release"
