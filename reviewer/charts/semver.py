"""Versions and constraints with Masterminds/semver v3 semantics, as Helm uses them.

Versions are chosen the way Helm resolves them: the highest match, prereleases only when
the constraint names one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_VERSION = re.compile(
    r"^v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?"
    r"(-([0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*))?"
    r"(\+([0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*))?$"
)
_EXACT = re.compile(r"^v?[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
_CV = (
    r"v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?"
    r"(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
    r"(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
)
_OPS = r"=||!=|>|<|>=|=>|<=|=<|~|~>|\^"
_CONSTRAINT = re.compile(rf"^\s*({_OPS})\s*({_CV})\s*$")
_RANGE = re.compile(rf"\s*({_CV})\s+-\s+({_CV})\s*")
_FIND = re.compile(rf"({_OPS})\s*({_CV})")
_VALID = re.compile(rf"^(\s*({_OPS})\s*({_CV})\s*)((?:\s+|,\s*)({_OPS})\s*({_CV})\s*)*$")


@dataclass(frozen=True)
class Version:
    """A semantic version; build metadata is ignored when comparing."""

    major: int
    minor: int
    patch: int
    pre: str = ""

    @classmethod
    def parse(cls, text: str) -> Version | None:
        """Parse like Masterminds' NewVersion (`v` prefix, missing parts are 0); None if invalid."""
        found = _VERSION.match(text.strip())
        if found is None:
            return None
        minor, patch = found.group(2), found.group(3)
        return cls(
            int(found.group(1)),
            int(minor[1:]) if minor else 0,
            int(patch[1:]) if patch else 0,
            found.group(5) or "",
        )

    def compare(self, other: Version) -> int:
        """-1, 0 or 1, like semver precedence."""
        mine, theirs = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if mine != theirs:
            return -1 if mine < theirs else 1
        return _compare_pre(self.pre, other.pre)


def _compare_pre(a: str, b: str) -> int:
    if a == b:
        return 0
    if not a or not b:
        return -1 if b == "" else 1  # a release sorts after its prereleases
    left, right = a.split("."), b.split(".")
    for x, y in zip(left, right, strict=False):
        if x == y:
            continue
        if x.isdigit() and y.isdigit():
            return -1 if int(x) < int(y) else 1
        if x.isdigit() != y.isdigit():
            return -1 if x.isdigit() else 1
        return -1 if x < y else 1
    return -1 if len(left) < len(right) else (1 if len(left) > len(right) else 0)


@dataclass(frozen=True)
class _Term:
    op: str
    con: Version
    dirty: bool
    minor_dirty: bool
    patch_dirty: bool

    def check(self, v: Version) -> bool:
        # Prereleases only match terms that name a prerelease themselves (an exact `!=`
        # excepted, as in Masterminds/semver).
        if v.pre and not self.con.pre and (self.op != "!=" or self.dirty):
            return False
        return _CHECKS[self.op](self, v)


def _tilde(t: _Term, v: Version) -> bool:
    if v.compare(t.con) < 0:
        return False
    if (t.con.major, t.con.minor, t.con.patch) == (0, 0, 0) and not (
        t.minor_dirty or t.patch_dirty
    ):
        return True
    return v.major == t.con.major and (v.minor == t.con.minor or t.minor_dirty)


def _caret(t: _Term, v: Version) -> bool:
    if v.compare(t.con) < 0:
        return False
    if t.con.major > 0 or t.minor_dirty:
        return v.major == t.con.major
    if v.major > 0:
        return False
    if t.con.minor > 0 or t.patch_dirty:
        return v.minor == t.con.minor
    return v.minor == 0 and v.patch == t.con.patch


def _greater(t: _Term, v: Version) -> bool:
    if not t.dirty:
        return v.compare(t.con) > 0
    if v.major != t.con.major:
        return v.major > t.con.major
    if t.minor_dirty:
        return False  # `>1` wants 2.0.0 or later, not 1.1.0
    if t.patch_dirty:
        return v.minor > t.con.minor
    return v.compare(t.con) > 0


