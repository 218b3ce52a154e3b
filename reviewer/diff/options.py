"""How to diff: context lines, noise rules, rename threshold, and which path-level differ runs."""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Literal

from reviewer.errors import ReviewerError
from reviewer.model import ReleaseId, ResourceKey
from reviewer.noise import NoiseRules
from reviewer.semantic import dyff_available

DifferChoice = Literal["builtin", "dyff", "auto"]
Differ = Literal["builtin", "dyff"]

HiddenChanges = AbstractSet[tuple[ReleaseId, ResourceKey]]
"""Objects whose unredacted content differs between the sides while the redacted does not."""


@dataclass(frozen=True)
class DiffOptions:
    """How to diff: context lines, which path-level differ, noise rules, rename threshold."""

    context: int = 3
    differ: DifferChoice = "auto"
    noise: NoiseRules = field(default_factory=NoiseRules)
    rename_threshold: float = 0.9

    def __post_init__(self) -> None:
        if self.context < 0:
            raise ValueError("context must be >= 0")
        if not 0.0 < self.rename_threshold <= 1.0:
            raise ValueError("rename_threshold must be in (0, 1]")


def resolve_differ(choice: DifferChoice) -> Differ:
    """`auto` is dyff when installed, else builtin; an explicit `dyff` must be installed."""
    if choice == "builtin":
        return "builtin"
    if dyff_available():
        return "dyff"
    if choice == "auto":
        return "builtin"
    raise ReviewerError(
        "differ 'dyff' was chosen but no `dyff` executable is on PATH",
        hint="install dyff (https://github.com/homeport/dyff) or use --differ builtin",
    )
