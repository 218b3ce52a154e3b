"""A HelmRelease's values, merged exactly as helm-controller merges them.

`valuesFrom` entries in order, then `spec.values`; Helm then coalesces the result
over the chart's defaults when it renders. A `targetPath` entry first merges
`spec.values` into the result and then writes its value in place (Helm `--set`);
maps that merge shares with `spec.values` are changed with it, which is why a
target path beats `spec.values` unless an earlier entry already created the
parent map (then the write lands in a copy and `spec.values` wins).

Secret values enter as they are (the real plan) or redacted leaf by leaf (the
redacted twin), so the redaction stage can pair each secret with its stand-in.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reviewer import values as values_mod
from reviewer import yamlio
from reviewer.decode import Field
from reviewer.errors import ConfigError
from reviewer.helmreleases import strvals
from reviewer.helmreleases.objects import HelmRelease, ValuesReference
from reviewer.redact import redact_scalar, redact_tree
from reviewer.sops import STRING_PLACEHOLDER

Values = dict[str, Any]


@dataclass(frozen=True)
class Supplied:
    """The text a `valuesFrom` entry points at, and whether it is a secret."""

    text: str
    source: str
    """The repository file it was read from."""
    secret: bool = False
    keyless: bool = False
    """An encrypted Secret no key opened: the value is unknown (a placeholder stands in)."""


class ValuesMissing(Exception):
    """The referenced object (`key=False`) or its key (`key=True`) does not exist."""

    def __init__(self, *, key: bool) -> None:
        super().__init__("key not found" if key else "resource not found")
        self.key = key


Lookup = Callable[[ValuesReference], Supplied]
"""Finds what a reference names; raises `ValuesMissing` when it does not exist."""


# helm-controller's MergeMaps is the hierarchy's merge: maps merge recursively into new maps;
# anything else from `higher` replaces, shared, not copied (the sharing decides targetPath
# precedence).
merge_maps = values_mod.merge


def compose(release: HelmRelease, lookup: Lookup, *, redact: bool = False) -> Values:
    """The values helm-controller passes to Helm for `release` (chart defaults excluded).

    `redact=True` makes every secret-derived leaf its redacted form (the twin plan).
    Raises `ConfigError` naming the release's file and the `valuesFrom` entry.
    """
    inline: Values = copy.deepcopy(dict(release.values))
    result: Values = {}
    for index, reference in enumerate(release.values_from):
        at = Field(release.file, ("spec", "valuesFrom", index))
        try:
            supplied = lookup(reference)
        except ValuesMissing as missing:
            if reference.optional:
                continue
            raise _error(release, reference, at, str(missing)) from None
        if reference.target_path:
            result = merge_maps(result, inline)
            _write_path(result, reference, supplied, redact, release, at)
            continue
        result = merge_maps(result, _document(supplied, redact, release, reference, at))
    return merge_maps(result, inline)


def _write_path(
    result: Values,
    reference: ValuesReference,
    supplied: Supplied,
    redact: bool,
    release: HelmRelease,
    at: Field,
) -> None:
    text = STRING_PLACEHOLDER if supplied.keyless else supplied.text
    literal = reference.literal
    if supplied.secret and redact and not supplied.keyless:
        text, literal = _redacted_text(text, literal)
    try:
        if literal:
            strvals.replace_path_literal(result, reference.target_path, text)
        else:
            strvals.replace_path_value(result, reference.target_path, text)
    except strvals.SetError as error:
        raise _error(release, reference, at, f"failed to merge value: {error}") from None


def _redacted_text(text: str, literal: bool) -> tuple[str, bool]:
    """A secret's stand-in for the twin: booleans and nulls stay, the rest is redacted text."""
    if not literal and not isinstance(strvals.typed(text.strip("'\"")), str | int):
        return text, literal
    return redact_scalar(text), True


def _document(
    supplied: Supplied, redact: bool, release: HelmRelease, reference: ValuesReference, at: Field
) -> Values:
    if supplied.keyless:
        return {}  # the document's shape is unknown without a key
    try:
        documents = yamlio.load_documents(supplied.text, source=supplied.source, cache=False)
    except ConfigError:
        raise _error(release, reference, at, "failed to read values data (not YAML)") from None
    if len(documents) > 1:
        raise _error(release, reference, at, "failed to read values data (several documents)")
    values: Values = documents[0] if documents else {}
    return redact_tree(values) if supplied.secret and redact else values


def _error(release: HelmRelease, reference: ValuesReference, at: Field, reason: str) -> ConfigError:
    optional = " optional" if reference.optional else ""
    return at.error(
        f"could not resolve{optional} {reference.kind} chart values reference "
        f"'{release.namespace}/{reference.name}' with key '{reference.values_key}': {reason}"
    )
