"""Sticky comment bodies: markers, budgets, and cuts that keep fences and `<details>` valid."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reviewer import report, report_markdown
from reviewer.comment import (
    COMMENT_LIMIT,
    DEFAULT_BUDGET,
    DEFAULT_MAX_PARTS,
    Marker,
    Part,
    balance_problems,
    plan_comments,
    size,
    split_markdown,
    summary_of,
    truncate_markdown,
    validate_key,
)
from reviewer.diff.compare import diff_snapshots
from reviewer.diff.options import DiffOptions
from reviewer.errors import ReviewerError
from reviewer.model import ReleaseId, RenderedRelease, Resource, Snapshot

SHA = "0123456789abcdef0123456789abcdef01234567"
POINTER = "The full report is in the job summary."


def plan(text: str, *, max_parts: int = DEFAULT_MAX_PARTS) -> list[Part]:
    return plan_comments(text, key="default", sha=SHA, pointer=POINTER, max_parts=max_parts)


def assert_valid(parts: list[Part], budget: int = DEFAULT_BUDGET) -> None:
    """Every part: our marker first, balanced blocks, within the byte budget and GitHub's limit."""
    assert parts, "no parts"
    for part in parts:
        marker = Marker.parse(part.body)
        assert marker == Marker("default", part.number, len(parts), SHA)
        assert balance_problems(part.body) == [], f"part {part.number}"
        assert size(part.body) <= budget
        assert len(part.body.encode("utf-16-le")) // 2 <= COMMENT_LIMIT
    assert [p.number for p in parts] == list(range(1, len(parts) + 1))


def diff_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(("+ ", "- "))]


# --- markers ---------------------------------------------------------------------------------


def test_marker_round_trips_and_ignores_other_comments() -> None:
    marker = Marker("team.a-1", 2, 3, SHA)
    body = marker.render() + "\nhello"
    assert Marker.parse(body) == marker
    assert marker.render().startswith("<!-- ") and marker.render().endswith(" -->")
    assert Marker.parse("hello\n" + marker.render()) is None, "only the first line counts"
    assert Marker.parse("<!-- reviewer:sticky key=x part=1/1 sha=zz -->") is None
    assert Marker.parse("") is None


@pytest.mark.parametrize("key", ["", "a b", "x-->", "-lead", "k" * 65, "ключ"])
def test_keys_that_could_break_the_marker_are_rejected(key: str) -> None:
    with pytest.raises(ReviewerError):
        validate_key(key)


def test_short_report_is_one_part_with_the_report_unchanged() -> None:
    text = "## reviewer\n\nno rendered changes\n"
    (part,) = plan(text)
    assert part.body == Marker("default", 1, 1, SHA).render() + "\n" + text
    assert_valid([part])


# --- splitting -------------------------------------------------------------------------------


def test_long_code_fence_is_closed_and_reopened_with_its_info_string() -> None:
    body = "".join(f"+ line {n}: {'x' * 60}\n" for n in range(4000))
    text = f"## title\n\n```diff\n{body}```\n\nafter\n"
    parts = plan(text, max_parts=20)
    assert len(parts) > 3
    assert_valid(parts)
    for part in parts[1:]:
        assert part.body.split("\n")[1] == "```diff", "continuation reopens the same fence"
    joined = "".join(part.body for part in parts)
    assert diff_lines(joined) == diff_lines(text), "no diff line lost, duplicated or reordered"


def test_longer_backtick_fences_are_kept_and_inner_fences_are_content() -> None:
    inner = "```\nnot a fence end\n```\n" * 3000
    fence = report_markdown.fence(inner)
    assert fence == "````"
    text = f"{fence}\n{inner}{fence}\n"
    parts = split_markdown(text, 5000)
    assert len(parts) > 3
    for piece in parts:
        assert balance_problems(piece) == []
        assert piece.startswith("````\n")
        assert piece.endswith("````\n")


def test_tilde_fences_are_understood() -> None:
    text = "~~~yaml\n" + "key: value\n" * 3000 + "~~~\n"
    pieces = split_markdown(text, 4000)
    assert all(p.startswith("~~~yaml\n") and p.endswith("~~~\n") for p in pieces)


