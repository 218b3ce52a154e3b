"""helmfile release fields ATLAS templates use: set files, keyring, no-effect fields,
helmDefaults, charts from directories that are not charts, and patches after Helm.

Every test renders with the real engine and, where kustomize is involved, the real
`kubectl kustomize`, and asserts on the rendered objects.
"""

from __future__ import annotations

import shutil
from typing import Any

import pytest
from conftest import Repo, received_values, release

from reviewer.cli import main
from reviewer.errors import ExitStatus
from reviewer.model import RenderedRelease, Snapshot

DEPLOYMENT = "apps: [{template: app}]\n"


def template(repo: Repo, fields: str, *, chart: str = "../../charts/dump", top: str = "") -> Repo:
    repo.write(
        "templates/app/helmfile.yaml.gotmpl",
        f"{top}releases:\n  - name: app\n    chart: {chart}\n{fields}",
    )
    repo.write("deployments/c/apps/a/deployment.yaml", DEPLOYMENT)
    return repo


def ok(snapshot: Snapshot, name: str = "app") -> RenderedRelease:
    rendered = release(snapshot, "c", "a", name)
    assert rendered.error is None, rendered.error
    return rendered


def objects(rendered: RenderedRelease) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r.key.kind, r.key.name): r.body for r in rendered.resources}


def failed(snapshot: Snapshot) -> str:
    """The one failure in deployment c/a (a bad template fails the whole instance)."""
    errors = [r.error for r in snapshot.failed if r.id.deployment == "a"]
    assert len(errors) == 1, errors
    assert errors[0] is not None
    return errors[0]


# --- item 8: release fields ------------------------------------------------------------


def test_set_file_and_set_string_file_read_template_relative_files(repo: Repo) -> None:
    repo.write("templates/app/files/motd.txt", "hello, world\nsecond line\n")
    repo.write("templates/app/files/number.txt", "42")
    template(
        repo,
        "    set:\n      - {name: motd, file: ./files/motd.txt}\n"
        "    setString:\n      - {name: nested.number, file: files/number.txt}\n",
    )
    values = received_values(repo.render(), "c", "a", "app")
    assert values["motd"] == "hello, world\nsecond line\n"
    assert values["nested"] == {"keep": "chart", "drop": "chart", "number": "42"}


def test_set_file_outside_the_checkout_is_refused(repo: Repo) -> None:
    template(repo, "    set:\n      - {name: motd, file: ../../../../etc/passwd}\n")
    message = failed(repo.render())
    assert "templates/app/helmfile.yaml.gotmpl: releases[0].set[0].file" in message
    assert "leaves the repository" in message


def test_keyring_is_accepted_inside_the_checkout_only(repo: Repo) -> None:
    template(repo, "    verify: false\n    keyring: ./keys/pubring.gpg\n")
    assert ok(repo.render())
    template(repo, "    keyring: ../../../outside.gpg\n")
    assert "releases[0].keyring: path '../../../outside.gpg' leaves" in failed(repo.render())


def test_every_no_effect_field_is_accepted_and_changes_nothing(repo: Repo) -> None:
    template(repo, "")
    plain = objects(ok(repo.render()))
    template(
        repo,
        "    createNamespace: true\n    wait: true\n    waitForJobs: true\n    timeout: 600\n"
        "    atomic: true\n    needs: [other/db]\n    historyMax: 5\n    cleanupOnFail: true\n"
        "    recreatePods: false\n    force: false\n    verify: false\n    devel: false\n"
        "    missingFileHandler: Warn\n    installedTemplate: 'true'\n    enableDNS: false\n"
        "    disableValidation: true\n    disableOpenAPIValidation: true\n"
        "    disableValidationOnInstall: true\n    kubeContext: prod\n    skipDeps: true\n"
        "    reuseValues: false\n    cascade: foreground\n    suppressDiff: true\n"
        "    adopt: [x]\n    insecureSkipTLSVerify: false\n    takeOwnership: true\n"
        "    syncReleaseLabels: true\n    deleteWait: true\n    deleteTimeout: 30\n",
        top="helmDefaults:\n  wait: true\n  timeout: 300\n  createNamespace: false\n"
        "  skipSchemaValidation: false\n  kubeContext: prod\n  historyMax: 3\n",
    )
    assert objects(ok(repo.render())) == plain


def test_a_no_effect_field_of_the_wrong_type_names_file_and_field(repo: Repo) -> None:
    template(repo, "    timeout: soon\n")
    assert "releases[0].timeout: must be a whole number" in failed(repo.render())
    template(repo, "", top="helmDefaults:\n  wait: 'yes'\n")
    assert "helmDefaults.wait" in failed(repo.render())


