"""Benchmark `reviewer diff` against a one-`helm template`-process-per-release baseline.

For each scenario (see `fleet.py`): build a synthetic fleet committed as
`main`, make the pull-request change in the working tree, then measure

- `python -m reviewer diff --repo R --base main --format json --output FILE`
  (wall time and peak memory of the child process tree, cold chart cache);
- the baseline: every release of both sides rendered with its own
  `helm template NAME CHART -n NS -f values.json` process, the per-release
  inputs taken from reviewer's own planner (so both render the same thing),
  sequentially or `--baseline-jobs N` at a time, optionally on a sample of
  `--baseline-sample K` releases per side extrapolated to all of them;

and once per fleet a full single-side `python -m reviewer render R --out DIR`.
Prints one table; `--json FILE` also writes every number.

    .venv/bin/python benchmarks/run.py --releases 2000 --scenario all --baseline-sample 100
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet import SCENARIOS, Change, Shape, apply_scenario, build_fleet, git, reset

MB = 1024 * 1024


# -- measuring child processes ---------------------------------------------------------


@dataclass
class Measurement:
    """One child process run: wall time, exit status and memory."""

    wall: float
    returncode: int
    maxrss_mb: float  # ru_maxrss from wait4: the largest process of the tree
    tree_peak_mb: float  # sampled sum of RSS over the process and its descendants
    stderr_tail: str = ""

    @property
    def peak_mb(self) -> float:
        """Peak memory: the sampled tree sum, or the largest process if sampling missed it."""
        return max(self.maxrss_mb, self.tree_peak_mb)


class TreeSampler(threading.Thread):
    """Polls /proc for the summed RSS of a process and all its descendants (Linux only)."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.interval = interval
        self.peak = 0
        self._stop_event = threading.Event()
        self._page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

    def run(self) -> None:
        """Sample until stopped."""
        while not self._stop_event.is_set():
            self.peak = max(self.peak, self._tree_rss())
            self._stop_event.wait(self.interval)

    def stop(self) -> None:
        """Stop sampling and wait for the thread."""
        self._stop_event.set()
        self.join()

    def _tree_rss(self) -> int:
        children: dict[int, list[int]] = {}
        rss: dict[int, int] = {}
        try:
            entries = os.listdir("/proc")
        except OSError:
            return 0
        for entry in entries:
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                    stat = handle.read()
                with open(f"/proc/{entry}/statm", encoding="ascii") as handle:
                    resident = int(handle.read().split()[1]) * self._page
            except (OSError, ValueError, IndexError):
                continue
            # Field 4 (ppid) follows the parenthesised command name, which may hold spaces.
            ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
            children.setdefault(ppid, []).append(int(entry))
            rss[int(entry)] = resident
        total, stack = 0, [self.pid]
        while stack:
            pid = stack.pop()
            total += rss.get(pid, 0)
            stack.extend(children.get(pid, ()))
        return total


def measure(
    command: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    stdout: Path | None = None,
    sample_tree: bool = True,
    cwd: Path | None = None,
) -> Measurement:
    """Run `command`, reaping it with wait4 for its own peak RSS; sample its process tree."""
    with tempfile.TemporaryFile() as err, _output(stdout) as out:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=err, env=env, cwd=cwd)
        sampler = TreeSampler(process.pid) if sample_tree else None
        if sampler is not None:
            sampler.start()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        if sampler is not None:
            sampler.stop()
        process.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        tail = err.read()[-4000:].decode("utf-8", "replace")
    return Measurement(
        wall=wall,
        returncode=process.returncode,
        maxrss_mb=usage.ru_maxrss * 1024 / MB,  # Linux reports kilobytes
        tree_peak_mb=(sampler.peak if sampler is not None else 0) / MB,
        stderr_tail=tail,
    )


@contextmanager
def _output(path: Path | None) -> Iterator[Any]:
    if path is None:
        with open(os.devnull, "wb") as sink:
            yield sink
    else:
        with path.open("wb") as sink:
            yield sink


