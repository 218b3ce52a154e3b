"""Red team: a secret that is a common word must not block the review (docs/redaction.md).

`username: admin` or `level: cluster` also occur where no secret flowed (a
cluster named `cluster1`, a key `fromSops`). The leak guard blocks only on
distinctive secrets; positions derived from any secret are redacted by the
twin render. A distinctive secret found anywhere still stops the run.
"""

from __future__ import annotations

import pytest
from agekeys import isolate_sops_key
from redteam_support import fleet, review

from reviewer.errors import ExitStatus
from reviewer.redact import is_distinctive

DERIVED = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-words
data:
  fromSops: plain-text
  level: {{ .Values.level | upper | quote }}
  greeting: {{ printf "hello %s" .Values.db.user | quote }}
  token: {{ .Values.db.password | lower | quote }}
"""

SECRETS = {"db": {"user": "admin", "password": "Zq8-Long-Secret"}, "level": "cluster"}


def test_the_rule() -> None:
    assert not any(is_distinctive(word) for word in ("admin", "cluster", "password", "12345678"))
    assert all(is_distinctive(word) for word in ("Zq8-Long-Secret", "hunter22", "a" * 16))


def test_common_word_secrets_do_not_block_and_derived_positions_are_redacted(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    work = tmp_path_factory.mktemp("words")
    identity = isolate_sops_key(monkeypatch, work)
    repo = fleet(
        work / "repo",
        identity,
        SECRETS,
        {"charts/app/templates/words.yaml": DERIVED},
        clusters=("cluster1",),
    )
    outputs = review(repo, work / "out")
    assert outputs.codes == (ExitStatus.OK, ExitStatus.OK, ExitStatus.OK)
    assert "cluster1" in outputs.markdown and "fromSops" in outputs.render
    for derived in ("CLUSTER", "hello admin", "zq8-long-secret"):
        assert derived not in outputs.text
    assert "level: REDACTE" in outputs.render and "greeting: hello REDAC" in outputs.render


def test_a_distinctive_secret_found_where_no_secret_flowed_still_stops_the_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    work = tmp_path_factory.mktemp("distinctive")
    identity = isolate_sops_key(monkeypatch, work)
    # The cluster's own directory name equals a secret: nothing can tell them apart.
    repo = fleet(
        work / "repo",
        identity,
        {**SECRETS, "region": "Prod-Cluster-7"},
        {"charts/app/templates/words.yaml": DERIVED},
        clusters=("Prod-Cluster-7",),
    )
    outputs = review(repo, work / "out")
    assert ExitStatus.OK not in outputs.codes
    assert "Prod-Cluster-7" not in outputs.text
