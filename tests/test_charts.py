"""Chart sources against a real HTTP chart repository and a real OCI registry on loopback."""

from __future__ import annotations

import base64
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from chartrepo import ChartRepository, package, write_chart
from registry import Registry, registry_serving

from reviewer import charts
from reviewer.charts import ChartError, ChartFetcher, Credentials, Login, select_version
from reviewer.charts.policy import NetworkPolicy
from reviewer.engine import EmbeddedEngine, RenderRequest
from reviewer.templates import ChartRef
from reviewer.workers import manifests

LOOPBACK = NetworkPolicy(allow_loopback=True)

VERSIONS = ("1.0.0", "1.2.0", "1.3.0-rc.1", "2.0.0")
SECRET = "pw-Zq81x!sensitive"  # never allowed in any message


# --- Helm's version selection ----------------------------------------------------------------

AVAILABLE = ["0.1.0", "0.1.5", "0.2.0", "1.0.0", "1.2.0", "1.2.9", "1.3.0-rc.1", "2.0.0"]


@pytest.mark.parametrize(
    ("wanted", "chosen"),
    [
        (None, "2.0.0"),
        ("", "2.0.0"),
        ("1.2.0", "1.2.0"),
        ("v1.2.0", "1.2.0"),
        ("^1.0.0", "1.2.9"),
        ("^0.1.0", "0.1.5"),
        ("~1.2.0", "1.2.9"),
        ("~1", "1.2.9"),
        ("1.2.x", "1.2.9"),
        ("1.x", "1.2.9"),
        ("*", "2.0.0"),
        (">=1.0.0 <1.2.5", "1.2.0"),
        (">=1.0.0, <1.2.5", "1.2.0"),
        ("1.0.0 - 1.2.0", "1.2.0"),
        ("<1.0.0 || >=2.0.0", "2.0.0"),
        ("<1.0.0", "0.2.0"),
        ("!=2.0.0", "1.3.0-rc.1"),  # Masterminds quirk: an exact `!=` lets prereleases in
        ("!=2.x", "1.2.9"),
        (">1", "2.0.0"),
        (">=1.3.0-0", "2.0.0"),
        (">=1.3.0-0 <2.0.0", None),  # every term must name a prerelease to admit one
        (">=1.3.0-0 <2.0.0-0", "1.3.0-rc.1"),
        ("1.3.0-rc.1", "1.3.0-rc.1"),
        ("^1.3.0", None),
        ("3.x", None),
    ],
)
def test_versions_resolve_like_helm(wanted: str | None, chosen: str | None) -> None:
    assert select_version(AVAILABLE, wanted) == chosen


def test_prereleases_only_when_the_constraint_names_one() -> None:
    assert select_version(["1.0.0-beta.1", "1.0.0-beta.2"], None) is None
    assert select_version(["1.0.0-beta.1", "1.0.0-beta.2"], ">=1.0.0-0") == "1.0.0-beta.2"
    assert select_version(["1.0.0-beta.10", "1.0.0-beta.9"], ">=1.0.0-0") == "1.0.0-beta.10"


def test_malformed_constraints_are_refused() -> None:
    with pytest.raises(ValueError):
        select_version(AVAILABLE, ">= one")


# --- fixtures ----------------------------------------------------------------------------------


@pytest.fixture
def sources(tmp_path: Path) -> Path:
    return tmp_path / "src"


@pytest.fixture
def http_repo(tmp_path: Path, sources: Path) -> Iterator[ChartRepository]:
    with ChartRepository(tmp_path / "served") as server:
        server.publish(write_chart(sources, "demo", "1.0.0"), *VERSIONS)
        yield server


@pytest.fixture
def private_repo(tmp_path: Path, sources: Path) -> Iterator[ChartRepository]:
    with ChartRepository(tmp_path / "private", login=("bot", SECRET)) as server:
        server.publish(write_chart(sources, "secretive", "0.1.0"))
        yield server


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    with registry_serving(tmp_path_factory.mktemp("oci"), "ocidemo", VERSIONS) as server:
        yield server


@pytest.fixture(scope="module")
def private_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    work = tmp_path_factory.mktemp("oci-private")
    with Registry(work / "registry", login=("bot", SECRET)) as server:
        server.push(package(write_chart(work / "src", "hidden", "1.0.0"), work / "pkg"))
        yield server


