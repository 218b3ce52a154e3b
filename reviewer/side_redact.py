"""A rendered side redacted for publishing, and the warning when secrets stayed encrypted."""

from __future__ import annotations

from dataclasses import replace

from reviewer.model import RenderedRelease, Resource, Snapshot
from reviewer.redact import Redactor

KEYLESS_FIX = (
    "to decrypt, give sops a key: SOPS_AGE_KEY_FILE=path/to/keys.txt or SOPS_AGE_KEY "
    "(or the KMS/PGP credentials the files name)"
)
_NAMED_FILES = 5


def keyless_warning(sources: list[str]) -> str | None:
    """The report line saying secrets were not decrypted, naming the files and the fix."""
    if not sources:
        return None
    named = ", ".join(sources[:_NAMED_FILES])
    if len(sources) > _NAMED_FILES:
        named += f" and {len(sources) - _NAMED_FILES} more"
    return (
        f"secrets were not decrypted (no usable SOPS key) in {len(sources)} file(s) ({named}): "
        f"secret values render as placeholders and their changes are not visible; {KEYLESS_FIX}"
    )


def redact_snapshot(
    snapshot: Snapshot, redactor: Redactor, *, done: dict[int, RenderedRelease] | None = None
) -> Snapshot:
    """A copy of `snapshot` with every object and error message redacted.

    `done`: releases redacted before, by `id()` of the original (the caller keeps the
    originals alive); a release found there is not redacted again.
    """
    done = {} if done is None else done
    texts: dict[str, str] = {}  # labels repeat across a fleet's releases
    releases = []
    for release in snapshot.releases:
        redacted = done.get(id(release))
        if redacted is None:
            redacted = done[id(release)] = _redact_release(release, redactor, texts)
        releases.append(redacted)
    return Snapshot(
        releases=tuple(releases),
        errors=tuple(redactor.redact_text(error) for error in snapshot.errors),
        warnings=snapshot.warnings,
    )


def _redact_release(
    release: RenderedRelease, redactor: Redactor, texts: dict[str, str]
) -> RenderedRelease:
    resources = tuple(_redact_resource(resource, redactor) for resource in release.resources)
    error = redactor.redact_text(release.error) if release.error is not None else None
    labels = {key: _redacted(value, redactor, texts) for key, value in release.labels.items()}
    if not resources and error == release.error and labels == release.labels:
        return release  # nothing to hide (an unrendered release, say): no copy to make
    return replace(release, resources=resources, error=error, labels=labels)


def _redacted(text: str, redactor: Redactor, texts: dict[str, str]) -> str:
    """`redactor.redact_text(text)`, each distinct text once."""
    found = texts.get(text)
    if found is None:
        found = texts[text] = redactor.redact_text(text)
    return found


def _redact_resource(resource: Resource, redactor: Redactor) -> Resource:
    # Without secrets only Secret data needs masking; other objects stay as they are.
    if not redactor.has_secrets and resource.key.kind not in ("Secret", "List"):
        return resource
    return Resource.from_body(redactor.redact_manifest(resource.body), source=resource.source)
