"""Kept side trees: real git repositories, real `reviewer diff` runs, the user's repo untouched."""

from __future__ import annotations

import fcntl
import json
import os
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from commandargs import run_cli
from conftest import GitRepo, git
from manifests_repo import write_manifests

from reviewer.checkout import git_sides
from reviewer.errors import ExitStatus
from reviewer.gitdigests import tree_digests
from reviewer.trees import SideTrees, TreesUsage, clear, default_trees_dir, usage

APP = "apps: [{template: app}]\n"


def kept(root: Path, notes: list[str], keep: int = 4) -> SideTrees:
    return SideTrees(root, note=notes.append, keep=keep)


def committed_files(repo: Path, sha: str) -> dict[str, bytes]:
    """{path: bytes} of every file a commit holds (a symlink: its target's text)."""
    listed = git(repo, "ls-tree", "-r", "--name-only", sha).splitlines()
    return {name: _blob(repo, sha, name) for name in listed}


def _blob(repo: Path, sha: str, name: str) -> bytes:
    done = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "blob", f"{sha}:{name}"], capture_output=True
    )
    return done.stdout


def tree_files(tree: Path) -> dict[str, bytes]:
    """{path: bytes} of everything under `tree` but its `.git` file (a symlink: its text)."""
    found: dict[str, bytes] = {}
    for parent, dirs, files in os.walk(tree):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(parent, d))]:
            path = Path(parent, name)
            relative = path.relative_to(tree).as_posix()
            if relative == ".git":
                continue
            found[relative] = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
    return found


def directories(tree: Path) -> set[str]:
    return {
        Path(parent, name).relative_to(tree).as_posix()
        for parent, dirs, _ in os.walk(tree)
        for name in dirs
    }


@pytest.fixture
def user_repo(tmp_path: Path) -> GitRepo:
    """The user's repository: files, a directory, an ignored pattern and a symlink, committed."""
    repo = GitRepo(tmp_path / "repo")
    repo.write("a.txt", "a\n").write("dir/b.txt", "b\n").write("dir/deep/c.txt", "c\n")
    repo.write(".gitignore", "*.log\n")
    (repo.root / "link").symlink_to("dir/b.txt")
    repo.commit("first")
    return repo


def user_state(repo: Path) -> tuple[str, ...]:
    return tuple(
        git(repo, *args)
        for args in (
            ("worktree", "list", "--porcelain"),
            ("status", "--porcelain", "--ignored"),
            ("rev-parse", "HEAD"),
            ("for-each-ref",),
            ("stash", "list"),
        )
    )


def test_a_kept_tree_is_restored_to_exactly_the_commit(user_repo: GitRepo, tmp_path: Path) -> None:
    notes: list[str] = []
    trees = kept(tmp_path / "trees", notes)
    sha = git(user_repo.root, "rev-parse", "HEAD")
    before = user_state(user_repo.root)
    with trees.checkout(user_repo.root, sha, "base") as tree:
        assert tree_files(tree) == committed_files(user_repo.root, sha)
        (tree / "a.txt").write_text("tampered\n")
        (tree / "dir/b.txt").chmod(0o755)
        (tree / "extra.txt").write_text("left over\n")
        (tree / "ignored.log").write_text("ignored\n")
        (tree / "more/inside").mkdir(parents=True)
        (tree / "more/inside/x.txt").write_text("x\n")
        (tree / "empty").mkdir()
        (tree / "link").unlink()
        (tree / "link").symlink_to("/etc/hostname")
        (tree / "dir/deep/c.txt").unlink()
        assert user_state(user_repo.root) == before
    with trees.checkout(user_repo.root, sha, "base") as again:
        assert again == tree
        assert tree_files(tree) == committed_files(user_repo.root, sha)
        assert directories(tree) == {"dir", "dir/deep"}
        assert not os.access(tree / "dir/b.txt", os.X_OK)
    assert notes == [f"base checkout: new tree {tree}", f"base checkout: reused tree {tree}"]
    assert user_state(user_repo.root) == before
    assert stat.S_IMODE((tmp_path / "trees").stat().st_mode) == 0o700


