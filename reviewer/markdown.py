"""Markdown from text a pull request controls: the only way such text enters a report.

Every PR-controlled string (names, paths, values, messages, diffs) goes through one of these
functions, chosen by where it lands: `code_span` in Markdown text, `table_code` in a table
cell, `html_code` inside an HTML block such as `<summary>`, `fenced` for multi-line text and
`plain` for a sentence that mixes our words with PR text. The rules are in
docs/markdown-safety.md.
"""

from __future__ import annotations

import html
import re

from reviewer.visible import visible

NAME_LIMIT = 256
"""UTF-8 bytes of a name shown in one line; longer names are cut, with `…`."""
PLAIN_LIMIT = 2048
"""UTF-8 bytes of one `plain` sentence; keeps every line far below the comment splitter's wrap."""

# The start of our hidden markers (the sticky marker, the footer mark): never from PR text.
_OUR_MARKERS = "<!-- reviewer:"
_MARKER_SHOWN = "\\u003c!-- reviewer:"
_BACKTICKS = re.compile(r"`+")
_PUNCTUATION = re.compile(r"([!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])")
# GitHub links `@name`, `#123`, `GH-1` and bare URLs after Markdown is parsed, so escaping the
# character is not enough: a word joiner (U+2060) after it breaks the pattern invisibly.
_AUTOLINKED = re.compile(r"(\\[@#]|\\:(?=\\/\\/)|(?<![A-Za-z])www(?=\\\.))", re.IGNORECASE)
_WORD_JOINER = "\u2060"


class Trusted(str):
    """Markdown that reviewer wrote itself from no PR text (e.g. a warning of its own)."""


def _unmarked(text: str) -> str:
    return text.replace(_OUR_MARKERS, _MARKER_SHOWN)


def shown_name(text: str, limit: int = NAME_LIMIT) -> str:
    """A name on one line: invisible characters escaped, cut to `limit` UTF-8 bytes."""
    return _unmarked(_cut(visible(text), limit))


def _cut(text: str, limit: int) -> str:
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[: limit - 3].decode("utf-8", "ignore") + "…"


def longest_backtick_run(text: str) -> int:
    """The length of the longest run of backticks in `text` (0 when there is none)."""
    return max((len(run) for run in _BACKTICKS.findall(text)), default=0)


def code_span(text: str) -> str:
    """`text` as an inline code span whose delimiters are longer than any backtick run inside."""
    shown = shown_name(text)
    if not shown:
        return '""'
    ticks = "`" * (longest_backtick_run(shown) + 1)
    # CommonMark strips one space from each side when both are spaces: pad to keep the text.
    pad = " " if shown[0] in "` " or shown[-1] in "` " else ""
    return f"{ticks}{pad}{shown}{pad}{ticks}"


def table_code(text: str) -> str:
    """A code span for a table cell: `|` would end the cell even inside code, so it is escaped."""
    return code_span(text).replace("|", "\\|")


def html_code(text: str) -> str:
    """`text` as a `<code>` element for HTML blocks (`<summary>`), where Markdown is not parsed."""
    return f"<code>{html.escape(shown_name(text), quote=True)}</code>"


def fence_for(text: str) -> str:
    """A code fence longer than any backtick run inside `text`, so the block cannot break."""
    return "`" * max(3, longest_backtick_run(text) + 1)


def fenced(text: str, info: str = "") -> str:
    """`text` as a fenced code block (no final newline); invisible characters are escaped."""
    body = _unmarked(visible(text, keep_newlines=True))
    if not body.endswith("\n"):
        body += "\n"
    fence = fence_for(body)
    return f"{fence}{info}\n{body}{fence}"


def plain(text: str) -> str:
    """`text` as inert Markdown text: punctuation escaped, mentions, references and URLs broken.

    `Trusted` text (Markdown reviewer wrote itself) is kept as it is.
    """
    if isinstance(text, Trusted):
        return str(text)
    shown = _unmarked(_cut(visible(text), PLAIN_LIMIT))
    escaped = _PUNCTUATION.sub(r"\\\1", shown)
    return _AUTOLINKED.sub(lambda found: found[0] + _WORD_JOINER, escaped)
