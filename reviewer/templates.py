"""App templates: helmfile-style `releases:` rendered by Helm's template engine.

A template instantiated by a deployment's `apps[]` entry yields `ReleaseSpec`s:
release name munged by the instance's `nameStyle`, namespace by precedence,
chart paths resolved against the template directory, values entries typed.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import helm_python

from reviewer import values as values_mod
from reviewer import yamlio
from reviewer.errors import ConfigError
from reviewer.gotmpl import TemplateRenderer
from reviewer.paths import inside
from reviewer.values import Values, ValuesEntry

TEMPLATE_FILES = ("helmfile.yaml.gotmpl", "helmfile.yaml")
MAX_RELEASE_NAME = 53
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_RELEASE_KEYS = {
    "name",
    "chart",
    "version",
    "namespace",
    "values",
    "secrets",
    "set",
    "setString",
    "labels",
    "skipSchemaValidation",
}
# Present in helmfile but meaningless here: the presence of deployment.yaml is the intent.
_IGNORED_RELEASE_KEYS = {"condition", "installed"}
# Would change what gets deployed in ways we cannot reproduce exactly: refuse, never ignore.
_REJECTED_RELEASE_KEYS = {
    "postRenderer": "the reviewer owns post-processing of rendered manifests",
    "postRendererArgs": "the reviewer owns post-processing of rendered manifests",
    "strategicMergePatches": "patches applied by helmfile are not supported",
    "jsonPatches": "patches applied by helmfile are not supported",
    "transformers": "kustomize transformers are not supported",
    "hooks": "helmfile hooks run commands, which review rendering never does",
}
_TOP_KEYS = {"repositories", "releases", "commonLabels", "helmDefaults", "environments", "bases"}


@dataclass(frozen=True)
class ChartRef:
    """Where a release's chart comes from."""

    ref: str  # as written in the template
    local: str | None = None  # repo-relative path for local charts
    repository: str | None = None  # repository URL for `repo/chart` and oci:// references


@dataclass(frozen=True)
class Repository:
    """A `repositories:` entry."""

    name: str
    url: str
    oci: bool = False

    @property
    def location(self) -> str:
        """The URL with its scheme: helmfile writes `oci: true` repositories without one."""
        if self.oci and not self.url.startswith("oci://"):
            return f"oci://{self.url}"
        return self.url


@dataclass(frozen=True)
class ReleaseSpec:
    """A release as a template declares it, after the instance's rewrite rules."""

    name: str
    namespace: str
    chart: ChartRef
    version: str | None
    values: tuple[ValuesEntry, ...]
    secrets: tuple[ValuesEntry, ...]
    set_values: Values
    labels: dict[str, str] = field(default_factory=dict)
    skip_schema_validation: bool = False
    source: str = ""  # template file
    field: str = ""  # e.g. "releases[0]"


@dataclass(frozen=True)
class Instance:
    """What a template needs to know about the app entry that instantiates it."""

    template: str
    name: str
    name_style: str
    namespace: str | None  # apps[].namespace, else settings.namespace


def find_templates(root: Path, templates_dir: str) -> dict[str, str]:
    """Template name (path below the templates root, may be nested) → its file, repo-relative."""
    base = root / templates_dir
    found: dict[str, str] = {}
    if not base.is_dir():
        return found
    for file_name in TEMPLATE_FILES:
        for path in sorted(base.rglob(file_name)):
            name = path.parent.relative_to(base).as_posix()
            found.setdefault(name, path.relative_to(root).as_posix())
    return found


def release_name(template_release: str, instance: Instance) -> str:
    """Apply the instance's naming rule to a template's release name."""
    template_name = instance.template.rsplit("/", 1)[-1]
    if instance.name == template_name:
        return template_release
    if instance.name_style == "suffix":
        return f"{template_release}-{instance.name}"
    return f"{instance.name}-{template_release}"


def suggest_release_name(name: str) -> str:
    """A valid DNS-label name ≤53 chars: sanitized, truncated, with a short sha256 suffix."""
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    cleaned = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")
    if len(cleaned) <= MAX_RELEASE_NAME and _DNS_LABEL.match(cleaned):
        return cleaned
    head = cleaned[: MAX_RELEASE_NAME - len(digest) - 1].rstrip("-")
    return f"{head}-{digest}" if head else digest


