"""Flux HelmReleases rendered as helm-controller would install them (docs/sources.md)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agekeys import AgeIdentity, encrypt, sops_decoder
from chartrepo import ChartRepository, package
from conftest import Repo
from flux_repo import (
    app_chart_files,
    chart_spec,
    config_map,
    dumped_values,
    helm_repository,
    helmrelease,
    objects,
    plan,
    render,
    write_chart_dir,
)
from registry import Registry

from reviewer import yamlio
from reviewer.helmreleases import names, strvals
from reviewer.helmreleases.planner import (
    CRD_INSTALL_LABEL,
    CRD_UPGRADE_LABEL,
    FluxInputs,
    plan_helmreleases,
)
from reviewer.model import ReleaseId
from reviewer.redact import Redactor, replacement_map
from reviewer.sops import STRING_PLACEHOLDER, KeylessMode
from reviewer.values import NoSecrets

# --- release names ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # helm-controller internal/release/name_test.go
        ("release-name", "release-name"),
        (
            "release-name-with-very-long-name-which-is-longer-than-53-characters",
            "release-name-with-very-long-name-which-i-788ca0d0d7b0",
        ),
        (
            "another-release-name-with-very-long-name-which-is-longer-than-53-characters",
            "another-release-name-with-very-long-name-7e72150d5a36",
        ),
        ("", ""),
        ("x" * 53, "x" * 53),
    ],
)
def test_release_names_are_shortened_as_helm_controller_does(name: str, expected: str) -> None:
    assert names.shorten(name) == expected
    assert len(names.shorten(name)) <= 53


# --- targetPath: Helm --set semantics ------------------------------------------------


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("outer.inner", "value", {"outer": {"inner": "value"}}),
        ("name", "{a,b,c}", {"name": ["a", "b", "c"]}),
        ("name", r"value1\,value2", {"name": "value1,value2"}),
        ("a.b", "true", {"a": {"b": True}}),
        ("a.b", '"true"', {"a": {"b": "true"}}),
        ("a.b", "'42'", {"a": {"b": "42"}}),
        ("a.b", "42", {"a": {"b": 42}}),
        ("a.b", "0042", {"a": {"b": "0042"}}),
        ("a.b", "null", {"a": {"b": None}}),
        ("merge.at[2]", "value", {"merge": {"at": [None, None, "value"]}}),
        ("list[1].name", "x", {"list": [None, {"name": "x"}]}),
        (
            r"nodeSelector.kubernetes\.io/role",
            "master",
            {"nodeSelector": {"kubernetes.io/role": "master"}},
        ),
        ("a", "x,b=y", {"a": "x", "b": "y"}),
    ],
)
def test_target_paths_type_values_like_helm_set(path: str, value: str, expected: Any) -> None:
    values: dict[str, Any] = {}
    strvals.replace_path_value(values, path, value)
    assert values == expected


def test_literal_target_paths_keep_the_value_verbatim() -> None:
    values: dict[str, Any] = {}
    strvals.replace_path_literal(values, r"config\.d.x", "{a,b}=c\\d")
    assert values == {"config.d": {"x": "{a,b}=c\\d"}}


@pytest.mark.parametrize("path", ["a[-1]", "a[x]", "a.b.", "a["])
def test_bad_target_paths_are_errors(path: str) -> None:
    with pytest.raises(strvals.SetError):
        strvals.replace_path_value({}, path, "v")


# --- fixtures --------------------------------------------------------------------------


@pytest.fixture
def charts(tmp_path: Path) -> Iterator[ChartRepository]:
    """An HTTP chart repository with app 1.0.0, 1.2.0, 1.10.0 and 2.0.0-rc.1."""
    with ChartRepository(tmp_path / "served") as server:
        source = write_chart_dir(tmp_path / "src" / "app", app_chart_files())
        server.publish(source, "1.0.0", "1.2.0", "1.10.0", "2.0.0-rc.1")
        yield server


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """A loopback OCI registry with charts/app 1.0.0, 1.1.0 and 2.0.0."""
    work = tmp_path_factory.mktemp("oci")
    with Registry(work / "registry") as server:
        source = write_chart_dir(work / "src" / "app", app_chart_files())
        for version in ("1.0.0", "1.1.0", "2.0.0"):
            server.push(package(source, work / "pkg", version))
        yield server


@pytest.fixture
def flux(tmp_path: Path) -> Repo:
    return Repo(tmp_path / "repo")


def chart_version(snapshot: Any) -> list[str]:
    return [release.version for release in snapshot.releases]


# --- charts and versions -------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "chosen"),
    [
        (None, "1.10.0"),
        ("*", "1.10.0"),
        ("1.0.0", "1.0.0"),
        ("~1.2", "1.2.0"),
        (">=1.0.0 <1.10.0", "1.2.0"),
        (">=2.0.0-0", "2.0.0-rc.1"),
    ],
)
def test_chart_versions_resolve_as_source_controller_does(
    flux: Repo, charts: ChartRepository, version: str | None, chosen: str
) -> None:
    extra = {"version": version} if version else {}
    flux.write("clusters/prod/repo.yaml", helm_repository("charts", charts.url))
    flux.write(
        "clusters/prod/app.yaml", helmrelease("web", chart=chart_spec("app", "charts", **extra))
    )
    snapshot = render(flux, plan(flux))
    assert chart_version(snapshot) == [chosen]


def test_release_name_namespace_and_origin_labels(flux: Repo, charts: ChartRepository) -> None:
    flux.write("clusters/prod/repo.yaml", helm_repository("charts", charts.url))
    flux.write(
        "clusters/prod/app.yaml",
        helmrelease("web", chart=chart_spec("app", "charts"), targetNamespace="frontend"),
    )
    planned = plan(flux)
    assert [r.id for r in planned.releases] == [ReleaseId("flux", "apps", "frontend-web")]
    found = objects(render(flux, planned))
    deployment = found["Deployment/frontend-web"].body
    assert deployment["metadata"]["namespace"] == "frontend"
    assert deployment["metadata"]["labels"] == {
        "app": "frontend-web",
        "helm.toolkit.fluxcd.io/name": "web",
        "helm.toolkit.fluxcd.io/namespace": "apps",
    }
    # Only metadata: selectors and pod templates are left alone.
    assert "labels" not in deployment["spec"]["template"].get("metadata", {})


def test_long_release_names_are_shortened_in_the_render(
    flux: Repo, charts: ChartRepository
) -> None:
    name = "release-name-with-very-long-name-which-is-longer-than-53-characters"
    flux.write("clusters/prod/repo.yaml", helm_repository("charts", charts.url))
    flux.write("clusters/prod/app.yaml", helmrelease(name, chart=chart_spec("app", "charts")))
    found = objects(render(flux, plan(flux)))
    assert "Deployment/release-name-with-very-long-name-which-i-788ca0d0d7b0" in found


def test_oci_helm_repository_and_oci_repository(flux: Repo, registry: Registry) -> None:
    flux.write(
        "clusters/prod/sources.yaml",
        helm_repository("oci-charts", f"{registry.url}/charts", oci=True)
        + "---\n"
        + yamlio.dump(
            {
                "apiVersion": "source.toolkit.fluxcd.io/v1",
                "kind": "OCIRepository",
                "metadata": {"name": "app-oci", "namespace": "apps"},
                "spec": {"url": f"{registry.url}/charts/app", "ref": {"semver": "~1.0"}},
            }
        ),
    )
    flux.write(
        "clusters/prod/apps.yaml",
        helmrelease("ranged", chart=chart_spec("app", "oci-charts", version="1.x"))
        + "---\n"
        + helmrelease("newest", chart=chart_spec("app", "oci-charts"))
        + "---\n"
        + helmrelease("pinned", chartRef={"kind": "OCIRepository", "name": "app-oci"}),
    )
    snapshot = render(flux, plan(flux))
    versions = {release.id.release: release.version for release in snapshot.releases}
    assert versions == {"ranged": "1.1.0", "newest": "2.0.0", "pinned": "1.0.0"}


def test_git_repository_chart_through_a_helm_chart_object(flux: Repo) -> None:
    write_chart_dir(flux.root / "charts" / "app", app_chart_files())
    flux.write(
        "clusters/prod/sources.yaml",
        yamlio.dump(
            {
                "apiVersion": "source.toolkit.fluxcd.io/v1",
                "kind": "GitRepository",
                "metadata": {"name": "fleet", "namespace": "flux-system"},
                "spec": {"url": "https://git.example.invalid/fleet"},
            }
        )
        + "---\n"
        + yamlio.dump(
            {
                "apiVersion": "source.toolkit.fluxcd.io/v1",
                "kind": "HelmChart",
                "metadata": {"name": "app", "namespace": "apps"},
                "spec": {
                    "chart": "./charts/app",
                    "sourceRef": {
                        "kind": "GitRepository",
                        "name": "fleet",
                        "namespace": "flux-system",
                    },
                },
            }
        ),
    )
    flux.write(
        "clusters/prod/app.yaml", helmrelease("web", chartRef={"kind": "HelmChart", "name": "app"})
    )
    planned = plan(flux)
    assert planned.errors == ()
    assert {"clusters/prod/sources.yaml", "charts/app"} <= planned.releases[0].inputs
    assert "Deployment/web" in objects(render(flux, planned))


# --- values ---------------------------------------------------------------------------


def test_values_merge_in_helm_controller_order(flux: Repo, charts: ChartRepository) -> None:
    secret = base64.b64encode(b"fromSecret: here\nshared: secret\n").decode()
    flux.write("clusters/prod/repo.yaml", helm_repository("charts", charts.url))
    flux.write(
        "clusters/prod/values.yaml",
        config_map(
            "base", {"values.yaml": "replicas: 2\nshared: configmap\nnested: {a: 1, b: 1}\n"}
        )
        + "---\n"
        + config_map("custom-key", {"extra.yaml": "nested: {b: 2}\n", "image": "nginx:2.0"})
        + "---\n"
        + yamlio.dump(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "plain", "namespace": "apps"},
                "data": {"values.yaml": secret},
            }
        ),
    )
    flux.write(
        "clusters/prod/app.yaml",
        helmrelease(
            "web",
            chart=chart_spec("app", "charts"),
            valuesFrom=[
                {"kind": "ConfigMap", "name": "base"},
                {"kind": "ConfigMap", "name": "absent", "optional": True},
                {"kind": "ConfigMap", "name": "custom-key", "valuesKey": "extra.yaml"},
                {
                    "kind": "ConfigMap",
                    "name": "custom-key",
                    "valuesKey": "image",
                    "targetPath": "image",
                },
                {"kind": "Secret", "name": "plain"},
            ],
            values={"shared": "inline", "replicas": 3},
        ),
    )
    found = objects(render(flux, plan(flux)))
    assert dumped_values(found["ConfigMap/web-values"]) == {
        "chartDefault": "from-chart",
        "fromSecret": "here",
        "image": "nginx:2.0",
        "nested": {"a": 1, "b": 2},
        "replicas": 3,
        "shared": "inline",
    }
    assert found["Deployment/web"].body["spec"]["replicas"] == 3


def _precedence_release(flux: Repo, values_from: list[dict[str, Any]]) -> dict[str, Any]:
    """Plan a release with the `values test` fixture of helm-controller's precedence rule."""
    flux.write(
        "clusters/prod/values.yaml",
        config_map(
            "values",
            {"values.yaml": "flat: value\nnested: {configuration: [one, two, three], key: cm}\n"},
        )
        + "---\n"
        + yamlio.dump(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "values", "namespace": "apps"},
                "stringData": {"key": "value"},
            }
        ),
    )
    flux.write("clusters/prod/repo.yaml", helm_repository("charts", "https://charts.invalid"))
    flux.write(
        "clusters/prod/app.yaml",
        helmrelease(
            "web",
            chart=chart_spec("app", "charts"),
            valuesFrom=values_from,
            values={"nested": {"configuration": ["list", "item", "option"], "key": "inline"}},
        ),
    )
    planned = plan(flux)
    assert planned.errors == ()
    return planned.releases[0].values