def test_a_sparse_user_checkout_still_gives_a_whole_tree(
    user_repo: GitRepo, tmp_path: Path
) -> None:
    git(user_repo.root, "sparse-checkout", "set", "--no-cone", "/dir/")
    assert not (user_repo.root / "a.txt").exists()
    sha = git(user_repo.root, "rev-parse", "HEAD")
    for _ in range(2):
        with kept(tmp_path / "trees", []).checkout(user_repo.root, sha, "base") as tree:
            assert tree_files(tree) == committed_files(user_repo.root, sha)


def test_a_kept_tree_follows_the_base_to_another_commit(user_repo: GitRepo, tmp_path: Path) -> None:
    trees = kept(tmp_path / "trees", [])
    first = git(user_repo.root, "rev-parse", "HEAD")
    user_repo.remove("dir/deep").write("a.txt", "changed\n").write("new/n.txt", "n\n")
    (user_repo.root / "link").unlink()
    (user_repo.root / "link").symlink_to("a.txt")
    (user_repo.root / "dir/deep").write_text("a file where a directory was\n")
    second = user_repo.commit("second")
    for sha in (first, second, first, second):
        with trees.checkout(user_repo.root, sha, "base") as tree:
            assert tree_files(tree) == committed_files(user_repo.root, sha)
            assert git(tree, "rev-parse", "HEAD") == sha


def test_change_detection_reads_git_ids_from_a_kept_tree(
    user_repo: GitRepo, tmp_path: Path
) -> None:
    trees = kept(tmp_path / "trees", [])
    sha = git(user_repo.root, "rev-parse", "HEAD")
    for _ in range(2):
        with trees.checkout(user_repo.root, sha, "base") as tree:
            digests = tree_digests(tree)
            assert digests is not None
            assert digests.digests["a.txt"] == "git-sha1:" + git(
                user_repo.root, "rev-parse", "HEAD:a.txt"
            )


def test_a_busy_tree_gives_way_to_a_temporary_worktree(user_repo: GitRepo, tmp_path: Path) -> None:
    notes: list[str] = []
    trees = kept(tmp_path / "trees", notes)
    sha = git(user_repo.root, "rev-parse", "HEAD")
    with (
        trees.checkout(user_repo.root, sha, "base") as tree,
        trees.checkout(user_repo.root, sha, "base") as other,
    ):
        assert other != tree
        assert tree_files(other) == committed_files(user_repo.root, sha)
        assert str(other) in git(user_repo.root, "worktree", "list")
    assert notes[-1] == "base checkout: temporary worktree (the kept tree is in use)"
    assert git(user_repo.root, "worktree", "list").count("\n") == 0


def test_an_interrupted_update_is_rebuilt(user_repo: GitRepo, tmp_path: Path) -> None:
    notes: list[str] = []
    trees = kept(tmp_path / "trees", notes)
    sha = git(user_repo.root, "rev-parse", "HEAD")
    with trees.checkout(user_repo.root, sha, "base") as tree:
        pass
    (tree.parent / "complete").unlink()  # as a run killed between two git steps leaves it
    (tree / "a.txt").write_text("half-written\n")
    os.utime(tree / "a.txt", (0, 0))  # a stat that would fool a stat check
    with trees.checkout(user_repo.root, sha, "base") as tree:
        assert tree_files(tree) == committed_files(user_repo.root, sha)
    assert notes[-1] == f"base checkout: new tree {tree}"


def test_a_failing_update_falls_back_and_removes_the_tree(
    user_repo: GitRepo, tmp_path: Path
) -> None:
    notes: list[str] = []
    trees = kept(tmp_path / "trees", notes)
    sha = git(user_repo.root, "rev-parse", "HEAD")
    with trees.checkout(user_repo.root, sha, "base") as tree:
        pass
    (tree.parent / "git/index").write_bytes(b"not an index")
    with trees.checkout(user_repo.root, sha, "base") as fallback:
        assert fallback != tree
        assert tree_files(fallback) == committed_files(user_repo.root, sha)
        assert not tree.parent.exists()
    assert notes[-1] == "base checkout: temporary worktree (updating the kept tree failed)"
    with trees.checkout(user_repo.root, sha, "base") as rebuilt:
        assert rebuilt == tree
    assert notes[-1] == f"base checkout: new tree {tree}"


