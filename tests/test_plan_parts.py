"""A side planned in two processes is the side planned in one: order, secrets, cache."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from agekeys import AgeIdentity, encrypt, sops_decoder
from processes import children

from reviewer import ending, plan_parts
from reviewer.changes import changes_between
from reviewer.discover import HierarchySource, Layout
from reviewer.filedigests import file_digests
from reviewer.gotmpl import TemplateRenderer
from reviewer.limits import Limits
from reviewer.model import ReleaseId
from reviewer.plan_cache import SidePlans
from reviewer.render_cache import RenderStore
from reviewer.reuse import Reuse
from reviewer.side import PlannedSide, SideOptions, plan_twins, render_side
from reviewer.sops import KeylessMode, SopsDecoder
from reviewer.sources.hierarchy import Hierarchy
from reviewer.tooling import Tooling, open_tooling

EXAMPLE = Path(__file__).parent.parent / "examples" / "fleet"
OPTIONS = SideOptions(sources=(Hierarchy(),))
# The example's clusters in the spawned process's share (the salted hash puts these there).
THEIRS = ("production/us-east", "sandbox", "staging/stg-1")


def _demo_identity() -> AgeIdentity:
    lines = (EXAMPLE / "demo-age-key.txt").read_text(encoding="utf-8").splitlines()
    recipient = next(line.split(": ")[1] for line in lines if line.startswith("# public key:"))
    secret = next(line for line in lines if line.startswith("AGE-SECRET-KEY-"))
    return AgeIdentity(secret, recipient)


@pytest.fixture
def example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example fleet with secrets of its own in a cluster of each share."""
    monkeypatch.setenv("SOPS_AGE_KEY_FILE", str(EXAMPLE / "demo-age-key.txt"))
    root = tmp_path / "fleet"
    shutil.copytree(EXAMPLE, root)
    outside = tmp_path / "encrypting"  # away from the fleet's own .sops.yaml rules
    outside.mkdir()
    for cluster, secret in (("production/us-east", "east-only"), ("staging/stg-2", "stg2-only")):
        encrypted = encrypt(outside, {"token": secret}, _demo_identity())
        encrypted.rename(root / "deployments" / cluster / "cluster.values.sops.yaml")
    return root


def _split(root: Path, decoder: SopsDecoder, stored: SidePlans | None = None) -> PlannedSide:
    renderer = TemplateRenderer()
    try:
        return plan_parts.plan_side_in_parts(
            root,
            options=OPTIONS,
            renderer=renderer,
            decoder=decoder,
            limits=Limits(),
            stored=stored,
        )
    finally:
        renderer.close()


def _whole(root: Path, decoder: SopsDecoder, stored: SidePlans | None = None) -> PlannedSide:
    renderer = TemplateRenderer()
    try:
        return plan_twins(
            root, options=OPTIONS, renderer=renderer, secrets=decoder, fast=True, stored=stored
        )
    finally:
        renderer.close()


def _assert_same(split: PlannedSide, whole: PlannedSide) -> None:
    assert split.plan == whole.plan  # releases and errors in the same order
    assert split.twin == whole.twin
    assert list(split.seen) == list(whole.seen)
    assert list(split.replacements.items()) == list(whole.replacements.items())
    assert split.leaves == whole.leaves
    assert split.secret_keys == whole.secret_keys
    assert split.has_secrets == whole.has_secrets


def test_the_example_clusters_fall_in_both_shares() -> None:
    clusters = [cluster.path for cluster in HierarchySource(Layout()).discover(EXAMPLE).clusters]
    theirs = [cluster for cluster in clusters if plan_parts.in_second_share(cluster)]
    assert tuple(theirs) == THEIRS
    assert len(theirs) < len(clusters)