def test_target_path_first_beats_spec_values(flux: Repo) -> None:
    values = _precedence_release(
        flux,
        [
            {"kind": "Secret", "name": "values", "valuesKey": "key", "targetPath": "nested.key"},
            {
                "kind": "Secret",
                "name": "values",
                "valuesKey": "key",
                "targetPath": "nested.configuration[0]",
            },
            {"kind": "ConfigMap", "name": "values"},
        ],
    )
    # The first target path wrote into spec.values' own `nested` map; the second into
    # a merged copy of it, but into spec.values' own list, which the copy shares.
    assert values == {
        "flat": "value",
        "nested": {"configuration": ["value", "item", "option"], "key": "value"},
    }


def test_target_path_after_a_values_document_loses_to_spec_values(flux: Repo) -> None:
    values = _precedence_release(
        flux,
        [
            {"kind": "ConfigMap", "name": "values"},
            {"kind": "Secret", "name": "values", "valuesKey": "key", "targetPath": "nested.key"},
            {
                "kind": "Secret",
                "name": "values",
                "valuesKey": "key",
                "targetPath": "nested.configuration[0]",
            },
        ],
    )
    # `nested` already existed as a merged copy: the scalar landed in the copy and
    # spec.values wins; the list is still spec.values' own list, written in place.
    assert values == {
        "flat": "value",
        "nested": {"configuration": ["value", "item", "option"], "key": "inline"},
    }


