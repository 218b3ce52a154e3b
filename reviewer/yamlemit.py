"""Block YAML for normalised objects, written directly: the common case of `yamlio.dump`.

ruamel.yaml's representer builds a node and a tag object for every scalar, which costs
more than Helm spends rendering a big chart. Objects are plain trees (dicts with string
keys, lists, strings, numbers, booleans, null), so their block layout is written here and
each scalar is spelled exactly as ruamel.yaml spells it: strings that are plainly safe as
they are, literal blocks for multi-line text, and ruamel.yaml itself (once per distinct
value) for everything else. Whatever this writer is unsure of — shared subtrees, unusual
keys, lines long enough to be folded, block scalars that need `+` or a quoted form — makes
it give up (`None`), and the caller writes the whole document with ruamel.yaml.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

# Strings ruamel.yaml writes plain in block context: a letter first, then words joined by
# single spaces or colons (never `: `, ` #`, or a space at either end); only whole words a
# YAML reader could take for a boolean or null need its resolver.
_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_./-]*(?:[ :][A-Za-z0-9_./-]+)*")
_RESOLVABLE_WORDS = frozenset({"null", "true", "false", "yes", "no", "on", "off", "y", "n"})
# Characters a literal block may hold as they are (libyaml's printable set, line breaks
# other than `\n` and the byte-order mark excluded).
_LITERAL_TEXT = re.compile("[\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd]*")
_OTHER_BREAKS = re.compile("[\r\x85\u2028\u2029]")
# Keys longer than this are written as complex keys (`? key`) by the emitter.
_MAX_KEY = 120
# Lines longer than this may be folded by the emitter (its width is 4096).
_MAX_LINE = 4000

Spell = Callable[[Any], str]
"""A scalar as ruamel.yaml writes it in a block mapping value (one line), or raises."""


class Unsupported(Exception):
    """The document has something this writer does not write exactly like ruamel.yaml."""


# Objects of a fleet repeat the same keys and most of the same values: each distinct
# string is spelled once per `spell` function, as a value and (checked) as a key.
# Bounded: only short strings are kept (values up to _MAX_SPELLED_LENGTH, keys up to the
# shorter _MAX_KEY), and a table that grows too large starts again empty.
_SPELLED: dict[Spell, tuple[dict[str, str], dict[str, str]]] = {}
_MAX_SPELLED = 1 << 16
_MAX_SPELLED_LENGTH = 256


def _spellings(spell: Spell) -> tuple[dict[str, str], dict[str, str]]:
    found = _SPELLED.get(spell)
    if found is None or len(found[0]) + len(found[1]) > _MAX_SPELLED:
        found = _SPELLED[spell] = ({}, {})
    return found


def block_yaml(document: Any, spell: Spell) -> str | None:
    """`document` (a non-empty mapping) as block YAML, or None when it cannot be sure."""
    if not isinstance(document, dict) or not document:
        return None
    writer = _Writer(spell)
    try:
        writer.mapping(document, 0, "")
    except Unsupported:
        return None
    return "\n".join(writer.lines) + "\n"


class _Writer:
    """Collects the lines of one document."""

    def __init__(self, spell: Spell) -> None:
        self.spell = spell
        self._spelled, self._keys = _spellings(spell)
        self.lines: list[str] = []
        self._seen: set[int] = set()  # ruamel.yaml writes a shared subtree as an alias

    def _enter(self, node: dict[str, Any] | list[Any]) -> None:
        if id(node) in self._seen:
            raise Unsupported("shared subtree")
        self._seen.add(id(node))

    def mapping(self, node: dict[str, Any], indent: int, lead: str) -> None:
        """Keys at column `indent`; the first line starts with `lead` (e.g. `- `)."""
        self._enter(node)
        start, pad, keys, values = lead, " " * indent, self._keys, self._spelled
        for key, value in node.items():
            spelled = keys.get(key) if type(key) is str else None
            if spelled is None:
                spelled = self.key(key)
            # Most entries are a string already spelled: written here, without `entry`.
            known = values.get(value) if type(value) is str else None
            if known is not None:
                self.line(f"{start}{spelled}: {known}")
            else:
                self.entry(f"{start}{spelled}:", value, indent)
            start = pad

    def entry(self, head: str, value: Any, indent: int) -> None:
        """One `key: value` (or `- value`) whose key or dash sits at column `indent`."""
        if isinstance(value, dict):
            if not value:
                self.line(f"{head} {{}}")
                return
            self.lines.append(head)
            self.mapping(value, indent + 2, " " * (indent + 2))
        elif isinstance(value, list):
            if not value:
                self.line(f"{head} []")
                return
            self.lines.append(head)
            self.sequence(value, indent, " " * indent)
        elif isinstance(value, str) and "\n" in value:
            self.literal(head, value, indent + 2)
        else:
            self.line(f"{head} {self.scalar(value)}")

    def sequence(self, node: list[Any], indent: int, lead: str) -> None:
        """Dashes at column `indent`; the first line starts with `lead`."""
        self._enter(node)
        start = lead
        for item in node:
            dash = f"{start}- "
            if isinstance(item, dict) and item:
                self.mapping(item, indent + 2, dash)
            elif isinstance(item, list) and item:
                self.sequence(item, indent + 2, dash)
            else:
                self.entry(dash.rstrip(" "), item, indent)
            start = " " * indent

    def literal(self, head: str, text: str, indent: int) -> None:
        """A `|` block (as the representer asks for multi-line strings) at `indent`."""
        if (
            text.endswith((" ", "\n\n"))
            or text == "\n"
            or " \n" in text
            or not _LITERAL_TEXT.fullmatch(text)
        ):
            raise Unsupported("block scalar the emitter writes otherwise")
        hint = "2" if text[0] in " \n" else ""
        body = text[:-1] if text.endswith("\n") else text
        chomp = "" if text.endswith("\n") else "-"
        self.lines.append(f"{head} |{hint}{chomp}")
        pad = " " * indent
        self.lines.extend(f"{pad}{line}" if line else "" for line in body.split("\n"))

    def key(self, key: Any) -> str:
        """A mapping key: a short one-line string."""
        if not isinstance(key, str) or len(key) > _MAX_KEY:
            raise Unsupported("key")
        if "\n" in key:
            raise Unsupported("key with a line break")
        # No length check before keeping it: a key longer than _MAX_KEY (itself shorter than
        # _MAX_SPELLED_LENGTH) never gets here.
        spelled = self._keys[key] = self.scalar(key)
        return spelled

    def scalar(self, value: Any) -> str:
        """One-line scalar text."""
        if isinstance(value, str):
            found = self._spelled.get(value)
            if found is None:
                found = self._spell_string(value)
                if len(value) <= _MAX_SPELLED_LENGTH:
                    self._spelled[value] = found
            return found
        if value is True:
            return "true"
        if value is False:
            return "false"
        if value is None:
            return "null"
        if type(value) is int:
            return str(value)
        return self.spell(value)

    def _spell_string(self, value: str) -> str:
        if _PLAIN.fullmatch(value) and value.lower() not in _RESOLVABLE_WORDS:
            return value
        if _OTHER_BREAKS.search(value):
            raise Unsupported("a line break the emitter may fold at")
        return self.spell(value)

    def line(self, text: str) -> None:
        if len(text) > _MAX_LINE:
            raise Unsupported("a line the emitter may fold")
        self.lines.append(text)
