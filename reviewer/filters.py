"""Check `--cluster`/`--deployment` filters against the fleet before anything renders.

A filter that matches nothing would otherwise give an empty, passing review. Names are checked
against every side (a new cluster exists on one side only); a miss is a `UsageProblem` with the
nearest names, and a group name lists the group's clusters.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from reviewer.discover import Cluster, HierarchySource, Layout
from reviewer.errors import RepositoryError, UsageProblem


def check_selection(
    roots: Sequence[Path],
    layout: Layout,
    clusters: Sequence[str],
    deployments: Sequence[str],
    *,
    warn: Callable[[str], None] | None = None,
) -> None:
    """Raise `UsageProblem` when a cluster or deployment filter names nothing on any side.

    With `warn` (`reviewer ci`, whose workflow may list clusters other branches have), a name
    that matches nothing is only a warning, unless the filters together select nothing.
    """
    if not clusters and not deployments:
        return
    fleet = _clusters(roots, layout)
    if not fleet:
        return  # discovery itself fails; rendering reports that error
    problems = _cluster_problems(clusters, fleet)
    chosen = [c for c in fleet if not clusters or {c.path, c.name} & set(clusters)]
    known = sorted({d.name for c in chosen for d in c.deployments})
    where = "the selected clusters" if clusters else "any cluster"
    problems += [
        UsageProblem(
            f"--deployment {name}: no such deployment in {where}" + did_you_mean(name, known)
        )
        for name in deployments
        if name not in known
    ]
    if not problems:
        return
    selected = [
        d for c in chosen for d in c.deployments if not deployments or d.name in deployments
    ]
    if warn is None or not selected:
        if len(problems) == 1:
            raise problems[0]
        raise UsageProblem("\n".join(problem.render() for problem in problems))
    for problem in problems:
        warn(f"warning: {problem.render()}")


def _cluster_problems(names: Sequence[str], fleet: Sequence[Cluster]) -> list[UsageProblem]:
    problems = []
    for name in names:
        try:
            check_cluster(name, fleet)
        except UsageProblem as problem:
            problems.append(problem)
    return problems


def check_cluster(name: str, fleet: Sequence[Cluster]) -> None:
    """Raise `UsageProblem` unless `name` is a cluster path or name of `fleet`."""
    if any(name in (cluster.path, cluster.name) for cluster in fleet):
        return
    members = [c.path for c in fleet if name in _groups(c)]
    if members:
        raise UsageProblem(
            f"--cluster {name}: {name} is a group; its clusters are: {', '.join(members)}",
            hint="repeat --cluster for each cluster you want",
        )
    names = [c.path for c in fleet] + [c.name for c in fleet]
    names += [group for c in fleet for group in _groups(c)]
    raise UsageProblem(f"--cluster {name}: no such cluster" + did_you_mean(name, names))


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """`; did you mean: a, b?` with the nearest candidates, or `` when none is near."""
    close = difflib.get_close_matches(name, sorted(set(candidates)), n=5)
    return f"; did you mean: {', '.join(close)}?" if close else ""


def _groups(cluster: Cluster) -> set[str]:
    """Every group path holding the cluster, and each group's own name."""
    parts = cluster.path.split("/")[:-1]
    paths = {"/".join(parts[: end + 1]) for end in range(len(parts))}
    return paths | set(parts)


def _clusters(roots: Sequence[Path], layout: Layout) -> list[Cluster]:
    found: list[Cluster] = []
    for root in roots:
        try:
            found += HierarchySource(layout).discover(root).clusters
        except RepositoryError:
            continue
    return found