def expand(
    *,
    root: Path,
    source: str,
    instance: Instance,
    context: Values,
    renderer: TemplateRenderer,
) -> list[ReleaseSpec]:
    """Render a template file for one instance and return its releases."""
    text = yamlio.read_text(root / source, source=source)
    if source.endswith(".gotmpl"):
        text = renderer.render(text, values=context, source=source)
    documents = yamlio.load_documents(text, source=source)
    repositories: dict[str, Repository] = {}
    raw_releases: list[tuple[int, Any]] = []
    common_labels: dict[str, str] = {}
    for document in documents:
        for key in document:
            if key not in _TOP_KEYS:
                raise ConfigError(
                    source, f"unknown field; allowed: {', '.join(sorted(_TOP_KEYS))}", field=key
                )
        repositories.update(_repositories(document.get("repositories"), source=source))
        common_labels.update(_labels(document.get("commonLabels"), source, "commonLabels"))
        releases = document.get("releases") or []
        if not isinstance(releases, list):
            raise ConfigError(source, "must be a list", field="releases")
        raw_releases.extend((len(raw_releases) + i, r) for i, r in enumerate(releases))
    if not raw_releases:
        raise ConfigError(source, "the template declares no releases", field="releases")
    template_dir = source.rsplit("/", 1)[0]
    return [
        _release(
            raw,
            index,
            root=root,
            source=source,
            template_dir=template_dir,
            instance=instance,
            repositories=repositories,
            common_labels=common_labels,
        )
        for index, raw in raw_releases
    ]


def _release(
    raw: Any,
    index: int,
    *,
    root: Path,
    source: str,
    template_dir: str,
    instance: Instance,
    repositories: dict[str, Repository],
    common_labels: dict[str, str],
) -> ReleaseSpec:
    where = f"releases[{index}]"
    if not isinstance(raw, dict):
        raise ConfigError(source, "must be a map", field=where)
    for key in raw:
        if key in _REJECTED_RELEASE_KEYS:
            raise ConfigError(
                source, f"is not supported: {_REJECTED_RELEASE_KEYS[key]}", field=f"{where}.{key}"
            )
        if key not in _RELEASE_KEYS and key not in _IGNORED_RELEASE_KEYS:
            allowed = ", ".join(sorted(_RELEASE_KEYS))
            raise ConfigError(source, f"unknown field; allowed: {allowed}", field=f"{where}.{key}")
    template_release = _required_string(raw, "name", source, where)
    chart = _chart(
        _required_string(raw, "chart", source, where),
        root,
        template_dir,
        repositories,
        source=source,
        where=f"{where}.chart",
    )
    name = release_name(template_release, instance)
    _check_release_name(name, source=source, where=f"{where}.name")
    namespace = instance.namespace or _optional_string(raw, "namespace", source, where) or "default"
    version = raw.get("version")
    return ReleaseSpec(
        name=name,
        namespace=namespace,
        chart=chart,
        version=str(version) if version is not None else None,
        values=tuple(
            values_mod.entries(
                raw.get("values"),
                declared_in=source,
                field=f"{where}.values",
                base=template_dir,
                root=root,
                allow_inline=True,
            )
        ),
        secrets=tuple(
            values_mod.entries(
                raw.get("secrets"),
                declared_in=source,
                field=f"{where}.secrets",
                base=template_dir,
                root=root,
                allow_inline=False,
            )
        ),
        set_values=_set_values(raw, source=source, where=where),
        labels={**common_labels, **_labels(raw.get("labels"), source, f"{where}.labels")},
        skip_schema_validation=bool(raw.get("skipSchemaValidation", False)),
        source=source,
        field=where,
    )


def _check_release_name(name: str, *, source: str, where: str) -> None:
    if len(name) <= MAX_RELEASE_NAME and _DNS_LABEL.match(name):
        return
    problem = (
        f"release name '{name}' is {len(name)} characters long; "
        f"Helm allows at most {MAX_RELEASE_NAME}"
        if len(name) > MAX_RELEASE_NAME
        else f"release name '{name}' is not a valid DNS label"
    )
    raise ConfigError(
        source,
        problem,
        field=where,
        hint=f"use a shorter instance or release name, e.g. '{suggest_release_name(name)}'",
    )


