"""Publishing against a GitHub API on loopback that validates every exchange against GitHub's
OpenAPI description: sticky comments, retries, statuses, check runs, job summary."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from github_api import TOKEN, FakeGitHub, User, load_spec

from reviewer.comment import Marker, Part, balance_problems, plan_comments, size
from reviewer.errors import ReviewerError
from reviewer.publish import (
    JOB_SUMMARY_LIMIT,
    CommentMode,
    GitHub,
    Outcome,
    Pacer,
    PublishError,
    StatusKind,
    report_status,
    token_from_env,
    write_job_summary,
)
from reviewer.sticky import Sticky, SyncResult, sync_comments

SHA = "a" * 40
PR = 12


class FakeTime:
    """A clock that only moves when slept on, recording every sleep."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now

    def pacer(self) -> Pacer:
        return Pacer(sleep=self.sleep, clock=self.clock, wall=self.clock)


@pytest.fixture
def clock() -> FakeTime:
    return FakeTime()


def client(fake: FakeGitHub, clock: FakeTime) -> GitHub:
    return GitHub(token=TOKEN, api_url=fake.url, repository=fake.repository, pacer=clock.pacer())


def report(parts: int, *, tag: str = "v1") -> str:
    """A report that splits into `parts` parts at a 2,000-byte budget."""
    block = "<details>\n<summary>r</summary>\n\n```diff\n" + f"+ {tag} line\n" * 120 + "```\n"
    return "## reviewer\n\n" + (block + "</details>\n\n") * parts


def plan(markdown: str, *, sha: str = SHA, key: str = "default") -> list[Part]:
    return plan_comments(markdown, key=key, sha=sha, pointer="see summary", budget=2000)


def sync(
    fake: FakeGitHub,
    clock: FakeTime,
    markdown: str,
    *,
    mode: CommentMode = CommentMode.UPDATE,
    sha: str = SHA,
    key: str = "default",
) -> SyncResult:
    github = client(fake, clock)
    sticky = Sticky(
        github, PR, key, github.viewer(), hidden_aware=mode is CommentMode.HIDE_OUTDATED
    )
    return sync_comments(sticky, plan(markdown, sha=sha, key=key), mode)


def ours(fake: FakeGitHub, key: str = "default") -> list[tuple[int, Marker]]:
    found = []
    for comment in fake.comments(PR):
        marker = Marker.parse(comment.body)
        if marker and marker.key == key and not comment.minimized:
            found.append((comment.id, marker))
    return found


def part_numbers(fake: FakeGitHub) -> list[int]:
    return [marker.part for _, marker in ours(fake)]


# --- sticky comments -------------------------------------------------------------------------


def test_first_run_creates_the_parts_in_order(fake: FakeGitHub, bot: User, clock: FakeTime) -> None:
    result = sync(fake, clock, report(3))
    assert part_numbers(fake) == [1, 2, 3]
    assert [m.total for _, m in ours(fake)] == [3, 3, 3]
    assert (result.created, result.edited, result.deleted) == (3, 0, 0)
    assert result.urls == [
        f"https://github.test/{fake.repository}/pull/{PR}#issuecomment-{cid}"
        for cid, _ in ours(fake)
    ]
    assert all(c.user.login == "github-actions[bot]" for c in fake.comments(PR))


def test_rerun_edits_in_place_and_skips_unchanged_parts(
    fake: FakeGitHub, bot: User, clock: FakeTime
) -> None:
    sync(fake, clock, report(2))
    ids = [cid for cid, _ in ours(fake)]
    writes = len(fake.writes())
    again = sync(fake, clock, report(2))
    assert len(fake.writes()) == writes, "an identical report writes nothing"
    assert (again.created, again.edited) == (0, 0)
    changed = sync(fake, clock, report(2, tag="v2"), sha="b" * 40)
    assert [cid for cid, _ in ours(fake)] == ids
    assert (changed.created, changed.edited, changed.deleted) == (0, 2, 0)
    assert all("v2 line" in c.body and "b" * 40 in c.body for c in fake.comments(PR))


