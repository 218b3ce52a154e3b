"""Helm's `--set` syntax, written into an existing values map the way helm-controller does.

A `valuesFrom` entry with a `targetPath` becomes `<targetPath>=<value>` for Helm's
strvals parser, into the values merged so far. The parser writes in place: maps
and lists it finds are changed, not copied, unless a list must grow (then a new
one replaces it). helm-controller's precedence rules depend on exactly that
sharing, so this module keeps Go's reference semantics with Python's.

Syntax: `a.b` nests maps, `a[2]` indexes (and pads) lists, `\\` escapes the next
character, `,` separates assignments, `{x,y}` is a list. Values are typed as
`--set` types them (`true`/`false`, `null`, integers without leading zeros)
unless parsed as strings (`--set-string`).
"""

from __future__ import annotations

from typing import Any

MAX_INDEX = 65536
MAX_NESTING = 30
_KEY_STOP = frozenset("=[,.")
_ITEM_STOP = frozenset("[.=")
_INT64 = range(-(2**63), 2**63)


class SetError(ValueError):
    """A `--set` expression that Helm's parser refuses."""


class _End(Exception):
    """The expression ended (Go's io.EOF)."""


class _NotList(Exception):
    """The value does not start with `{`."""


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.position = 0

    def read(self) -> str:
        if self.position >= len(self.text):
            raise _End
        char = self.text[self.position]
        self.position += 1
        return char

    def unread(self) -> None:
        self.position -= 1

    def until(self, stop: frozenset[str]) -> tuple[str, str | None]:
        """Characters up to a stop character (unescaped); the stop is None at the end."""
        taken: list[str] = []
        while self.position < len(self.text):
            char = self.read()
            if char in stop:
                return "".join(taken), char
            if char == "\\":
                if self.position >= len(self.text):
                    return "".join(taken), None
                char = self.read()
            taken.append(char)
        return "".join(taken), None


def parse_into(expression: str, values: dict[str, Any], *, strings: bool = False) -> None:
    """Apply `expression` (`path=value[,path=value...]`) to `values` in place."""
    _Parser(_Scanner(expression), strings).parse(values)


def typed(text: str, *, strings: bool = False) -> Any:
    """A `--set` value as Helm types it (always the text itself for `--set-string`)."""
    if strings:
        return text
    lower = text.lower()
    if lower in ("true", "false"):
        return lower == "true"
    if lower == "null":
        return None
    if text == "0":
        return 0
    if text and text[0] != "0":
        try:
            number = int(text, 10)
        except ValueError:
            return text
        digits = text[1:] if text[0] in "+-" else text
        if number in _INT64 and digits.isascii() and digits.isdigit():
            return number
    return text