def test_an_unusable_trees_directory_gives_a_temporary_worktree(
    user_repo: GitRepo, tmp_path: Path
) -> None:
    notes: list[str] = []
    (tmp_path / "trees").write_text("a file where the directory should be\n")
    sha = git(user_repo.root, "rev-parse", "HEAD")
    with kept(tmp_path / "trees", notes).checkout(user_repo.root, sha, "base") as tree:
        assert tree_files(tree) == committed_files(user_repo.root, sha)
    assert notes == [f"base checkout: temporary worktree (cannot keep trees in {tmp_path}/trees)"]
    assert git(user_repo.root, "worktree", "list").count("\n") == 0


def test_only_the_most_recently_used_repositories_keep_trees(tmp_path: Path) -> None:
    root = tmp_path / "trees"
    trees = kept(root, [], keep=2)
    repos = [GitRepo(tmp_path / f"r{n}") for n in range(4)]
    for n, repo in enumerate(repos):
        repo.write("f", f"{n}\n")
    shas = [repo.commit() for repo in repos]
    with trees.checkout(repos[0].root, shas[0], "base"):
        for repo, sha in zip(repos[1:], shas[1:], strict=True):
            with trees.checkout(repo.root, sha, "base"):
                pass
        # The repository in use is kept although it is the least recently started.
        assert len([path for path in root.iterdir() if path.is_dir()]) == 3
    with trees.checkout(repos[3].root, shas[3], "base"):
        pass
    assert len([path for path in root.iterdir() if path.is_dir()]) == 2


def test_clearing_leaves_the_trees_a_run_is_using(user_repo: GitRepo, tmp_path: Path) -> None:
    root = tmp_path / "trees"
    sha = git(user_repo.root, "rev-parse", "HEAD")
    with kept(root, []).checkout(user_repo.root, sha, "base") as tree:
        assert clear(root) == 1
        assert tree_files(tree) == committed_files(user_repo.root, sha)
        assert usage(root).repositories == 1
    assert clear(root) == 0
    assert usage(root) == TreesUsage(0, 0)


def test_head_and_merge_sides_get_their_own_trees(user_repo: GitRepo, tmp_path: Path) -> None:
    notes: list[str] = []
    trees = kept(tmp_path / "trees", notes)
    git(user_repo.root, "checkout", "--quiet", "-b", "feature")
    user_repo.write("a.txt", "feature\n")
    user_repo.commit("feature")
    git(user_repo.root, "checkout", "--quiet", "main")
    user_repo.write("dir/b.txt", "main moved\n")
    user_repo.commit("main")
    for _ in range(2):
        with git_sides(
            user_repo.root, base="main", head="feature", merge=True, checkout=trees.checkout
        ) as sides:
            assert (sides.head.root / "a.txt").read_text() == "feature\n"
            assert (sides.head.root / "dir/b.txt").read_text() == "main moved\n"
            assert (sides.base.root / "a.txt").read_text() == "a\n"
    assert [note.split(" tree ")[0] for note in notes] == [
        "base checkout: new",
        "head checkout: new",
        "merge checkout: new",
        "base checkout: reused",
        "head checkout: reused",
        "merge checkout: reused",
    ]


# --- `reviewer diff` ------------------------------------------------------------------------


@pytest.fixture
def fleet(git_repo: GitRepo) -> GitRepo:
    git_repo.write("deployments/apps/base/deployment.yaml", APP)
    for cluster in ("prod/eu", "dev/a"):
        git_repo.write(f"deployments/{cluster}/cluster.values.yaml", f"where: {cluster}\n")
        git_repo.write(f"deployments/{cluster}/apps/.keep", "")
    git_repo.commit("fleet")
    git(git_repo.root, "checkout", "--quiet", "-b", "feature")
    git_repo.write("deployments/prod/eu/cluster.values.yaml", "where: changed\n")
    return git_repo