def test_shrinking_report_deletes_the_extra_parts(
    fake: FakeGitHub, bot: User, clock: FakeTime
) -> None:
    sync(fake, clock, report(4))
    first = ours(fake)[0][0]
    result = sync(fake, clock, report(1, tag="v2"))
    assert part_numbers(fake) == [1]
    assert ours(fake)[0] == (first, Marker("default", 1, 1, SHA))
    assert result.deleted == 3


def test_growing_report_adds_parts(fake: FakeGitHub, bot: User, clock: FakeTime) -> None:
    sync(fake, clock, report(1))
    result = sync(fake, clock, report(3, tag="v2"))
    assert part_numbers(fake) == [1, 2, 3]
    assert (result.created, result.edited) == (2, 1)


def test_foreign_comments_are_never_touched(fake: FakeGitHub, bot: User, clock: FakeTime) -> None:
    alice = fake.add_user("alice-token-0123456789", "alice")
    ours_marker = Marker("default", 1, 1, SHA).render()
    foreign = {
        fake.seed_comment(PR, alice, ours_marker + "\nalice copied our marker"): "alice",
        fake.seed_comment(PR, bot, "a plain comment by the same bot"): "no marker",
        fake.seed_comment(PR, bot, Marker("other", 1, 1, SHA).render() + "\nother key"): "key",
        fake.seed_comment(PR, bot, "text first\n" + ours_marker): "marker not first",
    }
    before = {c.id: c.body for c in fake.comments(PR)}
    sync(fake, clock, report(2))
    sync(fake, clock, report(1, tag="v2"), mode=CommentMode.RECREATE)
    sync(fake, clock, report(1, tag="v3"), mode=CommentMode.HIDE_OUTDATED, sha="c" * 40)
    after = {c.id: c for c in fake.comments(PR)}
    for cid in foreign:
        assert after[cid].body == before[cid] and not after[cid].minimized, foreign[cid]
    assert fake.state.foreign_writes == []


def test_other_keys_coexist(fake: FakeGitHub, bot: User, clock: FakeTime) -> None:
    sync(fake, clock, report(2), key="staging")
    sync(fake, clock, report(1), key="prod")
    sync(fake, clock, report(1, tag="v2"), key="staging")
    assert [m.part for _, m in ours(fake, "staging")] == [1]
    assert [m.part for _, m in ours(fake, "prod")] == [1]


def test_duplicates_left_by_concurrent_runs_collapse_to_the_oldest(
    fake: FakeGitHub, bot: User, clock: FakeTime
) -> None:
    for part in plan(report(2)) * 2:
        fake.seed_comment(PR, bot, part.body)
    oldest = [c.id for c in fake.comments(PR)][:2]
    sync(fake, clock, report(2, tag="v2"))
    assert [cid for cid, _ in ours(fake)] == oldest
    assert part_numbers(fake) == [1, 2]


@pytest.mark.parametrize(
    "mode", [CommentMode.UPDATE, CommentMode.RECREATE, CommentMode.HIDE_OUTDATED]
)
@pytest.mark.parametrize(("first", "second"), [(2, 2), (3, 1), (1, 3)])
def test_two_runs_interleaved_converge_to_one_set(
    fake: FakeGitHub, bot: User, clock: FakeTime, mode: CommentMode, first: int, second: int
) -> None:
    sync(fake, clock, report(2, tag="v0"), sha="0" * 40)
    # Run A lists, then, just before its first write, run B happens from start to end.
    fake.before(
        "POST" if mode is not CommentMode.UPDATE else "PATCH",
        r"/comments",
        lambda: sync(fake, FakeTime(), report(second, tag="B"), mode=mode, sha="b" * 40),
    )
    sync(fake, clock, report(first, tag="A"), mode=mode, sha="c" * 40)
    assert part_numbers(fake) == list(range(1, first + 1)), "one comment per part number"
    assert all("A line" in c.body for c in fake.comments(PR) if not c.minimized)


