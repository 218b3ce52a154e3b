"""Typed decoding of the documents `reviewer` reads: one place for shape checks.

Every file the tool reads (deployment.yaml, app templates, .reviewer.yaml, index.json,
review.json, ci-shard.json, the GitHub event payload) is decoded once, at the edge, into
typed values. A bad field raises `ConfigError` naming the file, the field's path
(`releases[2].labels`) and what is allowed — never the value, which may be a secret.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from reviewer.errors import ConfigError

T = TypeVar("T")
Decoder = Callable[[object, "Field"], object]
"""Checks one value at a field and returns it typed (the shape of every function below)."""


@dataclass(frozen=True)
class Field:
    """Where a value sits: the file and the path of keys/indexes inside it."""

    file: str
    path: tuple[str | int, ...] = ()

    def key(self, name: str) -> Field:
        """The field `name` inside this one."""
        return Field(self.file, (*self.path, name))

    def index(self, position: int) -> Field:
        """Item `position` of this list."""
        return Field(self.file, (*self.path, position))

    @property
    def name(self) -> str:
        """The dotted path (`releases[0].chart`); empty at the top level."""
        text = ""
        for part in self.path:
            text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
        return text

    def error(self, message: str, *, hint: str | None = None) -> ConfigError:
        """A `ConfigError` for this field."""
        return ConfigError(self.file, message, field=self.name or None, hint=hint)


def mapping(
    value: object,
    at: Field,
    *,
    allowed: Collection[str] | None = None,
    required: Collection[str] = (),
) -> dict[str, Any]:
    """A map with string keys; `allowed` lists the keys it may have (shown in the order
    given), `required` those it must."""
    if not isinstance(value, Mapping):
        raise at.error("must be a map")
    for key in value:
        if not isinstance(key, str):
            raise at.error("keys must be strings")
        if allowed is not None and key not in allowed:
            raise at.key(key).error(f"unknown field; allowed: {', '.join(allowed)}")
    for key in required:
        if key not in value:
            raise at.key(key).error("is required")
    return dict(value)


def sequence(value: object, at: Field) -> list[Any]:
    """A list."""
    if not isinstance(value, list):
        raise at.error("must be a list")
    return value


def string(value: object, at: Field, *, choices: Collection[str] = (), empty: bool = True) -> str:
    """A string; `choices` restricts it, `empty=False` refuses ''."""
    if not isinstance(value, str):
        raise at.error("must be a string")
    if choices and value not in choices:
        raise at.error(f"must be one of: {', '.join(sorted(choices))}")
    if not empty and not value:
        raise at.error("must not be empty")
    return value


def boolean(value: object, at: Field) -> bool:
    """A YAML/JSON boolean; a quoted "false" is refused, not read as true."""
    if not isinstance(value, bool):
        raise at.error("must be true or false (a boolean, not a string)")
    return value


def integer(value: object, at: Field, *, minimum: int | None = None) -> int:
    """A whole number (booleans are not numbers here), at least `minimum`."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise at.error("must be a whole number")
    if minimum is not None and value < minimum:
        raise at.error(f"must be at least {minimum}")
    return value


def text(value: object, at: Field) -> str:
    """A scalar as text, as ATLAS passes it on: Go's `true`, numbers as Go's float64 (`1e+06`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return go_number(value)
    raise at.error("must be a string (or a number), not a map or list")


def go_number(value: float) -> str:
    """A number as Go prints a float64 (`%v`, shortest): 3, 0.1, 1e+06, 1.5e-07.

    ATLAS reads its files with `fromYaml`, so every number is a float64 when it
    is written back out for helmfile.
    """
    number = float(value)
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    mantissa, _, exponent = f"{abs(number)!r}".partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    point = len(whole.lstrip("0")) + int(exponent or 0)
    if not whole.lstrip("0"):
        point -= len(fraction) - len(fraction.lstrip("0"))
    digits = digits.rstrip("0")
    power = point - 1
    if power < -4 or power >= 6:
        tail = f".{digits[1:]}" if len(digits) > 1 else ""
        return f"{sign}{digits[0]}{tail}e{'-' if power < 0 else '+'}{abs(power):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{sign}{digits}{'0' * (point - len(digits))}"
    return f"{sign}{digits[:point]}.{digits[point:]}"


def text_map(value: object, at: Field) -> dict[str, str]:
    """A map of names to scalars, read as text (labels)."""
    return {key: text(item, at.key(key)) for key, item in mapping(value, at).items()}


def strings(value: object, at: Field) -> tuple[str, ...]:
    """A list of strings."""
    return tuple(string(item, at.index(i)) for i, item in enumerate(sequence(value, at)))


def string_map(value: object, at: Field) -> dict[str, str]:
    """A map of strings to strings."""
    return {key: string(item, at.key(key)) for key, item in mapping(value, at).items()}


def optional(
    data: Mapping[str, Any],
    key: str,
    at: Field,
    decoder: Callable[[object, Field], T],
    default: T,
) -> T:
    """`decoder(data[key])` when the key is present and not null, else `default`."""
    value = data.get(key)
    if value is None:
        return default
    return decoder(value, at.key(key))


def optional_map(data: Mapping[str, Any], key: str, at: Field) -> Mapping[str, Any]:
    """The map at `key`; an empty one when the key is absent or null."""
    return optional(data, key, at, mapping, NO_FIELDS)


def required(
    data: Mapping[str, Any], key: str, at: Field, decoder: Callable[[object, Field], T]
) -> T:
    """`decoder(data[key])`; a missing or null key is an error naming it."""
    if data.get(key) is None:
        raise at.key(key).error("is required")
    return decoder(data[key], at.key(key))


NO_FIELDS: Mapping[str, Any] = {}
"""The typed default for an absent map (never mutated: callers copy)."""
NO_TEXT: Mapping[str, str] = {}
"""The typed default for an absent map of text (never mutated: callers copy)."""
NO_ITEMS: Sequence[Any] = ()
"""The typed default for an absent list."""


def read_json(path: Path, *, source: str) -> object:
    """Parse a JSON file; unreadable or malformed JSON names the file (never its text)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(source, "file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(source, f"cannot be read ({type(exc).__name__})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(source, f"malformed JSON: {exc.msg}", line=exc.lineno) from None
