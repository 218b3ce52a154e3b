"""Flux Kustomizations built with the real kustomize, real sops and Flux's substitution rules."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from agekeys import AgeIdentity, encrypt, sops_decoder

from reviewer import yamlio
from reviewer.errors import ConfigError
from reviewer.sources import flux_kustomization as fks
from reviewer.sources import flux_kustomization_build as fkbuild
from reviewer.sources import flux_kustomization_spec as fkspec
from reviewer.sources import flux_kustomization_vars as fkv


def write(root: Path, files: Mapping[str, Any]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        text = content if isinstance(content, str) else yamlio.dump(content)
        path.write_text(text, encoding="utf-8")


def kustomization(spec: Mapping[str, Any], name: str = "apps") -> fkspec.FluxKustomization:
    document = {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": "flux-system"},
        "spec": {"interval": "10m", "sourceRef": {"kind": "GitRepository", "name": "x"}, **spec},
    }
    assert fkspec.is_kustomization(document)
    return fkspec.decode(document, source="clusters/prod/apps.yaml")


def lookup_in(objects: list[dict[str, Any]]) -> fkv.ObjectLookup:
    def lookup(kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        for document in objects:
            metadata = document["metadata"]
            if (document["kind"], metadata.get("namespace"), metadata["name"]) == (
                kind,
                namespace,
                name,
            ):
                return document
        return None

    return lookup


def build(ks: fkspec.FluxKustomization, root: Path, **options: Any) -> list[dict[str, Any]]:
    return list(fkbuild.build(ks, root, **options).objects)


def config_map(name: str, data: Mapping[str, str]) -> dict[str, Any]:
    metadata = {"name": name, "namespace": "flux-system"}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": dict(data)}


APP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "app"},
    "data": {
        "cluster": "${cluster_name}",
        "region": "${region:=eu-west-1}",
        "literal": "$${cluster_name}",
        "dollar": "$cluster_name",
        "upper": "${cluster_name^^}",
    },
}


def by_name(objects: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(o for o in objects if o["metadata"]["name"].endswith(name))


def test_substitution_with_defaults_escapes_and_precedence(tmp_path: Path) -> None:
    write(tmp_path, {"apps/app.yaml": APP})  # no kustomization file: one is generated
    ks = kustomization(
        {
            "path": "./apps",
            "postBuild": {
                "substitute": {"cluster_name": "prod\n-1"},
                "substituteFrom": [
                    {"kind": "ConfigMap", "name": "first"},
                    {"kind": "ConfigMap", "name": "second"},
                    {"kind": "ConfigMap", "name": "absent", "optional": True},
                ],
            },
        }
    )
    lookup = lookup_in(
        [
            config_map("first", {"cluster_name": "from-first", "region": "us-1"}),
            config_map("second", {"region": "us-2"}),
        ]
    )
    built = build(ks, tmp_path, lookup=lookup)
    data = by_name(built, "app")["data"]
    assert data == {
        "cluster": "prod-1",  # inline wins over substituteFrom; newlines dropped
        "region": "us-2",  # later substituteFrom wins
        "literal": "${cluster_name}",
        "dollar": "$cluster_name",
        "upper": "PROD-1",
    }
    labels = by_name(built, "app")["metadata"]["labels"]
    assert labels[fkbuild.OWNER_NAME_LABEL] == "apps"
    assert labels[fkbuild.OWNER_NAMESPACE_LABEL] == "flux-system"


def test_strict_substitution_fails_on_a_missing_variable(tmp_path: Path) -> None:
    write(tmp_path, {"apps/app.yaml": APP})
    ks = kustomization({"path": "./apps", "postBuild": {"substitute": {"other": "x"}}})
    with pytest.raises(ConfigError, match=r'ConfigMap/app.*"cluster_name"') as caught:
        build(ks, tmp_path, lookup=lookup_in([]))
    assert "clusters/prod/apps.yaml" in str(caught.value)
    loose = build(ks, tmp_path, lookup=lookup_in([]), strict=False)
    # `cluster: ` is YAML null, as Flux's YAMLToJSON reads the substituted text too.
    assert by_name(loose, "app")["data"]["cluster"] is None


def test_substitution_runs_only_with_variables_unless_always(tmp_path: Path) -> None:
    write(tmp_path, {"apps/app.yaml": APP})
    lookup = lookup_in([])
    untouched = build(
        ks := kustomization({"path": "./apps", "postBuild": {}}), tmp_path, lookup=lookup
    )
    assert by_name(untouched, "app")["data"]["cluster"] == "${cluster_name}"
    assert ks.post_build is not None
    always = kustomization({"path": "./apps", "postBuild": {"substituteStrategy": "Always"}})
    with pytest.raises(ConfigError, match="cluster_name"):
        build(always, tmp_path, lookup=lookup)


def test_disabled_label_or_annotation_skips_substitution(tmp_path: Path) -> None:
    labelled = {**APP, "metadata": {"name": "labelled", "labels": {fkv.SUBSTITUTE_KEY: "disabled"}}}
    annotated = {
        **APP,
        "metadata": {"name": "annotated", "annotations": {fkv.SUBSTITUTE_KEY: "disabled"}},
    }
    write(tmp_path, {"apps/a.yaml": labelled, "apps/b.yaml": annotated})
    ks = kustomization({"path": "./apps", "postBuild": {"substitute": {"cluster_name": "p"}}})
    built = build(ks, tmp_path, lookup=lookup_in([]))
    for name in ("labelled", "annotated"):
        assert by_name(built, name)["data"]["cluster"] == "${cluster_name}"


def test_invalid_variable_name_is_refused(tmp_path: Path) -> None:
    write(tmp_path, {"apps/app.yaml": APP})
    ks = kustomization({"path": "./apps", "postBuild": {"substitute": {"bad-name": "x"}}})
    with pytest.raises(ConfigError, match="variable name is invalid"):
        build(ks, tmp_path, lookup=lookup_in([]))


def test_missing_substitute_source_names_the_reference(tmp_path: Path) -> None:
    write(tmp_path, {"apps/app.yaml": APP})
    ks = kustomization(
        {"path": "./apps", "postBuild": {"substituteFrom": [{"kind": "Secret", "name": "vars"}]}}
    )
    with pytest.raises(ConfigError, match=r"substituteFrom\[0\].*Secret flux-system/vars"):
        build(ks, tmp_path, lookup=lookup_in([]))


def test_spec_fields_are_written_into_the_kustomization_itself(tmp_path: Path) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx"}]}}},
    }
    write(
        tmp_path,
        {
            "apps/deploy.yaml": deployment,
            "apps/kustomization.yaml": {
                "resources": ["deploy.yaml"],
                "namePrefix": "file-",
                "namespace": "file-ns",
                "images": [{"name": "nginx", "newTag": "1.0", "newName": "mirror/nginx"}],
            },
            "apps/extra/kustomization.yaml": {
                "apiVersion": "kustomize.config.k8s.io/v1alpha1",
                "kind": "Component",
                "commonLabels": {"component": "extra"},
            },
        },
    )
    ks = kustomization(
        {
            "path": "./apps",
            "targetNamespace": "prod",
            "namePrefix": "flux-",
            "images": [{"name": "nginx", "digest": "sha256:" + "a" * 64}],
            "components": ["extra", "missing"],
            "ignoreMissingComponents": True,
            "patches": [
                {
                    "target": {"kind": "Deployment", "name": "web"},
                    "patch": "- op: add\n  path: /spec/replicas\n  value: 3\n",
                }
            ],
            "commonMetadata": {"labels": {"team": "a"}, "annotations": {"owner": "b"}},
        }
    )
    built = build(ks, tmp_path, lookup=lookup_in([]))
    web = by_name(built, "web")
    # The prefix replaces the file's (not `flux-file-web`), the namespace too.
    assert web["metadata"]["name"] == "flux-web"
    assert web["metadata"]["namespace"] == "prod"
    assert web["spec"]["replicas"] == 3
    # Images merge field-wise: newName kept, the digest replaces the tag.
    image = web["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == "mirror/nginx@sha256:" + "a" * 64
    assert web["metadata"]["labels"]["component"] == "extra"
    assert web["metadata"]["labels"]["team"] == "a"
    assert web["metadata"]["annotations"]["owner"] == "b"
    assert "flux-" not in (tmp_path / "apps/kustomization.yaml").read_text()  # checkout untouched


def test_sops_secret_in_the_tree_is_decrypted_for_rendering(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    identity = AgeIdentity.generate()
    monkeypatch.setenv("SOPS_AGE_KEY_FILE", str(identity.write(tmp_path / "keys.txt")))
    (tmp_path / "apps").mkdir()
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db"},
        "stringData": {"password": "s3cr3t-${cluster_name}"},
    }
    encrypt(
        tmp_path / "apps",
        secret,
        identity,
        "--encrypted-regex",
        "^(data|stringData)$",
        name="db.yaml",
    )
    assert "s3cr3t" not in (tmp_path / "apps/db.yaml").read_text()
    spec = {
        "path": "./apps",
        "targetNamespace": "prod",
        "postBuild": {"substitute": {"cluster_name": "prod"}},
    }
    with pytest.raises(ConfigError, match="decryption is required"):
        build(kustomization(spec), tmp_path, lookup=lookup_in([]))
    ks = kustomization({**spec, "decryption": {"provider": "sops"}})
    built = build(ks, tmp_path, lookup=lookup_in([]), decryptor=sops_decoder())
    db = by_name(built, "db")
    assert "sops" not in db
    replacements = fkbuild.build(
        ks, tmp_path, lookup=lookup_in([]), decryptor=sops_decoder()
    ).replacements
    # The decrypted value is in the redaction map, so no output can show it.
    assert {"s3cr3t-${cluster_name}", "s3cr3t-prod"} <= replacements.keys()
    assert db["metadata"]["namespace"] == "prod"  # changed by the build: MAC not checked
    assert db["stringData"]["password"] == "s3cr3t-prod"


def test_secret_substitute_source_is_base64_decoded(tmp_path: Path) -> None:
    write(tmp_path, {"apps/app.yaml": APP})
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "vars", "namespace": "flux-system"},
        "data": {"cluster_name": base64.b64encode(b"from-secret").decode()},
    }
    ks = kustomization(
        {"path": "./apps", "postBuild": {"substituteFrom": [{"kind": "Secret", "name": "vars"}]}}
    )
    result = fkbuild.build(ks, tmp_path, lookup=lookup_in([secret]))
    assert by_name(list(result.objects), "app")["data"]["cluster"] == "from-secret"
    # Substitution copied a Secret's value into a ConfigMap: it is redacted like the Secret.
    assert "from-secret" in result.replacements


def test_helmreleases_are_handed_on(tmp_path: Path) -> None:
    release = {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": "podinfo"},
        "spec": {"values": {"replicas": "${replicas}"}},
    }
    write(tmp_path, {"apps/release.yaml": release, "apps/app.yaml": APP})
    ks = kustomization(
        {"path": "./apps", "postBuild": {"substitute": {"replicas": "2", "cluster_name": "c"}}}
    )
    releases = fks.helmreleases_in(build(ks, tmp_path, lookup=lookup_in([])))
    assert [r["metadata"]["name"] for r in releases] == ["podinfo"]
    assert releases[0]["spec"]["values"]["replicas"] == 2  # substituted text, then typed YAML


def test_a_symlink_inside_the_tree_is_built_as_kustomize_reads_it(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "apps/real/app.yaml": APP,
            "apps/kustomization.yaml": {"resources": ["link.yaml"]},
        },
    )
    (tmp_path / "apps/link.yaml").symlink_to("real/app.yaml")
    built = build(
        kustomization({"path": "./apps", "namePrefix": "p-"}), tmp_path, lookup=lookup_in([])
    )
    assert [o["metadata"]["name"] for o in built] == ["p-app"]


def flux_document(name: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": "flux-system"},
        "spec": {"sourceRef": {"kind": "GitRepository", "name": "flux-system"}, **spec},
    }


def test_kustomizations_built_by_a_kustomization_are_built_in_turn(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "clusters/prod/flux-system/sync.yaml": flux_document(
                "flux-system",
                {"path": "./clusters/prod", "postBuild": {"substitute": {"cluster": "prod"}}},
            ),
            # Built by flux-system: its substitute value comes from the parent's substitution.
            "clusters/prod/apps.yaml": flux_document(
                "apps",
                {"path": "./apps", "postBuild": {"substitute": {"cluster_name": "${cluster}"}}},
            ),
            "clusters/prod/vars.yaml": config_map("vars", {"region": "eu-1"}),
            "apps/app.yaml": APP,
        },
    )
    results = fks.build_all(tmp_path, ["clusters", "apps"])
    assert [r.kustomization.name for r in results] == ["flux-system", "apps"]
    apps = results[1]
    # Taken as flux-system built it (the parent's substitution reached its variables), and
    # named after the file that declares it, so that its errors point there.
    assert apps.kustomization.source == "clusters/prod/apps.yaml"
    assert by_name(list(apps.built.objects), "app")["data"]["cluster"] == "prod"