def test_target_path_pads_a_list_with_nulls(flux: Repo) -> None:
    values = _precedence_release(
        flux,
        [
            {
                "kind": "Secret",
                "name": "values",
                "valuesKey": "key",
                "targetPath": "nested.configuration[4]",
            }
        ],
    )
    assert values["nested"]["configuration"] == ["list", "item", "option", None, "value"]


def test_missing_values_are_errors_unless_optional(flux: Repo) -> None:
    values_from = [
        {"kind": "ConfigMap", "name": "values", "valuesKey": "nope.yaml", "optional": True},
        {"kind": "ConfigMap", "name": "values", "valuesKey": "other.yaml"},
    ]
    flux.write("clusters/prod/values.yaml", config_map("values", {"values.yaml": "a: 1\n"}))
    flux.write("clusters/prod/repo.yaml", helm_repository("charts", "https://charts.invalid"))
    flux.write(
        "clusters/prod/app.yaml",
        helmrelease("web", chart=chart_spec("app", "charts"), valuesFrom=values_from),
    )
    planned = plan(flux)
    assert planned.releases == ()
    [error] = planned.errors
    assert error.message == (
        "clusters/prod/app.yaml: spec.valuesFrom[1]: could not resolve ConfigMap chart values "
        "reference 'apps/values' with key 'other.yaml': key not found"
    )