def test_two_runs_in_threads_leave_one_comment_per_part(fake: FakeGitHub, bot: User) -> None:
    def run(parts: int, tag: str) -> None:
        pacer = Pacer(sleep=lambda _: time.sleep(0.001))
        github = GitHub(token=TOKEN, api_url=fake.url, repository=fake.repository, pacer=pacer)
        sticky = Sticky(github, PR, "default", github.viewer())
        sync_comments(sticky, plan(report(parts, tag=tag)), CommentMode.UPDATE)

    for _ in range(3):
        threads = [threading.Thread(target=run, args=(n, f"t{n}")) for n in (2, 3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        numbers = part_numbers(fake)
        assert len(numbers) == len(set(numbers)), numbers


def test_recreate_posts_anew_and_deletes_the_old_parts(
    fake: FakeGitHub, bot: User, clock: FakeTime
) -> None:
    sync(fake, clock, report(2))
    old = {cid for cid, _ in ours(fake)}
    result = sync(fake, clock, report(2, tag="v2"), mode=CommentMode.RECREATE)
    assert part_numbers(fake) == [1, 2]
    assert not old & {cid for cid, _ in ours(fake)}
    assert not old & set(fake.state.comments), "the old parts are gone"
    assert (result.created, result.deleted) == (2, 2)


def test_hide_outdated_minimizes_old_commits_once_and_edits_the_same_commit(
    fake: FakeGitHub, bot: User, clock: FakeTime
) -> None:
    hide = CommentMode.HIDE_OUTDATED
    sync(fake, clock, report(2), mode=hide, sha="1" * 40)
    first = {c.id for c in fake.comments(PR)}
    same = sync(fake, clock, report(2, tag="v2"), mode=hide, sha="1" * 40)
    assert (same.created, same.edited, same.hidden) == (0, 2, 0)
    later = sync(fake, clock, report(1, tag="v3"), mode=hide, sha="2" * 40)
    assert (later.created, later.hidden) == (1, 2)
    assert all(c.minimized for c in fake.comments(PR) if c.id in first)
    third = sync(fake, clock, report(1, tag="v4"), mode=hide, sha="3" * 40)
    assert third.hidden == 1, "comments hidden before are not hidden again"
    assert len(fake.comments(PR)) == 4, "nothing is deleted"
    assert part_numbers(fake) == [1]


# --- size ------------------------------------------------------------------------------------


def test_several_megabytes_of_diff_are_never_rejected_as_too_long(
    fake: FakeGitHub, bot: User, clock: FakeTime
) -> None:
    block = "<details>\n<summary>r</summary>\n\n```diff\n" + "+ ünï 😀 line\n" * 20_000 + "```\n"
    markdown = "## reviewer\n\n" + (block + "</details>\n\n") * 12
    assert size(markdown) > 4_000_000
    github = client(fake, clock)
    sticky = Sticky(github, PR, "default", github.viewer())
    for max_parts in (5, 200):
        parts = plan_comments(markdown, key="default", sha=SHA, pointer="p", max_parts=max_parts)
        sync_comments(sticky, parts, CommentMode.UPDATE)
        assert len(ours(fake)) == len(parts)
    assert all(exchange.status != 422 for exchange in fake.state.log)
    assert 60_000 > fake.state.largest_body > 30_000
    assert all(balance_problems(c.body) == [] for c in fake.comments(PR))


def test_the_server_rejects_bodies_over_the_limit(
    fake: FakeGitHub, bot: User, clock: FakeTime
) -> None:
    """The loopback server enforces GitHub's limit, so the test above means something."""
    with pytest.raises(PublishError) as failed:
        client(fake, clock).create_comment(PR, "x" * 65_537)
    assert failed.value.status == 422


# --- retries, pacing, errors -----------------------------------------------------------------


def test_a_502_is_retried_after_a_backoff(fake: FakeGitHub, bot: User, clock: FakeTime) -> None:
    fake.fail("POST", r"/issues/\d+/comments$", 502, message="Bad Gateway")
    sync(fake, clock, report(1))
    assert part_numbers(fake) == [1]
    assert [e.status for e in fake.state.log if e.method == "POST" and "issues" in e.path] == [
        502,
        201,
    ]
    assert 1.0 in clock.sleeps


def test_secondary_rate_limit_waits_for_retry_after(
    fake: FakeGitHub, bot: User, clock: FakeTime
) -> None:
    fake.fail(
        "POST",
        r"/issues/\d+/comments$",
        403,
        headers={"retry-after": "7"},
        message="You have exceeded a secondary rate limit. Please wait a few minutes.",
    )
    sync(fake, clock, report(1))
    assert part_numbers(fake) == [1]
    assert 7.0 in clock.sleeps


def test_secondary_rate_limit_without_retry_after_waits_a_minute(
    fake: FakeGitHub, bot: User, clock: FakeTime
) -> None:
    fake.fail("PATCH", r"/comments/", 403, message="You have exceeded a secondary rate limit.")
    sync(fake, clock, report(1))
    sync(fake, clock, report(1, tag="v2"))
    assert 60.0 in clock.sleeps


def test_primary_rate_limit_waits_until_the_reset(
    fake: FakeGitHub, bot: User, clock: FakeTime
) -> None:
    reset = int(clock.now) + 42
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)}
    fake.fail("GET", r"/comments$", 403, headers=headers, message="API rate limit exceeded")
    sync(fake, clock, report(1))
    assert part_numbers(fake) == [1]
    assert clock.now >= reset


