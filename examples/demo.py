"""Review the demonstration change on a bundled example repository.

Builds a throwaway git repository from `examples/fleet` (committed as `main`),
applies `examples/demo-change.patch` to its working tree, and runs
`reviewer diff --base main` on it, with the example's public demo age key
(`fleet/demo-age-key.txt`) unless a SOPS key is already configured. Extra
arguments go to `reviewer diff`, e.g. `python3 examples/demo.py --format markdown`.

A first argument naming another example picks it instead: `manifests` (plain
YAML, kustomize overlays and a BOSH manifest, with `manifests-change.patch`),
e.g. `python3 examples/demo.py manifests --format markdown`; `generated` (a
converter run in a bubblewrap sandbox, with `generated-change.patch`); `flux` (Flux
Kustomizations building a HelmRelease of a chart in the repository, with
substitution and a SOPS Secret, with `flux-change.patch`); `kraan` (Kraan layers,
with `kraan-change.patch`, which moves a release from one layer to another).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
_IDENTITY = ["-c", "user.name=demo", "-c", "user.email=demo@example.invalid"]
EXAMPLES = {
    "fleet": "demo-change.patch",
    "manifests": "manifests-change.patch",
    "generated": "generated-change.patch",
    "flux": "flux-change.patch",
    "kraan": "kraan-change.patch",
}
"""Example repositories (directories here) and the change each demo applies."""


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *_IDENTITY, *args], check=True, capture_output=True)


def build_demo_repo(target: Path, example: str = "fleet") -> Path:
    """A git repository at `target`: the example committed on `main`, its change uncommitted."""
    shutil.copytree(HERE / example, target)
    _git(target, "init", "--quiet", "--initial-branch=main")
    _git(target, "add", ".")
    _git(target, "commit", "--quiet", "-m", f"example {example}")
    _git(target, "apply", str(HERE / EXAMPLES[example]))
    return target


def main(argv: list[str]) -> int:
    """Build the demo repository in a temp dir and review the change."""
    example = argv[0] if argv and argv[0] in EXAMPLES else "fleet"
    argv = argv[1:] if argv and argv[0] == example else argv
    with tempfile.TemporaryDirectory(prefix="reviewer-demo-") as scratch:
        repo = build_demo_repo(Path(scratch) / example, example)
        command = [sys.executable, "-m", "reviewer", "diff", "--repo", str(repo), "--base", "main"]
        return subprocess.run([*command, *argv], check=False, env=_demo_env()).returncode


def _demo_env() -> dict[str, str]:
    """The environment, plus the example's public demo key unless a SOPS key is configured."""
    env = dict(os.environ)
    if not any(name.startswith("SOPS_AGE_KEY") for name in env):
        env["SOPS_AGE_KEY_FILE"] = str(HERE / "fleet" / "demo-age-key.txt")
    return env


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
