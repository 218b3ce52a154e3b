"""The persistent render cache (docs/cache.md): real renders of real charts, counted."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

import pytest
from agekeys import encrypt, isolate_sops_key
from conftest import FLEET_APP, FLEET_CLUSTERS, GitRepo, Repo, fleet, git
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reviewer.cli import main
from reviewer.prepare import SideRequest, prepare_sides
from reviewer.proc import Programs
from reviewer.render import RenderCache
from reviewer.render_cache import RenderStore
from reviewer.side import ProgressBar, SideOptions
from reviewer.tooling import Tooling


def render_counts(root: Path, store: Path, *, mib: int = 512) -> RenderCache:
    """Render `root` once as a command does; the run's cache, with its counters."""
    caches: list[RenderCache] = []

    def watch(index: int, cache: RenderCache) -> AbstractContextManager[ProgressBar]:
        caches.append(cache)
        return nullcontext(lambda total: nullcontext(lambda: None))

    tooling = Tooling(
        cache_dir=root.parent / "chart-cache", render_cache=store, render_cache_mib=mib, jobs=1
    )
    # The environment as the CLI's edge hands it down: sops finds the test's key there.
    options = SideOptions(programs=Programs.from_environment(os.environ))
    request = SideRequest(options=options, tooling=tooling)
    prepare_sides((root,), request, config_root=root, marker_key=None, watch=watch)
    (cache,) = caches
    return cache


def entries(store: Path) -> list[Path]:
    return sorted(store.glob("??/*.entry"))


def test_a_second_run_renders_only_what_changed(repo: Repo, tmp_path: Path) -> None:
    fleet(repo)
    store = tmp_path / "render-cache"
    cold = render_counts(repo.root, store)
    assert (cold.rendered, cold.restored, cold.stored) == (3, 0, 3)
    assert len(entries(store)) == 3
    warm = render_counts(repo.root, store)
    assert (warm.rendered, warm.restored) == (0, 3), "nothing changed: nothing renders"
    repo.write("deployments/b/cluster.values.yaml", "where: b\nreplicas: 2\n")
    changed = render_counts(repo.root, store)
    assert (changed.rendered, changed.restored) == (1, 2), "only cluster b renders"


def test_a_changed_chart_renders_again(repo: Repo, tmp_path: Path) -> None:
    fleet(repo)
    store = tmp_path / "render-cache"
    render_counts(repo.root, store)
    repo.write(
        "charts/dump/templates/extra.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: '{{ .Release.Name }}-extra'}\n",
    )
    again = render_counts(repo.root, store)
    assert (again.rendered, again.restored) == (3, 0)


def diff_report(repo: GitRepo, out: Path, *extra: str) -> str:
    with pytest.raises(SystemExit) as done:
        main(["diff", "--repo", str(repo.root), "--format", "json", "--output", str(out), *extra])
    assert done.value.code == 0
    return out.read_text(encoding="utf-8")


def test_reports_are_byte_identical_cold_and_warm(git_repo: GitRepo, tmp_path: Path) -> None:
    fleet(git_repo)
    git_repo.commit("fleet")
    git(git_repo.root, "checkout", "--quiet", "-b", "feature")
    git_repo.write("deployments/a/cluster.values.yaml", "where: a\nreplicas: 3\n")
    store = tmp_path / "render-cache"
    cold = diff_report(git_repo, tmp_path / "cold.json", "--render-cache", str(store))
    # Cluster a's release on both sides; the others are rendered by neither side.
    assert len(entries(store)) == 2, "both sides' renders of the changed release are kept"
    warm = diff_report(git_repo, tmp_path / "warm.json", "--render-cache", str(store))
    none = diff_report(git_repo, tmp_path / "none.json", "--no-render-cache")
    assert warm == cold == none
    changed = [r for r in json.loads(cold)["releases"] if r["status"] != "unchanged"]
    assert [r["cluster"] for r in changed] == ["a"]


