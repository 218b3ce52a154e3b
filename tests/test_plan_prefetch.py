"""Renders gathered ahead per deployment (plan_prefetch): the same plans, errors and files.

Each test compares planning with prefetching against planning with it switched off, or
checks what a release sees where prefetched requests of different contexts share a file.
"""

from __future__ import annotations

import pytest
from conftest import Repo
from stages import ReleaseId, plan_repo, plans_by_id

from reviewer.errors import ConfigError
from reviewer.gotmpl import TemplateRenderer, TemplateRequest
from reviewer.limits import Limits
from reviewer.plan import Plan

SHARED = "releases:\n  - name: {{ .Values.atlas.instance.name }}\n    chart: ../../charts/dump\n"
VALUES = (
    "releases:\n  - name: app\n    chart: ../../charts/dump\n"
    "    values: [values.yaml.gotmpl, {fixed: 1}]\n"
)


def _without_prefetch(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> Plan:
    with monkeypatch.context() as patched:
        patched.setattr(TemplateRenderer, "prefetch", lambda self, requests: None)
        return plan_repo(repo.root)


def _two_clusters(repo: Repo) -> Repo:
    repo.add_template("app", VALUES)
    repo.write(
        "templates/app/values.yaml.gotmpl",
        "seen: {{ .Values.colour }}-{{ .Release.Name }}-{{ .Values.atlas.instance.name }}\n",
    )
    for cluster, colour in (("eu", "blue"), ("us", "green")):
        repo.write(f"deployments/prod/{cluster}/cluster.values.yaml", f"colour: {colour}\n")
        repo.write(
            f"deployments/prod/{cluster}/apps/web/deployment.yaml",
            "apps: [{template: app, name: one}, {template: app, name: two}]\n",
        )
    return repo


def test_a_template_shared_by_clusters_renders_each_clusters_context(repo: Repo) -> None:
    plans = plans_by_id(_two_clusters(repo).root)
    seen = {(rid.cluster, rid.release): plan.values["seen"] for rid, plan in plans.items()}
    assert seen == {
        ("prod/eu", "one-app"): "blue-one-app-one",
        ("prod/eu", "two-app"): "blue-two-app-two",
        ("prod/us", "one-app"): "green-one-app-one",
        ("prod/us", "two-app"): "green-two-app-two",
    }


def test_plans_equal_planning_without_prefetch(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    _two_clusters(repo)
    repo.write("deployments/prod/eu/cluster.values.yaml.gotmpl", "zone: {{ .colour }}-1\n")
    repo.write(
        "deployments/prod/us/apps/web/values.yaml.gotmpl", "extra: {{ .zone | default 0 }}\n"
    )
    assert plan_repo(repo.root) == _without_prefetch(repo, monkeypatch)


def test_errors_equal_planning_without_prefetch(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    _two_clusters(repo)
    repo.write(
        "templates/app/values.yaml.gotmpl",
        'a: 1\nseen: {{ required "colour is required" .Values.paint }}\n',
    )
    repo.add_template("broken", "releases:\n  - name: {{ nosuch }}\n    chart: x\n")
    repo.write(
        "deployments/prod/us/apps/web/deployment.yaml",
        "apps: [{template: app, name: one}, {template: broken}, {template: app, name: two}]\n",
    )
    fast = plan_repo(repo.root)
    assert [(e.cluster, e.release) for e in fast.errors] == [
        ("prod/eu", "one-app"),
        ("prod/eu", "two-app"),
        ("prod/us", None),
        ("prod/us", "one-app"),
        ("prod/us", "two-app"),
    ]
    assert "templates/app/values.yaml.gotmpl:2" in fast.errors[0].message
    assert "'nosuch' is not defined" in fast.errors[2].message
    assert fast == _without_prefetch(repo, monkeypatch)


def test_each_cluster_gets_its_own_capabilities(repo: Repo) -> None:
    _two_clusters(repo)
    repo.write("deployments/prod/eu/cluster.capabilities.yaml", "kubeVersion: v1.29.0\n")
    plans = plans_by_id(repo.root)
    eu = plans[ReleaseId("prod/eu", "web", "one-app")]
    us = plans[ReleaseId("prod/us", "web", "two-app")]
    assert eu.capabilities.kube_version == "v1.29.0"
    assert "deployments/prod/eu/cluster.capabilities.yaml" in eu.inputs
    assert us.capabilities.kube_version is None
    assert not any("capabilities" in source for source in us.inputs)


def test_prefetched_answers_and_errors_are_those_of_rendering_alone() -> None:
    text = 'v: {{ .Values.v }} r: {{ .Release.Name }}\n{{ if eq .v "b" }}{{ fail "no b" }}{{ end }}'
    requests = [TemplateRequest(text, {"v": v}, {"Name": f"r{v}", "Namespace": ""}) for v in "abc"]
    ahead, alone = TemplateRenderer(), TemplateRenderer()
    ahead.prefetch(requests)
    for request in requests:
        answers = []
        for renderer in (ahead, alone):
            try:
                answers.append(
                    renderer.render(
                        request.text,
                        values=request.values,
                        source="t.gotmpl",
                        release=request.release,
                    )
                )
            except ConfigError as error:
                answers.append(error.render())
        assert answers[0] == answers[1]
    assert answers[0] == "v: c r: rc\n"


def test_an_endless_loop_in_a_batch_fails_alone_at_the_time_limit() -> None:
    endless = "{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}"
    good = "v: {{ .v }}"
    renderer = TemplateRenderer(Limits(seconds=2))
    renderer.prefetch(
        [
            TemplateRequest(good, {"v": 1}),
            TemplateRequest(endless, {}),
            TemplateRequest(good, {"v": 2}),
        ]
    )
    assert renderer.render(good, values={"v": 1}, source="a.gotmpl") == "v: 1"
    with pytest.raises(ConfigError, match="time limit of 2s") as failure:
        renderer.render(endless, values={}, source="loop.gotmpl")
    assert failure.value.file == "loop.gotmpl"
    assert renderer.render(good, values={"v": 2}, source="b.gotmpl") == "v: 2"


def test_a_huge_allocation_in_a_batch_fails_alone_at_the_memory_limit() -> None:
    # 4 GiB: the Go runtime alone reserves over 1 GiB of the capped address space.
    huge = 'a: {{ "x" | repeat 40000000000 }}'
    good = "v: {{ .v }}"
    renderer = TemplateRenderer(Limits(memory_mib=4096))
    renderer.prefetch(
        [
            TemplateRequest(good, {"v": 1}),
            TemplateRequest(huge, {}),
            TemplateRequest(good, {"v": 2}),
        ]
    )
    assert renderer.render(good, values={"v": 1}, source="a.gotmpl") == "v: 1"
    with pytest.raises(ConfigError, match="memory") as failure:
        renderer.render(huge, values={}, source="huge.gotmpl")
    assert failure.value.file == "huge.gotmpl"
    assert renderer.render(good, values={"v": 2}, source="b.gotmpl") == "v: 2"
