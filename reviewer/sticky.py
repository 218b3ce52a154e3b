"""Sticky comments: the pull request shows exactly our current parts, however runs interleave.

Only comments written by the token's own user and carrying our marker with our key are ever
edited, hidden or deleted; every call goes through the `GitHub` client's chokepoint.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from reviewer.comment import DEFAULT_BUDGET, Marker, Part, bodies_fit, size
from reviewer.errors import ReviewerError
from reviewer.publish import CommentMode, GitHub, PublishError

if TYPE_CHECKING:  # annotations only: PyGithub loads when the client does
    from github.IssueComment import IssueComment


@dataclass(frozen=True)
class Posted:
    """One of our comments on the pull request."""

    handle: IssueComment
    marker: Marker

    @property
    def id(self) -> int:
        """The comment's REST id (grows with creation time)."""
        return int(self.handle.id)


# Mutable on purpose: a sync counts into it as it writes; callers only read the result.
@dataclass
class SyncResult:
    """What a sync did; `urls` are the parts' addresses in part order."""

    urls: list[str] = field(default_factory=list)
    created: int = 0
    edited: int = 0
    deleted: int = 0
    hidden: int = 0


@dataclass(frozen=True)
class Sticky:
    """Where and as whom the sticky comments live."""

    client: GitHub
    number: int
    key: str
    author: str
    hidden_aware: bool = False

    def ours(self) -> list[Posted]:
        """Our comments with our key, oldest first (minimized ones left out when hidden_aware)."""
        found = [
            Posted(comment, marker)
            for comment in self.client.comments(self.number)
            if comment.user is not None and same_login(comment.user.login, self.author)
            for marker in [Marker.parse(comment.body or "")]
            if marker is not None and marker.key == self.key
        ]
        if self.hidden_aware and found:
            hidden = self.client.minimized([posted.handle.node_id for posted in found])
            found = [posted for posted in found if posted.handle.node_id not in hidden]
        return sorted(found, key=lambda posted: posted.id)


def same_login(a: str, b: str) -> bool:
    """Logins match, ignoring case and the `[bot]` suffix REST adds and GraphQL omits."""
    return a.lower().removesuffix("[bot]") == b.lower().removesuffix("[bot]")


def sync_comments(sticky: Sticky, parts: Sequence[Part], mode: CommentMode) -> SyncResult:
    """Make the pull request show exactly `parts` as our sticky comments."""
    if mode is CommentMode.DELETE:
        return remove_comments(sticky)
    if not parts or not bodies_fit(parts):
        raise ReviewerError("refusing to post: a comment part is empty or over the size budget")
    result = SyncResult()
    before = sticky.ours()
    sha = Marker.parse(parts[0].body)
    same_commit = sha is not None and all(p.marker.sha == sha.sha for p in before)
    if mode is CommentMode.ONLY_UPDATE and not before:
        return result
    in_place = (CommentMode.UPDATE, CommentMode.ONLY_UPDATE)
    if mode in in_place or (mode is CommentMode.HIDE_OUTDATED and same_commit):
        create = mode is not CommentMode.ONLY_UPDATE
        _write_in_place(sticky, parts, before, result, create=create)
        _reconcile(sticky, parts, set(), oldest=True, result=result, create=create)
    else:
        for part in parts:
            sticky.client.create_comment(sticky.number, part.body)
            result.created += 1
        _retire(sticky, before, mode, result)
        _reconcile(sticky, parts, {p.id for p in before}, oldest=False, result=result)
    return result


def remove_comments(sticky: Sticky) -> SyncResult:
    """Delete every comment of ours with our key."""
    result = SyncResult()
    _delete(sticky, sticky.ours(), result)
    return result


NOTE_MARK = "<!-- reviewer:note -->"
"""Opens the note `mark_comments` puts under a comment's marker line (replaced, never stacked)."""


