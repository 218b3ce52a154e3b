"""Redaction of secret values (docs/redaction.md) and the leak guard.

- `redact_scalar` / `redact_tree`: the shape-keeping redacted form of a value.
- `replacement_map`: {real: redacted} from the real and the redacted value trees.
- `Redactor`: applies a map to rendered manifests (whole scalars, substrings and
  common encodings) and masks every `data`/`stringData` value of v1 Secrets
  with a keyed hash.
- `LeakGuard`: scans any output for known secrets before it leaves the process.

Short secrets: a secret shorter than `MIN_SUBSTRING_LENGTH` characters is
replaced only where it (or one of its encodings) is a whole scalar, and the
leak guard ignores it, because "db" or "42" occurs in almost any text.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import math
import re
import secrets
from collections.abc import Iterable, Mapping
from typing import Any, TypeAlias, overload

from reviewer.errors import ReviewerError
from reviewer.secret_forms import Matcher, encodings, trie_pattern

Scalar: TypeAlias = str | int | float | bool | None

MIN_SUBSTRING_LENGTH = 4
SECRET_MARKER_PREFIX = "<secret:sha256-hmac:"
SCRUBBED = "[REDACTED]"

_WORD = "REDACTED"
_NUMBER_MIN_DIGITS = 5
_ALNUM_RUN = re.compile(r"[A-Za-z0-9]+")
_DIGIT = re.compile(r"[0-9]")
_MARKER_HEX = 12

# What the guard skips: tokens the redaction itself emits. A secret found only
# inside them ("EDAC" in "REDACTED", "2345" in a redacted "12345") is an echo of
# redaction output, not a leak; aborting there would block every such run.
_REDACTION_TOKEN = re.compile(
    re.escape(SECRET_MARKER_PREFIX) + f"[0-9a-f]{{{_MARKER_HEX}}}>"
    r"|\[REDACTED\]"
    r"|(?<![A-Za-z0-9])(?:R(?:E(?:D(?:A(?:C(?:T(?:E(?:D)?)?)?)?)?)?)?)+(?![A-Za-z0-9])"
    r"|(?<![A-Za-z0-9.])(?P<number>[0-9]+(?:\.[0-9]+)?)(?:e[+-][0-9]+)?(?![A-Za-z0-9])"
)


class LeakError(ReviewerError):
    """An output about to leave the process contains a known secret value."""

    def __init__(self, location: str) -> None:
        super().__init__(
            "contains a secret value (or an encoding of it); nothing was published",
            file=location,
            hint="the value is not shown; run `reviewer diff` locally to see where it enters",
        )


# --- one value -----------------------------------------------------------------


@overload
def redact_scalar(value: bool) -> bool: ...
@overload
def redact_scalar(value: int) -> int: ...
@overload
def redact_scalar(value: float) -> float: ...
@overload
def redact_scalar(value: str) -> str: ...
@overload
def redact_scalar(value: None) -> None: ...
def redact_scalar(value: Scalar) -> Scalar:
    """The redacted form of one value, keeping its type and shape (docs/redaction.md)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _ALNUM_RUN.sub(lambda run: _WORD[: len(run.group())], value)
    if isinstance(value, int):
        text = str(value)
        return value if _digit_count(text) < _NUMBER_MIN_DIGITS else int(_count_digits_up(text))
    if isinstance(value, float):
        # The exponent is kept: rewriting its digits could overflow to inf.
        mantissa, e, exponent = repr(value).partition("e")
        if not math.isfinite(value) or _digit_count(mantissa) < _NUMBER_MIN_DIGITS:
            return value
        return float(_count_digits_up(mantissa) + e + exponent)
    raise TypeError(f"cannot redact a {type(value).__name__}")


def redact_tree(tree: Any) -> Any:
    """A redacted copy of a values tree; map keys are never redacted."""
    if isinstance(tree, Mapping):
        return {key: redact_tree(value) for key, value in tree.items()}
    if isinstance(tree, list | tuple):
        return [redact_tree(item) for item in tree]
    return redact_scalar(tree)


def replacement_map(real: Any, redacted: Any) -> dict[str, str]:
    """{real: redacted} (string forms) for every leaf that differs between the two trees."""
    found: dict[str, str] = {}
    _collect(real, redacted, found)
    return found


def _collect(real: Any, redacted: Any, found: dict[str, str]) -> None:
    # The trees may differ in shape where a .gotmpl branches on a secret: only
    # positions present in both pair up.
    if isinstance(real, Mapping) and isinstance(redacted, Mapping):
        for key, value in real.items():
            if key in redacted:
                _collect(value, redacted[key], found)
    elif isinstance(real, list) and isinstance(redacted, list):
        for pair in zip(real, redacted, strict=False):
            _collect(*pair, found)
    else:
        real_text, redacted_text = _leaf_text(real), _leaf_text(redacted)
        if real_text is not None and redacted_text is not None and real_text != redacted_text:
            found.setdefault(real_text, redacted_text)


