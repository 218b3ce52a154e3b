"""Explaining changes: values diff with provenance, blast radius, no-effect warnings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agekeys import AgeIdentity, encrypt
from conftest import GitRepo

from reviewer.cli import main
from reviewer.errors import ExitStatus

APP = "apps: [{template: app}]\n"


@pytest.fixture
def fleet(git_repo: GitRepo) -> GitRepo:
    """Groups staging (2 clusters) and prod (1 cluster); image.tag set by the staging group."""
    git_repo.write("deployments/apps/web/deployment.yaml", APP)
    git_repo.write("deployments/global.values.yaml", "image: {tag: 1.0.0}\n")
    git_repo.write("deployments/staging/group.values.yaml", "image: {tag: 1.4.2}\n")
    for cluster in ("staging/stg-a", "staging/stg-b", "prod/prd-a"):
        git_repo.write(f"deployments/{cluster}/apps/.keep", "")
    # The dump chart only renders what it receives; this chart ignores unknown keys.
    git_repo.write(
        "charts/dump/templates/values.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '{{ .Release.Name }}-values'}\n"
        "data: {tag: '{{ .Values.image.tag }}', replicas: '{{ .Values.replicas }}'}\n",
    )
    git_repo.commit("fleet")
    return git_repo


def diff_json(repo: GitRepo, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    with pytest.raises(SystemExit) as done:
        main(["diff", "--repo", str(repo.root), "--base", "main", "--format", "json", *extra])
    assert done.value.code == ExitStatus.OK
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return report


def release(report: dict[str, Any], cluster: str) -> dict[str, Any]:
    return next(r for r in report["releases"] if r["cluster"] == cluster)


def test_group_change_has_provenance_and_blast_radius(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("deployments/staging/group.values.yaml", "image: {tag: 1.5.0}\n")
    report = diff_json(fleet, capsys)
    (value,) = release(report, "staging/stg-a")["values"]
    origin = {"source": "deployments/staging/group.values.yaml", "level": "group staging"}
    assert value == {
        "path": "image.tag",
        "change": 'image.tag: "1.4.2" → "1.5.0"',
        "base": origin,
        "head": origin,
    }
    assert release(report, "prod/prd-a")["values"] == []
    (impact,) = report["explain"]["blastRadius"]
    assert impact == {
        "file": "deployments/staging/group.values.yaml",
        "releases": ["staging/stg-a/web/app", "staging/stg-b/web/app"],
        "clusters": 2,
        "changed": 2,
    }
    assert report["explain"]["noEffect"] == []


def test_value_that_starts_being_overridden_names_both_origins(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("deployments/staging/stg-b/cluster.values.yaml", "image: {tag: 2.0.0-rc1}\n")
    report = diff_json(fleet, capsys)
    (value,) = release(report, "staging/stg-b")["values"]
    assert value["base"]["source"] == "deployments/staging/group.values.yaml"
    assert value["head"] == {
        "source": "deployments/staging/stg-b/cluster.values.yaml",
        "level": "cluster staging/stg-b",
    }


def test_override_at_a_higher_level_gives_a_no_effect_warning(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("deployments/prod/prd-a/cluster.values.yaml", "image: {tag: 9.9.9}\n")
    fleet.commit("prod pins its tag")
    fleet.write("deployments/prod/group.values.yaml", "image: {tag: 1.6.0}\n")
    report = diff_json(fleet, capsys)
    assert report["summary"]["releases"]["changed"] == 0
    (warning,) = report["explain"]["noEffect"]
    assert warning == {
        "file": "deployments/prod/group.values.yaml",
        "path": "image.tag",
        "reason": "overridden by deployments/prod/prd-a/cluster.values.yaml (cluster prod/prd-a)",
    }
    assert any("image.tag had no effect: overridden by" in w for w in report["warnings"])


def test_typo_key_gives_a_no_effect_warning(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("deployments/staging/group.values.yaml", "image: {tag: 1.4.2}\nreplicsa: 3\n")
    report = diff_json(fleet, capsys)
    assert report["summary"]["releases"]["changed"] == 0
    (warning,) = report["explain"]["noEffect"]
    assert warning["file"] == "deployments/staging/group.values.yaml"
    assert warning["path"] == "replicsa"
    assert "no rendered object changed" in warning["reason"]


def test_secret_provenance_shows_only_redacted_values(
    fleet: GitRepo,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    identity = AgeIdentity.generate()
    monkeypatch.setenv("SOPS_AGE_KEY_FILE", str(identity.write(tmp_path / "key.txt")))
    group = fleet.root / "deployments/staging"
    encrypt(group, {"image": {"tag": "s3cret-Tag-001"}}, identity, name="group.values.sops.yaml")
    fleet.remove("deployments/staging/group.values.yaml")
    fleet.commit("tag from sops")
    encrypt(group, {"image": {"tag": "s3cret-Tag-2x"}}, identity, name="group.values.sops.yaml")
    with pytest.raises(SystemExit):
        main(["diff", "--repo", str(fleet.root), "--base", "main", "--format", "json"])
    out = capsys.readouterr().out
    assert "s3cret" not in out
    (value,) = release(json.loads(out), "staging/stg-a")["values"]
    assert value["change"] == 'image.tag: "REDACT-RED-RED" → "REDACT-RED-RE"'
    assert value["head"]["source"] == "deployments/staging/group.values.sops.yaml"

    with pytest.raises(SystemExit) as done:
        main(
            [
                "explain",
                str(fleet.root),
                "--cluster",
                "stg-a",
                "--deployment",
                "web",
                "--release",
                "app",
                "image",
            ]
        )
    assert done.value.code == ExitStatus.OK
    assert capsys.readouterr().out == (
        'image.tag: "REDACT-RED-RE"  ← deployments/staging/group.values.sops.yaml '
        "(group staging)  (overrides deployments/global.values.yaml (global))\n"
    )


def test_markdown_shows_blast_radius_before_the_details(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("deployments/global.values.yaml", "image: {tag: 1.0.1}\n")
    with pytest.raises(SystemExit):
        main(["diff", "--repo", str(fleet.root), "--base", "main", "--format", "markdown"])
    body = capsys.readouterr().out
    radius = body.index("**Blast radius**: `deployments/global.values.yaml` → 3 release(s)")
    assert radius < body.index("<details>")
    assert 'image.tag: "1.0.0" → "1.0.1"  ← deployments/global.values.yaml (global)' in body


def test_explanation_survives_sharding(
    fleet: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("deployments/global.values.yaml", "image: {tag: 1.0.1}\nreplicsa: 2\n")
    whole = diff_json(fleet, capsys)
    shards = []
    for index in (1, 2):
        shards.append(str(tmp_path / f"s{index}"))
        diff_json(fleet, capsys, "--shard", f"{index}/2", "--save", shards[-1])
    with pytest.raises(SystemExit):
        main(["merge", *shards, "--format", "json"])
    merged = json.loads(capsys.readouterr().out)
    assert merged["explain"] == whole["explain"]
    assert [r["values"] for r in merged["releases"]] == [r["values"] for r in whole["releases"]]
