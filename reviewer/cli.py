"""Command-line interface: parses arguments and dispatches; no logic lives here."""

from __future__ import annotations

import sys
import tempfile
import traceback
from collections.abc import Sequence
from pathlib import Path

import click

from reviewer import __version__
from reviewer.commands import render as render_cmd
from reviewer.console import Console
from reviewer.discover import Layout
from reviewer.errors import ExitStatus, ReviewerError
from reviewer.side import Selection, SideOptions

_REPO = click.argument(
    "repo", required=False, default=".", type=click.Path(exists=True, file_okay=False)
)


def _layout_options(function: click.decorators.FC) -> click.decorators.FC:
    function = click.option(
        "--definitions",
        default="deployments",
        show_default=True,
        help="Definitions root (clusters, groups, deployments), relative to the repository.",
    )(function)
    return click.option(
        "--templates",
        default="templates",
        show_default=True,
        help="App templates root, relative to the repository.",
    )(function)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="reviewer")
def cli() -> None:
    """Render hierarchical GitOps Helm fleets and review what a change does to them."""


@cli.command()
@_REPO
@click.option(
    "--out",
    "-o",
    required=True,
    type=click.Path(file_okay=False),
    help="Directory to write the rendered releases and index.json to.",
)
@click.option(
    "--cluster",
    "clusters",
    multiple=True,
    help="Only this cluster (path like group/name, or its name). Repeatable.",
)
@click.option(
    "--deployment", "deployments", multiple=True, help="Only this deployment. Repeatable."
)
@_layout_options
def render(
    repo: str,
    out: str,
    clusters: tuple[str, ...],
    deployments: tuple[str, ...],
    definitions: str,
    templates: str,
) -> None:
    """Render every release of REPO (default: current directory) into --out."""
    options = SideOptions(
        layout=Layout(definitions=definitions, templates=templates),
        selection=Selection(clusters=clusters, deployments=deployments),
        display_root=repo,
    )
    args = render_cmd.RenderArgs(repo=Path(repo), out=Path(out), options=options)
    sys.exit(render_cmd.run(args, Console()))


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: maps every exception to the documented exit status."""
    console = Console()
    try:
        cli.main(args=argv, prog_name="reviewer", standalone_mode=False)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.UsageError as exc:
        console.error(exc.format_message())
        if exc.ctx is not None:
            console.error(exc.ctx.get_usage())
        sys.exit(ExitStatus.USAGE)
    except click.Abort:
        console.error("aborted")
        sys.exit(ExitStatus.USAGE)
    except ReviewerError as exc:
        console.error(f"error: {exc.render()}")
        sys.exit(ExitStatus.INVALID_REPOSITORY)
    except Exception:
        sys.exit(_bug(console))
    sys.exit(ExitStatus.OK)


def _bug(console: Console) -> ExitStatus:
    with tempfile.NamedTemporaryFile(
        "w", prefix="reviewer-crash-", suffix=".log", delete=False
    ) as log:
        traceback.print_exc(file=log)
    console.error(f"reviewer hit an unexpected error; this is a bug. Details: {log.name}")
    return ExitStatus.BUG
