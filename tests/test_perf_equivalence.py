"""Fast paths change how much work a review does, never what it reports.

Each fast path (a cache of something a side reads or resolves more than once) can be
switched back to the plain computation it replaces; the JSON report of a small fleet
must come out byte for byte the same either way.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
from agekeys import sops_decoder
from conftest import GitRepo, Repo, git
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from reviewer import (
    capabilities,
    gotmpl,
    jail,
    limits,
    plan_commands,
    plan_parts,
    render,
    yamlemit,
    yamlio,
)
from reviewer import values as values_mod
from reviewer.capabilities import Capabilities
from reviewer.charts import ChartFetcher, ResolvedChart
from reviewer.cli import main
from reviewer.diff import split
from reviewer.discover import Cluster
from reviewer.errors import ConfigError, ExitStatus
from reviewer.gotmpl import TemplateRenderer, TemplateRequest
from reviewer.paths import CHECKOUT_ROOT, inside
from reviewer.plan import Planner, ReleasePlan
from reviewer.sops import KeylessMode
from reviewer.values import Values, ValuesLoader
from reviewer.visible import shell_words

EXAMPLE = Path(__file__).parent.parent / "examples" / "fleet"


def _read_every_time(self: ValuesLoader, source: str) -> str:
    jail.resolve_file(self.root, source)
    return yamlio.read_text(self.root / source, source=source)


def _stat_every_time(self: ValuesLoader, source: str) -> bool:
    return (self.root / source).is_file()


def _resolve_every_time(
    release: ReleasePlan, root: Path, fetcher: ChartFetcher, cache: render.RenderCache
) -> ResolvedChart:
    return fetcher.resolve(release.chart, release.version, root=root)


def _no_prefetch(self: TemplateRenderer, requests: Iterable[TemplateRequest]) -> None:
    return None


def _capabilities_every_time(self: Planner, cluster: Cluster) -> tuple[Capabilities, str | None]:
    return capabilities.load_cluster(self.fleet.root, cluster.levels[-1].path)


Slow = Callable[[pytest.MonkeyPatch], None]

SLOW_PATHS: dict[str, Slow] = {
    "values files read once per side": lambda mp: mp.setattr(
        ValuesLoader, "read_text", _read_every_time
    ),
    "directories listed once per side": lambda mp: mp.setattr(
        ValuesLoader, "is_file", _stat_every_time
    ),
    "local charts resolved once per side": lambda mp: mp.setattr(
        render, "_resolved", _resolve_every_time
    ),
    "objects written without ruamel.yaml": lambda mp: mp.setattr(
        yamlio, "dump", yamlio.dump_with_ruamel
    ),
    "Go templates rendered one per round trip": lambda mp: mp.setattr(
        TemplateRenderer, "prefetch", _no_prefetch
    ),
    "capabilities read for every release": lambda mp: mp.setattr(
        Planner, "_cluster_capabilities", _capabilities_every_time
    ),
}


@pytest.fixture
def changed_example(git_repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> GitRepo:
    """The example fleet committed, then changed at several levels in the working tree."""
    monkeypatch.setenv("SOPS_AGE_KEY_FILE", str(EXAMPLE / "demo-age-key.txt"))
    shutil.copytree(EXAMPLE, git_repo.root, dirs_exist_ok=True)
    git_repo.commit("example fleet")
    changes = {
        "deployments/global.values.yaml": ("  TZ: UTC\n", "  TZ: Europe/Paris\n"),
        "deployments/production/group.values.yaml": ("replicaCount: 3\n", "replicaCount: 5\n"),
    }
    for path, (old, new) in changes.items():
        file = git_repo.root / path
        file.write_text(file.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    return git_repo


def _report(repo: GitRepo, out: Path, jobs: int = 1) -> bytes:
    with pytest.raises(SystemExit) as done:
        main(
            [
                "diff",
                "--repo",
                str(repo.root),
                "--base",
                "main",
                "--format",
                "json",
                "--output",
                str(out),
                "--jobs",
                str(jobs),
            ]
        )
    assert done.value.code in (ExitStatus.OK, ExitStatus.CHANGES)
    return out.read_bytes()


@pytest.mark.parametrize("slow", [*SLOW_PATHS, "all"])
def test_reports_are_identical_with_and_without_the_fast_path(
    changed_example: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slow: str
) -> None:
    fast = _report(changed_example, tmp_path / "fast.json")
    with monkeypatch.context() as patched:
        for name, switch in SLOW_PATHS.items():
            if slow in (name, "all"):
                switch(patched)
        plain = _report(changed_example, tmp_path / "plain.json")
    assert json.loads(fast)["summary"]["releases"]["changed"] > 0
    assert fast == plain


@pytest.mark.parametrize("everywhere", [True, False])
def test_sides_planned_in_two_processes_report_as_planned_in_one(
    changed_example: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, everywhere: bool
) -> None:
    """Both sides split between two processes (one deployment to plan is enough here, and
    the example's clusters fall in both shares): SOPS secrets, redaction and order are
    unchanged, and so is what the head side takes from the base side when the change
    leaves some deployments alone (`everywhere=False`: the production group only)."""
    if not everywhere:
        global_values = changed_example.root / "deployments/global.values.yaml"
        git(changed_example.root, "checkout", "--", str(global_values))
    one = _report(changed_example, tmp_path / "one.json")
    monkeypatch.setattr(plan_parts, "SPLIT_AT", 1)
    two = _report(changed_example, tmp_path / "two.json", jobs=2)
    releases = json.loads(one)["summary"]["releases"]
    # Most releases change with the global values; most stay with the group's alone.
    assert (releases["changed"] > releases["unchanged"]) is everywhere
    assert two == one


def test_objects_diffed_in_two_processes_report_as_diffed_in_one(
    changed_example: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every changed object counts towards the split here: half are diffed elsewhere."""
    one = _report(changed_example, tmp_path / "one.json")
    monkeypatch.setattr(split, "SPLIT_AT", 1)
    two = _report(changed_example, tmp_path / "two.json", jobs=2)
    assert json.loads(one)["summary"]["releases"]["changed"] > 1
    assert two == one


# -- normalised YAML: the direct writer against ruamel.yaml ------------------------------

_ALPHABET = st.sampled_from(list("abcXYZ019 :#-_./\n'\"{}[],&*!|>%@`?~=\té\u2028\x85😀<\\"))
_TEXT = st.one_of(
    st.text(_ALPHABET, max_size=12),
    st.sampled_from(
        [
            *("true", "null", "y", "no", "On", "1.5", "0x1F", "1_000", "2024-01-01", "", "~"),
            *("-", "---", "...", "a: b", "x\n\n", " x", "x ", "x \ny", "\nx", "\n", "a b:c d"),
        ]
    ),
)
_SCALAR = st.one_of(_TEXT, st.integers(), st.floats(), st.booleans(), st.none())
_TREE = st.recursive(
    _SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_TEXT, inner, max_size=4)),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_TEXT, _TREE, min_size=1, max_size=5))
