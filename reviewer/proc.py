"""The one place where external commands run (helm, sops, git, dyff).

A `Command` is data whose `str()` is a copy-pasteable shell line, so errors and
reproduction hints show exactly what ran. Output shown in errors passes through
a scrubber so secrets handed to a command never reach a message. A command sees only
the environment it is given: what each program may see comes from `Programs`, which the
edge (`cli.main`) builds from the environment once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from reviewer.errors import CommandError
from reviewer.visible import shell_word, shell_words

Scrubber = Callable[[str], str]


def _no_scrub(text: str) -> str:
    return text


@dataclass(frozen=True)
class Command:
    """An external command: argv, working directory, environment, accepted exit codes.

    `env` is the command's whole environment: nothing of this process's is inherited.
    """

    argv: tuple[str, ...]
    cwd: Path | None = None
    # Kept out of repr: it may hold keys (sops) that a debug print must never show.
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    ok_codes: tuple[int, ...] = (0,)

    def __str__(self) -> str:
        line = shell_words(self.argv)
        return f"(cd {shell_word(str(self.cwd))} && {line})" if self.cwd else line


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
    try:
        done = subprocess.run(
            list(command.argv),
            cwd=command.cwd,
            env=dict(command.env),
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


# Variables sops and its key services read: age and PGP keys, and the cloud KMS clients'
# credentials (AWS, GCP, Azure, Vault); proxies and CA bundles for reaching those services.
_SOPS_PREFIXES = ("SOPS_", "AWS_", "GOOGLE_", "CLOUDSDK_", "AZURE_", "VAULT_", "GNUPG", "GPG_")
_SOPS_NAMES = frozenset(
    {
        "XDG_CONFIG_HOME",
        "IDENTITY_ENDPOINT",
        "IDENTITY_HEADER",
        "MSI_ENDPOINT",
        "MSI_SECRET",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        *(
            name
            for proxy in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")
            for name in (proxy, proxy.lower())
        ),
    }
)
# Where git finds the user's and the system's configuration (safe.directory, which CI
# container jobs set globally); GIT_DIR and the like are left out: `-C` names the repository.
_GIT_PREFIXES = ("GIT_CONFIG_",)
_GIT_NAMES = frozenset(
    {"XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM"}
)
_OVERRIDES = ("REVIEWER_SOPS", "REVIEWER_KUBECTL", "REVIEWER_BWRAP")


@dataclass(frozen=True)
class Programs:
    """What of this process's environment each external program may see, read at the edge.

    The default sees nothing: programs are looked up on the system's default PATH only.
    """

    search_path: str = os.defpath
    home: str | None = None
    overrides: Mapping[str, str] = field(default_factory=dict)
    """`$REVIEWER_SOPS`, `$REVIEWER_KUBECTL`, `$REVIEWER_BWRAP`: executables to use."""
    # Out of repr: key material and credentials in git settings are never printed.
    sops_keys: Mapping[str, str] = field(default_factory=dict, repr=False)
    git_config: Mapping[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> Programs:
        """The parts of `environ` programs need; the rest never reaches a child."""
        return cls(
            search_path=environ.get("PATH", os.defpath),
            home=environ.get("HOME"),
            overrides={name: environ[name] for name in _OVERRIDES if name in environ},
            sops_keys=_picked(environ, _SOPS_PREFIXES, _SOPS_NAMES),
            git_config=_picked(environ, _GIT_PREFIXES, _GIT_NAMES),
        )

    def lookup(self) -> dict[str, str]:
        """What executables are found with: PATH and the `$REVIEWER_*` overrides."""
        return {"PATH": self.search_path, **self.overrides}

    def plain(self) -> dict[str, str]:
        """The environment of a program that needs none of the user's settings (dyff)."""
        return {"PATH": self.search_path}

    def sops(self) -> dict[str, str]:
        """sops's environment: its keys, the KMS credentials, HOME for their default files."""
        return {**self.plain(), **self._home(), **self.sops_keys}

    def git(self) -> dict[str, str]:
        """git's environment: HOME and the configuration variables, nothing else."""
        return {**self.plain(), **self._home(), **self.git_config}

    def _home(self) -> dict[str, str]:
        return {"HOME": self.home} if self.home is not None else {}


def _picked(
    environ: Mapping[str, str], prefixes: tuple[str, ...], names: frozenset[str]
) -> dict[str, str]:
    return {
        name: value for name, value in environ.items() if name in names or name.startswith(prefixes)
    }


def argv(*parts: str | Path) -> tuple[str, ...]:
    """Build an argv tuple from strings and paths."""
    return tuple(str(part) for part in parts)


def join(parts: Sequence[str]) -> str:
    """Shell-quote a command line for display."""
    return shell_words(parts)


def feed(argv_: Sequence[str], text: str) -> bool:
    """Run an interactive program (a pager) on this terminal with `text` as its input.

    Returns False when it cannot start; the user quitting early is not an error.
    """
    try:
        process = subprocess.Popen(list(argv_), stdin=subprocess.PIPE)
    except OSError:
        return False
    assert process.stdin is not None
    # Ctrl-C in the pager is the pager's (less stops a search with it): as git does,
    # reviewer waits on, instead of ending and leaving the pager on the terminal.
    with _ignoring_interrupts():
        try:
            process.stdin.write(text.encode("utf-8"))
            process.stdin.close()
        except BrokenPipeError:
            pass
        process.wait()
    return True


@contextmanager
def _ignoring_interrupts() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread can set handlers, and only it gets SIGINT
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


ISOLATED_GIT = Programs().git()
"""git's environment when the edge hands none down: no user or system configuration."""
