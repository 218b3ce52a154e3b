"""Synthetic fleet repositories for the `reviewer diff` benchmark.

A fleet has `groups x clusters per group x deployments per cluster x instances
per deployment` releases per side, laid out as docs/layout.md describes:

- `deployments/global.values.yaml` and one global deployment (`observability`)
  rendered on every cluster;
- per group: `group.values.yaml`, `group.values.yaml.gotmpl` and one group
  deployment (`shop`), overridden by the first cluster of the group (the most
  specific definition wins);
- per cluster: `cluster.values.yaml` (every other cluster also a
  `cluster.values.yaml.gotmpl`) and the remaining deployments as cluster
  deployments, each with deployment-level `values.yaml` (every third also a
  `values.yaml.gotmpl`);
- instances cycle through the example's app templates (`web-app` (3 of 5),
  `worker`, `platform/cache`), with instance values inline or in files, so
  releases render Deployments, Services, Ingresses, ConfigMaps, Secrets,
  CronJobs and StatefulSets from copies of `examples/fleet/charts` (`web`,
  `worker`, `redis-lite-0.3.0.tgz`) and `examples/fleet/templates`.

With `sops=True`, every group gets a SOPS-encrypted `group.values.sops.yaml`
and the first cluster deployment of every cluster a `values.sops.yaml`,
encrypted for the example's public demo age key (copied into the fleet).

The fleet is committed as `main` of a fresh git repository; `apply_scenario`
then makes the pull-request change in the working tree. Everything is
deterministic for a given shape and seed (SOPS ciphertexts aside).

Run as a script to build one fleet for inspection::

    python benchmarks/fleet.py /tmp/fleet --releases 200 --scenario one-value
"""

from __future__ import annotations

import argparse
import io
import math
import os
import random
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "fleet"
SCENARIOS = ("one-value", "global", "chart-bump")
_IDENTITY = ["-c", "user.name=benchmark", "-c", "user.email=benchmark@example.invalid"]
_GIT_ENV = {
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
}
# Instance templates cycle in this order: mostly web services, some workers and caches.
_TEMPLATE_CYCLE = ("web-app", "worker", "web-app", "platform/cache", "web-app")
_RELEASE_SUFFIX = {"web-app": "web", "worker": "worker", "platform/cache": "redis"}
_WORDS = (
    "api",
    "storefront",
    "orders",
    "search",
    "checkout",
    "billing",
    "catalog",
    "auth",
    "media",
    "notify",
    "ledger",
    "profile",
    "reports",
    "gateway",
    "pricing",
    "inventory",
)
_REGIONS = ("eu-west-1", "eu-central-1", "us-east-1", "us-west-2", "ap-south-1", "sa-east-1")
_ENVIRONMENTS = ("production", "staging", "canary", "qa", "edge", "internal")


@dataclass(frozen=True)
class Shape:
    """How big a fleet is: releases per side = the product of the four counts."""

    groups: int
    clusters: int  # per group
    deployments: int  # per cluster, the global and group deployment included
    instances: int  # per deployment

    @property
    def releases(self) -> int:
        """Releases per side."""
        return self.groups * self.clusters * self.deployments * self.instances

    def __str__(self) -> str:
        return f"{self.groups}x{self.clusters}x{self.deployments}x{self.instances}"

    @classmethod
    def parse(cls, text: str) -> Shape:
        """`GxCxDxI`, e.g. `4x10x10x5`."""
        parts = text.lower().split("x")
        if len(parts) != 4 or not all(part.isdigit() and int(part) > 0 for part in parts):
            raise ValueError(f"shape must be GROUPSxCLUSTERSxDEPLOYMENTSxINSTANCES, not {text!r}")
        groups, clusters, deployments, instances = (int(part) for part in parts)
        return cls(groups, clusters, deployments, instances)

    @classmethod
    def for_releases(cls, target: int) -> Shape:
        """A realistic shape with at least `target` releases per side (exact for 200, 2000)."""
        instances = 5
        deployments = 10 if target >= 1000 else 4
        clusters = max(1, math.ceil(target / (deployments * instances)))
        groups = 4 if clusters >= 16 else 2 if clusters >= 4 else 1
        return cls(groups, math.ceil(clusters / groups), deployments, instances)