@pytest.mark.parametrize(
    ("fields", "top", "named"),
    [
        ("    forceNamespace: other\n", "", "releases[0].forceNamespace: is not supported"),
        ("    hooks: []\n", "", "releases[0].hooks: is not supported"),
        ("", "helmDefaults:\n  args: [--debug]\n", "helmDefaults.args: is not supported"),
        ("", "helmDefaults:\n  postRenderer: x\n", "helmDefaults.postRenderer: is not supported"),
    ],
)
def test_fields_that_cannot_be_reproduced_are_refused_with_a_reason(
    repo: Repo, fields: str, top: str, named: str
) -> None:
    template(repo, fields, top=top)
    assert named in failed(repo.render())


def test_directory_is_an_alias_of_chart(repo: Repo) -> None:
    repo.write(
        "templates/app/helmfile.yaml.gotmpl",
        "releases:\n  - name: app\n    directory: ../../charts/dump\n",
    )
    repo.write("deployments/c/apps/a/deployment.yaml", DEPLOYMENT)
    assert received_values(repo.render(), "c", "a", "app")["chartDefault"] == "from-chart"


# --- item 10: charts from directories that are not charts ------------------------------

CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  a: b\n"
RULE = (
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rules\ndata:\n"
    "  rule: 'summary: {{ $labels.instance }} is down'\n"
)


def test_directory_of_plain_manifests_renders_as_a_chart(repo: Repo) -> None:
    repo.write("manifests/web/one.yaml", CONFIGMAP.format(name="one"))
    repo.write("manifests/web/sub/rules.yaml", RULE)
    template(repo, "    namespace: web\n", chart="../../manifests/web")
    rendered = ok(repo.render())
    found = objects(rendered)
    assert set(found) == {("ConfigMap", "one"), ("ConfigMap", "rules")}
    # Namespace set as helmfile sets it; Go template text inside a manifest stays verbatim.
    assert found[("ConfigMap", "one")]["metadata"]["namespace"] == "web"
    assert (
        found[("ConfigMap", "rules")]["data"]["rule"] == "summary: {{ $labels.instance }} is down"
    )


def test_directory_with_a_kustomization_is_built_by_kustomize(repo: Repo) -> None:
    repo.write("manifests/base/cm.yaml", CONFIGMAP.format(name="cm"))
    repo.write("manifests/base/kustomization.yaml", "resources: [cm.yaml]\n")
    repo.write(
        "manifests/app/kustomization.yaml",
        "resources: [../base]\nnamePrefix: app-\ncommonLabels: {tier: web}\n",
    )
    template(repo, "", chart="../../manifests/app")
    found = objects(ok(repo.render()))
    assert found[("ConfigMap", "app-cm")]["metadata"]["labels"] == {"tier": "web"}


@pytest.mark.parametrize(
    ("kustomization", "field", "problem"),
    [
        ("resources: [https://example.com/base]\n", "resources[0]", "remote resources"),
        (
            "resources: [cm.yaml]\nhelmCharts: [{name: x, repo: https://example.com}]\n",
            "helmCharts",
            "Helm chart inflation",
        ),
        (
            "resources: [cm.yaml]\ntransformers: [plugin.yaml]\n",
            "document 1",
            "only built-in plugins",
        ),
        ("resources: [../../../outside]\n", "resources[0]", "leaves the repository"),
    ],
)
def test_unsafe_kustomize_input_fails_only_its_release_naming_file_and_field(
    repo: Repo, kustomization: str, field: str, problem: str
) -> None:
    repo.write("manifests/app/cm.yaml", CONFIGMAP.format(name="cm"))
    repo.write(
        "manifests/app/plugin.yaml",
        "apiVersion: example.com/v1\nkind: Exec\nmetadata:\n  name: x\n",
    )
    repo.write("manifests/app/kustomization.yaml", kustomization)
    template(repo, "", chart="../../manifests/app")
    repo.write("deployments/c/apps/b/deployment.yaml", DEPLOYMENT)
    repo.write(
        "templates/good/helmfile.yaml.gotmpl",
        "releases: [{name: good, chart: ../../charts/dump}]\n",
    )
    repo.write(
        "deployments/c/apps/a/deployment.yaml", "apps: [{template: app}, {template: good}]\n"
    )
    snapshot = repo.render()
    message = failed(snapshot)
    assert "manifests/app/" in message
    assert field in message
    assert problem in message
    assert ok(snapshot, "good")


