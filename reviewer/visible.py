"""Text a pull request controls, made safe to show: invisible characters as escapes.

A terminal obeys the escape sequences in what it prints (it sets its title, hides or
overwrites lines, on some terminals worse), and bidirectional overrides reorder what a
reader sees. Every report and message shows such characters as `\\u001b`, `\\u202e`;
the Markdown rules (reviewer/markdown.py) and the terminal (reviewer/console.py) share them.
"""

from __future__ import annotations

import shlex
import unicodedata
from collections.abc import Iterable

_SHOWN = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_INVISIBLE = ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn")


class Shown(str):
    """Text for a terminal whose pull-request parts are already `visible` (it may hold
    reviewer's own colour codes, which must reach the terminal as they are)."""


def visible(text: str, *, keep_newlines: bool = False) -> str:
    """`text` with control, format and separator characters shown as escapes (`\\n`, `\\u0007`);
    `keep_newlines` keeps line feeds and tabs."""
    if text.isprintable():  # the common case, checked in C
        return text
    if keep_newlines:
        return "\n".join(
            line if line.isprintable() else _shown(line, True) for line in text.split("\n")
        )
    return _shown(text, False)


def _shown(text: str, keep_tabs: bool) -> str:
    return "".join(_show(char, keep_tabs) for char in text)


def _show(char: str, keep_tabs: bool) -> str:
    if char == "\t" and keep_tabs:
        return char
    if char in _SHOWN:
        return _SHOWN[char]
    if unicodedata.category(char) in _INVISIBLE:
        code = ord(char)
        return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
    return char


def continued(text: str) -> str:
    """`text` with every line after the first marked as its continuation (`  | `, under the
    first line's indent): a line feed in a name or message can never start a line that
    looks like one of reviewer's own (`  reproduce: ...`)."""
    first, newline, rest = text.partition("\n")
    if not newline:
        return text
    mark = " " * (len(first) - len(first.lstrip(" ")) + 2) + "| "
    return first + "".join(f"\n{mark}{line}".rstrip(" ") for line in rest.split("\n"))


def shell_words(words: Iterable[str]) -> str:
    """A command line for display, like `shlex.join`, each word quoted by `shell_word`."""
    return " ".join(shell_word(word) for word in words)


def shell_word(word: str) -> str:
    """`word` quoted for a shell, like `shlex.quote`; one holding invisible characters (a
    line feed, an escape sequence) is spelled `$'...'` with escapes, so that the command is
    shown on one line and still runs exactly (bash, zsh, ksh; POSIX since 2024)."""
    if word.isprintable():
        return shlex.quote(word)
    return "$'" + "".join(_escaped(char) for char in word) + "'"


_SHELL_SHOWN = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\", "'": "\\'"}


def _escaped(char: str) -> str:
    if char in _SHELL_SHOWN:
        return _SHELL_SHOWN[char]
    if visible(char) == char:
        return char
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8, kept by surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    # Bytes, not `\\u202e`: bash spells `\\u` in the locale's encoding, which in the C
    # locale is no character at all, and the command would name something else.
    return "".join(f"\\x{byte:02x}" for byte in char.encode("utf-8"))
