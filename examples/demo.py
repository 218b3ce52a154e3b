"""Review the demonstration change on the bundled example fleet.

Builds a throwaway git repository from `examples/fleet` (committed as `main`),
applies `examples/demo-change.patch` to its working tree, and runs
`reviewer diff --base main` on it, with the example's public demo age key
(`fleet/demo-age-key.txt`) unless a SOPS key is already configured. Extra
arguments go to `reviewer diff`, e.g. `python3 examples/demo.py --format markdown`.
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


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *_IDENTITY, *args], check=True, capture_output=True)


def build_demo_repo(target: Path) -> Path:
    """A git repository at `target`: the fleet committed on `main`, the change uncommitted."""
    shutil.copytree(HERE / "fleet", target)
    _git(target, "init", "--quiet", "--initial-branch=main")
    _git(target, "add", ".")
    _git(target, "commit", "--quiet", "-m", "example fleet")
    _git(target, "apply", str(HERE / "demo-change.patch"))
    return target


def main(argv: list[str]) -> int:
    """Build the demo repository in a temp dir and review the change."""
    with tempfile.TemporaryDirectory(prefix="reviewer-demo-") as scratch:
        repo = build_demo_repo(Path(scratch) / "fleet")
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
