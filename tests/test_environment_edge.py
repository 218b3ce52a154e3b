"""The environment is read once, at the edge (`cli.main`); nothing else in the package reads it."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from reviewer import proc
from reviewer.cli import main

PACKAGE = Path(__file__).resolve().parent.parent / "reviewer"
EDGE = PACKAGE / "cli.py"
_READERS = {"environ", "environb", "getenv", "getenvb"}


def _environment_reads(tree: ast.AST) -> list[ast.AST]:
    """`os.environ`, `os.getenv(...)` and `from os import environ` (any spelling of os)."""
    found: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in _READERS:
            found.append(node)
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [node for alias in node.names if alias.name in _READERS]
    return found


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(PACKAGE.parent)}:{getattr(node, 'lineno', '?')}"


def test_no_module_but_the_edge_reads_the_environment() -> None:
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 50  # the walk really covers the package
    reads = [
        _where(path, node)
        for path in modules
        if path != EDGE
        for node in _environment_reads(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert reads == []


def test_the_edge_reads_it_in_main_only() -> None:
    tree = ast.parse(EDGE.read_text(encoding="utf-8"))
    (main,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main"]
    inside = {id(node) for node in _environment_reads(main)}
    assert len(inside) == 1
    assert [_where(EDGE, n) for n in _environment_reads(tree) if id(n) not in inside] == []


def test_the_check_finds_every_spelling() -> None:
    text = "import os\nfrom os import getenv\na = os.environ['X']\nb = os.getenv('Y')\n"
    assert len(_environment_reads(ast.parse(text))) == 3


def test_a_child_sees_only_the_environment_it_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVIEWER_TEST_TOKEN", "ghp_edge-secret-value")
    done = proc.run(proc.Command(("/usr/bin/env",), env={"ONLY": "this"}))
    assert done.stdout.decode().splitlines() == ["ONLY=this"]


def test_programs_keep_what_each_program_needs() -> None:
    environ = {
        "PATH": "/opt/bin:/usr/bin",
        "HOME": "/home/dev",
        "SOPS_AGE_KEY_FILE": "/keys.txt",
        "AWS_PROFILE": "kms",
        "VAULT_ADDR": "https://vault.internal",
        "GIT_CONFIG_GLOBAL": "/etc/gitconfig-ci",
        "GIT_DIR": "/elsewhere/.git",
        "REVIEWER_KUBECTL": "/opt/kubectl",
        "GITHUB_TOKEN": "ghp_never-to-a-child",
        "HELM_PLUGINS": "/home/dev/plugins",
    }
    programs = proc.Programs.from_environment(environ)
    assert programs.sops() == {
        "PATH": "/opt/bin:/usr/bin",
        "HOME": "/home/dev",
        "SOPS_AGE_KEY_FILE": "/keys.txt",
        "AWS_PROFILE": "kms",
        "VAULT_ADDR": "https://vault.internal",
    }
    assert programs.git() == {
        "PATH": "/opt/bin:/usr/bin",
        "HOME": "/home/dev",
        "GIT_CONFIG_GLOBAL": "/etc/gitconfig-ci",
    }
    assert programs.lookup() == {"PATH": "/opt/bin:/usr/bin", "REVIEWER_KUBECTL": "/opt/kubectl"}
    assert programs.plain() == {"PATH": "/opt/bin:/usr/bin"}
    assert proc.Programs().git() == {"PATH": os.defpath}


def test_the_edge_hands_reviewer_kubectl_to_kustomize_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = tmp_path / "calls.txt"
    fake = tmp_path / "my-kubectl"
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: built-by-fake}\n"
    fake.write_text(f"#!/bin/sh\necho \"$@\" >> {calls}\nprintf '{manifest}'\n", encoding="utf-8")
    fake.chmod(0o755)
    repo = tmp_path / "repo"
    (repo / "apps/web").mkdir(parents=True)
    (repo / "apps/web/kustomization.yaml").write_text("resources: [cm.yaml]\n")
    (repo / "apps/web/cm.yaml").write_text(manifest)
    (repo / ".reviewer.yaml").write_text(
        "sources:\n  - {name: shop, kind: manifests, paths: [apps]}\n"
    )
    monkeypatch.setenv("REVIEWER_KUBECTL", str(fake))
    with pytest.raises(SystemExit) as done:
        main(["render", str(repo), "--out", str(tmp_path / "out")])
    assert done.value.code == 0, capsys.readouterr().err
    assert calls.read_text().split()[0] == "kustomize"
    assert "built-by-fake" in "".join(p.read_text() for p in (tmp_path / "out").rglob("*.yaml"))