def test_render_command_reports_a_refused_kustomization_and_renders_the_rest(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("manifests/app/kustomization.yaml", "resources: [https://example.com/base]\n")
    template(repo, "", chart="../../manifests/app")
    repo.write(
        "templates/good/helmfile.yaml.gotmpl",
        "releases: [{name: good, chart: ../../charts/dump}]\n",
    )
    repo.write(
        "deployments/c/apps/a/deployment.yaml", "apps: [{template: app}, {template: good}]\n"
    )
    out = repo.root.parent / "out"
    with pytest.raises(SystemExit) as done:
        main(["render", str(repo.root), "--out", str(out)])
    captured = capsys.readouterr()
    assert done.value.code == ExitStatus.RENDER_FAILED
    assert "manifests/app/kustomization.yaml: resources[0]: remote resources" in (
        captured.out + captured.err
    )
    assert list(out.rglob("*good*"))


# --- item 11: patches after Helm --------------------------------------------------------

WEB_CHART = {
    "Chart.yaml": "apiVersion: v2\nname: web\nversion: 1.0.0\n",
    "templates/deploy.yaml": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n"
        "  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n"
        "    spec:\n      containers:\n      - name: web\n        image: nginx:1.25\n"
    ),
    "templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  a: b\n",
}


@pytest.fixture
def web(repo: Repo) -> Repo:
    return repo.add_chart("charts/web", WEB_CHART)


def test_strategic_merge_patch_from_a_template_relative_file(web: Repo) -> None:
    web.write(
        "templates/app/patches/cm-patch.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n"
        "  annotations: {atlas-test/patched: 'yes'}\n",
    )
    template(
        web, "    strategicMergePatches: [./patches/cm-patch.yaml]\n", chart="../../charts/web"
    )
    rendered = ok(web.render())
    config = objects(rendered)[("ConfigMap", "web")]
    assert config["metadata"]["annotations"] == {"atlas-test/patched": "yes"}
    # Objects keep the template they came from.
    assert {r.source for r in rendered.resources} == {
        "web/templates/cm.yaml",
        "web/templates/deploy.yaml",
    }


def test_inline_json_patch_and_builtin_transformer(web: Repo) -> None:
    template(
        web,
        "    jsonPatches:\n"
        "      - target: {group: apps, version: v1, kind: Deployment, name: web}\n"
        "        patch:\n          - {op: replace, path: /spec/replicas, value: 3}\n"
        "    transformers:\n"
        "      - apiVersion: builtin\n        kind: AnnotationsTransformer\n"
        "        metadata: {name: notes}\n        annotations: {team: platform}\n"
        "        fieldSpecs: [{path: metadata/annotations, create: true}]\n",
        chart="../../charts/web",
    )
    found = objects(ok(web.render()))
    assert found[("Deployment", "web")]["spec"]["replicas"] == 3
    assert found[("ConfigMap", "web")]["metadata"]["annotations"] == {"team": "platform"}


def test_instance_patches_are_appended_after_the_templates(web: Repo) -> None:
    template(
        web,
        "    jsonPatches:\n"
        "      - target: {kind: Deployment, name: web}\n"
        "        patch: [{op: replace, path: /spec/replicas, value: 3}]\n",
        chart="../../charts/web",
    )
    web.write(
        "deployments/c/apps/a/replicas.yaml",
        "target: {kind: Deployment, name: web}\npatch: [{op: replace, path: /spec/replicas, "
        "value: 5}]\n",
    )
    web.write(
        "deployments/c/apps/a/deployment.yaml",
        "apps:\n  - template: app\n    jsonPatches: [./replicas.yaml]\n",
    )
    rendered = ok(web.render())
    assert objects(rendered)[("Deployment", "web")]["spec"]["replicas"] == 5
    # No single `helm template` command reproduces a patched release.
    assert rendered.helm_command is None


def test_gotmpl_patch_file_is_rendered_with_the_template_context(web: Repo) -> None:
    web.write("deployments/c/cluster.values.yaml", "team: payments\n")
    web.write(
        "templates/app/patches/labels.yaml.gotmpl",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n"
        "  labels: {team: '{{ .Values.team }}'}\n",
    )
    template(
        web, "    strategicMergePatches: [patches/labels.yaml.gotmpl]\n", chart="../../charts/web"
    )
    found = objects(ok(web.render()))
    assert found[("ConfigMap", "web")]["metadata"]["labels"] == {"team": "payments"}


