"""Set up reviewer in `.venv` and run the demo or the test suite (stdlib only).

    python3 bootstrap.py demo [ARGS...]   install reviewer, run examples/demo.py ARGS
    python3 bootstrap.py test [ARGS...]   install reviewer[test], run python -m pytest ARGS

Works where `pip install` outside a virtual environment is refused (PEP 668) and
where the system Python lacks `ensurepip` (Debian/Ubuntu without python3-venv):
the virtual environment is then created without pip, and pip is installed into it
from its wheel on the package index (`PIP_INDEX_URL`, else the default index),
checked against the index's SHA-256. Installing again is skipped while
pyproject.toml and the extras are unchanged (the install is editable).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.request
import venv
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

ROOT = Path(__file__).resolve().parent
DEFAULT_INDEX = "https://pypi.org/simple"
STAMP = "reviewer-bootstrap.json"
# What each command installs (extras of pyproject.toml) and runs in the venv.
COMMANDS = {
    "demo": ("", [str(ROOT / "examples" / "demo.py")]),
    "test": ("test", ["-m", "pytest"]),
}
_WHEEL = re.compile(r"^pip-(\d+(?:\.\d+)*)-py3-none-any\.whl$")


def main(argv: list[str]) -> int:
    """Parse `COMMAND [ARGS...]`, make sure `.venv` is ready, run the command there."""
    # Run by whatever python3 the machine has: say so plainly when it is too old.
    if sys.version_info < (3, 10):  # noqa: UP036
        return _fail(f"reviewer needs Python 3.10 or newer, this is {sys.version.split()[0]}")
    if not argv or argv[0] not in COMMANDS:
        return _fail(f"usage: python3 bootstrap.py {{{'|'.join(COMMANDS)}}} [ARGS...]", code=64)
    extra, command = COMMANDS[argv[0]]
    venv_dir = Path(os.environ.get("REVIEWER_VENV", ROOT / ".venv"))
    try:
        python = ensure_venv(venv_dir)
        ensure_installed(python, venv_dir, extra)
    except (OSError, subprocess.CalledProcessError, ValueError) as error:
        return _fail(f"set-up failed: {error}")
    return subprocess.run([str(python), *command, *argv[1:]], cwd=ROOT, check=False).returncode


def ensure_venv(venv_dir: Path) -> Path:
    """The venv's python, creating the venv (and its pip) when it has none."""
    python = venv_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    if python.exists() and _has_pip(python):
        return python
    _say(f"creating the virtual environment {venv_dir}")
    if importlib.util.find_spec("ensurepip") is not None:
        try:
            venv.EnvBuilder(clear=True, with_pip=True).create(venv_dir)
            return python
        except subprocess.CalledProcessError:
            _say("ensurepip failed; installing pip from the package index instead")
    else:
        _say("this Python has no ensurepip; installing pip from the package index instead")
    venv.EnvBuilder(clear=True, with_pip=False).create(venv_dir)
    install_pip(python, os.environ.get("PIP_INDEX_URL", DEFAULT_INDEX))
    return python


def install_pip(python: Path, index: str) -> None:
    """Install pip into the venv of `python` from pip's wheel on the `index` (simple API)."""
    url, sha256 = latest_pip_wheel(index)
    with tempfile.TemporaryDirectory(prefix="reviewer-bootstrap-") as scratch:
        wheel = Path(scratch) / Path(urlsplit(url).path).name
        with urllib.request.urlopen(url, timeout=120) as response:
            wheel.write_bytes(response.read())
        if hashlib.sha256(wheel.read_bytes()).hexdigest() != sha256:
            raise ValueError(f"{wheel.name} does not match the SHA-256 the index gives")
        # A pip wheel runs from its own zip: pip installs itself.
        pip = [str(python), str(wheel / "pip"), "install", "--quiet", "--no-index"]
        subprocess.run([*pip, "--disable-pip-version-check", str(wheel)], check=True)