def fetcher(
    tmp_path: Path, *, offline: bool = False, credentials: Credentials | None = None
) -> ChartFetcher:
    return ChartFetcher(
        cache_dir=tmp_path / "cache",
        offline=offline,
        credentials=credentials or Credentials({}, []),
        policy=LOOPBACK,
    )


def repo_ref(server: ChartRepository, chart: str, name: str = "myrepo") -> ChartRef:
    return ChartRef(ref=f"{name}/{chart}", repository=server.url)


def rendered_chart_label(path: Path) -> str:
    """What the test chart's ConfigMap says about itself: `<name>-<version>`."""
    engine = EmbeddedEngine()
    try:
        output = engine.render(RenderRequest(chart=path, values={}, release="r", namespace="n"))
    finally:
        engine.close()
    return "|".join(sorted(r.body["data"]["chart"] for r in manifests(output) if "data" in r.body))


# --- HTTP repositories -------------------------------------------------------------------------


def test_repo_chart_with_exact_version(tmp_path: Path, http_repo: ChartRepository) -> None:
    with fetcher(tmp_path) as chart_fetcher:
        resolved = chart_fetcher.resolve(repo_ref(http_repo, "demo"), "1.2.0", root=tmp_path)
    assert resolved.version == "1.2.0"
    assert resolved.path.is_file() and resolved.path.is_relative_to(tmp_path / "cache")
    assert resolved.path.name == f"{resolved.digest}.tgz"
    assert rendered_chart_label(resolved.path) == "demo-1.2.0"


@pytest.mark.parametrize(
    ("wanted", "chosen"),
    [("^1.0.0", "1.2.0"), ("~1.0", "1.0.0"), (None, "2.0.0"), (">=1.3.0-0 <2.0.0-0", "1.3.0-rc.1")],
)
def test_repo_chart_with_range(
    tmp_path: Path, http_repo: ChartRepository, wanted: str | None, chosen: str
) -> None:
    with fetcher(tmp_path) as chart_fetcher:
        resolved = chart_fetcher.resolve(repo_ref(http_repo, "demo"), wanted, root=tmp_path)
    assert resolved.version == chosen
    assert rendered_chart_label(resolved.path) == f"demo-{chosen}"


def test_private_repo_with_login_from_environment(
    tmp_path: Path, private_repo: ChartRepository
) -> None:
    env = {
        "REVIEWER_HELM_REPO_MY_REPO_USERNAME": "bot",
        "REVIEWER_HELM_REPO_MY_REPO_PASSWORD": SECRET,
    }
    credentials = Credentials.from_environment(env)
    with fetcher(tmp_path, credentials=credentials) as chart_fetcher:
        path = chart_fetcher.fetch(
            repo_ref(private_repo, "secretive", "my-repo"), None, root=tmp_path
        )
    assert rendered_chart_label(path) == "secretive-0.1.0"


def test_private_repo_with_login_from_credentials_file(
    tmp_path: Path, private_repo: ChartRepository, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "home" / ".config" / "reviewer" / "credentials.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(
        f"credentials:\n  - url: {private_repo.url}\n    username: bot\n    password: '{SECRET}'\n"
    )
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    with fetcher(tmp_path, credentials=Credentials.from_environment(os.environ)) as chart_fetcher:
        path = chart_fetcher.fetch(repo_ref(private_repo, "secretive"), "0.1.0", root=tmp_path)
    assert path.is_file()


def test_credentials_lookup_precedence(tmp_path: Path) -> None:
    listed = tmp_path / "creds.yaml"
    listed.write_text(
        "credentials:\n"
        "  - {url: 'https://charts.example.com', username: wide, password: a}\n"
        "  - {url: 'charts.example.com/team', username: narrow, password: b}\n"
    )
    credentials = Credentials.from_environment(
        {
            charts.CREDENTIALS_ENV: str(listed),
            "REVIEWER_HELM_REPO_TEAM_USERNAME": "by-name",
            "REVIEWER_HELM_HOST_GHCR_IO_USERNAME": "by-host",
        }
    )

    def user(url: str, repository: str | None = None) -> str | None:
        found = credentials.lookup(url=url, repository=repository)
        return found.username if found else None

    assert user("https://charts.example.com/team/x", "team") == "by-name"
    assert user("oci://ghcr.io/org") == "by-host"
    assert user("https://charts.example.com/team/x") == "narrow"
    assert user("https://charts.example.com/other") == "wide"
    assert user("https://charts.example.community") is None
    assert "a-password" not in repr(Login("u", "a-password"))


