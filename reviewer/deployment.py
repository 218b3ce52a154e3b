"""deployment.yaml: the typed parse boundary for a deployment definition.

Raw YAML becomes `DeploymentSpec` once; every problem names the file, the field
and what is allowed, and is found before any chart is rendered.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reviewer import values as values_mod
from reviewer.errors import ConfigError
from reviewer.values import ValuesEntry

NAME_STYLES = ("prefix", "suffix")
_APP_KEYS = ("template", "name", "nameStyle", "namespace", "values", "secrets", "labels")
_TOP_KEYS = ("apps", "settings")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True)
class AppSpec:
    """One `apps[]` entry: an instance of an app template."""

    index: int
    template: str
    name: str
    name_style: str
    namespace: str | None
    values: tuple[ValuesEntry, ...]
    secrets: tuple[ValuesEntry, ...]
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def field(self) -> str:
        """The field path of this entry, for error messages."""
        return f"apps[{self.index}]"


@dataclass(frozen=True)
class DeploymentSpec:
    """A parsed deployment.yaml."""

    source: str
    apps: tuple[AppSpec, ...]
    settings: dict[str, Any]

    @property
    def namespace(self) -> str | None:
        """`settings.namespace`: the default namespace of every app."""
        namespace = self.settings.get("namespace")
        return str(namespace) if namespace is not None else None


def parse(
    document: dict[str, Any], *, source: str, directory: str, root: Path, templates: set[str]
) -> DeploymentSpec:
    """Validate a rendered deployment.yaml mapping into a `DeploymentSpec`."""
    _no_unknown_keys(document, _TOP_KEYS, source=source, prefix="")
    settings = document.get("settings") or {}
    if not isinstance(settings, dict):
        raise ConfigError(source, "must be a map", field="settings")
    namespace = settings.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        raise ConfigError(source, "must be a string", field="settings.namespace")
    apps = document.get("apps")
    if not isinstance(apps, list) or not apps:
        raise ConfigError(source, "must be a non-empty list of apps", field="apps")
    parsed = tuple(
        _app(app, index, source=source, directory=directory, root=root, templates=templates)
        for index, app in enumerate(apps)
    )
    return DeploymentSpec(source=source, apps=parsed, settings=settings)


def _app(
    app: Any, index: int, *, source: str, directory: str, root: Path, templates: set[str]
) -> AppSpec:
    where = f"apps[{index}]"
    if not isinstance(app, dict):
        raise ConfigError(source, "must be a map with at least 'template'", field=where)
    _no_unknown_keys(app, _APP_KEYS, source=source, prefix=f"{where}.")
    template = _string(app, "template", source=source, where=where, required=True)
    assert template is not None
    template = template.strip("/")
    if template not in templates:
        raise _unknown_template(template, templates, source=source, where=where)
    name = _string(app, "name", source=source, where=where) or template.rsplit("/", 1)[-1]
    if not _DNS_LABEL.match(name):
        raise ConfigError(
            source,
            f"'{name}' is not a valid instance name",
            field=f"{where}.name",
            hint="use lowercase letters, digits and '-', starting and ending alphanumeric",
        )
    style = _string(app, "nameStyle", source=source, where=where) or "prefix"
    if style not in NAME_STYLES:
        raise ConfigError(
            source,
            f"'{style}' is not allowed; use one of: {', '.join(NAME_STYLES)}",
            field=f"{where}.nameStyle",
        )

    def listed(key: str, *, allow_inline: bool) -> tuple[ValuesEntry, ...]:
        items = values_mod.entries(
            app.get(key),
            declared_in=source,
            field=f"{where}.{key}",
            base=directory,
            root=root,
            allow_inline=allow_inline,
        )
        return tuple(items)

    return AppSpec(
        index=index,
        template=template,
        name=name,
        name_style=style,
        namespace=_string(app, "namespace", source=source, where=where),
        values=listed("values", allow_inline=True),
        secrets=listed("secrets", allow_inline=False),
        labels=_labels(app.get("labels"), source=source, where=f"{where}.labels"),
    )


def _string(
    mapping: dict[str, Any], key: str, *, source: str, where: str, required: bool = False
) -> str | None:
    value = mapping.get(key)
    if value is None:
        if required:
            raise ConfigError(source, "is required", field=f"{where}.{key}")
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(source, "must be a non-empty string", field=f"{where}.{key}")
    return value


def _labels(labels: Any, *, source: str, where: str) -> dict[str, str]:
    if labels is None:
        return {}
    if not isinstance(labels, dict) or not all(
        isinstance(v, (str, int, float, bool)) for v in labels.values()
    ):
        raise ConfigError(source, "must be a map of strings", field=where)
    return {str(k): str(v) for k, v in labels.items()}


def _no_unknown_keys(
    mapping: dict[str, Any], allowed: tuple[str, ...], *, source: str, prefix: str
) -> None:
    for key in mapping:
        if key not in allowed:
            raise ConfigError(
                source,
                f"unknown field; allowed: {', '.join(allowed)}",
                field=f"{prefix}{key}",
            )


def _unknown_template(
    template: str, templates: set[str], *, source: str, where: str
) -> ConfigError:

    close = difflib.get_close_matches(template, sorted(templates), n=3)
    hint = f"did you mean: {', '.join(close)}?" if close else None
    known = ", ".join(sorted(templates)) or "none"
    return ConfigError(
        source,
        f"unknown template '{template}'; templates found: {known}",
        field=f"{where}.template",
        hint=hint,
    )
