"""The bundled example fleet renders completely and shows the layering it documents."""

from __future__ import annotations

from pathlib import Path

import pytest
from agekeys import sops_decoder
from conftest import Repo, release

from reviewer.model import Snapshot
from reviewer.sops import KeylessMode

EXAMPLE = Path(__file__).parent.parent / "examples" / "fleet"


@pytest.fixture
def snapshot(monkeypatch: pytest.MonkeyPatch) -> Snapshot:
    """The example rendered with its public demo key (secrets decrypted, not redacted)."""
    monkeypatch.setenv("SOPS_AGE_KEY_FILE", str(EXAMPLE / "demo-age-key.txt"))
    return Repo(EXAMPLE).render(secrets=sops_decoder(keyless=KeylessMode.NEVER))


def test_example_fleet_renders_every_release(snapshot: Snapshot) -> None:
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


def test_example_layering_is_visible_in_rendered_objects(snapshot: Snapshot) -> None:

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
    # The production group's SOPS file reaches the charts (decrypted, before redaction).
    secret = next(r for r in payments.resources if r.key.kind == "Secret")
    assert set(secret.body["data"]) == {"DATABASE_PASSWORD", "DATABASE_URL", "STRIPE_API_KEY"}
