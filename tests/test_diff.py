"""What a reviewer sees when two snapshots are compared: statuses, diffs, moves, renames, noise."""

from __future__ import annotations

import copy
import os
import shutil
import stat
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reviewer.diff.compare import diff_snapshots
from reviewer.diff.options import DiffOptions, resolve_differ
from reviewer.diff.pairing import similarity
from reviewer.diff.resource import ResourceDiff, ResourceStatus
from reviewer.diff.result import DiffSide, ReleaseStatus, SnapshotDiff
from reviewer.errors import CommandError, ReviewerError
from reviewer.model import ReleaseId, RenderedRelease, Resource, ResourceKey, Snapshot
from reviewer.noise import NoiseRules

EU = ReleaseId("eu/prod-1", "shop", "web")
BUILTIN = DiffOptions(differ="builtin")


# --- manifests -----------------------------------------------------------------------------------


def deployment(
    *,
    name: str = "web",
    image: str = "nginx:1.25",
    replicas: int = 2,
    api_version: str = "apps/v1",
    chart: str = "web-1.0.0",
    checksum: str = "abc",
) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": "shop",
            "labels": {"app": name, "helm.sh/chart": chart},
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {
                    "labels": {"app": name, "helm.sh/chart": chart},
                    "annotations": {"checksum/config": checksum},
                },
                "spec": {"containers": [{"name": "web", "image": image}]},
            },
        },
    }


def configmap(name: str, data: dict[str, str], *, namespace: str = "shop") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data,
    }


def secret(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "shop"},
        "type": "Opaque",
        "data": data,
    }


def service(name: str = "web", port: int = 80) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "shop"},
        "spec": {"ports": [{"name": "http", "port": port}], "selector": {"app": name}},
    }


def release(
    rid: ReleaseId, *bodies: dict[str, Any], error: str | None = None, version: str = "1.0.0"
) -> RenderedRelease:
    resources = tuple(Resource.from_body(copy.deepcopy(body)) for body in bodies)
    return RenderedRelease(
        rid,
        namespace="shop",
        chart="web",
        version=version,
        resources=resources,
        error=error,
        reproduce=f"reviewer render --release {rid}" if error else None,
    )


def snap(*releases: RenderedRelease, errors: list[str] | None = None) -> Snapshot:
    return Snapshot(releases=releases, errors=tuple(errors or ()))


def only(diff: SnapshotDiff, rid: ReleaseId = EU) -> ResourceDiff:
    """The single object diff of one release."""
    (found,) = next(r for r in diff.releases if r.id == rid).resources
    return found


def status_of(diff: SnapshotDiff, rid: ReleaseId = EU) -> ReleaseStatus:
    return next(r for r in diff.releases if r.id == rid).status


# --- statuses and views --------------------------------------------------------------------------


def test_identical_snapshots_have_no_changes() -> None:
    side = snap(release(EU, deployment(), service(), configmap("cfg", {"a": "1"})))
    result = diff_snapshots(side, side, options=BUILTIN)
    assert [r.status for r in result.releases] == [ReleaseStatus.UNCHANGED]
    assert result.releases[0].unchanged == 3
    assert not result.has_changes
    assert result.groups == ()
    assert result.failures == ()


def test_changed_deployment_shows_unified_diff_and_semantic_lines() -> None:
    base = snap(release(EU, deployment(), service()))
    head = snap(release(EU, deployment(image="nginx:1.26", replicas=3), service()))
    result = diff_snapshots(base, head, options=DiffOptions(differ="builtin", context=1))
    assert status_of(result) is ReleaseStatus.CHANGED
    assert result.releases[0].unchanged == 1
    diff = only(result)
    assert diff.status is ResourceStatus.CHANGED
    assert diff.semantic_lines() == [
        "spec.replicas: 2 → 3",
        'spec.template.spec.containers[name=web].image: "nginx:1.25" → "nginx:1.26"',
    ]
    assert diff.unified == textwrap.dedent(
        """\
        --- base/eu/prod-1/shop/web/Deployment/web
        +++ head/eu/prod-1/shop/web/Deployment/web
        @@ -9,3 +9,3 @@
         spec:
        -  replicas: 2
        +  replicas: 3
           selector:
        @@ -22,3 +22,3 @@
               containers:
        -      - image: nginx:1.25
        +      - image: nginx:1.26
                 name: web
        """
    )
    assert not diff.routine_only
    assert result.has_changes


