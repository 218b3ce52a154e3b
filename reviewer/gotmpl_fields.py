"""Which keys of its context a Go template can reach, read from the template's text.

A `.gotmpl` file sees the whole merged values of its deployment, but most read a handful
of keys (`.Values.atlas.deployment.clusterName`, `.Values.baseDomain`). Rendering with only
the keys a template names gives the same output, costs the sandbox child far less (Helm
copies every value it is given), and lets renders that read the same keys share one answer.

The reading is conservative. Whatever could see the context as a whole answers "every
key": the root `.` passed anywhere (`toYaml .`, `keys .`, `range .`, `template "x" .`),
`.Values` used whole, `$`, `define`/`block`, and text whose actions cannot be lexed. Inside
`with`/`range` the dot is the value they bind, which is kept whole, so `.` there is fine.
An action with a non-ASCII character outside its literals is read as seeing the whole
context too: Go identifiers take any Unicode letter or digit (`.clé`, `.٣`), which the
ASCII patterns here would cut short or skip, dropping the key the template reads.
"""

from __future__ import annotations

import re

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FIELD = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)")
_KEYWORD = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)")
_DIGITS = frozenset("0123456789")
_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_") | _DIGITS
# What ends an operand: a dot after one of these continues a chain (`$x.a`, `(f).a`, `1.5`).
_OPERAND_END = _WORD | {")", "]"}


class _Opaque(Exception):
    """The template may see the whole context (or cannot be read safely)."""


def reachable(text: str) -> frozenset[str] | None:
    """Every identifier the template may look up on its context (a superset), or None when
    it may see the context whole."""
    try:
        return frozenset(_Reader(text).read())
    except _Opaque:
        return None


class _Reader:
    """One pass over the actions of a template, tracking what `.` is in each block."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.names: set[str] = set()
        # One entry per open block: whether `.` there is the root context.
        self.frames: list[bool] = [True]

    def read(self) -> set[str]:
        position = 0
        while (start := self.text.find("{{", position)) >= 0:
            code, position = _action(self.text, start + 2)
            if code is not None:
                if not code.isascii():
                    raise _Opaque  # a Unicode identifier, or a character Go may not take
                self._action(code)
        if len(self.frames) != 1:
            raise _Opaque  # unbalanced blocks: Helm refuses the text anyway
        return self.names

    def _action(self, code: str) -> None:
        keyword = _KEYWORD.match(code)
        word = keyword.group(1) if keyword else ""
        rest = code[keyword.end() :] if keyword else code
        if word in ("define", "block"):
            raise _Opaque
        if word == "end":
            self._pop()
        elif word == "if":
            self._scan(rest)
            self.frames.append(self.frames[-1])
        elif word in ("with", "range"):
            self._scan(rest)
            self.frames.append(False)
        elif word == "else":
            self._else(rest)
        else:
            self._scan(code)

    def _else(self, rest: str) -> None:
        if len(self.frames) < 2:
            raise _Opaque
        # An else branch (and the pipeline of `else if`/`else with`) sees the outer dot.
        self.frames[-1] = self.frames[-2]
        keyword = _KEYWORD.match(rest)
        word = keyword.group(1) if keyword else ""
        if word in ("if", "with") and keyword is not None:
            self._scan(rest[keyword.end() :])
            if word == "with":
                self.frames[-1] = False
        else:
            self._scan(rest)

    def _pop(self) -> None:
        if len(self.frames) < 2:
            raise _Opaque
        self.frames.pop()

    def _scan(self, code: str) -> None:
        """Collect field names; refuse what reaches the root context or `.Values` whole."""
        self.names.update(_FIELD.findall(code))
        root = self.frames[-1]
        for index, char in enumerate(code):
            if char == "$":
                following = code[index + 1 : index + 2]
                if not following or following not in _WORD:
                    raise _Opaque  # `$` is the chart's top level, not a variable
            elif char == "." and root:
                self._root_dot(code, index)

    def _root_dot(self, code: str, index: int) -> None:
        if index > 0 and code[index - 1] in _OPERAND_END:
            return  # a chain continues (`.a.b`, `$x.a`, `1.5`)
        following = code[index + 1 : index + 2]
        if following in _DIGITS:
            return  # a number such as `.5` (str.isdigit also takes `٣`, a Go letter-digit)
        name = _IDENTIFIER.match(code, index + 1)
        if name is None:
            raise _Opaque  # the root dot itself
        if name.group() == "Values" and not _FIELD.match(code, name.end()):
            raise _Opaque  # `.Values` whole: anything but `.Values.key`


def _action(text: str, start: int) -> tuple[str | None, int]:
    """The code of the action opened at `start` (string literals blanked; None for a
    comment) and where the text resumes."""
    index = start
    if text.startswith("-", index) and text[index + 1 : index + 2].isspace():
        index += 1
    stripped = len(text) - len(text[index:].lstrip())
    if text.startswith("/*", stripped):
        close = text.find("*/", stripped + 2)
        end = text.find("}}", close + 2) if close >= 0 else -1
        if end < 0 or text[close + 2 : end].strip() not in ("", "-"):
            raise _Opaque
        return None, end + 2
    code: list[str] = []
    while index < len(text):
        char = text[index]
        if text.startswith("}}", index):
            return "".join(code), index + 2
        if char in "\"'`":
            index = _skip_literal(text, index)
            code.append(" 0 ")  # a literal is an operand, never a field
            continue
        code.append(char)
        index += 1
    raise _Opaque  # an action never closed


def _skip_literal(text: str, start: int) -> int:
    """The index after the string, raw string or character literal opened at `start`."""
    quote = text[start]
    index = start + 1
    while index < len(text):
        char = text[index]
        if char == "\\" and quote != "`":
            index += 2
            continue
        if char == quote:
            return index + 1
        if char == "\n" and quote != "`":
            break
        index += 1
    raise _Opaque
