"""The locked-down kustomize: real `kubectl kustomize` on trees written by the tests."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from reviewer import kustomize, proc, yamlio
from reviewer.errors import ConfigError, RenderError

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  template:
    spec:
      containers:
      - name: web
        image: nginx:1.25
"""
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  a: b\n"


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def objects(text: str) -> dict[tuple[str, str], dict[str, Any]]:
    documents = yamlio.load_documents(text, source="out", cache=False)
    return {(doc["kind"], doc["metadata"]["name"]): doc for doc in documents}


def test_find_kubectl_is_the_pinned_one() -> None:
    kubectl = kustomize.find_kubectl({})
    done = proc.run(proc.Command(proc.argv(kubectl, "version", "--client")))
    assert b"Kustomize Version: v5.8.1" in done.stdout


def test_find_kubectl_honours_the_override(tmp_path: Path) -> None:
    assert kustomize.find_kubectl({"REVIEWER_KUBECTL": "/bin/true"}) == Path("/bin/true")
    with pytest.raises(RenderError, match="REVIEWER_KUBECTL"):
        kustomize.find_kubectl({"REVIEWER_KUBECTL": str(tmp_path / "nope")})


def test_overlay_with_patches_images_and_prefix(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "base/kustomization.yaml": "resources:\n- deployment.yaml\n",
            "base/deployment.yaml": DEPLOYMENT,
            "overlays/prod/kustomization.yaml": (
                "resources:\n- ../../base\nnamePrefix: prod-\nnamespace: shop\n"
                "images:\n- name: nginx\n  newTag: '1.27'\n"
                "patches:\n- path: replicas.yaml\n"
            ),
            "overlays/prod/replicas.yaml": (
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"
                "spec:\n  replicas: 3\n"
            ),
        },
    )
    built = objects(kustomize.build(tmp_path, tmp_path / "overlays/prod", timeout=60))
    deployment = built[("Deployment", "prod-web")]
    assert deployment["metadata"]["namespace"] == "shop"
    assert deployment["spec"]["replicas"] == 3
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"


def test_generated_kustomization_follows_flux(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "apps/b.yaml": CONFIGMAP.format(name="b"),
            "apps/a.yml": CONFIGMAP.format(name="a"),
            "apps/notes.txt": "not yaml",
            "apps/nested/c.yaml": CONFIGMAP.format(name="c"),
            "apps/kust/kustomization.yaml": "resources:\n- ../../common\nnamePrefix: k-\n",
            "apps/kust/ignored.yaml": CONFIGMAP.format(name="ignored"),
            "common/kustomization.yaml": "resources:\n- d.yaml\n",
            "common/d.yaml": CONFIGMAP.format(name="d"),
        },
    )
    text = kustomize.generate_kustomization(tmp_path / "apps")
    assert yamlio.load_mapping(text, source="gen")["resources"] == [
        "./a.yml",
        "./b.yaml",
        "./kust",
        "./nested/c.yaml",
    ]
    with pytest.raises(ConfigError, match="no kustomization file"):
        kustomize.build(tmp_path, tmp_path / "apps", timeout=60)
    built = kustomize.build(tmp_path, tmp_path / "apps", timeout=60, generate=True)
    assert set(objects(built)) == {("ConfigMap", n) for n in ("a", "b", "c", "k-d")}


def test_generated_kustomization_of_an_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    text = kustomize.generate_kustomization(tmp_path / "empty")
    assert yamlio.load_mapping(text, source="gen")["namespace"] == "_placeholder"
    assert kustomize.build(tmp_path, tmp_path / "empty", timeout=60, generate=True) == ""


def test_generated_kustomization_refuses_non_kubernetes_yaml(tmp_path: Path) -> None:
    write(tmp_path, {"apps/values.yaml": "replicas: 2\n"})
    with pytest.raises(ConfigError) as error:
        kustomize.generate_kustomization(tmp_path / "apps")
    assert "values.yaml" in str(error.value) and "decode Kubernetes YAML" in str(error.value)


def test_generated_kustomization_refuses_a_symlink_out(tmp_path: Path) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text(CONFIGMAP.format(name="secret"))
    repo = tmp_path / "repo"
    write(repo, {"apps/a.yaml": CONFIGMAP.format(name="a")})
    (repo / "apps/link.yaml").symlink_to(outside)
    with pytest.raises(ConfigError, match=r"apps/link\.yaml.*leaves the repository"):
        kustomize.build(repo, repo / "apps", timeout=60, generate=True)