def test_rate_limit_reset_too_far_away_gives_up(
    fake: FakeGitHub, bot: User, clock: FakeTime
) -> None:
    headers = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(clock.now) + 7200)}
    fake.fail("GET", r"/comments$", 403, headers=headers, message="API rate limit exceeded")
    with pytest.raises(PublishError, match="403"):
        sync(fake, clock, report(1))
    assert clock.sleeps == []


def test_writes_are_at_least_a_second_apart(fake: FakeGitHub, bot: User, clock: FakeTime) -> None:
    github = client(fake, clock)
    sticky = Sticky(github, PR, "default", github.viewer())
    sync_comments(sticky, plan(report(4)), CommentMode.UPDATE)
    sync_comments(sticky, plan(report(2, tag="v2")), CommentMode.UPDATE)
    assert len(fake.writes()) == 4 + 2 + 2
    assert clock.sleeps == [1.0] * (len(fake.writes()) - 1)


def test_permission_errors_fail_at_once_with_a_hint_and_no_token(
    fake: FakeGitHub, bot: User, clock: FakeTime
) -> None:
    fake.fail(
        "POST",
        r"/comments$",
        403,
        message=f"Resource not accessible by integration (token {TOKEN})",
    )
    with pytest.raises(PublishError) as failed:
        sync(fake, clock, report(1))
    text = failed.value.render()
    assert TOKEN not in text
    assert "***" in text
    assert "pull-requests: write" in text
    assert clock.sleeps == []


def test_bad_token_is_reported_without_the_token(fake: FakeGitHub, clock: FakeTime) -> None:
    with pytest.raises(PublishError) as failed:
        sync(fake, clock, report(1))
    assert failed.value.status == 401
    assert TOKEN not in failed.value.render()


def test_token_comes_from_the_environment() -> None:
    assert token_from_env({"GITHUB_TOKEN": f" {TOKEN}\n"}) == TOKEN
    assert token_from_env({"GH_TOKEN": TOKEN}, "GH_TOKEN") == TOKEN
    with pytest.raises(ReviewerError, match="GITHUB_TOKEN"):
        token_from_env({})


