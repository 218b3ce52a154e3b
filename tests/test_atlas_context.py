"""ATLAS conformance: the template context and values semantics ATLAS documents.

Each test is written from ATLAS's README ("Available context", "Template context",
"Labels", "How ATLAS treats helmfile release options") and its test suite, and
asserts on what Helm received (the values-dump chart) or on the rendered release.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from commandargs import diff_json
from conftest import GitRepo, Repo, git, received_values, release
from github_api import FakeGitHub, User
from test_action import PR
from test_ci_shards import SPREAD_CHANGE, publish, pull_request, render_shard

from reviewer.cli import main
from reviewer.errors import ExitStatus

APP = "apps: [{template: app}]\n"
CWD_TEMPLATE = """\
releases:
  - name: app
    chart: "{{ .Values.atlas.cwd }}/charts/dump"
"""


# --- 1. atlas.cwd is an absolute repository root ----------------------------------------------


def test_a_chart_path_built_from_atlas_cwd_renders(repo: Repo) -> None:
    repo.add_template(text=CWD_TEMPLATE)
    repo.write("deployments/c/apps/d/deployment.yaml", APP)
    atlas = received_values(repo.render(), "c", "d", "app")["atlas"]
    assert atlas["cwd"].startswith("/")
    assert atlas["deployment"]["deploymentPath"].startswith(atlas["cwd"] + "/")


def test_values_files_named_from_atlas_cwd_are_read(repo: Repo) -> None:
    repo.write("shared/common.yaml", "common: yes-please\n")
    repo.add_template(
        text=CWD_TEMPLATE + '    values: ["{{ .Values.atlas.cwd }}/shared/common.yaml"]\n'
    )
    repo.write("deployments/c/apps/d/deployment.yaml", APP)
    assert received_values(repo.render(), "c", "d", "app")["common"] == "yes-please"


def test_a_path_from_atlas_cwd_cannot_leave_the_checkout(repo: Repo) -> None:
    repo.add_template(
        text='releases: [{name: app, chart: "{{ .Values.atlas.cwd }}/../outside/chart"}]\n'
    )
    repo.write("deployments/c/apps/d/deployment.yaml", APP)
    (failed,) = repo.render().releases
    assert failed.error is not None and "leaves the repository" in failed.error
    assert not failed.resources


# A chart that hashes everything it received, as checksum annotations do.
HASHING_CHART = {
    "Chart.yaml": "apiVersion: v2\nname: dump\nversion: 1.0.0\n",
    "templates/values.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-values\n"
        "  annotations: {checksum: '{{ toYaml .Values | sha256sum }}'}\n"
        "data:\n  values: |\n{{ toYaml .Values | indent 4 }}\n"
    ),
}


def cwd_fleet(repo: GitRepo) -> str:
    repo.add_chart(files=HASHING_CHART).add_template(text=CWD_TEMPLATE)
    repo.write("deployments/global.values.yaml", "tier: gold\n")
    for cluster in ("prod/eu", "prod/us", "dev/a", "dev/b"):
        repo.write(f"deployments/{cluster}/apps/web/deployment.yaml", APP)
    return repo.commit("fleet")


def render_files(repo: str, out: Path) -> dict[Path, bytes]:
    with pytest.raises(SystemExit) as done:
        main(["render", repo, "--out", str(out)])
    assert done.value.code == ExitStatus.OK
    return {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def test_two_clones_at_different_paths_render_byte_identical_snapshots(
    git_repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd_fleet(git_repo)
    clones = (tmp_path / "a", tmp_path / "deeper" / "elsewhere" / "b")
    outputs = []
    for clone in clones:
        clone.parent.mkdir(parents=True, exist_ok=True)
        git(tmp_path, "clone", "--quiet", str(git_repo.root), str(clone))
        monkeypatch.chdir(clone)
        outputs.append(render_files(".", tmp_path / f"out-{clone.name}"))
    assert len(outputs[0]) > 4
    assert outputs[0] == outputs[1]
    assert not any(str(tmp_path).encode() in data for data in outputs[0].values())
    # Named by absolute paths, only the reproduction commands in index.json differ:
    # they name the checkout as it was given.
    named = [render_files(str(clone), tmp_path / f"abs-{clone.name}") for clone in clones]
    objects = [{k: v for k, v in files.items() if k.name != "index.json"} for files in named]
    assert (
        objects[0] == objects[1] == {k: v for k, v in outputs[0].items() if k.name != "index.json"}
    )


def changed(report: dict[str, object]) -> list[str]:
    releases = report["releases"]
    assert isinstance(releases, list)
    return sorted(r["cluster"] for r in releases if r["status"] != "unchanged")


def test_the_idiom_diffs_cleanly_and_explains_a_change(
    git_repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    cwd_fleet(git_repo)
    git(git_repo.root, "checkout", "--quiet", "-b", "feature")
    assert changed(diff_json(git_repo, capsys)) == [], "base and head worktrees render alike"

    git_repo.write("deployments/prod/group.values.yaml", "tier: platinum\n")
    report = diff_json(git_repo, capsys)
    assert changed(report) == ["prod/eu", "prod/us"]
    releases = report["releases"]
    assert isinstance(releases, list)
    eu = next(r for r in releases if r["cluster"] == "prod/eu")
    (value,) = eu["values"]
    assert value["change"] == 'tier: "gold" → "platinum"'
    assert value["head"]["source"] == "deployments/prod/group.values.yaml"


def test_the_idiom_survives_sharding(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cwd_fleet(git_repo)
    git(git_repo.root, "checkout", "--quiet", "-b", "feature")
    git_repo.write("deployments/global.values.yaml", "tier: platinum\n")
    whole = diff_json(git_repo, capsys)
    shards = []
    for index in (1, 2):
        shards.append(str(tmp_path / f"s{index}"))
        diff_json(git_repo, capsys, "--shard", f"{index}/2", "--save", shards[-1])
    with pytest.raises(SystemExit):
        main(["merge", *shards, "--format", "json"])
    merged = json.loads(capsys.readouterr().out)
    assert changed(merged) == changed(whole) == ["dev/a", "dev/b", "prod/eu", "prod/us"]
    assert merged["releases"] == whole["releases"]
    assert merged["explain"] == whole["explain"]


def test_the_idiom_works_in_explain(git_repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    cwd_fleet(git_repo)
    with pytest.raises(SystemExit) as done:
        main(
            [
                "explain",
                str(git_repo.root),
                "--cluster",
                "prod/eu",
                "--deployment",
                "web",
                "--release",
                "app",
            ]
        )
    out = capsys.readouterr().out
    assert done.value.code == ExitStatus.OK, out
    assert 'tier: "gold"  ← deployments/global.values.yaml (global)' in out
    assert 'atlas.cwd: "/' in out


def test_the_idiom_works_in_sharded_ci(
    tmp_path: Path, fake: FakeGitHub, bot: User, git_repo: GitRepo
) -> None:
    git_repo.add_chart(files=HASHING_CHART).add_template(text=CWD_TEMPLATE)
    pull = pull_request(git_repo, SPREAD_CHANGE)
    rendered = [render_shard(tmp_path, fake, pull, index) for index in (1, 2)]
    assert [(r[0], r[2]["errors"]) for r in rendered] == [(ExitStatus.OK, "0")] * 2
    status, merged, err = publish(tmp_path, fake, pull, [r[1] for r in rendered])
    assert status is ExitStatus.OK, err
    assert merged["errors"] == "0"
    (comment,) = fake.comments(PR)
    assert "`prod/us`" in comment.body and "not found" not in comment.body


# --- 2. bare keys: `.key` is `.Values.key` in every Go template -------------------------------


def test_bare_keys_resolve_in_app_template_hierarchy_and_values_list_gotmpl(repo: Repo) -> None:
    repo.write("deployments/global.values.yaml", "globalOnly: g\n")
    repo.write(
        "deployments/c/cluster.values.yaml.gotmpl",
        "fromHierarchy: '{{ .globalOnly }}-{{ .Values.globalOnly }}-"
        "{{ .atlas.deployment.cluster }}'\n",
    )
    repo.write(
        "templates/app/values.yaml.gotmpl",
        '{{ define "twice" }}{{ . }}{{ . }}{{ end }}'
        "fromList: '{{ .globalOnly }}-{{ include \"twice\" .fromHierarchy }}'\n",
    )
    repo.add_template(
        text="releases:\n  - name: app\n    chart: ../../charts/dump\n"
        "    values: [values.yaml.gotmpl, {fromTemplate: '{{ .globalOnly }}'}]\n"
    )
    repo.write(
        "deployments/c/apps/d/deployment.yaml", "apps: [{template: app, name: '{{ .who }}'}]\n"
    )
    repo.write("deployments/c/apps/d/values.yaml", "who: bare\n")
    values = received_values(repo.render(), "c", "d", "bare-app")
    assert values["fromHierarchy"] == "g-g-c"
    assert values["fromList"] == "g-g-g-cg-g-c"
    assert values["fromTemplate"] == "g"


# --- 3. .Release in values .gotmpl files -------------------------------------------------------


def test_release_in_values_gotmpl_is_the_final_release(repo: Repo) -> None:
    repo.write(
        "templates/app/release.yaml.gotmpl",
        "releaseAware:\n"
        "  name: '{{ .Release.Name }}'\n  namespace: '{{ .Release.Namespace }}'\n"
        "  chart: '{{ .Release.Chart }}'\n  cluster: '{{ .Release.Labels.cluster }}'\n",
    )
    repo.add_template(
        text="releases:\n  - name: app\n    chart: ../../charts/dump\n"
        "    values: [release.yaml.gotmpl]\n"
    )
    repo.write("deployments/c/cluster.values.yaml.gotmpl", "fromHierarchy: '{{ .Release.Name }}'\n")
    repo.write(
        "deployments/c/apps/d/deployment.yaml",
        "apps:\n  - {template: app, name: primary, namespace: test}\n"
        "  - {template: app, name: secondary, nameStyle: suffix}\n",
    )
    snapshot = repo.render()
    primary = received_values(snapshot, "c", "d", "primary-app")
    assert primary["releaseAware"] == {
        "name": "primary-app",
        "namespace": "test",
        "chart": "../../charts/dump",
        "cluster": "c",
    }
    assert primary["fromHierarchy"] == "primary-app"
    secondary = received_values(snapshot, "c", "d", "app-secondary")
    assert secondary["releaseAware"]["name"] == "app-secondary"
    assert secondary["fromHierarchy"] == "app-secondary"


# --- 4. instance values are visible to the app template ----------------------------------------


def test_instance_inline_values_reach_the_app_template_under_the_hierarchy(repo: Repo) -> None:
    repo.add_template(
        text="releases:\n  - name: app\n    chart: ../../charts/dump\n"
        "    values: [{port: '{{ .Values.targetPort }}', tierSeen: '{{ .tier }}'}]\n"
    )
    repo.write("deployments/c/cluster.values.yaml", "tier: gold\n")
    repo.write(
        "deployments/c/apps/d/deployment.yaml",
        "apps: [{template: app, values: [{targetPort: 8080, tier: silver}]}]\n",
    )
    values = received_values(repo.render(), "c", "d", "app")
    assert values["port"] == "8080"
    assert values["tierSeen"] == "gold", "the hierarchy wins over instance values, as in ATLAS"


# --- 5. deploymentPath is the path of deployment.yaml ------------------------------------------


def test_deployment_path_names_deployment_yaml(repo: Repo) -> None:
    repo.write("deployments/g/c/apps/d/deployment.yaml", APP)
    atlas = received_values(repo.render(), "g/c", "d", "app")["atlas"]
    path = atlas["deployment"]["deploymentPath"]
    assert path == f"{atlas['cwd']}/deployments/g/c/apps/d/deployment.yaml"


# --- 6. skipSchemaValidation defaults to true --------------------------------------------------

STRICT_SCHEMA = (
    '{"type": "object", "additionalProperties": false,'
    ' "properties": {"replicas": {"type": "integer"}}}'
)


def test_strict_schema_charts_render_with_hierarchy_values_and_atlas(repo: Repo) -> None:
    repo.write("charts/dump/values.schema.json", STRICT_SCHEMA)
    repo.write("deployments/global.values.yaml", "clusterDomain: example.org\n")
    repo.write("deployments/c/apps/d/deployment.yaml", APP)
    values = received_values(repo.render(), "c", "d", "app")
    assert values["clusterDomain"] == "example.org"
    assert values["atlas"]["deployment"]["cluster"] == "c"


@pytest.mark.parametrize("skip", ["false", "true"])
def test_a_user_set_skip_schema_validation_is_kept(repo: Repo, skip: str) -> None:
    repo.write("charts/dump/values.schema.json", STRICT_SCHEMA)
    repo.add_template(
        text=f"releases: [{{name: app, chart: ../../charts/dump, skipSchemaValidation: {skip}}}]\n"
    )
    repo.write("deployments/c/apps/d/deployment.yaml", APP)
    rendered = release(repo.render(), "c", "d", "app")
    assert (rendered.error is None) is (skip == "true")


# --- 7. scalars as Go and helmfile write them --------------------------------------------------


def test_labels_and_numbers_are_formatted_as_go_does(repo: Repo) -> None:
    repo.add_template(
        text="commonLabels: {ratio: 0.1}\nreleases:\n  - name: app\n    chart: ../../charts/dump\n"
        "    labels: {big: 1000000}\n    values: [{printed: '{{ .Values.big }}'}]\n"
    )
    repo.write("deployments/global.values.yaml", "big: 1000000\n")
    repo.write(
        "deployments/c/apps/d/deployment.yaml",
        "apps: [{template: app, labels: {bootstrap: true, small: 0.00001, count: 3}}]\n",
    )
    rendered = release(repo.render(), "c", "d", "app")
    assert {k: rendered.labels[k] for k in ("ratio", "big", "bootstrap", "small", "count")} == {
        "ratio": "0.1",
        "big": "1e+06",
        "bootstrap": "true",
        "small": "1e-05",
        "count": "3",
    }
    assert received_values(repo.render(), "c", "d", "app")["printed"] == "1e+06"


# --- 12. the variant ---------------------------------------------------------------------------


def test_variant_defaults_to_default_and_comes_from_the_settings(repo: Repo) -> None:
    repo.write("deployments/c/apps/d/deployment.yaml", APP)
    snapshot = repo.render()
    assert release(snapshot, "c", "d", "app").labels["variant"] == "default"
    assert received_values(snapshot, "c", "d", "app")["atlas"]["variant"] == "default"

    repo.write(".reviewer.yaml", "variant: blue\n")
    files = render_files(str(repo.root), repo.root.parent / "out")
    (entry,) = json.loads(files[Path("index.json")])["releases"]
    assert entry["labels"]["variant"] == "blue"
    dumped = next(data for path, data in files.items() if "configmap" in path.name)
    assert "variant: blue" in dumped.decode()