def test_added_and_removed_objects_diff_against_dev_null() -> None:
    base = snap(release(EU, deployment(), service()))
    head = snap(release(EU, deployment(), configmap("cfg", {"a": "1"})))
    result = diff_snapshots(base, head, options=BUILTIN)
    added, removed = result.releases[0].resources
    assert (added.status, added.key.kind) == (ResourceStatus.ADDED, "ConfigMap")
    assert added.unified.splitlines()[:3] == [
        "--- /dev/null",
        "+++ head/eu/prod-1/shop/web/ConfigMap/cfg",
        "@@ -0,0 +1,7 @@",
    ]
    assert "+  a: '1'" in added.unified.splitlines()
    assert (removed.status, removed.key.kind) == (ResourceStatus.REMOVED, "Service")
    assert removed.unified.splitlines()[:2] == [
        "--- base/eu/prod-1/shop/web/Service/web",
        "+++ /dev/null",
    ]
    assert (removed.base_release, removed.head_release) == (EU, None)
    assert added.changes == removed.changes == ()


def test_added_and_removed_releases() -> None:
    gone = ReleaseId("eu/prod-1", "shop", "old")
    new = ReleaseId("eu/prod-1", "shop", "new")
    base = snap(release(EU, service()), release(gone, configmap("old-cfg", {"a": "1"})))
    head = snap(release(EU, service()), release(new, configmap("new-cfg", {"b": "2"})))
    result = diff_snapshots(base, head, options=BUILTIN)
    assert [(r.id.release, r.status) for r in result.releases] == [
        ("new", ReleaseStatus.ADDED),
        ("old", ReleaseStatus.REMOVED),
        ("web", ReleaseStatus.UNCHANGED),
    ]
    assert only(result, new).status is ResourceStatus.ADDED
    assert only(result, gone).status is ResourceStatus.REMOVED
    (summary,) = result.summary()
    assert (summary.added, summary.removed, summary.changed, summary.unchanged) == (1, 1, 0, 1)


def test_api_version_bump_in_the_same_group_is_a_change() -> None:
    base = snap(release(EU, deployment(api_version="apps/v1beta2")))
    head = snap(release(EU, deployment(api_version="apps/v1")))
    diff = only(diff_snapshots(base, head, options=BUILTIN))
    assert diff.status is ResourceStatus.CHANGED
    assert (diff.base_api_version, diff.head_api_version) == ("apps/v1beta2", "apps/v1")
    assert diff.semantic_lines() == ['apiVersion: "apps/v1beta2" → "apps/v1"']
    assert "-apiVersion: apps/v1beta2\n+apiVersion: apps/v1\n" in diff.unified


def test_moving_to_another_api_group_is_remove_and_add() -> None:
    old = {"apiVersion": "extensions/v1beta1", "kind": "Ingress", "metadata": {"name": "web"}}
    new = {**old, "apiVersion": "networking.k8s.io/v1"}
    result = diff_snapshots(snap(release(EU, old)), snap(release(EU, new)), options=BUILTIN)
    statuses = sorted(d.status.value for d in result.releases[0].resources)
    assert statuses == ["added", "removed"]


def test_only_chart_version_change_is_a_release_change() -> None:
    base = snap(release(EU, service(), version="1.0.0"))
    head = snap(release(EU, service(), version="1.0.1"))
    result = diff_snapshots(base, head, options=BUILTIN)
    assert status_of(result) is ReleaseStatus.CHANGED
    assert result.releases[0].resources == ()


# --- moves and renames ---------------------------------------------------------------------------


def test_object_moving_between_releases_of_a_cluster_is_a_move_with_both_owners() -> None:
    api = ReleaseId("eu/prod-1", "shop", "api")
    shared = configmap("shared", {"level": "info"})
    moved = configmap("shared", {"level": "debug"})
    base = snap(release(EU, service(), shared), release(api, service("api")))
    head = snap(release(EU, service()), release(api, service("api"), moved))
    result = diff_snapshots(base, head, options=BUILTIN)
    diff = only(result, api)
    assert diff is only(result, EU), "a move is listed under both owners"
    assert diff.status is ResourceStatus.MOVED
    assert (diff.base_release, diff.head_release) == (EU, api)
    assert diff.semantic_lines() == ['data.level: "info" → "debug"']
    assert diff.unified.splitlines()[:2] == [
        "--- base/eu/prod-1/shop/web/ConfigMap/shared",
        "+++ head/eu/prod-1/shop/api/ConfigMap/shared",
    ]
    assert [status_of(result, r) for r in (api, EU)] == [ReleaseStatus.CHANGED] * 2
    assert [rid for rid, _ in result.resource_diffs()] == [api], "counted once"


