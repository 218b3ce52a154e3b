"""Many changed objects are diffed in two processes: this one and a spawned one.

Diffing is pure Python and runs after every render has finished, so on a change that
touches the whole fleet one core idles while the other diffs thousands of objects. With
`--jobs` 2 or more and at least `SPLIT_AT` objects whose bodies differ, the second half of
them is diffed by another process; each diff is the same function of the same pair, so
the comparison is the same as in one process.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import replace

from reviewer import ending
from reviewer.diff.pairing import Pair
from reviewer.diff.resource import ResourceDiff
from reviewer.diff.views import Settings, diff_pair

# Changed objects below which one process is faster: starting another costs ~0.3 s, and
# sending an object there (pickling) about a third of what diffing it costs here.
SPLIT_AT = 2000
_PIECE = 500  # changed objects sent at once


def diff_pairs(
    pairs: Sequence[Pair], settings: Settings, *, jobs: int
) -> list[ResourceDiff | None]:
    """`diff_pair` of every pair, in order; half the changed ones in another process when
    `jobs` allows it and there are enough of them to pay for its start."""
    changed = (
        [] if jobs < 2 else [i for i, pair in enumerate(pairs) if pair.base.body != pair.head.body]
    )
    if len(changed) < SPLIT_AT:
        return [diff_pair(pair, settings) for pair in pairs]
    theirs = changed[len(changed) // 2 :]
    found: list[ResourceDiff | None] = [None] * len(pairs)
    with ending.one_process() as worker:
        # Pickled while this process diffs: not the memo this process fills meanwhile.
        blank = replace(settings, _rules={})
        # In pieces: the other process starts on the first while the next is sent.
        pieces = [theirs[start : start + _PIECE] for start in range(0, len(theirs), _PIECE)]
        try:
            futures = [
                worker.submit(diff_share, [pairs[i] for i in piece], blank) for piece in pieces
            ]
        except OSError:  # no process to be had (limits): diff them all here
            return [diff_pair(pair, settings) for pair in pairs]
        elsewhere = set(theirs)
        for index, pair in enumerate(pairs):
            if index not in elsewhere:
                found[index] = diff_pair(pair, settings)
        for piece, future in zip(pieces, futures, strict=True):
            answers = _answers(future)
            for position, index in enumerate(piece):
                found[index] = (
                    answers[position] if answers is not None else diff_pair(pairs[index], settings)
                )
    return found


def diff_share(pairs: Sequence[Pair], settings: Settings) -> list[ResourceDiff | None]:
    """The other process's share: `diff_pair` of each pair, in order."""
    return [diff_pair(pair, settings) for pair in pairs]


def _answers(future: Future[list[ResourceDiff | None]]) -> list[ResourceDiff | None] | None:
    """The other process's diffs of one piece; None when it died (killed: out of memory)."""
    try:
        return future.result()
    except BrokenProcessPool:
        return None
