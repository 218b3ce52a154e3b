"""Red team, chart archives: links, devices and escaping paths in `.tgz` charts are refused
before anything extracts or loads them (issue #12 item 3)."""

from __future__ import annotations

import hashlib
import io
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from chartrepo import ChartRepository
from conftest import Repo

from reviewer.model import Snapshot

DEPLOYMENT = "deployments/g/c/apps/d/deployment.yaml"
TEMPLATE = (
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: env}\n"
    'data: {env: {{ .Files.Get "files/env" | b64enc | quote }}}\n'
)

Entry = Callable[[str], tarfile.TarInfo]


def _symlink(chart: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(f"{chart}/files/env")
    info.type, info.linkname = tarfile.SYMTYPE, "/proc/self/environ"
    return info


def _hardlink(chart: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(f"{chart}/files/env")
    info.type, info.linkname = tarfile.LNKTYPE, "/proc/self/environ"
    return info


def _device(chart: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(f"{chart}/files/env")
    info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 3
    return info


def _fifo(chart: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(f"{chart}/files/env")
    info.type = tarfile.FIFOTYPE
    return info


def _parent(chart: str) -> tarfile.TarInfo:
    return tarfile.TarInfo(f"{chart}/../../escaped.txt")


def _absolute(chart: str) -> tarfile.TarInfo:
    return tarfile.TarInfo("/tmp/escaped.txt")


HOSTILE: dict[str, tuple[Entry, str]] = {
    "symlink": (_symlink, "is a link"),
    "hardlink": (_hardlink, "is a link"),
    "device": (_device, "not a regular file or directory"),
    "fifo": (_fifo, "not a regular file or directory"),
    "parent": (_parent, "absolute or '..' path"),
    "absolute": (_absolute, "absolute or '..' path"),
}


def _archive(name: str, hostile: tarfile.TarInfo | None, *, extra: bytes = b"") -> bytes:
    """A gzip tar of chart `name` (Chart.yaml, a template) plus the `hostile` entry."""
    files = {
        f"{name}/Chart.yaml": f"apiVersion: v2\nname: {name}\nversion: 1.0.0\n".encode(),
        f"{name}/templates/env.yaml": TEMPLATE.encode(),
    }
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path, data in files.items():
            info = tarfile.TarInfo(path)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        if extra:
            info = tarfile.TarInfo(f"{name}/charts/sub-1.0.0.tgz")
            info.size = len(extra)
            archive.addfile(info, io.BytesIO(extra))
        if hostile is not None:
            archive.addfile(
                hostile, io.BytesIO(b"stolen-archive-text" if hostile.isfile() else b"")
            )
    return buffer.getvalue()


def _errors(snapshot: Snapshot) -> str:
    return "\n".join(r.error or "" for r in snapshot.releases)


def _published(snapshot: Snapshot) -> str:
    return repr([r.resources for r in snapshot.releases])


def _local_archive_chart(repo: Repo, data: bytes) -> Repo:
    (repo.root / "charts/evil-1.0.0.tgz").write_bytes(data)
    repo.write(
        "templates/app/helmfile.yaml.gotmpl",
        "releases: [{name: app, chart: ../../charts/evil-1.0.0.tgz}]\n",
    )
    return repo.write(DEPLOYMENT, "apps: [{template: app}]\n")


def test_a_clean_local_archive_renders(repo: Repo) -> None:
    snapshot = _local_archive_chart(repo, _archive("evil", None)).render()
    assert _errors(snapshot) == ""
    assert "env" in _published(snapshot) and "dump" not in _published(snapshot)


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_local_archive_chart_with_hostile_entry_is_refused(repo: Repo, kind: str) -> None:
    entry, why = HOSTILE[kind]
    snapshot = _local_archive_chart(repo, _archive("evil", entry("evil"))).render()
    errors = _errors(snapshot)
    assert "charts/evil-1.0.0.tgz" in errors
    assert why in errors
    assert all(not r.resources for r in snapshot.releases)
    assert not (repo.root.parent / "escaped.txt").exists()


@pytest.mark.parametrize("kind", ["symlink", "parent", "device"])
def test_packaged_subchart_of_a_local_chart_is_checked(repo: Repo, kind: str) -> None:
    entry, why = HOSTILE[kind]
    (repo.root / "charts/dump/charts").mkdir()
    (repo.root / "charts/dump/charts/sub-1.0.0.tgz").write_bytes(_archive("sub", entry("sub")))
    repo.write(DEPLOYMENT, "apps: [{template: app}]\n")
    errors = _errors(repo.render())
    assert "charts/dump/charts/sub-1.0.0.tgz" in errors
    assert why in errors


def _serve(directory: Path, data: bytes) -> None:
    """An index naming one archive, written by hand (Helm's indexer would load it)."""
    (directory / "demo-1.0.0.tgz").write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    (directory / "index.yaml").write_text(
        "apiVersion: v1\nentries:\n  demo:\n"
        f"  - {{name: demo, version: 1.0.0, digest: {digest}, urls: [demo-1.0.0.tgz]}}\n"
    )


def _remote_chart(repo: Repo, url: str) -> Repo:
    repo.write(
        "templates/app/helmfile.yaml.gotmpl",
        f"repositories: [{{name: r, url: '{url}'}}]\nreleases: [{{name: app, chart: r/demo}}]\n",
    )
    return repo.write(DEPLOYMENT, "apps: [{template: app}]\n")


@pytest.mark.parametrize("kind", ["symlink", "absolute", "hardlink"])
def test_downloaded_archive_with_hostile_entry_is_refused(
    repo: Repo, tmp_path: Path, kind: str
) -> None:
    entry, why = HOSTILE[kind]
    with ChartRepository(tmp_path / "served") as served:
        _serve(served.directory, _archive("demo", entry("demo")))
        snapshot = _remote_chart(repo, served.url).render()
    errors = _errors(snapshot)
    assert "chart 'r/demo'" in errors
    assert why in errors
    assert all(not r.resources for r in snapshot.releases)
    assert not list((repo.root.parent / "chart-cache").rglob("*.tgz")), "never cached"


def test_subchart_nested_in_a_downloaded_archive_is_checked(repo: Repo, tmp_path: Path) -> None:
    nested = _archive("sub", _symlink("sub"))
    with ChartRepository(tmp_path / "served") as served:
        _serve(served.directory, _archive("demo", None, extra=nested))
        errors = _errors(_remote_chart(repo, served.url).render())
    assert "chart 'r/demo'" in errors
    assert "demo/charts/sub-1.0.0.tgz" in errors
    assert "is a link" in errors