def test_optional_does_not_excuse_bad_yaml(flux: Repo) -> None:
    flux.write("clusters/prod/values.yaml", config_map("values", {"values.yaml": "a: [1\n"}))
    flux.write("clusters/prod/repo.yaml", helm_repository("charts", "https://charts.invalid"))
    flux.write(
        "clusters/prod/app.yaml",
        helmrelease(
            "web",
            chart=chart_spec("app", "charts"),
            valuesFrom=[{"kind": "ConfigMap", "name": "values", "optional": True}],
        ),
    )
    [error] = plan(flux).errors
    assert "spec.valuesFrom[0]" in error.message
    assert "failed to read values data" in error.message


# --- post-rendering and CRDs ---------------------------------------------------------


def test_post_renderers_then_common_metadata_then_origin_labels(
    flux: Repo, charts: ChartRepository
) -> None:
    flux.write("clusters/prod/repo.yaml", helm_repository("charts", charts.url))
    patch = (
        "apiVersion: apps/v1\nkind: Deployment\n"
        "metadata: {name: web, namespace: apps}\nspec:\n  replicas: 5\n"
    )
    json_patch = "- op: add\n  path: /metadata/annotations\n  value: {patched: json}\n"
    flux.write(
        "clusters/prod/app.yaml",
        helmrelease(
            "web",
            chart=chart_spec("app", "charts"),
            postRenderers=[
                {
                    "kustomize": {
                        "patches": [
                            {"patch": patch},
                            {
                                "patch": json_patch,
                                "target": {"kind": "ConfigMap", "name": "web-values"},
                            },
                        ],
                        "images": [{"name": "nginx", "newTag": "1.27"}],
                    }
                },
                {"kustomize": {"images": [{"name": "nginx", "newName": "mirror/nginx"}]}},
            ],
            commonMetadata={
                "labels": {"team": "web", "helm.toolkit.fluxcd.io/name": "overridden"},
                "annotations": {"owner": "web-team"},
            },
        ),
    )
    found = objects(render(flux, plan(flux)))
    deployment = found["Deployment/web"].body
    assert deployment["spec"]["replicas"] == 5
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "mirror/nginx:1.27"
    assert deployment["metadata"]["labels"] == {
        "app": "web",
        "team": "web",
        "helm.toolkit.fluxcd.io/name": "web",
        "helm.toolkit.fluxcd.io/namespace": "apps",
    }
    assert deployment["metadata"]["annotations"] == {"owner": "web-team"}
    assert found["ConfigMap/web-values"].body["metadata"]["annotations"] == {
        "owner": "web-team",
        "patched": "json",
    }


