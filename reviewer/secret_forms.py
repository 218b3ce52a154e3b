"""The forms a secret takes in rendered output, and finding them in text.

`encodings` lists how a value commonly shows up (JSON, Go's JSON and number printing, URL and
base64 forms, and reviewer's own escaped display); `Matcher` finds every occurrence of a set of
such forms, merging overlaps. Used by the redactor (to replace) and the leak guard (to refuse).
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any
from urllib.parse import quote, quote_plus

from reviewer.visible import visible

_NUMBER_TEXT = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def encodings(text: str) -> dict[str, str]:
    """The forms in which a value commonly shows up in rendered output, by kind."""
    forms = {
        "raw": text,
        "json": json.dumps(text, ensure_ascii=False)[1:-1],
        "json-ascii": json.dumps(text)[1:-1],
        "json-go": _go_json(text),
        "url": quote(text, safe=""),
        "url-query": quote_plus(text, safe=""),
    }
    raw = text.encode("utf-8", "surrogatepass")
    for kind, encode in (("b64", base64.b64encode), ("b64url", base64.urlsafe_b64encode)):
        encoded = encode(raw).decode("ascii")
        forms[kind] = encoded
        forms[f"{kind}-nopad"] = encoded.rstrip("=")
    number = _go_number(text)
    if number is not None:
        forms["go-number"] = number
    # How reviewer itself shows it, on a terminal and in Markdown (reviewer/visible.py).
    for kind, shown in (
        ("shown", visible(text)),
        ("shown-lines", visible(text, keep_newlines=True)),
    ):
        if shown != text:
            forms[kind] = shown
    return forms


def _go_json(text: str) -> str:
    # Helm's toJson is Go's json.Marshal: it also escapes <, >, & and U+2028/9.
    escaped = json.dumps(text, ensure_ascii=False)[1:-1]
    for char, code in (("<", "003c"), (">", "003e"), ("&", "0026"), ("\u2028", "2028")):
        escaped = escaped.replace(char, "\\u" + code)
    return escaped.replace("\u2029", "\\u2029")


def _go_number(text: str) -> str | None:
    """How Go's %v prints the number `text` (Helm prints 9999999 as 9.999999e+06)."""
    if not _NUMBER_TEXT.fullmatch(text):
        return None
    value = float(text)
    if not math.isfinite(value) or value == 0:
        return None
    sign, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)  # finite, so never 'n'/'N'/'F'
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + exponent  # position of the decimal point
    digits = digits.rstrip("0") or "0"
    power = point - 1
    if -4 <= power < 6:
        shown = repr(value).removesuffix(".0")
    else:
        mantissa = digits[0] + (f".{digits[1:]}" if len(digits) > 1 else "")
        shown = f"{'-' if sign else ''}{mantissa}e{'+' if power >= 0 else '-'}{abs(power):02d}"
    return shown if shown != text else None


# --- finding secrets in text ---------------------------------------------------


class Matcher:
    """Every occurrence of a set of forms in a text; overlapping occurrences merge."""

    def __init__(self, substrings: Iterable[str]) -> None:
        forms = sorted(set(substrings), key=lambda form: (-len(form), form))
        # Helm's indent/nindent re-indents multi-line secrets (PEM keys, config
        # files): their line breaks may be followed by any indentation.
        multiline = [r"\n[ \t]*".join(map(re.escape, f.split("\n"))) for f in forms if "\n" in f]
        single = [f for f in forms if "\n" not in f]
        parts = [*multiline, trie_pattern(single)] if single else multiline
        self._pattern = re.compile("|".join(parts)) if parts else None

    def search(self, text: str) -> bool:
        """Whether any form occurs in `text`."""
        return self._pattern is not None and self._pattern.search(text) is not None

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Sorted, disjoint (start, end) spans covering every occurrence."""
        if self._pattern is None:
            return []
        found: list[tuple[int, int]] = []
        position = 0
        while (match := self._pattern.search(text, position)) is not None:
            start, end = match.span()
            probe = start + 1
            # An occurrence may start inside this one and reach beyond it.
            while probe < end:
                inner = self._pattern.match(text, probe)
                if inner is not None and inner.end() > end:
                    end = inner.end()
                probe += 1
            found.append((start, end))
            position = end
        return found

    def replace(self, text: str, replacement: Callable[[str], str]) -> str:
        """`text` with every merged occurrence replaced by `replacement(occurrence)`."""
        spans = self.spans(text)
        if not spans:
            return text
        pieces: list[str] = []
        last = 0
        for start, end in spans:
            pieces += [text[last:start], replacement(text[start:end])]
            last = end
        pieces.append(text[last:])
        return "".join(pieces)


def trie_pattern(words: list[str]) -> str:
    """A regex matching any of `words`, the longest one at a given position first."""
    trie: dict[str, Any] = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}
    return _node_pattern(trie)


def _node_pattern(node: dict[str, Any]) -> str:
    prefix = ""
    # Follow single-child chains iteratively: a long secret must not recurse per character.
    while len(node) == 1 and "" not in node:
        (char, node), *_ = node.items()
        prefix += re.escape(char)
    branches = [re.escape(char) + _node_pattern(child) for char, child in node.items() if char]
    if not branches:
        return prefix
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    # Greedy `?`: the longer word wins over the one ending here.
    return prefix + (f"(?:{body})?" if "" in node else body)