def mark_comments(sticky: Sticky, note: Callable[[Marker], str]) -> SyncResult:
    """Put a note (built from each comment's marker; "" for none) at the top of our comments."""
    result = SyncResult()
    for posted in sticky.ours():
        text = note(posted.marker)
        if not text:
            continue
        body = posted.handle.body or ""
        marked = noted(body, text)
        if marked != body:
            _edit_or_skip(sticky, posted, marked, result)
        result.urls.append(posted.handle.html_url)
    return result


def noted(body: str, note: str) -> str:
    """`body` with `note` under its marker line, in place of an earlier note."""
    marker, _, rest = body.partition("\n")
    if rest.startswith(NOTE_MARK):
        rest = rest.split("\n\n", 1)[1] if "\n\n" in rest else ""
    block = f"{NOTE_MARK}\n{note.strip()}\n\n"
    whole = f"{marker}\n{block}{rest}"
    return whole if size(whole) <= DEFAULT_BUDGET else f"{marker}\n{block}"


def _edit_or_skip(sticky: Sticky, posted: Posted, body: str, result: SyncResult) -> None:
    try:
        sticky.client.edit_comment(posted.handle, body)
        result.edited += 1
    except PublishError as exc:
        if exc.status != 404:  # deleted meanwhile: nothing left to mark
            raise


def _write_in_place(
    sticky: Sticky,
    parts: Sequence[Part],
    before: list[Posted],
    result: SyncResult,
    *,
    create: bool = True,
) -> None:
    keep = _pick(before, oldest=True)
    for part in parts:
        existing = keep.get(part.number)
        if existing is None and create:
            sticky.client.create_comment(sticky.number, part.body)
            result.created += 1
        elif existing is not None and existing.handle.body != part.body:
            _edit_or_create(sticky, existing, part, result)
    kept = {posted.id for number, posted in keep.items() if number <= len(parts)}
    _delete(sticky, (p for p in before if p.id not in kept), result)


def _edit_or_create(sticky: Sticky, existing: Posted, part: Part, result: SyncResult) -> None:
    try:
        sticky.client.edit_comment(existing.handle, part.body)
        result.edited += 1
    except PublishError as exc:
        if exc.status != 404:
            raise
        sticky.client.create_comment(sticky.number, part.body)  # deleted meanwhile
        result.created += 1


def _retire(sticky: Sticky, before: list[Posted], mode: CommentMode, result: SyncResult) -> None:
    if mode is CommentMode.HIDE_OUTDATED:
        for posted in before:
            sticky.client.minimize(posted.handle)
            result.hidden += 1
    else:
        _delete(sticky, before, result)


def _delete(sticky: Sticky, doomed: Iterable[Posted], result: SyncResult) -> None:
    for posted in doomed:
        sticky.client.delete_comment(posted.handle)
        result.deleted += 1


def _pick(posted: Sequence[Posted], *, oldest: bool) -> dict[int, Posted]:
    """One comment per part number: the oldest (edited in place) or the newest (fresh posts)."""
    chosen: dict[int, Posted] = {}
    for item in sorted(posted, key=lambda p: p.id, reverse=not oldest):
        chosen.setdefault(item.marker.part, item)
    return chosen


def _reconcile(
    sticky: Sticky,
    parts: Sequence[Part],
    retired: set[int],
    *,
    oldest: bool,
    result: SyncResult,
    create: bool = True,
) -> None:
    """Re-list after writing, so concurrent runs converge on one comment per part number."""
    now = [posted for posted in sticky.ours() if posted.id not in retired]
    keep = {n: p for n, p in _pick(now, oldest=oldest).items() if n <= len(parts)}
    _delete(sticky, (p for p in now if keep.get(p.marker.part) is not p), result)
    for part in parts:
        posted = keep.get(part.number)
        if posted is None and not create:
            continue
        if posted is None:
            created = sticky.client.create_comment(sticky.number, part.body)
            result.created += 1
            result.urls.append(created.html_url)
            continue
        if posted.handle.body != part.body:  # a concurrent run's copy survived: make it ours
            _edit_or_create(sticky, posted, part, result)
        result.urls.append(posted.handle.html_url)
