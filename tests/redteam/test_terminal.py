"""Red team, terminals: no text from a pull request reaches a terminal as control characters.

A terminal obeys escape sequences in what it prints: OSC sets the window title (and on some
terminals writes the clipboard or more), SGR `8m` hides the lines after it, a carriage
return overwrites a line, and a bidirectional override reorders what the reader sees. A
pull request controls directory names, values and error messages, and reviewer prints all
three in its text report and its messages.
"""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

from conftest import GitRepo, git

from reviewer import yamlio
from reviewer.console import Console
from reviewer.visible import Shown, visible

_TITLE = "\x1b]0;owned\x07"  # OSC 0: set the window title
_HIDE = "\x1b[8m"  # SGR 8: conceal what follows
_OVERWRITE = "\r+ all good"
_REORDER = "\u202e"  # right-to-left override
# Lines of the report's own shape: a release removed, a reproduce command.
_FORGED = "\n- prod/forged/app [removed]\n  reproduce: evil"
_OURS = re.compile(r"\x1b\[(?:0|1|2|31|31;1|32|33|36)m")  # the text report's colours


def _hostile_change(git_repo: GitRepo) -> None:
    git_repo.add_template("broken", '{{ fail "stopped' + _TITLE + '" }}\n')
    git_repo.write("deployments/apps/web/deployment.yaml", "apps: [{template: app}]\n")
    git_repo.write("deployments/apps/bad/deployment.yaml", "apps: [{template: broken}]\n")
    git_repo.write("deployments/prod/eu/cluster.values.yaml", "where: eu\n")
    git_repo.write("deployments/prod/eu/apps/.keep", "")
    git_repo.commit("fleet")
    git(git_repo.root, "checkout", "--quiet", "-b", "feature")
    cluster = f"deployments/prod/eu{_TITLE}{_HIDE}{_OVERWRITE}{_FORGED} @octocat"
    git_repo.write(f"{cluster}/cluster.values.yaml", "where: there\n")
    git_repo.write(f"{cluster}/apps/.keep", "")
    git_repo.write("deployments/prod/eu/cluster.values.yaml", f"where: 'e{_REORDER}u'\n")


def _environment() -> dict[str, str]:
    local = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS", "NO_COLOR")}
    return {**local, "PAGER": "cat", "TERM": "xterm"}


def _on_a_terminal(root: Path) -> tuple[str, str]:
    """`reviewer diff` with its standard output on a pseudo-terminal (colour on), as a
    user runs it; returns what the terminal received and standard error."""
    leader, follower = pty.openpty()
    errors = root.parent / "stderr.txt"
    with (
        errors.open("wb") as error_file,
        subprocess.Popen(
            [sys.executable, "-m", "reviewer", "diff", "--base", "main", "-j1"],
            cwd=root,
            stdout=follower,
            stderr=error_file,
            env=_environment(),
        ) as process,
    ):
        os.close(follower)
        received = bytearray()
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            received += chunk
    os.close(leader)
    assert process.returncode == 1, errors.read_text()  # a release fails to render
    # The terminal turns each line feed into CR LF on its way out.
    return received.decode("utf-8").replace("\r\n", "\n"), errors.read_text(encoding="utf-8")


def _unprintable(text: str) -> set[str]:
    return {char for line in text.split("\n") for char in line if not char.isprintable()}


def test_a_terminal_receives_only_reviewers_own_colour_codes(git_repo: GitRepo) -> None:
    _hostile_change(git_repo)
    shown, errors = _on_a_terminal(git_repo.root)
    assert _OURS.search(shown), "the report is coloured on a terminal"
    assert _unprintable(_OURS.sub("", shown)) == set()
    assert _unprintable(errors) == set()
    assert not _forged(shown + errors)
    # What the pull request wrote is still there for the reader, as escapes.
    assert visible(f"prod/eu{_TITLE}{_HIDE}{_OVERWRITE}") in shown
    assert "stopped\\u001b]0;owned\\u0007" in shown
    assert "\\u202e" in shown


def test_piped_report_and_messages_hold_no_control_characters(git_repo: GitRepo) -> None:
    _hostile_change(git_repo)
    done = subprocess.run(
        [sys.executable, "-m", "reviewer", "diff", "--base", "main", "-j1"],
        cwd=git_repo.root,
        capture_output=True,
        env=_environment(),
        check=False,
    )
    assert done.returncode == 1, done.stderr
    shown, errors = done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
    assert _unprintable(shown) == _unprintable(errors) == set()
    cluster = visible(f"prod/eu{_TITLE}{_HIDE}{_OVERWRITE}{_FORGED} @octocat")
    # The release line names the release on one line.
    assert f"+ {cluster}/web/app [added]" in shown.split("\n")
    assert not _forged(shown + errors)
    # Its reproduce command is one line too, and runs exactly: bash's $'...' with escapes.
    reproduce = next(
        line.removeprefix("  reproduce: ")
        for line in shown.split("\n")
        if line.startswith("  reproduce: ") and "--cluster $'" in line
    )
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"  # where `reviewer` is
    again = subprocess.run(
        ["bash", "-c", reproduce],
        cwd=git_repo.root,
        capture_output=True,
        env={**_environment(), "PATH": path, "TMPDIR": str(git_repo.root.parent)},
    )
    assert again.returncode == 1
    assert "stopped\\u001b]0;owned\\u0007" in again.stdout.decode() + again.stderr.decode()
    assert "FAILED prod/eu\\u001b]0;owned\\u0007" in again.stderr.decode()


