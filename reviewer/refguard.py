"""Chart references computed from secrets are refused before anything is fetched.

An app template sees the decrypted values, so `repositories: [{url: "http://host/{{
.Values.db.password }}"}]` would send a secret to a server of the pull request's choosing.
Each release's chart reference and version from the real plan are compared with the
redacted twin's (planned with every SOPS leaf replaced): where they differ, they depend on
a secret, and the release becomes an error instead of a download.
"""

from __future__ import annotations

from dataclasses import replace

from reviewer.plan import Plan, PlanError, ReleasePlan
from reviewer.twins import pair_plans


def refuse_secret_charts(real: Plan, twin: Plan) -> Plan:
    """`real` without releases whose chart or version depends on a secret (errors instead)."""
    if real is twin:
        return real
    # Paired as the twin renders pair them: a release named from a secret has another id.
    pairs, _ = pair_plans(real, twin)
    twins = {id(release): other for release, other in pairs}
    kept: list[ReleasePlan] = []
    errors = list(real.errors)
    for release in real.releases:
        other = twins.get(id(release))
        if other is None or _reference(other) != _reference(release):
            errors.append(_refused(release, other))
        else:
            kept.append(release)
    return replace(real, releases=tuple(kept), errors=tuple(errors))


def _reference(release: ReleasePlan) -> tuple[object, ...]:
    chart = release.chart
    return (chart.ref, chart.local, chart.repository, release.version)


def _refused(release: ReleasePlan, twin: ReleasePlan | None) -> PlanError:
    # The twin's (redacted) reference is safe to show; the real one is not.
    shown = twin.chart.ref if twin is not None else "(unknown)"
    return PlanError(
        cluster=release.id.cluster,
        deployment=release.id.deployment,
        release=release.id.release,
        message=(
            f"{release.template_file}: release '{release.id.release}': the chart reference "
            f"or repository URL ({shown}) depends on a SOPS secret; chart references are "
            "fetched before any redaction and must not use secret values"
        ),
        reproduce=release.reproduce,
    )
