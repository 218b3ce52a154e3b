"""Flux Kustomizations in the `flux` kind, end to end: a git repository built here, the real
kustomize (kubectl), real sops, charts from the loopback HTTP repository, the real CLI."""

from __future__ import annotations

import base64
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agekeys import AgeIdentity, encrypt
from chartrepo import ChartRepository, package
from conftest import GitRepo, git
from flux_repo import app_chart_files, chart_spec, helm_repository, helmrelease, write_chart_dir
from registry import Registry
from test_diff_command import run_diff
from test_secrets import render_out

from reviewer import yamlio
from reviewer.discover import Layout
from reviewer.errors import ExitStatus
from reviewer.sources import registry as source_registry

DB_PASSWORD = "s3cr3t-Pa55word-4711"
NEW_DB_PASSWORD = "n3w-Pa55word-0815"
API_TOKEN = "t0ken-Xy9-Qq77-zzTop"
ADMIN_PASSWORD = "adm1n-Pa55-Qw3rty"
SOURCES = "sources:\n  - {name: prod, kind: flux, paths: [clusters/prod]}\n"


@pytest.fixture
def charts(tmp_path: Path) -> Iterator[ChartRepository]:
    with ChartRepository(tmp_path / "served") as server:
        server.publish(write_chart_dir(tmp_path / "src" / "app", app_chart_files()), "1.0.0")
        yield server


def flux_kustomization(name: str, **spec: Any) -> str:
    """A Flux Kustomization document in flux-system."""
    return yamlio.dump(
        {
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": name, "namespace": "flux-system"},
            "spec": {
                "interval": "10m",
                "prune": True,
                "sourceRef": {"kind": "GitRepository", "name": "flux-system"},
                **spec,
            },
        }
    )


def secret(name: str, namespace: str, data: dict[str, str]) -> dict[str, Any]:
    metadata = {"name": name, "namespace": namespace}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "stringData": data}


def write_repo(
    repo: GitRepo,
    identity: AgeIdentity,
    url: str,
    *,
    replicas: str = "2",
    password: str = DB_PASSWORD,
    settings: dict[str, str] | None = None,
) -> GitRepo:
    """clusters/prod: the `apps` Kustomization, its variables (a ConfigMap and a SOPS Secret);
    apps/: a HelmRepository, a HelmRelease, a ConfigMap and a SOPS Secret, all substituted."""
    repo.write(".reviewer.yaml", SOURCES)
    repo.write(
        "clusters/prod/apps.yaml",
        flux_kustomization(
            "apps",
            path="./apps",
            decryption={"provider": "sops"},
            postBuild={
                "substitute": {"cluster": "prod"},
                "substituteFrom": [
                    {"kind": "ConfigMap", "name": "cluster-vars"},
                    {"kind": "Secret", "name": "cluster-secrets"},
                ],
            },
        ),
    )
    vars_map = {"replicas": replicas}
    repo.write(
        "clusters/prod/vars.yaml",
        yamlio.dump(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "cluster-vars", "namespace": "flux-system"},
                "data": vars_map,
            }
        ),
    )
    cluster = repo.root / "clusters" / "prod"
    encrypt(
        cluster,
        secret("cluster-secrets", "flux-system", {"db_password": password}),
        identity,
        "--encrypted-regex",
        "^(data|stringData)$",
        name="cluster-secrets.yaml",
    )
    # Read by the HelmRelease planner straight from its file (the redacted twin plan runs).
    encrypt(
        cluster,
        secret("admin", "apps", {"password": ADMIN_PASSWORD}),
        identity,
        "--encrypted-regex",
        "^(data|stringData)$",
        name="admin-secret.yaml",
    )
    apps = repo.root / "apps"
    apps.mkdir(exist_ok=True)
    encrypt(
        apps,
        secret("api", "apps", {"token": API_TOKEN}),
        identity,
        "--encrypted-regex",
        "^(data|stringData)$",
        name="api-secret.yaml",
    )
    repo.write("apps/repo.yaml", helm_repository("charts", url))
    repo.write(
        "apps/web.yaml",
        helmrelease(
            "web",
            chart=chart_spec("app", "charts"),
            valuesFrom=[
                {"kind": "Secret", "name": "api", "valuesKey": "token", "targetPath": "api.token"},
                {"kind": "Secret", "name": "admin", "valuesKey": "password", "targetPath": "admin"},
            ],
            values={"replicas": "${replicas}", "cluster": "${cluster}", "db": "${db_password}"},
        ).replace("'${replicas}'", "${replicas}"),
    )
    repo.write(
        "apps/settings.yaml",
        yamlio.dump(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "settings", "namespace": "apps"},
                "data": settings
                or {
                    "cluster": "${cluster}",
                    "region": "${region:=eu-west-1}",
                    "literal": "$${cluster}",
                    "upper": "${cluster^^}",
                    "dsn": "postgres://app:${db_password}@db:5432/app",
                },
            }
        ),
    )
    return repo