def test_normalised_yaml_is_what_ruamel_writes(document: dict[str, Any]) -> None:
    assert yamlio.dump(document) == yamlio.dump_with_ruamel(document)


def test_rendered_objects_are_written_directly_and_identically(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SOPS_AGE_KEY_FILE", str(EXAMPLE / "demo-age-key.txt"))
    snapshot = Repo(EXAMPLE).render(secrets=sops_decoder(keyless=KeylessMode.NEVER))
    bodies = [resource.body for release in snapshot.releases for resource in release.resources]
    assert len(bodies) > 50
    written = [yamlemit.block_yaml(body, yamlio._spell) for body in bodies]
    assert written == [yamlio.dump_with_ruamel(body) for body in bodies]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(_TEXT, _TREE, min_size=1, max_size=4), min_size=2, max_size=4))
def test_spellings_remembered_across_documents_change_nothing(
    documents: list[dict[str, Any]],
) -> None:
    # Each string is spelled once and then remembered, as a value and as a key: the
    # documents share strings, swapped between keys and values, and are written twice.
    values = [value for document in documents for value in document.values()]
    swapped = {str(value): key for document in documents for key, value in document.items()}
    for document in [*documents, swapped, dict.fromkeys(map(str, values), "x"), *documents]:
        assert yamlio.dump(document) == yamlio.dump_with_ruamel(document)


