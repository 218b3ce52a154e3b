"""The `generated` kind: a converter's output, read as the `manifests` kind.

The command comes from the base side's `.reviewer.yaml` only (the configuration is
never read from the pull request), and runs once per side in a bubblewrap sandbox:
no network (every namespace unshared), a cleared environment, no secrets (no key
is passed in and $HOME is an empty tmpfs), the checkout mounted read-only at
`/src`, only `/usr` of the host visible, and CPU-time, memory and wall-clock
limits. It writes into `$OUT` (`/out`). Without a working sandbox it is not run:
the side fails with an error saying why.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from reviewer import decode as decoding
from reviewer import proc
from reviewer.errors import CommandError, RenderError, ReviewerError
from reviewer.model import WHOLE_DEPLOYMENT, ReleaseId, RenderedRelease
from reviewer.plan import Plan
from reviewer.sources.manifests import plan_tree
from reviewer.sources.protocol import PlanContext, SourceEntry
from reviewer.visible import shell_word, shell_words

KIND = "generated"
OPTIONS = ("command", "output", "timeoutSeconds", "memoryMiB")
BWRAP_ENV = "REVIEWER_BWRAP"
OUTPUT_LINES = 20
"""How many last lines of a failing generator's output the error shows."""
_INSTALL_HINT = "install bubblewrap (Debian: `apt-get install bubblewrap`)"
_HOST_LINKS = ("/bin", "/lib", "/lib64", "/sbin")
_SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
_SHOWN_COMMAND = 80


@dataclass(frozen=True)
class Generated:
    """A converter: `command` run in `paths[0]` of the checkout, manifests read from `output`."""

    name: str
    workdir: str
    command: tuple[str, ...]
    output: str = "."
    timeout_seconds: int = 300
    memory_mib: int = 2048

    def describe(self) -> str:
        """`generated 'compositions': <command> in bundles/`."""
        line = shell_words(self.command)
        if "\n" in line or len(line) > _SHOWN_COMMAND:
            line = f"{shell_word(self.command[0])} ... ({len(self.command)} arguments)"
        return f"{KIND} '{self.name}': {line} in {self.workdir}/"

    def plan(self, context: PlanContext) -> Plan:
        """Run the generator over this checkout, then read its output as manifests."""
        if context.twin:
            return Plan()
        with tempfile.TemporaryDirectory(prefix="reviewer-generated-") as scratch:
            out = Path(scratch, "out")
            out.mkdir()
            try:
                bwrap = find_bwrap(context.programs.lookup())
                run(self, checkout=context.root, out=out, bwrap=bwrap)
            except ReviewerError as error:
                reproduce = f"(cd {shell_word(self.workdir)} && {shell_words(self.command)})"
                # The whole source fails (`*/*`): its object sets are unknown on this side.
                failure = RenderedRelease(
                    id=ReleaseId(self.name, WHOLE_DEPLOYMENT, WHOLE_DEPLOYMENT),
                    namespace="",
                    error=error.render(),
                    reproduce=reproduce,
                )
                return Plan(objects=(failure,))
            plan = plan_tree(self.name, [self.output], replace(context, root=out))
        # Output files are not repository files: every object set comes from the workdir.
        inputs = frozenset({self.workdir} if self.workdir != "." else ())
        return replace(plan, inputs={rid: inputs for rid in plan.inputs})


def decode(entry: SourceEntry) -> Generated:
    """`paths: [<working directory>]`, `command: [argv...]`, optional `output`, limits."""
    at, options = entry.at, entry.options
    entry.check_options(OPTIONS)
    if len(entry.paths) > 1:
        raise at.key("paths").error("a generated source has one path: where its command runs")
    command = decoding.required(options, "command", at, decoding.strings)
    if not command or not command[0]:
        raise at.key("command").error("must be a non-empty list: the program and its arguments")
    return Generated(
        name=entry.name,
        workdir=entry.paths[0] if entry.paths else ".",
        command=command,
        output=decoding.optional(options, "output", at, _relative, "."),
        timeout_seconds=decoding.optional(options, "timeoutSeconds", at, _positive, 300),
        memory_mib=decoding.optional(options, "memoryMiB", at, _positive, 2048),
    )


