"""`reviewer diff DIR_A DIR_B` on two `reviewer render` outputs: compare, don't render."""

from __future__ import annotations

from pathlib import Path

from reviewer import report
from reviewer import snapshot as snapshot_mod
from reviewer.bundle import RenderedPair
from reviewer.errors import ReviewerError
from reviewer.noise import NoiseRules

INDEX = "index.json"


def is_render_output(directory: Path) -> bool:
    """True when `directory` holds what `reviewer render --out` writes (its index.json)."""
    return (directory / INDEX).is_file()


def render_outputs(base: Path, head: Path) -> bool:
    """Whether DIR_A DIR_B are two render outputs (True) or two checkouts (False).

    One of each is refused: comparing a rendering with sources is never what was meant.
    """
    found = (is_render_output(base), is_render_output(head))
    if found[0] != found[1]:
        output, other = (base, head) if found[0] else (head, base)
        raise ReviewerError(
            f"{output} is a `reviewer render` output ({INDEX}) but {other} is not",
            hint="compare two render outputs, or two repository checkouts",
        )
    return found[0]


def load_pair(base: Path, head: Path) -> RenderedPair:
    """Two render outputs as a pair to diff as they were written (no rendering, no noise rules).

    Secret markers compare only when both renders used the same marker key (docs/reports.md).
    """
    before, after = snapshot_mod.read(base), snapshot_mod.read(head)
    warnings = tuple(dict.fromkeys((*before.warnings, *after.warnings, report.NO_REGENERATION)))
    pair = RenderedPair(
        base=before,
        head=after,
        base_info=report.SideInfo(str(base)),
        head_info=report.SideInfo(str(head)),
        warnings=warnings,
        noise=NoiseRules(),
    )
    return pair
