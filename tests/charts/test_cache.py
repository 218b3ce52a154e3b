"""`ChartCache` on its own: where archives are kept, and what it refuses to keep."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from chartrepo import package, write_chart

from reviewer.charts import CORRUPT_ARCHIVE, ChartError, default_cache_dir, sha256_file
from reviewer.charts.cache import ChartCache, check_segment
from reviewer.charts.remote import Remote

SOURCE = "https://charts.example.com/stable"
REMOTE = Remote("stable/demo", False, SOURCE, "demo", "stable")


def archive(tmp_path: Path, name: str = "demo", version: str = "1.0.0") -> Path:
    """A fresh packaged chart outside the cache (store moves it in)."""
    built = package(write_chart(tmp_path / "src", name, version), tmp_path / "pkg", version)
    copy = tmp_path / "incoming" / built.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(built, copy)
    return copy


def test_stored_archives_are_found_by_version_and_digest(tmp_path: Path) -> None:
    cache = ChartCache(tmp_path / "cache")
    incoming = archive(tmp_path)
    digest = sha256_file(incoming)
    path, stored_digest = cache.store(SOURCE, "demo", "1.0.0", incoming)
    assert stored_digest == digest == path.stem
    assert path.is_relative_to(tmp_path / "cache") and not incoming.exists()
    assert cache.find(SOURCE, "demo", "1.0.0") == path
    assert cache.find(SOURCE, "demo", "1.0.0", digest) == path
    assert cache.find(SOURCE, "demo", "1.0.0", "0" * 64) is None
    assert cache.find(SOURCE, "demo", "2.0.0") is None
    assert cache.find("https://elsewhere.example.com", "demo", "1.0.0") is None
    assert cache.versions(SOURCE, "demo") == ["1.0.0"]
    assert cache.versions(SOURCE, "other") == []


def test_a_cache_outlives_its_object(tmp_path: Path) -> None:
    ChartCache(tmp_path / "cache").store(SOURCE, "demo", "1.0.0", archive(tmp_path))
    assert ChartCache(tmp_path / "cache").versions(SOURCE, "demo") == ["1.0.0"]


def test_checked_store_refuses_a_digest_mismatch(tmp_path: Path) -> None:
    cache = ChartCache(tmp_path / "cache")
    with pytest.raises(ChartError) as caught:
        cache.store_checked(REMOTE, "1.0.0", archive(tmp_path), "0" * 64)
    assert caught.value.reason == CORRUPT_ARCHIVE and "digest" in str(caught.value)
    assert cache.versions(SOURCE, "demo") == []


def test_checked_store_refuses_another_chart_or_garbage(tmp_path: Path) -> None:
    cache = ChartCache(tmp_path / "cache")
    with pytest.raises(ChartError) as other:
        cache.store_checked(REMOTE, "1.0.0", archive(tmp_path, name="other"), None)
    assert "holds chart 'other'" in str(other.value)
    garbage = tmp_path / "garbage.tgz"
    garbage.write_bytes(b"not a tarball")
    with pytest.raises(ChartError) as broken:
        cache.store_checked(REMOTE, "1.0.0", garbage, None)
    assert "not a gzip" in str(broken.value)
    assert not list((tmp_path / "cache").rglob("*.tgz"))


def test_checked_store_keeps_a_good_archive(tmp_path: Path) -> None:
    cache = ChartCache(tmp_path / "cache")
    incoming = archive(tmp_path)
    path = cache.store_checked(REMOTE, "1.0.0", incoming, sha256_file(incoming))
    assert cache.find(SOURCE, "demo", "1.0.0") == path


@pytest.mark.parametrize("segment", ["..", "../x", "a/b", "", ".hidden", "1.0..0"])
def test_unsafe_segments_are_refused(segment: str) -> None:
    with pytest.raises(ChartError) as caught:
        check_segment(segment, ref="r", what="version", reason=CORRUPT_ARCHIVE)
    assert "unsafe version" in str(caught.value)


def test_safe_segments_pass() -> None:
    assert check_segment("1.2.3-rc.1+b", ref="r", what="version", reason="x") == "1.2.3-rc.1+b"


def test_default_cache_dir_reads_only_the_mapping_given(tmp_path: Path) -> None:
    environ = {"XDG_CACHE_HOME": str(tmp_path)}
    assert default_cache_dir(environ) == tmp_path / "reviewer" / "charts"
