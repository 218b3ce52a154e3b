"""The side stage alone: one checkout planned, rendered and redacted (`reviewer.side`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from agekeys import AgeIdentity, encrypt, sops_decoder
from conftest import Repo, received_values

from reviewer.errors import ReviewerError
from reviewer.gotmpl import TemplateRenderer
from reviewer.model import ReleaseId, Snapshot
from reviewer.prepare import SideRequest, prepare_sides
from reviewer.proc import Programs
from reviewer.redact import LeakError
from reviewer.side import Selection, SideOptions, render_side
from reviewer.sops import KeylessMode
from reviewer.tooling import Tooling, open_tooling

PASSWORD = "hunter2-Sup3r-base"
NEW_PASSWORD = "Corr3ct-Horse-head"
APP = "apps: [{template: app}]\n"


pytestmark = pytest.mark.usefixtures("age_key")


def fleet(root: Path, identity: AgeIdentity, password: str) -> Repo:
    """Two clusters with one deployment each; `a`'s password comes from a SOPS file."""
    repo = Repo(root).add_chart().add_template()
    repo.write("deployments/a/apps/web/deployment.yaml", APP)
    repo.write("deployments/b/apps/web/deployment.yaml", APP)
    target = repo.root / "deployments/a/apps/web"
    encrypt(target, {"password": password}, identity, name="values.sops.yaml")
    return repo


def text_of(snapshot: Snapshot) -> str:
    """Every object body of a snapshot as one text."""
    return json.dumps(
        [r.body for release in snapshot.releases for r in release.resources], sort_keys=True
    )


def request(tmp_path: Path, selection: Selection | None = None) -> SideRequest:
    """Render with a chart cache under `tmp_path`, every release or those selected."""
    options = SideOptions(
        selection=selection or Selection(), programs=Programs.from_environment(os.environ)
    )
    return SideRequest(options=options, tooling=Tooling(cache_dir=tmp_path / "chart-cache"))


def test_render_side_keeps_real_values_and_redacted_plans_apart(
    tmp_path: Path, age_key: AgeIdentity
) -> None:
    repo = fleet(tmp_path / "repo", age_key, PASSWORD)
    with open_tooling(Tooling(cache_dir=tmp_path / "cache")) as tools:
        side = render_side(
            repo.root,
            options=SideOptions(),
            tools=tools,
            renderer=TemplateRenderer(),
            secrets=sops_decoder(),
        )
    assert received_values(side.snapshot, "a", "web", "app")["password"] == PASSWORD
    shown = side.plans[ReleaseId("a", "web", "app")].values["password"]
    assert shown != PASSWORD and PASSWORD not in json.dumps(shown)
    assert side.replacements[PASSWORD] == shown
    assert PASSWORD in side.leaves
    assert [plan.id for plan in side.real] == [
        ReleaseId("a", "web", "app"),
        ReleaseId("b", "web", "app"),
    ]


def test_prepared_sides_hide_the_secrets_of_both_sides_everywhere(
    tmp_path: Path, age_key: AgeIdentity
) -> None:
    base = fleet(tmp_path / "base", age_key, PASSWORD)
    head = fleet(tmp_path / "head", age_key, NEW_PASSWORD)
    prepared = prepare_sides(
        (base.root, head.root), request(tmp_path), config_root=base.root, marker_key=b"k" * 32
    )
    assert PASSWORD in text_of(prepared.rendered[0].snapshot)
    for snapshot in prepared.redacted:
        shown = text_of(snapshot)
        assert PASSWORD not in shown and NEW_PASSWORD not in shown
    guard = prepared.guard()
    for secret in (PASSWORD, NEW_PASSWORD):
        with pytest.raises(LeakError):
            guard.check(f"value: {secret}", "report")
    guard.check(text_of(prepared.redacted[1]), "report")
    assert prepared.notes == ()


def test_a_selection_renders_only_its_clusters(tmp_path: Path, age_key: AgeIdentity) -> None:
    repo = fleet(tmp_path / "repo", age_key, PASSWORD)
    prepared = prepare_sides(
        (repo.root,),
        request(tmp_path, Selection(clusters=("b",))),
        config_root=repo.root,
        marker_key=None,
    )
    (snapshot,) = prepared.redacted
    assert [str(release.id) for release in snapshot.releases] == ["b/web/app"]


def test_a_filter_naming_no_cluster_fails_before_rendering_unless_only_reported(
    tmp_path: Path, age_key: AgeIdentity
) -> None:
    repo = fleet(tmp_path / "repo", age_key, PASSWORD)
    partly = request(tmp_path, Selection(clusters=("b", "nowhere")))
    with pytest.raises(ReviewerError, match="--cluster nowhere: no such cluster"):
        prepare_sides((repo.root,), partly, config_root=repo.root, marker_key=None)
    reported: list[str] = []
    prepared = prepare_sides(
        (repo.root,), partly, config_root=repo.root, marker_key=None, unknown_filter=reported.append
    )
    assert reported == ["warning: --cluster nowhere: no such cluster"]
    assert [str(release.id) for release in prepared.redacted[0].releases] == ["b/web/app"]


def test_keyless_sides_render_placeholders_and_say_so(tmp_path: Path, age_key: AgeIdentity) -> None:
    repo = fleet(tmp_path / "repo", age_key, PASSWORD)
    keyless = SideRequest(tooling=Tooling(cache_dir=tmp_path / "cache"), secrets=KeylessMode.ALWAYS)
    prepared = prepare_sides((repo.root,), keyless, config_root=repo.root, marker_key=None)
    assert prepared.keyless is not None and "values.sops.yaml" in prepared.keyless
    assert prepared.notes[0] == prepared.keyless
    assert PASSWORD not in text_of(prepared.rendered[0].snapshot)
