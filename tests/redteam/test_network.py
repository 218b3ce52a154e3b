"""Red team, network: chart hosts are checked, secrets never pick a URL (issue #12 item 4)."""

from __future__ import annotations

import contextlib
import datetime
import http.server
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agekeys import isolate_sops_key
from chartrepo import ChartRepository
from conftest import Repo
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from redteam_support import fleet

from reviewer import config
from reviewer.charts.policy import NetworkPolicy
from reviewer.charts.transport import HttpFailure, http_get
from reviewer.cli import main
from reviewer.errors import ExitStatus
from reviewer.gotmpl import TemplateRenderer
from reviewer.model import Snapshot
from reviewer.side import SideOptions, render_side
from reviewer.tooling import Tooling, open_tooling

DEPLOYMENT = "deployments/g/c/apps/d/deployment.yaml"


def _render(repo: Repo, *, allow_loopback: bool = False) -> Snapshot:
    settings = config.load(repo.root)
    with open_tooling(Tooling(allow_loopback=allow_loopback), settings) as tools:
        return render_side(
            repo.root, options=SideOptions(), tools=tools, renderer=TemplateRenderer()
        ).snapshot


def _remote(repo: Repo, url: str) -> Repo:
    repo.write(
        "templates/app/helmfile.yaml.gotmpl",
        f"repositories: [{{name: r, url: '{url}'}}]\nreleases: [{{name: app, chart: r/demo}}]\n",
    )
    return repo.write(DEPLOYMENT, "apps: [{template: app}]\n")


def _errors(snapshot: Snapshot) -> str:
    return "\n".join(r.error or "" for r in snapshot.releases)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://169.254.169.254/latest", "link-local"),
        ("http://127.0.0.1:9/", "loopback"),
        ("http://10.1.2.3/", "private"),
        ("http://[fe80::1]/", "link-local"),
    ],
)
def test_special_addresses_are_refused(repo: Repo, url: str, why: str) -> None:
    assert why in _errors(_render(_remote(repo, url)))


def test_allowed_hosts_from_base_config_are_the_only_hosts(repo: Repo) -> None:
    repo.write(".reviewer.yaml", "charts: {allowedHosts: [charts.example.org]}\n")
    snapshot = _render(_remote(repo, "http://127.0.0.1:9/"), allow_loopback=True)
    assert "not in charts.allowedHosts" in _errors(snapshot)


SECRET = "Hunter2-Sup3r-Zeta9x"


def _run(args: list[str]) -> int:
    with pytest.raises(SystemExit) as done:
        main(args)
    return int(done.value.code or 0)


@pytest.mark.parametrize("release", ["app", "{{ .Values.db.password | lower }}"])
def test_a_secret_in_a_repository_url_is_never_requested(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, release: str
) -> None:
    identity = isolate_sops_key(monkeypatch, tmp_path)
    with ChartRepository(tmp_path / "served") as served:
        template = (
            f'repositories: [{{name: r, url: "{served.url}/{{{{ .Values.db.password }}}}"}}]\n'
            f"releases: [{{name: '{release}', chart: r/app}}]\n"
        )
        secrets = {"db": {"user": "app-user-7", "password": SECRET}}
        attack = {"templates/svc/helmfile.yaml.gotmpl": template}
        repo = fleet(tmp_path / "repo", identity, secrets, attack)
        outputs = []
        for form in ("markdown", "json"):
            out = tmp_path / f"report.{form}"
            args = ["diff", "--repo", str(repo.root), "--base", "main", "--format", form]
            code = _run([*args, "--allow-loopback-charts", "--output", str(out)])
            outputs.append(out.read_text(encoding="utf-8"))
            assert code == ExitStatus.RENDER_FAILED
        out = tmp_path / "render"
        code = _run(["render", str(repo.root), "--allow-loopback-charts", "--out", str(out)])
        assert code == ExitStatus.RENDER_FAILED
        outputs += [f.read_text(encoding="utf-8") for f in out.rglob("*") if f.is_file()]
        assert served.requests == []
    text = "\n".join(outputs)
    assert "depends on a SOPS secret" in text
    assert "helmfile.yaml.gotmpl" in text
    for form in (SECRET, SECRET.lower()):
        assert form not in text