def _leaf_text(value: Any) -> str | None:
    # Booleans and None are never secret; numbers with fewer than 5 digits are
    # kept by design, so a difference there comes from a template branch.
    if value is None or isinstance(value, bool | Mapping | list):
        return None
    if isinstance(value, int | float):
        text = repr(value)
        return text if _digit_count(text) >= _NUMBER_MIN_DIGITS else None
    return str(value)


def _digit_count(text: str) -> int:
    return len(_DIGIT.findall(text))


def _count_digits_up(text: str) -> str:
    counter = iter(range(1, len(text) + 1))
    return _DIGIT.sub(lambda _: str(next(counter) % 10), text)


def _hide(text: str) -> str:
    redacted = redact_scalar(text)
    return redacted if redacted != text else _WORD


# --- manifests -------------------------------------------------------------------


class Redactor:
    """Applies a replacement map to rendered manifests and masks v1 Secret data."""

    def __init__(
        self,
        replacements: Mapping[str, str],
        *,
        key: bytes | None = None,
        leaves: Iterable[str] = (),
    ) -> None:
        """`replacements`: the union of both sides' maps; `key`: HMAC key (random per run).

        `leaves`: every decrypted SOPS leaf, for the leak guard only (paired or not).
        """
        self._key = secrets.token_bytes(32) if key is None else key
        self._secrets = tuple(replacements)
        self._leaves = tuple(leaves)
        self._keys: set[str] = set()  # map keys seen: published as they are
        self._forms: dict[str, str] = {}
        substrings: list[str] = []
        encoded = [
            (real, encodings(real), encodings(redacted)) for real, redacted in replacements.items()
        ]
        # Raw values first: when an encoding of one secret equals another secret, the raw wins.
        ordered = [(real, "raw", forms, counterparts) for real, forms, counterparts in encoded]
        ordered += [
            (real, kind, forms, counterparts)
            for real, forms, counterparts in encoded
            for kind in forms
            if kind != "raw"
        ]
        for real, kind, forms, counterparts in ordered:
            form = forms[kind]
            counterpart = counterparts.get(kind) or _hide(form)
            if form == counterpart or form in self._forms:
                continue
            self._forms[form] = counterpart
            if len(real) >= MIN_SUBSTRING_LENGTH:
                substrings.append(form)
        self._matcher = Matcher(substrings)

    @property
    def has_secrets(self) -> bool:
        """Whether any secret value is known (else only Secret objects need masking)."""
        return bool(self._secrets)

    def guard(self) -> LeakGuard:
        """A leak guard for the same secrets, treating map keys seen so far as public.

        Take it once the redaction is finished and hand it to the output layer then.
        Only distinctive secrets are guarded (`is_distinctive`): a common word such
        as `admin` also occurs where no secret flowed, and positional redaction
        (reviewer/twins.py) already covers every position derived from it.
        """
        guarded = [text for text in (*self._secrets, *self._leaves) if is_distinctive(text)]
        return LeakGuard(dict.fromkeys(guarded), public=self._keys)

    def redact_text(self, text: str) -> str:
        """`text` with every secret (whole value, substring, encodings) replaced."""
        whole = self._forms.get(text)
        if whole is not None:
            return whole
        return self._matcher.replace(text, lambda found: self._forms.get(found) or _hide(found))

    def secret_marker(self, value: Any, *, base64_encoded: bool = False) -> str:
        """The marker for one Secret value: equal values give equal markers within a run."""
        if isinstance(value, str):
            content = value.encode("utf-8", "surrogatepass")
            if base64_encoded:
                # `data` and `stringData` holding the same bytes compare equal.
                try:
                    content = base64.b64decode(content, validate=True)
                except binascii.Error:
                    content = b"not-base64\0" + content
        else:
            content = b"json\0" + json.dumps(value, sort_keys=True).encode()
        digest = hmac.new(self._key, content, hashlib.sha256).hexdigest()
        return f"{SECRET_MARKER_PREFIX}{digest[:_MARKER_HEX]}>"

    def redact_manifest(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """A redacted copy of one rendered object; map keys are never changed."""
        if body.get("kind") == "List" and isinstance(body.get("items"), list):
            redacted = {key: self._walk(value) for key, value in body.items() if key != "items"}
            redacted["items"] = [self._object(item) for item in body["items"]]
            self._keys.update(str(key) for key in body)
            return redacted
        is_secret = body.get("kind") == "Secret" and body.get("apiVersion") == "v1"
        result: dict[str, Any] = {}
        self._keys.update(str(key) for key in body)
        for key, value in body.items():
            if is_secret and key in ("data", "stringData") and isinstance(value, Mapping):
                result[key] = {name: self._mask(item, key) for name, item in value.items()}
            else:
                result[key] = self._walk(value)
        return result

    def _object(self, item: Any) -> Any:
        return self.redact_manifest(item) if isinstance(item, Mapping) else self._walk(item)

    def _mask(self, value: Any, field: str) -> Any:
        return None if value is None else self.secret_marker(value, base64_encoded=field == "data")

    def _walk(self, value: Any) -> Any:
        if isinstance(value, Mapping):
            self._keys.update(str(key) for key in value)
            return {key: self._walk(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self._walk(item) for item in value]
        if isinstance(value, str):
            return self.redact_text(value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return self._number(value)
        return value

    def _number(self, value: float) -> Any:
        texts = [repr(value)]
        if _digit_count(texts[0]) < _NUMBER_MIN_DIGITS:
            return value  # short numbers are kept by design, even if a short secret looks the same
        if isinstance(value, float) and value.is_integer() and math.isfinite(value):
            texts.append(str(int(value)))
        for text in texts:
            redacted = self._forms.get(text)
            if redacted is not None:
                return _as_number(redacted, like=value)
        return value


def _as_number(text: str, *, like: float) -> Any:
    try:
        return int(text) if isinstance(like, int) else float(text)
    except ValueError:
        return text  # the redacted form is not a number: a string still hides the value


# --- the leak guard ------------------------------------------------------------

DISTINCTIVE_LENGTH = 8
"""A secret this long with two character classes (or twice this long) is guarded."""


def is_distinctive(text: str) -> bool:
    """Whether finding `text` in an output can only mean a leak (docs/redaction.md).

    8+ characters mixing at least two classes (lower case, upper case, digits,
    other), or 16+ characters of any kind. `admin`, `cluster` or `password`
    are not: they occur where no secret flowed.
    """
    if len(text) >= 2 * DISTINCTIVE_LENGTH:
        return True
    classes = {
        "lower" if c.islower() else "upper" if c.isupper() else "digit" if c.isdigit() else "other"
        for c in text
    }
    return len(text) >= DISTINCTIVE_LENGTH and len(classes) >= 2


def leaf_texts(tree: Any) -> list[str]:
    """The string form of every leaf of a values tree that may be secret (not bool/null)."""
    if isinstance(tree, Mapping):
        return [text for value in tree.values() for text in leaf_texts(value)]
    if isinstance(tree, list | tuple):
        return [text for item in tree for text in leaf_texts(item)]
    if tree is None or isinstance(tree, bool):
        return []
    return [tree if isinstance(tree, str) else repr(tree)]


class LeakGuard:
    """Refuses outputs that contain a known secret (or an encoding of it).

    Occurrences inside redaction output (`REDACTED` runs, redacted numbers,
    Secret markers, `[REDACTED]`) and inside `public` words (map keys, which are
    never redacted) are not leaks: a secret equal to a key such as `password`
    cannot be told apart from that key, so the guard does not protect it there.
    """

    def __init__(self, values: Iterable[str | int | float], *, public: Iterable[str] = ()) -> None:
        """`values`: the secrets (shorter than MIN_SUBSTRING_LENGTH are ignored)."""
        substrings: list[str] = []
        for value in values:
            text = value if isinstance(value, str) else repr(value)
            if len(text) >= MIN_SUBSTRING_LENGTH:
                substrings += encodings(text).values()
        self._matcher = Matcher(substrings)
        words = sorted(w for w in set(public) if len(w) >= MIN_SUBSTRING_LENGTH)
        self._tokens = _REDACTION_TOKEN
        if words and substrings:
            word = f"(?<![A-Za-z0-9])(?:{trie_pattern(words)})(?![A-Za-z0-9])"
            self._tokens = re.compile(f"{_REDACTION_TOKEN.pattern}|{word}")

    def check(self, text: str, location: str) -> None:
        """Raise `LeakError` naming `location` (never the value) when `text` holds a secret."""
        # The forms are literal text (and `\n[ \t]*`), with no anchor or lookaround: what
        # occurs in a piece of `text` occurs in `text`. No occurrence at all (always so
        # without secrets) spares cutting out the redaction tokens of a large report.
        if not self._matcher.search(text):
            return
        pieces = _outside(self._tokens, text)
        if any(self._matcher.search(piece) for piece in pieces):
            raise LeakError(location)

    def scrub(self, text: str) -> str:
        """`text` with every secret occurrence replaced by `[REDACTED]` (for logs)."""
        return self._matcher.replace(text, lambda _: SCRUBBED)


def _outside(tokens: re.Pattern[str], text: str) -> list[str]:
    pieces: list[str] = []
    last = 0
    for token in tokens.finditer(text):
        number = token.group("number")
        if number is not None and not _is_redacted_number(number):
            continue
        pieces.append(text[last : token.start()])
        last = token.end()
    pieces.append(text[last:])
    return pieces


def _is_redacted_number(text: str) -> bool:
    digits = text.replace(".", "")
    return len(digits) >= _NUMBER_MIN_DIGITS and digits == _count_digits_up("0" * len(digits))
