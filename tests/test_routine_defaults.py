"""Chart bumps: chart-identity labels and checksums are routine without any configuration."""

from __future__ import annotations

import json

from test_diff import EU, deployment, release, snap

from reviewer import report, report_json, report_markdown, report_text
from reviewer.diff.compare import diff_snapshots
from reviewer.diff.options import DiffOptions
from reviewer.model import ReleaseId
from reviewer.noise import NoiseRules

US = ReleaseId("us/prod-1", "shop", "web")


def chart_bump(options: DiffOptions) -> report.Review:
    """An image bump with a chart bump on two clusters whose checksums differ per cluster."""
    base = snap(
        release(EU, deployment(checksum="eu-1"), version="1.0.0"),
        release(US, deployment(checksum="us-1"), version="1.0.0"),
    )
    head = snap(
        release(
            EU, deployment(image="nginx:1.26", chart="web-1.1.0", checksum="eu-2"), version="1.1.0"
        ),
        release(
            US, deployment(image="nginx:1.26", chart="web-1.1.0", checksum="us-2"), version="1.1.0"
        ),
    )
    diff = diff_snapshots(base, head, options=options)
    return report.Review(base=report.SideInfo("main"), head=report.SideInfo("pr"), diff=diff)


def test_a_chart_bump_is_one_change_group_with_labels_and_checksums_routine() -> None:
    review = chart_bump(DiffOptions(differ="builtin"))
    (group,) = review.diff.groups
    assert [str(change) for change in group.changes] == [
        'spec.template.spec.containers[name=web].image: "nginx:1.25" → "nginx:1.26"'
    ]
    assert group.members == ((EU, group.members[0][1]), (US, group.members[1][1]))
    assert review.diff.routine_counts() == {
        "labels: helm.sh/chart (default)": 4,
        "annotations: checksum/* (default)": 2,
    }
    (web,) = review.diff.releases[0].resources
    assert "helm.sh/chart" not in web.unified and "checksum" not in web.unified
    assert any("[labels: helm.sh/chart (default)]" in str(item) for item in web.routine)


def test_the_chart_version_change_is_in_every_release_heading() -> None:
    review = chart_bump(DiffOptions(differ="builtin"))
    text = report_text.render_text(review)
    assert "~ eu/prod-1/shop/web [changed] (chart web 1.0.0 → 1.1.0)" in text
    assert "<code>us/prod-1/shop/web</code> changed, chart <code>web 1.0.0 → 1.1.0</code>" in (
        report_markdown.render_markdown(review)
    )
    releases = json.loads(json.dumps(report_json.to_json(review)))["releases"]
    assert [r["chartChange"] for r in releases] == ["web 1.0.0 → 1.1.0"] * 2


def test_each_default_can_be_turned_off() -> None:
    rules = NoiseRules.from_mapping({"chart-labels": False, "checksum-annotations": False})
    review = chart_bump(DiffOptions(differ="builtin", noise=rules))
    assert review.diff.routine_counts() == {}
    assert len(review.diff.groups) == 2  # the per-cluster checksums differ
    only_checksums = NoiseRules.from_mapping({"chart-labels": False})
    counts = chart_bump(DiffOptions(differ="builtin", noise=only_checksums)).diff.routine_counts()
    assert counts == {"annotations: checksum/* (default)": 2}


def test_the_default_rules_cover_exactly_chart_identity_and_checksums() -> None:
    rules = NoiseRules()
    assert rules.path_rule(("metadata", "labels", "app.kubernetes.io/version")) == (
        "labels: app.kubernetes.io/version (default)"
    )
    assert rules.path_rule(("spec", "template", "metadata", "labels", "chart")) == (
        "labels: chart (default)"
    )
    assert rules.path_rule(("metadata", "annotations", "checksum/secret")) == (
        "annotations: checksum/* (default)"
    )
    assert rules.path_rule(("metadata", "labels", "app.kubernetes.io/name")) is None
    assert rules.path_rule(("spec", "selector", "matchLabels", "chart")) is None
    # The repository's own rules are named first.
    own = NoiseRules(labels=("helm.sh/*",))
    assert own.path_rule(("metadata", "labels", "helm.sh/chart")) == "labels: helm.sh/*"