@dataclass(frozen=True)
class ClusterInfo:
    """Where a generated cluster lives and what its values are."""

    group: str
    name: str
    index: int  # within the group
    replicas: int

    @property
    def path(self) -> str:
        """Cluster path below `deployments/`."""
        return f"{self.group}/{self.name}"


def _yaml(data: Any, header: str = "") -> str:
    yaml = YAML(typ="rt", pure=True)
    yaml.default_flow_style = False
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    buffer = io.StringIO()
    yaml.dump(data, buffer)
    comment = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    return comment + buffer.getvalue()


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


class FleetWriter:
    """Writes one fleet of a given shape into a directory."""

    def __init__(self, root: Path, shape: Shape, *, seed: int = 7, sops: bool = False) -> None:
        self.root = root
        self.shape = shape
        self.sops = sops
        self.rng = random.Random(seed)
        # Secrets draw from their own stream: --sops changes nothing else in the fleet.
        self.secret_rng = random.Random(seed + 1)
        self.definitions = root / "deployments"
        self._plain_secrets: list[tuple[Path, dict[str, Any]]] = []

    def write(self) -> None:
        """Charts, templates and every level of the hierarchy."""
        self._copy_example()
        self._global()
        for group_index in range(self.shape.groups):
            self._group(group_index)
        if self.sops:
            self._encrypt()

    # -- shared parts -----------------------------------------------------------------

    def _copy_example(self) -> None:
        charts = self.root / "charts"
        charts.mkdir(parents=True)
        shutil.copytree(EXAMPLE / "charts" / "web", charts / "web")
        shutil.copytree(EXAMPLE / "charts" / "worker", charts / "worker")
        shutil.copy2(EXAMPLE / "charts" / "redis-lite-0.3.0.tgz", charts)
        shutil.copytree(EXAMPLE / "templates", self.root / "templates")
        _write(
            self.root / "README.md",
            f"Synthetic fleet for the reviewer benchmark: shape {self.shape} "
            f"(groups x clusters x deployments x instances), {self.shape.releases} releases.\n",
        )
        if self.sops:
            shutil.copy2(EXAMPLE / ".sops.yaml", self.root / ".sops.yaml")
            shutil.copy2(EXAMPLE / "demo-age-key.txt", self.root / "demo-age-key.txt")

    def _global(self) -> None:
        values = {
            "baseDomain": "example.com",
            "logLevel": "info",
            "image": {"pullPolicy": "IfNotPresent"},
            "ingress": {"className": "nginx", "tls": {"enabled": True}},
            "commonLabels": {"example.com/managed-by": "gitops"},
            "env": {"TZ": "UTC"},
        }
        _write(
            self.definitions / "global.values.yaml",
            _yaml(values, "Global hierarchy values: every release of every cluster sees these."),
        )
        # The global deployment: one per cluster, `instances` releases each.
        directory = self.definitions / "apps" / "observability"
        apps = [self._app(directory, "observability", k, inline=True) for k in self._instances()]
        _write(
            directory / "deployment.yaml",
            _yaml(
                {"settings": {"namespace": "observability", "owner": "platform"}, "apps": apps},
                "Global deployment: rendered on every cluster.",
            ),
        )

    def _instances(self) -> range:
        return range(self.shape.instances)

    # -- groups and clusters ----------------------------------------------------------

    def _group(self, group_index: int) -> None:
        group = _group_name(group_index)
        directory = self.definitions / group
        environment = _ENVIRONMENTS[group_index % len(_ENVIRONMENTS)]
        values = {
            "global": {"environment": environment},
            "ingress": {"annotations": {"cert-manager.io/cluster-issuer": f"letsencrypt-{group}"}},
            "commonLabels": {"example.com/environment": environment},
            "podAnnotations": {"example.com/group": group},
        }
        _write(directory / "group.values.yaml", _yaml(values, f"Group {group}."))
        _write(
            directory / "group.values.yaml.gotmpl",
            "{{- /* Rendered after group.values.yaml; sees global + group values. */ -}}\n"
            'alertsEmail: {{ printf "oncall-%s@%s" .Values.global.environment'
            " .Values.baseDomain | quote }}\n",
        )
        if self.sops:
            self._plain_secrets.append(
                (
                    directory / "group.values.sops.yaml",
                    {
                        "secrets": {"DATABASE_PASSWORD": self._secret()},
                        "oncallPagerKey": self._secret(),
                    },
                )
            )
        if self.shape.deployments >= 2:
            self._deployment(directory / "apps" / "shop", "shop", group=group)
        for cluster_index in range(self.shape.clusters):
            self._cluster(_cluster(group_index, cluster_index))

    def _cluster(self, cluster: ClusterInfo) -> None:
        directory = self.definitions / cluster.path
        region = _REGIONS[(cluster.index + len(cluster.group)) % len(_REGIONS)]
        values: dict[str, Any] = {
            "global": {"region": region},
            "replicaCount": cluster.replicas,
            "database": {"sslmode": "verify-full", "port": 5432},
            "ingress": {
                "annotations": {
                    "nginx.ingress.kubernetes.io/proxy-body-size": f"{self.rng.choice((1, 8, 16))}m"
                }
            },
        }
        gotmpl = cluster.index % 2 == 0
        if not gotmpl:
            values["database"]["host"] = f"pg-main.{region}.db.internal.example.com"
        _write(directory / "cluster.values.yaml", _yaml(values, f"Cluster {cluster.path}."))
        if gotmpl:
            _write(
                directory / "cluster.values.yaml.gotmpl",
                "{{- /* Rendered after cluster.values.yaml: global.region is set. */ -}}\n"
                "database:\n"
                '  host: {{ printf "pg-main.%s.db.internal.%s" .Values.global.region'
                " .Values.baseDomain | quote }}\n",
            )
        if self.shape.deployments <= 2 and not (cluster.index == 0 and self.shape.deployments == 2):
            # A cluster is a directory with apps/; here it only gets global/group deployments.
            _write(directory / "apps" / ".keep", "")
        if cluster.index == 0 and self.shape.deployments >= 2:
            # Overrides the group's "shop" deployment on this cluster.
            self._deployment(directory / "apps" / "shop", "shop", group=cluster.group, canary=True)
        for index in range(2, self.shape.deployments):
            name = f"{_WORDS[index % len(_WORDS)]}-{index:02d}"
            self._deployment(directory / "apps" / name, name, cluster_level=index)

    # -- deployments ------------------------------------------------------------------

    def _deployment(
        self,
        directory: Path,
        name: str,
        *,
        group: str | None = None,
        canary: bool = False,
        cluster_level: int = 0,
    ) -> None:
        apps = [
            self._app(directory, name, k, inline=k % 2 == 0, canary=canary and k == 0)
            for k in self._instances()
        ]
        if canary:
            header = f"Deployment {name} of this cluster: overrides group {group}'s, adds a canary."
        elif group is not None:
            header = f"Group deployment {name}: every cluster of group {group}."
        else:
            header = f"Cluster deployment {name}."
        settings = {"namespace": name, "owner": f"team-{name.split('-')[0]}"}
        _write(directory / "deployment.yaml", _yaml({"settings": settings, "apps": apps}, header))
        if group is not None and not canary:
            return
        values = {
            "podAnnotations": {"example.com/deployment": name},
            "config": {f"{name}.feature-flag": self.rng.choice(("on", "off"))},
        }
        _write(directory / "values.yaml", _yaml(values, "Deployment-level values."))
        if cluster_level % 3 == 2:
            _write(
                directory / "values.yaml.gotmpl",
                "{{- /* Deployment-level Go template values. */ -}}\n"
                "config:\n"
                "  deployment.region: {{ .Values.global.region | quote }}\n"
                "  deployment.domain: {{ .Values.baseDomain | quote }}\n",
            )
        if self.sops and cluster_level == 2:
            self._plain_secrets.append(
                (directory / "values.sops.yaml", {"secrets": {"API_TOKEN": self._secret()}})
            )

    def _app(
        self, directory: Path, deployment: str, k: int, *, inline: bool, canary: bool = False
    ) -> dict[str, Any]:
        template = _TEMPLATE_CYCLE[k % len(_TEMPLATE_CYCLE)]
        instance = f"{_WORDS[(k + len(deployment)) % len(_WORDS)]}{k}"
        values = self._instance_values(template, instance, deployment)
        if canary:
            values.setdefault("image", {})["tag"] = "2.0.0-rc.1"
        app: dict[str, Any] = {
            "template": template,
            "name": instance,
            "labels": {"team": deployment.split("-")[0]},
        }
        if k % 7 == 3:
            app["nameStyle"] = "suffix"
        if inline:
            app["values"] = [values]
        else:
            _write(directory / "instances" / f"{instance}.yaml", _yaml(values))
            app["values"] = [f"instances/{instance}.yaml"]
        return app

    def _instance_values(self, template: str, instance: str, deployment: str) -> dict[str, Any]:
        rng = self.rng
        tag = f"{rng.randint(1, 3)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}"
        if template == "platform/cache":
            size = rng.choice((1, 2, 4, 8))
            return {"maxmemory": f"{size * 128}mb", "persistence": {"size": f"{size}Gi"}}
        image = {"registry": "ghcr.io", "repository": f"example/{deployment}", "tag": tag}
        config = {
            f"{instance}.{key}": rng.choice(("true", "false", "10", "250", "eu", "fast"))
            for key in rng.sample(("cache", "timeout", "pool", "mode", "region", "limit"), 3)
        }
        resources = {
            "requests": {"cpu": f"{rng.choice((50, 100, 250, 500))}m", "memory": "256Mi"},
            "limits": {"memory": f"{rng.choice((512, 768, 1024))}Mi"},
        }
        if template == "worker":
            values: dict[str, Any] = {
                "image": image,
                "args": ["worker", f"--queue={instance}"],
                "config": {"queue": instance, "concurrency": rng.randint(1, 16)},
                "resources": resources,
            }
            if rng.random() < 0.4:
                values["cronJob"] = {"enabled": True, "schedule": f"{rng.randint(0, 59)} 3 * * *"}
            return values
        values = {
            "image": image,
            "args": ["serve", f"--role={instance}"],
            "containerPort": 8080,
            "probes": {"path": "/healthz"},
            "resources": resources,
            "config": config,
        }
        if rng.random() < 0.5:
            values["database"] = {"enabled": True, "name": deployment, "user": instance}
            values["secrets"] = {"DATABASE_PASSWORD": "change-me"}
        return values

    def _secret(self) -> str:
        alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
        return "".join(self.secret_rng.choice(alphabet) for _ in range(20))

    # -- SOPS -------------------------------------------------------------------------

    def _encrypt(self) -> None:
        from reviewer.sops import find_sops  # only needed with --sops

        sops = str(find_sops(os.environ))
        for path, values in self._plain_secrets:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(_yaml(values), encoding="utf-8")
            done = subprocess.run(
                [
                    sops,
                    "--config",
                    str(self.root / ".sops.yaml"),
                    "--encrypt",
                    "--in-place",
                    path.name,
                ],
                cwd=path.parent,
                capture_output=True,
                check=False,
            )
            if done.returncode != 0:
                raise RuntimeError(f"sops --encrypt {path}: {done.stderr.decode().strip()}")