def test_move_without_content_change_has_an_empty_diff() -> None:
    api = ReleaseId("eu/prod-1", "shop", "api")
    base = snap(release(EU, configmap("shared", {"a": "1"})))
    head = snap(release(EU), release(api, configmap("shared", {"a": "1"})))
    result = diff_snapshots(base, head, options=BUILTIN)
    diff = only(result, api)
    assert (diff.status, diff.unified, diff.changes) == (ResourceStatus.MOVED, "", ())
    assert status_of(result, api) is ReleaseStatus.ADDED


def test_same_object_in_two_clusters_is_not_a_move() -> None:
    us = ReleaseId("us/prod-1", "shop", "web")
    base = snap(release(EU, configmap("cfg", {"a": "1"})), release(us))
    head = snap(release(EU), release(us, configmap("cfg", {"a": "1"})))
    result = diff_snapshots(base, head, options=BUILTIN)
    assert only(result, EU).status is ResourceStatus.REMOVED
    assert only(result, us).status is ResourceStatus.ADDED


def test_hash_suffixed_configmap_is_a_rename() -> None:
    settings_text = "\n".join(f"option{i} = value{i}" for i in range(20)) + "\n"
    old = configmap("app-config-5f6d7", {"app.conf": settings_text})
    new = configmap("app-config-8g9h0", {"app.conf": settings_text.replace("value7", "seven")})
    other = configmap("unrelated", {"x": "y"})
    result = diff_snapshots(snap(release(EU, old)), snap(release(EU, new, other)), options=BUILTIN)
    renamed, added = sorted(result.releases[0].resources, key=lambda d: d.status.value)[::-1]
    assert renamed.status is ResourceStatus.RENAMED
    assert added.status is ResourceStatus.ADDED and added.key.name == "unrelated"
    assert renamed.base_key is not None and renamed.base_key.name == "app-config-5f6d7"
    assert renamed.key.name == "app-config-8g9h0"
    assert renamed.similarity is not None and renamed.similarity > 0.9
    lines = renamed.semantic_lines()
    assert lines[0] == 'metadata.name: "app-config-5f6d7" → "app-config-8g9h0"'
    assert lines[1] == 'data["app.conf"]: text changed'
    assert "    -option7 = value7" in lines and "    +option7 = seven" in lines


def test_renames_pair_best_first() -> None:
    a = configmap("a-111", {"k": "alpha " * 20})
    b = configmap("b-111", {"k": "beta " * 20})
    result = diff_snapshots(
        snap(release(EU, a, b)),
        snap(
            release(
                EU,
                configmap("x-222", {"k": "beta " * 19 + "gamma "}),
                configmap("y-222", {"k": "alpha " * 20}),
            )
        ),
        options=DiffOptions(differ="builtin", rename_threshold=0.8),
    )
    pairs = {
        (d.base_key.name if d.base_key else None, d.key.name) for d in result.releases[0].resources
    }
    assert pairs == {("a-111", "y-222"), ("b-111", "x-222")}


def test_different_objects_are_not_renames() -> None:
    old = configmap("one", {"a": "completely different content here"})
    new = configmap("two", {"zzz": "1"})
    result = diff_snapshots(snap(release(EU, old)), snap(release(EU, new)), options=BUILTIN)
    assert {d.status for d in result.releases[0].resources} == {
        ResourceStatus.ADDED,
        ResourceStatus.REMOVED,
    }


def test_similarity_bounds() -> None:
    assert similarity("abc", "abc") == 1.0
    assert similarity("aaaa", "zzzz", floor=0.5) == 0.0


# --- noise rules ---------------------------------------------------------------------------------

NOISE = NoiseRules.from_mapping({"labels": ["helm.sh/*"], "annotations": ["checksum/*"]})


