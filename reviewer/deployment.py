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

from reviewer import decode, postrender
from reviewer import values as values_mod
from reviewer.errors import ConfigError
from reviewer.postrender import NO_PATCHES, Patches
from reviewer.values import ValuesEntry

NAME_STYLES = ("prefix", "suffix")
_APP_KEYS = (
    "template",
    "name",
    "nameStyle",
    "namespace",
    "values",
    "secrets",
    "labels",
    *postrender.PATCH_FIELDS,
)
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
    patches: Patches = NO_PATCHES  # appended to each of its template's releases' patches

    @property
    def field(self) -> str:
        """The field path of this entry, for error messages."""
        return f"apps[{self.index}]"


@dataclass(frozen=True)
class DeploymentSpec:
    """A parsed deployment.yaml."""

    source: str
    apps: tuple[AppSpec, ...]
    namespace: str | None = None
    """`settings.namespace`: the default namespace of every app."""


def parse(
    document: dict[str, Any], *, source: str, directory: str, root: Path, templates: set[str]
) -> DeploymentSpec:
    """Validate a rendered deployment.yaml mapping into a `DeploymentSpec`."""
    top = decode.Field(source)
    data = decode.mapping(document, top, allowed=_TOP_KEYS)
    # Other settings are ATLAS's business (they change nothing rendered): accepted as written.
    settings = decode.optional_map(data, "settings", top)
    namespace = decode.optional(settings, "namespace", top.key("settings"), decode.string, None)
    apps = decode.required(data, "apps", top, decode.sequence)
    if not apps:
        raise top.key("apps").error("must be a non-empty list of apps")
    parsed = tuple(
        _app(app, index, top.key("apps"), directory=directory, root=root, templates=templates)
        for index, app in enumerate(apps)
    )
    return DeploymentSpec(source=source, apps=parsed, namespace=namespace)


def _app(
    app: object, index: int, apps: decode.Field, *, directory: str, root: Path, templates: set[str]
) -> AppSpec:
    at = apps.index(index)
    data = decode.mapping(app, at, allowed=_APP_KEYS)
    template = decode.required(data, "template", at, _name).strip("/")
    if template not in templates:
        raise _unknown_template(template, templates, at=at.key("template"))
    name = decode.optional(data, "name", at, _name, template.rsplit("/", 1)[-1])
    if not _DNS_LABEL.match(name):
        raise at.key("name").error(
            f"'{name}' is not a valid instance name",
            hint="use lowercase letters, digits and '-', starting and ending alphanumeric",
        )
    style = decode.optional(data, "nameStyle", at, _name, "prefix")
    if style not in NAME_STYLES:
        raise at.key("nameStyle").error(
            f"'{style}' is not allowed; use one of: {', '.join(NAME_STYLES)}"
        )

    def listed(key: str, *, allow_inline: bool) -> tuple[ValuesEntry, ...]:
        items = values_mod.entries(
            data.get(key),
            declared_in=at.file,
            field=at.key(key).name,
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
        namespace=decode.optional(data, "namespace", at, _name, None),
        values=listed("values", allow_inline=True),
        secrets=listed("secrets", allow_inline=False),
        labels=dict(decode.optional(data, "labels", at, decode.text_map, decode.NO_TEXT)),
        patches=postrender.decode_patches(data, at, root=root, base=directory),
    )


def _name(value: object, at: decode.Field) -> str:
    return decode.string(value, at, empty=False)


def _unknown_template(template: str, templates: set[str], *, at: decode.Field) -> ConfigError:
    close = difflib.get_close_matches(template, sorted(templates), n=3)
    hint = f"did you mean: {', '.join(close)}?" if close else None
    known = ", ".join(sorted(templates)) or "none"
    return at.error(f"unknown template '{template}'; templates found: {known}", hint=hint)
