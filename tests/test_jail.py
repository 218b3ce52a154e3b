"""The jail's per-checkout resolver answers exactly as resolving each path from scratch."""

from __future__ import annotations

import os
from pathlib import Path

from reviewer.errors import ConfigError
from reviewer.jail import Jail, resolve_file

_SOURCES = (
    "plain.yaml",
    "dir/plain.yaml",
    "dir/inside-link.yaml",
    "dir/outside-link.yaml",
    "dir/chain.yaml",
    "dir/loop.yaml",
    "dir/fifo",
    "dir/sub",
    "dir/missing.yaml",
    "linked-dir/plain.yaml",
    "escaping-dir/secret.yaml",
    "escaping-dir/missing.yaml",
    "dir/../plain.yaml",
    "dir/../../outside/secret.yaml",
    "linked-dir/../plain.yaml",
    "escaping-dir/../secret.yaml",
    "..",
    "dir/..",
    "dir/.",
    "",
    "/x",
    "/etc/passwd",
    "/",
)


def _tree(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.yaml").write_text("token: x\n")
    root = tmp_path / "repo"
    (root / "dir" / "sub").mkdir(parents=True)
    (root / "plain.yaml").write_text("a: 1\n")
    (root / "dir" / "plain.yaml").write_text("b: 1\n")
    (root / "dir" / "inside-link.yaml").symlink_to("../plain.yaml")
    (root / "dir" / "outside-link.yaml").symlink_to(outside / "secret.yaml")
    (root / "dir" / "chain.yaml").symlink_to("inside-link.yaml")
    (root / "dir" / "loop.yaml").symlink_to("loop.yaml")
    os.mkfifo(root / "dir" / "fifo")
    (root / "linked-dir").symlink_to("dir")
    (root / "escaping-dir").symlink_to(outside)
    return root


def _outcome(resolve: object, source: str) -> str:
    assert callable(resolve)
    try:
        return f"path {resolve(source)}"
    except ConfigError as error:
        return f"refused {error.render()}"


def test_the_checkout_resolver_refuses_and_resolves_as_resolving_from_scratch(
    tmp_path: Path,
) -> None:
    root = _tree(tmp_path)
    jail = Jail(root)
    expected = {source: _outcome(lambda s: resolve_file(root, s), source) for source in _SOURCES}
    # Twice, in both orders: what the resolver remembers never changes an answer.
    for sources in (_SOURCES, tuple(reversed(_SOURCES))):
        for source in sources:
            assert _outcome(jail.resolve_file, source) == expected[source], source
    assert expected["dir/outside-link.yaml"].startswith("refused")
    assert expected["escaping-dir/secret.yaml"].startswith("refused")
    assert expected["dir/fifo"].startswith("refused")
    assert all(expected[source].startswith("refused") for source in ("/x", "/etc/passwd", "/"))
    assert expected["dir/chain.yaml"] == f"path {root.resolve() / 'plain.yaml'}"
