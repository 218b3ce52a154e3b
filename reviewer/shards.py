"""The shard bundle format: one matrix job per share of the clusters, one job to publish.

A shard job saves its rendered pair (`bundle.save`) and `ci-shard.json`: which share of which
review it rendered. The publishing job reads every bundle back as untrusted data and checks
that together they are exactly one whole review of this run's pull request.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from reviewer import bundle, decode
from reviewer.bundle import RenderedPair
from reviewer.commits import Commits
from reviewer.console import Console
from reviewer.decode import Field
from reviewer.errors import ReviewerError
from reviewer.github_event import REPOSITORY, SHA
from reviewer.side import Shard
from reviewer.snapshot import Guard

SHARD_FILE = "ci-shard.json"
SHARD_SCHEMA = "reviewer.ci-shard/v1"
DIFF_SHARD_FILE = "diff-shard.json"
DIFF_SHARD_SCHEMA = "reviewer.diff-shard/v1"
_SHARD_FILE_LIMIT = 64 << 10


@dataclass(frozen=True)
class ShardFacts:
    """What a shard job records beside its bundle: which share of which review it rendered."""

    shard: Shard
    number: int | None
    repository: str | None
    commits: Commits

    @property
    def label(self) -> str:
        """`I/N`."""
        return f"{self.shard.index}/{self.shard.total}"

    def review(self) -> tuple[object, ...]:
        """What every shard of one review shares."""
        return (self.number, self.repository, self.commits, self.shard.total)

    def subject(self) -> str:
        """The review the shard is part of, for messages."""
        number = f"#{self.number}" if self.number else "no PR"
        return f"{number}, target {self.commits.target[:7]}, merge {self.commits.merge[:7]}"

    def describe(self) -> str:
        """This shard and its review, for error messages."""
        return f"shard {self.label} of {self.subject()}"


@dataclass(frozen=True)
class Expected:
    """What the publishing run trusts (from its event): the shards must match it."""

    number: int | None = None
    pr_head: str | None = None
    repository: str | None = None


@dataclass(frozen=True)
class LoadedShard:
    """A shard bundle read back: where it was, what it claims, what it holds."""

    directory: Path
    facts: ShardFacts
    pair: RenderedPair


def save_shard(directory: Path, pair: RenderedPair, facts: ShardFacts, guard: Guard) -> None:
    """Write the bundle (`bundle.save`) and `ci-shard.json`; every file passes `guard`."""
    bundle.save(pair, directory, guard=guard)
    commits = facts.commits
    meta = {
        "schema": SHARD_SCHEMA,
        "shard": {"index": facts.shard.index, "total": facts.shard.total},
        "number": facts.number,
        "repository": facts.repository,
        "commits": {
            "target": commits.target,
            "merge": commits.merge,
            "head": commits.head,
            "fallback": commits.fallback,
        },
    }
    text = json.dumps(meta, indent=2) + "\n"
    guard(text, SHARD_FILE)
    (directory / SHARD_FILE).write_text(text, encoding="utf-8")


def save_diff_shard(directory: Path, pair: RenderedPair, shard: Shard, guard: Guard) -> None:
    """Write the bundle of `reviewer diff --save` and `diff-shard.json`: which share it holds."""
    bundle.save(pair, directory, guard=guard)
    meta = {"schema": DIFF_SHARD_SCHEMA, "shard": {"index": shard.index, "total": shard.total}}
    text = json.dumps(meta, indent=2) + "\n"
    guard(text, DIFF_SHARD_FILE)
    (directory / DIFF_SHARD_FILE).write_text(text, encoding="utf-8")


def merge_saved(directories: Sequence[Path]) -> RenderedPair:
    """One pair from the bundles of `reviewer diff --save`, once they are every shard once."""
    shards = [(str(directory), _saved_shard(directory)) for directory in directories]
    _check_every_shard_once(shards)
    return bundle.merge([bundle.load(directory) for directory in directories])


def _saved_shard(directory: Path) -> Shard:
    if (directory / SHARD_FILE).is_file():
        return read_shard_facts(directory).shard
    path = directory / DIFF_SHARD_FILE
    if not os.path.lexists(path):
        return Shard(1, 1)  # saved without --shard: a whole review
    if path.is_symlink() or not path.is_file() or path.stat().st_size > _SHARD_FILE_LIMIT:
        raise ReviewerError(
            f"{DIFF_SHARD_FILE} is not a regular file of at most {_SHARD_FILE_LIMIT} bytes",
            file=str(directory),
        )
    at = Field(str(path))
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise at.error("is not valid JSON") from None
    if not isinstance(document, dict) or document.get("schema") != DIFF_SHARD_SCHEMA:
        raise at.error(f"is not a {DIFF_SHARD_SCHEMA} file")
    return decode.required(decode.mapping(document, at), "shard", at, _shard)


def merge_shards(
    directories: Sequence[Path], expected: Expected, console: Console
) -> tuple[RenderedPair, ShardFacts]:
    """One rendered pair from every shard of one review, after checking they belong together."""
    shards = [_load_shard(directory) for directory in bundle_dirs(directories)]
    _check_same_review(shards)
    _check_complete(shards)
    facts = shards[0].facts
    _check_expected(facts, expected)
    console.info(f"merging {len(shards)} shard(s) of {facts.subject()}")
    return bundle.merge([shard.pair for shard in shards]), facts


def bundle_dirs(given: Sequence[Path]) -> list[Path]:
    """Each directory is a bundle, or holds one per subdirectory (as download-artifact does)."""
    found: list[Path] = []
    for directory in given:
        if not directory.is_dir():
            raise ReviewerError(f"{directory} is not a directory of shard bundles")
        if any(os.path.lexists(directory / name) for name in (SHARD_FILE, "review.json")):
            found.append(directory)
            continue
        inside = sorted(p for p in directory.iterdir() if p.is_dir() and not p.is_symlink())
        if not inside:
            raise ReviewerError(
                f"{directory} holds no shard bundle",
                hint="give the directories written by `reviewer ci --shard I/N --save DIR`",
            )
        found += inside
    return found


def _load_shard(directory: Path) -> LoadedShard:
    facts = read_shard_facts(directory)
    pair = bundle.load(directory)
    if (pair.base_info.sha, pair.head_info.sha) != (facts.commits.target, facts.commits.merge):
        raise ReviewerError(
            f"the rendered sides are not of the commits {SHARD_FILE} names", file=str(directory)
        )
    return LoadedShard(directory, facts, pair)


# --- decoding ci-shard.json (untrusted: every field is checked before use) -------------------


def read_shard_facts(directory: Path) -> ShardFacts:
    """Read `ci-shard.json`; a bad field is a `ConfigError` naming the file and the field."""
    path = directory / SHARD_FILE
    if path.is_symlink() or not path.is_file():
        raise ReviewerError(f"{SHARD_FILE} is missing or not a regular file", file=str(directory))
    if path.stat().st_size > _SHARD_FILE_LIMIT:
        raise ReviewerError(
            f"{SHARD_FILE} is larger than {_SHARD_FILE_LIMIT} bytes", file=str(directory)
        )
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise Field(str(path)).error("is not valid JSON") from None
    return decode_shard_facts(document, Field(str(path)))


def decode_shard_facts(document: object, at: Field) -> ShardFacts:
    """The facts of a parsed `ci-shard.json` document."""
    if not isinstance(document, dict) or document.get("schema") != SHARD_SCHEMA:
        raise at.error(f"is not a {SHARD_SCHEMA} file")
    # Unknown keys are ignored, as before: the schema name carries the version.
    data = decode.mapping(document, at)
    return ShardFacts(
        shard=decode.required(data, "shard", at, _shard),
        number=decode.optional(data, "number", at, _count, None),
        repository=decode.optional(data, "repository", at, _repository, None),
        commits=decode.required(data, "commits", at, _commits),
    )


def _shard(value: object, at: Field) -> Shard:
    data = decode.mapping(value, at, required=("index", "total"))
    index = _count(data["index"], at.key("index"))
    total = _count(data["total"], at.key("total"))
    if index > total:
        raise at.error(f"shard {index}/{total} is not I/N (1 <= I <= N)")
    return Shard(index, total)


def _commits(value: object, at: Field) -> Commits:
    data = decode.mapping(value, at, required=("target", "merge", "head", "fallback"))
    return Commits(
        target=_sha(data["target"], at.key("target")),
        merge=_sha(data["merge"], at.key("merge")),
        head=_sha(data["head"], at.key("head")),
        fallback=decode.boolean(data["fallback"], at.key("fallback")),
    )


def _count(value: object, at: Field) -> int:
    # decode.integer accepts 2.0; a count written by `save_shard` is always a JSON integer.
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise at.error("is not a positive whole number")
    return value


def _sha(value: object, at: Field) -> str:
    if not isinstance(value, str) or not SHA.fullmatch(value):
        raise at.error("is not a commit SHA (40 or 64 lowercase hex digits)")
    return value


def _repository(value: object, at: Field) -> str:
    if not isinstance(value, str) or not REPOSITORY.fullmatch(value):
        raise at.error("must be OWNER/NAME")
    return value


# --- do the shards make one whole review of this run? ---------------------------------------


def _check_same_review(shards: list[LoadedShard]) -> None:
    first = shards[0]
    for other in shards[1:]:
        if other.facts.review() != first.facts.review():
            raise ReviewerError(
                "the shards are not of one review: "
                f"{first.directory.name} holds {first.facts.describe()}, "
                f"{other.directory.name} holds {other.facts.describe()}",
                hint="every shard job must render the same checkout (the run's merge commit) "
                "with the same number of shards; re-run the whole workflow",
            )


def _check_complete(shards: list[LoadedShard]) -> None:
    _check_every_shard_once([(shard.directory.name, shard.facts.shard) for shard in shards])


def _check_every_shard_once(shards: Sequence[tuple[str, Shard]]) -> None:
    """Each of the N shards exactly once, all of one split: no partial or doubled review."""
    totals = sorted({shard.total for _, shard in shards})
    if len(totals) > 1:
        raise ReviewerError(
            "the bundles split the clusters differently: into "
            + " and ".join(str(total) for total in totals)
            + " shards",
            hint="merge the bundles of one split (the same --shard I/N with one N)",
        )
    total = totals[0]
    counts = Counter(shard.index for _, shard in shards)
    twice = sorted(index for index, seen in counts.items() if seen > 1)
    if twice:
        places = [name for name, shard in shards if shard.index == twice[0]]
        raise ReviewerError(f"shard {twice[0]}/{total} is given twice: {', '.join(places)}")
    missing = [f"{index}/{total}" for index in range(1, total + 1) if index not in counts]
    if missing:
        raise ReviewerError(
            f"shard(s) {', '.join(missing)} missing: a partial review is never published",
            hint="a shard job failed before saving its bundle; see its log, then re-run it",
        )


def _check_expected(facts: ShardFacts, expected: Expected) -> None:
    """The shards must be of this run's pull request (the event is trusted, the files not)."""
    if expected.number and facts.number != expected.number:
        reviewed = f"#{facts.number}" if facts.number else "no pull request"
        raise ReviewerError(
            f"the shards review {reviewed}, but this run is about #{expected.number}"
        )
    if expected.pr_head and facts.commits.head != expected.pr_head:
        raise ReviewerError(
            f"the shards rendered the PR head {facts.commits.head[:7]}, but this run's pull "
            f"request head is {expected.pr_head[:7]}"
        )
    if expected.repository and facts.repository and facts.repository != expected.repository:
        raise ReviewerError(
            f"the shards are of {facts.repository}, but this run is in {expected.repository}"
        )