def test_crds_are_marked_with_the_crd_policy(flux: Repo, charts: ChartRepository) -> None:
    flux.write("clusters/prod/repo.yaml", helm_repository("charts", charts.url))
    flux.write(
        "clusters/prod/app.yaml",
        helmrelease(
            "web",
            chart=chart_spec("app", "charts"),
            upgrade={"crds": "CreateReplace"},
            commonMetadata={"labels": {"team": "web"}},
        ),
    )
    snapshot = render(flux, plan(flux))
    [release] = snapshot.releases
    assert release.labels == {CRD_INSTALL_LABEL: "Create", CRD_UPGRADE_LABEL: "CreateReplace"}
    crds = [r for r in release.resources if r.from_crds]
    assert [r.key.name for r in crds] == ["widgets.example.com"]
    # Not post-rendered (no common labels), but labelled with the origin.
    assert crds[0].body["metadata"]["labels"] == {
        "helm.toolkit.fluxcd.io/name": "web",
        "helm.toolkit.fluxcd.io/namespace": "apps",
    }


# --- errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({}, "clusters/prod/app.yaml: spec: needs exactly one of chart and chartRef"),
        (
            {"chart": {"spec": {"chart": "app", "sourceRef": {"kind": "Nope", "name": "x"}}}},
            "clusters/prod/app.yaml: spec.chart.spec.sourceRef.kind: must be one of: Bucket, "
            "GitRepository, HelmRepository",
        ),
        (
            {"chartRef": {"kind": "OCIRepository", "name": "x"}, "install": {"crds": "Always"}},
            "clusters/prod/app.yaml: spec.install.crds: "
            "must be one of: Create, CreateReplace, Skip",
        ),
        (
            {
                "chartRef": {"kind": "OCIRepository", "name": "x"},
                "valuesFrom": [{"kind": "Secret"}],
            },
            "clusters/prod/app.yaml: spec.valuesFrom[0].name: is required",
        ),
        (
            {"chartRef": {"kind": "OCIRepository", "name": "missing"}},
            "clusters/prod/app.yaml: spec.chartRef: OCIRepository apps/missing is not defined "
            "below the source's paths",
        ),
    ],
)
def test_bad_helmreleases_name_file_and_field(
    flux: Repo, spec: dict[str, Any], message: str
) -> None:
    flux.write("clusters/prod/app.yaml", helmrelease("web", **spec))
    assert [error.message for error in plan(flux).errors] == [message]