@pytest.fixture
def fleet(tmp_path: Path, charts: ChartRepository, age_key: AgeIdentity) -> GitRepo:
    """The repository committed on main, checked out on `feature`."""
    repo = write_repo(GitRepo(tmp_path / "fleet"), age_key, charts.url)
    repo.commit("fleet")
    git(repo.root, "checkout", "--quiet", "-b", "feature")
    return repo


def diff(repo: GitRepo, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    args = ["--repo", str(repo.root), "--base", "main", "--allow-loopback-charts", *extra]
    return run_diff(args, capsys)


def secrets_shown(text: str) -> list[str]:
    forms = [DB_PASSWORD, NEW_DB_PASSWORD, API_TOKEN, ADMIN_PASSWORD]
    forms += [base64.b64encode(form.encode()).decode() for form in forms]
    return [form for form in forms if form in text]


def test_render_builds_the_kustomization_with_substitution_defaults_and_escapes(
    fleet: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, text = render_out(fleet, tmp_path / "out", "--allow-loopback-charts")
    err = capsys.readouterr().err
    assert code == ExitStatus.OK, err
    # The Kustomization's objects are one object set: prod/flux-system/apps/kustomization.
    written = tmp_path / "out" / "prod" / "flux-system_apps" / "kustomization"
    settings = yamlio.load_mapping(
        (written / "configmap-settings.yaml").read_text(), source="configmap-settings.yaml"
    )
    assert settings["data"]["cluster"] == "prod"
    assert settings["data"]["region"] == "eu-west-1"  # the default
    assert settings["data"]["literal"] == "${cluster}"  # `$${x}` is an escape
    assert settings["data"]["upper"] == "PROD"
    assert settings["metadata"]["labels"]["kustomize.toolkit.fluxcd.io/name"] == "apps"
    # The HelmRelease the Kustomization built is rendered as a release: the chart's objects.
    assert "helm.toolkit.fluxcd.io/name: web" in text
    assert secrets_shown(text + err) == []


def test_a_values_change_through_a_variable_is_a_release_change_and_no_secret_shows(
    fleet: GitRepo,
    age_key: AgeIdentity,
    charts: ChartRepository,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_repo(fleet, age_key, charts.url, replicas="3", password=NEW_DB_PASSWORD)
    fleet.commit("scale and rotate")
    code, out, err = diff(fleet, capsys, "--format", "json")
    assert code == ExitStatus.OK, err
    report = json.loads(out)
    changed = {
        f"{r['cluster']}/{r['deployment']}/{r['release']}": r["status"]
        for r in report["releases"]
        if r["status"] != "unchanged"
    }
    # The rotated password reaches the ConfigMap of the object set and the release's values.
    assert changed == {"prod/apps/web": "changed", "prod/flux-system/apps/kustomization": "changed"}
    [web] = [r for r in report["releases"] if r["release"] == "web"]
    changes = {entry["path"]: entry["change"] for entry in web["values"]}
    assert changes["replicas"] == "replicas: 2 → 3"
    assert "REDACTED" in changes["db"]
    assert secrets_shown(out + err) == []
    for fmt in ("text", "markdown"):
        code, out, err = diff(fleet, capsys, "--format", fmt)
        assert code == ExitStatus.OK, err
        assert "prod/apps/web" in out and "flux-system/apps/kustomization" in out
        assert secrets_shown(out + err) == []


def test_a_strict_substitution_failure_names_the_file_and_variable(
    fleet: GitRepo,
    age_key: AgeIdentity,
    charts: ChartRepository,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_repo(fleet, age_key, charts.url, settings={"zone": "${zone}", "pw": "${db_password}"})
    fleet.commit("use an undefined variable")
    code, out, err = diff(fleet, capsys, "--format", "json")
    assert code == ExitStatus.RENDER_FAILED, err
    errors = {
        f"{e['cluster']}/{e['deployment']}/{e['release']}": e["message"]
        for e in json.loads(out)["head"]["errors"]
    }
    assert errors["prod/flux-system/apps/kustomization"] == (
        "clusters/prod/apps.yaml: spec.postBuild: post build failed for ConfigMap/settings: "
        'variable not set (strict mode): "zone"'
    )
    # The HelmRelease below the failed Kustomization fails with it; it is not removed.
    assert errors["prod/apps/web"] == (
        "not rendered: Kustomization flux-system/apps failed (clusters/prod/apps.yaml)"
    )
    assert secrets_shown(out + err) == []
    code, out, err = diff(fleet, capsys)
    assert code == ExitStatus.RENDER_FAILED
    assert 'variable not set (strict mode): "zone"' in out + err
    assert secrets_shown(out + err) == []


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {"clusters/prod/apps.yaml": flux_kustomization("apps", path="../outside")},
            "clusters/prod/apps.yaml: spec.path: path leaves the repository",
        ),
        (
            {
                "clusters/prod/a.yaml": flux_kustomization(
                    "a", path="./apps", dependsOn=[{"name": "b"}]
                ),
                "clusters/prod/b.yaml": flux_kustomization(
                    "b", path="./apps", dependsOn=[{"name": "a"}]
                ),
            },
            "clusters/prod/a.yaml: spec.dependsOn: dependency loop: "
            "flux-system/a → flux-system/b → flux-system/a",
        ),
    ],
    ids=["path-escapes", "dependency-loop"],
)
def test_a_broken_kustomization_is_an_error_naming_file_and_field(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    files: dict[str, str],
    expected: str,
) -> None:
    repo = GitRepo(tmp_path / "fleet")
    repo.write(".reviewer.yaml", SOURCES)
    repo.write("apps/settings.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "x.yaml").write_text("apiVersion: v1\nkind: ConfigMap\n")
    for name, text in files.items():
        repo.write(name, text)
    code, _ = render_out(repo, tmp_path / "out")
    err = capsys.readouterr().err
    assert code == ExitStatus.RENDER_FAILED
    assert expected in err


EXAMPLES = Path(__file__).parent.parent / "examples"
DEMO_PASSWORD = "demo-Pa55word-for-web"
"""The example's SOPS Secret value (encrypted for the public demo key)."""


def test_the_flux_example_renders_offline_and_its_demo_shows_the_release_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SOPS_AGE_KEY_FILE", str(EXAMPLES / "fleet" / "demo-age-key.txt"))
    spec = importlib.util.spec_from_file_location("demo", EXAMPLES / "demo.py")
    assert spec is not None and spec.loader is not None
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    repo = GitRepo(demo.build_demo_repo(tmp_path / "flux", "flux"))
    code, out, err = diff(repo, capsys, "--format", "json")
    assert code == ExitStatus.OK, err
    report = json.loads(out)
    assert {
        f"{r['cluster']}/{r['deployment']}/{r['release']}": r["status"] for r in report["releases"]
    } == {
        "production/flux-system/apps/kustomization": "unchanged",
        "production/flux-system/flux-system/kustomization": "changed",
        "production/shop/web": "changed",
    }
    assert report["base"]["errors"] == report["head"]["errors"] == []
    [web] = [r for r in report["releases"] if r["release"] == "web"]
    changes = {entry["path"]: entry["change"] for entry in web["values"]}
    assert changes["replicas"] == "replicas: 2 → 3"
    code, out, err = diff(repo, capsys)
    assert code == ExitStatus.OK, err
    assert "spec.replicas: 2 → 3" in out
    assert DEMO_PASSWORD not in out + err
    assert base64.b64encode(DEMO_PASSWORD.encode()).decode() not in out + err
    # Rendered offline: the cluster's variables, a default and an escape substituted.
    code, text = render_out(repo, tmp_path / "out")
    assert code == ExitStatus.OK
    assert "host: web.shop.example.com" in text
    assert "value: eu-west-1" in text
    assert "value: Hello from ${HOSTNAME}" in text
    assert DEMO_PASSWORD not in text


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """A loopback OCI registry with charts/app 1.0.0 and 1.1.0."""
    work = tmp_path_factory.mktemp("oci")
    with Registry(work / "registry") as server:
        source = write_chart_dir(work / "src" / "app", app_chart_files())
        for version in ("1.0.0", "1.1.0"):
            server.push(package(source, work / "pkg", version))
        yield server


def test_a_helmrelease_file_a_kustomization_builds_is_planned_once_as_built(
    tmp_path: Path, registry: Registry, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = GitRepo(tmp_path / "fleet")
    # apps/ is below the source's paths too: its files belong to the Kustomization all the same.
    sources = "sources:\n  - {name: prod, kind: flux, paths: [clusters, apps]}\n"
    repo.write(".reviewer.yaml", sources)
    repo.write(
        "clusters/prod/apps.yaml",
        flux_kustomization(
            "apps",
            path="./apps",
            targetNamespace="team",
            postBuild={"substitute": {"chart_range": "~1.0", "replicas": "5"}},
        ),
    )
    repo.write("apps/kustomization.yaml", "resources: [oci.yaml, web.yaml]\n")
    repo.write(
        "apps/oci.yaml",
        yamlio.dump(
            {
                "apiVersion": "source.toolkit.fluxcd.io/v1",
                "kind": "OCIRepository",
                "metadata": {"name": "app-oci"},
                "spec": {"url": f"{registry.url}/charts/app", "ref": {"semver": "${chart_range}"}},
            }
        ),
    )
    repo.write(
        "apps/web.yaml",
        helmrelease(
            "web",
            chartRef={"kind": "OCIRepository", "name": "app-oci"},
            values={"replicas": "${replicas}"},
        ).replace("'${replicas}'", "${replicas}"),
    )
    # Left out of apps/kustomization.yaml: Flux never applies it, so it is not planned.
    repo.write("apps/draft.yaml", helmrelease("draft", chart=chart_spec("app", "nowhere")))
    code, text = render_out(repo, tmp_path / "out", "--allow-loopback-charts")
    err = capsys.readouterr().err
    assert code == ExitStatus.OK, err
    index = json.loads((tmp_path / "out" / "index.json").read_text())
    releases = {
        f"{r['cluster']}/{r['deployment']}/{r['release']}": r["version"] for r in index["releases"]
    }
    # The OCIRepository came from the build (namespace `team`, range substituted).
    assert releases == {"prod/team/web": "1.0.0", "prod/flux-system/apps/kustomization": ""}
    assert "replicas: 5" in text


def test_without_a_key_a_kustomization_secret_becomes_placeholders_and_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("SOPS_AGE_KEY", "SOPS_AGE_KEY_FILE", "SOPS_AGE_KEY_CMD", "CI", "GITHUB_ACTIONS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no key in sops' default places either
    repo = GitRepo(tmp_path / "fleet")
    repo.write(".reviewer.yaml", SOURCES)
    repo.write(
        "clusters/prod/apps.yaml",
        flux_kustomization("apps", path="./apps", decryption={"provider": "sops"}),
    )
    (repo.root / "apps").mkdir()
    encrypt(
        repo.root / "apps",
        secret("api", "apps", {"token": API_TOKEN}),
        AgeIdentity.generate(),
        "--encrypted-regex",
        "^(data|stringData)$",
        name="api.yaml",
    )
    code, text = render_out(repo, tmp_path / "out")
    err = capsys.readouterr().err
    assert code == ExitStatus.OK, err
    assert "clusters/prod/apps.yaml Secret/api" in err  # named in the not-decrypted warning
    assert "kind: Secret" in text and API_TOKEN not in text + err


def test_detection_finds_one_source_per_bootstrapped_cluster(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "fleet")
    for cluster in ("production", "staging"):
        repo.write(
            f"clusters/{cluster}/flux-system/gotk-sync.yaml",
            flux_kustomization("flux-system", path=f"./clusters/{cluster}"),
        )
        repo.write(
            f"clusters/{cluster}/apps.yaml",
            flux_kustomization("apps", path=f"./apps/{cluster}"),
        )
        repo.write(
            f"clusters/{cluster}/infrastructure.yaml",
            flux_kustomization("infrastructure", path="./infrastructure"),
        )
        repo.write(f"apps/{cluster}/kustomization.yaml", "resources: [../base]\n")
    repo.write("apps/base/kustomization.yaml", "resources: [web.yaml]\n")
    repo.write("apps/base/web.yaml", helmrelease("web", chart=chart_spec("app", "charts")))
    repo.write("infrastructure/kustomization.yaml", "resources: [namespace.yaml]\n")
    repo.write("infrastructure/namespace.yaml", "apiVersion: v1\nkind: Namespace\n")
    # apps/ and infrastructure/ are built by the clusters' Kustomizations: no sources of
    # their own (as flux or manifests), where their bases would be reviewed unsubstituted.
    assert source_registry.describe(source_registry.detect(repo.root, Layout()), detected=True) == (
        "sources (detected): flux 'production': clusters/production/; "
        "flux 'staging': clusters/staging/"
    )


def test_a_failure_of_a_kustomization_another_one_builds_names_its_own_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = GitRepo(tmp_path / "fleet")
    repo.write(".reviewer.yaml", SOURCES)
    repo.write(
        "clusters/prod/flux-system/gotk-sync.yaml",
        flux_kustomization("flux-system", path="./clusters/prod"),
    )
    repo.write(
        "clusters/prod/apps.yaml",
        flux_kustomization("apps", path="./apps", postBuild={"substitute": {"a": "1"}}),
    )
    repo.write(
        "apps/settings.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\ndata: {zone: '${zone}'}\n",
    )
    code, _ = render_out(repo, tmp_path / "out")
    err = capsys.readouterr().err
    assert code == ExitStatus.RENDER_FAILED
    assert (
        "clusters/prod/apps.yaml: spec.postBuild: post build failed for ConfigMap/s: "
        'variable not set (strict mode): "zone"'
    ) in err