# --- OCI registries ----------------------------------------------------------------------------


def test_oci_reference_with_version(tmp_path: Path, registry: Registry) -> None:
    ref = ChartRef(
        ref=f"{registry.url}/charts/ocidemo", repository=f"{registry.url}/charts/ocidemo"
    )
    with fetcher(tmp_path) as chart_fetcher:
        resolved = chart_fetcher.resolve(ref, "1.2.0", root=tmp_path)
    assert resolved.version == "1.2.0"
    assert rendered_chart_label(resolved.path) == "ocidemo-1.2.0"


def test_oci_reference_with_range_and_tag(tmp_path: Path, registry: Registry) -> None:
    ref = ChartRef(
        ref=f"{registry.url}/charts/ocidemo", repository=f"{registry.url}/charts/ocidemo"
    )
    tagged = ChartRef(ref=f"{ref.ref}:1.0.0", repository=f"{ref.ref}:1.0.0")
    with fetcher(tmp_path) as chart_fetcher:
        assert chart_fetcher.resolve(ref, "^1.0.0", root=tmp_path).version == "1.2.0"
        assert chart_fetcher.resolve(ref, None, root=tmp_path).version == "2.0.0"
        assert chart_fetcher.resolve(tagged, None, root=tmp_path).version == "1.0.0"


def test_oci_repository_entry_as_helmfile_writes_it(tmp_path: Path, registry: Registry) -> None:
    # `repositories: [{name: internal, url: 127.0.0.1:PORT/charts, oci: true}]`, chart `internal/x`
    ref = ChartRef(ref="internal/ocidemo", repository=f"{registry.host}/charts")
    with fetcher(tmp_path) as chart_fetcher:
        assert chart_fetcher.resolve(ref, "~1.0", root=tmp_path).version == "1.0.0"


def test_private_registry_with_login(tmp_path: Path, private_registry: Registry) -> None:
    host = private_registry.host.replace(".", "_").replace(":", "_")  # 127_0_0_1_PORT
    env = {
        f"REVIEWER_HELM_HOST_{host}_USERNAME": "bot",
        f"REVIEWER_HELM_HOST_{host}_PASSWORD": SECRET,
    }
    ref = ChartRef(ref=f"{private_registry.url}/charts/hidden", repository="x")
    with fetcher(tmp_path, credentials=Credentials.from_environment(env)) as chart_fetcher:
        path = chart_fetcher.fetch(ref, "1.0.0", root=tmp_path)
    assert rendered_chart_label(path) == "hidden-1.0.0"


# --- dependencies ------------------------------------------------------------------------------


def parent_chart(root: Path, dependencies: str, lock: str | None = None) -> ChartRef:
    header = "apiVersion: v2\nname: parent\nversion: 0.1.0\ndependencies:\n"
    files = {"Chart.yaml": header + dependencies}
    if lock is not None:
        files["Chart.lock"] = (
            f"dependencies:\n{lock}digest: sha256:0\ngenerated: '2024-01-01T00:00:00Z'\n"
        )
    write_chart(root / "charts", "parent", "0.1.0", files)
    return ChartRef(ref="../../charts/parent", local="charts/parent")


def test_dependencies_built_from_chart_lock(tmp_path: Path, http_repo: ChartRepository) -> None:
    root = tmp_path / "repo"
    ref = parent_chart(
        root,
        f"  - name: demo\n    version: ^1.0.0\n    repository: {http_repo.url}\n",
        lock=f"  - name: demo\n    version: 1.0.0\n    repository: {http_repo.url}\n",
    )
    with fetcher(tmp_path) as chart_fetcher:
        path = chart_fetcher.fetch(ref, None, root=root)
        assert path != root / "charts/parent"
        assert rendered_chart_label(path) == "demo-1.0.0|parent-0.1.0"
    assert not (root / "charts/parent/charts").exists(), "the repository under review is untouched"


