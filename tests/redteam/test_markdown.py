"""Red team: Markdown a pull request writes into names, values and errors stays inert text.

The report is parsed with markdown-it-py (CommonMark, with GitHub's tables) and checked on the
parsed tokens: no link, image, HTML element, HTML comment or heading comes from the PR, blocks
balance in the report and in every comment part, and the last change is still visible.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Iterator

import pytest
from conftest import GitRepo, git
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from reviewer import report, report_markdown
from reviewer.cli import main
from reviewer.comment import Marker, balance_problems, plan_comments
from reviewer.diff.compare import diff_snapshots
from reviewer.diff.options import DiffOptions
from reviewer.errors import ExitStatus
from reviewer.markdown import code_span, fenced, html_code, plain, table_code
from reviewer.model import ReleaseId, RenderedRelease, Resource, Snapshot

SHA = "0123456789abcdef0123456789abcdef01234567"
MARKER_LINE = f"<!-- reviewer:sticky key=default part=1/1 sha={SHA} -->"
HOSTILE = [
    "x ![t](https://evil.example/t.png) @acme/secops <img src=x onerror=alert(1)>",
    "<!-- hide",
    "a\n<!--\nhidden",
    "``` ```` `",
    "````\n# heading\n````",
    "</details></summary>",
    "# heading",
    "[link](https://evil.example) <https://evil.example> www.evil.example #12 acme/x#3",
    MARKER_LINE,
    "\n" + MARKER_LINE + "\n",
    "bell\x07 nul-ish\x1b[31m rtl\u202e",
    "| a | b |\n|---|---|",
]
LAST = "zzz-last-change"
# HTML reviewer itself writes: details blocks, summaries with <code>, <sub> notes.
_OUR_INLINE_HTML = {"<code>", "</code>", "<sub>", "</sub>"}
_OUR_BLOCK_LINE = re.compile(r"<details>|</details>|<summary>.*</summary>|<!-- reviewer:sticky .*")
_OUR_HEADINGS = (":x:", ":mag:", ":white_check_mark:", "Layer `")
_PARSER = MarkdownIt("commonmark").enable("table")


def tokens(markdown: str) -> Iterator[Token]:
    """Every token, inline children included."""
    for token in _PARSER.parse(markdown):
        yield token
        yield from token.children or []


def assert_inert(markdown: str, *, first_line_marker: bool = False) -> None:
    """Nothing in `markdown` is a link, image, foreign HTML, heading or marker from the PR."""
    assert balance_problems(markdown) == []
    for token in tokens(markdown):
        assert token.type not in ("image", "link_open", "autolink_open"), token
        if token.type == "html_inline":
            assert token.content in _OUR_INLINE_HTML, token.content
        if token.type == "html_block":
            for line in token.content.splitlines():
                assert _OUR_BLOCK_LINE.fullmatch(line), line
                assert "<" not in _summary_text(line), line
        if token.type == "text":
            assert not re.search(r"@[A-Za-z0-9]|#\d|https?://|www\.", token.content), token
    _assert_headings_are_ours(markdown)
    lines = markdown.split("\n")
    markers = [n for n, line in enumerate(lines) if "<!-- reviewer:" in line]
    assert markers == ([0] if first_line_marker else []), markers


def _summary_text(line: str) -> str:
    inner = re.fullmatch(r"<summary>(.*)</summary>", line)
    return re.sub(r"</?code>", "", inner[1]) if inner else ""


def _assert_headings_are_ours(markdown: str) -> None:
    parsed = _PARSER.parse(markdown)
    for index, token in enumerate(parsed):
        if token.type == "heading_open":
            assert parsed[index + 1].content.startswith(_OUR_HEADINGS), parsed[index + 1].content


def assert_last_change_visible(markdown: str) -> None:
    """The object after every hostile one is shown as code, not swallowed by a comment."""
    # A code token is shown as written, hostile text inside it included; text swallowed by an
    # HTML comment would come out as an html_block/html_inline token instead.
    shown = [
        t for t in tokens(markdown) if t.type in ("code_inline", "fence") and LAST in t.content
    ]
    assert any(t.type == "code_inline" for t in shown), "the last object's title is not visible"
    assert any(t.type == "fence" for t in shown), "the last object's diff is not visible"


# --- the whole pipeline on a real repository ------------------------------------------------

HOSTILE_CHART = {
    "Chart.yaml": "apiVersion: v2\nname: hostile\nversion: 1.0.0\n",
    "values.yaml": "names: [aaa-first]\nvalue: old\n",
    "templates/objects.yaml": textwrap.dedent(
        """\
        {{- range .Values.names }}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: {{ . | toJson }}
          namespace: {{ $.Release.Namespace }}
        data:
          {{ . | toJson }}: {{ $.Values.value | toJson }}
        {{- end }}
        """
    ),
}
FAILING_CHART = {
    "Chart.yaml": "apiVersion: v2\nname: failing\nversion: 1.0.0\n",
    "values.yaml": (
        "message: |\n  </details>\n  <!--\n  # heading ![t](https://evil.example/t.png) @acme\n"
    ),
    "templates/fail.yaml": "{{ fail .Values.message }}\n",
}
HOSTILE_DIRECTORY = "x ![t](https:evil.example) @acme <img src=x> ``` #1\n<!-- hidden <details>\x07"


@pytest.fixture
def hostile_pr(git_repo: GitRepo) -> GitRepo:
    """A fleet on main, and a PR branch whose names, values and directories are hostile."""
    git_repo.add_chart("charts/hostile", HOSTILE_CHART)
    git_repo.add_template(
        "hostile", "releases:\n  - name: hostile\n    chart: ../../charts/hostile\n"
    )
    git_repo.write("deployments/prod/eu/cluster.values.yaml", "where: eu\n")
    git_repo.write(
        "deployments/prod/eu/apps/base/deployment.yaml",
        "apps: [{template: app}, {template: hostile}]\n",
    )
    git_repo.commit("fleet")
    git(git_repo.root, "checkout", "--quiet", "-b", "feature")
    names = [*HOSTILE, LAST]
    values = "names:\n" + "".join(f"  - {_yaml(name)}\n" for name in names)
    git_repo.write("charts/hostile/values.yaml", values + f"value: {_yaml(HOSTILE[0])}\n")
    git_repo.write(f"deployments/prod/eu/apps/{HOSTILE_DIRECTORY}/deployment.yaml", APP)
    # An error message written by the PR: a chart that fails with it.
    git_repo.add_chart("charts/failing", FAILING_CHART)
    git_repo.add_template(
        "failing", "releases:\n  - name: failing\n    chart: ../../charts/failing\n"
    )
    git_repo.write(
        "deployments/prod/eu/apps/failing/deployment.yaml", "apps: [{template: failing}]\n"
    )
    git_repo.commit("hostile")
    return git_repo


APP = "apps: [{template: app}]\n"


def _yaml(text: str) -> str:
    return json.dumps(text)


def markdown_report(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as done:
        main(["diff", "--repo", str(repo.root), "--base", "main", "--format", "markdown"])
    out, err = capsys.readouterr()
    assert done.value.code in (ExitStatus.OK, ExitStatus.RENDER_FAILED), err
    return out


def test_hostile_names_values_and_directories_are_inert_in_the_report(
    hostile_pr: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    markdown = markdown_report(hostile_pr, capsys)
    assert LAST in markdown and "aaa-first" in markdown
    assert "evil.example" in markdown, "the hostile object is reported, not dropped"
    assert "### :x: `prod/eu/failing/failing` fails to render" in markdown
    outside_code = re.sub(r"<code[^>]*>.*?</code>", "", _PARSER.render(markdown), flags=re.S)
    for raw in ("<img", "<!--", "<a ", "@acme", "<h1", "evil.example"):
        assert raw not in outside_code, raw
    assert_inert(markdown)
    assert_last_change_visible(markdown)


@pytest.mark.parametrize("budget", [1500, 4000, 60_000])
def test_hostile_report_split_into_comment_parts_stays_inert(
    hostile_pr: GitRepo, capsys: pytest.CaptureFixture[str], budget: int
) -> None:
    markdown = markdown_report(hostile_pr, capsys)
    parts = plan_comments(
        markdown, key="default", sha=SHA, pointer="see the run", budget=budget, max_parts=500
    )
    for part in parts:
        assert Marker.parse(part.body) == Marker("default", part.number, len(parts), SHA)
        assert_inert(part.body, first_line_marker=True)
    assert_last_change_visible("".join(part.body for part in parts))


# --- the escaping functions -------------------------------------------------------------------


def test_code_spans_outlast_every_backtick_run_and_show_control_characters() -> None:
    assert code_span("a``b") == "```a``b```"
    assert code_span("`x`") == "`` `x` ``"
    assert code_span("a\nb\x07") == "`a\\nb\\u0007`"
    assert table_code("a|b") == "`a\\|b`"
    assert html_code("<b>&\n") == "<code>&lt;b&gt;&amp;\\n</code>"
    assert fenced("```\nx") == "````\n```\nx\n````"


def test_plain_text_cannot_mention_link_or_reference() -> None:
    text = plain("@acme/secops see #12 at https://evil.example or www.evil.example <b>")
    for token in tokens(text):
        assert token.type not in ("link_open", "html_inline", "image")
    rendered = _PARSER.renderInline(text)
    assert not re.search(r"@[a-z]|#\d|https?://|www\.", rendered), rendered
    assert "&lt;b&gt;" in rendered


# --- property: any name through the report renderer -------------------------------------------

_HOSTILE_CHARS = st.text(
    alphabet=st.sampled_from(list("`<>!-[]()@#|*_&;:/\\\n\r\t\x00\x07\x1b\u2028\u202e ab~=")),
    max_size=40,
)


def _review(name: str, namespace: str) -> report.Review:
    def side(value: str, names: list[str]) -> Snapshot:
        resources = tuple(
            Resource.from_body(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": each, "namespace": namespace},
                    "data": {each: value},
                }
            )
            for each in names
        )
        release = RenderedRelease(ReleaseId(name, name, name), namespace="ns", resources=resources)
        broken = RenderedRelease(
            ReleaseId(name, name, "broken"),
            namespace=namespace,
            error=f"{name}: cannot render {namespace}",
            reproduce=f"reviewer render --deployment {name}",
        )
        return Snapshot(releases=(release, broken) if value != "old" else (release,))

    diff = diff_snapshots(
        side("old", [name, LAST]), side(name, [name, LAST]), options=DiffOptions(differ="builtin")
    )
    warnings = (f"{name}: {namespace} had no effect",)
    head = report.SideInfo(namespace or "merge", SHA)
    return report.Review(report.SideInfo(name, SHA), head, diff, warnings=warnings)


@settings(max_examples=300, deadline=None)
@given(_HOSTILE_CHARS.filter(bool), _HOSTILE_CHARS)
def test_any_object_name_renders_inert_markdown(name: str, namespace: str) -> None:
    markdown = report_markdown.render_markdown(_review(name, namespace))
    assert_inert(markdown)
    assert_last_change_visible(markdown)
