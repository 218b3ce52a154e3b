"""The `generated` kind: a converter run in a bubblewrap sandbox, its output read as manifests."""

from __future__ import annotations

import http.server
import importlib.util
import json
import os
import shutil
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from agekeys import AgeIdentity, encrypt
from conftest import GitRepo, git
from test_diff_command import json_diff, run_diff

from reviewer import yamlio
from reviewer.cli import main
from reviewer.errors import ExitStatus


@pytest.fixture(autouse=True)
def _bubblewrap() -> None:
    """Skip without bubblewrap on a developer machine; under CI its absence fails."""
    if shutil.which("bwrap") is None:
        reason = "bubblewrap (bwrap) is not installed (apt-get install bubblewrap)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; .ci/run must install it")
        pytest.skip(reason)


# Each bundle `bundles/<name>.txt` becomes a ConfigMap `<name>` holding its text.
CONVERT = (
    'for f in bundles/*.txt; do n=$(basename "$f" .txt); '
    'printf "apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: %s}\\ndata: {text: \\"%s\\"}\\n" '
    '"$n" "$(cat "$f")" > "$OUT/$n.yaml"; done'
)


SECRET = "gen-s3cr3t-Value-2468"
# Fails on the side that has bundles/notes.txt (the pull request's).
FAILING = (
    "if [ -f bundles/notes.txt ]; then for i in $(seq 1 40); do echo line $i; done; "
    "cat bundles/notes.txt; echo boom >&2; exit 3; fi"
)


def settings(command: str, **options: Any) -> str:
    source = {"name": "gen", "kind": "generated", "command": ["sh", "-c", command], **options}
    return json.dumps({"sources": [source]}) + "\n"