# -- reviewer runs ---------------------------------------------------------------------


@dataclass
class ReviewerRun:
    """`reviewer diff` or `reviewer render`, measured (median wall of the repeats)."""

    command: str
    wall: float
    peak_mb: float
    maxrss_mb: float
    walls: list[float]
    returncode: int
    changed: int | None = None
    summary: dict[str, Any] = field(default_factory=dict)


def _child_env(scratch: Path, sops: bool) -> dict[str, str]:
    """A cold chart cache per run, no colour, the demo SOPS key when the fleet has secrets."""
    env = dict(os.environ)
    cache = Path(tempfile.mkdtemp(prefix="cache-", dir=scratch))
    env["XDG_CACHE_HOME"] = str(cache)
    env["NO_COLOR"] = "1"
    # pip compiles an installed reviewer's bytecode at install time; where the environment
    # forbids writing bytecode (some sandboxes), every measured run compiled the source again.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if sops:
        env["SOPS_AGE_KEY_FILE"] = str(
            Path(__file__).resolve().parent.parent / "examples" / "fleet" / "demo-age-key.txt"
        )
    return env


def run_reviewer(
    command: list[str],
    *,
    scratch: Path,
    sops: bool,
    repeat: int,
    report: Path | None = None,
    warm: bool = False,
) -> ReviewerRun:
    """Run a reviewer command `repeat` times; fails loudly on an unexpected exit status.

    `warm`: one unmeasured run first fills a chart and render cache that every measured
    run then shares (the second review of the same pull request).
    """
    runs: list[Measurement] = []
    shared = _child_env(scratch, sops) if warm else None
    if shared is not None:
        filled = measure(command, env=shared, cwd=scratch)
        if filled.returncode not in (0, 2):
            raise RuntimeError(f"{shlex.join(command)} exited {filled.returncode}")
    for _ in range(repeat):
        # cwd: a neutral directory, so `python -m reviewer` imports the installed package
        # (or PYTHONPATH's), not a `reviewer/` that happens to be in the caller's cwd.
        done = measure(command, env=shared or _child_env(scratch, sops), cwd=scratch)
        if done.returncode not in (0, 2):
            raise RuntimeError(
                f"{shlex.join(command)} exited {done.returncode}:\n{done.stderr_tail}"
            )
        runs.append(done)
    result = ReviewerRun(
        command=shlex.join(command),
        wall=statistics.median(run.wall for run in runs),
        peak_mb=max(run.peak_mb for run in runs),
        maxrss_mb=max(run.maxrss_mb for run in runs),
        walls=[run.wall for run in runs],
        returncode=runs[-1].returncode,
    )
    if report is not None and report.is_file():
        document = json.loads(report.read_text(encoding="utf-8"))
        summary = document.get("summary", {}).get("releases", {})
        result.summary = summary
        result.changed = summary.get("changed")
    return result


# -- the per-release-process baseline --------------------------------------------------


@dataclass(frozen=True)
class BaselineRelease:
    """What one `helm template` process needs."""

    name: str
    namespace: str
    chart: Path
    values: dict[str, Any]


def plan_releases(root: Path, *, sops: bool) -> tuple[list[BaselineRelease], int]:
    """Every release of the checkout at `root` from reviewer's planner; and the plan errors."""
    from reviewer.gotmpl import TemplateRenderer
    from reviewer.side import SideOptions, plan_twins

    secrets = None
    if sops:
        from reviewer.proc import Programs
        from reviewer.sops import SopsDecoder

        # This script is its own edge: sops sees the key variables of its environment.
        secrets = SopsDecoder(programs=Programs.from_environment(os.environ))
    planned = plan_twins(root, options=SideOptions(), renderer=TemplateRenderer(), secrets=secrets)
    releases: list[BaselineRelease] = []
    for release in sorted(planned.plan.releases, key=lambda r: r.id):
        if release.chart.local is None:
            raise RuntimeError(f"{release.id}: the baseline handles local charts only")
        releases.append(
            BaselineRelease(
                name=release.id.release,
                namespace=release.namespace,
                chart=root / release.chart.local,
                values=release.values,
            )
        )
    return releases, len(planned.plan.errors)


