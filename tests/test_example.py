"""The bundled example fleet renders completely and shows the layering it documents."""

from __future__ import annotations

from pathlib import Path

from conftest import Repo, release

EXAMPLE = Path(__file__).parent.parent / "examples" / "fleet"


def test_example_fleet_renders_every_release() -> None:
    snapshot = Repo(EXAMPLE).render()
    assert snapshot.failed == []
    clusters = {r.id.cluster for r in snapshot.releases}
    assert clusters == {
        "production/eu-west",
        "production/us-east",
        "staging/stg-1",
        "staging/stg-2",
        "sandbox",
    }
    assert len(snapshot.releases) == 29
    kinds = {r.key.kind for rel in snapshot.releases for r in rel.resources}
    assert {"Deployment", "Service", "Ingress", "ConfigMap", "Secret", "StatefulSet"} <= kinds


def test_example_layering_is_visible_in_rendered_objects() -> None:
    snapshot = Repo(EXAMPLE).render()

    def replicas(cluster: str) -> int:
        storefront = release(snapshot, cluster, "shop", "storefront-web")
        deployment = next(r for r in storefront.resources if r.key.kind == "Deployment")
        return int(deployment.body["spec"]["replicas"])

    # instance asks for 2; production group sets 3; eu-west's cluster values set 4
    assert replicas("production/eu-west") == 4
    assert replicas("production/us-east") == 3
    assert replicas("staging/stg-2") == 2
    payments = release(snapshot, "production/eu-west", "payments", "web-payments")
    assert payments.namespace == "payments-pci"
    assert release(snapshot, "sandbox", "playground", "redis").chart == "redis-lite"