def test_a_long_value_seen_first_is_still_a_complex_key_later() -> None:
    long = "k" * 130
    assert yamlio.dump({"a": long}) == yamlio.dump_with_ruamel({"a": long})
    assert yamlio.dump({long: "a"}) == yamlio.dump_with_ruamel({long: "a"})
    assert yamlio.dump({long: "a"}).startswith("? ")


# The plain computations that planning's hot paths replaced, kept as oracles.


def _merge_as_written_first(lower: Mapping[str, Any], higher: Mapping[str, Any]) -> Values:
    result = dict(lower)
    for key, value in higher.items():
        below = result.get(key)
        if isinstance(value, dict) and isinstance(below, dict):
            result[key] = _merge_as_written_first(below, value)
        else:
            result[key] = value
    return result


def _shape(value: Any, given: set[int]) -> Any:
    """`value` with its order, types and which maps and lists it shares with the inputs."""
    if isinstance(value, (dict, list)) and id(value) in given:
        return ("shared", id(value))
    if isinstance(value, dict):
        return ("dict", [(repr(key), _shape(item, given)) for key, item in value.items()])
    if isinstance(value, list):
        return ("list", [_shape(item, given) for item in value])
    return ("scalar", type(value).__name__, repr(value))


def _containers(*values: Any) -> set[int]:
    found: set[int] = set()
    stack = list(values)
    while stack:
        item = stack.pop()
        if isinstance(item, (dict, list)):
            found.add(id(item))
            stack.extend(item.values() if isinstance(item, dict) else item)
    return found


_MAP = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), _TREE, max_size=4)


@settings(max_examples=400, deadline=None)
@given(_MAP, _MAP)
def test_merge_answers_as_the_plain_merge_did(lower: Values, higher: Values) -> None:
    # Same keys in the same order, same values, and the same maps shared with the inputs.
    given_ids = _containers(lower, higher)
    new = values_mod.merge(lower, higher)
    old = _merge_as_written_first(lower, higher)
    assert _shape(new, given_ids) == _shape(old, given_ids)
    assert repr(new) == repr(old)


def _too_deep_as_written_first(value: object, limit: int) -> bool:
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: list[object] = list(item.values())
        elif isinstance(item, list):
            children = list(item)
        else:
            continue
        if depth >= limit and children:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


@settings(max_examples=400, deadline=None)
@given(_TREE, st.integers(min_value=0, max_value=5))
def test_too_deep_answers_as_the_plain_walk_did(value: Any, limit: int) -> None:
    assert limits.too_deep(value, limit) == _too_deep_as_written_first(value, limit)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_TEXT, st.text()), min_size=3, max_size=3))
def test_remembered_quoting_is_shell_words(words: list[str]) -> None:
    """The reproduce command a report prints quotes its words as `shell_words` does (as
    `shlex.join` does, for printable words)."""
    root, cluster, deployment = words
    argv = ["reviewer", "render", root, "--cluster", cluster, "--deployment", deployment]
    expected = f'out=$(mktemp -d) && {shell_words(argv)} --out "$out"'
    assert plan_commands.render_command(root, cluster, deployment) == expected
    again = plan_commands.render_command(root, cluster, deployment)
    assert again == expected, "and again, from the memo"
    if all(word.isprintable() for word in words):
        assert again == f'out=$(mktemp -d) && {shlex.join(argv)} --out "$out"'


@settings(max_examples=300, deadline=None)
@given(st.one_of(_TEXT, st.text(alphabet="/.a\\ ~:"), st.text()))
def test_absolute_paths_are_told_apart_as_pathlib_does(relative: str) -> None:
    """A values entry is refused as absolute exactly when pathlib calls it absolute."""
    assume("\0" not in relative)
    assume(relative != CHECKOUT_ROOT and not relative.startswith(CHECKOUT_ROOT + "/"))
    try:
        inside(EXAMPLE, "deployments", relative, file="deployment.yaml", field="values[0]")
        refused = False
    except ConfigError as error:
        refused = "absolute path" in error.message
    assert refused == Path(relative).is_absolute()


@pytest.mark.parametrize("size", [0, 1, 2046, 2047, 2048, 4094, 4095, 100_000])
def test_render_keys_hashed_in_pieces_are_the_sha256_of_the_whole(size: int) -> None:
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    assert gotmpl._sha256(data) == hashlib.sha256(data).hexdigest()