def test_changing_a_patch_file_changes_the_render(web: Repo) -> None:
    # The input digest covers patches: an edited patch is rendered again, not reused.
    patch = (
        "target: {kind: Deployment, name: web}\n"
        "patch: [{op: replace, path: /spec/replicas, value: %d}]\n"
    )
    web.write("templates/app/p.yaml", patch % 2)
    template(web, "    jsonPatches: [p.yaml]\n", chart="../../charts/web")
    assert objects(ok(web.render()))[("Deployment", "web")]["spec"]["replicas"] == 2
    web.write("templates/app/p.yaml", patch % 4)
    assert objects(ok(web.render()))[("Deployment", "web")]["spec"]["replicas"] == 4


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        (
            "    transformers:\n"
            "      - {apiVersion: example.com/v1, kind: Exec, metadata: {name: x}}\n",
            "releases[0].transformers[0]: only built-in plugins",
        ),
        ("    strategicMergePatches: [../../../../etc/passwd]\n", "leaves the repository"),
        (
            "    jsonPatches: [{patch: [{op: remove, path: /a}]}]\n",
            "releases[0].jsonPatches[0].target: is required",
        ),
    ],
)
def test_bad_patches_fail_their_release_naming_file_and_field(
    web: Repo, fields: str, named: str
) -> None:
    template(web, fields, chart="../../charts/web")
    message = failed(web.render())
    assert "templates/app/helmfile.yaml.gotmpl" in message
    assert named in message


def test_a_patch_matching_nothing_fails_its_release_with_a_stable_message(web: Repo) -> None:
    template(
        web,
        "    strategicMergePatches:\n"
        "      - {apiVersion: v1, kind: ConfigMap, metadata: {name: missing}, data: {a: b}}\n",
        chart="../../charts/web",
    )
    first, second = failed(web.render()), failed(web.render())
    assert first == second
    assert "templates/app/helmfile.yaml.gotmpl: patches: kustomize build failed" in first
    assert "ConfigMap.v1.[noGrp]/missing" in first
    assert "/tmp" not in first


def test_diff_shows_the_effect_of_a_cluster_capabilities_change(
    web: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    web.add_chart(
        "charts/mon",
        {
            "Chart.yaml": "apiVersion: v2\nname: mon\nversion: 1.0.0\n",
            "templates/monitor.yaml": (
                '{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" }}\n'
                "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\n"
                "metadata:\n  name: web\n{{- end }}\n"
                "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n"
            ),
        },
    )
    template(web, "", chart="../../charts/mon")
    base = web.root.parent / "base"
    shutil.copytree(web.root, base)
    web.write(
        "deployments/c/cluster.capabilities.yaml", "apiVersions: [monitoring.coreos.com/v1]\n"
    )
    with pytest.raises(SystemExit) as done:
        main(["diff", str(base), str(web.root), "--format", "json"])
    out = capsys.readouterr().out
    assert done.value.code == ExitStatus.OK
    assert "ServiceMonitor" in out
    assert '"added"' in out


def test_diff_shows_a_change_inside_a_chartified_directory(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    # Both sides share one render cache: the chartified content is part of the digest.
    repo.write("manifests/web/one.yaml", CONFIGMAP.format(name="one"))
    template(repo, "", chart="../../manifests/web")
    base = repo.root.parent / "base"
    shutil.copytree(repo.root, base)
    repo.write("manifests/web/one.yaml", CONFIGMAP.format(name="one").replace("a: b", "a: c"))
    with pytest.raises(SystemExit) as done:
        main(["diff", str(base), str(repo.root), "--format", "json"])
    out = capsys.readouterr().out
    assert done.value.code == ExitStatus.OK
    assert '"changed"' in out


def test_atlas_cwd_paths_work_for_chartified_directories_and_patch_files(web: Repo) -> None:
    # The ATLAS idiom: absolute paths built from atlas.cwd resolve inside the checkout.
    web.write("manifests/extra/cm.yaml", CONFIGMAP.format(name="extra"))
    web.write(
        "templates/app/patches/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  labels: {patched: 'yes'}\n",
    )
    web.write(
        "templates/app/helmfile.yaml.gotmpl",
        "releases:\n  - name: app\n    chart: '{{ .Values.atlas.cwd }}/manifests/extra'\n"
        "    strategicMergePatches:\n"
        "      - '{{ .Values.atlas.cwd }}/templates/app/patches/cm.yaml'\n",
    )
    web.write("deployments/c/apps/a/deployment.yaml", DEPLOYMENT)
    found = objects(ok(web.render()))
    assert found[("ConfigMap", "extra")]["metadata"]["labels"] == {"patched": "yes"}