def _group_name(index: int) -> str:
    return f"{_ENVIRONMENTS[index % len(_ENVIRONMENTS)]}-{index:02d}"


def _cluster(group_index: int, cluster_index: int) -> ClusterInfo:
    group = _group_name(group_index)
    name = f"{group.split('-')[0][:4]}{group_index:02d}-c{cluster_index:03d}"
    return ClusterInfo(group, name, cluster_index, replicas=2 + (cluster_index % 3))


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` with a fixed identity; its standard output."""
    done = subprocess.run(
        ["git", "-C", str(repo), *_IDENTITY, *args],
        check=True,
        capture_output=True,
        env={**os.environ, **_GIT_ENV},
    )
    return done.stdout.decode()


def build_fleet(target: Path, shape: Shape, *, seed: int = 7, sops: bool = False) -> Path:
    """A git repository at `target` holding the fleet, committed as `main`; clean working tree."""
    target.mkdir(parents=True)
    FleetWriter(target, shape, seed=seed, sops=sops).write()
    git(target, "init", "--quiet", "--initial-branch=main")
    git(target, "add", ".")
    git(target, "commit", "--quiet", "-m", f"synthetic fleet {shape}")
    return target


def reset(repo: Path) -> None:
    """Back to a clean `main`: drops any scenario change."""
    git(repo, "reset", "--quiet", "--hard", "main")
    git(repo, "clean", "--quiet", "-fdx")


def _replace_once(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    if text.count(old) != 1:
        raise RuntimeError(f"{path}: expected exactly one {old!r}")
    path.write_text(text.replace(old, new), encoding="utf-8")


@dataclass(frozen=True)
class Change:
    """What a scenario changed, and how many releases per side it should touch."""

    scenario: str
    description: str
    expected_changed: int


def apply_scenario(repo: Path, shape: Shape, scenario: str) -> Change:
    """Make the pull-request change of `scenario` in the working tree (uncommitted)."""
    definitions = repo / "deployments"
    if scenario == "one-value":
        # The last cluster of the first group: replicaCount + 1 (every web/worker release).
        cluster = _cluster(0, shape.clusters - 1)
        _replace_once(
            definitions / cluster.path / "cluster.values.yaml",
            f"replicaCount: {cluster.replicas}\n",
            f"replicaCount: {cluster.replicas + 1}\n",
        )
        touched = sum(
            1
            for k in range(shape.instances)
            if _TEMPLATE_CYCLE[k % len(_TEMPLATE_CYCLE)] != "platform/cache"
        )
        return Change(
            scenario,
            f"replicaCount {cluster.replicas} -> {cluster.replicas + 1} in "
            f"deployments/{cluster.path}/cluster.values.yaml",
            touched * shape.deployments,
        )
    if scenario == "global":
        _replace_once(
            definitions / "global.values.yaml",
            "  example.com/managed-by: gitops\n",
            "  example.com/cost-center: platform\n  example.com/managed-by: gitops\n",
        )
        return Change(
            scenario,
            "new commonLabels entry in deployments/global.values.yaml (every object)",
            shape.releases,
        )
    if scenario == "chart-bump":
        charts = repo / "charts"
        shutil.copytree(charts / "web", charts / "web-1.2.1")
        _replace_once(charts / "web-1.2.1" / "Chart.yaml", "version: 1.2.0\n", "version: 1.2.1\n")
        _replace_once(
            charts / "web-1.2.1" / "values.yaml",
            "    periodSeconds: 5\n",
            "    periodSeconds: 10\n",
        )
        _replace_once(
            repo / "templates" / "web-app" / "helmfile.yaml.gotmpl",
            "chart: ../../charts/web\n",
            "chart: ../../charts/web-1.2.1\n",
        )
        webs = sum(
            1
            for k in range(shape.instances)
            if _TEMPLATE_CYCLE[k % len(_TEMPLATE_CYCLE)] == "web-app"
        )
        return Change(
            scenario,
            "web chart 1.2.0 -> 1.2.1 (charts/web-1.2.1, readiness periodSeconds 5 -> 10)",
            webs * shape.deployments * shape.clusters * shape.groups,
        )
    raise ValueError(f"unknown scenario {scenario!r} (known: {', '.join(SCENARIOS)})")


def main(argv: list[str]) -> int:
    """Build one fleet repository (and optionally a scenario change) for inspection."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", type=Path, help="directory to create")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--releases", type=int, default=200, help="releases per side (default 200)")
    size.add_argument("--shape", type=Shape.parse, help="GROUPSxCLUSTERSxDEPLOYMENTSxINSTANCES")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--sops", action="store_true", help="add SOPS-encrypted values files")
    parser.add_argument("--scenario", choices=SCENARIOS, help="PR change in the working tree")
    args = parser.parse_args(argv)
    shape: Shape = args.shape or Shape.for_releases(args.releases)
    build_fleet(args.target, shape, seed=args.seed, sops=args.sops)
    print(f"{args.target}: shape {shape}, {shape.releases} releases per side")
    if args.scenario:
        change = apply_scenario(args.target, shape, args.scenario)
        print(f"{change.scenario}: {change.description}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