def test_routine_changes_are_listed_not_shown() -> None:
    base = snap(release(EU, deployment()))
    head = snap(release(EU, deployment(image="nginx:2", chart="web-1.1.0", checksum="def")))
    result = diff_snapshots(base, head, options=DiffOptions(differ="builtin", noise=NOISE))
    diff = only(result)
    assert diff.semantic_lines() == [
        'spec.template.spec.containers[name=web].image: "nginx:1.25" → "nginx:2"'
    ]
    assert [str(item) for item in diff.routine] == [
        'metadata.labels["helm.sh/chart"]: "web-1.0.0" → "web-1.1.0"  [labels: helm.sh/*]',
        'spec.template.metadata.annotations.checksum/config: "abc" → "def"'
        "  [annotations: checksum/*]",
        'spec.template.metadata.labels["helm.sh/chart"]: "web-1.0.0" → "web-1.1.0"'
        "  [labels: helm.sh/*]",
    ]
    assert "helm.sh" not in diff.unified and "checksum" not in diff.unified
    assert "+      - image: nginx:2" in diff.unified.splitlines()
    assert not diff.routine_only
    assert result.releases[0].routine_counts() == {
        "labels: helm.sh/*": 2,
        "annotations: checksum/*": 1,
    }
    assert result.routine_counts() == result.releases[0].routine_counts()


def test_only_routine_changes_make_a_routine_only_change() -> None:
    base = snap(release(EU, deployment(), service()))
    head = snap(release(EU, deployment(chart="web-1.1.0"), service()))
    result = diff_snapshots(base, head, options=DiffOptions(differ="builtin", noise=NOISE))
    diff = only(result)
    assert (diff.status, diff.routine_only) == (ResourceStatus.CHANGED, True)
    assert (diff.unified, diff.changes, len(diff.routine)) == ("", (), 2)
    assert status_of(result) is ReleaseStatus.CHANGED
    assert result.releases[0].routine_only
    assert result.groups == (), "routine-only changes are counted per release, not grouped"
    assert result.summary()[0].routine_only == 1
    assert result.has_changes


def test_path_rules_and_ignored_kinds() -> None:
    noise = NoiseRules.from_mapping(
        {"paths": ["spec.template.metadata.annotations"], "kinds": ["Secret"]}
    )
    base = snap(release(EU, deployment(), secret("db", {"password": "MASK1"})))
    head = snap(
        release(
            EU,
            deployment(checksum="new"),
            secret("db", {"password": "MASK2"}),
            secret("extra", {"x": "MASK3"}),
        )
    )
    result = diff_snapshots(base, head, options=DiffOptions(differ="builtin", noise=noise))
    by_name = {d.key.name: d for d in result.releases[0].resources}
    assert all(d.routine_only for d in by_name.values())
    assert [str(r) for r in by_name["web"].routine] == [
        'spec.template.metadata.annotations.checksum/config: "abc" → "new"'
        "  [paths: spec.template.metadata.annotations]"
    ]
    assert [str(r) for r in by_name["db"].routine] == [
        'data.password: "MASK1" → "MASK2"  [kinds: Secret]'
    ]
    assert by_name["extra"].status is ResourceStatus.ADDED
    assert [str(r) for r in by_name["extra"].routine] == ["(object): added  [kinds: Secret]"]
    assert by_name["extra"].unified == ""


def test_routine_annotation_map_added_leaves_no_trace_in_the_unified_diff() -> None:
    plain = deployment()
    del plain["spec"]["template"]["metadata"]["annotations"]
    head = deployment(image="nginx:2")
    result = diff_snapshots(
        snap(release(EU, plain)),
        snap(release(EU, head)),
        options=DiffOptions(differ="builtin", noise=NOISE),
    )
    diff = only(result)
    assert "annotations" not in diff.unified
    assert [r.rule for r in diff.routine] == ["annotations: checksum/*"]
    assert len(diff.changes) == 1


# --- grouping ------------------------------------------------------------------------------------


def test_identical_changes_across_releases_are_grouped() -> None:
    clusters = ["eu/prod-1", "eu/prod-2", "us/prod-1"]
    ids = [ReleaseId(c, "shop", "web") for c in clusters]
    other = ReleaseId("us/prod-2", "shop", "web")
    base = snap(*(release(rid, deployment()) for rid in [*ids, other]))
    head = snap(
        *(release(rid, deployment(image="nginx:1.26")) for rid in ids),
        release(other, deployment(image="nginx:9")),
    )
    result = diff_snapshots(base, head, options=BUILTIN)
    assert len(result.groups) == 2
    first, second = result.groups
    key = ResourceKey("apps", "Deployment", "shop", "web")
    assert first.members == tuple((rid, key) for rid in ids)
    assert second.members == ((other, key),)
    assert (first.kind, first.name, first.status) == ("Deployment", "web", ResourceStatus.CHANGED)
    assert first.body.startswith("@@ ") and "nginx:1.26" in first.body
    assert [str(c) for c in first.changes] == [
        'spec.template.spec.containers[name=web].image: "nginx:1.25" → "nginx:1.26"'
    ]