def test_github_enterprise_base_url(clock: FakeTime) -> None:
    server = FakeGitHub(load_spec(), prefix="/api/v3")
    server.add_user(TOKEN, "reviewer-bot")
    with server.running():
        assert server.url.endswith("/api/v3")
        sync(server, clock, report(2))
        sync(server, clock, report(1), mode=CommentMode.HIDE_OUTDATED, sha="d" * 40)
        assert part_numbers(server) == [1]
    assert any(e.path == "/api/graphql#mutation" for e in server.state.log)
    assert server.state.errors == []


# --- status and check run --------------------------------------------------------------------


def test_commit_status_on_the_head_commit(fake: FakeGitHub, bot: User, clock: FakeTime) -> None:
    github = client(fake, clock)
    url = "https://github.test/acme/fleet/actions/runs/1"
    report_status(
        github,
        SHA,
        Outcome(False, "no rendered changes"),
        kind=StatusKind.STATUS,
        context="reviewer",
        url=url,
    )
    report_status(
        github,
        SHA,
        Outcome(True, "x" * 300),
        kind=StatusKind.STATUS,
        context="reviewer/prod",
        url=None,
    )
    first, second = fake.state.statuses
    assert (first["sha"], first["state"], first["context"], first["target_url"]) == (
        SHA,
        "success",
        "reviewer",
        url,
    )
    assert (second["state"], second["context"], len(second["description"])) == (
        "failure",
        "reviewer/prod",
        140,
    )


def test_check_run_carries_the_summary(fake: FakeGitHub, bot: User, clock: FakeTime) -> None:
    summary = "## reviewer\n\n```\n" + "line\n" * 30_000 + "```\n"
    outcome = Outcome(True, "the merge result fails to render", summary)
    report_status(
        client(fake, clock), SHA, outcome, kind=StatusKind.CHECK, context="reviewer", url=None
    )
    (run,) = fake.state.check_runs
    assert (run["head_sha"], run["conclusion"], run["status"]) == (SHA, "failure", "completed")
    assert len(run["output"]["summary"]) <= 65_535
    assert balance_problems(run["output"]["summary"]) == []


def test_no_status_when_disabled(fake: FakeGitHub, bot: User, clock: FakeTime) -> None:
    report_status(
        client(fake, clock), SHA, Outcome(True, "x"), kind=StatusKind.NONE, context="r", url=None
    )
    assert fake.state.log == []


# --- job summary -----------------------------------------------------------------------------


def test_job_summary_fits_what_is_left_of_one_mebibyte(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    path.write_text("earlier step output\n" * 5000, encoding="utf-8")
    big = "## reviewer\n\n<details>\n<summary>r</summary>\n\n```diff\n" + "+ é\n" * 400_000
    write_job_summary(path, big + "```\n</details>\n", pointer="see the artifact")
    assert path.stat().st_size <= JOB_SUMMARY_LIMIT
    text = path.read_text(encoding="utf-8")
    assert text.startswith("earlier step output\n")
    assert text.rstrip().endswith("see the artifact")
    assert balance_problems(text) == []


def test_small_job_summary_is_written_whole(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    write_job_summary(path, "## reviewer\n\nno rendered changes\n", pointer="x")
    assert path.read_text(encoding="utf-8") == "## reviewer\n\nno rendered changes\n"


# --- the fake itself -------------------------------------------------------------------------


def test_the_fake_rejects_requests_github_would_reject(fake: FakeGitHub, bot: User) -> None:
    github = client(fake, FakeTime())
    with pytest.raises(PublishError):
        github.create_status(SHA, state="bogus", description="d", context="c", target_url=None)
    assert fake.state.errors and "state" in fake.state.errors[0]
    fake.state.errors.clear()