def _chart(
    ref: str,
    root: Path,
    template_dir: str,
    repositories: dict[str, Repository],
    *,
    source: str,
    where: str,
) -> ChartRef:
    if ref.startswith("oci://"):
        return ChartRef(ref=ref, repository=ref)
    first = ref.split("/", 1)[0]
    if not ref.startswith(("./", "../", "/")) and first in repositories and "/" in ref:
        return ChartRef(ref=ref, repository=repositories[first].location)
    local = inside(root, template_dir, ref, file=source, field=where)
    if not (root / local).exists():
        raise ConfigError(
            source,
            f"chart '{ref}' not found (looked for '{local}' and repositories: "
            f"{', '.join(sorted(repositories)) or 'none declared'})",
            field=where,
        )
    return ChartRef(ref=ref, local=local)


def _repositories(raw: Any, *, source: str) -> dict[str, Repository]:
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise ConfigError(source, "must be a list", field="repositories")
    found: dict[str, Repository] = {}
    for index, item in enumerate(raw):
        where = f"repositories[{index}]"
        if not isinstance(item, dict):
            raise ConfigError(source, "must be a map with 'name' and 'url'", field=where)
        name = _required_string(item, "name", source, where)
        url = _required_string(item, "url", source, where)
        oci = bool(item.get("oci", False))
        if not oci and not url.startswith(("http://", "https://", "oci://")):
            raise ConfigError(
                source,
                f"'{url}' is not an http(s):// or oci:// URL",
                field=f"{where}.url",
                hint="set 'oci: true' for an OCI registry given without a scheme",
            )
        found[name] = Repository(name=name, url=url, oci=oci or url.startswith("oci://"))
    return found


def _set_values(raw: dict[str, Any], *, source: str, where: str) -> Values:
    """`set` (typed like `--set`) then `setString` (always strings), as one values map."""
    merged: Values = {}
    for key, as_string in (("set", False), ("setString", True)):
        items = raw.get(key) or []
        if not isinstance(items, list):
            raise ConfigError(source, "must be a list of {name, value}", field=f"{where}.{key}")
        for index, item in enumerate(items):
            item_where = f"{where}.{key}[{index}]"
            parsed = _one_set(item, as_string=as_string, source=source, where=item_where)
            merged = values_mod.merge(merged, parsed)
    return merged


def _one_set(item: Any, *, as_string: bool, source: str, where: str) -> Values:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        raise ConfigError(source, "must be a map with 'name' and 'value' or 'values'", field=where)
    name = item["name"]
    if "values" in item:
        value: Any = item["values"]
        if not isinstance(value, list):
            raise ConfigError(source, "must be a list", field=f"{where}.values")
    elif "value" in item:
        value = item["value"]
    else:
        raise ConfigError(source, "needs 'value' or 'values'", field=where)
    try:
        if as_string:
            return dict(helm_python.parse_set_literal(f"{name}={value}"))
        if isinstance(value, str):
            return dict(helm_python.parse_set_string(f"{name}={_escape_set(value)}"))
        return dict(helm_python.parse_set_json(f"{name}={json.dumps(value)}"))
    except helm_python.HelmError:
        raise ConfigError(
            source, f"cannot parse set expression for '{name}'", field=where
        ) from None


def _escape_set(value: str) -> str:
    return value.replace("\\", "\\\\").replace(",", "\\,")


def _labels(raw: Any, source: str, where: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(source, "must be a map of strings", field=where)
    return {str(k): str(v) for k, v in raw.items()}


def _required_string(raw: dict[str, Any], key: str, source: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value:
        raise ConfigError(
            source, "is required and must be a non-empty string", field=f"{where}.{key}"
        )
    return value


def _optional_string(raw: dict[str, Any], key: str, source: str, where: str) -> str | None:
    value = raw.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ConfigError(source, "must be a string", field=f"{where}.{key}")
    return value
