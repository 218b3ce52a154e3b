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
import os
import re
import secrets
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeAlias, overload
from urllib.parse import quote, quote_plus

from reviewer.errors import ReviewerError

Scalar: TypeAlias = str | int | float | bool | None

MIN_SUBSTRING_LENGTH = 4
SECRET_MARKER_PREFIX = "<secret:sha256-hmac:"
SCRUBBED = "[REDACTED]"

_WORD = "REDACTED"
_NUMBER_MIN_DIGITS = 5
_ALNUM_RUN = re.compile(r"[A-Za-z0-9]+")
_DIGIT = re.compile(r"[0-9]")
_NUMBER_TEXT = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
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


# --- encodings of a secret -------------------------------------------------------


def _encodings(text: str) -> dict[str, str]:
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


class _Matcher:
    """Every occurrence of a set of forms in a text; overlapping occurrences merge."""

    def __init__(self, substrings: Iterable[str]) -> None:
        forms = sorted(set(substrings), key=lambda form: (-len(form), form))
        # Helm's indent/nindent re-indents multi-line secrets (PEM keys, config
        # files): their line breaks may be followed by any indentation.
        multiline = [r"\n[ \t]*".join(map(re.escape, f.split("\n"))) for f in forms if "\n" in f]
        single = [f for f in forms if "\n" not in f]
        parts = [*multiline, _trie_pattern(single)] if single else multiline
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


def _trie_pattern(words: list[str]) -> str:
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


def _hide(text: str) -> str:
    redacted = redact_scalar(text)
    return redacted if redacted != text else _WORD


# --- manifests -------------------------------------------------------------------


_MARKER_KEY_CONTEXT = b"reviewer secret markers v1\0"


def shared_marker_key(environ: Mapping[str, str], *, warn: Callable[[str], None]) -> bytes | None:
    """A Secret-marker key that every job of one CI run derives alike, or None.

    Derived from the SOPS age key material (secret, and present in every job
    that decrypts) and the CI run id, so the shards of one sharded review mark
    equal values equally while nobody without the key can compute a marker.
    Without key material each process keeps a random key; an unreadable
    `SOPS_AGE_KEY_FILE` is reported through `warn` (naming the file) and does the same.
    """
    material = environ.get("SOPS_AGE_KEY", "").encode()
    key_file = environ.get("SOPS_AGE_KEY_FILE")
    if not material and key_file:
        try:
            material = Path(key_file).read_bytes()
        except OSError as exc:
            warn(
                f"warning: SOPS_AGE_KEY_FILE {key_file} cannot be read ({type(exc).__name__}): "
                "Secret markers use a random key, so separate runs or shards mark values apart"
            )
            return None
    if not material.strip():
        return None
    run = environ.get("GITHUB_RUN_ID", "") + "/" + environ.get("GITHUB_RUN_ATTEMPT", "")
    return hmac.new(material, _MARKER_KEY_CONTEXT + run.encode(), hashlib.sha256).digest()


LOCAL_MARKER_KEY_FILE = "marker-key"


def local_marker_key(directory: Path) -> bytes | None:
    """This user's own random marker key, kept in `directory` (mode 0600), made on first use.

    For local runs without SOPS key material: two renders on this machine mark equal
    values equally, so their outputs compare, while nobody without the file can compute
    a marker. None (a random key for this process) when the file cannot be used.
    """
    path = directory / LOCAL_MARKER_KEY_FILE
    try:
        directory.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_key(path)
    except OSError:
        return None
    with os.fdopen(descriptor, "wb") as file:
        file.write(secrets.token_bytes(_KEY_BYTES))
    return _read_key(path)


_KEY_BYTES = 32


def _read_key(path: Path) -> bytes | None:
    try:
        key = path.read_bytes()
    except OSError:
        return None
    return key if len(key) == _KEY_BYTES else None


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
            (real, _encodings(real), _encodings(redacted))
            for real, redacted in replacements.items()
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
        self._matcher = _Matcher(substrings)

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
                substrings += _encodings(text).values()
        self._matcher = _Matcher(substrings)
        words = sorted(w for w in set(public) if len(w) >= MIN_SUBSTRING_LENGTH)
        self._tokens = _REDACTION_TOKEN
        if words and substrings:
            word = f"(?<![A-Za-z0-9])(?:{_trie_pattern(words)})(?![A-Za-z0-9])"
            self._tokens = re.compile(f"{_REDACTION_TOKEN.pattern}|{word}")

    def check(self, text: str, location: str) -> None:
        """Raise `LeakError` naming `location` (never the value) when `text` holds a secret."""
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
