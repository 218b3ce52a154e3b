"""Resolve: every release of a fleet with its chart, namespace, labels and merged values.

This is where discovery, deployment.yaml, app templates and values meet. A
problem in one deployment or release becomes a `PlanError` for it alone; the
rest of the fleet is still planned.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from reviewer import capabilities as capabilities_mod
from reviewer import deployment as deployment_mod
from reviewer import plan_commands as commands
from reviewer import plan_contexts as contexts
from reviewer import plan_prefetch as prefetch
from reviewer import templates as templates_mod
from reviewer import values as values_mod
from reviewer import yamlio
from reviewer.charts.defaults import ChartDefaults
from reviewer.deployment import AppSpec, DeploymentSpec
from reviewer.discover import DEPLOYMENT_FILE, Cluster, DeploymentDir, Fleet
from reviewer.errors import ConfigError, ReviewerError
from reviewer.gotmpl import TemplateRenderer
from reviewer.model import ReleaseId, RenderedRelease
from reviewer.paths import CHECKOUT_ROOT
from reviewer.postrender import NO_PATCHES, Patches
from reviewer.templates import ChartRef, Instance, ReleaseSpec
from reviewer.values import Layer, Values, ValuesEntry, ValuesLoader


@dataclass(frozen=True)
class ReleasePlan:
    """A release ready to render: identity, chart, namespace, labels and final values."""

    id: ReleaseId
    namespace: str
    chart: ChartRef
    version: str | None
    labels: dict[str, str]
    values: Values
    layers: tuple[Layer, ...]
    """Every values source in priority order (lowest first): release layers, then hierarchy."""
    inputs: frozenset[str]
    """Repository files this release was built from (values, definitions, template, chart)."""
    skip_schema_validation: bool
    template_file: str
    reproduce: str
    helm_command: str | None = None
    """The equivalent `helm template` command (values from `reviewer values`), if one exists."""
    capabilities: capabilities_mod.Capabilities = capabilities_mod.DEFAULT
    """Kubernetes version and API versions: the cluster's, under the release's own."""
    patches: Patches = NO_PATCHES
    """Applied to the rendered manifests: the template's, then the instance's."""
    chart_defaults: ChartDefaults | None = None
    """Replaces the chart's values.yaml (Flux `valuesFiles`)."""


@dataclass(frozen=True)
class Hierarchy:
    """The hierarchy layers of one cluster's deployment and their merged values."""

    layers: tuple[Layer, ...]
    values: Values


@dataclass(frozen=True)
class PlanError:
    """A failure while resolving one deployment, app or release."""

    cluster: str
    deployment: str
    release: str | None
    message: str
    reproduce: str


@dataclass(frozen=True)
class Plan:
    """Everything resolved for one repository side."""

    releases: tuple[ReleasePlan, ...] = ()
    errors: tuple[PlanError, ...] = ()
    objects: tuple[RenderedRelease, ...] = ()
    """Object sets a source built itself (plain manifests): rendered already, not yet redacted.

    Their failures are here too (as releases with an error), not in `errors`, which the
    twin plan of Helm releases accounts for.
    """
    replacements: Mapping[str, str] = field(default_factory=dict)
    """{secret: redacted} for secrets those object sets were built with (SOPS files)."""
    inputs: Mapping[ReleaseId, frozenset[str]] = field(default_factory=dict)
    """Repository files (or directories) each object set was built from."""

    def input_plans(self) -> dict[ReleaseId, ReleasePlan]:
        """Stand-in plans for the object sets: their inputs only (for the blast radius)."""
        return {
            release.id: ReleasePlan(
                id=release.id,
                namespace=release.namespace,
                chart=ChartRef(""),
                version=None,
                labels={},
                values={},
                layers=(),
                inputs=self.inputs.get(release.id, frozenset()),
                skip_schema_validation=False,
                template_file="",
                reproduce=release.reproduce or "",
            )
            for release in self.objects
        }


Selector = Callable[[Cluster, DeploymentDir], bool]

# Deployments are planned in threads. Python runs one at a time, but a deployment spends
# much of its planning waiting for the template sandbox (another process), and renders that
# several deployments wait for are sent together. What threads share are per-side memos
# (file texts, listings, answers), filled idempotently; results keep the deployments' order.
_THREADS = 8


