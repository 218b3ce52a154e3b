"""Rendering local charts and the `reviewer render` command, seen from its outputs."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import helm_python
import pytest
from conftest import Repo, release

from reviewer import sandbox_tasks
from reviewer.cli import main
from reviewer.engine import RenderRequest, find_helm
from reviewer.errors import ExitStatus
from reviewer.sandbox import Task

WEB_CHART = {
    "Chart.yaml": (
        "apiVersion: v2\nname: web\nversion: 2.0.0\n"
        "dependencies:\n  - name: sub\n    version: 0.1.0\n"
    ),
    "values.yaml": "replicas: 1\nsub: {greeting: hello}\n",
    "templates/_helpers.tpl": '{{- define "web.name" -}}{{ .Release.Name }}-web{{- end -}}\n',
    "templates/NOTES.txt": "Thanks for installing {{ .Release.Name }}\n",
    "templates/all.yaml": """\
        # Source comments and empty documents are dropped
        ---
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: {{ include "web.name" . }}
          labels: {z: last, a: first}
        spec:
          replicas: {{ .Values.replicas }}
        ---
        ---
        apiVersion: v1
        kind: Service
        metadata:
          name: {{ include "web.name" . }}
        spec:
          ports: [{port: 80}]
        """,
    "charts/sub/Chart.yaml": "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
    "charts/sub/templates/cm.yaml": """\
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: {{ .Release.Name }}-sub
        data:
          greeting: {{ .Values.greeting | quote }}
        """,
}


@pytest.fixture
def fleet(repo: Repo) -> Repo:
    repo.add_chart("charts/web", WEB_CHART)
    repo.write(
        "templates/web/helmfile.yaml.gotmpl",
        "releases: [{name: web, chart: ../../charts/web, namespace: shop}]\n",
    )
    repo.write("deployments/g/c1/apps/shop/deployment.yaml", "apps: [{template: web}]\n")
    repo.write("deployments/g/c2/apps/shop/deployment.yaml", "apps: [{template: web}]\n")
    repo.write("deployments/g/c2/cluster.values.yaml", "replicas: 3\nsub: {greeting: hej}\n")
    return repo


def test_local_chart_with_vendored_subchart(fleet: Repo) -> None:
    rendered = release(fleet.render(), "g/c2", "shop", "web")
    assert rendered.error is None
    assert rendered.chart == "web" and rendered.version == "2.0.0"
    kinds = {(r.key.kind, r.key.name) for r in rendered.resources}
    assert kinds == {("Deployment", "web-web"), ("Service", "web-web"), ("ConfigMap", "web-sub")}
    by_kind = {r.key.kind: r for r in rendered.resources}
    assert by_kind["Deployment"].body["spec"]["replicas"] == 3
    assert by_kind["ConfigMap"].body["data"]["greeting"] == "hej"
    assert by_kind["Deployment"].key.group == "apps"


def test_packaged_chart_archive(repo: Repo, tmp_path: Path) -> None:
    archive = helm_python.package(repo.root / "charts/dump", destination=tmp_path)
    target = repo.root / "charts/dump-1.0.0.tgz"
    target.write_bytes(Path(archive).read_bytes())
    repo.write(
        "templates/app/helmfile.yaml.gotmpl",
        "releases: [{name: app, chart: ../../charts/dump-1.0.0.tgz}]\n",
    )
    repo.write("deployments/c/apps/a/deployment.yaml", "apps: [{template: app}]\n")
    rendered = release(repo.render(), "c", "a", "app")
    assert rendered.error is None and rendered.chart == "dump"


def test_render_command_writes_one_normalized_file_per_object(fleet: Repo, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as done:
        main(["render", str(fleet.root), "--out", str(out)])
    assert done.value.code == ExitStatus.OK
    release_dir = out / "g/c2/shop/web"
    assert sorted(p.name for p in release_dir.iterdir()) == [
        "configmap-web-sub.yaml",
        "deployment-web-web.yaml",
        "service-web-web.yaml",
    ]
    deployment = (release_dir / "deployment-web-web.yaml").read_text()
    assert deployment == (
        "apiVersion: apps/v1\n"
        "kind: Deployment\n"
        "metadata:\n"
        "  labels:\n"
        "    a: first\n"
        "    z: last\n"
        "  name: web-web\n"
        "spec:\n"
        "  replicas: 3\n"
    )
    assert not any("# Source" in p.read_text() for p in out.rglob("*.yaml"))

    index = json.loads((out / "index.json").read_text())
    assert index["schema"] == "reviewer.snapshot/v1"
    entry = next(e for e in index["releases"] if e["cluster"] == "g/c2")
    assert entry == {
        "cluster": "g/c2",
        "deployment": "shop",
        "release": "web",
        "namespace": "shop",
        "chart": "web",
        "version": "2.0.0",
        "labels": {
            "cluster": "g/c2",
            "clusterName": "c2",
            "clusterGroup": "g",
            "deploymentName": "shop",
            "template": "web",
            "instance": "web",
            "variant": "default",
        },
        "status": "rendered",
        "resources": 3,
        "crds": [],
        "error": None,
        "reproduce": entry["reproduce"],
        "helm": entry["helm"],
        "files": {
            "configmap-web-sub.yaml": "web/charts/sub/templates/cm.yaml",
            "deployment-web-web.yaml": "web/templates/all.yaml",
            "service-web-web.yaml": "web/templates/all.yaml",
        },
    }


def test_selection_by_cluster_and_deployment(fleet: Repo, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(SystemExit):
        main(["render", str(fleet.root), "--out", str(out), "--cluster", "c1"])
    index = json.loads((out / "index.json").read_text())
    assert [(e["cluster"], e["release"]) for e in index["releases"]] == [("g/c1", "web")]


def test_failing_release_does_not_stop_others_and_reproduces(
    fleet: Repo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet.write(
        "charts/web/templates/fail.yaml",
        '{{ if gt (int .Values.replicas) 2 }}{{ fail "too many replicas" }}{{ end }}\n',
    )
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as done:
        main(["render", str(fleet.root), "--out", str(out)])
    assert done.value.code == ExitStatus.RENDER_FAILED
    index = {e["cluster"]: e for e in json.loads((out / "index.json").read_text())["releases"]}
    assert index["g/c1"]["status"] == "rendered"
    assert index["g/c2"]["status"] == "error"
    assert "too many replicas" in index["g/c2"]["error"]
    assert (out / "g/c1/shop/web/deployment-web-web.yaml").is_file()
    assert not (out / "g/c2").exists()

    stderr = capsys.readouterr().err
    assert "FAILED g/c2/shop/web:" in stderr
    assert "templates/web/helmfile.yaml.gotmpl: chart ../../charts/web:" in stderr
    reproduce = index["g/c2"]["reproduce"]
    assert f"reproduce: {reproduce}" in stderr

    # The printed commands, run in a shell as a user would on a laptop (outside CI, where
    # --no-redact is allowed), reproduce the failure: reviewer's own...
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "helm").symlink_to(find_helm())
    (tools / "reviewer").write_text(f'#!/bin/sh\nexec {sys.executable} -m reviewer "$@"\n')
    (tools / "reviewer").chmod(0o755)
    local = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS")}
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {**local, "PATH": f"{tools}:{os.environ['PATH']}", "TMPDIR": str(temporary)}
    assert reproduce.startswith("out=$(mktemp -d) && reviewer render ")
    again = subprocess.run(
        ["bash", "-c", reproduce], capture_output=True, text=True, check=False, env=env
    )
    assert again.returncode == ExitStatus.RENDER_FAILED
    assert "too many replicas" in again.stderr
    # Into a new directory only its owner can enter, which the summary names.
    (written,) = temporary.iterdir()
    assert written.stat().st_mode & 0o077 == 0
    assert (written / "index.json").is_file()
    assert f"→ {written}" in again.stderr + again.stdout

    # ... and the equivalent helm CLI command (values from `reviewer values`).
    helm = index["g/c2"]["helm"]
    assert f"with helm: {helm}" in stderr
    assert helm.endswith(
        "helm template web "
        + shlex.quote(f"{fleet.root}/charts/web")
        + ' --namespace shop -f "$values"'
    )
    with_helm = subprocess.run(
        ["bash", "-c", helm], capture_output=True, text=True, check=False, env=env
    )
    assert with_helm.returncode != 0
    assert "too many replicas" in with_helm.stderr
    # The unredacted values went to a new file only its owner can read.
    (values,) = [path for path in temporary.iterdir() if path != written]
    assert values.is_file()
    assert values.stat().st_mode & 0o077 == 0


def test_schema_validation_and_skip(repo: Repo) -> None:
    repo.write(
        "charts/dump/values.schema.json",
        '{"type": "object", "properties": {"replicas": {"type": "integer"}}}',
    )
    repo.write("deployments/c/apps/a/deployment.yaml", "apps: [{template: app}]\n")
    repo.write("deployments/c/cluster.values.yaml", "replicas: many\n")
    # ATLAS defaults skipSchemaValidation to true; a user-set false is kept.
    repo.write(
        "templates/app/helmfile.yaml.gotmpl",
        "releases: [{name: app, chart: ../../charts/dump, skipSchemaValidation: false}]\n",
    )
    rendered = release(repo.render(), "c", "a", "app")
    assert rendered.error is not None and "replicas" in rendered.error
    repo.write(
        "templates/app/helmfile.yaml.gotmpl",
        "releases: [{name: app, chart: ../../charts/dump, skipSchemaValidation: true}]\n",
    )
    assert release(repo.render(), "c", "a", "app").error is None


def test_invalid_repository_exits_3_with_message(
    repo: Repo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("deployments/apps/x/deployment.yaml", "apps: [{template: app}]\n")
    with pytest.raises(SystemExit) as done:
        main(["render", str(repo.root), "--out", str(tmp_path / "out")])
    assert done.value.code == ExitStatus.INVALID_REPOSITORY
    assert "no cluster found below 'deployments/'" in capsys.readouterr().err


def test_usage_error_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["render", "--no-such-option"])
    assert done.value.code == ExitStatus.USAGE
    assert "No such option" in capsys.readouterr().err


def test_output_directory_is_replaced_but_foreign_directories_are_refused(
    fleet: Repo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "precious.txt").write_text("keep me\n")
    with pytest.raises(SystemExit) as done:
        main(["render", str(fleet.root), "--out", str(out)])
    assert done.value.code == ExitStatus.INVALID_REPOSITORY
    assert "refusing to write into it" in capsys.readouterr().err
    assert (out / "precious.txt").read_text() == "keep me\n"

    fresh = tmp_path / "fresh"
    main_exit = []
    for _ in range(2):
        with pytest.raises(SystemExit) as done:
            main(["render", str(fleet.root), "--out", str(fresh), "--cluster", "c1"])
        main_exit.append(done.value.code)
    (fresh / "stale.yaml").write_text("old\n")
    with pytest.raises(SystemExit):
        main(["render", str(fleet.root), "--out", str(fresh), "--cluster", "c1"])
    assert main_exit == [0, 0]
    assert not (fresh / "stale.yaml").exists()


def test_crds_are_rendered_and_marked(repo: Repo, tmp_path: Path) -> None:
    repo.write(
        "charts/dump/crds/widgets.yaml",
        """\
        apiVersion: apiextensions.k8s.io/v1
        kind: CustomResourceDefinition
        metadata: {name: widgets.example.com}
        spec: {group: example.com, names: {kind: Widget, plural: widgets}, scope: Namespaced}
        """,
    )
    repo.write("deployments/c/apps/a/deployment.yaml", "apps: [{template: app}]\n")
    out = tmp_path / "out"
    with pytest.raises(SystemExit):
        main(["render", str(repo.root), "--out", str(out)])
    (entry,) = json.loads((out / "index.json").read_text())["releases"]
    assert entry["crds"] == ["widgets.example.com"]
    assert (out / "c/a/app/customresourcedefinition-widgets.example.com.yaml").is_file()


def test_unreachable_repository_fails_only_its_release(repo: Repo, tmp_path: Path) -> None:
    repo.add_template(
        "remote",
        "repositories: [{name: gone, url: http://127.0.0.1:9}]\n"
        "releases: [{name: remote, chart: gone/thing, version: 1.0.0}]\n",
    )
    repo.write(
        "deployments/c/apps/a/deployment.yaml", "apps: [{template: app}, {template: remote}]\n"
    )
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as done:
        main(["render", str(repo.root), "--out", str(out), "--cache-dir", str(tmp_path / "cache")])
    assert done.value.code == ExitStatus.RENDER_FAILED
    index = {e["release"]: e for e in json.loads((out / "index.json").read_text())["releases"]}
    assert index["app"]["status"] == "rendered"
    assert index["remote"]["status"] == "error"
    assert "chart 'gone/thing': repository unreachable" in index["remote"]["error"]


def test_a_template_rendering_a_malformed_object_fails_its_release_saying_why(
    repo: Repo, tmp_path: Path
) -> None:
    """`metadata: 5` from a chart once killed the render child (tracebacks on stderr) and
    the releases were reported as over the memory limit."""
    repo.write("charts/dump/templates/bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: 5\n")
    repo.write("deployments/c/apps/a/deployment.yaml", "apps: [{template: app}]\n")
    done = subprocess.run(
        [sys.executable, "-m", "reviewer", "render", str(repo.root), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == ExitStatus.RENDER_FAILED
    assert "dump/templates/bad.yaml: metadata: must be a map" in done.stderr
    assert "Traceback" not in done.stderr and "memory" not in done.stderr


def test_an_unexpected_error_in_the_render_child_is_reported_as_a_bug_of_that_release(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not as a dead child (which reads as "over the memory limit"), and without the
    error's text, which may quote a value."""

    def broken(rendered: dict[str, str]) -> list[object]:
        raise AttributeError(f"'int' object has no attribute 'get' ({sorted(rendered)})")

    monkeypatch.setattr(sandbox_tasks, "manifests", broken)
    handler = sandbox_tasks.Handler("embedded", None)
    request = RenderRequest(chart=repo.root / "charts/dump", values={}, release="r", namespace="n")
    outcome = handler.handle(Task("render", (request, 64)))
    assert outcome.error == "internal error while rendering (a bug in reviewer: AttributeError)"
