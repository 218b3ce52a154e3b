"""Sticky PR comment bodies: byte budgets, hidden markers, and splitting a long report into parts.

GitHub rejects issue comments longer than 65,536 characters. Budgets here count UTF-8 bytes,
which are never fewer than characters or UTF-16 code units, so a body within the byte budget is
within the limit however GitHub counts. Every cut closes the code fences and `<details>` blocks
that are open at that point and reopens them at the start of the next part.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from reviewer.errors import ReviewerError

COMMENT_LIMIT = 65_536
"""GitHub's maximum issue comment body, in characters."""
DEFAULT_BUDGET = 60_000
"""Default byte budget of one comment body: the limit minus a margin."""
DEFAULT_MAX_PARTS = 5
TOOL = "reviewer"

_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_SHA = re.compile(r"[0-9a-f]{0,64}")
_MARKER = re.compile(
    rf"<!-- {TOOL}:sticky key=(?P<key>{_KEY.pattern}) part=(?P<part>\d+)/(?P<total>\d+) "
    r"sha=(?P<sha>[0-9a-f]{0,64}) -->"
)
# Worst-case decoration sizes are computed with numbers this wide, whatever the real count.
_WIDE = 999_999_999


def validate_key(key: str) -> str:
    """Return `key` if it can live in a hidden marker (letters, digits, `.`, `_`, `-`)."""
    if not _KEY.fullmatch(key):
        raise ReviewerError(
            f"invalid comment key {key!r}",
            hint="use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
        )
    return key


@dataclass(frozen=True)
class Marker:
    """The hidden first line of every sticky part: which reviewer, which part, which commit."""

    key: str
    part: int
    total: int
    sha: str

    def render(self) -> str:
        """The marker as an HTML comment line (invisible in the rendered comment)."""
        return f"<!-- {TOOL}:sticky key={self.key} part={self.part}/{self.total} sha={self.sha} -->"

    @classmethod
    def parse(cls, body: str) -> Marker | None:
        """The marker on the first line of `body`, or None when the body is not one of ours."""
        found = _MARKER.fullmatch(body.split("\n", 1)[0].rstrip("\r"))
        if found is None:
            return None
        return cls(found["key"], int(found["part"]), int(found["total"]), found["sha"])


@dataclass(frozen=True)
class Part:
    """One sticky comment to post: its number, the total, and the full body (marker included)."""

    number: int
    total: int
    body: str


def size(text: str) -> int:
    """The UTF-8 size of `text` in bytes (what budgets count)."""
    return len(text.encode("utf-8"))


# --- Markdown structure ----------------------------------------------------------------------

_FENCE_OPEN = re.compile(r"^ {0,3}(?P<run>`{3,}|~{3,})(?P<info>.*)$")
_DETAILS_TAG = re.compile(r"<(?P<close>/?)details(?:\s[^>]*)?>", re.IGNORECASE)
_SUMMARY = re.compile(r"<summary>(?P<text>.*?)</summary>", re.IGNORECASE)
# A code span ends at the next backtick run of exactly its opening length (CommonMark).
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)")
_SUMMARY_LIMIT = 200
_PARTIAL_TAIL = re.compile(r"<[^>]*$|&[#A-Za-z0-9]*$")


@dataclass(frozen=True)
class _Frame:
    """An open block at a line boundary: a code fence or a `<details>` element."""

    kind: str  # "fence" or "details"
    opening: str  # the fence line as written; unused for details
    summary: str | None = None

    def reopen(self) -> str:
        if self.kind == "fence":
            return self.opening + "\n"
        if self.summary is None:
            return "<details>\n\n"
        return f"<details>\n<summary>{self.summary} (continued)</summary>\n\n"

    def close(self) -> str:
        if self.kind == "fence":
            run = _FENCE_OPEN.match(self.opening)
            assert run is not None
            return run["run"] + "\n"
        return "\n</details>\n"


_Stack = tuple[_Frame, ...]


def _step(stack: _Stack, line: str) -> _Stack:
    """The open blocks after `line` (without its newline), given those before it."""
    if stack and stack[-1].kind == "fence":
        return stack[:-1] if _closes_fence(stack[-1], line) else stack
    fence = _FENCE_OPEN.match(line)
    if fence and not (fence["run"][0] == "`" and "`" in fence["info"]):
        return (*stack, _Frame("fence", line.lstrip(" ")))
    return _details_step(stack, _CODE_SPAN.sub("", line))


