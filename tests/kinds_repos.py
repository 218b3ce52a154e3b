"""Test repositories of every source kind for tests/test_kinds_e2e.py: each kind writes a real
git repository with a SOPS secret, a change, a failure, a hostile name and bad settings."""

from __future__ import annotations

import base64
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agekeys import AgeIdentity, encrypt
from chartrepo import ChartRepository
from conftest import GitRepo
from flux_repo import chart_spec, config_map, helm_repository, helmrelease
from manifests_repo import SERVICE, write_manifests

from reviewer import yamlio

SECRET = "k1nds-S3cret-Value-9731"
NEW_SECRET = "k1nds-N3w-Secret-2584"
HOSTILE = "x ![t](https:evil.example) @acme <img src=x> ``` #1 <!-- hidden <details>"

# Every Helm chart here shows the secret plainly and transformed: the leak guard's targets.
LEAKY_TEMPLATE = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
  namespace: {{ .Release.Namespace }}
data:
  replicas: {{ .Values.replicas | quote }}
  password: {{ .Values.db.pass | quote }}
  encoded: {{ .Values.db.pass | b64enc | quote }}
  shouted: {{ .Values.db.pass | upper | quote }}
"""
LEAKY_CHART = {
    "Chart.yaml": "apiVersion: v2\nname: app\nversion: 1.0.0\n",
    "values.yaml": "replicas: 1\ndb: {pass: ''}\n",
    "templates/config.yaml": LEAKY_TEMPLATE,
}


def secret_document(password: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db", "namespace": "apps"},
        "type": "Opaque",
        "data": {"encoded": base64.b64encode(password.encode()).decode()},
        "stringData": {"password": password},
    }


def encrypt_secret(directory: Path, password: str, identity: AgeIdentity, name: str) -> None:
    """A Secret encrypted by the real sops (only `data` and `stringData`)."""
    directory.mkdir(parents=True, exist_ok=True)
    regex = ("--encrypted-regex", "^(data|stringData)$")
    encrypt(directory, secret_document(password), identity, *regex, name=name)


# --- the kinds --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Env:
    """What a kind's repository may use: the sops identity and the loopback chart server."""

    identity: AgeIdentity
    charts: ChartRepository


@dataclass(frozen=True)
class Target:
    """`--cluster/--deployment/--release` of one release or object set, and its files."""

    cluster: str
    deployment: str
    release: str
    built_from: str
    """A file (or directory) it is built from, which `change` edits."""

    def argv(self) -> list[str]:
        return [
            "--cluster",
            self.cluster,
            "--deployment",
            self.deployment,
            "--release",
            self.release,
        ]


@dataclass(frozen=True)
class Kind:
    """How one kind writes its repository, a change, a failure, a hostile name, bad settings."""

    name: str
    write: Callable[[GitRepo, Env, int, str], None]
    """Write (or rewrite) the repository: replicas and the secret's value."""
    fail: Callable[[GitRepo], None]
    """Make one release or object set fail to render."""
    hostile: Callable[[GitRepo, Env], None]
    """Put HOSTILE into a name the pull request controls."""
    bad_source: str
    """A `.reviewer.yaml` source entry of this kind with a bad field ..."""
    bad_field: str
    """... naming this field."""
    target: Target
    changed: str
    """The release id (as in the report) `change` changes."""
    flags: tuple[str, ...] = ()
    helm_values: bool = False
    """Its target is a Helm release, with values to explain."""
    secret_rendered: bool = True
    """The SOPS secret reaches the rendering (redacted in the reports)."""


# hierarchy: three clusters, the secret in a SOPS values file of each deployment.
H_DEPLOYMENT = "apps: [{template: app, secrets: [values.sops.yaml]}]\n"
H_CLUSTERS = ("prod/eu", "prod/us", "dev/a")


def write_hierarchy(repo: GitRepo, env: Env, replicas: int, password: str) -> None:
    repo.add_chart("charts/app", LEAKY_CHART)
    repo.add_template("app", "releases:\n  - name: app\n    chart: ../../charts/app\n")
    repo.write("deployments/global.values.yaml", f"replicas: {replicas}\n")
    for cluster in H_CLUSTERS:
        repo.write(f"deployments/{cluster}/cluster.values.yaml", f"where: {cluster}\n")
        repo.write(f"deployments/{cluster}/apps/web/deployment.yaml", H_DEPLOYMENT)
    target = repo.root / "deployments/prod/eu/apps/web"
    encrypt(target, {"db": {"pass": password}}, env.identity, name="values.sops.yaml")
    for cluster in H_CLUSTERS[1:]:
        shutil.copy(target / "values.sops.yaml", repo.root / f"deployments/{cluster}/apps/web")


def fail_hierarchy(repo: GitRepo) -> None:
    repo.write("deployments/dev/a/apps/broken/deployment.yaml", "apps: [{template: missing}]\n")


def hostile_hierarchy(repo: GitRepo, env: Env) -> None:
    repo.write(f"deployments/prod/eu/apps/{HOSTILE}/deployment.yaml", "apps: [{template: app}]\n")