def _select_all(cluster: Cluster, deployment: DeploymentDir) -> bool:
    return True


@dataclass
class Planner:
    """Resolves every release of a `Fleet`."""

    fleet: Fleet
    loader: ValuesLoader
    renderer: TemplateRenderer
    display_root: str = "."
    # Every release of a cluster reads the same capabilities file: read it once per plan.
    _capabilities: dict[str, tuple[capabilities_mod.Capabilities, str | None]] = field(
        default_factory=dict
    )

    def plan(self, *, select: Selector = _select_all) -> Plan:
        """Resolve the selected deployments of every cluster."""
        templates = templates_mod.find_templates(self.fleet.root, self.fleet.layout.templates)
        chosen = [
            (cluster, deployment)
            for cluster in self.fleet.clusters
            for deployment in cluster.deployments
            if select(cluster, deployment)
        ]

        def one(pair: tuple[Cluster, DeploymentDir]) -> tuple[list[ReleasePlan], list[PlanError]]:
            releases: list[ReleasePlan] = []
            errors: list[PlanError] = []
            self._plan_deployment(releases, errors, *pair, templates)
            return releases, errors

        pool = ThreadPoolExecutor(_THREADS, thread_name_prefix="plan")
        try:
            results = list(pool.map(one, chosen))
        except (KeyboardInterrupt, SystemExit):
            # The run is ending (Ctrl-C, SIGTERM): a thread waiting for a slow template
            # would hold it up to the time limit.
            self.renderer.end()
            raise
        finally:
            pool.shutdown(cancel_futures=True)  # Ctrl-C or a bug: plan nothing more
        return Plan(
            releases=tuple(release for releases, _ in results for release in releases),
            errors=tuple(error for _, errors in results for error in errors),
        )

    def _plan_deployment(
        self,
        planned: list[ReleasePlan],
        errors: list[PlanError],
        cluster: Cluster,
        deployment: DeploymentDir,
        templates: dict[str, str],
    ) -> None:
        reproduce = commands.render_command(self.display_root, cluster.path, deployment.name)

        def fail(release: str | None, error: ReviewerError) -> None:
            errors.append(
                PlanError(cluster.path, deployment.name, release, error.render(), reproduce)
            )

        atlas = self._atlas(cluster, deployment)
        try:
            spec = self._deployment_spec(cluster, deployment, atlas, templates)
            levels = self.loader.hierarchy(cluster, deployment, atlas=atlas, plain_only=False)
        except ReviewerError as error:
            fail(None, error)
            return
        hierarchy = Hierarchy(tuple(levels), values_mod.combine(levels))
        expanded = self._expand_apps(spec, hierarchy, atlas, templates, fail)
        producers: dict[str, list[AppSpec]] = {}
        for app, release, _ in expanded:
            producers.setdefault(release.name, []).append(app)
        settings = [
            self._setting(cluster, deployment, app, release, instance_atlas)
            if len(producers[release.name]) == 1
            else None
            for app, release, instance_atlas in expanded
        ]
        chosen = [setting for setting in settings if setting is not None]
        self.renderer.prefetch(
            prefetch.release_values(self.loader, hierarchy.layers, hierarchy.values, chosen)
        )
        for (app, release, _), setting in zip(expanded, settings, strict=True):
            if setting is None:
                if app is producers[release.name][0]:
                    fail(
                        release.name, _duplicate(release.name, spec.source, producers[release.name])
                    )
                continue
            try:
                planned.append(self._release(cluster, deployment, app, release, hierarchy, setting))
            except ReviewerError as error:
                fail(release.name, error)

    def _setting(
        self,
        cluster: Cluster,
        deployment: DeploymentDir,
        app: AppSpec,
        release: ReleaseSpec,
        atlas: Values,
    ) -> prefetch.ReleaseSetting:
        """What a release's values are loaded from: for the forecast, then for the plan."""
        labels = self._labels(cluster, deployment, app, release)
        return prefetch.ReleaseSetting(
            entries=_values_entries(release, app),
            labels=labels,
            release=contexts.release_context(release, labels),
            atlas=atlas,
            instance_values=values_mod.inline(app.values),
        )

    def _expand_apps(
        self,
        spec: DeploymentSpec,
        hierarchy: Hierarchy,
        atlas: Values,
        templates: dict[str, str],
        fail: Callable[[str | None, ReviewerError], None],
    ) -> list[tuple[AppSpec, ReleaseSpec, Values]]:
        """Every app's releases, each with the atlas its instance sees; failures go to `fail`."""
        instances = [
            (app, {**atlas, "instance": contexts.atlas_instance(_instance(app, spec))})
            for app in spec.apps
        ]
        # Each app's template context, built once for the forecast and the expansion: it
        # merges the whole hierarchy.
        seen = [
            (app, values_mod.with_atlas(contexts.template_context(app, hierarchy.values), atlas))
            for app, atlas in instances
        ]
        self.renderer.prefetch(prefetch.app_templates(self.loader, seen, templates))
        expanded: list[tuple[AppSpec, ReleaseSpec, Values]] = []
        for (app, instance_atlas), (_, context) in zip(instances, seen, strict=True):
            try:
                releases = templates_mod.expand(
                    root=self.fleet.root,
                    source=templates[app.template],
                    instance=_instance(app, spec),
                    context=context,
                    renderer=self.renderer,
                    read=self.loader.read_text,
                )
            except ReviewerError as error:
                fail(None, error)
                continue
            expanded.extend((app, release, instance_atlas) for release in releases)
        return expanded

    def _labels(
        self, cluster: Cluster, deployment: DeploymentDir, app: AppSpec, release: ReleaseSpec
    ) -> dict[str, str]:
        return {
            **release.labels,
            **app.labels,
            **contexts.standard_labels(cluster, deployment, app, self.fleet.layout.variant),
        }

    def _deployment_spec(
        self,
        cluster: Cluster,
        deployment: DeploymentDir,
        atlas: Values,
        templates: dict[str, str],
    ) -> DeploymentSpec:
        source = f"{deployment.path}/{DEPLOYMENT_FILE}"
        path = self.fleet.root / source
        if not path.is_file():
            raise ConfigError(
                source,
                "missing: every directory under apps/ must define its deployment",
                hint="add deployment.yaml, or remove the directory",
            )
        text = self.loader.read_text(source)
        if "{{" in text:
            plain = self.loader.hierarchy(cluster, deployment, atlas=atlas, plain_only=True)
            context = values_mod.with_atlas(values_mod.combine(plain), atlas)
            text = self.renderer.render(text, values=context, source=source)
        document = yamlio.load_mapping(text, source=source)
        return deployment_mod.parse(
            document,
            source=source,
            directory=deployment.path,
            root=self.fleet.root,
            templates=set(templates),
        )

    def _release(
        self,
        cluster: Cluster,
        deployment: DeploymentDir,
        app: AppSpec,
        release: ReleaseSpec,
        hierarchy: Hierarchy,
        setting: prefetch.ReleaseSetting,
    ) -> ReleasePlan:
        entries, labels, atlas = setting.entries, setting.labels, setting.atlas
        hierarchy = self._hierarchy_for(hierarchy, atlas, setting.release)
        layers = self.loader.release_layers(
            entries,
            hierarchy=hierarchy.values,
            atlas=atlas,
            release=setting.release,
            instance_values=setting.instance_values,
        )
        final = values_mod.with_atlas(
            values_mod.merge(values_mod.combine(layers), hierarchy.values), atlas
        )
        cluster_capabilities, capabilities_file = self._cluster_capabilities(cluster)
        capabilities = cluster_capabilities.under(release.capabilities)
        patches = release.patches.then(app.patches)
        inputs = {
            f"{deployment.path}/{DEPLOYMENT_FILE}",
            *([capabilities_file] if capabilities_file else []),
            *_release_inputs(release, app, entries, hierarchy),
        }
        return ReleasePlan(
            id=ReleaseId(cluster.path, deployment.name, release.name),
            namespace=release.namespace,
            chart=release.chart,
            version=release.version,
            labels=labels,
            values=final,
            layers=(*layers, *hierarchy.layers),
            inputs=frozenset(inputs),
            skip_schema_validation=release.skip_schema_validation,
            template_file=release.source,
            reproduce=commands.render_command(self.display_root, cluster.path, deployment.name),
            helm_command=commands.helm_command(
                self.display_root, cluster, deployment, release, capabilities, patches
            ),
            capabilities=capabilities,
            patches=patches,
        )

    def _cluster_capabilities(
        self, cluster: Cluster
    ) -> tuple[capabilities_mod.Capabilities, str | None]:
        directory = cluster.levels[-1].path
        known = self._capabilities.get(directory)
        if known is None:
            known = capabilities_mod.load_cluster(self.fleet.root, directory)
            self._capabilities[directory] = known
        return known

    def _hierarchy_for(
        self, hierarchy: Hierarchy, atlas: Values, release: dict[str, Any]
    ) -> Hierarchy:
        """The hierarchy as this release sees it (`.gotmpl` files may use `.Release`)."""
        if not any(self.loader.uses_release(layer.source) for layer in hierarchy.layers):
            return hierarchy
        layers = tuple(self.loader.for_release(hierarchy.layers, atlas=atlas, release=release))
        return Hierarchy(layers, values_mod.combine(layers))

    def _atlas(self, cluster: Cluster, deployment: DeploymentDir) -> Values:
        # Absolute paths start at the fixed CHECKOUT_ROOT, not the checkout's real
        # location, so two checkouts of one commit (base and head worktrees) render
        # identically; paths built from it still resolve inside the checkout.
        info: dict[str, Any] = {
            "cluster": cluster.path,
            "clusterName": cluster.name,
            "deploymentName": deployment.name,
            "deploymentPath": f"{CHECKOUT_ROOT}/{deployment.path}/{DEPLOYMENT_FILE}",
        }
        if cluster.group is not None:
            info["clusterGroup"] = cluster.group
        return {
            "cwd": CHECKOUT_ROOT,
            "appTemplates": self.fleet.layout.templates,
            "deploymentDefinitions": self.fleet.layout.definitions,
            "variant": self.fleet.layout.variant,
            "deployment": info,
        }