def _less_equal(t: _Term, v: Version) -> bool:
    if not t.dirty:
        return v.compare(t.con) <= 0
    if v.major > t.con.major:
        return False
    return not (v.major == t.con.major and v.minor > t.con.minor and not t.minor_dirty)


def _not_equal(t: _Term, v: Version) -> bool:
    if t.dirty:
        if t.con.major != v.major:
            return True
        if t.minor_dirty:
            return False
        if t.con.minor != v.minor:
            return True
        if t.patch_dirty:
            return bool(v.pre or t.con.pre) and _compare_pre(v.pre, t.con.pre) != 0
    return v.compare(t.con) != 0


_CHECKS: dict[str, Callable[[_Term, Version], bool]] = {
    "": lambda t, v: _tilde(t, v) if t.dirty else v.compare(t.con) == 0,
    "=": lambda t, v: _tilde(t, v) if t.dirty else v.compare(t.con) == 0,
    "!=": _not_equal,
    ">": _greater,
    "<": lambda t, v: v.compare(t.con) < 0,
    ">=": lambda t, v: v.compare(t.con) >= 0,
    "=>": lambda t, v: v.compare(t.con) >= 0,
    "<=": _less_equal,
    "=<": _less_equal,
    "~": _tilde,
    "~>": _tilde,
    "^": _caret,
}


def _is_x(part: str) -> bool:
    return part in ("x", "X", "*")


def _term(text: str) -> _Term:
    found = _CONSTRAINT.match(text)
    if found is None:
        raise ValueError(f"improper constraint: {text}")
    op, major, minor, patch, pre = (found.group(i) or "" for i in (1, 3, 4, 5, 6))
    dirty = minor_dirty = patch_dirty = False
    if _is_x(major) or not major:
        version, dirty = f"0.0.0{pre}", True
    elif _is_x(minor[1:]) or not minor:
        version, dirty, minor_dirty = f"{major}.0.0{pre}", True, True
    elif _is_x(patch[1:]) or not patch:
        version, dirty, patch_dirty = f"{major}{minor}.0{pre}", True, True
    else:
        version = found.group(2)
    parsed = Version.parse(version)
    if parsed is None:
        raise ValueError(f"improper constraint: {text}")
    return _Term(op, parsed, dirty, minor_dirty, patch_dirty)


@dataclass(frozen=True)
class Constraint:
    """A Helm version constraint: `||`-separated groups of terms that must all hold."""

    groups: tuple[tuple[_Term, ...], ...]

    @classmethod
    def parse(cls, text: str) -> Constraint:
        """Parse like Masterminds' NewConstraint; raises ValueError when malformed."""
        for found in _RANGE.finditer(text):
            text = text.replace(found.group(0), f">= {found.group(1)}, <= {found.group(11)}", 1)
        groups: list[tuple[_Term, ...]] = []
        for part in text.split("||"):
            if not _VALID.match(part):
                raise ValueError(f"improper constraint: {part.strip()}")
            terms = [m.group(0) for m in _FIND.finditer(part)] or [part]
            groups.append(tuple(_term(term) for term in terms))
        return cls(tuple(groups))

    def allows(self, version: Version) -> bool:
        """True when some group's terms all hold for `version`."""
        return any(all(term.check(version) for term in group) for group in self.groups)


def select_version(available: list[str], wanted: str | None) -> str | None:
    """Helm's choice among `available` for `wanted`: an exact string match, else the highest
    version the constraint allows (no constraint: the highest release). None when nothing fits."""
    if wanted and wanted in available:
        return wanted
    constraint = Constraint.parse(wanted or "*")
    parsed = [(v, Version.parse(v)) for v in available]
    ordered = sorted(
        ((text, version) for text, version in parsed if version is not None),
        key=lambda item: _SortKey(item[1]),
        reverse=True,
    )
    return next((text for text, version in ordered if constraint.allows(version)), None)


@dataclass(frozen=True)
class _SortKey:
    version: Version

    def __lt__(self, other: _SortKey) -> bool:
        return self.version.compare(other.version) < 0


def is_exact(version: str | None) -> bool:
    """True when `version` names one version rather than a range."""
    return bool(version) and _EXACT.match(version or "") is not None
