"""Nested releases of the twin expansion paired with the real ones (docs/nested.md).

The twin expansion reads every v1 Secret of a parent's output redacted; the real inner
releases are then published in their twin form (reviewer/twins.py), or withheld with a
note when the two expansions disagree.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from reviewer import yamlio
from reviewer.errors import ReviewerError
from reviewer.model import ReleaseId, RenderedRelease
from reviewer.redact import redact_scalar, redact_tree
from reviewer.twins import align, masked_release


def publish(
    reals: dict[ReleaseId, RenderedRelease],
    twins: dict[ReleaseId, RenderedRelease],
    refused: set[ReleaseId],
    notes: list[str],
    parent: ReleaseId,
) -> Iterator[RenderedRelease]:
    """The inner releases of `parent` to publish: each twin aligned with its real release,
    or masked; a note in `notes` for each that is hidden or masked."""
    hidden = len(set(reals) - set(twins))
    if hidden:
        notes.append(
            f"{parent}: {hidden} nested release(s) not shown: the release's output deploys "
            "them only with the real secret values (a template branches on a secret)"
        )
    for rid, twin in twins.items():
        mine = reals.get(rid)
        if mine is None:
            yield masked_release(twin, _UNPAIRED)
        elif rid in refused:
            yield replace(twin, resources=(), error=_REFUSED)
        else:
            aligned = align(mine, twin)
            if aligned.masked:
                notes.append(
                    f"{rid}: {aligned.masked} object(s) masked: they differ in structure with "
                    "the real and the redacted secret values"
                )
            yield aligned.release


_UNPAIRED = (
    "the parent release deploys this nested release only with redacted secret values "
    "(a template branches on a secret); it is not shown"
)
_REFUSED = (
    "the chart reference or repository URL of this nested release depends on a secret "
    "(a SOPS value or a Secret of its parent's output); it is not fetched"
)


def redacted_secret(body: dict[str, Any]) -> dict[str, Any]:
    """A v1 Secret with every data value redacted (each parsed as YAML first, so a
    `values.yaml` key stays a map); any other object as it is."""
    if body.get("apiVersion") != "v1" or body.get("kind") != "Secret":
        return body
    texts: dict[str, str] = {}
    for key in ("data", "stringData"):
        entries = body.get(key)
        if not isinstance(entries, Mapping):
            continue
        for name, value in entries.items():
            text = _base64_text(value) if key == "data" else str(value)
            texts[str(name)] = _redacted_text(text)
    redacted = {k: v for k, v in body.items() if k not in ("data", "stringData")}
    redacted["stringData"] = texts
    return redacted


def _base64_text(value: object) -> str:
    try:
        return base64.b64decode(str(value), validate=True).decode("utf-8")
    except ValueError:
        return str(value)


def _redacted_text(text: str) -> str:
    try:
        parsed = yamlio.load_documents(text, source="secret", cache=False)
    except ReviewerError:
        return redact_scalar(text)
    if len(parsed) == 1:
        return yamlio.dump(redact_tree(parsed[0]))
    return redact_scalar(text)