def report_for(repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    return json_diff(repo, capsys, "--base", "main")


def objects(report: dict[str, Any]) -> dict[str, str]:
    return {
        f"{r['cluster']}/{r['deployment']}/{r['release']}": r["status"] for r in report["releases"]
    }


@pytest.fixture
def converter(tmp_path: Path) -> GitRepo:
    """Bundles and the converter's settings committed on main; `feature` checked out."""
    repo = GitRepo(tmp_path / "conv")
    repo.write(".reviewer.yaml", settings(CONVERT))
    repo.write("bundles/alpha.txt", "one")
    repo.write("bundles/beta.txt", "two")
    repo.commit("bundles")
    git(repo.root, "checkout", "--quiet", "-b", "feature")
    return repo


def test_bundles_are_converted_on_each_side_and_compared(
    converter: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    converter.write("bundles/beta.txt", "three")
    converter.write("bundles/gamma.txt", "new")
    code, out, err = run_diff(["--repo", str(converter.root), "--base", "main"], capsys)
    assert code == ExitStatus.OK, out
    assert "sources (from .reviewer.yaml): generated 'gen': sh ... (3 arguments) in ./" in err
    assert "~ gen/./beta.yaml [changed]" in out
    assert 'data.text: "two" → "three"' in out
    assert "+ gen/./gamma.yaml [added]" in out


def test_the_command_comes_from_the_base_side_only(
    converter: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    hijack = 'printf "apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: pwned}\\n" > $OUT/p.yaml'
    converter.write(".reviewer.yaml", settings(hijack))
    assert objects(report_for(converter, capsys)) == {
        "gen/./alpha.yaml": "unchanged",
        "gen/./beta.yaml": "unchanged",
    }


def test_the_sandbox_has_no_network_no_environment_no_home(
    converter: GitRepo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = Path(os.environ["HOME"])
    (home / "token.txt").write_text("home-secret-1234")
    monkeypatch.setenv("REVIEWER_TEST_TOKEN", "env-secret-5678")
    with _server() as port:
        probe = (
            f"(python3 -c 'import urllib.request as u; u.urlopen(\"http://127.0.0.1:{port}/\")'"
            " >/dev/null 2>&1 && echo reached || echo unreachable) > /tmp/net; "
            f"(cat {home}/token.txt 2>/dev/null || echo absent) > /tmp/home; "
            "(touch bundles/written 2>/dev/null && echo writable || echo read-only) > /tmp/ro; "
            'printf "apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: probe}\\ndata:\\n'
            '  net: %s\\n  home: %s\\n  checkout: %s\\n  env: \\"%s\\"\\n" '
            '"$(cat /tmp/net)" "$(cat /tmp/home)" "$(cat /tmp/ro)" '
            '"$(env | cut -d= -f1 | sort | tr "\\n" " ")" > $OUT/probe.yaml'
        )
        converter.write(".reviewer.yaml", settings(probe))
        rendered = _render(converter, tmp_path)
        # The host reaches the server: only the sandbox's missing network stops the probe.
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/") as response:
            assert response.status == 200
    assert rendered["net"] == "unreachable"
    assert rendered["home"] == "absent"
    assert rendered["checkout"] == "read-only"
    assert set(rendered["env"].split()) <= {"HOME", "LANG", "OUT", "PATH", "PWD", "SHLVL", "_"}
    assert not (converter.root / "bundles/written").exists()


def test_a_failing_generator_is_a_side_error_with_its_last_lines_redacted(
    converter: GitRepo, age_key: AgeIdentity, capsys: pytest.CaptureFixture[str]
) -> None:
    # A known secret (from a SOPS file of another source) that the generator's output
    # happens to quote is redacted there too.
    sources = json.loads(settings(FAILING))["sources"]
    sources.append({"name": "secrets", "kind": "manifests", "paths": ["secrets"]})
    converter.write(".reviewer.yaml", json.dumps({"sources": sources}))
    document = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db"},
        "stringData": {"password": SECRET},
    }
    (converter.root / "secrets").mkdir()
    encrypt(converter.root / "secrets", document, age_key, name="db.sops.yaml")
    converter.commit("failing converter")
    git(converter.root, "branch", "--quiet", "-f", "main")
    converter.write("bundles/notes.txt", f"password {SECRET}\n")
    code, out, err = run_diff(["--repo", str(converter.root), "--base", "main"], capsys)
    assert code == ExitStatus.RENDER_FAILED
    assert "FAILED gen/*/*: " in out
    assert "generator 'gen' failed with exit code 3" in out
    assert "line 40" in out and "boom" in out and "password " in out
    assert "line 10\n" not in out, "only the last lines"
    assert SECRET not in out and SECRET not in err


def test_limits_stop_a_generator(converter: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    converter.write(".reviewer.yaml", settings("sleep 30", timeoutSeconds=1))
    converter.commit("slow")
    git(converter.root, "branch", "--quiet", "-f", "main")
    args = ["--repo", str(converter.root), "--base", "main", "--fail-on-preexisting"]
    code, out, _ = run_diff(args, capsys)
    assert code == ExitStatus.RENDER_FAILED
    assert "generator 'gen' did not finish within 1s" in out
    hungry = "python3 -c 'x = bytearray(512 * 1024 * 1024)'"
    converter.write(".reviewer.yaml", settings(hungry, memoryMiB=64))
    converter.commit("hungry")
    git(converter.root, "branch", "--quiet", "-f", "main")
    code, out, _ = run_diff(args, capsys)
    assert code == ExitStatus.RENDER_FAILED
    assert "MemoryError" in out


def test_without_a_working_sandbox_the_generator_never_runs(
    converter: GitRepo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    broken = tmp_path / "bwrap"
    broken.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"
    )
    broken.chmod(0o755)
    monkeypatch.setenv("REVIEWER_BWRAP", str(broken))
    args = ["--repo", str(converter.root), "--base", "main", "--fail-on-preexisting"]
    code, out, _ = run_diff(args, capsys)
    assert code == ExitStatus.RENDER_FAILED
    assert "the generator sandbox (bubblewrap) cannot start on this machine" in out
    assert "never runs outside the sandbox" in out


def test_the_generated_example_and_its_demo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    examples = Path(__file__).parent.parent / "examples"
    spec = importlib.util.spec_from_file_location("demo", examples / "demo.py")
    assert spec is not None and spec.loader is not None
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    repo = GitRepo(demo.build_demo_repo(tmp_path / "generated", "generated"))
    report = report_for(repo, capsys)
    assert objects(report) == {
        "compositions/./orders.yaml": "changed",
        "compositions/./sessions.yaml": "unchanged",
    }
    (orders,) = [r for r in report["releases"] if r["release"] == "orders.yaml"]
    assert orders["resources"][0]["changes"] == [
        "spec.resources[name=instance].base.spec.forProvider.allocatedStorage: 20 → 50"
    ]
    (impact,) = report["explain"]["blastRadius"]
    assert (impact["file"], impact["changed"]) == ("bundles/orders.json", 1)


def _render(repo: GitRepo, tmp_path: Path) -> dict[str, str]:
    """The probe ConfigMap's data, as `reviewer render` of the working tree writes it."""
    out = tmp_path / "rendered"
    with pytest.raises(SystemExit) as done:
        main(["render", str(repo.root), "--out", str(out)])
    assert done.value.code == ExitStatus.OK
    (found,) = out.rglob("configmap-probe.yaml")
    data: dict[str, str] = yamlio.read_mapping(found, source="probe")["data"]
    return data


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return None


@contextmanager
def _server() -> Iterator[int]:
    """A loopback HTTP server the host can reach; yields its port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