def latest_pip_wheel(index: str) -> tuple[str, str]:
    """URL and SHA-256 of the newest pip wheel on `index` that this Python can run."""
    page = f"{index.rstrip('/')}/pip/"
    request = urllib.request.Request(
        page, headers={"Accept": "application/vnd.pypi.simple.v1+json, text/html;q=0.1"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        kind = response.headers.get("Content-Type", "")
        body = response.read().decode("utf-8")
    files = _json_files(body) if "json" in kind else _html_files(body)
    candidates = []
    for name, url, sha256, requires, yanked in files:
        match = _WHEEL.match(name)
        if match and sha256 and not yanked and _python_allowed(requires):
            version = tuple(int(part) for part in match.group(1).split("."))
            candidates.append((version, urljoin(page, url), sha256))
    if not candidates:
        raise ValueError(f"no pip wheel for Python {sys.version.split()[0]} on {page}")
    _, url, sha256 = max(candidates)
    return url, sha256


File = tuple[str, str, str, str, bool]  # name, url, sha256, requires-python, yanked


def _json_files(body: str) -> list[File]:
    """Files of a PEP 691 JSON project page."""
    return [
        (
            entry["filename"],
            entry["url"],
            entry.get("hashes", {}).get("sha256", ""),
            entry.get("requires-python") or "",
            bool(entry.get("yanked")),
        )
        for entry in json.loads(body)["files"]
    ]


class _Links(HTMLParser):
    """Anchors of a PEP 503 HTML project page."""

    def __init__(self) -> None:
        super().__init__()
        self.files: list[File] = []
        self._attrs: dict[str, str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._attrs = {key: value or "" for key, value in attrs}

    def handle_data(self, data: str) -> None:
        if self._attrs is None:
            return
        url, _, fragment = self._attrs.get("href", "").partition("#")
        sha256 = fragment.removeprefix("sha256=") if fragment.startswith("sha256=") else ""
        requires = self._attrs.get("data-requires-python", "")
        yanked = "data-yanked" in self._attrs
        self.files.append((data.strip(), url, sha256, requires, yanked))
        self._attrs = None


def _html_files(body: str) -> list[File]:
    """Files of a PEP 503 HTML project page."""
    parser = _Links()
    parser.feed(body)
    return parser.files


def _python_allowed(requires: str) -> bool:
    """Whether this Python meets the `>=`/`>`/`<` clauses of a Requires-Python (others pass)."""
    here = sys.version_info[:2]
    for clause in filter(None, (part.strip() for part in requires.split(","))):
        match = re.fullmatch(r"(>=|>|<=|<)\s*(\d+)\.(\d+)(?:\.\d+|\.\*)?", clause)
        if not match:
            continue
        wanted = (int(match.group(2)), int(match.group(3)))
        operator = match.group(1)
        if not {">=": here >= wanted, ">": here > wanted, "<=": here <= wanted}.get(
            operator, here < wanted
        ):
            return False
    return True


def ensure_installed(python: Path, venv_dir: Path, extra: str) -> None:
    """Install reviewer (editable, with `extra`) unless the stamp says it already is."""
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    stamp_file = venv_dir / STAMP
    stamp = json.loads(stamp_file.read_text()) if stamp_file.exists() else {}
    if stamp.get("pyproject") == digest and (not extra or extra in stamp.get("extras", [])):
        return
    target = f"{ROOT}[{extra}]" if extra else str(ROOT)
    _say(f"installing reviewer{f'[{extra}]' if extra else ''} into {venv_dir}")
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "--editable", target], check=True)
    kept = stamp.get("extras", []) if stamp.get("pyproject") == digest else []
    extras = sorted({*kept, extra})
    stamp_file.write_text(json.dumps({"pyproject": digest, "extras": extras}) + "\n")


def _has_pip(python: Path) -> bool:
    """Whether `python -m pip` works (a venv created without pip, or half-created, has none)."""
    probe = [str(python), "-m", "pip", "--version"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


def _say(message: str) -> None:
    print(f"bootstrap: {message}", file=sys.stderr, flush=True)


def _fail(message: str, code: int = 1) -> int:
    _say(message)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
