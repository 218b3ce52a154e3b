"""Shared pieces of the red-team suite: real git repositories, real sops, the real Helm engine."""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agekeys import AgeIdentity, encrypt
from conftest import GitRepo, git

from reviewer.cli import main

CHART_YAML = "apiVersion: v2\nname: app\nversion: 1.0.0\n"
BASE_TEMPLATE = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-base
data:
  user: {{ .Values.db.user | quote }}
"""


@dataclass(frozen=True)
class Outputs:
    """Everything a review publishes: Markdown and JSON reports and the render snapshot."""

    markdown: str
    json: str
    render: str
    codes: tuple[int, int, int]

    @property
    def text(self) -> str:
        """All outputs, and the JSON once more with its escapes decoded."""
        decoded = json.dumps(json.loads(self.json), ensure_ascii=False) if self.json else ""
        return "\n".join((self.markdown, self.json, decoded, self.render))


def fleet(
    root: Path,
    identity: AgeIdentity,
    secrets: dict[str, Any],
    attack: dict[str, str],
    *,
    template: str = "releases: [{name: svc, chart: ../../charts/app}]\n",
    clusters: tuple[str, ...] = ("prod",),
    extra: dict[str, str] | None = None,
) -> GitRepo:
    """A repository on `main` with one SOPS file per cluster, then `attack` on `feature`."""
    repo = GitRepo(root)
    repo.write("charts/app/Chart.yaml", CHART_YAML)
    repo.write("charts/app/values.yaml", "db: {user: '', password: ''}\n")
    repo.write("charts/app/templates/base.yaml", BASE_TEMPLATE)
    repo.write("templates/svc/helmfile.yaml.gotmpl", template)
    for cluster in clusters:
        repo.write(f"deployments/{cluster}/apps/d/deployment.yaml", "apps: [{template: svc}]\n")
        target = repo.root / f"deployments/{cluster}/apps/d"
        encrypt(target, secrets, identity, name="values.sops.yaml")
    repo.write_all(extra or {})
    repo.commit("fleet")
    git(repo.root, "checkout", "--quiet", "-b", "feature")
    for path, text in attack.items():
        target = repo.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text), encoding="utf-8")
    repo.commit("attack")
    return repo


def _run(args: list[str]) -> int:
    with pytest.raises(SystemExit) as done:
        main(args)
    code = done.value.code
    assert isinstance(code, int)
    return code


def review(repo: GitRepo, work: Path) -> Outputs:
    """`reviewer diff` (Markdown and JSON) and `reviewer render` of the attacked branch."""
    work.mkdir(parents=True, exist_ok=True)
    reports = {}
    codes = []
    for form in ("markdown", "json"):
        out = work / f"report.{form}"
        diff = ["diff", "--repo", str(repo.root), "--base", "main", "--format", form]
        codes.append(_run([*diff, "--output", str(out)]))
        reports[form] = out.read_text(encoding="utf-8") if out.exists() else ""
    snapshot = work / "render"
    codes.append(_run(["render", str(repo.root), "--out", str(snapshot)]))
    files = sorted(p for p in snapshot.rglob("*") if p.is_file()) if snapshot.exists() else []
    rendered = "\n".join(p.read_text(encoding="utf-8") for p in files)
    return Outputs(reports["markdown"], reports["json"], rendered, (codes[0], codes[1], codes[2]))
