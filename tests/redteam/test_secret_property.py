"""Red team property: random chains of Sprig/Helm string functions over SOPS values.

Each example writes one chart template holding several chains at once (one
engine call renders them all), renders the release with the real secrets and
its redacted twin, and asserts that no real chain result, no plaintext and no
simple transform of it (upper, lower, base64, reversed, hex) is in the output.

Examples: `REVIEWER_REDTEAM_EXAMPLES` (default 300); the longer run in
docs/redaction.md uses 5000.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from agekeys import encrypt, isolate_sops_key, sops_decoder
from conftest import Repo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redteam_support import CHART_YAML

from reviewer.gotmpl import TemplateRenderer
from reviewer.redact import Redactor
from reviewer.render import RenderCache
from reviewer.side import SideOptions, render_side
from reviewer.side_redact import redact_snapshot
from reviewer.sops import SopsDecoder
from reviewer.tooling import Tooling, Tools, open_tooling

EXAMPLES = int(os.environ.get("REVIEWER_REDTEAM_EXAMPLES", "300"))

SECRETS = {
    "alpha": "Hunter2-Sup3r-Zeta9x",
    "beta": "pa$$w0rd<&>/x-Long",
    "gamma": "correct horse battery staple",
    "delta": "MixedCase_with.dots-1",
}

# One step rewrites the chain's variable `$v` (written `V` here).
STEPS = [
    "V = upper V",
    "V = lower V",
    "V = title V",
    "V = b64enc V",
    "V = b32enc V",
    'V = printf "x%sy" V',
    'V = printf "%x" V',
    "V = substr 0 11 V",
    "V = trunc 9 V",
    "V = trunc -7 V",
    'V = replace "e" "3" V',
    'V = splitList "" V | join "-"',
    "V = nospace V",
    "V = repeat 2 V",
    "V = sha256sum V",
    "V = quote V",
    "V = cat V V",
    "V = snakecase V",
    "V = swapcase V",
    # Reversed, one character at a time.
    'R := list }}{{ range splitList "" V }}{{ R = prepend R . }}{{ end }}{{ V = join "" R',
    # The halves swapped.
    'H := div (len V) 2 }}{{ V = printf "%s%s" (substr H -1 V) (substr 0 H V)',
    # A value picked by a comparison.
    'V = ternary "branch-a" V (hasPrefix "H" V)',
]


@dataclass(frozen=True)
class Chain:
    """A SOPS value and the steps applied to it."""

    secret: str
    steps: tuple[str, ...]

    def template(self, index: int) -> str:
        names = {"V": f"$v{index}", "R": f"$r{index}", "H": f"$h{index}"}
        lines = [f"{{{{- $v{index} := .Values.secrets.{self.secret} | toString }}}}"]
        for step in self.steps:
            for short, name in names.items():
                step = step.replace(f"{short} ", f"{name} ").replace(f" {short}", f" {name}")
            lines.append(f"{{{{- {step} }}}}")
        return "".join(lines) + f"\n  c{index}: {{{{ $v{index} | quote }}}}\n"


chains = st.builds(
    Chain,
    secret=st.sampled_from(sorted(SECRETS)),
    steps=st.lists(st.sampled_from(STEPS), min_size=1, max_size=5).map(tuple),
)


def simple_forms(text: str) -> set[str]:
    """The plaintext and transforms anyone could compute from it."""
    raw = text.encode()
    forms = {text, text.upper(), text.lower(), text[::-1], text.title(), text.swapcase()}
    forms |= {base64.b64encode(raw).decode(), base64.b32encode(raw).decode(), raw.hex()}
    return forms


@dataclass(frozen=True)
class Bench:
    """A repository with one SOPS file, and the tools and decoder shared by all examples."""

    root: Path
    tools: Tools
    decoder: SopsDecoder


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bench]:
    with pytest.MonkeyPatch.context() as monkeypatch, ExitStack() as stack:
        work = tmp_path_factory.mktemp("property")
        identity = isolate_sops_key(monkeypatch, work)
        repo = Repo(work / "repo")
        repo.write("charts/app/Chart.yaml", CHART_YAML)
        repo.write("charts/app/values.yaml", "secrets: {}\n")
        repo.write("charts/app/templates/.keep", "")
        repo.write(
            "templates/svc/helmfile.yaml", "releases: [{name: svc, chart: ../../charts/app}]\n"
        )
        repo.write("deployments/c/apps/d/deployment.yaml", "apps: [{template: svc}]\n")
        encrypt(
            repo.root / "deployments/c/apps/d",
            {"secrets": SECRETS},
            identity,
            name="values.sops.yaml",
        )
        tools = stack.enter_context(open_tooling(Tooling()))
        yield Bench(repo.root, tools, sops_decoder())


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(batch=st.lists(chains, min_size=1, max_size=8))
def test_no_chain_of_string_functions_publishes_a_secret(bench: Bench, batch: list[Chain]) -> None:
    header = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: chains\ndata:\n"
    body = header + "".join(chain.template(index) for index, chain in enumerate(batch))
    (bench.root / "charts/app/templates/chains.yaml").write_text(body, encoding="utf-8")

    side = render_side(
        bench.root,
        options=SideOptions(),
        tools=replace(bench.tools, cache=RenderCache()),  # the chart changes in place
        renderer=TemplateRenderer(),
        secrets=bench.decoder,
    )
    redactor = Redactor(side.replacements, leaves=side.leaves)
    published = redact_snapshot(side.shown, redactor)
    text = "\n".join(
        [resource.text() for release in published.releases for resource in release.resources]
        + [release.error or "" for release in published.releases]
        + [*published.errors, *published.warnings]
    )

    (real,) = side.snapshot.releases
    assert real.error is None, "the chains are valid templates"
    results = {
        str(value)
        for resource in real.resources
        if resource.key.name == "chains"
        for value in resource.body.get("data", {}).values()
    }
    forbidden = {form for secret in SECRETS.values() for form in simple_forms(secret)}
    twin_results = {
        str(value)
        for r in published.releases
        for x in r.resources
        for value in x.body.get("data", {}).values()
    }
    forbidden |= {result for result in results if len(result) >= 8} - twin_results
    for form in forbidden:
        assert form not in text
    redactor.guard().check(text, "snapshot")
