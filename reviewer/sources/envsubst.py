"""Flux's envsubst: `${...}` expansion as kustomize-controller's post-build runs it.

The behaviour follows the Go package Flux uses (a fork of drone/envsubst), read
from its code and tests rather than its README where the two disagree:

- only `${...}` is expanded; `$var` stays as is; `$$` outside an expression is
  one literal `$` (so `$${var}` gives `${var}`);
- `${var}`, `${#var}`, `${var^}`, `${var^^}`, `${var,}`, `${var,,}`, `${var:n}`,
  `${var:n:len}`, `${var#p}`, `${var##p}`, `${var%p}`, `${var%%p}` (glob patterns
  where `*` also matches `/`), `${var/p/r}`, `${var//p/r}`, `${var/#p/r}`,
  `${var/%p/r}` (literal patterns; `\\/` and `$$` escape inside them);
- `${var=d}`, `${var:=d}`, `${var:-d}` all give `d` when the variable is unset
  OR empty; `${var:?d}` and `${var:+d}` are parsed as the same default (not as
  bash's error/alternative); `${var-d}`, `${var+d}` and anything else after the
  name is an error ("missing closing brace");
- strict mode: a variable read without a default operator and absent from the
  variables is an error; every argument is expanded first, so a missing
  variable inside an unused default still fails.

Lengths and substrings count UTF-8 bytes, as Go does. Errors name the problem
and, in strict mode, the variable; never a value or the text.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from reviewer.errors import ReviewerError
from reviewer.sources.envsubst_glob import BadPattern, glob

_DEFAULT_OPS = frozenset(("-", "+", "=", "?", ":-", ":+", ":=", ":?"))
_INT64 = 2**63


class SubstitutionError(ReviewerError):
    """The text has an invalid `${...}` expression or, strictly, an unset variable."""


@dataclass(frozen=True)
class _Text:
    value: str


@dataclass(frozen=True)
class _Call:
    param: str
    op: str
    args: tuple[_Node, ...]


_Node = _Text | _Call

# Which characters a parameter's text may take, by the character and its 1-based position.
_Accept = Callable[[str], bool]


def expand(text: str, variables: Mapping[str, str], *, strict: bool) -> str:
    """`text` with its `${...}` expressions expanded from `variables`."""
    nodes = _Parser(text).parse_any()
    return "".join(_evaluate(node, variables, strict=strict) for node in nodes)


# --- parsing ---------------------------------------------------------------------------


def _is_ident(char: str) -> bool:
    return char == "_" or char.isalpha() or unicodedata.category(char) == "Nd"


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def peek(self, offset: int = 0) -> str:
        index = self.pos + offset
        return self.text[index] if index < len(self.text) else ""

    def at_open(self) -> bool:
        return self.peek() == "$" and self.peek(1) == "{"

    def parse_any(self) -> list[_Node]:
        nodes: list[_Node] = []
        buffer: list[str] = []
        while self.pos < len(self.text):
            if self.at_open():
                if buffer:
                    nodes.append(_Text("".join(buffer)))
                    buffer = []
                self.pos += 2
                nodes.append(self.parse_call())
            elif self.peek() == "$" and self.peek(1) == "$":
                buffer.append("$")
                self.pos += 2
            else:
                buffer.append(self.peek())
                self.pos += 1
        if buffer:
            nodes.append(_Text("".join(buffer)))
        return nodes

    def parse_call(self) -> _Call:
        if self.peek() == "#":
            return self.parse_length()
        name = self.take_while(_is_ident)
        if not name:
            raise SubstitutionError("unable to parse variable name")
        following = self.peek()
        if following == ":":
            if self.peek(1) in ("=", "-", "?", "+"):
                return self.parse_default(name, self.take(2))
            return self.parse_substring(name)
        if following == "=":
            return self.parse_default(name, self.take(1))
        if following in (",", "^"):
            op = self.take_while(lambda char: char in ",^", limit=2)
            return self.closed(_Call(name, op, ()))
        if following == "/":
            return self.parse_replace(name)
        if following in ("#", "%"):
            op = self.take_while(lambda char: char == following, limit=2)
            pattern = self.param(lambda char: char != "}", escapes=False)
            return self.closed(_Call(name, op, (pattern,)))
        if following != "}":
            raise SubstitutionError("missing closing brace")
        self.pos += 1
        return _Call(name, "", ())

    def parse_length(self) -> _Call:
        self.pos += 1
        name = self.take_while(_is_ident)
        if not name:
            raise SubstitutionError("bad substitution")
        return self.closed(_Call(name, "#", ()))

    def parse_default(self, name: str, op: str) -> _Call:
        args: list[_Node] = []
        while self.peek() != "}":
            args.append(self.param(lambda char: char != "}", escapes=False))
        self.pos += 1
        return _Call(name, op, tuple(args))

    def parse_substring(self, name: str) -> _Call:
        self.pos += 1
        offset = self.param(lambda char: char not in ":}", escapes=False)
        if self.peek() == "}":
            self.pos += 1
            return _Call(name, ":", (offset,))
        if self.peek() != ":":
            raise SubstitutionError("bad substitution")
        self.pos += 1
        length = self.param(lambda char: char != "}", escapes=False)
        return self.closed(_Call(name, ":", (offset, length)))

    def parse_replace(self, name: str) -> _Call:
        op = "/"
        self.pos += 1
        if self.peek() in ("/", "#", "%"):
            op += self.take(1)
        pattern = self.param(lambda char: char != "/", escapes=True)
        if not self.take_while(lambda char: char == "/"):
            raise SubstitutionError("bad substitution")
        if self.peek() == "}":
            self.pos += 1
            return _Call(name, op, (pattern,))
        replacement = self.param(lambda char: char != "}", escapes=True)
        return self.closed(_Call(name, op, (pattern, replacement)))

    def param(self, accept: _Accept, *, escapes: bool) -> _Node:
        """One argument: a nested `${...}` or a run of accepted (or escaped) characters."""
        if self.at_open():
            self.pos += 2
            return self.parse_call()
        taken: list[str] = []
        while self.pos < len(self.text) and not self.at_open():
            char = self.peek()
            if escapes and self.escaped(char):
                taken.append(self.peek(1))
                self.pos += 2
                continue
            if not accept(char):
                break
            taken.append(char)
            self.pos += 1
        if not taken:
            raise SubstitutionError("unable to parse substitution within function")
        return _Text("".join(taken))

    def escaped(self, char: str) -> bool:
        following = self.peek(1)
        return (char == "$" and following == "$") or (char == "\\" and following in ("/", "\\"))

    def take(self, count: int) -> str:
        taken = self.text[self.pos : self.pos + count]
        self.pos += len(taken)
        return taken

    def take_while(self, accept: _Accept, *, limit: int | None = None) -> str:
        start = self.pos
        while self.pos < len(self.text) and accept(self.text[self.pos]):
            if limit is not None and self.pos - start >= limit:
                break
            self.pos += 1
        return self.text[start : self.pos]

    def closed(self, call: _Call) -> _Call:
        if self.peek() != "}":
            raise SubstitutionError("bad substitution")
        self.pos += 1
        return call


# --- evaluation ------------------------------------------------------------------------


def _evaluate(node: _Node, variables: Mapping[str, str], *, strict: bool) -> str:
    if isinstance(node, _Text):
        return node.value
    args = [_evaluate(arg, variables, strict=strict) for arg in node.args]
    value = variables.get(node.param)
    if value is None:
        if strict and node.op not in _DEFAULT_OPS:
            raise SubstitutionError(f'variable not set (strict mode): "{node.param}"')
        value = ""
    return _apply(node.op, value, args)


def _apply(op: str, value: str, args: list[str]) -> str:
    if op == "#" and not args:
        return str(len(value.encode()))
    operation = _OPERATIONS.get(op)
    if operation is not None:
        return operation(value, args)
    # Every other operator, defaults included, gives the arguments for an empty value.
    return "".join(args) if value == "" and args else value


def _lower_first(value: str, args: list[str]) -> str:
    return value[:1].lower() + value[1:]


def _upper_first(value: str, args: list[str]) -> str:
    return value[:1].upper() + value[1:]


def _go_int(text: str) -> int | None:
    # strconv.Atoi: an optional sign and ASCII digits, within int64.
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not all("0" <= char <= "9" for char in body):
        return None
    number = int(text)
    return number if -_INT64 <= number < _INT64 else None


def _substring(value: str, args: list[str]) -> str:
    data = value.encode()
    position = _go_int(args[0])
    if position is None:
        return value
    if position < 0:
        position = max(len(data) + position, 0)
    if len(args) == 1:
        return data[position:].decode(errors="replace")
    length = _go_int(args[1])
    if length is None:
        return value
    if position + length >= len(data):
        return data[position:].decode(errors="replace")
    return data[position : position + length].decode(errors="replace")


def _replace(count: int) -> Callable[[str, list[str]], str]:
    def replace(value: str, args: list[str]) -> str:
        replacement = args[1] if len(args) > 1 else ""
        return value.replace(args[0], replacement, count)

    return replace


def _replace_prefix(value: str, args: list[str]) -> str:
    if len(args) != 2 or not value.startswith(args[0]):
        return value
    return value.replace(args[0], args[1], 1)


def _replace_suffix(value: str, args: list[str]) -> str:
    if len(args) != 2 or not value.endswith(args[0]):
        return value
    return value[: len(value) - len(args[0])] + args[1]


def _trim_prefix(longest: bool) -> Callable[[str, list[str]], str]:
    def trim(value: str, args: list[str]) -> str:
        return _trim(value, args[0], longest=longest)

    return trim


def _trim_suffix(longest: bool) -> Callable[[str, list[str]], str]:
    # Go reverses the value and the pattern (character classes included) and trims a prefix.
    def trim(value: str, args: list[str]) -> str:
        return _trim(value[::-1], args[0][::-1], longest=longest)[::-1]

    return trim


def _trim(value: str, pattern: str, *, longest: bool) -> str:
    match = ""
    for end in range(len(value), 0, -1):
        try:
            matched = glob(pattern, value[:end])
        except BadPattern:
            return value
        if matched:
            match = value[:end]
            if longest:
                break
    return value[len(match) :] if match else value


_OPERATIONS: dict[str, Callable[[str, list[str]], str]] = {
    ",": _lower_first,
    ",,": lambda value, args: value.lower(),
    "^": _upper_first,
    "^^": lambda value, args: value.upper(),
    ":": _substring,
    "/": _replace(1),
    "//": _replace(-1),
    "/#": _replace_prefix,
    "/%": _replace_suffix,
    "#": _trim_prefix(longest=False),
    "##": _trim_prefix(longest=True),
    "%": _trim_suffix(longest=False),
    "%%": _trim_suffix(longest=True),
}