def test_the_default_render_cache_is_beside_the_chart_cache(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    fleet(git_repo)
    git_repo.commit("fleet")
    git_repo.write("deployments/global.values.yaml", "everywhere: true\n")  # every release
    diff_report(git_repo, tmp_path / "report.json")
    default = Path(os.environ["XDG_CACHE_HOME"]) / "reviewer" / "render"
    assert len(entries(default)) == 6, "three releases, each with other values on each side"
    diff_report(git_repo, tmp_path / "report.json", "--no-render-cache")
    assert len(entries(default)) == 6


SECRET = "Zq8-Long-Secret-4711"


def test_a_release_a_secret_reaches_is_never_written(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    identity = isolate_sops_key(monkeypatch, tmp_path)
    fleet(repo)
    # Cluster a's values derive from the secret through a .gotmpl as well.
    encrypt(
        repo.root / "deployments/a",
        {"db": {"password": SECRET}},
        identity,
        name="cluster.values.sops.yaml",
    )
    repo.write(
        "deployments/a/cluster.values.yaml.gotmpl",
        'url: "postgres://app:{{ .Values.db.password }}@db"\n',
    )
    store = tmp_path / "render-cache"
    cold = render_counts(repo.root, store)
    assert cold.stored == 2, "clusters b and c are kept, cluster a is not"
    found = b"".join(path.read_bytes() for path in entries(store))
    encoded = base64.b64encode(SECRET.encode())
    assert b"where: b" in found.replace(b"\\n", b"\n")
    for needle in (SECRET.encode(), encoded, encoded.rstrip(b"="), SECRET.upper().encode()):
        assert needle not in found
    warm = render_counts(repo.root, store)
    assert (warm.rendered, warm.restored) == (2, 2), "cluster a renders (and its twin) each time"


def test_a_release_spelling_a_known_secret_is_never_written(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A secret copied verbatim into a plain file passes the twins; it still stays off disk."""
    identity = isolate_sops_key(monkeypatch, tmp_path)
    fleet(repo)
    encrypt(
        repo.root / "deployments/a",
        {"db": {"password": SECRET}},
        identity,
        name="cluster.values.sops.yaml",
    )
    repo.write("deployments/b/cluster.values.yaml", f"where: b\ncopied: {SECRET}\n")
    store = tmp_path / "render-cache"
    assert render_counts(repo.root, store).stored == 1, "only cluster c is kept"
    found = b"".join(path.read_bytes() for path in entries(store))
    assert b"where: c" in found.replace(b"\\n", b"\n")
    assert SECRET.encode() not in found


def test_corrupt_and_foreign_entries_are_ignored(repo: Repo, tmp_path: Path) -> None:
    fleet(repo)
    store = tmp_path / "render-cache"
    render_counts(repo.root, store)
    first, second, third = entries(store)
    data = first.read_bytes()
    first.write_bytes(data[: len(data) // 2])  # truncated
    header, _, body = second.read_bytes().partition(b"\n")
    second.write_bytes(header + b"\n" + body.replace(b"where", b"WHERE"))  # altered content
    third.write_bytes(data)  # another entry's content under this name
    again = render_counts(repo.root, store)
    assert (again.rendered, again.restored) == (3, 0)
    assert again.stored == 3, "each is written anew"
    assert render_counts(repo.root, store).restored == 3


def test_the_size_bound_evicts_the_least_recently_used(repo: Repo, tmp_path: Path) -> None:
    fleet(repo)
    store = tmp_path / "render-cache"
    render_counts(repo.root, store)
    paths = entries(store)
    size = sum(path.stat().st_size for path in paths)
    for age, path in enumerate(paths):
        os.utime(path, (1_000_000 + age, 1_000_000 + age))
    bounded = RenderStore(store, max_bytes=size - 1)
    assert bounded.trim() == 1
    assert entries(store) == paths[1:], "the oldest entry goes"
    assert bounded.usage().size <= size - 1


def test_a_run_leaves_the_cache_within_its_bound(repo: Repo, tmp_path: Path) -> None:
    fleet(repo)
    # About 0.4 MiB of output per release: three do not fit in 1 MiB.
    for cluster in FLEET_CLUSTERS:
        blob = cluster * 400_000
        repo.write(
            f"deployments/{cluster}/cluster.values.yaml", f"where: {cluster}\nblob: {blob}\n"
        )
    store = tmp_path / "render-cache"
    cache = render_counts(repo.root, store, mib=1)
    assert cache.stored == 3
    assert 0 < len(entries(store)) < 3
    assert RenderStore(store, max_bytes=0).usage().size <= 1024 * 1024


def test_concurrent_writers_leave_only_whole_entries(repo: Repo, tmp_path: Path) -> None:
    fleet(repo)
    for cluster in ("d", "e", "f", "g"):
        repo.write(f"deployments/{cluster}/apps/web/deployment.yaml", FLEET_APP)
    store = tmp_path / "render-cache"
    command = [
        sys.executable,
        "-m",
        "reviewer",
        "render",
        str(repo.root),
        "--jobs",
        "1",
        "--render-cache",
        str(store),
        "--cache-dir",
        str(tmp_path / "charts"),
    ]
    runs = [
        subprocess.Popen([*command, "--out", str(tmp_path / f"out{n}")], stderr=subprocess.PIPE)
        for n in range(3)
    ]
    for run in runs:
        _, err = run.communicate(timeout=300)
        assert run.returncode == 0, err.decode()
    assert len(entries(store)) == 7
    assert not list(store.glob("??/.tmp-*")), "no temporary file is left behind"
    warm = render_counts(repo.root, store)
    assert (warm.rendered, warm.restored) == (0, 7), "every entry written concurrently is whole"
    subprocess.run([*command, "--out", str(tmp_path / "warm")], check=True, capture_output=True)
    outputs = [tree(tmp_path / name) for name in ("out0", "out1", "out2", "warm")]
    assert outputs[0] == outputs[1] == outputs[2] == outputs[3]


def tree(root: Path) -> dict[Path, bytes]:
    return {path.relative_to(root): path.read_bytes() for path in root.rglob("*") if path.is_file()}


def test_the_cache_command_shows_and_clears_the_render_cache(
    repo: Repo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet(repo)
    store = tmp_path / "render-cache"
    render_counts(repo.root, store)
    with pytest.raises(SystemExit) as done:
        main(["cache", "--render-cache", str(store)])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"{store}: 3 entries, ")
    with pytest.raises(SystemExit):
        main(["cache", "--render-cache", str(store), "--clear"])
    assert capsys.readouterr().out.startswith(f"{store}: 0 entries, ")
    assert entries(store) == []


def test_a_warm_run_says_its_releases_came_from_the_render_cache(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet(git_repo)
    git_repo.commit("fleet")
    git_repo.write("deployments/global.values.yaml", "everywhere: true\n")  # every release
    store = tmp_path / "render-cache"
    diff_report(git_repo, tmp_path / "cold.json", "--render-cache", str(store))
    capsys.readouterr()
    diff_report(git_repo, tmp_path / "warm.json", "--render-cache", str(store))
    err = capsys.readouterr().err
    assert "base: 0 release(s) rendered, 3 taken from the render cache" in err
    assert "same chart and values as one already rendered" not in err.split("head:")[0]


def test_entries_are_still_written_when_the_cache_is_cleared_or_a_name_is_taken(
    tmp_path: Path,
) -> None:
    store = RenderStore(tmp_path / "render", max_bytes=1 << 20)
    assert store.save_data("one", {"n": 1})
    store.clear()  # e.g. `reviewer cache clear` while a review runs
    assert store.save_data("one", {"n": 11})  # into the directory just removed
    assert store.save_data("two", {"n": 2})
    # A temporary file left by a killed process whose id this process now has.
    key = store.key("three")
    directory = tmp_path / "render" / key[:2]
    directory.mkdir(parents=True, exist_ok=True)
    for counter in range(10):
        (directory / f".tmp-{os.getpid()}-{counter}").write_text("stale")
    assert store.save_data("three", {"n": 3})
    assert (store.load_data("two"), store.load_data("three")) == ({"n": 2}, {"n": 3})
    assert store.load_data("one") == {"n": 11}


@pytest.mark.parametrize(
    "value",
    [
        {"huge": 2**70 + 1, "negative": -(2**64) - 1, "top": 2**64 - 1},  # beyond 64 bits
        {"nested": [1.5, -0.0, 1e-300, None, True, "é", {"": []}]},
    ],
)
def test_stored_data_is_read_back_as_written(tmp_path: Path, value: object) -> None:
    store = RenderStore(tmp_path / "store", max_bytes=1 << 20)
    if not store.save_data("digest", value):
        pytest.fail("not stored")
    assert store.load_data("digest") == value


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=_JSON)
def test_any_stored_data_is_read_back_with_its_types(tmp_path: Path, value: object) -> None:
    store = RenderStore(tmp_path / "any", max_bytes=1 << 20)
    assert store.save_data("digest", value)
    # Compared as JSON text: 1 and 1.0, or 0.0 and -0.0, are equal but not the same data.
    assert json.dumps(store.load_data("digest")) == json.dumps(value)


def test_an_entry_that_cannot_be_forgotten_takes_the_cache_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RenderStore(tmp_path / "store", max_bytes=1 << 20)
    assert store.save_data("spelling", {"a": 1}) and store.save_data("other", {"b": 2})
    unlink = Path.unlink

    def refused(path: Path, missing_ok: bool = False) -> None:
        if path.name.endswith(".entry"):
            raise PermissionError(13, "Permission denied", str(path))  # as a read-only mount
        unlink(path, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", refused)
    store.forget("spelling")
    monkeypatch.undo()
    assert store.load_data("spelling") is None
    assert store.load_data("other") is None, "nothing of the cache is kept"