class _Parser:
    def __init__(self, scanner: _Scanner, strings: bool) -> None:
        self.scanner = scanner
        self.strings = strings

    def parse(self, data: dict[str, Any]) -> None:
        while True:
            try:
                self.key(data, 0)
            except _End:
                return

    def key(self, data: dict[str, Any], level: int) -> None:
        key, last = self.scanner.until(_KEY_STOP)
        if last is None:
            if not key:
                raise _End
            raise SetError(f"key {key!r} has no value")
        if last == "[":
            index = self.index()
            found = data.get(key, []) if key in data else []
            if not isinstance(found, list):
                raise SetError(f"unable to parse key: {key!r} is not a list")
            try:
                found = self.list_item(found, index, level)
            except _End:
                _set(data, key, found)
                raise
            _set(data, key, found)
            return
        if last == "=":
            _set(data, key, self.value())
            return
        if last == ",":
            _set(data, key, "")
            raise SetError(f"key {key!r} has no value (cannot end with ,)")
        level += 1
        if level > MAX_NESTING:
            raise SetError(
                f"value name nested level is greater than maximum supported nested level "
                f"of {MAX_NESTING}"
            )
        inner = data.get(key, {})
        if not isinstance(inner, dict):
            raise SetError(f"unable to parse key: {key!r} is not a map")
        try:
            self.key(inner, level)
        except _End:
            if inner:
                _set(data, key, inner)
            raise
        if not inner:
            raise SetError(f"key map {key!r} has no value")
        _set(data, key, inner)

    def value(self) -> Any:
        """A value after `=`: a `{...}` list or a scalar up to the next `,`."""
        try:
            return self.value_list()
        except _End:
            return ""
        except _NotList:
            text, _ = self.scanner.until(frozenset(","))
            return typed(text, strings=self.strings)

    def value_list(self) -> list[Any]:
        if self.scanner.read() != "{":
            self.scanner.unread()
            raise _NotList
        items: list[Any] = []
        while True:
            text, last = self.scanner.until(frozenset(",}"))
            if last is None:
                raise SetError("list must terminate with '}'")
            items.append(typed(text, strings=self.strings))
            if last == "}":
                if self.scanner.position < len(self.scanner.text) and self.scanner.read() != ",":
                    self.scanner.unread()
                return items

    def index(self) -> int:
        text, last = self.scanner.until(frozenset("]"))
        if last is None:
            raise SetError("error parsing index: missing ']'")
        try:
            return int(text, 10)
        except ValueError:
            raise SetError(f"error parsing index: {text!r} is not a number") from None

    def list_item(self, items: list[Any], index: int, level: int) -> list[Any]:
        if index < 0:
            raise SetError(f"negative {index} index not allowed")
        rest, last = self.scanner.until(_ITEM_STOP)
        if rest:
            raise SetError(f"unexpected data at end of array index: {rest!r}")
        if last is None:
            raise _End
        if last == "=":
            return _set_index(items, index, self.value())
        if last == "[":
            inner_index = self.index()
            current = items[index] if index < len(items) else None
            if current is not None and not isinstance(current, list):
                raise SetError(f"error processing index {index}: not a list")
            inner = self.list_item(current or [], inner_index, level)
            return _set_index(items, index, inner)
        inner_map: dict[str, Any] = {}
        if index < len(items):
            found = items[index]
            if not isinstance(found, dict):
                found = {}
                items[index] = found
            inner_map = found
        self.key(inner_map, level)
        return _set_index(items, index, inner_map)


def _set(data: dict[str, Any], key: str, value: Any) -> None:
    if key:
        data[key] = value


def _set_index(items: list[Any], index: int, value: Any) -> list[Any]:
    if index < 0:
        raise SetError(f"negative {index} index not allowed")
    if index > MAX_INDEX:
        raise SetError(f"index of {index} is greater than maximum supported index of {MAX_INDEX}")
    if len(items) <= index:
        # Growing allocates a new list, as Go's copy into a longer slice does: whoever
        # shared the old list keeps seeing it unchanged.
        items = [*items, *([None] * (index + 1 - len(items)))]
    items[index] = value
    return items


_LITERAL_ESCAPES = str.maketrans(
    {"\\": "\\\\", ",": "\\,", "[": "\\[", "]": "\\]", "{": "\\{", "}": "\\}"}
)


def replace_path_value(values: dict[str, Any], path: str, value: str) -> None:
    """helm-controller's targetPath: a quoted value stays a string, else `--set` typing."""
    quoted = len(value) >= 1 and (
        (value.startswith("'") and value.endswith("'"))
        or (value.startswith('"') and value.endswith('"'))
    )
    if quoted:
        parse_into(f"{path}={value.strip(chr(39) + chr(34))}", values, strings=True)
        return
    parse_into(f"{path}={value}", values)


def replace_path_literal(values: dict[str, Any], path: str, value: str) -> None:
    """helm-controller's `literal: true`: the value verbatim, the path still `\\.`-aware."""
    parse_into(f"{path}={value.translate(_LITERAL_ESCAPES)}", values, strings=True)