def test_the_same_helmrelease_twice_names_both_files(flux: Repo) -> None:
    reference = {"kind": "OCIRepository", "name": "x"}
    flux.write("clusters/a/app.yaml", helmrelease("web", chartRef=reference))
    flux.write("clusters/b/app.yaml", helmrelease("web", chartRef=reference))
    messages = [error.message for error in plan(flux).errors]
    assert (
        "clusters/b/app.yaml: HelmRelease apps/web is also defined in clusters/a/app.yaml"
        in messages
    )


# --- SOPS-encrypted Secrets -----------------------------------------------------------


PASSWORD = "hunter2-correct-horse"
DB_USER = "admin-from-sops"


def sops_secret_release(flux: Repo, identity: AgeIdentity, url: str) -> None:
    """A HelmRelease taking values from a SOPS-encrypted Secret, whole and at a target path."""
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db", "namespace": "apps"},
        "stringData": {"password": PASSWORD, "values.yaml": f"db:\n  user: {DB_USER}\n"},
    }
    (flux.root / "clusters/prod").mkdir(parents=True, exist_ok=True)
    encrypt(
        flux.root / "clusters/prod",
        secret,
        identity,
        "--encrypted-regex",
        "^(data|stringData)$",
        name="db.sops.yaml",
    )
    flux.write("clusters/prod/repo.yaml", helm_repository("charts", url))
    flux.write(
        "clusters/prod/app.yaml",
        helmrelease(
            "web",
            chart=chart_spec("app", "charts"),
            valuesFrom=[
                {"kind": "Secret", "name": "db"},
                {
                    "kind": "Secret",
                    "name": "db",
                    "valuesKey": "password",
                    "targetPath": "db.password",
                },
            ],
            values={"db": {"host": "db.internal"}},
        ),
    )


def test_sops_secret_values_are_decrypted_and_their_twin_redacted(
    flux: Repo, charts: ChartRepository, age_key: AgeIdentity
) -> None:
    sops_secret_release(flux, age_key, charts.url)
    decoder = sops_decoder()
    real = plan(flux, secrets=decoder, decoder=decoder)
    twin = plan(flux, secrets=decoder, decoder=decoder, twin=True)
    assert real.releases[0].values == {
        "db": {"host": "db.internal", "user": DB_USER, "password": PASSWORD}
    }
    shown = twin.releases[0].values
    assert shown["db"]["host"] == "db.internal"
    assert PASSWORD not in str(twin.releases[0]) and DB_USER not in str(twin.releases[0])
    replacements = replacement_map(real.releases[0].values, shown)
    assert set(replacements) == {PASSWORD, DB_USER}
    redactor = Redactor(replacements)
    rendered = [
        yamlio.dump(redactor.redact_manifest(resource.body))
        for release in render(flux, real).releases
        for resource in release.resources
    ]
    text = "\n".join(rendered)
    assert PASSWORD not in text and DB_USER not in text
    assert replacements[PASSWORD] in text


def test_keyless_sops_secrets_render_with_placeholders(
    flux: Repo, charts: ChartRepository, age_key: AgeIdentity
) -> None:
    sops_secret_release(flux, age_key, charts.url)
    decoder = sops_decoder(keyless=KeylessMode.ALWAYS)
    planned = plan(flux, secrets=decoder, decoder=decoder)
    assert planned.releases[0].values == {
        "db": {"host": "db.internal", "password": STRING_PLACEHOLDER}
    }
    assert decoder.keyless_sources == ["clusters/prod/db.sops.yaml"]


