"""What a planned release's templates see: the instance, `.Release` and the standard labels."""

from __future__ import annotations

from typing import Any

from reviewer import values as values_mod
from reviewer.deployment import AppSpec
from reviewer.discover import Cluster, DeploymentDir
from reviewer.templates import Instance, ReleaseSpec
from reviewer.values import Values


def atlas_instance(instance: Instance) -> dict[str, Any]:
    """The instance as ATLAS templates see it (`.instance`)."""
    return {"template": instance.template, "name": instance.name, "namespace": instance.namespace}


def template_context(app: AppSpec, hierarchy: Values) -> Values:
    """What an app template sees: the instance's inline values under the hierarchy.

    As in ATLAS, instance values files are left out (they may need `.Release`,
    which only exists once the template has named the release).
    """
    return values_mod.merge(values_mod.inline(app.values), hierarchy)


def release_context(release: ReleaseSpec, labels: dict[str, str]) -> dict[str, Any]:
    """helmfile's `.Release` in values templates: name, namespace, labels, chart."""
    return {
        "Name": release.name,
        "Namespace": release.namespace,
        "Labels": labels,
        "Chart": release.chart.ref,
        "KubeContext": "",
    }


def standard_labels(
    cluster: Cluster, deployment: DeploymentDir, app: AppSpec, variant: str
) -> dict[str, str]:
    """The labels every release of this app instance carries."""
    labels = {
        "cluster": cluster.path,
        "clusterName": cluster.name,
        "deploymentName": deployment.name,
        "template": app.template,
        "instance": app.name,
        "variant": variant,
    }
    if cluster.group is not None:
        labels["clusterGroup"] = cluster.group
    return labels
