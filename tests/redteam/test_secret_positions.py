"""Red team: a SOPS value as a map key, label key, object or release name, namespace, or branch.

Every one of these positions is published in its redacted twin form; where a
template branches on a secret, the objects that differ are masked with a note.
"""

from __future__ import annotations

import base64

import pytest
from agekeys import isolate_sops_key
from redteam_support import Outputs, fleet, review

from reviewer.errors import ExitStatus
from reviewer.redact import redact_scalar

SECRET = "Hunter2-Sup3r-Zeta9x"
FORMS = (
    SECRET,
    SECRET.lower(),
    SECRET.upper(),
    base64.b64encode(SECRET.encode()).decode(),
    base64.b64encode(base64.b64encode(SECRET.encode())).decode(),
)

KEYS = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Values.db.password | lower }}
  labels:
    {{ .Values.db.password | lower }}: "yes"
data:
  {{ .Values.db.password }}: x
  {{ .Values.db.password | upper }}-2: y
"""

BRANCH = """\
{{- if hasPrefix "REDACT" .Values.db.password }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: decoy
data:
  shown: nothing-to-see
{{- else }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: leak-{{ .Values.db.password | lower }}
data:
  p: {{ .Values.db.password | upper }}
  q: {{ .Values.db.password | b64enc | b64enc }}
{{- end }}
"""

NAMED_RELEASE = """\
releases:
  - name: {{ .Values.db.password | lower }}
    namespace: ns-{{ .Values.db.password | lower }}
    chart: ../../charts/app
"""


def _review(factory: pytest.TempPathFactory, name: str, attack: dict[str, str]) -> Outputs:
    with pytest.MonkeyPatch.context() as monkeypatch:
        work = factory.mktemp(name)
        identity = isolate_sops_key(monkeypatch, work)
        secrets = {"db": {"user": "app-user-7", "password": SECRET}}
        return review(fleet(work / "repo", identity, secrets, attack), work / "out")


def _assert_no_leak(outputs: Outputs) -> None:
    for form in FORMS:
        assert form not in outputs.text


def test_map_keys_label_keys_and_object_names(tmp_path_factory: pytest.TempPathFactory) -> None:
    outputs = _review(tmp_path_factory, "keys", {"charts/app/templates/keys.yaml": KEYS})
    assert outputs.codes == (ExitStatus.OK, ExitStatus.OK, ExitStatus.OK)
    _assert_no_leak(outputs)
    twin = redact_scalar(SECRET)
    assert f"name: {twin.lower()}" in outputs.render
    assert f"{twin}: x" in outputs.render


def test_release_name_and_namespace(tmp_path_factory: pytest.TempPathFactory) -> None:
    outputs = _review(
        tmp_path_factory,
        "release",
        {"templates/svc/helmfile.yaml.gotmpl": NAMED_RELEASE},
    )
    assert outputs.codes == (ExitStatus.OK, ExitStatus.OK, ExitStatus.OK)
    _assert_no_leak(outputs)
    assert redact_scalar(SECRET).lower() in outputs.markdown


def test_branch_on_a_secret_masks_the_differing_objects(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    outputs = _review(tmp_path_factory, "branch", {"charts/app/templates/branch.yaml": BRANCH})
    _assert_no_leak(outputs)
    assert "nothing-to-see" not in outputs.text  # the twin's branch is not shown as real
    assert "branches on a secret" in outputs.markdown
    assert "masked" in outputs.render


MORE = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: more\n"

REGENERATED_KEY = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: regen
data:
  {{ .Values.db.password | lower }}: {{ randAlphaNum 12 | quote }}
  plain: {{ randAlphaNum 12 | quote }}
"""


def test_a_regenerated_field_under_a_secret_derived_key_is_not_listed(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        work = tmp_path_factory.mktemp("regen")
        identity = isolate_sops_key(monkeypatch, work)
        secrets = {"db": {"user": "app-user-7", "password": SECRET}}
        repo = fleet(
            work / "repo",
            identity,
            secrets,
            {"charts/app/templates/more.yaml": MORE},
            extra={"charts/app/templates/regen.yaml": REGENERATED_KEY},
        )
        outputs = review(repo, work / "out")
    _assert_no_leak(outputs)
    assert "plain" in outputs.json.split('"regenerated"', 1)[1]


TWIN_ONLY_FAILURE = """\
{{- if contains "REDAC" .Values.db.password }}
{{- fail "the redacted plan fails, the real one does not" }}
{{- end }}
releases: [{name: svc, chart: ../../charts/app}]
"""

UPPER = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: upper
data:
  p: {{ .Values.db.password | upper | quote }}
"""


def test_a_plan_that_fails_only_with_redacted_values_shows_nothing_of_the_real_render(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    outputs = _review(
        tmp_path_factory,
        "twin-fails",
        {
            "templates/svc/helmfile.yaml.gotmpl": TWIN_ONLY_FAILURE,
            "charts/app/templates/upper.yaml": UPPER,
        },
    )
    _assert_no_leak(outputs)
    # Fails closed: the release is a failure, told from the redacted plan, not the real render.
    assert outputs.codes == (ExitStatus.RENDER_FAILED,) * 3
    assert "name: upper" not in outputs.render
    assert "the redacted plan fails" in outputs.markdown