def test_helmreleases_from_a_build_are_planned_like_files(flux: Repo) -> None:
    write_chart_dir(flux.root / "charts" / "app", app_chart_files())
    git = {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": "fleet", "namespace": "apps"},
        "spec": {"url": "https://git.example.invalid/fleet"},
    }
    built = yamlio.load_mapping(
        helmrelease("built", chart=chart_spec("./charts/app", "fleet", kind="GitRepository")),
        source="test",
    )
    planned = plan_helmreleases(
        FluxInputs(
            root=flux.root,
            source="flux",
            paths=(),
            secrets=NoSecrets(),
            documents=(("Kustomization apps/apps", git), ("Kustomization apps/apps", built)),
        )
    )
    assert planned.errors == ()
    assert [(r.id.release, r.chart.local) for r in planned.releases] == [("built", "charts/app")]


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (["values-prod.yaml"], {"prod": True, "replicas": 4}),
        (
            ["values.yaml", "values-prod.yaml"],
            {"chartDefault": "from-chart", "image": "nginx:1.0", "prod": True, "replicas": 4},
        ),
    ],
)
def test_values_files_replace_the_chart_defaults(
    flux: Repo, charts: ChartRepository, files: list[str], expected: dict[str, Any]
) -> None:
    flux.write("clusters/prod/repo.yaml", helm_repository("charts", charts.url))
    flux.write(
        "clusters/prod/app.yaml",
        helmrelease("web", chart=chart_spec("app", "charts", valuesFiles=files)),
    )
    found = objects(render(flux, plan(flux)))
    assert dumped_values(found["ConfigMap/web-values"]) == expected


def test_values_files_of_a_git_chart_are_repository_paths(flux: Repo) -> None:
    write_chart_dir(flux.root / "charts" / "app", app_chart_files())
    flux.write("envs/prod.yaml", "replicas: 7\n")
    flux.write(
        "clusters/prod/git.yaml",
        yamlio.dump(
            {
                "apiVersion": "source.toolkit.fluxcd.io/v1",
                "kind": "GitRepository",
                "metadata": {"name": "fleet", "namespace": "apps"},
                "spec": {"url": "https://git.example.invalid/fleet"},
            }
        ),
    )
    spec = chart_spec(
        "./charts/app",
        "fleet",
        kind="GitRepository",
        valuesFiles=["envs/prod.yaml", "envs/missing.yaml"],
        ignoreMissingValuesFiles=True,
    )
    flux.write("clusters/prod/app.yaml", helmrelease("web", chart=spec))
    planned = plan(flux)
    assert "envs/prod.yaml" in planned.releases[0].inputs
    found = objects(render(flux, planned))
    assert dumped_values(found["ConfigMap/web-values"]) == {"replicas": 7}


def test_disabling_schema_validation_on_install_skips_the_values_schema(flux: Repo) -> None:
    files = {
        **app_chart_files(),
        "values.schema.json": '{"properties": {"replicas": {"type": "string"}}}',
    }
    write_chart_dir(flux.root / "charts" / "app", files)
    flux.write(
        "clusters/prod/git.yaml",
        yamlio.dump(
            {
                "apiVersion": "source.toolkit.fluxcd.io/v1",
                "kind": "GitRepository",
                "metadata": {"name": "fleet", "namespace": "apps"},
                "spec": {"url": "https://git.example.invalid/fleet"},
            }
        ),
    )
    spec = chart_spec("./charts/app", "fleet", kind="GitRepository")
    flux.write("clusters/prod/a.yaml", helmrelease("strict", chart=spec))
    flux.write(
        "clusters/prod/b.yaml",
        helmrelease("lax", chart=spec, install={"disableSchemaValidation": True}),
    )
    outcome = {r.id.release: r.error for r in render(flux, plan(flux)).releases}
    assert outcome["lax"] is None
    assert outcome["strict"] is not None and "replicas" in outcome["strict"]
