"""Terminal output: one place that knows about streams, colour and progress bars.

Tests pass their own streams; `NO_COLOR` is honoured (read by the CLI and passed in);
progress bars only appear on a terminal. A console is an immutable value: once the
secrets are known, a command derives a guarded console with `guarded(guard)`. Text a pull
request controls reaches the streams with its control and format characters shown as
escapes (reviewer/visible.py): only `Shown` text, already escaped, keeps its colour codes.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import shutil
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TextIO

from rich.console import Console as RichConsole
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from reviewer import proc
from reviewer.errors import ReviewerError
from reviewer.visible import Shown, continued, visible

DEFAULT_PAGER = ("less", "-FRX")
"""Like git: quit when the text fits one screen, keep colours, leave the text on screen."""


def pager_command(environ: Mapping[str, str]) -> tuple[str, ...] | None:
    """The pager `PAGER` names (default `less -FRX`); None when it is empty, `cat` or missing,
    or on a terminal that says it can do nothing (`TERM=dumb`)."""
    if environ.get("TERM") == "dumb":
        return None
    given = environ.get("PAGER")
    try:
        words = tuple(shlex.split(given)) if given is not None else DEFAULT_PAGER
    except ValueError:
        return None
    if not words or words[0] == "cat" or shutil.which(words[0]) is None:
        return None
    return words


class _RichConsole(RichConsole):
    def on_broken_pipe(self) -> None:
        # rich would exit 1 (a failure); the CLI ends a closed stream quietly itself.
        raise BrokenPipeError


@dataclass(frozen=True)
class Console:
    """Where the CLI writes: results to `out`, messages and progress to `err`."""

    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    no_color: bool = False
    """`NO_COLOR` was set: no colour on any stream."""
    guard: Callable[[str, str], None] | None = None
    """The leak guard every line passes before it is shown (None until secrets are known)."""
    pager: tuple[str, ...] | None = None
    """The pager for long results on a terminal (`pager_command`); None: never page."""
    commands_token: str | None = None
    """In GitHub Actions: the token workflow commands are stopped with for the run
    (`stopping_workflow_commands`), so that no text a pull request controls (a file name,
    a value shown in a diff) is taken for one; None elsewhere."""

    def guarded(self, guard: Callable[[str, str], None]) -> Console:
        """The same streams, every line passing `guard` (the finished redaction's leak guard)."""
        return replace(self, guard=guard)

    @cached_property
    def rich(self) -> RichConsole:
        """The styled writer for messages and progress bars (on `err`)."""
        # emoji=False: rich would turn `:warning:` in a file name into an emoji even without markup.
        return _RichConsole(
            file=self.err, no_color=self.no_color, highlight=False, soft_wrap=True, emoji=False
        )

    @property
    def colour(self) -> bool:
        """True when results go to a terminal and NO_COLOR is not set."""
        return self.out.isatty() and not self.no_color

    @property
    def interactive(self) -> bool:
        """True when messages go to a terminal."""
        return self.err.isatty()

    def check(self, text: str, location: str) -> None:
        """Run the leak guard on `text` (raises naming `location`, never the value)."""
        if self.guard is not None:
            self.guard(text, location)

    def shown(self, text: str, location: str) -> str:
        """`text` as it may be shown (`visible`, unless already `Shown`), after the leak guard
        passed both the text and what is shown."""
        self.check(text, location)
        if isinstance(text, Shown):
            return text
        shown = visible(text, keep_newlines=True)
        if shown != text:
            self.check(shown, location)
        return shown

    def info(self, message: str) -> None:
        """A progress or summary line."""
        self._say(message, None)

    def error(self, message: str) -> None:
        """A failure line (red on a terminal)."""
        self._say(message, "red")

    def warn(self, message: str) -> None:
        """A warning line (yellow on a terminal)."""
        self._say(message, "yellow")

    def _say(self, message: str, style: str | None) -> None:
        shown = continued(self.shown(message, "log"))
        try:
            self.rich.print(shown, style=style, markup=False)
        except BrokenPipeError:
            raise
        except OSError:
            # Messages only (a full disk or a failing device behind stderr): the results
            # still go out, and the exit status still tells how the run ended. rich keeps
            # what it could not write and would try it again with every later message.
            self.rich.file = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (the run's)

    @property
    def pages(self) -> bool:
        """True when results would go through the pager: a terminal and a pager to run."""
        return self.pager is not None and self.out.isatty()

    def write(self, text: str) -> None:
        """Write a result to standard output."""
        self._put(self.shown(text, "output"))

    def _put(self, shown: str) -> None:
        try:
            self.out.write(shown)
            self.out.flush()  # a full disk shows now, not as an error at exit
        except BrokenPipeError:
            raise
        except OSError as error:
            raise ReviewerError(
                f"cannot write the results to standard output ({error.strerror or error})"
            ) from error

    def workflow_command(self, line: str) -> None:
        """Write one workflow command of our own (`::notice ...`), letting the runner see it
        while commands are stopped."""
        if self.commands_token is None:
            self.write(f"{line}\n")
            return
        token = self.commands_token
        self.check(line, "output")
        # One line, whatever it quotes: the runner takes the commands only on this line.
        self.write(Shown(f"::{token}::\n{visible(line)}\n::stop-commands::{token}\n"))

    def page(self, text: str) -> None:
        """Show a long result through the pager on a terminal, else write it as it is."""
        shown = self.shown(text, "output")
        if self.pager is not None and self.pages:
            self.out.flush()
            if proc.feed(self.pager, shown):
                return
        self._put(shown)


@contextmanager
def progress_bar(console: Console, total: int, *, label: str) -> Iterator[Callable[[], None]]:
    """Yield an `advance()` callable; shows a bar only on a terminal."""
    if not console.interactive or total < 2:
        yield lambda: None
        return
    progress = Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console.rich,
        transient=True,
    )
    with progress:
        task = progress.add_task(label, total=total)
        yield lambda: progress.advance(task)


@contextmanager
def stopping_workflow_commands(environ: Mapping[str, str], err: TextIO) -> Iterator[str | None]:
    """In GitHub Actions, the runner takes any line of a step's output that starts with
    `::` (or holds `##[`) for a workflow command: one from a pull request's file names or
    values could add annotations, masks or stop the log. For the block, commands are
    stopped with a random token (yielded; None outside GitHub Actions)."""
    if environ.get("GITHUB_ACTIONS") != "true":
        yield None
        return
    token = secrets.token_hex(32)
    _say(err, f"::stop-commands::{token}")
    try:
        yield token
    finally:
        _say(err, f"::{token}::")


def _say(err: TextIO, line: str) -> None:
    with contextlib.suppress(OSError, ValueError):  # a closed stream: nothing more is read
        err.write(f"{line}\n")
        err.flush()
