"""The one place where external commands run (helm, sops, git, dyff).

A `Command` is data whose `str()` is a copy-pasteable shell line, so errors and
reproduction hints show exactly what ran. Output shown in errors passes through
a scrubber so secrets handed to a command never reach a message.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reviewer.errors import CommandError

Scrubber = Callable[[str], str]


def _no_scrub(text: str) -> str:
    return text


@dataclass(frozen=True)
class Command:
    """An external command: argv, working directory, extra environment, accepted exit codes.

    `clear_env` runs it with `env` only, not on top of this process's environment.
    """

    argv: tuple[str, ...]
    cwd: Path | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    ok_codes: tuple[int, ...] = (0,)
    clear_env: bool = False

    def __str__(self) -> str:
        line = shlex.join(self.argv)
        return f"(cd {shlex.quote(str(self.cwd))} && {line})" if self.cwd else line


@dataclass(frozen=True)
class Completed:
    """What a finished command returned."""

    returncode: int
    stdout: bytes
    stderr: bytes


def run(
    command: Command,
    *,
    stdin: bytes | None = None,
    timeout: float = 300.0,
    scrub: Scrubber = _no_scrub,
    show_output: bool = True,
) -> Completed:
    """Run `command`; raise `CommandError` (command, code, scrubbed streams) on a bad exit."""
    env = dict(command.env) if command.clear_env else {**os.environ, **command.env}
    try:
        done = subprocess.run(
            list(command.argv),
            cwd=command.cwd,
            env=env,
            input=stdin,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as exc:
        raise CommandError(f"command not found: {command.argv[0]}") from exc
    except subprocess.TimeoutExpired as exc:
        raise CommandError(f"command timed out after {timeout:.0f}s: {command}") from exc
    if done.returncode in command.ok_codes:
        return Completed(done.returncode, done.stdout, done.stderr)
    raise CommandError(_failure_message(command, done, scrub, show_output))


def _failure_message(
    command: Command,
    done: subprocess.CompletedProcess[bytes],
    scrub: Scrubber,
    show_output: bool,
) -> str:
    lines = [f"command failed with exit code {done.returncode}: {command}"]
    if not show_output:
        return lines[0]
    for name, stream in (("stdout", done.stdout), ("stderr", done.stderr)):
        text = scrub(stream.decode("utf-8", "replace")).strip()
        if text:
            lines.append(f"{name}:\n{_indent(text)}")
    return "\n".join(lines)


def _indent(text: str, limit: int = 4000) -> str:
    if len(text) > limit:
        text = text[:limit] + "\n[... output truncated]"
    return "\n".join("    " + line for line in text.splitlines())


def argv(*parts: str | Path) -> tuple[str, ...]:
    """Build an argv tuple from strings and paths."""
    return tuple(str(part) for part in parts)


def join(parts: Sequence[str]) -> str:
    """Shell-quote a command line for display."""
    return shlex.join(parts)


def feed(argv_: Sequence[str], text: str) -> bool:
    """Run an interactive program (a pager) on this terminal with `text` as its input.

    Returns False when it cannot start; the user quitting early is not an error.
    """
    try:
        process = subprocess.Popen(list(argv_), stdin=subprocess.PIPE)
    except OSError:
        return False
    assert process.stdin is not None
    try:
        process.stdin.write(text.encode("utf-8"))
        process.stdin.close()
    except BrokenPipeError:
        pass
    process.wait()
    return True
