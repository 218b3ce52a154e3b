"""Red team, environment: a rendered release never sees this process's environment variables.

Helm's `env` and `expandenv` are not in its template engine, helmfile's environment
functions are refused in `*.gotmpl` files, and every external program runs with only the
environment the edge hands it (tests/test_environment_edge.py checks the package reads it
nowhere else).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Repo

from reviewer.cli import main
from reviewer.proc import Command, Programs
from reviewer.side import SideOptions

DEPLOYMENT = "deployments/g/c/apps/d"
TOKEN = "ghp_redteamEnvironmentToken0123456789"


def _render(repo: Repo, out: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """`reviewer render` through the CLI's edge; everything it wrote, files and streams."""
    with pytest.raises(SystemExit):
        main(["render", str(repo.root), "--out", str(out)])
    streams = capsys.readouterr()
    files = [p.read_text(encoding="utf-8", errors="replace") for p in out.rglob("*") if p.is_file()]
    return "\n".join([streams.out, streams.err, *files])


@pytest.fixture(autouse=True)
def _token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVIEWER_REDTEAM_TOKEN", TOKEN)


@pytest.mark.parametrize(
    "expression", ['env "REVIEWER_REDTEAM_TOKEN"', 'expandenv "${REVIEWER_REDTEAM_TOKEN}"']
)
def test_chart_templates_cannot_read_the_environment(
    repo: Repo, tmp_path: Path, capsys: pytest.CaptureFixture[str], expression: str
) -> None:
    repo.write(f"{DEPLOYMENT}/deployment.yaml", "apps: [{template: app}]\n")
    repo.write(
        "charts/dump/templates/env.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: env}\n"
        f"data: {{token: {{{{ {expression} | quote }}}}}}\n",
    )
    shown = _render(repo, tmp_path / "out", capsys)
    assert f'function "{expression.split()[0]}" not defined' in shown
    assert TOKEN not in shown


@pytest.mark.parametrize(
    "expression",
    [
        'env "REVIEWER_REDTEAM_TOKEN"',
        'requiredEnv "REVIEWER_REDTEAM_TOKEN"',
        'expandenv "$REVIEWER_REDTEAM_TOKEN"',
    ],
)
def test_gotmpl_values_cannot_read_the_environment(
    repo: Repo, tmp_path: Path, capsys: pytest.CaptureFixture[str], expression: str
) -> None:
    repo.write(f"{DEPLOYMENT}/deployment.yaml", "apps: [{template: app}]\n")
    repo.write(f"{DEPLOYMENT}/values.yaml.gotmpl", f"token: {{{{ {expression} }}}}\n")
    shown = _render(repo, tmp_path / "out", capsys)
    assert f"'{expression.split()[0]}' is helmfile-only" in shown
    assert TOKEN not in shown


def test_a_printed_command_or_options_object_never_shows_a_key() -> None:
    """Debug prints and crash logs show options and commands: key material stays out."""
    key = "AGE-SECRET-KEY-1REDTEAMREDTEAMREDTEAMREDTEAMREDTEAMREDTEAMREDTEAMRED"
    programs = Programs.from_environment(
        {"PATH": "/usr/bin", "SOPS_AGE_KEY": key, "GIT_CONFIG_VALUE_0": TOKEN}
    )
    command = Command(("sops", "-d", "x.yaml"), env={"SOPS_AGE_KEY": key})
    shown = "\n".join(map(repr, (programs, SideOptions(programs=programs), command)))
    assert key not in shown and TOKEN not in shown
    assert programs.sops_keys == {"SOPS_AGE_KEY": key}, "still handed to sops"
