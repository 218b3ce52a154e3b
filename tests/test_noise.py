"""Noise rules: parsing `.reviewer.yaml`'s `noise:` mapping, matching paths, pruning documents."""

from __future__ import annotations

from typing import Any

import pytest

from reviewer.errors import ConfigError
from reviewer.model import ResourceKey
from reviewer.noise import NoiseRules, PathPattern, prune_pair
from reviewer.semantic import Path, Select

CONTAINER_IMAGE: Path = ("spec", "template", "spec", "containers", Select("name", "web"), "image")


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("metadata.annotations.checksum/*", ("metadata", "annotations", "checksum/cfg"), True),
        ("metadata.annotations.checksum/*", ("metadata", "annotations", "other"), False),
        (
            "spec.template.metadata.annotations",
            ("spec", "template", "metadata", "annotations", "a"),
            True,
        ),
        ("spec.template.metadata.annotations", ("spec", "template", "metadata"), False),
        ("spec.template.spec.containers[name=web].image", CONTAINER_IMAGE, True),
        ("spec.template.spec.containers[name=w*]", CONTAINER_IMAGE, True),
        ("spec.template.spec.containers[name=api].image", CONTAINER_IMAGE, False),
        ("spec.template.spec.containers[*].image", CONTAINER_IMAGE, True),
        ("**.image", CONTAINER_IMAGE, True),
        ("**.containers", CONTAINER_IMAGE, True),
        ("spec.*.spec", CONTAINER_IMAGE, True),
        ("spec.args[1]", ("spec", "args", 1), True),
        ("spec.args[1]", ("spec", "args", 2), False),
        ("spec.args[*]", ("spec", "args", 0), True),
        (
            'metadata.labels["app.kubernetes.io/*"]',
            ("metadata", "labels", "app.kubernetes.io/v"),
            True,
        ),
        ("metadata.labels.app", ("metadata", "labels", "app.kubernetes.io/v"), False),
    ],
)
def test_path_patterns(pattern: str, path: Path, expected: bool) -> None:
    assert PathPattern.parse(pattern).matches(path) is expected


@pytest.mark.parametrize("pattern", ["", ".a", "a.", "a..b", "a[", "a[x]", '["unterminated'])
def test_invalid_path_patterns(pattern: str) -> None:
    with pytest.raises(ValueError):
        PathPattern.parse(pattern)


def test_rules_from_mapping_name_the_bad_field() -> None:
    with pytest.raises(ConfigError, match=r"noise\.paths\[1\]: invalid path pattern"):
        NoiseRules.from_mapping({"paths": ["spec.ok", "a..b"]})
    with pytest.raises(ConfigError, match=r"noise\.labels: must be a list"):
        NoiseRules.from_mapping({"labels": "helm.sh/*"})
    with pytest.raises(ConfigError, match="unknown key 'label'"):
        NoiseRules.from_mapping({"label": ["x"]})
    # Without configuration only the built-in defaults apply; both can be turned off.
    assert NoiseRules.from_mapping({}) == NoiseRules()
    assert not NoiseRules.from_mapping({"chart-labels": False, "checksum-annotations": False})
    with pytest.raises(ConfigError, match=r"noise\.chart-labels: must be true or false"):
        NoiseRules.from_mapping({"chart-labels": "no"})
    assert NoiseRules.from_mapping({"kinds": ["Event"]})


def test_label_and_annotation_rules_cover_every_metadata_map_but_not_selectors() -> None:
    rules = NoiseRules.from_mapping({"labels": ["helm.sh/*"], "annotations": ["checksum/*"]})
    assert rules.path_rule(("metadata", "labels", "helm.sh/chart")) == "labels: helm.sh/*"
    nested = ("spec", "template", "metadata", "labels", "helm.sh/chart")
    assert rules.path_rule(nested) == "labels: helm.sh/*"
    selector = ("spec", "selector", "matchLabels", "helm.sh/chart")
    assert rules.path_rule(selector) is None
    assert rules.path_rule(("metadata", "labels", "app")) is None
    annotation = ("spec", "template", "metadata", "annotations", "checksum/config")
    assert rules.path_rule(annotation) == "annotations: checksum/*"
    # An alerting rule's own `labels` are content, not object metadata.
    assert rules.path_rule(("spec", "groups", 0, "labels", "helm.sh/x")) is None


def test_kind_rules_match_the_kind_or_kind_and_group() -> None:
    rules = NoiseRules.from_mapping({"kinds": ["Event", "*.monitoring.coreos.com"]})
    assert rules.kind_rule(ResourceKey("", "Event", "ns", "e")) == "kinds: Event"
    monitor = ResourceKey("monitoring.coreos.com", "ServiceMonitor", "ns", "m")
    assert rules.kind_rule(monitor) == "kinds: *.monitoring.coreos.com"
    assert rules.kind_rule(ResourceKey("apps", "Deployment", "ns", "d")) is None


def _prune(rules: NoiseRules, before: Any, after: Any) -> tuple[Any, Any]:
    return prune_pair(before, after, lambda path: rules.path_rule(path) is not None)


def test_pruning_removes_covered_paths_on_both_sides() -> None:
    rules = NoiseRules.from_mapping({"paths": ["spec.containers[name=web].image"]})
    before = {"spec": {"containers": [{"name": "web", "image": "a"}, {"name": "x", "image": "b"}]}}
    after = {"spec": {"containers": [{"name": "x", "image": "c"}, {"name": "web", "image": "z"}]}}
    assert _prune(rules, before, after) == (
        {"spec": {"containers": [{"name": "web"}, {"name": "x", "image": "b"}]}},
        {"spec": {"containers": [{"name": "x", "image": "c"}, {"name": "web"}]}},
    )


def test_pruning_drops_containers_it_empties_when_the_other_side_lacks_them() -> None:
    rules = NoiseRules.from_mapping({"annotations": ["checksum/*"]})
    base = {"metadata": {"name": "x"}}
    head = {"metadata": {"name": "x", "annotations": {"checksum/a": "1"}}}
    assert _prune(rules, base, head) == (base, base)
    # Both sides had the map: both keep it, empty, so nothing differs.
    both: dict[str, Any] = {"metadata": {"annotations": {}}}
    head_both = {"metadata": {"annotations": {"checksum/a": "2"}}}
    assert _prune(rules, both, head_both) == (both, both)
    # A map the head really adds (empty) is not the rule's business.
    assert _prune(rules, base, {"metadata": {"name": "x", "annotations": {}}})[1] == {
        "metadata": {"name": "x", "annotations": {}}
    }


def test_pruning_does_not_touch_the_inputs() -> None:
    rules = NoiseRules.from_mapping({"labels": ["*"]})
    before = {"metadata": {"labels": {"a": "1"}}}
    after = {"metadata": {"labels": {"a": "2"}}}
    _prune(rules, before, after)
    assert before == {"metadata": {"labels": {"a": "1"}}}
    assert after == {"metadata": {"labels": {"a": "2"}}}
