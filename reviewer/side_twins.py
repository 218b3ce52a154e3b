"""What a side's twin plans read and where they differ (docs/redaction.md).

The real plan reads SOPS files through `RecordingSecrets`, the redacted twin
through `RedactedSecrets`; `twin_keys` tells which deployments need a twin, and
`twin_replacements` pairs the twins' values into the replacement map.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from pathlib import Path

from reviewer.plan import Plan, ReleasePlan
from reviewer.redact import leaf_texts, redact_tree, replacement_map
from reviewer.reuse import Choosing, DeploymentKey, failed_keys, key_of
from reviewer.sops import SopsDecoder
from reviewer.values import SOPS_SUFFIX, SecretsLoader, Values


class RedactedSecrets:
    """The redacted twin of a secrets loader; remembers whether any SOPS file was read."""

    def __init__(self, inner: SecretsLoader) -> None:
        self.inner = inner
        self.used = False

    def load(self, path: Path, *, source: str) -> Values:
        """The file's values with every leaf redacted (keyless placeholders stay readable)."""
        self.used = True
        if isinstance(self.inner, SopsDecoder):
            decoded = self.inner.decode(path, source=source)
            if decoded.keyless:
                return decoded.values
            return _redacted(decoded.values)
        return _redacted(self.inner.load(path, source=source))


def _redacted(values: Values) -> Values:
    redacted: Values = redact_tree(values)
    return redacted


class RecordingSecrets:
    """Passes loads through; records whether any SOPS file was read, and every leaf read."""

    def __init__(self, inner: SecretsLoader) -> None:
        self.inner = inner
        self.used = False
        self.leaves: set[str] = set()
        self.sources: set[str] = set()

    def load(self, path: Path, *, source: str) -> Values:
        """The file's values, unchanged."""
        self.used = True
        self.sources.add(source)
        if not isinstance(self.inner, SopsDecoder):
            values = self.inner.load(path, source=source)
            self.leaves.update(leaf_texts(values))
            return values
        decoded = self.inner.decode(path, source=source)
        if not decoded.keyless:  # placeholders are no secrets
            self.leaves.update(_secret_leaves(decoded.values))
        return decoded.values


def _secret_leaves(values: Values) -> list[str]:
    """The leaves of a decrypted file; of a Kubernetes Secret only its data (decoded), as
    its metadata names it in reports and would trip the leak guard."""
    if values.get("apiVersion") != "v1" or values.get("kind") != "Secret":
        return leaf_texts(values)
    data = values.get("data") if isinstance(values.get("data"), dict) else {}
    texts = [_base64_text(text) for text in leaf_texts(data)]
    return [*texts, *leaf_texts(values.get("stringData") or {})]


def _base64_text(text: str) -> str:
    try:
        return base64.b64decode(text, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return text


def twin_keys(planned: Plan, choosing: Choosing, recording: RecordingSecrets) -> set[DeploymentKey]:
    """Planned deployments whose twin may differ from the real plan: those that read a SOPS
    file, failed, or planned no release (a template may branch on a secret)."""
    if not recording.used:
        return set()
    keys = unsure_keys(planned, choosing.seen)
    keys |= {
        key_of(release.id)
        for release in planned.releases
        if _reads_secrets(release, recording.sources)
    }
    return keys - choosing.skipped


def unsure_keys(planned: Plan, seen: Iterable[DeploymentKey]) -> set[DeploymentKey]:
    """Deployments of `seen` that failed or planned no release: once a side read a SOPS
    file, a template of theirs may have branched on a secret."""
    with_releases = {key_of(release.id) for release in planned.releases}
    return failed_keys(planned.errors) | {key for key in seen if key not in with_releases}


def _reads_secrets(release: ReleasePlan, sources: set[str]) -> bool:
    if not release.inputs.isdisjoint(sources):
        return True
    return any(layer.secret or layer.source.endswith(SOPS_SUFFIX) for layer in release.layers)


def twin_replacements(real: Plan, twin: Plan, reused: frozenset[DeploymentKey]) -> dict[str, str]:
    """{secret: redacted}: the object sets' map, and the values where the twins differ."""
    redacted = {release.id: release for release in twin.releases}
    replacements: dict[str, str] = dict(real.replacements)
    for release in real.releases:
        other = redacted.get(release.id)
        # The base side's map holds the pairs of the deployments taken from it.
        if other is not None and other is not release and key_of(release.id) not in reused:
            replacements.update(replacement_map(release.values, other.values))
    return replacements