@pytest.mark.parametrize(
    ("kustomization", "field", "message"),
    [
        (
            "resources:\n- ok.yaml\n- https://example.invalid/x.yaml\n",
            "resources[1]",
            "remote",
        ),
        ("bases:\n- git@github.com:org/repo.git//base\n", "bases[0]", "remote"),
        ("resources:\n- github.com/org/repo/base?ref=v1\n", "resources[0]", "remote"),
        ("components:\n- https://github.com/org/repo//c?ref=v1\n", "components[0]", "remote"),
        (
            "helmCharts:\n- name: redis\n  repo: https://charts.example.invalid\n",
            "helmCharts",
            "Helm",
        ),
        ("generators:\n- plugin.yaml\n", "plugin.yaml: document 1", "exec and container"),
        ("transformers:\n- custom.yaml\n", "custom.yaml: document 1", "built-in"),
        ("generators:\n- helm.yaml\n", "helm.yaml: document 1", "Helm"),
        ("resources:\n- ../../outside.yaml\n", "resources[0]", "leaves the repository"),
        ("resources:\n- link.yaml\n", "resources[0]", "leaves the repository"),
        ("resources:\n- missing.yaml\n", "resources[0]", "names no file"),
        (
            "configMapGenerator:\n- name: x\n  files:\n  - k=../../outside.yaml\n",
            "configMapGenerator[0].files[0]",
            "leaves the repository",
        ),
    ],
)
def test_refusals_name_file_and_field(
    tmp_path: Path, kustomization: str, field: str, message: str
) -> None:
    (tmp_path / "outside.yaml").write_text(CONFIGMAP.format(name="outside"))
    repo = tmp_path / "repo"
    write(
        repo,
        {
            "app/kustomization.yaml": kustomization,
            "app/ok.yaml": CONFIGMAP.format(name="ok"),
            "app/plugin.yaml": (
                "apiVersion: example.com/v1\nkind: Gen\nmetadata:\n  name: g\n  annotations:\n"
                "    config.kubernetes.io/function: |\n      exec:\n        path: ./run.sh\n"
            ),
            "app/custom.yaml": "apiVersion: example.com/v1\nkind: Tx\nmetadata:\n  name: t\n",
            "app/helm.yaml": (
                "apiVersion: builtin\nkind: HelmChartInflationGenerator\nmetadata:\n  name: h\n"
            ),
        },
    )
    (repo / "app/link.yaml").symlink_to(tmp_path / "outside.yaml")
    with pytest.raises(ConfigError) as error:
        kustomize.build(repo, repo / "app", timeout=60)
    text = str(error.value)
    assert text.startswith("app/")
    assert field in text and message in text
    assert "example.invalid" not in text and "github.com" not in text


def test_refusals_reach_nested_kustomizations(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "app/kustomization.yaml": "resources:\n- ../base\n",
            "base/kustomization.yaml": "resources:\n- https://example.invalid/x.yaml\n",
        },
    )
    with pytest.raises(ConfigError, match=r"base/kustomization.yaml: resources\[0\]: remote"):
        kustomize.build(tmp_path, tmp_path / "app", timeout=60)


def test_builtin_transformers_are_allowed(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "app/kustomization.yaml": "resources:\n- cm.yaml\ntransformers:\n- labels.yaml\n",
            "app/cm.yaml": CONFIGMAP.format(name="cm"),
            "app/labels.yaml": (
                "apiVersion: builtin\nkind: LabelTransformer\nmetadata:\n  name: l\n"
                "labels:\n  team: a\nfieldSpecs:\n- path: metadata/labels\n  create: true\n"
            ),
        },
    )
    built = objects(kustomize.build(tmp_path, tmp_path / "app", timeout=60))
    assert built[("ConfigMap", "cm")]["metadata"]["labels"] == {"team": "a"}


def test_directory_outside_root_is_refused(tmp_path: Path) -> None:
    write(tmp_path, {"other/kustomization.yaml": "resources: []\n"})
    (tmp_path / "repo").mkdir()
    with pytest.raises(ConfigError, match="leaves the repository"):
        kustomize.build(tmp_path / "repo", tmp_path / "other", timeout=60)