def test_nested_details_reopen_with_their_summaries() -> None:
    release = (
        "<details>\n<summary>~ <code>eu/web</code> changed</summary>\n\n"
        "<details>\n<summary>ConfigMap web</summary>\n\n"
        "```diff\n" + "".join(f"+ value {n}\n" for n in range(2500)) + "```\n"
        "</details>\n\n</details>\n\n"
    )
    text = "## reviewer\n\n" + release * 3
    pieces = split_markdown(text, 8000)
    assert len(pieces) > 5
    for piece in pieces:
        assert balance_problems(piece) == []
    continued = [p for p in pieces if p.startswith("<details>")]
    assert continued, "a cut inside the details reopens them"
    assert "<summary>~ <code>eu/web</code> changed (continued)</summary>" in continued[0]
    assert "<summary>ConfigMap web (continued)</summary>" in continued[0]


def test_cuts_prefer_the_boundaries_between_blocks() -> None:
    block = "<details>\n<summary>r</summary>\n\n```diff\n" + "+ a\n" * 200 + "```\n</details>\n\n"
    pieces = split_markdown(block * 40, 10_000)
    assert all(piece.startswith("<details>\n<summary>r</summary>\n\n```") for piece in pieces)
    assert not any("(continued)" in piece for piece in pieces), "whole blocks fit: never cut one"


def test_multi_byte_characters_are_budgeted_in_bytes() -> None:
    text = "```\n" + "ünïcödé 漢字 😀 emoji\n" * 20_000 + "```\n"
    parts = plan(text, max_parts=100)
    assert_valid(parts)
    for part in parts:
        part.body.encode("utf-8")  # no character was cut in half


def test_a_line_longer_than_the_budget_is_wrapped() -> None:
    text = "## title\n\n```\n" + "é" * 150_000 + "\n```\n\n" + "z" * 90_000 + "\n"
    parts = plan(text, max_parts=20)
    assert_valid(parts)
    assert sum(part.body.count("é") for part in parts) == 150_000
    assert sum(part.body.count("z") for part in parts) == 90_000


def test_stray_and_unclosed_blocks_from_a_custom_template_are_still_closed() -> None:
    text = "<details>\n<summary>open</summary>\n\n```\n" + "x\n" * 50_000
    parts = plan(text, max_parts=20)
    assert_valid(parts)


def test_balance_checker_sees_what_github_would_break_on() -> None:
    assert balance_problems("```\ncode\n") == ["unclosed fence: ```"]
    assert balance_problems("<details>\n<summary>s</summary>\n") == ["unclosed details: <details>"]
    assert balance_problems("</details>\n") == ["stray </details>"]
    assert balance_problems("````\n```\n````\n") == []
    assert balance_problems("`<details>` in code\n") == []
    assert balance_problems("```\n<details>\n```\n") == []


# --- degrading -------------------------------------------------------------------------------


def test_too_many_parts_degrade_to_the_summary_and_a_pointer() -> None:
    head = (
        "## :mag: reviewer: 2 release(s) change\n\n"
        "| cluster | added |\n|---|---:|\n| `eu` | 1 |\n\n"
    )
    details = (
        "<details>\n<summary>r</summary>\n\n```diff\n" + "+ x\n" * 60_000 + "```\n</details>\n"
    )
    (part,) = plan(head + details, max_parts=2)
    assert_valid([part])
    assert part.body.startswith(Marker("default", 1, 1, SHA).render())
    assert "| `eu` | 1 |" in part.body
    assert "<details>" not in part.body
    assert POINTER in part.body


def test_summary_stops_before_the_first_top_level_details() -> None:
    text = (
        "# t\n\n```\n<details>\n```\n\nfailure text\n\n"
        "<details>\n<summary>x</summary>\n</details>\n"
    )
    assert summary_of(text) == "# t\n\n```\n<details>\n```\n\nfailure text\n"