def test_dependencies_without_lock_resolve_ranges(
    tmp_path: Path, http_repo: ChartRepository, registry: Registry
) -> None:
    root = tmp_path / "repo"
    ref = parent_chart(
        root,
        f"  - name: demo\n    version: ^1.0.0\n    repository: {http_repo.url}\n"
        f"  - name: ocidemo\n    version: ~2\n    repository: {registry.url}/charts\n",
    )
    with fetcher(tmp_path) as chart_fetcher:  # working copies live as long as the fetcher
        path = chart_fetcher.fetch(ref, None, root=root)
        assert rendered_chart_label(path) == "demo-1.2.0|ocidemo-2.0.0|parent-0.1.0"


def test_vendored_dependencies_are_used_in_place(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    ref = parent_chart(
        root, "  - name: sub\n    version: 0.1.0\n    repository: https://unused.invalid\n"
    )
    write_chart(root / "charts/parent/charts", "sub", "0.1.0")
    with fetcher(tmp_path) as chart_fetcher:
        assert chart_fetcher.fetch(ref, None, root=root) == root / "charts/parent"


def test_file_dependencies_inside_the_repository(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write_chart(root / "charts", "common", "0.2.0")
    ref = parent_chart(
        root, "  - name: common\n    version: 0.2.0\n    repository: file://../common\n"
    )
    with fetcher(tmp_path) as chart_fetcher:
        assert (
            rendered_chart_label(chart_fetcher.fetch(ref, None, root=root))
            == "common-0.2.0|parent-0.1.0"
        )


# --- cache -------------------------------------------------------------------------------------


def test_cache_is_reused_within_and_across_runs(tmp_path: Path, http_repo: ChartRepository) -> None:
    ref = repo_ref(http_repo, "demo")
    with fetcher(tmp_path) as first:
        one = first.fetch(ref, "^1.0.0", root=tmp_path)
        assert first.fetch(ref, "^1.0.0", root=tmp_path) == one
        assert first.fetch(ref, "1.2.0", root=tmp_path) == one
    assert http_repo.count("index.yaml") == 1
    assert http_repo.count(".tgz") == 1
    before = len(http_repo.requests)
    with fetcher(tmp_path) as second:  # a later run: exact versions never touch the network
        assert second.fetch(ref, "1.2.0", root=tmp_path) == one
    assert len(http_repo.requests) == before
    with fetcher(tmp_path) as third:  # a range needs the index, the archive comes from the cache
        assert third.fetch(ref, "^1.0.0", root=tmp_path) == one
    assert http_repo.count("index.yaml") == 2 and http_repo.count(".tgz") == 1


def test_concurrent_releases_download_once(tmp_path: Path, http_repo: ChartRepository) -> None:
    ref = repo_ref(http_repo, "demo")
    found: list[Path] = []
    with fetcher(tmp_path) as chart_fetcher:
        threads = [
            threading.Thread(
                target=lambda: found.append(chart_fetcher.fetch(ref, "2.0.0", root=tmp_path))
            )
            for _ in range(8)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(set(found)) == 1 and len(found) == 8
    assert http_repo.count(".tgz") == 1 and http_repo.count("index.yaml") == 1


def test_offline_uses_only_the_cache(tmp_path: Path, http_repo: ChartRepository) -> None:
    ref = repo_ref(http_repo, "demo")
    with fetcher(tmp_path) as online:
        cached = online.fetch(ref, "1.0.0", root=tmp_path)
    before = len(http_repo.requests)
    with fetcher(tmp_path, offline=True) as offline:
        assert offline.fetch(ref, "1.0.0", root=tmp_path) == cached
        assert offline.fetch(ref, "^1", root=tmp_path) == cached  # ranges over cached versions
        with pytest.raises(ChartError) as missing:
            offline.fetch(ref, "2.0.0", root=tmp_path)
    assert len(http_repo.requests) == before
    assert missing.value.reason == charts.NOT_CACHED
    assert "chart 'myrepo/demo' version '2.0.0'" in str(missing.value)
    assert "--offline" in str(missing.value)


def test_cache_entries_are_named_by_their_digest(
    tmp_path: Path, http_repo: ChartRepository
) -> None:
    ref = repo_ref(http_repo, "demo")
    with fetcher(tmp_path) as chart_fetcher:
        path = chart_fetcher.fetch(ref, "1.0.0", root=tmp_path)
    assert charts.sha256_file(path) == path.stem


# --- failures ----------------------------------------------------------------------------------


def failure(
    tmp_path: Path, ref: ChartRef, version: str | None, credentials: Credentials | None = None
) -> ChartError:
    with (
        fetcher(tmp_path, credentials=credentials) as chart_fetcher,
        pytest.raises(ChartError) as caught,
    ):
        chart_fetcher.fetch(ref, version, root=tmp_path / "repo")
    error = caught.value
    assert ref.ref in str(error)
    return error


def closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_unreachable_repository(tmp_path: Path) -> None:
    error = failure(
        tmp_path, ChartRef("gone/demo", repository=f"http://127.0.0.1:{closed_port()}"), "1.0.0"
    )
    assert error.reason == charts.UNREACHABLE
    assert "index.yaml" in str(error)


def test_unreachable_registry(tmp_path: Path) -> None:
    ref = f"oci://127.0.0.1:{closed_port()}/charts/demo"
    error = failure(tmp_path, ChartRef(ref, repository=ref), "^1")
    assert error.reason == charts.UNREACHABLE


def test_not_a_repository(tmp_path: Path, http_repo: ChartRepository) -> None:
    (http_repo.directory / "index.yaml").write_text("- just a list\n")
    assert failure(tmp_path, repo_ref(http_repo, "demo"), "1.0.0").reason == charts.UNREACHABLE


@pytest.mark.parametrize("kind", ["http", "oci"])
def test_chart_not_found(
    tmp_path: Path, http_repo: ChartRepository, registry: Registry, kind: str
) -> None:
    ref = (
        repo_ref(http_repo, "nope")
        if kind == "http"
        else ChartRef(f"{registry.url}/charts/nope", repository="x")
    )
    for version in ("1.0.0", "^1"):
        error = failure(tmp_path, ref, version)
        assert error.reason == charts.CHART_NOT_FOUND, str(error)


@pytest.mark.parametrize("kind", ["http", "oci"])
def test_version_not_found(
    tmp_path: Path, http_repo: ChartRepository, registry: Registry, kind: str
) -> None:
    ref = (
        repo_ref(http_repo, "demo")
        if kind == "http"
        else ChartRef(f"{registry.url}/charts/ocidemo", repository="x")
    )
    for version in ("9.9.9", "^3", "1.3.0"):
        error = failure(tmp_path, ref, version)
        assert error.reason == charts.VERSION_NOT_FOUND, str(error)
        assert f"version '{version}'" in str(error)
    assert "not a valid version" in str(failure(tmp_path, ref, ">= one"))


def _secret_forms() -> list[str]:
    return [SECRET, base64.b64encode(f"bot:{SECRET}".encode()).decode(), "Zq81x"]


def test_bad_credentials_for_repository(tmp_path: Path, private_repo: ChartRepository) -> None:
    ref = repo_ref(private_repo, "secretive")
    missing = failure(tmp_path, ref, "0.1.0")
    assert missing.reason == charts.BAD_CREDENTIALS and "REVIEWER_HELM_REPO_" in str(missing)
    wrong = Credentials(
        {}, [(private_repo.url.removeprefix("http://") + "/", Login("bot", SECRET + "x"))]
    )
    error = failure(tmp_path, ref, "0.1.0", credentials=wrong)
    assert error.reason == charts.BAD_CREDENTIALS and "401" in str(error)
    assert not any(form in str(error) for form in _secret_forms())


def test_bad_credentials_for_registry(tmp_path: Path, private_registry: Registry) -> None:
    ref = ChartRef(f"{private_registry.url}/charts/hidden", repository="x")
    missing = failure(tmp_path, ref, "1.0.0")
    assert missing.reason == charts.BAD_CREDENTIALS
    wrong = Credentials({}, [(private_registry.host + "/", Login("bot", SECRET + "x"))])
    for version in ("1.0.0", "^1"):
        error = failure(tmp_path, ref, version, credentials=wrong)
        assert error.reason == charts.BAD_CREDENTIALS, str(error)
        assert not any(form in str(error) for form in _secret_forms())


def without_digests(server: ChartRepository) -> None:
    index = server.directory / "index.yaml"
    index.write_text(re.sub(r"(?m)^\s*digest: .*\n", "", index.read_text()))


def test_corrupt_archive(tmp_path: Path, http_repo: ChartRepository) -> None:
    (http_repo.directory / "demo-1.0.0.tgz").write_bytes(b"not a tarball")
    mismatch = failure(tmp_path, repo_ref(http_repo, "demo"), "1.0.0")
    assert mismatch.reason == charts.CORRUPT_ARCHIVE and "digest" in str(mismatch)
    without_digests(http_repo)  # nothing to check against: the archive check catches it
    garbage = failure(tmp_path, repo_ref(http_repo, "demo"), "1.0.0")
    assert garbage.reason == charts.CORRUPT_ARCHIVE and "not a gzip" in str(garbage)
    assert not list((tmp_path / "cache").rglob("*.tgz")), "nothing corrupt enters the cache"


def test_archive_of_another_chart(
    tmp_path: Path, http_repo: ChartRepository, sources: Path
) -> None:
    other = package(write_chart(sources, "other", "1.0.0"), tmp_path / "pkg")
    (http_repo.directory / "demo-1.0.0.tgz").write_bytes(other.read_bytes())
    without_digests(http_repo)
    error = failure(tmp_path, repo_ref(http_repo, "demo"), "1.0.0")
    assert error.reason == charts.CORRUPT_ARCHIVE


@pytest.mark.parametrize(
    ("dependencies", "lock", "expected"),
    [
        ("  - name: sub\n    version: 1.0.0\n", None, "no repository URL"),
        ("  - name: sub\n    version: 1.0.0\n    repository: '@stable'\n", None, "'@stable'"),
        ("  - name: demo\n    version: 1.0.0\n    repository: REPO\n", "", "not in Chart.lock"),
        ("  - name: demo\n    version: 7.0.0\n    repository: REPO\n", None, "version not found"),
        ("  - name: nope\n    version: 1.0.0\n    repository: REPO\n", None, "chart not found"),
        (
            "  - name: x\n    version: 1.0.0\n    repository: file://../../../outside\n",
            None,
            "inside the repository",
        ),
    ],
)
def test_dependency_missing(
    tmp_path: Path, http_repo: ChartRepository, dependencies: str, lock: str | None, expected: str
) -> None:
    root = tmp_path / "repo"
    ref = parent_chart(root, dependencies.replace("REPO", http_repo.url), lock)
    with fetcher(tmp_path) as chart_fetcher, pytest.raises(ChartError) as caught:
        chart_fetcher.fetch(ref, None, root=root)
    assert caught.value.reason == charts.DEPENDENCY_MISSING
    assert expected in str(caught.value)
    assert "chart '../../charts/parent'" in str(caught.value)


def test_remote_errors_are_remembered_for_the_run(
    tmp_path: Path, http_repo: ChartRepository
) -> None:
    ref = repo_ref(http_repo, "demo")
    with fetcher(tmp_path) as chart_fetcher:
        for _ in range(3):
            with pytest.raises(ChartError):
                chart_fetcher.fetch(ref, "9.0.0", root=tmp_path)
    assert http_repo.count("index.yaml") == 1


def test_default_cache_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert charts.default_cache_dir(os.environ) == tmp_path / "xdg" / "reviewer" / "charts"


def test_names_and_versions_never_form_paths(tmp_path: Path, http_repo: ChartRepository) -> None:
    assert (
        failure(tmp_path, repo_ref(http_repo, "../../etc"), "1.0.0").reason
        == charts.CHART_NOT_FOUND
    )
    index = http_repo.directory / "index.yaml"
    index.write_text(index.read_text().replace("version: 1.0.0", "version: 1.0.0/../../x"))
    error = failure(tmp_path, repo_ref(http_repo, "demo"), "1.0.0/../../x")
    assert error.reason == charts.CORRUPT_ARCHIVE and "unsafe version" in str(error)