def test_the_same_value_change_on_differently_named_objects_is_one_group() -> None:
    one, two = ReleaseId("eu/prod-1", "shop", "web"), ReleaseId("eu/prod-1", "shop", "api")
    base = snap(release(one, deployment(name="web")), release(two, deployment(name="api")))
    head = snap(
        release(one, deployment(name="web", image="nginx:1.26")),
        release(two, deployment(name="api", image="nginx:1.26")),
    )
    (group,) = diff_snapshots(base, head, options=BUILTIN).groups
    assert [(rid, key.name) for rid, key in group.members] == [(two, "api"), (one, "web")]


# --- errors --------------------------------------------------------------------------------------


def test_head_failure_fails_and_base_failure_warns() -> None:
    broken = ReleaseId("eu/prod-1", "shop", "broken")
    fixed = ReleaseId("eu/prod-1", "shop", "fixed")
    both = ReleaseId("eu/prod-1", "shop", "both")
    base = snap(
        release(broken, service()),
        release(fixed, error="template: boom"),
        release(both, error="old error"),
        errors=["deployments/x/deployment.yaml: invalid"],
    )
    head = snap(
        release(broken, error="values: bad"),
        release(fixed, service()),
        release(both, error="new error"),
    )
    result = diff_snapshots(base, head, options=BUILTIN)
    assert [r.status for r in result.releases] == [ReleaseStatus.ERROR] * 3
    by_id = {r.id: r for r in result.releases}
    assert (by_id[both].base_error, by_id[both].head_error) == ("old error", "new error")
    assert by_id[broken].resources == (), "a failed side reports no removed objects"
    assert [(f.release, f.message) for f in result.head_errors] == [
        (broken, "values: bad"),
        (both, "new error"),
    ]
    assert [(f.release, f.message) for f in result.base_errors] == [
        (fixed, "template: boom"),
        (both, "old error"),
        (None, "deployments/x/deployment.yaml: invalid"),
    ]
    assert result.head_errors[0].reproduce == f"reviewer render --release {broken}"
    assert all(f.side is DiffSide.HEAD for f in result.head_errors)
    assert result.summary()[0].failed == 3
    assert not result.has_changes


def test_failed_release_is_no_move_source() -> None:
    api = ReleaseId("eu/prod-1", "shop", "api")
    base = snap(release(EU, configmap("cfg", {"a": "1"})), release(api))
    head = snap(release(EU, error="boom"), release(api, configmap("cfg", {"a": "1"})))
    result = diff_snapshots(base, head, options=BUILTIN)
    assert only(result, api).status is ResourceStatus.ADDED


def test_summary_per_cluster() -> None:
    us = ReleaseId("us/prod-1", "shop", "web")
    us_new = ReleaseId("us/prod-1", "shop", "new")
    base = snap(release(EU, service()), release(us, service()))
    head = snap(release(EU, service(port=81)), release(us, error="x"), release(us_new, service()))
    summary = {s.cluster: s for s in diff_snapshots(base, head, options=BUILTIN).summary()}
    assert (summary["eu/prod-1"].changed, summary["eu/prod-1"].failed) == (1, 0)
    assert (summary["us/prod-1"].added, summary["us/prod-1"].failed) == (1, 1)


def test_duplicate_identities_in_one_release_are_both_kept() -> None:
    base = snap(release(EU, configmap("c", {"a": "1"}), configmap("c", {"a": "2"})))
    head = snap(release(EU, configmap("c", {"a": "1"}), configmap("c", {"a": "3"})))
    result = diff_snapshots(base, head, options=BUILTIN)
    assert only(result).semantic_lines() == ['data.a: "2" → "3"']
    assert result.releases[0].unchanged == 1


def test_options_are_validated() -> None:
    with pytest.raises(ValueError, match="context"):
        DiffOptions(context=-1)
    with pytest.raises(ValueError, match="rename_threshold"):
        DiffOptions(rename_threshold=0)


# --- dyff ----------------------------------------------------------------------------------------


