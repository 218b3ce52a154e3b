"""Many changed objects diffed in two processes give the comparison of one process."""

from __future__ import annotations

import os
from collections.abc import Sequence
from multiprocessing import resource_tracker
from pathlib import Path

import pytest
from processes import children
from test_diff import BUILTIN, configmap, deployment, release, service, snap

from reviewer import ending
from reviewer.diff import split
from reviewer.diff.compare import diff_snapshots
from reviewer.diff.pairing import Pair
from reviewer.diff.resource import ResourceDiff
from reviewer.diff.result import ReleaseStatus, SnapshotDiff
from reviewer.diff.views import Settings
from reviewer.model import ReleaseId, Snapshot

_RECORD = "REVIEWER_TEST_DIFF_SHARE"  # where the spawned process writes its pid


def _sides(releases: int) -> tuple[Snapshot, Snapshot]:
    """Releases whose deployment and config change, whose service does not."""
    ids = [ReleaseId(f"eu/prod-{n % 3}", "shop", f"web-{n}") for n in range(releases)]
    base = snap(*(release(rid, deployment(), service(), configmap("c", {"a": "1"})) for rid in ids))
    head = snap(
        *(
            release(rid, deployment(image=f"nginx:1.{n}"), service(), configmap("c", {"a": "2"}))
            for n, rid in enumerate(ids)
        )
    )
    return base, head


def _pids() -> set[int]:
    return {pid for pid, _ in children()}


def _compare(base: Snapshot, head: Snapshot, jobs: int) -> SnapshotDiff:
    return diff_snapshots(base, head, options=BUILTIN, jobs=jobs)


def _recorded(pairs: Sequence[Pair], settings: Settings) -> list[ResourceDiff | None]:
    """`diff_share`, saying which process ran it (pickled by name: runs over there)."""
    Path(os.environ[_RECORD]).write_text(str(os.getpid()), encoding="ascii")
    return split.diff_share(pairs, settings)


def _die(*args: object) -> None:
    os._exit(3)  # as the out-of-memory killer would end it: no cleanup, no answer


@pytest.fixture
def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "share-pid"
    monkeypatch.setenv(_RECORD, str(path))
    monkeypatch.setattr(split, "SPLIT_AT", 4)
    monkeypatch.setattr(split, "_PIECE", 2)  # several pieces, the last one shorter
    # multiprocessing's own helper, started with the first spawned process, lives as long
    # as this process does: running before, it is not counted as left behind.
    resource_tracker.ensure_running()
    return path


def test_half_the_changed_objects_are_diffed_by_another_process_gone_after(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, head = _sides(7)  # 14 changed objects: 7 sent, in pieces of 2, 2, 2 and 1
    one = _compare(base, head, jobs=1)
    monkeypatch.setattr(split, "diff_share", _recorded)
    before = _pids()
    two = _compare(base, head, jobs=2)
    assert two == one
    assert [r.status for r in two.releases] == [ReleaseStatus.CHANGED] * 7
    assert int(record.read_text(encoding="ascii")) != os.getpid()
    assert _pids() == before  # not even a zombie


def _no_process(*args: object, **kwargs: object) -> None:
    raise OSError(24, "Too many open files")


@pytest.mark.parametrize("failure", ["dies", "cannot start"])
def test_a_share_without_a_process_to_finish_it_is_diffed_here(
    record: Path, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    base, head = _sides(6)
    one = _compare(base, head, jobs=1)
    if failure == "dies":
        monkeypatch.setattr(split, "diff_share", _die)
    else:  # no pipe, no pool (descriptors or processes exhausted)
        monkeypatch.setattr(split, "diff_share", _recorded)
        monkeypatch.setattr(ending, "ProcessPoolExecutor", _no_process)
    before = _pids()
    assert _compare(base, head, jobs=2) == one
    assert _pids() == before  # not even a zombie
    assert not record.exists()


@pytest.mark.parametrize(("releases", "jobs"), [(1, 2), (6, 1)])
def test_few_changed_objects_or_one_job_are_diffed_here(
    record: Path, monkeypatch: pytest.MonkeyPatch, releases: int, jobs: int
) -> None:
    """One release has two changed objects, fewer than `SPLIT_AT`; `--jobs 1` never splits."""
    base, head = _sides(releases)
    monkeypatch.setattr(split, "diff_share", _recorded)
    _compare(base, head, jobs=jobs)
    assert not record.exists()


def test_unchanged_objects_do_not_count_towards_a_split(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six releases of three identical objects: nothing to diff, nothing sent anywhere."""
    base, _ = _sides(6)
    monkeypatch.setattr(split, "diff_share", _recorded)
    assert not _compare(base, base, jobs=2).has_changes
    assert not record.exists()
