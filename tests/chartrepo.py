"""A real Helm chart repository on loopback: packaged charts + index.yaml over HTTP.

Charts are written and packaged by the tests (`helm_python.package`), the index is
generated like `helm repo index` does; the server counts every request it serves
and can require HTTP basic auth.
"""

from __future__ import annotations

import base64
import textwrap
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import helm_python


def write_chart(
    directory: Path, name: str, version: str, files: dict[str, str] | None = None
) -> Path:
    """Write a chart source directory `directory/name` (a ConfigMap chart by default)."""
    chart = directory / name
    defaults = {
        "Chart.yaml": f"apiVersion: v2\nname: {name}\nversion: {version}\n",
        "templates/cm.yaml": textwrap.dedent(
            f"""\
            apiVersion: v1
            kind: ConfigMap
            metadata:
              name: {{{{ .Release.Name }}}}-{name}
            data:
              chart: {name}-{{{{ .Chart.Version }}}}
            """
        ),
    }
    for path, text in {**defaults, **(files or {})}.items():
        target = chart / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text), encoding="utf-8")
    return chart


def package(chart: Path, destination: Path, version: str | None = None) -> Path:
    """`helm package` the chart directory into `destination`; returns the archive."""
    destination.mkdir(parents=True, exist_ok=True)
    return Path(helm_python.package(chart, destination=destination, version=version))


class ChartRepository:
    """An HTTP chart repository serving `directory` on 127.0.0.1 (optionally behind basic auth)."""

    def __init__(self, directory: Path, *, login: tuple[str, str] | None = None) -> None:
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.requests: list[str] = []
        self._lock = threading.Lock()
        expected = base64.b64encode(f"{login[0]}:{login[1]}".encode()).decode() if login else None
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler(expected))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The repository URL."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> ChartRepository:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def publish(self, chart: Path, *versions: str) -> list[Path]:
        """Package `chart` once per version (or as written) and regenerate index.yaml."""
        archives = [package(chart, self.directory, v) for v in versions or (None,)]
        self.reindex()
        return archives

    def reindex(self) -> None:
        """Regenerate index.yaml (digests included) from the archives present."""
        helm_python.repo_index_generate(self.directory)

    def count(self, suffix: str = "") -> int:
        """Requests served so far whose path ends with `suffix`."""
        with self._lock:
            return sum(1 for path in self.requests if path.endswith(suffix))

    def _handler(self, expected: str | None) -> type[SimpleHTTPRequestHandler]:
        repository = self

        class Handler(SimpleHTTPRequestHandler):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, directory=str(repository.directory), **kwargs)

            def do_GET(self) -> None:
                with repository._lock:
                    repository.requests.append(self.path)
                if expected and self.headers.get("Authorization") != f"Basic {expected}":
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="charts"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                super().do_GET()

            def log_message(self, format: str, *args: Any) -> None:
                return None

        return Handler
