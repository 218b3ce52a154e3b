"""Releases neither side renders: every input the same on both sides of a diff.

A one-line change leaves most deployments alone; the fast path reports them unchanged
without rendering them, unless the change could reach them through nested releases
(a chart directory or a Flux source object changed) or `--fail-on-preexisting` needs
their failures.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import GitRepo

from reviewer.cli import main
from reviewer.errors import ExitStatus

EXAMPLE = Path(__file__).parent.parent / "examples" / "fleet"
UNRENDERED = "not rendered (every input the same on both sides)"
BROKEN = {
    "templates/broken/helmfile.yaml.gotmpl": (
        "releases:\n  - name: broken\n    chart: ../../charts/broken\n    namespace: broken\n"
    ),
    "charts/broken/Chart.yaml": "apiVersion: v2\nname: broken\nversion: 0.1.0\n",
    "charts/broken/templates/fail.yaml": '{{ fail "the broken chart always fails" }}\n',
    "deployments/staging/stg-2/apps/broken/deployment.yaml": "apps:\n  - template: broken\n",
}


@pytest.fixture
def example(git_repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> GitRepo:
    """The example fleet plus a deployment that fails to render on every side, as `main`."""
    monkeypatch.setenv("SOPS_AGE_KEY_FILE", str(EXAMPLE / "demo-age-key.txt"))
    shutil.copytree(EXAMPLE, git_repo.root, dirs_exist_ok=True)
    git_repo.write_all(BROKEN)
    git_repo.commit("example fleet with a broken deployment")
    return git_repo


def _diff(
    repo: Path, out: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, dict[str, Any], str]:
    """Exit status, JSON report and stderr of `reviewer diff --base main`."""
    capsys.readouterr()
    args = ["diff", "--repo", str(repo), "--base", "main", "--jobs", "1", "--format", "json"]
    with pytest.raises(SystemExit) as done:
        main([*args, "--output", str(out), *extra])
    code = done.value.code
    assert isinstance(code, int)
    return code, json.loads(out.read_text(encoding="utf-8")), capsys.readouterr().err


def _release(report: dict[str, Any], cluster: str, release: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [
        r for r in report["releases"] if r["cluster"] == cluster and r["release"] == release
    ]
    assert len(found) == 1, (cluster, release)
    return found[0]


def _edit_sandbox(repo: GitRepo) -> None:
    path = repo.root / "deployments/sandbox/cluster.values.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "extraLabel: edited\n", encoding="utf-8")


def test_releases_a_change_cannot_reach_are_reported_unchanged_without_rendering(
    example: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = example.root / "deployments/sandbox/cluster.values.yaml"
    text = path.read_text(encoding="utf-8")
    assert "replicaCount: 1\n" in text
    path.write_text(text.replace("replicaCount: 1\n", "replicaCount: 2\n"), encoding="utf-8")
    code, report, said = _diff(example.root, tmp_path / "fast.json", capsys)
    assert code == ExitStatus.OK
    assert report["summary"]["releases"]["changed"] > 0
    assert UNRENDERED in said
    web = _release(report, "staging/stg-1", "storefront-web")
    assert web["status"] == "unchanged"
    assert web["unchangedResources"] is None
    assert web["chart"] == {"base": "web-1.2.0", "head": "web-1.2.0"}
    # The broken release is out of the change's reach: not rendered, so not listed as failing.
    broken = _release(report, "staging/stg-2", "broken")
    assert broken["status"] == "unchanged"
    assert report["stillFailing"] == []


def test_fail_on_preexisting_renders_them_and_finds_what_still_fails(
    example: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _edit_sandbox(example)
    code, report, said = _diff(
        example.root, tmp_path / "strict.json", capsys, "--fail-on-preexisting"
    )
    assert code == ExitStatus.RENDER_FAILED
    assert UNRENDERED not in said
    (failing,) = report["stillFailing"]
    assert (failing["cluster"], failing["release"], failing["blocking"]) == (
        "staging/stg-2",
        "broken",
        True,
    )
    assert "the broken chart always fails" in failing["message"]
    code, report, _ = _diff(example.root, tmp_path / "plain.json", capsys, "--no-fast-path")
    assert [f["release"] for f in report["stillFailing"]] == ["broken"]
    assert _release(report, "staging/stg-1", "storefront-web")["unchangedResources"] > 0


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (
            "flux/sources.yaml",
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\n"
            "metadata:\n  name: charts\nspec:\n  url: https://charts.example.invalid\n",
        ),
        ("charts/web/templates/NOTES.txt", "edited\n"),
    ],
    ids=["flux-source", "chart-file"],
)
def test_a_change_nested_releases_could_read_renders_everything(
    example: GitRepo,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    path: str,
    text: str,
) -> None:
    _edit_sandbox(example)
    example.write(path, text)
    _, report, said = _diff(example.root, tmp_path / "report.json", capsys)
    assert UNRENDERED not in said
    assert _release(report, "staging/stg-1", "storefront-web")["unchangedResources"] > 0
    assert [f["release"] for f in report["stillFailing"]] == ["broken"]
