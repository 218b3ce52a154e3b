"""How one object differs between the two sides: its status, path-level and routine changes,
and the fields its chart regenerates on every render."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from reviewer.model import ReleaseId, ResourceKey
from reviewer.semantic import PathChange

SECRET_ONLY_NOTE = "a secret value changed; its redacted form is the same, so no line shows it"
UNCOMPARABLE_NOTE = (
    "regenerated on every render, and lines both renders share changed too: cannot be compared"
)


class ResourceStatus(str, Enum):
    """How one object differs between the two sides (unchanged objects are only counted)."""

    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"
    MOVED = "moved"
    RENAMED = "renamed"


@dataclass(frozen=True)
class RoutineChange:
    """A change left out of the main view, with the rule that covered it."""

    rule: str
    change: PathChange

    def __str__(self) -> str:
        return f"{self.change.lines()[0]}  [{self.rule}]"


@dataclass(frozen=True)
class RegeneratedChange:
    """A field the chart regenerates on every render; not compared, only listed."""

    path: str
    comparable: bool = True

    def line(self) -> str:
        """`path: regenerated on every render` (or why it cannot be compared)."""
        if self.comparable:
            return f"{self.path}: regenerated on every render"
        return f"{self.path}: {UNCOMPARABLE_NOTE}"


@dataclass(frozen=True)
class ResourceDiff:
    """One object that differs; `base_*`/`head_*` are None on the side where it is absent."""

    status: ResourceStatus
    base_release: ReleaseId | None
    head_release: ReleaseId | None
    base_key: ResourceKey | None
    head_key: ResourceKey | None
    base_api_version: str = ""
    head_api_version: str = ""
    unified: str = ""
    """Unified diff of the normalized YAML, without routine changes; empty when none remain."""
    changes: tuple[PathChange, ...] = ()
    """Path-level changes that are not routine (empty for added/removed objects)."""
    routine: tuple[RoutineChange, ...] = ()
    routine_only: bool = False
    """True when every change is routine: reports may collapse this object."""
    dyff: str | None = None
    """dyff's report of the non-routine changes, when dyff was the differ."""
    similarity: float | None = None
    """For renames: how alike the two objects are, ignoring the name (0..1)."""
    secret_only: bool = False
    """The object's unredacted content changed but its redacted form did not."""
    regenerated: tuple[RegeneratedChange, ...] = ()
    """Fields that differ because the chart regenerates them on every render."""

    @property
    def regenerated_only(self) -> bool:
        """Every difference is a field regenerated on every render: not a change at all."""
        return (
            bool(self.regenerated)
            and not self.changes
            and not self.routine
            and not self.secret_only
            and all(item.comparable for item in self.regenerated)
        )

    @property
    def collapsible(self) -> bool:
        """Changed only in routine ways, with no note to show: reports count such objects per
        release (a chart bump relabels every object) instead of showing each one."""
        return (
            self.status is ResourceStatus.CHANGED
            and self.routine_only
            and not self.secret_only
            and all(item.comparable for item in self.regenerated)
        )

    @property
    def key(self) -> ResourceKey:
        """The object's identity on the head side, or on the base side when removed."""
        key = self.head_key or self.base_key
        assert key is not None, "a resource diff has at least one side"
        return key

    @property
    def release(self) -> ReleaseId:
        """The owning release on the head side, or on the base side when removed."""
        owner = self.head_release or self.base_release
        assert owner is not None, "a resource diff has at least one side"
        return owner

    @property
    def body(self) -> str:
        """The unified diff without its two file-label lines (identical changes compare equal)."""
        return self.unified.partition("\n")[2].partition("\n")[2]

    def semantic_lines(self) -> list[str]:
        """The path-level view as text lines: dyff's report when it ran, else the built-in one."""
        notes = [item.line() for item in self.regenerated if not item.comparable]
        if self.secret_only:
            return [SECRET_ONLY_NOTE, *notes]
        if self.dyff is not None:
            return [*self.dyff.splitlines(), *notes]
        return [line for change in self.changes for line in change.lines()] + notes