@dataclass
class BaselineSide:
    """One side of the baseline, measured on all or a sample of its releases."""

    releases: int
    measured: int
    wall: float  # of the measured releases
    failures: int
    max_process_mb: float
    plan_seconds: float

    @property
    def estimated_wall(self) -> float:
        """Wall time for every release (extrapolated linearly from the sample)."""
        return self.wall * self.releases / self.measured if self.measured else 0.0


@dataclass
class BaselineRun:
    """Both sides of the baseline for one scenario."""

    base: BaselineSide
    head: BaselineSide
    jobs: int

    @property
    def wall(self) -> float:
        """helm processes of both sides (planning excluded)."""
        return self.base.estimated_wall + self.head.estimated_wall

    @property
    def extrapolated(self) -> bool:
        """True when a sample stands for the whole side."""
        return self.base.measured < self.base.releases or self.head.measured < self.head.releases


def _sample(releases: list[BaselineRelease], k: int | None) -> list[BaselineRelease]:
    """`k` releases spread evenly over the (sorted) list; all of them without `k`."""
    if k is None or k >= len(releases):
        return releases
    step = len(releases) / k
    return [releases[int(i * step)] for i in range(k)]


def _helm_env(scratch: Path) -> dict[str, str]:
    """Helm isolated from the user's configuration (no repositories, no kubeconfig)."""
    home = Path(tempfile.mkdtemp(prefix="helm-", dir=scratch))
    kubeconfig = home / "kubeconfig"
    kubeconfig.write_text("", encoding="utf-8")
    env = dict(os.environ)
    env.update(
        HELM_CACHE_HOME=str(home / "cache"),
        HELM_CONFIG_HOME=str(home / "config"),
        HELM_DATA_HOME=str(home / "data"),
        KUBECONFIG=str(kubeconfig),
    )
    return env


def render_baseline_side(
    root: Path,
    *,
    helm: Path,
    scratch: Path,
    sample: int | None,
    jobs: int,
    sops: bool,
) -> BaselineSide:
    """Plan the checkout at `root`, then one `helm template` per (sampled) release."""
    started = time.perf_counter()
    releases, plan_errors = plan_releases(root, sops=sops)
    plan_seconds = time.perf_counter() - started
    chosen = _sample(releases, sample)
    work = Path(tempfile.mkdtemp(prefix="baseline-", dir=scratch))
    env = _helm_env(scratch)

    def one(index_release: tuple[int, BaselineRelease]) -> Measurement:
        index, release = index_release
        values = work / f"{index}.values.json"
        values.write_text(json.dumps(release.values, default=str), encoding="utf-8")
        command = [
            str(helm),
            "template",
            release.name,
            str(release.chart),
            "-n",
            release.namespace,
            "-f",
            str(values),
        ]
        return measure(command, env=env, stdout=work / f"{index}.yaml", sample_tree=False)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = list(pool.map(one, enumerate(chosen)))
    wall = time.perf_counter() - started
    failures = sum(1 for result in results if result.returncode != 0) + plan_errors
    if failures:
        first = next((r.stderr_tail for r in results if r.returncode != 0), "plan errors")
        print(f"  warning: {failures} baseline failure(s), first: {first.strip()[:300]}")
    return BaselineSide(
        releases=len(releases),
        measured=len(chosen),
        wall=wall,
        failures=failures,
        max_process_mb=max((r.maxrss_mb for r in results), default=0.0),
        plan_seconds=plan_seconds,
    )


