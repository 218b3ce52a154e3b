"""A real OCI registry on loopback: Debian's `docker-registry` (distribution) started by the tests.

`.ci/run` installs the package; on a machine without it the tests that need a
registry skip, naming the missing command.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, NoReturn

import helm_python
import pytest
from chartrepo import package, write_chart

REGISTRY_COMMAND = "docker-registry"


def _missing(reason: str) -> NoReturn:
    # A convenience on a developer machine; in CI a missing install step must fail loudly.
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; .ci/run must install it")
    pytest.skip(reason)


def require_registry() -> str:
    """The registry command, or skip the test with the reason (fail under CI)."""
    found = shutil.which(REGISTRY_COMMAND)
    if found is None:
        _missing(f"`{REGISTRY_COMMAND}` is not installed (apt-get install docker-registry)")
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _htpasswd(path: Path, username: str, password: str) -> None:
    try:
        import bcrypt
    except ImportError:
        _missing("the `bcrypt` package (htpasswd for the registry) is not installed")
    hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()
    path.write_text(f"{username}:{hashed}\n", encoding="utf-8")


class Registry:
    """`docker-registry serve` on 127.0.0.1 with filesystem storage (and htpasswd auth)."""

    def __init__(self, directory: Path, *, login: tuple[str, str] | None = None) -> None:
        self.directory = directory
        self.login = login
        self.port = _free_port()
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def host(self) -> str:
        """`127.0.0.1:PORT`."""
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """`oci://127.0.0.1:PORT`."""
        return f"oci://{self.host}"

    def __enter__(self) -> Registry:
        command = require_registry()
        self.directory.mkdir(parents=True, exist_ok=True)
        config = self.directory / "config.yml"
        config.write_text(self._config(), encoding="utf-8")
        self._log = (self.directory / "registry.log").open("wb")
        self._process = subprocess.Popen(
            [command, "serve", str(config)], stdout=subprocess.DEVNULL, stderr=self._log
        )
        self._wait()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=10)
        if self._log is not None:
            self._log.close()

    def push(self, archive: Path, path: str = "charts") -> None:
        """Push a packaged chart to `oci://host/<path>`."""
        client = helm_python.RegistryClient(
            plain_http=True, credentials_file=self.directory / "push-login.json"
        )
        with client:
            if self.login:
                client.login(self.host, *self.login, plain_http=True)
            client.push(archive, f"{self.url}/{path}")

    def _config(self) -> str:
        auth = ""
        if self.login:
            _htpasswd(self.directory / "htpasswd", *self.login)
            auth = f"auth:\n  htpasswd:\n    realm: test\n    path: {self.directory / 'htpasswd'}\n"
        return (
            "version: 0.1\nlog:\n  level: error\n"
            f"storage:\n  filesystem:\n    rootdirectory: {self.directory / 'storage'}\n"
            f"http:\n  addr: {self.host}\n{auth}"
        )

    def _wait(self) -> None:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                log = (self.directory / "registry.log").read_text(errors="replace")
                raise RuntimeError(f"docker-registry exited: {log[-2000:]}")
            try:
                urllib.request.urlopen(f"http://{self.host}/v2/", timeout=1).close()
                return
            except urllib.error.HTTPError:
                return  # 401: up, and asking for credentials
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("docker-registry did not start within 15 s")


@contextmanager
def registry_serving(work: Path, name: str, versions: Sequence[str]) -> Iterator[Registry]:
    """A registry under `work` serving chart `name` at each of `versions` (oci://host/charts)."""
    with Registry(work / "registry") as server:
        chart = write_chart(work / "src", name, versions[0])
        for version in versions:
            server.push(package(chart, work / "pkg", version))
        yield server
