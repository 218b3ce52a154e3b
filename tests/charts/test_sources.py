"""Each `ChartSource` on its own, against a real HTTP chart repository and OCI registry."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from chartrepo import ChartRepository, write_chart
from registry import Registry, registry_serving

from reviewer.charts import (
    BAD_CREDENTIALS,
    CHART_NOT_FOUND,
    NOT_CACHED,
    VERSION_NOT_FOUND,
    ChartError,
    ChartSource,
    Credentials,
    Login,
)
from reviewer.charts.cache import ChartCache
from reviewer.charts.downloads import CacheSource, Downloads
from reviewer.charts.http_source import HttpSource, decode_index
from reviewer.charts.logins import Logins
from reviewer.charts.oci_source import OciSource, is_loopback, oci_reason
from reviewer.charts.policy import NetworkPolicy
from reviewer.charts.remote import Remote
from reviewer.charts.workdir import WorkDir

LOOPBACK = NetworkPolicy(allow_loopback=True)

VERSIONS = ("1.0.0", "1.2.0", "2.0.0")
SECRET = "pw-Zq81x!sensitive"
NOBODY = Logins(Credentials({}, []))


@pytest.fixture
def http_repo(tmp_path: Path) -> Iterator[ChartRepository]:
    with ChartRepository(tmp_path / "served") as server:
        server.publish(write_chart(tmp_path / "src", "demo", "1.0.0"), *VERSIONS)
        yield server


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    with registry_serving(tmp_path_factory.mktemp("oci"), "ocidemo", VERSIONS) as server:
        yield server


def http_remote(server: ChartRepository, name: str = "demo") -> Remote:
    return Remote(f"myrepo/{name}", False, server.url, name, "myrepo")


def oci_remote(server: Registry, name: str = "ocidemo") -> Remote:
    return Remote(f"{server.url}/charts/{name}", True, f"{server.url}/charts", name)


# --- HTTP ----------------------------------------------------------------------------------------


def test_http_source_resolves_ranges_reading_the_index_once(
    tmp_path: Path, http_repo: ChartRepository
) -> None:
    source: ChartSource = HttpSource(
        ChartCache(tmp_path / "cache"), NOBODY, timeout=10, policy=LOOPBACK
    )
    newest = source.download(http_remote(http_repo), None)
    ranged = source.download(http_remote(http_repo), "~1.0")
    assert (newest.version, ranged.version) == ("2.0.0", "1.0.0")
    assert newest.path.is_file() and newest.digest == newest.path.stem
    assert newest.source == http_repo.url and newest.name == "demo"
    assert http_repo.count("index.yaml") == 1


def test_http_source_takes_archives_already_cached(
    tmp_path: Path, http_repo: ChartRepository
) -> None:
    cache = ChartCache(tmp_path / "cache")
    first = HttpSource(cache, NOBODY, timeout=10, policy=LOOPBACK).download(
        http_remote(http_repo), "1.2.0"
    )
    again = HttpSource(cache, NOBODY, timeout=10, policy=LOOPBACK).download(
        http_remote(http_repo), "1.2.0"
    )
    assert again.path == first.path
    assert http_repo.count(".tgz") == 1


def test_http_source_failures_name_their_reason(tmp_path: Path, http_repo: ChartRepository) -> None:
    source = HttpSource(ChartCache(tmp_path / "cache"), NOBODY, timeout=10, policy=LOOPBACK)
    with pytest.raises(ChartError) as missing:
        source.download(http_remote(http_repo, "nope"), None)
    assert missing.value.reason == CHART_NOT_FOUND
    with pytest.raises(ChartError) as too_new:
        source.download(http_remote(http_repo), "^3")
    assert too_new.value.reason == VERSION_NOT_FOUND and "newest: 2.0.0" in str(too_new.value)


def test_http_source_keeps_the_password_out_of_errors(tmp_path: Path) -> None:
    with ChartRepository(tmp_path / "private", login=("bot", SECRET)) as server:
        server.publish(write_chart(tmp_path / "src", "demo", "1.0.0"))
        wrong = Login("bot", SECRET + "x")
        logins = Logins(Credentials({}, [(server.url.removeprefix("http://") + "/", wrong)]))
        source = HttpSource(ChartCache(tmp_path / "cache"), logins, timeout=10, policy=LOOPBACK)
        with pytest.raises(ChartError) as caught:
            source.download(http_remote(server), "1.0.0")
    assert caught.value.reason == BAD_CREDENTIALS and "rejected" in str(caught.value)
    assert SECRET not in str(caught.value)


def test_index_decoding_keeps_only_listed_charts() -> None:
    document = {
        "entries": {
            "a": [{"version": "1.0.0", "digest": "sha256:ab", "urls": ["a-1.0.0.tgz"]}],
            "b": [],
            "c": ["not a mapping"],
            "d": [{"version": "2.0.0", "urls": []}],
        }
    }
    charts = decode_index(document)
    assert charts is not None and sorted(charts) == ["a", "c", "d"]
    assert charts["a"]["1.0.0"].digest == "ab" and charts["a"]["1.0.0"].url == "a-1.0.0.tgz"
    assert charts["c"] == {}
    assert charts["d"]["2.0.0"].digest is None and charts["d"]["2.0.0"].url is None
    assert decode_index(["a list"]) is None and decode_index({"entries": []}) is None


# --- OCI -----------------------------------------------------------------------------------------


def test_oci_source_pulls_exact_versions_and_ranges(tmp_path: Path, registry: Registry) -> None:
    workdir = WorkDir()
    source = OciSource(ChartCache(tmp_path / "cache"), NOBODY, workdir, policy=LOOPBACK)
    try:
        assert source.download(oci_remote(registry), "1.2.0").version == "1.2.0"
        ranged = source.download(oci_remote(registry), "^1.0.0")
        assert ranged.version == "1.2.0" and ranged.path.is_file()
        with pytest.raises(ChartError) as missing:
            source.download(oci_remote(registry), "9.9.9")
        assert missing.value.reason == VERSION_NOT_FOUND
    finally:
        source.close()
        workdir.close()


def test_registry_hosts_and_messages() -> None:
    assert is_loopback("127.0.0.1:5000") and is_loopback("localhost") and is_loopback("[::1]")
    assert not is_loopback("ghcr.io")
    assert oci_reason("dial tcp 127.0.0.1:401: connection refused") != BAD_CREDENTIALS
    assert oci_reason("unexpected status code 401") == BAD_CREDENTIALS
    assert oci_reason("manifest unknown") == CHART_NOT_FOUND


# --- the cache alone, and routing ----------------------------------------------------------------


def test_cache_source_offers_only_what_is_cached(
    tmp_path: Path, http_repo: ChartRepository
) -> None:
    cache = ChartCache(tmp_path / "cache")
    offline = CacheSource(cache)
    with pytest.raises(ChartError) as caught:
        offline.download(http_remote(http_repo), None)
    assert caught.value.reason == NOT_CACHED and "--offline" in str(caught.value)
    HttpSource(cache, NOBODY, timeout=10, policy=LOOPBACK).download(http_remote(http_repo), "1.0.0")
    assert offline.download(http_remote(http_repo), "^1").version == "1.0.0"


def test_offline_downloads_never_reach_a_server(
    tmp_path: Path, http_repo: ChartRepository, registry: Registry
) -> None:
    cache = ChartCache(tmp_path / "cache")
    http = HttpSource(cache, NOBODY, timeout=10, policy=LOOPBACK)
    oci = OciSource(cache, NOBODY, WorkDir(), policy=LOOPBACK)
    http.download(http_remote(http_repo), "1.0.0")
    before = len(http_repo.requests)
    downloads = Downloads(cache, http=http, oci=oci, offline=True)
    assert downloads.download(http_remote(http_repo), None).version == "1.0.0"
    with pytest.raises(ChartError) as caught:
        downloads.download(oci_remote(registry), "1.0.0")
    assert caught.value.reason == NOT_CACHED
    assert len(http_repo.requests) == before


def test_downloads_remember_each_answer_for_the_run(
    tmp_path: Path, http_repo: ChartRepository
) -> None:
    cache = ChartCache(tmp_path / "cache")
    http = HttpSource(cache, NOBODY, timeout=10, policy=LOOPBACK)
    downloads = Downloads(cache, http=http, oci=http, offline=False)
    for _ in range(2):
        with pytest.raises(ChartError):
            downloads.download(http_remote(http_repo), "9.0.0")
        assert downloads.download(http_remote(http_repo), "^1").version == "1.2.0"
    assert http_repo.count("index.yaml") == 1 and http_repo.count(".tgz") == 1
    with pytest.raises(ChartError) as unsafe:
        downloads.download(http_remote(http_repo, "../etc"), "1.0.0")
    assert unsafe.value.reason == CHART_NOT_FOUND
