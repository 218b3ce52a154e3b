"""Shared fixtures: repositories built in temp dirs and a chart that shows what Helm received."""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from agekeys import AgeIdentity, isolate_sops_key
from github_api import TOKEN, FakeGitHub, User, load_spec

from reviewer import yamlio
from reviewer.gotmpl import TemplateRenderer
from reviewer.model import ReleaseId, RenderedRelease, Snapshot
from reviewer.side import SideOptions, render_side
from reviewer.tooling import Tooling, open_tooling
from reviewer.values import SecretsLoader

# A chart whose only object is a ConfigMap holding the `.Values` Helm received,
# so tests assert on what was rendered, not on internals.
DUMP_CHART = {
    "Chart.yaml": "apiVersion: v2\nname: dump\nversion: 1.0.0\n",
    "values.yaml": "chartDefault: from-chart\nreplicas: 1\nnested:\n  keep: chart\n  drop: chart\n",
    "templates/values.yaml": textwrap.dedent(
        """\
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: {{ .Release.Name }}-values
          namespace: {{ .Release.Namespace }}
        data:
          values: |
        {{ toYaml .Values | indent 4 }}
        """
    ),
}


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tests never read or write the real home directory."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))


@pytest.fixture
def age_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> AgeIdentity:
    """A fresh age identity that sops finds through SOPS_AGE_KEY_FILE; CI variables unset."""
    return isolate_sops_key(monkeypatch, tmp_path_factory.mktemp("age"))


class Repo:
    """A GitOps repository written file by file into a temp directory."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def write(self, path: str, text: str) -> Repo:
        """Write a file (dedented), creating directories."""
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text), encoding="utf-8")
        return self

    def write_all(self, files: dict[str, str]) -> Repo:
        """Write several files."""
        for path, text in files.items():
            self.write(path, text)
        return self

    def add_chart(self, path: str = "charts/dump", files: dict[str, str] | None = None) -> Repo:
        """Add a local chart (the values-dump chart by default)."""
        for name, text in (files or DUMP_CHART).items():
            self.write(f"{path}/{name}", text)
        return self

    def add_template(self, name: str = "app", text: str | None = None) -> Repo:
        """Add an app template rendering the dump chart."""
        depth = "../" * (name.count("/") + 2)
        default = f"releases:\n  - name: app\n    chart: {depth}charts/dump\n"
        return self.write(f"templates/{name}/helmfile.yaml.gotmpl", text or default)

    def render(
        self, options: SideOptions | None = None, secrets: SecretsLoader | None = None
    ) -> Snapshot:
        """Render every release in-process with the embedded engine (not redacted)."""
        # Chart repositories in tests are loopback servers: allowed like --allow-loopback-charts.
        tooling = Tooling(cache_dir=self.root.parent / "chart-cache", allow_loopback=True)
        with open_tooling(tooling) as tools:
            side = render_side(
                self.root,
                options=options or SideOptions(),
                tools=tools,
                renderer=TemplateRenderer(),
                secrets=secrets,
            )
        return side.snapshot


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Repo]:
    """An empty repository with the values-dump chart and an `app` template."""
    yield Repo(tmp_path / "repo").add_chart().add_template()


FLEET_APP = "apps: [{template: app}]\n"
FLEET_CLUSTERS = ("a", "b", "c")
AnyRepo = TypeVar("AnyRepo", bound=Repo)


def fleet(repo: AnyRepo) -> AnyRepo:
    """Clusters a, b and c, each deploying the `app` template as `web` with its own values."""
    for cluster in FLEET_CLUSTERS:
        repo.write(f"deployments/{cluster}/apps/web/deployment.yaml", FLEET_APP)
        repo.write(f"deployments/{cluster}/cluster.values.yaml", f"where: {cluster}\n")
    return repo


def release(snapshot: Snapshot, cluster: str, deployment: str, name: str) -> RenderedRelease:
    """The rendered release with that identity (fails the test if absent)."""
    found = snapshot.by_id().get(ReleaseId(cluster, deployment, name))
    assert found is not None, f"no release {cluster}/{deployment}/{name} in {_ids(snapshot)}"
    return found


def received_values(snapshot: Snapshot, cluster: str, deployment: str, name: str) -> dict[str, Any]:
    """The `.Values` the dump chart received for that release."""
    rendered = release(snapshot, cluster, deployment, name)
    assert rendered.error is None, rendered.error
    config = next(r for r in rendered.resources if r.key.kind == "ConfigMap")
    return yamlio.load_mapping(config.body["data"]["values"], source="dump")


def _ids(snapshot: Snapshot) -> list[str]:
    return [str(r.id) for r in snapshot.releases]


def git(root: Path, *args: str) -> str:
    """Run git in `root` with a fixed identity; returns stdout."""
    identity = ["-c", "user.name=test", "-c", "user.email=test@example.invalid"]
    done = subprocess.run(
        ["git", "-C", str(root), *identity, *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


class GitRepo(Repo):
    """A `Repo` under git: `commit()` records the current files on the current branch."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        root.mkdir(parents=True, exist_ok=True)
        git(root, "init", "--quiet", "--initial-branch=main")

    def commit(self, message: str = "change") -> str:
        """Commit everything; returns the new SHA."""
        git(self.root, "add", "-A")
        git(self.root, "commit", "--quiet", "--allow-empty", "-m", message)
        return git(self.root, "rev-parse", "HEAD")

    def remove(self, path: str) -> GitRepo:
        """Delete a file or directory."""
        target = self.root / path
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink()
        return self


@pytest.fixture
def git_repo(tmp_path: Path) -> GitRepo:
    """A git repository with the values-dump chart and an `app` template, nothing committed."""
    repo = GitRepo(tmp_path / "gitrepo")
    repo.add_chart().add_template()
    return repo


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    """The loopback GitHub; the test fails if any exchange broke GitHub's description."""
    server = FakeGitHub(load_spec())
    with server.running():
        yield server
    assert server.state.errors == []


@pytest.fixture
def bot(fake: FakeGitHub) -> User:
    """The user behind TOKEN: a bot, like GITHUB_TOKEN's github-actions[bot]."""
    return fake.add_user(TOKEN, "github-actions[bot]", bot=True)