def _closes_fence(frame: _Frame, line: str) -> bool:
    opening = _FENCE_OPEN.match(frame.opening)
    closing = _FENCE_OPEN.match(line)
    assert opening is not None
    return (
        closing is not None
        and not closing["info"].strip()
        and closing["run"][0] == opening["run"][0]
        and len(closing["run"]) >= len(opening["run"])
    )


def _details_step(stack: _Stack, line: str) -> _Stack:
    # Outside a fence every open block is a details element, so a close pops the top.
    for tag in _DETAILS_TAG.finditer(line):
        if not tag["close"]:
            stack = (*stack, _Frame("details", ""))
        elif stack:
            stack = stack[:-1]
    summary = _SUMMARY.search(line)
    if summary and stack and stack[-1].kind == "details" and stack[-1].summary is None:
        # Kept short: the summary is repeated in every part that reopens this block.
        stack = (*stack[:-1], _Frame("details", "", _short_summary(summary["text"])))
    return stack


def _short_summary(text: str) -> str:
    """`text` cut to a few hundred characters without leaving a tag or entity cut in half."""
    if len(text) <= _SUMMARY_LIMIT:
        return text
    short = _PARTIAL_TAIL.sub("", text[:_SUMMARY_LIMIT]) + "…"
    return short + "</code>" * (short.count("<code>") - short.count("</code>"))


def balance_problems(text: str) -> list[str]:
    """What is left open at the end of `text` (empty when fences and `<details>` balance)."""
    stack: _Stack = ()
    stray = 0
    for line in text.split("\n"):
        if not (stack and stack[-1].kind == "fence"):
            stray += _stray_closes(len(stack), line)
        stack = _step(stack, line)
    problems = [f"unclosed {frame.kind}: {frame.opening or '<details>'}" for frame in stack]
    return problems + ["stray </details>"] * stray


def _stray_closes(depth: int, line: str) -> int:
    return len(_without_stray_closes(depth, line)[1])


def _without_stray_closes(depth: int, line: str) -> tuple[str, list[str]]:
    """`line` without the `</details>` tags that close nothing, and those tags."""
    spans = [match.span() for match in _CODE_SPAN.finditer(line)]
    kept: list[str] = []
    stray: list[str] = []
    last = 0
    for tag in _DETAILS_TAG.finditer(line):
        if any(start <= tag.start() < end for start, end in spans):
            continue
        if not tag["close"]:
            depth += 1
        elif depth:
            depth -= 1
        else:
            kept.append(line[last : tag.start()])
            stray.append(tag[0])
            last = tag.end()
    return "".join(kept) + line[last:], stray


# --- splitting -------------------------------------------------------------------------------


class SplitError(ReviewerError):
    """The text cannot be split within the budget (nesting deeper than a part can hold)."""


def _lines(text: str, longest: int) -> list[str]:
    """`text` as newline-terminated lines; a line over `longest` bytes is wrapped into pieces."""
    lines: list[str] = []
    for line in text.split("\n"):
        lines.extend(_wrap(line, longest))
    if text.endswith("\n"):
        lines.pop()  # split() leaves an empty string after the final newline
    return [line + "\n" for line in lines]


def _wrap(line: str, longest: int) -> Iterator[str]:
    data = line.encode("utf-8")
    while len(data) > longest:
        # Cut on a character boundary: drop the bytes of a character split in two.
        head = data[:longest].decode("utf-8", "ignore")
        yield head
        data = data[len(head.encode("utf-8")) :]
    yield data.decode("utf-8")


@dataclass(frozen=True)
class _Doc:
    lines: list[str]
    sizes: list[int]
    stacks: list[_Stack]  # stacks[i]: blocks open before line i (len(lines) + 1 entries)
    opens: list[int]  # bytes to reopen stacks[i]
    closes: list[int]  # bytes to close stacks[i]


def _analyse(text: str, longest: int) -> _Doc:
    lines = _lines(text, longest)
    stacks: list[_Stack] = [()]
    for index, line in enumerate(lines):
        stack = stacks[-1]
        if not (stack and stack[-1].kind == "fence"):
            # A `</details>` that closes nothing would close a block of ours after a cut.
            line = lines[index] = _without_stray_closes(len(stack), line)[0]
        stacks.append(_step(stack, line[:-1]))
    return _Doc(
        lines=lines,
        sizes=[size(line) for line in lines],
        stacks=stacks,
        opens=[size("".join(f.reopen() for f in stack)) for stack in stacks],
        closes=[size("".join(f.close() for f in reversed(stack))) for stack in stacks],
    )