def _path_with(tmp_path: Path, script: str | None) -> str:
    """A PATH holding only a fake `dyff` (or nothing), plus the system tools a script needs."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if script is not None:
        fake = bin_dir / "dyff"
        fake.write_text("#!/bin/sh\n" + textwrap.dedent(script), encoding="utf-8")
        fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    return f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin"


def test_auto_falls_back_to_builtin_without_dyff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", _path_with(tmp_path, None))
    assert shutil.which("dyff") is None
    assert resolve_differ("auto") == "builtin"
    side = snap(release(EU, service()))
    changed = snap(release(EU, service(port=81)))
    result = diff_snapshots(side, changed, options=DiffOptions(differ="auto"))
    assert result.differ == "builtin"
    assert only(result).dyff is None
    with pytest.raises(ReviewerError, match="dyff"):
        resolve_differ("dyff")


def test_dyff_runs_through_the_command_chokepoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stand-in dyff records its arguments and the documents, and reports a difference.
    log = tmp_path / "args"
    script = f"""\
        echo "$@" > {log}
        cat "$4" "$5" >> {log}
        printf '\\033[1mspec.ports.http.port\\033[0m\\n  ± value change\\n    - 80\\n    + 81\\n'
        exit 1
    """
    monkeypatch.setenv("PATH", _path_with(tmp_path, script))
    base = snap(release(EU, service()))
    head = snap(release(EU, service(port=81)))
    result = diff_snapshots(base, head, options=DiffOptions(differ="auto"))
    assert result.differ == "dyff"
    diff = only(result)
    assert diff.semantic_lines() == [
        "spec.ports.http.port",
        "  ± value change",
        "    - 80",
        "    + 81",
    ]
    assert [str(c) for c in diff.changes] == ["spec.ports[name=http].port: 80 → 81"]
    recorded = log.read_text(encoding="utf-8").splitlines()
    argv = recorded[0].split()
    assert argv[:3] == ["between", "--omit-header", "--set-exit-code"]
    assert (Path(argv[3]).name, Path(argv[4]).name) == ("base.yaml", "head.yaml")
    assert not Path(argv[3]).exists(), "temporary files are removed"
    assert "  - name: http" in recorded and "    port: 81" in recorded


def test_dyff_error_exit_raises_a_command_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", _path_with(tmp_path, "echo secret-ish >&2\nexit 255\n"))
    base = snap(release(EU, service()))
    head = snap(release(EU, service(port=81)))
    with pytest.raises(CommandError, match="exit code 255") as caught:
        diff_snapshots(base, head, options=DiffOptions(differ="dyff"))
    assert "secret-ish" not in str(caught.value), "dyff output may quote values"


@pytest.mark.skipif(shutil.which("dyff") is None, reason="dyff is not installed")
def test_real_dyff_reports_the_change() -> None:
    base = snap(release(EU, deployment()))
    head = snap(release(EU, deployment(replicas=5)))
    diff = only(diff_snapshots(base, head, options=DiffOptions(differ="dyff")))
    text = "\n".join(diff.semantic_lines())
    assert "spec.replicas" in text and "5" in text


# --- properties ----------------------------------------------------------------------------------

_names = st.sampled_from(["web", "api", "db", "cache"])
_scalars = st.one_of(st.integers(-5, 5), st.text("abc", max_size=4), st.booleans(), st.none())
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text("xyz", max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def _releases(draw: st.DrawFn) -> list[RenderedRelease]:
    found = []
    for cluster in draw(st.sets(st.sampled_from(["a", "b/c"]), min_size=1)):
        names = draw(st.sets(_names, max_size=3))
        bodies = [
            {
                "apiVersion": draw(st.sampled_from(["v1", "apps/v1"])),
                "kind": draw(st.sampled_from(["ConfigMap", "Deployment"])),
                "metadata": {"name": name, "namespace": "ns"},
                "spec": draw(st.dictionaries(st.text("pq", max_size=2), _values, max_size=3)),
            }
            for name in names
        ]
        found.append(release(ReleaseId(cluster, "d", "r"), *bodies))
    return found


@settings(max_examples=60, deadline=None)
@given(_releases())
def test_a_snapshot_diffed_with_itself_has_no_changes(releases: list[RenderedRelease]) -> None:
    side = snap(*releases)
    result = diff_snapshots(side, side, options=DiffOptions(differ="builtin", noise=NOISE))
    assert {r.status for r in result.releases} <= {ReleaseStatus.UNCHANGED}
    assert not result.has_changes and result.groups == ()
    assert sum(r.unchanged for r in result.releases) == sum(len(r.resources) for r in releases)