def test_a_side_planned_in_two_processes_is_the_side_planned_in_one(
    example: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(plan_parts, "SPLIT_AT", 1)
    split = _split(example, sops_decoder(KeylessMode.NEVER))
    whole = _whole(example, sops_decoder(KeylessMode.NEVER))
    _assert_same(split, whole)
    # Each share read a secret of its own: both reached the replacement map.
    assert {"east-only", "stg2-only"} <= set(split.replacements)


def test_the_other_share_is_planned_by_another_process_that_is_gone_after(
    example: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(plan_parts, "SPLIT_AT", 1)
    shares: list[PlannedSide] = []
    taken = plan_parts._taken

    def recorded(share: Any, *args: Any) -> PlannedSide:
        shares.append(share.planned)
        return taken(share, *args)

    monkeypatch.setattr(plan_parts, "_taken", recorded)
    before = children()
    _split(example, sops_decoder(KeylessMode.NEVER))
    [share] = shares
    assert sorted({cluster for cluster, _ in share.seen}) == sorted(THEIRS)
    # Neither the planning process nor its sandbox is left, not even as a zombie.
    assert children() == before


def _die(*args: object) -> None:
    os._exit(3)  # as the kernel's out-of-memory killer would end it: no cleanup, no answer


def test_a_share_whose_process_dies_is_planned_here(
    example: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(plan_parts, "SPLIT_AT", 1)
    # Pickled by name: the spawned process imports this module and runs `_die` there.
    monkeypatch.setattr(plan_parts, "_plan_share", _die)
    before = children()
    split = _split(example, sops_decoder(KeylessMode.NEVER))
    _assert_same(split, _whole(example, sops_decoder(KeylessMode.NEVER)))
    assert children() == before


def test_a_failed_deployment_counts_as_secret_as_in_one_process(
    example: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Secrets in one share only; a failing deployment in the other one.
    for path in ("production/us-east/cluster.values", "production/group.values"):
        (example / "deployments" / f"{path}.sops.yaml").unlink()
    broken = example / "deployments/sandbox/apps/broken"
    broken.mkdir(parents=True)
    (broken / "deployment.yaml").write_text("apps: [{template: missing}]\n", encoding="utf-8")
    monkeypatch.setattr(plan_parts, "SPLIT_AT", 1)
    split = _split(example, sops_decoder(KeylessMode.NEVER))
    _assert_same(split, _whole(example, sops_decoder(KeylessMode.NEVER)))
    assert ("sandbox", "broken") in split.secret_keys


def test_secrets_read_by_one_share_only_keep_their_twin(
    example: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for path in ("production/us-east/cluster.values", "production/group.values"):
        (example / "deployments" / f"{path}.sops.yaml").unlink()
    monkeypatch.setattr(plan_parts, "SPLIT_AT", 1)
    split = _split(example, sops_decoder(KeylessMode.NEVER))
    _assert_same(split, _whole(example, sops_decoder(KeylessMode.NEVER)))
    assert split.has_secrets
    assert "stg2-only" in split.replacements


def test_a_head_side_takes_from_the_base_side_as_it_does_in_one_process(
    example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = tmp_path / "head"
    shutil.copytree(example, head)
    group = head / "deployments/production/group.values.yaml"
    group.write_text(group.read_text(encoding="utf-8") + "added: 1\n", encoding="utf-8")
    changes = changes_between(example, head)
    with open_tooling(Tooling(cache_dir=tmp_path / "chart-cache")) as tools:
        base = render_side(
            example,
            options=OPTIONS,
            tools=tools,
            renderer=TemplateRenderer(),
            secrets=sops_decoder(KeylessMode.NEVER),
            fast=True,
        )
    assert base.basis is not None
    monkeypatch.setattr(plan_parts, "SPLIT_AT", 1)
    renderer = TemplateRenderer()
    try:
        split = plan_parts.plan_side_in_parts(
            head,
            options=OPTIONS,
            renderer=renderer,
            decoder=sops_decoder(KeylessMode.NEVER),
            limits=Limits(),
            stored=None,
            reuse=Reuse(base.basis, changes, head),
        )
        whole = plan_twins(
            head,
            options=OPTIONS,
            renderer=renderer,
            secrets=sops_decoder(KeylessMode.NEVER),
            fast=True,
            reuse=Reuse(base.basis, changes, head),
        )
    finally:
        renderer.close()
    _assert_same(split, whole)
    assert split.reused == whole.reused
    # The production clusters (one in each share) are planned, the others taken.
    assert {cluster for cluster, _ in split.reused} == {"sandbox", "staging/stg-1", "staging/stg-2"}


def test_files_without_a_key_are_listed_from_both_shares(
    example: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SOPS_AGE_KEY_FILE")
    monkeypatch.setattr(plan_parts, "SPLIT_AT", 1)
    split_decoder, whole_decoder = sops_decoder(), sops_decoder()
    _assert_same(_split(example, split_decoder), _whole(example, whole_decoder))
    keyless = sorted(split_decoder.keyless_sources)
    assert keyless == sorted(whole_decoder.keyless_sources)
    assert "deployments/production/us-east/cluster.values.sops.yaml" in keyless
    assert "deployments/staging/stg-2/cluster.values.sops.yaml" in keyless


def test_both_shares_fill_the_plan_cache(
    example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(plan_parts, "SPLIT_AT", 1)
    store = RenderStore(tmp_path / "plans", max_bytes=1 << 30)
    digests = file_digests(example)

    def view() -> SidePlans:
        return SidePlans(store, "context", digests, example)

    # Without a key every release reads placeholders, so nothing secret is stored.
    monkeypatch.delenv("SOPS_AGE_KEY_FILE")
    first = view()
    planned = _split(example, sops_decoder(), first)
    assert first.hits == 0
    assert store.written > 0
    again = view()
    assert _whole(example, sops_decoder(), again).plan == planned.plan
    stored = len(planned.seen) - len(planned.secret_keys)
    assert again.hits == stored > len(THEIRS)
    split_again = view()
    _split(example, sops_decoder(), split_again)
    assert split_again.hits == stored


def test_the_side_index_names_what_both_shares_stored(
    example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(plan_parts, "SPLIT_AT", 1)
    monkeypatch.delenv("SOPS_AGE_KEY_FILE")  # nothing secret: every deployment is stored
    store = RenderStore(tmp_path / "plans", max_bytes=1 << 30)
    first = SidePlans(store, "context", file_digests(example), example)
    planned = _split(example, sops_decoder(), first)
    first.keep()
    for path in store.root.glob("??/*.entry"):  # the index entries: lists of files read
        if isinstance(json.loads(path.read_bytes().partition(b"\n")[2]), list):
            path.unlink()
    again = SidePlans(store, "context", file_digests(example), example)
    assert _whole(example, sops_decoder(), again).plan == planned.plan
    assert again.hits == len(planned.seen) - len(planned.secret_keys) > len(THEIRS)


def test_a_share_sends_back_only_the_plans_it_took_or_stored(
    example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The share's copy of the plan cache view was pickled from this process's, whose newer
    # findings its older ones must not overwrite.
    monkeypatch.delenv("SOPS_AGE_KEY_FILE")
    store = RenderStore(tmp_path / "plans", max_bytes=1 << 30)
    view = SidePlans(store, "context", file_digests(example), example)
    view.learned["a deployment this process planned"] = "what it found before"
    share = plan_parts._plan_share(example, OPTIONS, Limits(), sops_decoder().settings(), view)
    assert share.plans_learned
    assert "a deployment this process planned" not in share.plans_learned
    assert all(store.holds(contents) for contents in share.plans_learned.values())


def test_a_small_side_is_planned_in_this_process(example: Path) -> None:
    # Below the threshold nothing is spawned: the plan is the one-process plan itself.
    assert plan_parts.SPLIT_AT > 20
    _assert_same(
        _split(example, sops_decoder(KeylessMode.NEVER)),
        _whole(example, sops_decoder(KeylessMode.NEVER)),
    )


def _identity() -> ReleaseId:
    return ReleaseId("production/us-east", "payments", "api")


def test_identities_from_the_other_process_key_the_same_maps() -> None:
    """String hashes differ between processes: an identity made there is hashed here."""
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=spawn) as executor:
        theirs = executor.submit(_identity).result()
    assert theirs == _identity()
    assert {_identity(): "found"}[theirs] == "found"
    assert theirs in {_identity()}


class _NoProcesses(multiprocessing.context.SpawnContext):
    """A context whose processes cannot start, as when the process limit is reached."""

    class Process(multiprocessing.context.SpawnProcess):
        def start(self) -> None:
            raise BlockingIOError(11, "Resource temporarily unavailable")


def test_a_share_without_a_process_to_plan_it_is_planned_here(
    example: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(plan_parts, "SPLIT_AT", 1)
    monkeypatch.setattr(
        ending,
        "ProcessPoolExecutor",
        lambda workers, mp_context, **kwargs: ProcessPoolExecutor(
            workers, mp_context=_NoProcesses(), **kwargs
        ),
    )
    split = _split(example, sops_decoder(KeylessMode.NEVER))
    _assert_same(split, _whole(example, sops_decoder(KeylessMode.NEVER)))


def test_a_plan_spelling_a_secret_of_the_other_share_is_not_kept(
    example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _spell_in_the_sandbox(example)
    monkeypatch.setattr(plan_parts, "SPLIT_AT", 1)
    digests = file_digests(example)

    def kept(plan: Callable[[Path, SopsDecoder, SidePlans], PlannedSide]) -> set[str]:
        store = RenderStore(tmp_path / plan.__name__, max_bytes=1 << 30)
        entries = (tmp_path / plan.__name__).rglob("*.entry")
        side = plan(
            example, sops_decoder(KeylessMode.NEVER), SidePlans(store, "c", digests, example)
        )
        view = SidePlans(store, "c", digests, example)
        assert not _spelling(entries)
        return {f"{c.path}/{d.name}" for c, d in side.seen.values() if view.holds(c, d)}

    split, whole = kept(_split), kept(_whole)
    assert split == whole
    assert not any(key.startswith("sandbox/") for key in split)
    assert any(key.startswith("staging/stg-1/") for key in split)  # the other share's, kept


def _spell_in_the_sandbox(root: Path) -> None:
    """The sandbox (the spawned process's share, no SOPS file) spells in plain text the
    secret that only this process's share (staging/stg-2) decrypts."""
    sandbox = root / "deployments/sandbox/cluster.values.yaml"
    sandbox.write_text(sandbox.read_text(encoding="utf-8") + "reused: stg2-only\n", "utf-8")


def _spelling(entries: Iterable[Path]) -> list[Path]:
    return [entry for entry in entries if b"stg2-only" in entry.read_bytes()]


def _store_then_die(*args: Any) -> None:
    plan_parts._plan_share(*args)  # the spawned process's own module: the real one
    os._exit(3)


def test_plans_a_dying_process_stored_are_not_kept_unchecked(
    example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _spell_in_the_sandbox(example)
    monkeypatch.setattr(plan_parts, "SPLIT_AT", 1)
    monkeypatch.setattr(plan_parts, "_plan_share", _store_then_die)
    store = RenderStore(tmp_path / "cache", max_bytes=1 << 30)
    digests = file_digests(example)
    split = _split(
        example, sops_decoder(KeylessMode.NEVER), SidePlans(store, "c", digests, example)
    )
    _assert_same(split, _whole(example, sops_decoder(KeylessMode.NEVER)))
    assert not _spelling((tmp_path / "cache").rglob("*.entry"))


def test_plans_of_the_other_process_are_not_kept_when_this_one_fails(
    example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _spell_in_the_sandbox(example)
    monkeypatch.setattr(plan_parts, "SPLIT_AT", 1)

    def failing(*args: Any, **kwargs: Any) -> PlannedSide:
        raise RuntimeError("the template sandbox failed")

    monkeypatch.setattr(plan_parts, "plan_twins", failing)  # this process's share only
    store = RenderStore(tmp_path / "cache", max_bytes=1 << 30)
    stored = SidePlans(store, "c", file_digests(example), example)
    with pytest.raises(RuntimeError, match="sandbox failed"):
        _split(example, sops_decoder(KeylessMode.NEVER), stored)
    assert not _spelling((tmp_path / "cache").rglob("*.entry"))
    assert not list((tmp_path / "cache").rglob("*.entry")), "nothing it stored is kept"