def _instance(app: AppSpec, spec: DeploymentSpec) -> Instance:
    return Instance(
        template=app.template,
        name=app.name,
        name_style=app.name_style,
        namespace=app.namespace or spec.namespace,
    )


def _values_entries(release: ReleaseSpec, app: AppSpec) -> list[tuple[ValuesEntry, str, bool]]:
    """The release's values sources (entry, label, is secret), lowest priority first."""
    entries: list[tuple[ValuesEntry, str, bool]] = [
        *((entry, "template values", False) for entry in release.values),
    ]
    if release.set_values:
        entries.append((_set_entry(release), "template set", False))
    entries += [
        *((entry, "instance values", False) for entry in app.values),
        *((entry, "template secrets", True) for entry in release.secrets),
        *((entry, "instance secrets", True) for entry in app.secrets),
    ]
    return entries


def _release_inputs(
    release: ReleaseSpec,
    app: AppSpec,
    entries: list[tuple[ValuesEntry, str, bool]],
    hierarchy: Hierarchy,
) -> set[str]:
    """Repository files a release reads besides its deployment.yaml and capabilities."""
    inputs = {
        release.source,
        *release.files,
        *app.patches.files,
        *(entry.file for entry, _, _ in entries if entry.file is not None),
        *(layer.source for layer in hierarchy.layers),
    }
    if release.chart.local is not None:
        inputs.add(release.chart.local)
    return inputs


def _set_entry(release: ReleaseSpec) -> ValuesEntry:
    return ValuesEntry(
        declared_in=release.source,
        field=f"{release.field}.set",
        base="",
        inline=release.set_values,
    )


def _duplicate(name: str, source: str, apps: list[AppSpec]) -> ConfigError:
    fields = ", ".join(app.field for app in apps)
    return ConfigError(
        source,
        f"release name '{name}' is produced more than once in this deployment (by {fields})",
        hint="give the instances different 'name' or 'nameStyle' values",
    )
