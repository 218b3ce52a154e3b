"""bootstrap.py: a virtual environment with pip even where the Python has no ensurepip.

The package index is a loopback server holding a real pip wheel (the one this
Python's ensurepip bundles, or Debian's); a Python without ensurepip is one whose
`ensurepip` cannot be imported, as on Debian/Ubuntu without python3-venv.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOTSTRAP = ROOT / "bootstrap.py"


def _pip_wheel() -> Path | None:
    """A real pip wheel on this machine: ensurepip's bundled one, or Debian's."""
    places = [Path(sys.base_prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"]
    candidates = [*places[0].glob("ensurepip/_bundled/pip-*.whl")]
    candidates += Path("/usr/share/python-wheels").glob("pip-*.whl")
    return next(iter(sorted(candidates)), None)


PIP_WHEEL = _pip_wheel()
needs_wheel = pytest.mark.skipif(PIP_WHEEL is None, reason="no pip wheel on this machine")


class Index:
    """A loopback package index serving one project page for pip (JSON or HTML)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.page = b""
        self.content_type = "application/vnd.pypi.simple.v1+json"
        self.requests: list[str] = []
        index = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                index.requests.append(self.path)
                if self.path == "/simple/pip/":
                    body, kind = index.page, index.content_type
                else:
                    file = index.directory / self.path.rsplit("/", 1)[-1]
                    if not file.is_file():
                        self.send_error(404)
                        return
                    body, kind = file.read_bytes(), "application/octet-stream"
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/simple"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def offer(self, wheels: list[tuple[str, str, str]], *, html: bool = False) -> None:
        """Serve `(file name, sha256, requires-python)` entries as pip's project page."""
        if html:
            self.content_type = "text/html"
            anchors = "".join(
                f'<a href="../../files/{name}#sha256={sha}" data-requires-python="{req}">'
                f"{name}</a>\n"
                for name, sha, req in wheels
            )
            self.page = f"<html><body>\n{anchors}</body></html>".encode()
            return
        files = [
            {"filename": name, "url": f"../../files/{name}", "hashes": {"sha256": sha}}
            | ({"requires-python": req} if req else {})
            for name, sha, req in wheels
        ]
        self.page = json.dumps({"meta": {"api-version": "1.0"}, "files": files}).encode()


@pytest.fixture
def index(tmp_path: Path) -> Iterator[Index]:
    served = Index(tmp_path / "files")
    served.directory.mkdir()
    yield served
    served.server.shutdown()


def _ensure_venv(venv: Path, index: Index) -> subprocess.CompletedProcess[str]:
    """Run bootstrap's venv step on a Python whose `ensurepip` cannot be imported.

    Only this step: installing reviewer would need the real package index.
    """
    code = (
        "import sys, pathlib; sys.modules['ensurepip'] = None  # as without python3-venv\n"
        "import bootstrap; bootstrap.ensure_venv(pathlib.Path(sys.argv[1]))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PIP_INDEX_URL": index.url}
    env.pop("PIP_FIND_LINKS", None)
    return subprocess.run(
        [sys.executable, "-c", code, str(venv)], env=env, capture_output=True, text=True
    )


def _serve_wheel(index: Index, name: str | None = None) -> tuple[str, str]:
    assert PIP_WHEEL is not None
    served = name or PIP_WHEEL.name
    (index.directory / served).write_bytes(PIP_WHEEL.read_bytes())
    return served, hashlib.sha256(PIP_WHEEL.read_bytes()).hexdigest()


def _pip_version(venv: Path) -> str:
    probe = [str(venv / "bin" / "python"), "-m", "pip", "--version"]
    return subprocess.run(probe, capture_output=True, text=True, check=True).stdout


@needs_wheel
@pytest.mark.parametrize("html", [False, True], ids=["json-index", "html-index"])
def test_without_ensurepip_pip_comes_from_the_index(
    tmp_path: Path, index: Index, html: bool
) -> None:
    name, sha = _serve_wheel(index)
    # A newer pip this Python cannot run is passed over.
    newer, _ = _serve_wheel(index, "pip-99.0-py3-none-any.whl")
    index.offer([(name, sha, ">=3.7"), (newer, sha, ">=3.99")], html=html)
    venv = tmp_path / "venv"

    result = _ensure_venv(venv, index)

    assert result.returncode == 0, result.stderr
    assert "installing pip from the package index" in result.stderr
    version = name.split("-")[1]
    assert _pip_version(venv).startswith(f"pip {version} ")
    assert f"/files/{newer}" not in index.requests


@needs_wheel
def test_a_wheel_that_does_not_match_the_index_hash_is_refused(
    tmp_path: Path, index: Index
) -> None:
    name, sha = _serve_wheel(index)
    index.offer([(name, "0" * len(sha), "")])
    venv = tmp_path / "venv"

    result = _ensure_venv(venv, index)

    assert result.returncode != 0
    assert "does not match the SHA-256 the index gives" in result.stderr
    assert not (venv / "bin" / "pip").exists()


def test_bootstrap_names_its_commands() -> None:
    result = subprocess.run(
        [sys.executable, str(BOOTSTRAP), "deploy"], capture_output=True, text=True
    )
    assert result.returncode == 64
    assert "usage: python3 bootstrap.py {demo|test} [ARGS...]" in result.stderr