def _forged(text: str) -> list[str]:
    """Lines shaped like reviewer's own that a directory name or a template's message
    wrote after a line feed (release and object names are shown on one line; a line
    feed in a path or message continues its line, marked)."""
    return [
        line
        for line in text.split("\n")
        if line.startswith("- prod/forged") or line.strip().startswith("reproduce: evil")
    ]


def test_markdown_report_reaches_a_terminal_as_it_is_written_to_a_file(
    git_repo: GitRepo,
) -> None:
    """It escapes what a pull request controls itself; its own invisible word joiners (they
    keep GitHub from linking `@octocat`) must stay."""
    _hostile_change(git_repo)
    report = git_repo.root.parent / "report.md"
    command = [sys.executable, "-m", "reviewer", "diff", "--base", "main", "-j1"]
    command += ["--format", "markdown"]
    subprocess.run([*command, "-o", str(report)], cwd=git_repo.root, env=_environment())
    printed = subprocess.run(command, cwd=git_repo.root, capture_output=True, env=_environment())
    assert printed.stdout == report.read_bytes()
    assert _unprintable(report.read_text(encoding="utf-8")) == {"\u2060"}


def test_messages_and_results_are_shown_escaped() -> None:
    out, err = _Terminal(), _Terminal()
    console = Console(out=out, err=err)
    console.error(f"cannot read deployments/eu{_TITLE}/values.yaml: :warning: bad")
    console.write(f"built from deployments/eu{_HIDE}/values.yaml\n")
    assert err.getvalue().startswith("\x1b[31m")  # our colour
    assert "deployments/eu\\u001b]0;owned\\u0007/values.yaml: :warning: bad" in err.getvalue()
    assert out.getvalue() == "built from deployments/eu\\u001b[8m/values.yaml\n"
    console.write(Shown("@\u2060octocat \x1b[1mours\x1b[0m\n"))
    assert out.getvalue().endswith("@\u2060octocat \x1b[1mours\x1b[0m\n")


class _Terminal(io.StringIO):
    """A stream that says it is a terminal (rich colours what it writes)."""

    def isatty(self) -> bool:
        return True


def test_values_printed_with_escapes_still_load_as_the_same_values(git_repo: GitRepo) -> None:
    """`reviewer values ... > f && helm template -f f` must feed Helm what reviewer rendered:
    the YAML spells invisible characters with its own escapes, which load back as they were."""
    _hostile_change(git_repo)
    release = ["--cluster", "prod/eu", "--deployment", "web", "--release", "app"]
    for redact in ([], ["--no-redact"]):
        done = subprocess.run(
            [sys.executable, "-m", "reviewer", "values", ".", *release, *redact],
            cwd=git_repo.root,
            capture_output=True,
            env=_environment(),
            check=False,
        )
        assert done.returncode == 0, done.stderr
        printed = done.stdout.decode("utf-8")
        assert _unprintable(printed) == set()
        assert yamlio.load_mapping(printed, source="values")["where"] == f"e{_REORDER}u"


def test_file_names_that_are_not_utf8_are_reviewed_and_shown_escaped(
    git_repo: GitRepo,
) -> None:
    """git keeps any bytes in a name. A pull request adding such a file anywhere (here a
    top-level file and a new cluster) once crashed every review: the plan cache hashed
    the side's file names as UTF-8."""
    git_repo.write("deployments/apps/web/deployment.yaml", "apps: [{template: app}]\n")
    git_repo.write("deployments/prod/eu/cluster.values.yaml", "where: eu\n")
    git_repo.write("deployments/prod/eu/apps/.keep", "")
    git_repo.commit("fleet")
    git(git_repo.root, "checkout", "--quiet", "-b", "feature")
    root = os.fsencode(git_repo.root)
    for name in (b"README-\xff.md", b"deployments/prod/us\xfe/cluster.values.yaml"):
        os.makedirs(os.path.dirname(root + b"/" + name), exist_ok=True)
        with open(root + b"/" + name, "wb") as file:
            file.write(b"where: us\n")
    os.makedirs(root + b"/deployments/prod/us\xfe/apps")
    open(root + b"/deployments/prod/us\xfe/apps/.keep", "wb").close()
    git_repo.commit("names that are not UTF-8")
    command = [sys.executable, "-m", "reviewer", "diff", "--base", "main", "-j1"]
    for head in (["--head", "feature"], []):  # committed, and the working tree
        for output_format in ("text", "markdown"):
            done = subprocess.run(
                [*command, *head, "--format", output_format],
                cwd=git_repo.root,
                capture_output=True,
                env=_environment(),
                check=False,
            )
            assert done.returncode == 0, done.stderr.decode()
            shown = done.stdout.decode("utf-8")
            assert "prod/us\\udcfe/web/app" in shown
            assert _unprintable(shown) <= {"\u2060"}