def test_time_limit_is_an_error_not_a_hang(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "app/kustomization.yaml": "resources:\n- cm.yaml\n",
            "app/cm.yaml": CONFIGMAP.format(name="cm"),
        },
    )
    with pytest.raises(RenderError, match="timed out"):
        kustomize.build(tmp_path, tmp_path / "app", timeout=0.001)


def test_output_limit(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "app/kustomization.yaml": "resources:\n- cm.yaml\n",
            "app/cm.yaml": CONFIGMAP.format(name="cm"),
        },
    )
    with pytest.raises(RenderError, match="exceeds 10 bytes"):
        kustomize.build(tmp_path, tmp_path / "app", timeout=60, max_output=10)


def test_kustomize_runs_with_a_cleared_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(
        tmp_path,
        {
            "app/kustomization.yaml": "resources:\n- cm.yaml\n",
            "app/cm.yaml": CONFIGMAP.format(name="cm"),
        },
    )
    monkeypatch.setenv("REVIEWER_TEST_SECRET", "s3cr3t")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
    seen: list[proc.Command] = []
    real_run = proc.run

    def recording_run(command: proc.Command, **kwargs: Any) -> proc.Completed:
        seen.append(command)
        return real_run(command, **kwargs)

    monkeypatch.setattr(proc, "run", recording_run)
    kustomize.build(tmp_path, tmp_path / "app", timeout=60)
    (command,) = seen
    assert "REVIEWER_TEST_SECRET" not in command.env
    assert command.env["KUBECONFIG"] == os.devnull
    assert not any(arg.startswith("--enable") for arg in command.argv)
    assert "--load-restrictor=LoadRestrictionsRootOnly" in command.argv
    # The chokepoint passes only that environment to the child: nothing is inherited.
    probe = proc.Command(("/usr/bin/env",), env=command.env)
    shown = real_run(probe).stdout.decode()
    assert "REVIEWER_TEST_SECRET" not in shown and "s3cr3t" not in shown
    assert sorted(line.split("=", 1)[0] for line in shown.splitlines()) == sorted(command.env)


def test_flux_overlay_on_top_of_a_directory(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "app/deployment.yaml": DEPLOYMENT,
            "components/team/kustomization.yaml": (
                "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
                "commonLabels:\n  team: a\n"
            ),
        },
    )
    overlay = kustomize.Overlay(
        namespace="prod",
        name_prefix="p-",
        images=({"name": "nginx", "newTag": "2.0"},),
        patches=(
            {
                "target": {"kind": "Deployment"},
                "patch": "- op: replace\n  path: /spec/replicas\n  value: 5\n",
            },
        ),
        components=("../components/team",),
    )
    built = kustomize.build(tmp_path, tmp_path / "app", timeout=60, generate=True, overlay=overlay)
    deployment = objects(built)[("Deployment", "p-web")]
    assert deployment["metadata"]["namespace"] == "prod"
    assert deployment["metadata"]["labels"] == {"team": "a"}
    assert deployment["spec"]["replicas"] == 5
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2.0"


def test_patch_manifests_as_helmfile_does() -> None:
    rendered = DEPLOYMENT + "---\n" + CONFIGMAP.format(name="settings")
    patched = kustomize.patch_manifests(
        rendered,
        strategic_merge=[
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "web"},
                "spec": {"replicas": 4},
            }
        ],
        json_patches=[
            kustomize.JsonPatch(
                target={"kind": "ConfigMap", "name": "settings"},
                operations=({"op": "add", "path": "/data/extra", "value": "1"},),
            )
        ],
        transformers=[
            {
                "apiVersion": "builtin",
                "kind": "AnnotationsTransformer",
                "metadata": {"name": "notes"},
                "annotations": {"owner": "team-a"},
                "fieldSpecs": [{"path": "metadata/annotations", "create": True}],
            }
        ],
        source="helmfile.yaml",
        timeout=60,
    )
    built = objects(patched)
    assert built[("Deployment", "web")]["spec"]["replicas"] == 4
    assert built[("ConfigMap", "settings")]["data"] == {"a": "b", "extra": "1"}
    assert all(doc["metadata"]["annotations"] == {"owner": "team-a"} for doc in built.values())


def test_patch_manifests_refuses_plugin_transformers() -> None:
    with pytest.raises(ConfigError, match=r"helmfile.yaml: transformers\[0\]: only built-in"):
        kustomize.patch_manifests(
            CONFIGMAP.format(name="x"),
            transformers=[{"apiVersion": "example.com/v1", "kind": "Tx"}],
            source="helmfile.yaml",
        )
