"""Fast paths change how much work a review does, never what it reports.

Each fast path (a cache of something a side reads or resolves more than once) can be
switched back to the plain computation it replaces; the JSON report of a small fleet
must come out byte for byte the same either way.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import GitRepo

from reviewer import jail, render, yamlio
from reviewer.charts import ChartFetcher, ResolvedChart
from reviewer.cli import main
from reviewer.errors import ExitStatus
from reviewer.plan import ReleasePlan
from reviewer.values import ValuesLoader

EXAMPLE = Path(__file__).parent.parent / "examples" / "fleet"


def _read_every_time(self: ValuesLoader, source: str) -> str:
    jail.resolve_file(self.root, source)
    return yamlio.read_text(self.root / source, source=source)


def _stat_every_time(self: ValuesLoader, source: str) -> bool:
    return (self.root / source).is_file()


def _resolve_every_time(
    release: ReleasePlan, root: Path, fetcher: ChartFetcher, cache: render.RenderCache
) -> ResolvedChart:
    return fetcher.resolve(release.chart, release.version, root=root)


Slow = Callable[[pytest.MonkeyPatch], None]

SLOW_PATHS: dict[str, Slow] = {
    "values files read once per side": lambda mp: mp.setattr(
        ValuesLoader, "read_text", _read_every_time
    ),
    "directories listed once per side": lambda mp: mp.setattr(
        ValuesLoader, "is_file", _stat_every_time
    ),
    "local charts resolved once per side": lambda mp: mp.setattr(
        render, "_resolved", _resolve_every_time
    ),
}


@pytest.fixture
def changed_example(git_repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> GitRepo:
    """The example fleet committed, then changed at several levels in the working tree."""
    monkeypatch.setenv("SOPS_AGE_KEY_FILE", str(EXAMPLE / "demo-age-key.txt"))
    shutil.copytree(EXAMPLE, git_repo.root, dirs_exist_ok=True)
    git_repo.commit("example fleet")
    global_values = git_repo.root / "deployments" / "global.values.yaml"
    global_values.write_text(
        global_values.read_text(encoding="utf-8") + "\nperfCheck: {added: true}\n",
        encoding="utf-8",
    )
    web_values = git_repo.root / "charts" / "web" / "values.yaml"
    web_values.write_text(
        web_values.read_text(encoding="utf-8") + "\nextraLabel: changed\n", encoding="utf-8"
    )
    return git_repo


def _report(repo: GitRepo, out: Path) -> bytes:
    with pytest.raises(SystemExit) as done:
        main(
            [
                "diff",
                "--repo",
                str(repo.root),
                "--base",
                "main",
                "--format",
                "json",
                "--output",
                str(out),
                "--jobs",
                "1",
            ]
        )
    assert done.value.code in (ExitStatus.OK, ExitStatus.CHANGES)
    return out.read_bytes()


@pytest.mark.parametrize("slow", [*SLOW_PATHS, "all"])
def test_reports_are_identical_with_and_without_the_fast_path(
    changed_example: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slow: str
) -> None:
    fast = _report(changed_example, tmp_path / "fast.json")
    with monkeypatch.context() as patched:
        for name, switch in SLOW_PATHS.items():
            if slow in (name, "all"):
                switch(patched)
        plain = _report(changed_example, tmp_path / "plain.json")
    assert json.loads(fast)["summary"]["releases"]["changed"] > 0
    assert fast == plain
