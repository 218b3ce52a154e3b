"""Reports built from a `Review`: versioned JSON, terminal text and Markdown."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from conftest import Repo
from stages import diff_repos, plans_by_id

from reviewer import explain, report_json, report_markdown, report_text
from reviewer.report import Review, SideInfo

APP = "apps: [{template: app}]\n"
BASE = SideInfo("main", "0123456789abcdef0123456789abcdef01234567")
HEAD = SideInfo("feature", "89abcdef0123456789abcdef0123456789abcdef")
WEB_VALUES = "deployments/c1/apps/web/values.yaml"


def fleet(root: Path, edits: dict[str, str] | None = None, removed: tuple[str, ...] = ()) -> Repo:
    """Clusters c1 (deployments `web`, `old`) and c2 (`web`), then `edits` and `removed` dirs."""
    repo = Repo(root).add_chart().add_template()
    repo.write("deployments/c1/apps/web/deployment.yaml", APP)
    repo.write("deployments/c1/apps/old/deployment.yaml", APP)
    repo.write("deployments/c2/apps/web/deployment.yaml", APP)
    repo.write_all(edits or {})
    for directory in removed:
        shutil.rmtree(root / directory)
    return repo


def review(base: Repo, head: Repo) -> Review:
    """The review of `head` against `base`, explained as `reviewer diff` does."""
    diff = diff_repos(base, head)
    explanation = explain.explain(
        base=plans_by_id(base.root, failures=True),
        head=plans_by_id(head.root, failures=True),
        files=explain.changed_files(base.root, head.root),
        diff=diff,
        redact=lambda values: values,
    )
    return Review(base=BASE, head=HEAD, diff=diff, explanation=explanation)


def changed_fleet(tmp_path: Path) -> Review:
    """c1/web changes a value, c1/old is removed, c2/api is added, c2/web stays."""
    head = fleet(
        tmp_path / "head",
        {WEB_VALUES: "replicas: 3\n", "deployments/c2/apps/api/deployment.yaml": APP},
        removed=("deployments/c1/apps/old",),
    )
    return review(fleet(tmp_path / "base"), head)


def by_release(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{r['cluster']}/{r['deployment']}/{r['release']}": r for r in document["releases"]}


def test_json_report_lists_every_release_with_its_status_and_the_totals(
    tmp_path: Path,
) -> None:
    document = json.loads(json.dumps(report_json.to_json(changed_fleet(tmp_path))))
    assert document["schema"] == "reviewer.report/v1"
    assert document["base"] == {"ref": "main", "sha": BASE.sha, "errors": []}
    assert document["summary"]["releases"] == {
        "added": 1,
        "changed": 1,
        "removed": 1,
        "unchanged": 1,
        "failed": 0,
    }
    releases = by_release(document)
    assert {name: r["status"] for name, r in releases.items()} == {
        "c1/old/app": "removed",
        "c1/web/app": "changed",
        "c2/api/app": "added",
        "c2/web/app": "unchanged",
    }
    web = releases["c1/web/app"]
    (values,) = web["values"]
    assert values["change"] == "replicas: added 3"
    assert values["head"] == {"source": WEB_VALUES, "level": "deployment web"}
    (config_map,) = web["resources"]
    assert (config_map["kind"], config_map["name"], config_map["status"]) == (
        "ConfigMap",
        "app-values",
        "changed",
    )
    assert "+    replicas: 3" in config_map["diff"]
    assert [
        (impact["file"], impact["releases"], impact["changed"])
        for impact in document["explain"]["blastRadius"]
    ] == [
        ("deployments/c1/apps/old/deployment.yaml", ["c1/old/app"], 1),
        (WEB_VALUES, ["c1/web/app"], 1),
        ("deployments/c2/apps/api/deployment.yaml", ["c2/api/app"], 1),
    ]
    assert "values" not in document["explain"], "values are listed per release"


def test_text_report_shows_the_sides_the_totals_and_only_changed_releases(
    tmp_path: Path,
) -> None:
    reviewed = changed_fleet(tmp_path)
    text = report_text.render_text(reviewed)
    lines = text.splitlines()
    assert lines[0] == "reviewer diff: main (0123456) → feature (89abcde)"
    assert lines[1] == "1 changed, 1 added, 1 removed, 0 failed, 1 unchanged release(s)"
    assert "~ c1/web/app [changed]" in lines
    assert "+ c2/api/app [added]" in lines
    assert "- c1/old/app [removed]" in lines
    assert "c2/web/app" not in text
    assert f"      replicas: added 3  ← {WEB_VALUES} (deployment web)" in lines
    assert "\x1b[" not in text
    coloured = report_text.render_text(reviewed, colour=True)
    assert "\x1b[33m~ c1/web/app [changed]\x1b[0m" in coloured


def test_markdown_report_summarises_clusters_and_folds_each_release(tmp_path: Path) -> None:
    markdown = report_markdown.render_markdown(changed_fleet(tmp_path))
    assert markdown.startswith("## :mag: reviewer: 3 release(s) change\n")
    assert "| `c1` | 0 | 1 | 1 | 0 |" in markdown
    assert "| `c2` | 1 | 0 | 0 | 0 |" in markdown
    assert "<code>c1/web/app</code> changed</summary>" in markdown
    assert "<code>c2/web/app</code>" not in markdown
    assert markdown.count("<details>") == markdown.count("</details>") == 3


def test_no_change_is_said_plainly_in_every_format(tmp_path: Path) -> None:
    reviewed = review(fleet(tmp_path / "base"), fleet(tmp_path / "head"))
    assert report_markdown.render_markdown(reviewed).startswith(
        "## :white_check_mark: reviewer: no rendered changes\n"
    )
    assert report_text.render_text(reviewed).splitlines()[1] == (
        "0 changed, 0 added, 0 removed, 0 failed, 3 unchanged release(s)"
    )
    assert report_json.to_json(reviewed)["releases"][0]["resources"] == []


def test_a_head_failure_fails_the_review_and_says_how_to_reproduce(tmp_path: Path) -> None:
    broken = {"deployments/c2/apps/web/deployment.yaml": "apps: [{template: nope}]\n"}
    reviewed = review(fleet(tmp_path / "base"), fleet(tmp_path / "head", broken))
    assert reviewed.failed
    (error,) = report_json.to_json(reviewed)["head"]["errors"]
    assert (error["cluster"], error["deployment"]) == ("c2", "web")
    assert "deployments/c2/apps/web/deployment.yaml" in error["message"]
    assert "--cluster c2 --deployment web" in error["reproduce"]
    assert "FAILED" in report_text.render_text(reviewed)
    markdown = report_markdown.render_markdown(reviewed)
    assert markdown.startswith("## :x: reviewer: the merge result does not render\n")
    assert f"git checkout {HEAD.sha}" in markdown


def test_a_base_failure_is_only_a_warning(tmp_path: Path) -> None:
    broken = {"deployments/c2/apps/web/deployment.yaml": "apps: [{template: nope}]\n"}
    reviewed = review(fleet(tmp_path / "base", broken), fleet(tmp_path / "head"))
    assert not reviewed.failed
    assert any("target branch failed to render" in w for w in reviewed.all_warnings)
    assert report_json.to_json(reviewed)["warnings"] == list(reviewed.all_warnings)
