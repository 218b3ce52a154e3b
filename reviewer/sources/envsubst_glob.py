"""Glob patterns for envsubst's trim operators: Go's path.Match, with `*` also matching `/`."""

from __future__ import annotations


class BadPattern(Exception):
    """The pattern is malformed (Go's path.ErrBadPattern)."""


def glob(pattern: str, name: str) -> bool:
    """Whether `name` matches `pattern` as Go's path.Match decides, `*` also matching `/`."""
    while pattern:
        star, chunk, pattern = _scan_chunk(pattern)
        if star and not chunk:
            return True
        rest = _match_chunk(chunk, name)
        if rest is not None and (not rest or pattern):
            name = rest
            continue
        if not star:
            return False
        for skip in range(1, len(name) + 1):
            rest = _match_chunk(chunk, name[skip:])
            if rest is not None and not (not pattern and rest):
                name = rest
                break
        else:
            return False
    return not name


def _scan_chunk(pattern: str) -> tuple[bool, str, str]:
    stripped = pattern.lstrip("*")
    star = len(stripped) != len(pattern)
    in_range = False
    index = 0
    while index < len(stripped):
        char = stripped[index]
        if char == "\\" and index + 1 < len(stripped):
            index += 1
        elif char == "[":
            in_range = True
        elif char == "]":
            in_range = False
        elif char == "*" and not in_range:
            break
        index += 1
    return star, stripped[:index], stripped[index:]


def _match_chunk(chunk: str, name: str) -> str | None:
    while chunk:
        if not name:
            return None
        head = chunk[0]
        if head == "[":
            matched, chunk = _match_class(chunk[1:], name[0])
            if not matched:
                return None
            name = name[1:]
        elif head == "?":
            chunk, name = chunk[1:], name[1:]
        else:
            if head == "\\":
                chunk = chunk[1:]
                if not chunk:
                    raise BadPattern
            if chunk[0] != name[0]:
                return None
            chunk, name = chunk[1:], name[1:]
    return name


def _match_class(chunk: str, char: str) -> tuple[bool, str]:
    negated = chunk[:1] == "^"
    if negated:
        chunk = chunk[1:]
    matched = False
    ranges = 0
    while True:
        if chunk[:1] == "]" and ranges > 0:
            return matched != negated, chunk[1:]
        low, chunk = _class_char(chunk)
        high = low
        if chunk[:1] == "-":
            high, chunk = _class_char(chunk[1:])
        matched = matched or low <= char <= high
        ranges += 1


def _class_char(chunk: str) -> tuple[str, str]:
    if not chunk or chunk[0] in "-]":
        raise BadPattern
    if chunk[0] == "\\":
        chunk = chunk[1:]
        if not chunk:
            raise BadPattern
    if len(chunk) == 1:
        raise BadPattern
    return chunk[0], chunk[1:]
