"""Which files differ between the sides: read from git, the same answer as hashing every file.

Each test builds a real repository, checks its commit out into a worktree (the base side,
as `reviewer diff` does) and edits the working tree (the head side); the changes read
from git must equal those hashing every file gives, symlinks, ignored files,
conversions and submodules included.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import GitRepo, git
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reviewer.changes import Changes, changes_between, hashed_changes
from reviewer.checkout import ignored_paths, worktree
from reviewer.filedigests import file_digests
from reviewer.gitdigests import tree_digests


@contextmanager
def _base(repo: GitRepo) -> Iterator[Path]:
    """The last commit checked out into a worktree, as the base side is."""
    with worktree(repo.root, git(repo.root, "rev-parse", "HEAD")) as path:
        yield path


def _same(base: Path, head: Path, *, plain: bool = False) -> Changes:
    """The changes from git, checked against hashing every file of both sides."""
    ignored = () if plain else ignored_paths(head)  # a plain directory ignores nothing
    found = changes_between(base, head, ignored=ignored)
    assert _decided(found) == _decided(hashed_changes(base, head, ignored=ignored))
    return found


def _decided(changes: Changes) -> tuple[object, ...]:
    """All but the digests themselves, which differ in kind (blob ids, sha256)."""
    sides = tuple(frozenset(side) for side in changes.sides)
    return (changes.files, changes.reported, changes.known, changes.dirty, sides)


def _repo(tmp_path: Path, files: dict[str, str]) -> GitRepo:
    repo = GitRepo(tmp_path / "repo")
    repo.write_all(files)
    repo.commit("base")
    return repo


FLEET = {
    "deployments/c1/cluster.values.yaml": "where: c1\n",
    "deployments/c1/apps/web/deployment.yaml": "apps: [{template: app}]\n",
    "deployments/c1/apps/web/values.yaml": "replicas: 1\n",
    "deployments/c2/cluster.values.yaml": "where: c2\n",
    "library/common.yaml": "common: 1\n",
    "README.md": "fleet\n",
}


def test_edits_additions_removals_and_ignored_files_are_what_hashing_finds(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path, {**FLEET, ".gitignore": "*.local.yaml\nbuild/\n"})
    repo.write("deployments/c1/cluster.values.yaml", "where: c9\n")  # same size, right away
    repo.write("deployments/c2/apps/api/deployment.yaml", "apps: []\n")  # untracked
    repo.write("deployments/c1/secrets.local.yaml", "token: x\n")  # ignored
    repo.write("build/out/all.yaml", "kind: List\n")  # in an ignored directory
    repo.remove("README.md")
    os.chmod(repo.root / "library/common.yaml", 0o755)  # the mode alone is no change
    with _base(repo) as base:
        assert tree_digests(base) is not None and tree_digests(repo.root) is not None
        found = _same(base, repo.root)
    assert found.files == {
        "deployments/c1/cluster.values.yaml",
        "deployments/c2/apps/api/deployment.yaml",
        "deployments/c1/secrets.local.yaml",
        "build/out/all.yaml",
        "README.md",
    }
    assert "deployments/c1/secrets.local.yaml" not in found.reported
    assert "build/out/all.yaml" not in found.reported
    assert "library" in found.known and not found.touches("library")


def test_staged_intent_to_add_and_flagged_files_are_read_as_in_the_working_tree(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path, FLEET)
    repo.write("library/common.yaml", "common: 2\n")
    git(repo.root, "add", "library/common.yaml")
    repo.write("library/common.yaml", "common: 1\n")  # staged, then edited back
    repo.write("library/new.yaml", "new: 1\n")
    git(repo.root, "add", "--intent-to-add", "library/new.yaml")
    git(repo.root, "rm", "--cached", "--quiet", "README.md")
    git(repo.root, "add", "--intent-to-add", "README.md")  # the index holds no content
    git(repo.root, "update-index", "--assume-unchanged", "deployments/c2/cluster.values.yaml")
    repo.write("deployments/c2/cluster.values.yaml", "where: c3\n")
    git(repo.root, "update-index", "--skip-worktree", "deployments/c1/apps/web/values.yaml")
    repo.remove("deployments/c1/apps/web/values.yaml")
    with _base(repo) as base:
        found = _same(base, repo.root)
    assert found.files == {
        "library/new.yaml",
        "deployments/c2/cluster.values.yaml",
        "deployments/c1/apps/web/values.yaml",
    }


def test_links_are_followed_inside_the_checkout_and_known_by_their_text_outside(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text("outside: 1\n", encoding="utf-8")
    repo = _repo(tmp_path, FLEET)
    links = {
        "deployments/c2/values.yaml": "../../library/common.yaml",
        "deployments/c2/outside.yaml": str(outside),
        "deployments/c3": "c1",
        "deployments/broken.yaml": "missing.yaml",
    }
    for name, target in links.items():
        (repo.root / name).symlink_to(target)
    repo.commit("links")
    repo.write("library/common.yaml", "common: 2\n")  # the link's target, not the link
    outside.write_text("outside: 2\n", encoding="utf-8")  # never read
    with _base(repo) as base:
        found = _same(base, repo.root)
    assert found.files == {"library/common.yaml", "deployments/c2/values.yaml"}
    assert "deployments/c2/outside.yaml" in found.known
    assert "deployments/c3/cluster.values.yaml" not in found.known  # a linked directory


def test_a_directory_replaced_by_a_link_hides_the_files_under_it(tmp_path: Path) -> None:
    repo = _repo(tmp_path, FLEET)
    shutil.rmtree(repo.root / "deployments/c1")
    (repo.root / "deployments/c1").symlink_to("c2")
    (repo.root / "library/common.yaml").unlink()
    (repo.root / "library/common.yaml").symlink_to("../README.md")
    with _base(repo) as base:
        found = _same(base, repo.root)
        assert "deployments/c1/cluster.values.yaml" in found.files
        assert "deployments/c1/cluster.values.yaml" not in _known_on(repo.root)
        assert "library/common.yaml" in found.files
        shutil.rmtree(repo.root / "deployments/c2")
        (repo.root / "deployments/c2").symlink_to("c2")  # a loop git cannot look through
        assert "deployments/c2/cluster.values.yaml" in _same(base, repo.root).files


def _known_on(root: Path) -> set[str]:
    digests = tree_digests(root)
    assert digests is not None
    return set(digests.digests)


def test_a_side_inside_the_repository_sees_only_its_own_files(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {**FLEET, ".gitignore": "*.local.yaml\n"})
    repo.write("README.md", "edited outside the side\n")
    repo.write("deployments/c1/cluster.values.yaml", "where: c9\n")
    repo.write("deployments/c2/a.local.yaml", "ignored: 1\n")
    with _base(repo) as base:
        found = _same(base / "deployments", repo.root / "deployments")
    assert found.files == {"c1/cluster.values.yaml", "c2/a.local.yaml"}
    assert found.reported == ("c1/cluster.values.yaml",)


def test_converted_line_endings_and_expanded_keywords_are_compared_as_checked_out(
    tmp_path: Path,
) -> None:
    attributes = "*.txt text eol=crlf\n*.id ident\n"
    repo = _repo(tmp_path, {**FLEET, ".gitattributes": attributes, "a.txt": "a\nb\n"})
    repo.write("b.id", "$Id$\n")  # the working tree keeps the keyword, a checkout expands it
    repo.commit("keywords")
    with _base(repo) as base:
        assert (base / "a.txt").read_bytes() == b"a\r\nb\r\n"
        found = _same(base, repo.root)
    assert found.files == {"a.txt", "b.id"}


def test_an_edited_attributes_file_makes_the_files_it_governs_hashed(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {**FLEET, ".gitattributes": "*.yaml eol=crlf\n"})
    git(repo.root, "rm", "--cached", "-r", "--quiet", ".")
    git(repo.root, "reset", "--hard", "--quiet")  # the working tree now has CRLF files
    _settle(repo)
    repo.write(".gitattributes", "# conversions dropped\n")  # checked out under the old rule
    with _base(repo) as base:
        found = _same(base, repo.root)
    assert found.files == {".gitattributes"}
    repo.remove(".gitattributes")
    with _base(repo) as base:
        assert _same(base, repo.root).files == {".gitattributes"}


def _settle(repo: GitRepo) -> None:
    """Date the working tree's files back, so git trusts their recorded stat (as it does
    for a checkout older than a second) instead of comparing their content."""
    for path in repo.root.rglob("*"):
        if ".git" not in path.parts and path.is_file():
            os.utime(path, (1_000_000_000, 1_000_000_000))
    git(repo.root, "update-index", "-q", "--refresh")


def test_configured_line_ending_conversion_falls_back_to_hashing(tmp_path: Path) -> None:
    repo = _repo(tmp_path, FLEET)
    git(repo.root, "config", "core.autocrlf", "true")
    with _base(repo) as base:
        assert tree_digests(base) is None
        # The base worktree is checked out with CRLF endings, the head kept LF: hashing
        # sees the bytes differ, and an edit is among them.
        (repo.root / "README.md").write_bytes(b"edited\n")
        assert "README.md" in _same(base, repo.root).files


def test_submodules_and_nested_repositories_fall_back_to_hashing(tmp_path: Path) -> None:
    repo = _repo(tmp_path, FLEET)
    nested = GitRepo(repo.root / "vendor/lib")
    nested.write("chart.yaml", "name: lib\n")
    nested.commit("lib")
    assert tree_digests(repo.root) is None  # an untracked repository inside
    commit = git(nested.root, "rev-parse", "HEAD")
    git(repo.root, "update-index", "--add", "--cacheinfo", f"160000,{commit},vendor/lib")
    repo.commit("submodule")
    with _base(repo) as base:
        assert tree_digests(base) is None
        nested.write("chart.yaml", "name: lib2\n")
        found = _same(base, repo.root)
    assert found.files == {"vendor/lib/chart.yaml"}


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_a_file_hashed_on_one_side_equals_its_blob_on_the_other(
    tmp_path: Path, object_format: str
) -> None:
    (tmp_path / "repo").mkdir()
    git(tmp_path / "repo", "init", "--quiet", f"--object-format={object_format}")
    repo = GitRepo(tmp_path / "repo")  # initialised again: the format stays
    repo.write_all(FLEET)
    repo.commit("base")
    git(repo.root, "rm", "--cached", "--quiet", "library/common.yaml")  # untracked, same bytes
    repo.write("README.md", "fleet\n")  # rewritten, same bytes
    # Its sha256 is the blob id of README.md in a sha256 repository: the ids are named apart.
    (tmp_path / "forged").write_bytes(b"blob 6\0fleet\n")
    with _base(repo) as base:
        digests = tree_digests(base)
        assert digests is not None and digests.object_format == object_format
        assert _same(base, repo.root).files == set()
        assert file_digests(tmp_path)["forged"] not in digests.digests.values()


def test_plain_directories_and_two_repositories_are_compared_by_content(tmp_path: Path) -> None:
    repo = _repo(tmp_path, FLEET)
    plain = tmp_path / "plain"
    shutil.copytree(repo.root, plain, ignore=shutil.ignore_patterns(".git"))
    (plain / "README.md").write_text("plain\n", encoding="utf-8")
    assert tree_digests(plain) is None
    other = GitRepo(tmp_path / "other")
    other.write_all({**FLEET, "README.md": "other\n"})
    other.commit("unrelated history")
    with _base(repo) as base:
        assert _same(base, plain, plain=True).files == {"README.md"}
        assert _same(base, other.root).files == {"README.md"}


def test_a_side_whose_directory_name_breaks_the_line_is_compared_too(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "odd\nname", FLEET)
    repo.write("README.md", "edited\n")
    assert tree_digests(repo.root) is None  # git's answer cannot be read back: hashed
    with _base(repo) as base:
        assert _same(base, repo.root).files == {"README.md"}


_NAMES = st.sampled_from(
    ["a.yaml", "b/c.yaml", "b/d/e.yaml", "f/g.yaml", ".gitignore", "b/.gitattributes"]
)
_TEXTS = st.sampled_from(["x: 1\n", "x: 2\n", "y: 1\n", "*.yaml\n", "f/\n", "* eol=crlf\n"])
_EDITS = st.lists(
    st.tuples(
        st.sampled_from(["write", "remove", "link", "dirlink", "stage", "chmod"]),
        _NAMES,
        _TEXTS,
        _NAMES,
    ),
    max_size=6,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(files=st.dictionaries(_NAMES, _TEXTS, min_size=1), edits=_EDITS)
def test_any_small_tree_and_edits_give_what_hashing_gives(
    tmp_path_factory: pytest.TempPathFactory,
    files: dict[str, str],
    edits: list[tuple[str, str, str, str]],
) -> None:
    repo = GitRepo(tmp_path_factory.mktemp("tree") / "repo")
    repo.write_all(files)
    repo.commit("base")
    for edit in edits:
        _apply(repo, *edit)
    with _base(repo) as base:
        _same(base, repo.root)


def _apply(repo: GitRepo, action: str, name: str, text: str, other: str) -> None:
    if action == "dirlink":  # the file's directory becomes a link to the other's
        name, other = os.path.dirname(name) or "a.yaml", os.path.dirname(other)
    path = repo.root / name
    _clear(repo.root, path)
    if action == "remove":
        return
    if action in ("link", "dirlink"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(os.path.relpath(repo.root / other, path.parent))
        return
    repo.write(name, text)
    if action == "stage":
        git(repo.root, "add", "--force", name)
    if action == "chmod":
        os.chmod(path, 0o755)


def _clear(root: Path, path: Path) -> None:
    """Nothing at `path`, and no link on the way to it."""
    for parent in reversed(path.relative_to(root).parents):
        if (root / parent).is_symlink():
            (root / parent).unlink()
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
