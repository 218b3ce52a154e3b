"""README's module map names every module and package of `reviewer/`, so it stays true."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "reviewer"


def mapped_names(readme: str) -> list[str]:
    """The module names in the second column of README's module map table."""
    section = readme.split("### Module map", 1)[1].split("\n### ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    names: list[str] = []
    for row in rows[2:]:  # after the header and its rule
        cells = row.split("|")
        names += re.findall(r"`([^`]+)`", cells[2])
    return names


def package_modules() -> set[str]:
    """Top-level modules as `name`, subpackages as `name/` (their modules are the package's)."""
    modules = {path.stem for path in PACKAGE.glob("*.py") if path.stem != "__init__"}
    packages = {f"{path.parent.name}/" for path in PACKAGE.glob("*/__init__.py")}
    return modules | packages


def test_every_module_is_in_the_readme_map() -> None:
    names = mapped_names((ROOT / "README.md").read_text(encoding="utf-8"))
    missing = sorted(package_modules() - set(names))
    assert not missing, f"add these to README's module map (Development section): {missing}"


def test_each_module_is_mapped_once() -> None:
    names = mapped_names((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(names) == len(set(names))


def test_the_map_check_sees_a_missing_module() -> None:
    readme = "### Module map\n\n| stage | module | owns |\n|---|---|---|\n| x | `errors` | e |\n"
    assert "decode" in package_modules() - set(mapped_names(readme))