def test_truncation_keeps_a_balanced_head_and_the_note() -> None:
    text = "<details>\n<summary>s</summary>\n\n```\n" + "line\n" * 10_000 + "```\n</details>\n"
    cut = truncate_markdown(text, 2000, "(truncated)")
    assert size(cut) <= 2000
    assert cut.endswith("(truncated)")
    assert balance_problems(cut) == []
    assert truncate_markdown("short", 2000, "(truncated)") == "short"


# --- real reports ----------------------------------------------------------------------------


def configmap(name: str, lines: int, salt: str) -> Resource:
    data = {"config": "".join(f"key{n}: {salt}-{n} ünï 😀\n" for n in range(lines))}
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}
    return Resource.from_body(body)


def big_review(releases: int, lines: int) -> report.Review:
    """A real review whose diff is about `releases * lines * 2` lines of Markdown."""

    def side(salt: str) -> Snapshot:
        return Snapshot(
            releases=tuple(
                RenderedRelease(
                    ReleaseId(f"group/cluster-{n}", "app", "web"),
                    namespace="web",
                    resources=(configmap(f"web-{n}", lines, f"{salt}{n}"),),
                )
                for n in range(releases)
            ),
            errors=(),
        )

    diff = diff_snapshots(side("old"), side("new"), options=DiffOptions(differ="builtin"))
    return report.Review(report.SideInfo("main", SHA), report.SideInfo("merge", SHA), diff)


def test_several_megabytes_of_real_report_never_exceed_the_limit() -> None:
    markdown = report_markdown.render_markdown(big_review(releases=12, lines=4000))
    assert size(markdown) > 3_000_000
    parts = plan(markdown, max_parts=1000)
    assert len(parts) > 50
    assert_valid(parts)
    joined = "".join(part.body for part in parts)
    assert len(re.findall(r"^\+ +key\d+: new", joined, re.M)) == 12 * 4000
    (degraded,) = plan(markdown)
    assert_valid([degraded])
    assert "group/cluster-11" in degraded.body, "the summary table lists every cluster"


# --- property: any mix of blocks splits validly ----------------------------------------------

_FRAGMENTS = st.sampled_from(
    [
        "text line with `code` and <b>html</b>\n",
        "\n",
        "<details>\n<summary>release ~ <code>a/b</code></summary>\n\n",
        "</details>\n\n",
        "```diff\n",
        "````\n",
        "~~~\n",
        "```\n",
        "+ added line ünï 😀\n",
        "- removed line 漢字\n",
        "x" * 3000 + "\n",
        "| a | b |\n",
    ]
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_FRAGMENTS, min_size=1, max_size=400), st.integers(600, 6000))
def test_any_document_splits_into_valid_parts(fragments: list[str], budget: int) -> None:
    text = "".join(fragments)
    parts = plan_comments(text, key="k", sha=SHA, pointer=POINTER, budget=budget, max_parts=10_000)
    for part in parts:
        assert size(part.body) <= budget
        assert balance_problems(part.body) == []


def test_details_tags_inside_code_spans_are_text_whatever_the_backtick_runs() -> None:
    # A longer run inside a span does not end it: `</details>` there is not a tag.
    line = "- ```` a``` </details> ```` `x`"
    text = f"<details>\n<summary>s</summary>\n\n{line}\n\n</details>\n"
    assert balance_problems(text) == []
    parts = plan_comments(
        text + "y\n" * 40, key="k", sha=SHA, pointer=POINTER, budget=700, max_parts=50
    )
    assert line in "".join(part.body for part in parts)


def test_long_summaries_reopen_without_a_tag_cut_in_half() -> None:
    summary = "~ <code>" + "n&amp;" * 80 + "</code> changed"
    text = f"<details>\n<summary>{summary}</summary>\n\n" + "line\n" * 2000 + "</details>\n"
    parts = plan_comments(text, key="k", sha=SHA, pointer=POINTER, budget=3000, max_parts=50)
    assert len(parts) > 1
    reopened = parts[1].body.split("\n")[2]
    assert reopened.endswith("…</code> (continued)</summary>"), reopened
    assert reopened.count("<code>") == reopened.count("</code>") == 1