def split_markdown(text: str, budget: int) -> list[str]:
    """Cut `text` into pieces of at most `budget` UTF-8 bytes, each with balanced blocks."""
    if size(text) <= budget and not balance_problems(text):
        return [text]
    doc = _analyse(text, max(64, budget // 4))
    pieces: list[str] = []
    start = 0
    while start < len(doc.lines):
        end = _best_cut(doc, start, budget)
        pieces.append(_piece(doc, start, end))
        start = end
    return pieces


def _best_cut(doc: _Doc, start: int, budget: int) -> int:
    """The end line of the piece starting at `start`: late, shallow, at a blank line if possible."""
    room = budget - doc.opens[start]
    used = 0
    feasible: list[tuple[int, int]] = []  # (end, content bytes)
    for end in range(start + 1, len(doc.lines) + 1):
        used += doc.sizes[end - 1]
        if used > room:
            break
        if used + doc.closes[end] <= room:
            feasible.append((end, used))
    if not feasible:
        raise SplitError(f"cannot fit line {start + 1} of the report into {budget} bytes")
    if feasible[-1][0] == len(doc.lines):
        return len(doc.lines)
    half = feasible[-1][1] / 2
    return min(
        (end for end, used in feasible if used >= half),
        key=lambda end: (len(doc.stacks[end]), doc.lines[end - 1].strip() != "", -end),
    )


def _piece(doc: _Doc, start: int, end: int) -> str:
    reopen = "".join(frame.reopen() for frame in doc.stacks[start])
    close = "".join(frame.close() for frame in reversed(doc.stacks[end]))
    return reopen + "".join(doc.lines[start:end]) + close


def truncate_markdown(text: str, budget: int, note: str) -> str:
    """`text` if it fits in `budget` bytes, else its balanced beginning followed by `note`."""
    if size(text) <= budget:
        return text
    room = budget - size(note) - 2
    try:
        head = split_markdown(text, room)[0].rstrip() if room > 0 else ""
    except SplitError:
        head = ""
    return f"{head}\n\n{note}" if head else clip(note, budget)


def clip(text: str, budget: int) -> str:
    """The longest prefix of `text` within `budget` UTF-8 bytes (cut on a character boundary)."""
    return text.encode("utf-8")[: max(0, budget)].decode("utf-8", "ignore")


def summary_of(markdown: str) -> str:
    """The report up to its first top-level `<details>` block: title, table, warnings, failures."""
    stack: _Stack = ()
    kept: list[str] = []
    for line in markdown.split("\n"):
        after = _step(stack, line)
        if not stack and after and after[0].kind == "details":
            break
        kept.append(line)
        stack = after
    return "\n".join(kept).rstrip() + "\n"


# --- parts -----------------------------------------------------------------------------------


def _decorate(marker: Marker, content: str) -> str:
    body = marker.render() + "\n" + content
    if marker.total > 1:
        body = body.rstrip("\n") + f"\n\n<sub>part {marker.part} of {marker.total}</sub>\n"
    return body


def _overhead(key: str) -> int:
    """Bytes `_decorate` adds at most around a piece, whatever the part numbers."""
    marker = Marker(key, _WIDE, _WIDE, "f" * 64)
    return size(marker.render() + "\n") + size(f"\n\n<sub>part {_WIDE} of {_WIDE}</sub>\n")


def plan_comments(
    report: str,
    *,
    key: str,
    sha: str,
    pointer: str,
    summary: str | None = None,
    budget: int = DEFAULT_BUDGET,
    max_parts: int = DEFAULT_MAX_PARTS,
) -> list[Part]:
    """The sticky parts for `report`; past `max_parts`, one part: the summary plus `pointer`."""
    validate_key(key)
    if not _SHA.fullmatch(sha):
        raise ReviewerError(f"invalid commit SHA {sha!r} for the comment marker")
    room = budget - _overhead(key)
    try:
        pieces = split_markdown(report, room)
    except SplitError:
        pieces = []
    if not 0 < len(pieces) <= max(1, max_parts):
        pieces = [_degraded(summary or summary_of(report), pointer, room)]
    total = len(pieces)
    return [
        Part(n, total, _decorate(Marker(key, n, total, sha), piece))
        for n, piece in enumerate(pieces, start=1)
    ]


def _degraded(summary: str, pointer: str, room: int) -> str:
    note = f"> [!NOTE]\n> {pointer}\n"
    head_room = room - size(note) - 2
    head = truncate_markdown(summary.rstrip() + "\n", head_room, "*(summary truncated)*")
    return f"{head.rstrip()}\n\n{note}" if head.strip() else clip(note, room)


def bodies_fit(parts: Sequence[Part], budget: int = DEFAULT_BUDGET) -> bool:
    """True when every body is within `budget` bytes (a guard before anything is posted)."""
    return all(size(part.body) <= budget for part in parts)