def detect(root: Path) -> Sequence[Generated]:
    """Never detected: a command runs only when the base side's settings declare it."""
    return []


def _relative(value: object, at: decoding.Field) -> str:
    text = decoding.string(value, at)
    if text.startswith("/") or ".." in text.split("/"):
        raise at.error("must be a relative directory inside the generator's output")
    return text.strip("/") or "."


def _positive(value: object, at: decoding.Field) -> int:
    return decoding.integer(value, at, minimum=1)


# --- the sandbox ----------------------------------------------------------------------


def find_bwrap(environ: Mapping[str, str]) -> Path:
    """The bubblewrap executable (`$REVIEWER_BWRAP`, else `bwrap` on PATH).

    `environ` holds PATH and the override (`Programs.lookup()`), never this process's own.
    """
    name = environ.get(BWRAP_ENV, "").strip() or "bwrap"
    found = shutil.which(name, path=environ.get("PATH", os.defpath))
    if found is None:
        raise RenderError(
            "generated sources need bubblewrap (bwrap), not found", hint=_INSTALL_HINT
        )
    return Path(found)


def sandbox_argv(bwrap: Path, *, checkout: Path, out: Path, workdir: str) -> list[str]:
    """bwrap's arguments up to `--`: no namespace shared, the host's /usr only, no environment."""
    argv = [str(bwrap), "--unshare-all", "--die-with-parent", "--new-session", "--clearenv"]
    argv += ["--ro-bind", "/usr", "/usr"]
    for link in _HOST_LINKS:
        if os.path.islink(link):
            argv += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            argv += ["--ro-bind", link, link]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/home"]
    argv += ["--ro-bind", str(checkout), "/src", "--bind", str(out), "/out"]
    argv += ["--chdir", posixpath.normpath(f"/src/{workdir}")]
    for name, value in (("HOME", "/tmp"), ("PATH", _SANDBOX_PATH), ("OUT", "/out")):
        argv += ["--setenv", name, value]
    argv += ["--setenv", "LANG", "C.UTF-8"]
    return argv


def probe(bwrap: Path, *, checkout: Path, out: Path) -> None:
    """Fail closed when the sandbox cannot start here (e.g. no user namespaces)."""
    argv = [*sandbox_argv(bwrap, checkout=checkout, out=out, workdir="."), "--", "/usr/bin/true"]
    command = proc.Command(tuple(argv), env={"PATH": _SANDBOX_PATH})
    try:
        proc.run(command, timeout=30, show_output=False)
    except CommandError:
        raise RenderError(
            "the generator sandbox (bubblewrap) cannot start on this machine, "
            "so the generator was not run",
            hint="bubblewrap needs user namespaces (kernel.unprivileged_userns_clone=1, or root); "
            "a generator never runs outside the sandbox",
        ) from None


def run(generator: Generated, *, checkout: Path, out: Path, bwrap: Path) -> None:
    """Run the generator in `bwrap`'s sandbox; a failure is a `RenderError` with its last lines."""
    probe(bwrap, checkout=checkout, out=out)
    memory = generator.memory_mib * 1024 * 1024
    limits = ["/usr/bin/prlimit", f"--as={memory}", f"--cpu={generator.timeout_seconds}", "--"]
    argv = sandbox_argv(bwrap, checkout=checkout, out=out, workdir=generator.workdir)
    command = proc.Command(
        (*argv, "--", *limits, *generator.command),
        env={"PATH": _SANDBOX_PATH},
        ok_codes=tuple(range(-64, 256)),
    )
    try:
        done = proc.run(command, timeout=generator.timeout_seconds, show_output=False)
    except CommandError:
        raise RenderError(
            f"generator '{generator.name}' did not finish within {generator.timeout_seconds}s"
        ) from None
    if done.returncode != 0:
        raise RenderError(
            f"generator '{generator.name}' failed with exit code {done.returncode}; "
            f"last lines of its output:\n{_last_lines(done.stdout + done.stderr)}"
        )


def _last_lines(output: bytes) -> str:
    lines = output.decode("utf-8", "replace").rstrip("\n").splitlines()[-OUTPUT_LINES:]
    return "\n".join(f"    {line}" for line in lines) or "    (no output)"