def diff(repo: GitRepo, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[Any, str]:
    code, out, err = run_cli(
        ["diff", "--repo", str(repo.root), "--base", "main", "--format", "json", *extra], capsys
    )
    assert code == ExitStatus.OK, err
    return json.loads(out), err


def base_note(err: str) -> str:
    return next(line for line in err.splitlines() if line.startswith("base checkout: "))


def test_a_second_diff_reuses_the_base_tree_and_reports_the_same(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    before = user_state(fleet.root)
    plain, err = diff(fleet, capsys, "--no-render-cache")
    assert "checkout:" not in err
    first, err = diff(fleet, capsys)
    assert base_note(err).startswith("base checkout: new tree ")
    second, err = diff(fleet, capsys)
    assert base_note(err).startswith("base checkout: reused tree ")
    assert plain == first == second
    assert [r["status"] for r in second["releases"]].count("changed") == 1
    assert user_state(fleet.root) == before
    trees = default_trees_dir(os.environ)
    assert str(trees) in base_note(err)
    assert (
        not base_note(err)
        .removeprefix("base checkout: reused tree ")
        .startswith(str(trees.parent / "render"))
    )


def test_a_diff_follows_main_as_it_moves(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    diff(fleet, capsys)
    git(fleet.root, "stash", "--quiet")
    git(fleet.root, "checkout", "--quiet", "main")
    fleet.write("deployments/dev/b/cluster.values.yaml", "where: dev/b\n")
    fleet.write("deployments/dev/b/apps/.keep", "")
    fleet.remove("deployments/dev/a")
    fleet.commit("main moves")
    git(fleet.root, "checkout", "--quiet", "feature")
    git(fleet.root, "stash", "pop", "--quiet")
    report, err = diff(fleet, capsys)
    assert base_note(err).startswith("base checkout: reused tree ")
    assert report == diff(fleet, capsys, "--no-render-cache")[0]
    clusters = {r["cluster"]: r["status"] for r in report["releases"]}
    assert clusters == {"dev/a": "added", "dev/b": "removed", "prod/eu": "changed"}


@contextmanager
def holding(lock: Path) -> Iterator[None]:
    with lock.open("a") as file:
        fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield


def test_a_diff_while_another_run_holds_the_tree_uses_a_temporary_worktree(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    first, _ = diff(fleet, capsys)
    (lock,) = default_trees_dir(os.environ).glob("*/base.lock")
    with holding(lock):
        report, err = diff(fleet, capsys)
    assert base_note(err) == "base checkout: temporary worktree (the kept tree is in use)"
    assert report == first
    assert git(fleet.root, "worktree", "list").count("\n") == 0


def test_a_diff_after_an_interrupted_update_rebuilds_the_tree(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    first, _ = diff(fleet, capsys)
    (slot,) = default_trees_dir(os.environ).glob("*/base")
    (slot / "complete").unlink()
    planted = slot / "tree/deployments/dev/z/cluster.values.yaml"
    planted.parent.mkdir(parents=True)
    planted.write_text("where: planted\n")
    (slot / "tree/deployments/dev/z/apps").mkdir()
    report, err = diff(fleet, capsys)
    assert base_note(err).startswith("base checkout: new tree ")
    assert report == first
    assert not planted.parent.exists()


def test_a_committed_symlink_out_of_the_repository_is_still_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shop = write_manifests(GitRepo(tmp_path / "shop"))
    outside = tmp_path / "outside.yaml"
    outside.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {k: o0ps-f1le}\n"
    )
    (shop.root / "apps/web/link.yaml").symlink_to(outside)
    shop.commit("manifests")
    git(shop.root, "checkout", "--quiet", "-b", "feature")
    outputs, logs = [], []
    for extra in ((), (), ("--no-render-cache",)):
        code, out, err = run_cli(
            ["diff", "--repo", str(shop.root), "--base", "main", "--fail-on-preexisting", *extra],
            capsys,
        )
        assert code == ExitStatus.RENDER_FAILED
        assert "FAILED apps/web/link.yaml: on the target branch" in out
        assert "o0ps-f1le" not in out + err
        outputs.append(out)
        logs.append(err)
    assert base_note(logs[1]).startswith("base checkout: reused tree ")
    assert outputs[0] == outputs[1] == outputs[2]


def test_cache_prints_and_clears_the_kept_trees(
    fleet: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    trees = default_trees_dir(os.environ)
    code, out, _ = run_cli(["cache"], capsys)
    assert f"trees: {trees}: 0 repositories, 0.0 MiB\n" in out
    diff(fleet, capsys)
    code, out, _ = run_cli(["cache"], capsys)
    assert f"trees: {trees}: 1 repository, " in out
    code, out, _ = run_cli(["cache", "--clear"], capsys)
    assert code == 0
    assert f"trees: {trees}: 0 repositories, 0.0 MiB\n" in out
    assert list(trees.iterdir()) == []
    _, err = diff(fleet, capsys)
    assert base_note(err).startswith("base checkout: new tree ")
