"""Aligning a release rendered from real secrets with its redacted twin (reviewer/twins.py)."""

from __future__ import annotations

from typing import Any

from reviewer.model import ReleaseId, RenderedRelease, Resource
from reviewer.twins import MASKED, WITHHELD, align

REAL, TWIN = ReleaseId("c", "d", "hunter22"), ReleaseId("c", "d", "REDACTED")


def release(id: ReleaseId, *bodies: dict[str, Any], error: str | None = None) -> RenderedRelease:
    resources = tuple(Resource.from_body(body, source="app/templates/a.yaml") for body in bodies)
    return RenderedRelease(id=id, namespace="ns", resources=resources, error=error)


def config_map(name: str, **data: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def test_differing_positions_keys_and_names_take_the_twin_form() -> None:
    real = release(REAL, config_map("hunter22", same="x", derived="HUNTER22", hunter22="k"))
    twin = release(TWIN, config_map("redacted", same="x", derived="REDACTED", REDACTED="k"))
    aligned = align(real, twin)
    assert aligned.masked == 0 and aligned.release.id == TWIN
    (resource,) = aligned.release.resources
    assert resource.body["metadata"]["name"] == "redacted"
    assert resource.body["data"] == {"same": "x", "derived": "REDACTED", "REDACTED": "k"}


def test_secret_data_keeps_real_values_for_the_markers_only_at_the_top() -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
    nested = config_map("n", inner={**secret, "data": {"p": "hunter22"}})
    real = release(REAL, {**secret, "data": {"p": "hunter22"}}, nested)
    twin = release(
        TWIN,
        {**secret, "data": {"p": "REDACTED"}},
        config_map("n", inner={**secret, "data": {"p": "REDACTED"}}),
    )
    bodies = {r.key.name: r.body for r in align(real, twin).release.resources}
    assert bodies["s"]["data"] == {"p": "hunter22"}  # the redactor turns it into a marker
    assert bodies["n"]["data"]["inner"]["data"] == {"p": "REDACTED"}


def test_a_different_structure_is_masked() -> None:
    real = release(REAL, config_map("a", p="hunter22", q="x"))
    twin = release(TWIN, config_map("decoy", shown="nothing"))
    aligned = align(real, twin)
    assert aligned.masked == 1
    (resource,) = aligned.release.resources
    assert resource.body["reviewer"] == MASKED and "data" not in resource.body


def test_errors_come_from_the_twin_or_are_withheld() -> None:
    assert (
        align(
            release(REAL, error="bad hunter22"), release(TWIN, error="bad REDACTED")
        ).release.error
        == "bad REDACTED"
    )
    assert (
        align(release(REAL, error="HUNTER22"), release(TWIN, config_map("a"))).release.error
        == WITHHELD
    )
    failed = align(release(REAL, config_map("a")), release(TWIN, error="bad REDACTED"))
    assert failed.release.error is not None and failed.release.error.startswith("bad REDACTED")
    assert failed.release.resources == ()
