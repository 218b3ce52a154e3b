"""Nested releases end to end: a bootstrap chart's HelmReleases shown under it by `diff`.

The bootstrap chart (loopback HTTP repository) renders a HelmRepository and a HelmRelease
for the middle chart; the middle chart renders an OCIRepository (loopback OCI registry)
and a HelmRelease for the leaf chart. Every level is rendered by the real Helm engine.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agekeys import AgeIdentity, encrypt
from chartrepo import ChartRepository, package, write_chart
from conftest import DUMP_CHART, GitRepo, Repo, git, release
from flux_repo import chart_spec, helm_repository, helmrelease
from registry import Registry
from test_diff_command import run_diff
from test_secrets import render_out

from reviewer import config
from reviewer.errors import ConfigError, ExitStatus
from reviewer.nested_render import NestedOptions
from reviewer.sources.nested import SEPARATOR as SEP

BOOTSTRAP = {
    "templates/sources.yaml": """\
        apiVersion: source.toolkit.fluxcd.io/v1
        kind: HelmRepository
        metadata:
          name: middle-charts
        spec:
          url: {{ .Values.url }}
        """,
    "templates/middle.yaml": """\
        apiVersion: helm.toolkit.fluxcd.io/v2
        kind: HelmRelease
        metadata:
          name: middle
        spec:
          chart:
            spec:
              chart: middle
              version: 1.0.0
              sourceRef: {kind: HelmRepository, name: middle-charts}
          values:
            oci: {{ .Values.oci }}
            greeting: {{ .Values.greeting | quote }}
        ---
        apiVersion: helm.toolkit.fluxcd.io/v2
        kind: HelmRelease
        metadata:
          name: elsewhere
        spec:
          chart:
            spec:
              chart: other
              sourceRef: {kind: HelmRepository, name: nowhere}
        """,
}

MIDDLE = {
    "templates/leaf.yaml": """\
        apiVersion: source.toolkit.fluxcd.io/v1
        kind: OCIRepository
        metadata:
          name: leaf
        spec:
          url: {{ .Values.oci }}/charts/leaf
          ref: {tag: 1.0.0}
        ---
        apiVersion: helm.toolkit.fluxcd.io/v2
        kind: HelmRelease
        metadata:
          name: leaf
        spec:
          chartRef: {kind: OCIRepository, name: leaf}
          values:
            greeting: {{ .Values.greeting | quote }}
        """,
}

LEAF = {
    "templates/cm.yaml": """\
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: {{ .Release.Name }}-greeting
        data:
          greeting: {{ .Values.greeting | quote }}
          shout: {{ .Values.greeting | upper | quote }}
        """,
}

# A chart whose output deploys itself again: only the depth limit stops it.
LOOP = {
    "templates/loop.yaml": """\
        apiVersion: source.toolkit.fluxcd.io/v1
        kind: HelmRepository
        metadata:
          name: loop-charts
        spec:
          url: {{ .Values.url }}
        ---
        apiVersion: helm.toolkit.fluxcd.io/v2
        kind: HelmRelease
        metadata:
          name: {{ .Release.Name }}-x
        spec:
          chart:
            spec:
              chart: loop
              sourceRef: {kind: HelmRepository, name: loop-charts}
          values:
            url: {{ .Values.url }}
        """,
}

# A chart that hands a value to its inner release through a Secret it renders.
SECRET_BOOTSTRAP = {
    "templates/leaf.yaml": """\
        apiVersion: v1
        kind: Secret
        metadata:
          name: leaf-values
        stringData:
          values.yaml: |
            greeting: {{ .Values.token }}
        ---
        apiVersion: source.toolkit.fluxcd.io/v1
        kind: OCIRepository
        metadata:
          name: leaf
        spec:
          url: {{ .Values.oci }}/charts/leaf
          ref: {tag: 1.0.0}
        ---
        apiVersion: helm.toolkit.fluxcd.io/v2
        kind: HelmRelease
        metadata:
          name: leaf
        spec:
          chartRef: {kind: OCIRepository, name: leaf}
          valuesFrom:
            - {kind: Secret, name: leaf-values}
        """,
}

PASSWORD = "Sup3r-s3cret-Pa55-4711"
TOKEN = "tok3n-from-the-parent-9917"


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ChartRepository, Registry]]:
    work = tmp_path_factory.mktemp("nested-servers")
    with ChartRepository(work / "http") as http, Registry(work / "oci") as oci:
        for name, files in (
            ("bootstrap", BOOTSTRAP),
            ("middle", MIDDLE),
            ("loop", LOOP),
            ("secret-bootstrap", SECRET_BOOTSTRAP),
        ):
            http.publish(write_chart(work / "src", name, "1.0.0", files))
        oci.push(package(write_chart(work / "src", "leaf", "1.0.0", LEAF), work / "pkg"))
        yield http, oci


def write_fleet(repo: GitRepo, http: ChartRepository, oci: Registry, *, greeting: str) -> None:
    """A Flux repository whose one HelmRelease installs the bootstrap chart."""
    repo.write("clusters/prod/repo.yaml", helm_repository("charts", http.url))
    values = {"url": http.url, "oci": oci.url, "greeting": greeting}
    repo.write(
        "clusters/prod/boot.yaml",
        helmrelease("boot", chart=chart_spec("bootstrap", "charts"), values=values),
    )


def diff(repo: GitRepo, capsys: pytest.CaptureFixture[str], output_format: str) -> str:
    args = ["--repo", str(repo.root), "--base", "main", "--allow-loopback-charts"]
    code, out, err = run_diff([*args, "--format", output_format], capsys)
    assert code in (ExitStatus.OK, ExitStatus.RENDER_FAILED), err
    return out


@pytest.fixture
def fleet(tmp_path: Path, servers: tuple[ChartRepository, Registry]) -> GitRepo:
    http, oci = servers
    repo = GitRepo(tmp_path / "fleet")
    write_fleet(repo, http, oci, greeting="hello")
    repo.write(".reviewer.yaml", "sources:\n  - {name: prod, kind: flux, paths: [clusters]}\n")
    repo.commit("fleet")
    git(repo.root, "checkout", "--quiet", "-b", "feature")
    return repo


LEAF_ID = f"prod/apps/boot{SEP}apps/middle{SEP}apps/leaf"


def test_a_change_in_the_innermost_level_is_shown_under_its_parent_chain(
    fleet: GitRepo, servers: tuple[ChartRepository, Registry], capsys: pytest.CaptureFixture[str]
) -> None:
    write_fleet(fleet, *servers, greeting="bonjour")
    fleet.commit("greet in French")

    report = json.loads(diff(fleet, capsys, "json"))
    releases = {f"{r['cluster']}/{r['deployment']}/{r['release']}": r for r in report["releases"]}
    assert {rid: r["status"] for rid, r in releases.items()} == {
        "prod/apps/boot": "changed",
        f"prod/apps/boot{SEP}apps/middle": "changed",
        LEAF_ID: "changed",
    }
    leaf = releases[LEAF_ID]
    assert leaf["parent"] == f"boot{SEP}apps/middle"
    assert leaf["chain"] == ["boot", "apps/middle", "apps/leaf"]
    assert leaf["chart"] == {"base": "leaf-1.0.0", "head": "leaf-1.0.0"}
    [configmap] = leaf["resources"]
    assert configmap["name"] == "leaf-greeting"
    assert "-  greeting: hello\n" in configmap["diff"]
    assert "+  greeting: bonjour\n" in configmap["diff"]
    assert "+  shout: BONJOUR" in configmap["diff"]
    assert "parent" not in releases["prod/apps/boot"]
    # The HelmRelease whose chart resolves nowhere stays a plain object of the bootstrap.
    boot_objects = {r["name"] for r in releases["prod/apps/boot"]["resources"]}
    assert boot_objects == {"middle"}  # `elsewhere` is unchanged: listed nowhere as a release
    assert not any("elsewhere" in rid for rid in releases)

    text = diff(fleet, capsys, "text")
    assert LEAF_ID in text
    assert text.index(f"prod/apps/boot{SEP}apps/middle") < text.index(LEAF_ID)
    assert "greeting: bonjour" in text

    markdown = diff(fleet, capsys, "markdown")
    assert f"boot{SEP}apps/middle{SEP}apps/leaf" in markdown
    assert "greeting: bonjour" in markdown


def test_expansion_past_the_depth_limit_is_an_error_naming_the_chain(
    fleet: GitRepo, servers: tuple[ChartRepository, Registry], capsys: pytest.CaptureFixture[str]
) -> None:
    http, _ = servers
    fleet.write(
        "clusters/prod/loop.yaml",
        helmrelease("loop", chart=chart_spec("loop", "charts"), values={"url": http.url}),
    )
    fleet.commit("a chart that deploys itself")

    args = ["--repo", str(fleet.root), "--base", "main", "--allow-loopback-charts"]
    code, out, err = run_diff([*args, "--format", "json"], capsys)
    assert code == ExitStatus.RENDER_FAILED, err
    report = json.loads(out)
    statuses = {r["release"]: r["status"] for r in report["releases"]}
    assert statuses["loop"] == "added"
    assert statuses[f"loop{SEP}apps/loop-x"] == "added"
    assert statuses[f"loop{SEP}apps/loop-x{SEP}apps/loop-x-x{SEP}apps/loop-x-x-x"] == "added"
    [failure] = report["head"]["errors"]
    assert (
        failure["release"]
        == f"loop{SEP}apps/loop-x{SEP}apps/loop-x-x{SEP}apps/loop-x-x-x{SEP}apps/loop-x-x-x-x"
    )
    assert (
        f"nested releases deeper than 3 levels: loop{SEP}apps/loop-x{SEP}apps/loop-x-x"
        f"{SEP}apps/loop-x-x-x{SEP}apps/loop-x-x-x-x"
    ) in failure["message"]
    # The bootstrap's own nested releases are untouched by the loop's failure.
    assert statuses[f"boot{SEP}apps/middle{SEP}apps/leaf"] == "unchanged"


def test_expansion_can_be_turned_off(
    fleet: GitRepo, servers: tuple[ChartRepository, Registry], capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write(
        ".reviewer.yaml",
        "sources:\n  - {name: prod, kind: flux, paths: [clusters]}\nnested: {expand: false}\n",
    )
    fleet.commit("no nesting")
    git(fleet.root, "checkout", "--quiet", "main")
    git(fleet.root, "merge", "--quiet", "feature")
    git(fleet.root, "checkout", "--quiet", "-b", "change")
    write_fleet(fleet, *servers, greeting="bonjour")
    fleet.commit("greet in French")

    report = json.loads(diff(fleet, capsys, "json"))
    assert [r["release"] for r in report["releases"]] == ["boot"]


def test_an_inner_value_from_a_sops_secret_stays_redacted(
    tmp_path: Path,
    servers: tuple[ChartRepository, Registry],
    age_key: AgeIdentity,
    capsys: pytest.CaptureFixture[str],
) -> None:
    http, oci = servers
    repo = GitRepo(tmp_path / "fleet")
    write_fleet(repo, http, oci, greeting="hello")
    repo.write(".reviewer.yaml", "sources:\n  - {name: prod, kind: flux, paths: [clusters]}\n")
    repo.commit("fleet")
    git(repo.root, "checkout", "--quiet", "-b", "feature")
    secret: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "greeting", "namespace": "apps"},
        "stringData": {"greeting": PASSWORD},
    }
    directory = repo.root / "clusters" / "prod"
    encrypt(directory, secret, age_key, "--encrypted-regex", "^(data|stringData)$", name="s.yaml")
    values = {"url": http.url, "oci": oci.url}
    reference = {"kind": "Secret", "name": "greeting", "valuesKey": "greeting"}
    repo.write(
        "clusters/prod/boot.yaml",
        helmrelease(
            "boot",
            chart=chart_spec("bootstrap", "charts"),
            values=values,
            valuesFrom=[{**reference, "targetPath": "greeting"}],
        ),
    )
    repo.commit("greet with a secret")

    outputs = [diff(repo, capsys, name) for name in ("json", "text", "markdown")]
    for output in outputs:
        assert PASSWORD not in output
        assert "Pa55" not in output and "PA55" not in output
    report = json.loads(outputs[0])
    leaf = next(
        r for r in report["releases"] if r["release"] == f"boot{SEP}apps/middle{SEP}apps/leaf"
    )
    assert leaf["status"] == "changed"
    [configmap] = leaf["resources"]
    # Derived in the innermost chart (upper) from a value its grandparent read from SOPS.
    assert "+  greeting: REDAC-REDACT-REDA-REDA" in configmap["diff"]
    assert "+  shout: REDAC-REDACT-REDA-REDA" in configmap["diff"]


def test_inner_values_from_a_secret_of_the_parent_output_stay_masked(
    tmp_path: Path, servers: tuple[ChartRepository, Registry], capsys: pytest.CaptureFixture[str]
) -> None:
    http, oci = servers
    repo = GitRepo(tmp_path / "fleet")
    repo.write("clusters/prod/repo.yaml", helm_repository("charts", http.url))
    values = {"oci": oci.url, "token": TOKEN}
    repo.write(
        "clusters/prod/boot.yaml",
        helmrelease("boot", chart=chart_spec("secret-bootstrap", "charts"), values=values),
    )
    code, text = render_out(repo, tmp_path / "out", "--allow-loopback-charts")
    assert code == ExitStatus.OK, capsys.readouterr().err
    [leaf] = (tmp_path / "out").rglob("configmap-leaf-greeting.yaml")
    shown = leaf.read_text()
    # The leaf rendered, but what it derived from the parent's Secret is in twin form.
    assert "greeting: REDAC-REDA-RED-REDACT-REDA" in shown
    assert "shout: REDAC-REDA-RED-REDACT-REDA" in shown
    assert TOKEN not in text and TOKEN.upper() not in text


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("{depth: 0}", "nested.depth: must be at least 1"),
        ("{expand: 'no'}", "nested.expand: must be true or false"),
        ("{deep: 2}", "nested.deep: unknown field; allowed: expand, depth"),
    ],
)
def test_nested_settings_are_checked(tmp_path: Path, setting: str, message: str) -> None:
    (tmp_path / ".reviewer.yaml").write_text(f"nested: {setting}\n")
    with pytest.raises(ConfigError) as caught:
        config.load(tmp_path)
    assert message in caught.value.render()
    assert ".reviewer.yaml" in caught.value.render()


def test_nested_settings_default_to_expanding_three_levels(tmp_path: Path) -> None:
    (tmp_path / ".reviewer.yaml").write_text("nested: {depth: 5}\n")
    assert config.load(tmp_path).nested == NestedOptions(expand=True, depth=5)
    assert config.RepoConfig().nested == NestedOptions(expand=True, depth=3)


def test_a_hierarchy_release_deploying_a_chart_of_this_repository(repo: Repo) -> None:
    """Any kind of release expands: here a hierarchy release whose chart deploys a
    HelmRelease of a chart kept in the repository (through the fleet's GitRepository)."""
    repo.add_chart("charts/boot", {**DUMP_CHART, "templates/leaf.yaml": HIERARCHY_BOOTSTRAP})
    repo.add_chart("charts/leaf", {"Chart.yaml": "apiVersion: v2\nname: leaf\nversion: 2.0.0\n"})
    repo.write("charts/leaf/templates/cm.yaml", LEAF["templates/cm.yaml"])
    repo.write("flux/fleet.yaml", FLEET_SOURCE)
    repo.add_template("boot", "releases:\n  - name: boot\n    chart: ../../charts/boot\n")
    repo.write("deployments/c/apps/a/deployment.yaml", "apps: [{template: boot}]\n")

    snapshot = repo.render()

    # `orphan` names a chart source found nowhere: a plain object of `boot`, not a release.
    boot = release(snapshot, "c", "a", "boot")
    assert {(r.key.kind, r.key.name) for r in boot.resources} >= {
        ("HelmRelease", "leaf"),
        ("HelmRelease", "orphan"),
    }
    assert [r.id.release for r in snapshot.releases] == [
        "boot",
        f"boot{SEP}apps/broken",
        f"boot{SEP}apps/leaf",
    ]
    # One inner release that fails never hides its siblings; its error names it.
    broken = release(snapshot, "c", "a", f"boot{SEP}apps/broken")
    assert broken.error is not None
    assert broken.error.startswith(
        f"nested release boot{SEP}apps/broken: chart 'charts/missing': chart not found"
    )
    assert "/tmp" not in broken.error  # the checkout's temporary path is not shown
    leaf = release(snapshot, "c", "a", f"boot{SEP}apps/leaf")
    assert leaf.error is None, leaf.error
    assert (leaf.chart, leaf.version) == ("leaf", "2.0.0")
    [configmap] = leaf.resources
    assert configmap.body["data"] == {
        "greeting": "from the hierarchy",
        "shout": "FROM THE HIERARCHY",
    }
    assert configmap.body["metadata"]["labels"] == {
        "helm.toolkit.fluxcd.io/name": "leaf",
        "helm.toolkit.fluxcd.io/namespace": "apps",
    }


HIERARCHY_BOOTSTRAP = """\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: leaf
  namespace: apps
spec:
  chart:
    spec:
      chart: ./charts/leaf
      sourceRef: {kind: GitRepository, name: fleet, namespace: flux-system}
  values:
    greeting: from the hierarchy
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: orphan
spec:
  chart:
    spec:
      chart: orphan
      sourceRef: {kind: HelmRepository, name: nowhere}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: broken
  namespace: apps
spec:
  chart:
    spec:
      chart: ./charts/missing
      sourceRef: {kind: GitRepository, name: fleet, namespace: flux-system}
"""

FLEET_SOURCE = """\
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: fleet
  namespace: flux-system
spec:
  url: https://git.example.invalid/fleet
"""