# --- DNS rebinding: the address checked is the address connected to --------------------------

REBINDING_HOST = "charts.rebind.test"


class _RecordingServer(http.server.HTTPServer):
    """A loopback server answering every GET with a fixed body; keeps each Host header."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Recorder)
        self.hosts: list[str] = []


class _Recorder(http.server.BaseHTTPRequestHandler):
    server: _RecordingServer

    def do_GET(self) -> None:
        self.server.hosts.append(self.headers.get("Host", ""))
        body = b"index-body"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def _server(tls: ssl.SSLContext | None) -> Iterator[tuple[_RecordingServer, list[str]]]:
    server = _RecordingServer()
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server, server.hosts
    finally:
        server.shutdown()
        server.server_close()


def _rebinding_resolver(
    monkeypatch: pytest.MonkeyPatch, checked: str, later: str
) -> list[tuple[Any, ...]]:
    """The attacker's DNS: `checked` for the first lookup of the host, `later` afterwards."""
    real = socket.getaddrinfo
    lookups: list[tuple[Any, ...]] = []

    def resolve(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != REBINDING_HOST:
            return real(host, port, *args, **kwargs)
        lookups.append((host, port))
        address = checked if len(lookups) == 1 else later
        return real(address, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    return lookups


def _certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for REBINDING_HOST: (certificate, key) PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, REBINDING_HOST)])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(REBINDING_HOST)]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "cert.pem", directory / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


LOOPBACK_ONLY = NetworkPolicy(allow_loopback=True)


def test_http_connects_to_the_address_it_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    # Checked: the (allowed) loopback server. Any later lookup would answer the metadata
    # endpoint; a client resolving again when it connects would go there.
    lookups = _rebinding_resolver(monkeypatch, "127.0.0.1", "169.254.169.254")
    with _server(None) as (server, hosts):
        port = server.server_address[1]
        url = f"http://{REBINDING_HOST}:{port}/index.yaml"
        assert http_get(url, login=None, timeout=10, policy=LOOPBACK_ONLY) == b"index-body"
    assert len(lookups) == 1
    assert hosts == [f"{REBINDING_HOST}:{port}"]


def test_a_rebound_answer_is_checked_before_connecting(monkeypatch: pytest.MonkeyPatch) -> None:
    lookups = _rebinding_resolver(monkeypatch, "169.254.169.254", "127.0.0.1")
    with _server(None) as (server, hosts):
        url = f"http://{REBINDING_HOST}:{server.server_address[1]}/index.yaml"
        with pytest.raises(HttpFailure, match="link-local"):
            http_get(url, login=None, timeout=10, policy=LOOPBACK_ONLY)
    assert len(lookups) == 1 and hosts == []


def test_https_to_the_checked_address_keeps_the_host_name_for_tls(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cert_file, key_file = _certificate(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))  # the client trusts this one CA
    lookups = _rebinding_resolver(monkeypatch, "127.0.0.1", "169.254.169.254")
    names: list[str | None] = []
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert_file, key_file)
    tls.sni_callback = lambda _socket, name, _context: names.append(name)
    with _server(tls) as (server, hosts):
        port = server.server_address[1]
        url = f"https://{REBINDING_HOST}:{port}/index.yaml"
        assert http_get(url, login=None, timeout=10, policy=LOOPBACK_ONLY) == b"index-body"
        with pytest.raises(HttpFailure, match="certificate"):
            # The same server by address: its certificate does not name 127.0.0.1.
            http_get(
                f"https://127.0.0.1:{port}/index.yaml", login=None, timeout=10, policy=LOOPBACK_ONLY
            )
    assert len(lookups) == 1
    assert names[0] == REBINDING_HOST
    assert hosts == [f"{REBINDING_HOST}:{port}"]
