"""Explaining changes: values diff with provenance, blast radius, no-effect warnings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agekeys import AgeIdentity, encrypt
from commandargs import diff_json
from conftest import GitRepo, Repo
from stages import ReleaseId, ReleaseStatus, plans_by_id

from reviewer import explain, explain_json
from reviewer.cli import main
from reviewer.errors import ExitStatus
from reviewer.explain import FileImpact, NoEffect, Origin, Provenance
from reviewer.values import Layer

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
    radius = body.index("**Blast radius**")
    assert body.index("\n- `deployments/global.values.yaml` → 3 release(s)") > radius
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


# --- the stage alone: explain's functions on plans built from two repositories ----------------

WEB = ReleaseId("staging/stg-a", "web", "app")
PRD = ReleaseId("prod/prd-a", "web", "app")


def sides(tmp_path: Path, base: dict[str, str], head: dict[str, str]) -> tuple[Repo, Repo]:
    """Two checkouts of one fleet (clusters staging/stg-a and prod/prd-a), then their edits."""
    repos = []
    for name, edits in (("base", base), ("head", head)):
        repo = Repo(tmp_path / name).add_chart().add_template()
        repo.write("deployments/apps/web/deployment.yaml", APP)
        repo.write("deployments/staging/stg-a/apps/.keep", "")
        repo.write("deployments/prod/prd-a/apps/.keep", "")
        repos.append(repo.write_all(edits))
    return repos[0], repos[1]


def layer(source: str, values: dict[str, Any]) -> Layer:
    return Layer(source, f"level of {source}", values)


def test_provenance_names_the_last_setter_and_what_it_overrode() -> None:
    layers = [
        layer("global", {"image": {"tag": "1"}}),
        layer("group", {"other": 1}),
        layer("cluster", {"image": {"tag": "2"}}),
    ]
    assert explain.provenance(layers, ("image", "tag")) == Provenance(
        Origin("cluster", "level of cluster"), (Origin("global", "level of global"),)
    )
    assert explain.provenance(layers, ("replicas",)).winner.level == "chart default"
    assert explain.provenance(layers, ("atlas", "deployment")).winner.source == "atlas context"


def test_a_layer_replacing_a_parent_map_sets_the_path_and_lists_replace_whole() -> None:
    layers = [layer("low", {"image": {"tag": "1"}, "ports": [1]}), layer("high", {"image": None})]
    assert explain.provenance(layers, ("image", "tag")).winner.source == "high"
    assert explain.provenance(layers, ("ports", 0)).winner.source == "low"


def test_values_diff_gives_each_changed_path_its_origins_on_both_sides(tmp_path: Path) -> None:
    base, head = sides(
        tmp_path,
        {"deployments/staging/group.values.yaml": "image: {tag: 1.4.2}\nold: x\n"},
        {
            "deployments/staging/group.values.yaml": "image: {tag: 1.4.2}\n",
            "deployments/staging/stg-a/cluster.values.yaml": "image: {tag: 2.0.0}\nnew: y\n",
        },
    )
    old, new = plans_by_id(base.root)[WEB], plans_by_id(head.root)[WEB]
    changes = {change.path: change for change in explain.values_diff(old, new, lambda v: v)}
    assert sorted(changes) == ["image.tag", "new", "old"]
    tag = changes["image.tag"]
    assert tag.text == 'image.tag: "1.4.2" → "2.0.0"'
    assert tag.base == Origin("deployments/staging/group.values.yaml", "group staging")
    assert tag.head == Origin(
        "deployments/staging/stg-a/cluster.values.yaml", "cluster staging/stg-a"
    )
    assert tag.line().endswith(f"← {tag.base} → {tag.head}")
    assert (changes["new"].base, changes["old"].head) == (None, None)


def test_values_diff_shows_only_what_the_redaction_leaves(tmp_path: Path) -> None:
    base, head = sides(
        tmp_path,
        {"deployments/global.values.yaml": "password: one\n"},
        {"deployments/global.values.yaml": "password: two\n"},
    )
    old, new = plans_by_id(base.root)[WEB], plans_by_id(head.root)[WEB]

    def hide(values: Any) -> Any:
        return {**values, "password": "<hidden " + str(len(values["password"])) + ">"}

    assert explain.values_diff(old, new, hide) == ()
    (change,) = explain.values_diff(old, new, lambda v: v)
    assert "one" in change.text


def test_blast_radius_counts_releases_clusters_and_changes_per_file(tmp_path: Path) -> None:
    base, _ = sides(tmp_path, {"deployments/staging/group.values.yaml": "a: 1\n"}, {})
    plans = plans_by_id(base.root).values()
    files = ["deployments/staging/group.values.yaml", "charts/dump", "README.md"]
    status = {WEB: ReleaseStatus.CHANGED, PRD: ReleaseStatus.UNCHANGED}
    impacts = explain.blast_radius(files, plans, status)
    assert impacts == (
        FileImpact("charts/dump", (PRD, WEB), 1),
        FileImpact("deployments/staging/group.values.yaml", (WEB,), 1),
        FileImpact("README.md", (), 0),
    )
    assert impacts[0].clusters == 2
    assert impacts[0].line() == "charts/dump → 2 release(s) in 2 cluster(s), 1 changed"
    assert impacts[2].line() == "README.md → no release"


def test_no_effect_names_the_overriding_file_or_suspects_a_typo(tmp_path: Path) -> None:
    group = "deployments/prod/group.values.yaml"
    pinned = {"deployments/prod/prd-a/cluster.values.yaml": "image: {tag: 9.9.9}\n"}
    base, head = sides(
        tmp_path,
        {**pinned, group: "image: {tag: 1.0.0}\n"},
        {**pinned, group: "image: {tag: 1.6.0}\nreplicsa: 3\n"},
    )
    found = explain.no_effect(
        plans_by_id(base.root),
        plans_by_id(head.root),
        [group],
        {PRD: ReleaseStatus.CHANGED, WEB: ReleaseStatus.UNCHANGED},
    )
    assert found == (
        NoEffect(
            group,
            "image.tag",
            "overridden by deployments/prod/prd-a/cluster.values.yaml (cluster prod/prd-a)",
        ),
    ), "replicsa reached a changed release's values, so it is not reported"


def test_changed_files_lists_added_removed_and_modified_but_not_git(tmp_path: Path) -> None:
    base, head = sides(
        tmp_path,
        {"same.txt": "s", "gone.txt": "g", "edit.txt": "1", ".git/HEAD": "a"},
        {"same.txt": "s", "new.txt": "n", "edit.txt": "2", ".git/HEAD": "b"},
    )
    assert explain.changed_files(base.root, head.root) == ["edit.txt", "gone.txt", "new.txt"]


def test_json_round_trips(tmp_path: Path) -> None:
    base, head = sides(
        tmp_path,
        {"deployments/global.values.yaml": "a: 1\n"},
        {"deployments/global.values.yaml": "a: 2\n"},
    )
    old, new = plans_by_id(base.root), plans_by_id(head.root)
    status = {WEB: ReleaseStatus.CHANGED, PRD: ReleaseStatus.CHANGED}
    built = explain.Explanation(
        values={rid: explain.values_diff(old[rid], new[rid], lambda v: v) for rid in status},
        blast_radius=explain.blast_radius(["deployments/global.values.yaml"], old.values(), status),
        no_effect=(NoEffect("f.yaml", "x.y", "a reason"),),
    )
    assert explain_json.from_json(json.loads(json.dumps(explain_json.to_json(built)))) == built
    assert explain_json.release_id("group/sub/cluster/dep/rel") == ReleaseId(
        "group/sub/cluster", "dep", "rel"
    )


def test_merged_shards_keep_a_no_effect_only_if_no_shard_reading_the_file_saw_an_effect() -> None:
    warning = NoEffect("g.yaml", "a", "reason")
    other = NoEffect("h.yaml", "b", "reason")
    one = explain.Explanation(
        blast_radius=(FileImpact("g.yaml", (WEB,), 0), FileImpact("h.yaml", (WEB,), 0)),
        no_effect=(warning, other),
    )
    two = explain.Explanation(
        blast_radius=(FileImpact("g.yaml", (PRD,), 1), FileImpact("h.yaml", (), 0)),
        no_effect=(),
    )
    merged = explain_json.merge([one, two])
    assert merged.no_effect == (other,)
    assert merged.blast_radius[0] == FileImpact("g.yaml", (PRD, WEB), 1)


def test_a_typo_is_warned_about_next_to_an_effective_change_in_the_same_file(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write("deployments/staging/group.values.yaml", "image: {tag: 1.5.0}\nreplicsa: 3\n")
    report = diff_json(fleet, capsys)
    assert report["summary"]["releases"]["changed"] == 2
    (warning,) = report["explain"]["noEffect"]
    assert (warning["file"], warning["path"]) == (
        "deployments/staging/group.values.yaml",
        "replicsa",
    )
    assert "never read" in warning["reason"]


def test_a_key_below_a_map_the_chart_passes_whole_is_not_suspected(tmp_path: Path) -> None:
    from reviewer.chartkeys import unread

    text = "a: {{ .Values.image.tag }}\nb: {{ toYaml .Values.podAnnotations }}\n"
    assert unread(("replicsa",), text)
    assert unread(("image", "tga"), text)
    assert not unread(("image", "tag"), text)
    assert not unread(("podAnnotations", "anything"), text)
    assert not unread(("replicsa",), "{{ toYaml .Values }}")


def test_no_warning_for_a_file_the_change_deleted(tmp_path: Path) -> None:
    cluster = "deployments/prod/prd-a/cluster.values.yaml"
    base, head = sides(tmp_path, {cluster: "image: {tag: 9.9.9}\nreplicsa: 2\n"}, {})
    found = explain.no_effect(
        plans_by_id(base.root),
        plans_by_id(head.root),
        [cluster],
        {PRD: ReleaseStatus.CHANGED, WEB: ReleaseStatus.UNCHANGED},
    )
    assert found == ()


def test_a_file_is_never_overridden_by_itself(tmp_path: Path) -> None:
    group = "deployments/prod/group.values.yaml"
    base, head = sides(
        tmp_path, {group: "image: {tag: 1.0.0}\n"}, {group: "image: {tag: 1.0.0}\nextra: null\n"}
    )
    found = explain.no_effect(
        plans_by_id(base.root), plans_by_id(head.root), [group], {PRD: ReleaseStatus.UNCHANGED}
    )
    assert all("overridden by" not in item.reason for item in found), found
    assert all(group not in item.reason for item in found), found