@contextmanager
def base_checkout(repo: Path, scratch: Path) -> Iterator[Path]:
    """`main` in a temporary detached worktree, removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="base-", dir=scratch)) / "tree"
    git(repo, "worktree", "add", "--detach", "--quiet", str(path), "main")
    try:
        yield path
    finally:
        git(repo, "worktree", "remove", "--force", str(path))
        git(repo, "worktree", "prune")


def run_baseline(
    repo: Path, *, helm: Path, scratch: Path, sample: int | None, jobs: int, sops: bool
) -> BaselineRun:
    """Base side from `main`, head side from the working tree."""

    def side(root: Path) -> BaselineSide:
        return render_baseline_side(
            root, helm=helm, scratch=scratch, sample=sample, jobs=jobs, sops=sops
        )

    with base_checkout(repo, scratch) as base_root:
        base = side(base_root)
    return BaselineRun(base=base, head=side(repo), jobs=jobs)


# -- the floor -------------------------------------------------------------------------


FLOOR = Path(__file__).resolve().parent / "floor.py"


def run_floor(python: str, repo: Path, *, scratch: Path, repeat: int) -> float:
    """Median wall of reading and hashing every input of both sides (`floor.py`), no render."""
    command = [python, str(FLOOR), str(repo), "--base", "main"]
    walls = []
    for _ in range(repeat):
        done = measure(command, cwd=scratch, sample_tree=False)
        if done.returncode != 0:
            failed = f"{shlex.join(command)} exited {done.returncode}"
            raise RuntimeError(f"{failed}:\n{done.stderr_tail}")
        walls.append(done.wall)
    return statistics.median(walls)


# -- the benchmark ---------------------------------------------------------------------


@dataclass
class ScenarioResult:
    """Everything measured for one scenario."""

    scenario: str
    change: Change
    releases: int
    diff: ReviewerRun
    baseline: BaselineRun | None
    floor: float = 0.0
    """Median wall of `floor.py`: reading and hashing every input of both sides."""


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Benchmark reviewer diff against one helm template process per release.",
    )
    size = parser.add_mutually_exclusive_group()
    size.add_argument(
        "--releases",
        type=_positive,
        default=200,
        help="releases per side (default 200; shape chosen)",
    )
    size.add_argument(
        "--shape", type=Shape.parse, help="GROUPSxCLUSTERSxDEPLOYMENTSxINSTANCES, e.g. 4x10x10x5"
    )
    parser.add_argument(
        "--scenario", choices=[*SCENARIOS, "all"], default="all", help="default: all"
    )
    parser.add_argument("--seed", type=int, default=7, help="fleet generator seed (default 7)")
    parser.add_argument("--sops", action="store_true", help="add SOPS files (demo age key)")
    parser.add_argument(
        "--reviewer-args",
        default="",
        help='extra options for both `reviewer diff` and `reviewer render`, e.g. "--jobs 2"',
    )
    parser.add_argument("--diff-args", default="", help="extra options for `reviewer diff` only")
    parser.add_argument(
        "--python", default=sys.executable, help="interpreter that runs reviewer (default: this)"
    )
    parser.add_argument("--repeat", type=_positive, default=1, help="reviewer runs per measurement")
    parser.add_argument(
        "--warm",
        action="store_true",
        help="run each reviewer command once unmeasured to fill the chart and render caches, "
        "then measure runs that share them (default: every run cold)",
    )
    parser.add_argument(
        "--baseline-sample",
        type=_positive,
        metavar="K",
        help="time K releases per side and extrapolate (default: every release)",
    )
    parser.add_argument(
        "--baseline-jobs", type=_positive, default=1, help="helm processes at once (default 1)"
    )
    parser.add_argument("--no-baseline", action="store_true", help="skip the helm baseline")
    parser.add_argument("--no-render", action="store_true", help="skip the full single-side render")
    parser.add_argument("--helm", type=Path, help="helm binary (default: reviewer's find_helm())")
    parser.add_argument("--workdir", type=Path, help="keep fleets and reports here (default: temp)")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    return parser.parse_args(argv)


def main(argv: Sequence[str]) -> int:
    """Run the benchmark and print the table."""
    args = _parse(argv)
    shape: Shape = args.shape or Shape.for_releases(args.releases)
    scenarios = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    if args.sops:
        os.environ.setdefault(
            "SOPS_AGE_KEY_FILE",
            str(Path(__file__).resolve().parent.parent / "examples" / "fleet" / "demo-age-key.txt"),
        )
    helm: Path | None = None
    if not args.no_baseline:
        from reviewer.engine import find_helm

        helm = find_helm(args.helm)
    common = shlex.split(args.reviewer_args)
    diff_extra = shlex.split(args.diff_args)
    reviewer = [args.python, "-m", "reviewer"]

    load_before = _load()
    with _workdir(args.workdir) as scratch:
        print(
            f"fleet shape {shape} (groups x clusters x deployments x instances): "
            f"{shape.releases} releases per side; workdir {scratch}"
        )
        print(f"  reviewer: {_reviewer_location(args.python, scratch)}")
        started = time.perf_counter()
        repo = build_fleet(scratch / "fleet", shape, seed=args.seed, sops=args.sops)
        print(f"  generated and committed in {time.perf_counter() - started:.1f} s")

        full: ReviewerRun | None = None
        if not args.no_render:
            out = scratch / "render"
            command = [*reviewer, "render", str(repo), "--out", str(out), *common]
            full = run_reviewer(
                command, scratch=scratch, sops=args.sops, repeat=args.repeat, warm=args.warm
            )
            print(f"  full render: {full.wall:.2f} s, {full.peak_mb:.0f} MB")

        results: list[ScenarioResult] = []
        for scenario in scenarios:
            reset(repo)
            change = apply_scenario(repo, shape, scenario)
            print(f"{scenario}: {change.description}")
            report = scratch / f"report-{scenario}.json"
            command = [
                *reviewer,
                "diff",
                "--repo",
                str(repo),
                "--base",
                "main",
                "--format",
                "json",
                "--output",
                str(report),
                *common,
                *diff_extra,
            ]
            diff = run_reviewer(
                command,
                scratch=scratch,
                sops=args.sops,
                repeat=args.repeat,
                report=report,
                warm=args.warm,
            )
            floor = run_floor(args.python, repo, scratch=scratch, repeat=args.repeat)
            print(
                f"  reviewer diff: {diff.wall:.2f} s, {diff.peak_mb:.0f} MB, "
                f"{diff.changed} changed release(s) (expected {change.expected_changed}); "
                f"floor {floor:.2f} s ({diff.wall / floor:.1f}x)"
            )
            baseline = None
            if helm is not None:
                baseline = run_baseline(
                    repo,
                    helm=helm,
                    scratch=scratch,
                    sample=args.baseline_sample,
                    jobs=args.baseline_jobs,
                    sops=args.sops,
                )
                label = "extrapolated" if baseline.extrapolated else "measured"
                print(f"  baseline: {baseline.wall:.1f} s ({label})")
            results.append(ScenarioResult(scenario, change, shape.releases, diff, baseline, floor))
        reset(repo)

    load = (load_before, _load())
    print()
    print(_table(results, full, args))
    print(
        f"machine: {os.cpu_count()} CPU(s), 1-min load average {load[0]:.2f} before, "
        f"{load[1]:.2f} after (other work on the machine skews wall times)"
    )
    if args.json is not None:
        payload = {
            "shape": str(shape),
            "releases": shape.releases,
            "reviewer_args": args.reviewer_args,
            "diff_args": args.diff_args,
            "baseline_jobs": args.baseline_jobs,
            "baseline_sample": args.baseline_sample,
            "warm": args.warm,
            "cpus": os.cpu_count(),
            "load_average": load,
            "full_render": asdict(full) if full else None,
            "scenarios": [asdict(result) for result in results],
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


def _reviewer_location(python: str, scratch: Path) -> str:
    """Where the child interpreter imports reviewer from (as the measured runs will)."""
    done = subprocess.run(
        [python, "-c", "import reviewer; print(reviewer.__file__)"],
        capture_output=True,
        cwd=scratch,
        check=False,
    )
    return done.stdout.decode().strip() or done.stderr.decode().strip()[-300:]


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


@contextmanager
def _workdir(path: Path | None) -> Iterator[Path]:
    if path is not None:
        path.mkdir(parents=True, exist_ok=False)
        yield path.resolve()
        return
    with tempfile.TemporaryDirectory(prefix="reviewer-bench-") as scratch:
        yield Path(scratch)


def _table(
    results: list[ScenarioResult], full: ReviewerRun | None, args: argparse.Namespace
) -> str:
    header = (
        "scenario",
        "releases/side",
        "changed",
        "reviewer wall s",
        "reviewer peak MB",
        "floor s",
        "x floor",
        "baseline wall s",
        "ratio",
    )
    rows: list[tuple[str, ...]] = []
    extrapolated = False
    for result in results:
        baseline = result.baseline
        if baseline is not None:
            extrapolated |= baseline.extrapolated
            star = "*" if baseline.extrapolated else ""
            base_wall = f"{baseline.wall:.1f}{star}"
            ratio = f"{baseline.wall / result.diff.wall:.1f}x"
        else:
            base_wall = ratio = "-"
        rows.append(
            (
                result.scenario,
                str(result.releases),
                f"{result.diff.changed}/{result.change.expected_changed}",
                f"{result.diff.wall:.2f}",
                f"{result.diff.peak_mb:.0f}",
                f"{result.floor:.2f}",
                f"{result.diff.wall / result.floor:.1f}x" if result.floor else "-",
                base_wall,
                ratio,
            )
        )
    if full is not None and results:
        rows.append(
            (
                "full render (1 side)",
                str(results[0].releases),
                "-",
                f"{full.wall:.2f}",
                f"{full.peak_mb:.0f}",
                "-",
                "-",
                "-",
                "-",
            )
        )
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True))
        for row in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    notes = [
        "changed: releases reported changed / releases the scenario touches.",
        "caches: "
        + (
            "warm (each command ran once unmeasured to fill the chart and render caches)."
            if args.warm
            else "cold (a fresh, empty cache directory for every run)."
        ),
        "peak MB: max of the child's ru_maxrss and the sampled RSS sum of its process tree.",
        "floor: reading and hashing every input file of both sides (base from git's object "
        "store, head from the working tree), no rendering; x floor = reviewer wall / floor.",
        "baseline: one `helm template` process per release per side, "
        f"{args.baseline_jobs} at a time, helm processes only (planning excluded); "
        "ratio = baseline wall / reviewer wall.",
    ]
    if extrapolated:
        notes.append(
            f"* extrapolated: {args.baseline_sample} releases timed per side, scaled linearly."
        )
    glob = next((r for r in results if r.scenario == "global"), None)
    if full is not None and glob is not None:
        notes.append(
            f"global diff / (2 x full single-side render) = "
            f"{glob.diff.wall:.2f} / {2 * full.wall:.2f} = {glob.diff.wall / (2 * full.wall):.2f}"
        )
    for result in results:
        if result.baseline is not None:
            base, head = result.baseline.base, result.baseline.head
            notes.append(
                f"{result.scenario} baseline: planning {base.plan_seconds:.1f} s + "
                f"{head.plan_seconds:.1f} s (not counted), helm max RSS "
                f"{max(base.max_process_mb, head.max_process_mb):.0f} MB per process, "
                f"failures {base.failures + head.failures}"
            )
    return "\n".join([*lines, "", *notes])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
