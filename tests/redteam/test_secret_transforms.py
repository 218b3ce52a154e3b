"""Red team: a chart template transforms a SOPS value before emitting it.

Whatever the transform, neither the plaintext nor the transformed plaintext
may appear in the Markdown or JSON report or in `reviewer render` output.
"""

from __future__ import annotations

import base64
from collections.abc import Callable

import pytest
from agekeys import isolate_sops_key
from redteam_support import Outputs, fleet, review

from reviewer.errors import ExitStatus
from reviewer.redact import redact_scalar

SECRET = "Hunter2-Sup3r-Zeta9x"
HALF = len(SECRET) // 2


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# (field, template expression over $s, what the plaintext becomes)
TRANSFORMS: list[tuple[str, str, Callable[[str], str]]] = [
    ("upper", "$s | upper", str.upper),
    ("lower", "$s | lower", str.lower),
    ("b64twice", "$s | b64enc | b64enc", lambda s: _b64(_b64(s))),
    ("prefixed", '$s | printf "x%s" | b64enc', lambda s: _b64("x" + s)),
    ("b32", "$s | b32enc", lambda s: base64.b32encode(s.encode()).decode()),
    ("hex", 'printf "%x" $s', lambda s: s.encode().hex()),
    ("substr", "substr 0 14 $s", lambda s: s[:14]),
    ("trunc", "trunc 15 $s", lambda s: s[:15]),
    ("replace", 'replace "-" "_" $s', lambda s: s.replace("-", "_")),
    ("spread", 'splitList "" $s | join "-"', "-".join),
    (
        "reversed",
        '$r := list }}{{ range splitList "" $s }}{{ $r = prepend $r . }}{{ end }}{{ join "" $r',
        lambda s: s[::-1],
    ),
    (
        "halves",
        f'printf "%s%s" (substr {HALF} -1 $s) (substr 0 {HALF} $s)',
        lambda s: s[HALF:] + s[:HALF],
    ),
    ("firsthalf", f"substr 0 {HALF} $s | upper", lambda s: s[:HALF].upper()),
]

ATTACK = "\n".join(
    [
        "apiVersion: v1",
        "kind: ConfigMap",
        "metadata:",
        "  name: {{ .Release.Name }}-attack",
        "data:",
        *(
            f"  {name}: {{{{ $s := .Values.db.password }}}}{{{{ {expr} | quote }}}}"
            for name, expr, _ in TRANSFORMS
        ),
        "",
    ]
)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> Outputs:
    with pytest.MonkeyPatch.context() as monkeypatch:
        work = tmp_path_factory.mktemp("transforms")
        identity = isolate_sops_key(monkeypatch, work)
        repo = fleet(
            work / "repo",
            identity,
            {"db": {"user": "app-user-7", "password": SECRET}},
            {"charts/app/templates/attack.yaml": ATTACK},
        )
        return review(repo, work / "out")


def test_the_review_runs(outputs: Outputs) -> None:
    assert outputs.codes == (ExitStatus.OK, ExitStatus.OK, ExitStatus.OK)
    assert "attack" in outputs.markdown and "attack" in outputs.render


def test_plaintext_never_appears(outputs: Outputs) -> None:
    for form in (SECRET, SECRET.upper(), SECRET.lower(), _b64(SECRET), SECRET[::-1]):
        assert form not in outputs.text


@pytest.mark.parametrize(("name", "transform"), [(n, t) for n, _, t in TRANSFORMS])
def test_transformed_plaintext_never_appears(
    outputs: Outputs, name: str, transform: Callable[[str], str]
) -> None:
    assert transform(SECRET) not in outputs.text, name


def test_transformed_positions_show_the_twin_form(outputs: Outputs) -> None:
    twin = redact_scalar(SECRET)
    # Each position shows what the template makes of the redacted value.
    assert f"upper: {twin.upper()}" in outputs.render
    assert f"hex: {twin.encode().hex()}" in outputs.render
