"""The project documents itself: no file points outside the repository, no link is dead."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Spelled in pieces so that this file does not match itself.
# `../shared` as a directory (the steering folder beside the checkout), not `../shared.yaml`.
OUTSIDE = re.compile(r"(?:\.\./|/work/)" + "shared" + r"(?![\w.-])")
DESIGN_DOC = re.compile(r"\bdesign" + r"\.md\b")  # no such file in the project
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$", re.MULTILINE)


def tracked_files() -> list[Path]:
    """Every file git tracks in the repository."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True
    ).stdout.decode()
    return [ROOT / name for name in listed.split("\0") if name]


def markdown_pages() -> list[Path]:
    """README.md, docs/*.md and every other tracked README.md."""
    return sorted(
        path
        for path in tracked_files()
        if path.name == "README.md" or (path.parent == ROOT / "docs" and path.suffix == ".md")
    )


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
        return None


def test_no_tracked_file_refers_outside_the_repository() -> None:
    offenders = []
    for path in tracked_files():
        text = _text(path)
        if text is None or path == Path(__file__).resolve():
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line) or DESIGN_DOC.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []


def test_docs_has_the_promised_pages() -> None:
    pages = {path.name for path in (ROOT / "docs").glob("*.md")}
    promised = {"index.md", "layout.md", "values.md", "redaction.md", "threat-model.md"}
    promised |= {"reports.md", "configuration.md", "setup.md"}
    assert promised <= pages


def links(page: Path) -> list[str]:
    """Link targets of a Markdown page, outside code blocks and inline code."""
    text = _INLINE_CODE.sub("", _FENCE.sub("", page.read_text(encoding="utf-8")))
    return _LINK.findall(text)


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for the headings of a Markdown page."""
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    return {_slug(title) for title in _HEADING.findall(text)}


def _slug(title: str) -> str:
    plain = re.sub(r"[^\w\- ]", "", title.replace("`", "").lower())
    return plain.replace(" ", "-")


@pytest.mark.parametrize("page", markdown_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_to_an_existing_file(page: Path) -> None:
    dead = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue  # https:, mailto: ...: not a file of the project
        path_part, _, anchor = target.partition("#")
        linked = (page.parent / path_part).resolve() if path_part else page
        if not linked.is_relative_to(ROOT) or not linked.exists():
            dead.append(f"{target}: no such file in the repository")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            dead.append(f"{target}: no heading '#{anchor}' in {linked.relative_to(ROOT)}")
    assert dead == []


def test_the_link_checker_sees_dead_links(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# Title `x`\n[ok](#title-x) [file](page.md) [web](https://example.invalid/)\n"
        "```\n[in code](nowhere.md)\n```\n[dead](missing.md)\n",
        encoding="utf-8",
    )
    assert links(page) == ["#title-x", "page.md", "https://example.invalid/", "missing.md"]
    assert anchors(page) == {"title-x"}