HIERARCHY = Kind(
    name="hierarchy",
    write=write_hierarchy,
    fail=fail_hierarchy,
    hostile=hostile_hierarchy,
    bad_source="{name: fleet, kind: hierarchy, paths: [deployments, more]}",
    bad_field="sources[0].paths",
    target=Target("prod/eu", "web", "app", "deployments/global.values.yaml"),
    changed="prod/eu/web/app",
    helm_values=True,
)


# manifests: three detected sources (apps, bosh, kustomize), a SOPS Secret in apps/web.
def write_plain(repo: GitRepo, env: Env, replicas: int, password: str, prefix: str = "") -> None:
    write_manifests(repo, replicas=replicas, overlay_replicas=replicas + 1, prefix=prefix)
    encrypt_secret(repo.root / f"{prefix}apps/web", password, env.identity, "db.sops.yaml")


def fail_plain(repo: GitRepo, prefix: str = "") -> None:
    repo.write(f"{prefix}apps/broken/bad.yaml", "apiVersion: v1\nkind: [unclosed\n")


def hostile_plain(repo: GitRepo, env: Env, prefix: str = "") -> None:
    repo.write(f"{prefix}apps/{HOSTILE}.yaml", SERVICE.replace("name: web", "name: hostile"))


MANIFESTS = Kind(
    name="manifests",
    write=write_plain,
    fail=fail_plain,
    hostile=hostile_plain,
    bad_source="{name: apps, kind: manifests, paths: [../outside]}",
    bad_field="sources[0].paths[0]",
    target=Target("apps", "web", "deployment.yaml", "apps/web/deployment.yaml"),
    changed="apps/web/deployment.yaml",
)


# generated: a converter copying src/ (the same manifests) into its output, in the sandbox.
GENERATOR = 'cp -R . "$OUT"/'
GENERATED_SETTINGS = (
    "sources:\n"
    "  - {name: gen, kind: generated, paths: [src], command: [sh, -c, '" + GENERATOR + "']}\n"
)


def write_generated(repo: GitRepo, env: Env, replicas: int, password: str) -> None:
    repo.write(".reviewer.yaml", GENERATED_SETTINGS)
    write_plain(repo, env, replicas, password, prefix="src/")


GENERATED = Kind(
    name="generated",
    write=write_generated,
    fail=lambda repo: fail_plain(repo, prefix="src/"),
    hostile=lambda repo, env: hostile_plain(repo, env, prefix="src/"),
    bad_source="{name: gen, kind: generated, paths: [src], command: []}",
    bad_field="sources[0].command",
    target=Target("gen", "apps/web", "deployment.yaml", "src"),
    changed="gen/apps/web/deployment.yaml",
)


# flux: two detected sources (clusters, platform), the secret reaching values by valuesFrom.
def flux_release(name: str, replicas: int | str, **extra: Any) -> str:
    return helmrelease(
        name,
        chart=chart_spec("app", "charts"),
        valuesFrom=[
            {"kind": "Secret", "name": "db", "valuesKey": "password", "targetPath": "db.pass"}
        ],
        values={"replicas": replicas},
        **extra,
    )


def write_flux(repo: GitRepo, env: Env, replicas: int, password: str) -> None:
    for top, name in (("clusters/prod", "web"), ("platform", "ops")):
        repo.write(f"{top}/repo.yaml", helm_repository("charts", env.charts.url))
        repo.write(f"{top}/{name}.yaml", flux_release(name, replicas))
        encrypt_secret(repo.root / top, password, env.identity, "db.yaml")


def fail_flux(repo: GitRepo) -> None:
    release = helmrelease("broken", chart=chart_spec("app", "no-such-repository"))
    repo.write("platform/broken.yaml", release)


def hostile_flux(repo: GitRepo, env: Env) -> None:
    repo.write("clusters/prod/hostile.yaml", flux_release(HOSTILE, 1))


FLUX = Kind(
    name="flux",
    write=write_flux,
    fail=fail_flux,
    hostile=hostile_flux,
    bad_source="{name: clusters, kind: flux, paths: [clusters], namespace: ''}",
    bad_field="sources[0].namespace",
    target=Target("clusters", "apps", "web", "clusters/prod/web.yaml"),
    changed="clusters/apps/web",
    flags=("--allow-loopback-charts",),
    helm_values=True,
)


# flux Kustomization: `apps` over ./apps with postBuild substitution; the SOPS Secret `db` in
# the tree (spec.decryption) feeds the HelmRelease by valuesFrom, the substituteFrom Secret
# `cluster-secrets` feeds the ConfigMap, the ConfigMap `cluster-vars` gives `replicas` to both.
FK_SOURCES = "sources:\n  - {name: prod, kind: flux, paths: [clusters/prod]}\n"


def flux_kustomization(name: str, **spec: Any) -> str:
    """A Flux Kustomization in flux-system, over this repository."""
    source_ref = {"kind": "GitRepository", "name": "flux-system"}
    return yamlio.dump(
        {
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": name, "namespace": "flux-system"},
            "spec": {"interval": "10m", "prune": True, "sourceRef": source_ref, **spec},
        }
    )


FK_APPS = flux_kustomization(
    "apps",
    path="./apps",
    decryption={"provider": "sops"},
    postBuild={
        "substitute": {"cluster": "prod"},
        "substituteFrom": [
            {"kind": "ConfigMap", "name": "cluster-vars"},
            {"kind": "Secret", "name": "cluster-secrets"},
        ],
    },
)


def write_flux_kustomization(repo: GitRepo, env: Env, replicas: int, password: str) -> None:
    repo.write(".reviewer.yaml", FK_SOURCES)
    repo.write("clusters/prod/apps.yaml", FK_APPS)
    vars_map = config_map("cluster-vars", {"replicas": str(replicas)}, namespace="flux-system")
    repo.write("clusters/prod/vars.yaml", vars_map)
    document = secret_document(password) | {
        "metadata": {"name": "cluster-secrets", "namespace": "flux-system"},
        "stringData": {"db_password": password},
    }
    regex = ("--encrypted-regex", "^(data|stringData)$")
    encrypt(repo.root / "clusters/prod", document, env.identity, *regex, name="secrets.yaml")
    repo.write("apps/repo.yaml", helm_repository("charts", env.charts.url))
    # Unquoted, so the substituted number stays a number.
    release = flux_release("web", "${replicas}").replace("'${replicas}'", "${replicas}")
    repo.write("apps/web.yaml", release)
    settings = {"cluster": "${cluster}", "dsn": "postgres://app:${db_password}@db/app"}
    repo.write("apps/settings.yaml", config_map("settings", settings))
    encrypt_secret(repo.root / "apps", password, env.identity, "db.yaml")


def fail_flux_kustomization(repo: GitRepo) -> None:
    repo.write("clusters/prod/broken.yaml", flux_kustomization("broken", path="./no-such-path"))


def hostile_flux_kustomization(repo: GitRepo, env: Env) -> None:
    repo.write("apps/hostile.yaml", flux_release(HOSTILE, 1))


FLUX_KUSTOMIZATION = Kind(
    name="flux-kustomization",
    write=write_flux_kustomization,
    fail=fail_flux_kustomization,
    hostile=hostile_flux_kustomization,
    bad_source="{name: prod, kind: flux, paths: [clusters/prod], namespace: ''}",
    bad_field="sources[0].namespace",
    target=Target("prod", "apps", "web", "clusters/prod/vars.yaml"),
    changed="prod/apps/web",
    flags=("--allow-loopback-charts",),
    helm_values=True,
)


# kraan: two AddonsLayers. Kraan applies a layer's HelmReleases and HelmRepositories only, so
# the SOPS Secret in the layer's directory is never read (docs/kraan.md): no value comes from it.
def addons_layer(name: str, path: str) -> str:
    source = {"name": "addons", "namespace": "gitops-system", "path": path}
    return yamlio.dump(
        {
            "apiVersion": "kraan.io/v1alpha1",
            "kind": "AddonsLayer",
            "metadata": {"name": name},
            "spec": {"version": "0.1.0", "source": source, "prereqs": {"dependsOn": []}},
        }
    )


def kraan_release(name: str, replicas: int) -> str:
    return helmrelease(
        name,
        chart=chart_spec("app", "charts"),
        values={"replicas": replicas, "db": {"pass": "none"}},
    )


def write_kraan(repo: GitRepo, env: Env, replicas: int, password: str) -> None:
    repo.write("layers/base.yaml", addons_layer("base", "./addons/base"))
    repo.write("layers/apps.yaml", addons_layer("apps", "./addons/apps"))
    repo.write("addons/base/repository.yaml", helm_repository("charts", env.charts.url))
    repo.write("addons/base/ingress.yaml", kraan_release("ingress", 1))
    repo.write("addons/apps/web.yaml", kraan_release("web", replicas))
    encrypt_secret(repo.root / "addons/apps", password, env.identity, "db.yaml")


def fail_kraan(repo: GitRepo) -> None:
    release = helmrelease("broken", chart=chart_spec("app", "no-such-repository"))
    repo.write("addons/apps/broken.yaml", release)


def hostile_kraan(repo: GitRepo, env: Env) -> None:
    repo.write("layers/hostile.yaml", addons_layer(HOSTILE, "./addons/hostile"))
    repo.write("addons/hostile/hostile.yaml", kraan_release(HOSTILE, 1))


KRAAN = Kind(
    name="kraan",
    write=write_kraan,
    fail=fail_kraan,
    hostile=hostile_kraan,
    bad_source="{name: layers, kind: kraan, paths: [layers], namespace: x}",
    bad_field="sources[0].namespace",
    target=Target("layers", "apps", "web", "addons/apps/web.yaml"),
    changed="layers/apps/web",
    flags=("--allow-loopback-charts",),
    helm_values=True,
    secret_rendered=False,
)
