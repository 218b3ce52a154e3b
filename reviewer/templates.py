"""App templates: helmfile-style `releases:` rendered by Helm's template engine.

A template instantiated by a deployment's `apps[]` entry yields `ReleaseSpec`s:
release name munged by the instance's `nameStyle`, namespace by precedence,
chart paths resolved against the template directory, values entries typed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import helm_python

from reviewer import capabilities as capabilities_mod
from reviewer import decode, jail, postrender, yamlio
from reviewer import helmfile_keys as keys
from reviewer import values as values_mod
from reviewer.capabilities import Capabilities
from reviewer.errors import ConfigError
from reviewer.gotmpl import TemplateRenderer
from reviewer.paths import inside
from reviewer.postrender import NO_PATCHES, Patches
from reviewer.values import Values, ValuesEntry

TEMPLATE_FILES = ("helmfile.yaml.gotmpl", "helmfile.yaml")
MAX_RELEASE_NAME = 53
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


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


_NO_REPOSITORIES: Mapping[str, Repository] = {}


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
    capabilities: Capabilities = capabilities_mod.DEFAULT  # the release's and template's fields
    patches: Patches = NO_PATCHES
    files: tuple[str, ...] = ()  # other repository files it reads (set files, patches)
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
    read: Callable[[str], str] | None = None,
) -> list[ReleaseSpec]:
    """Render a template file for one instance and return its releases.

    `read` reads a repo-relative file inside the jail (default: `jail.read_text` at `root`).
    """
    text = read(source) if read is not None else jail.read_text(root, source)
    if source.endswith(".gotmpl"):
        text = renderer.render(text, values=context, source=source)
    documents = yamlio.load_documents(text, source=source)
    top = decode.Field(source)
    repositories: dict[str, Repository] = {}
    raw_releases: list[tuple[int, object]] = []
    common_labels: dict[str, str] = {}
    defaults = capabilities_mod.DEFAULT
    for document in documents:
        data = decode.mapping(document, top, allowed=keys.TOP_KEYS)
        defaults = defaults.under(capabilities_mod.decode_fields(data, top))
        _check_helm_defaults(data, top)
        repositories.update(
            decode.optional(data, "repositories", top, _repositories, _NO_REPOSITORIES)
        )
        common_labels.update(
            decode.optional(data, "commonLabels", top, decode.text_map, decode.NO_TEXT)
        )
        releases = decode.optional(data, "releases", top, decode.sequence, decode.NO_ITEMS)
        raw_releases.extend((len(raw_releases) + i, r) for i, r in enumerate(releases))
    if not raw_releases:
        raise top.key("releases").error("the template declares no releases")
    template_dir = source.rsplit("/", 1)[0]

    def render_file(text: str, path: str) -> str:
        return renderer.render(text, values=context, source=path)

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
            defaults=defaults,
            render_file=render_file,
        )
        for index, raw in raw_releases
    ]


def _release(
    raw: object,
    index: int,
    *,
    root: Path,
    source: str,
    template_dir: str,
    instance: Instance,
    repositories: dict[str, Repository],
    common_labels: dict[str, str],
    defaults: Capabilities,
    render_file: postrender.FileRenderer,
) -> ReleaseSpec:
    at = decode.Field(source).key("releases").index(index)
    for key in decode.mapping(raw, at):
        if key in keys.REJECTED_RELEASE_KEYS:
            raise at.key(key).error(f"is not supported: {keys.REJECTED_RELEASE_KEYS[key]}")
    data = decode.mapping(raw, at, allowed=keys.ACCEPTED_RELEASE_KEYS)
    for key, value in data.items():
        if key in keys.NO_EFFECT_RELEASE_KEYS and value is not None:
            keys.NO_EFFECT_RELEASE_KEYS[key](value, at.key(key))
    if "keyring" in data:
        keyring = decode.string(data["keyring"], at.key("keyring"))
        inside(root, template_dir, keyring, file=at.file, field=at.key("keyring").name)
    template_release = decode.required(data, "name", at, _name)
    chart_key = _chart_key(data, at)
    chart_ref = decode.required(data, chart_key, at, _name)
    chart = _chart(chart_ref, root, template_dir, repositories, where=at.key(chart_key))
    set_values, set_files = _set_values(data, at, root=root, template_dir=template_dir)
    patches = postrender.decode_patches(data, at, root=root, base=template_dir, render=render_file)
    name = release_name(template_release, instance)
    _check_release_name(name, source=source, where=at.key("name").name)
    declared_namespace = decode.optional(data, "namespace", at, decode.string, "")
    labels = decode.optional(data, "labels", at, decode.text_map, decode.NO_TEXT)
    return ReleaseSpec(
        name=name,
        namespace=instance.namespace or declared_namespace or "default",
        chart=chart,
        version=decode.optional(data, "version", at, decode.text, None),
        values=_entries(data, "values", at, root=root, template_dir=template_dir),
        secrets=_entries(data, "secrets", at, root=root, template_dir=template_dir),
        set_values=set_values,
        labels={**common_labels, **labels},
        # ATLAS defaults it to true when absent and keeps a user-set true or false.
        skip_schema_validation=decode.optional(
            data, "skipSchemaValidation", at, decode.boolean, True
        ),
        capabilities=defaults.under(capabilities_mod.decode_fields(data, at)),
        patches=patches,
        files=(*set_files, *patches.files),
        source=source,
        field=at.name,
    )


def _name(value: object, at: decode.Field) -> str:
    return decode.string(value, at, empty=False)


def _chart_key(data: dict[str, Any], at: decode.Field) -> str:
    """`chart`, or helmfile's alias `directory` (not both)."""
    if "directory" in data and "chart" in data:
        raise at.key("directory").error("is an alias of chart; set only one of them")
    return "directory" if "directory" in data else "chart"


def _check_helm_defaults(data: dict[str, Any], top: decode.Field) -> None:
    if data.get("helmDefaults") is None:
        return
    at = top.key("helmDefaults")
    for key in decode.mapping(data["helmDefaults"], at):
        if key in keys.REFUSED_HELM_DEFAULTS:
            raise at.key(key).error(f"is not supported: {keys.REFUSED_HELM_DEFAULTS[key]}")
    defaults = decode.mapping(data["helmDefaults"], at, allowed=tuple(keys.HELM_DEFAULTS))
    for key, value in defaults.items():
        if value is not None:
            keys.HELM_DEFAULTS[key](value, at.key(key))


def _entries(
    data: dict[str, Any], key: str, at: decode.Field, *, root: Path, template_dir: str
) -> tuple[ValuesEntry, ...]:
    """`values` (files or inline maps) or `secrets` (files only), relative to the template."""
    entries = values_mod.entries(
        data.get(key),
        declared_in=at.file,
        field=at.key(key).name,
        base=template_dir,
        root=root,
        allow_inline=key == "values",
    )
    return tuple(entries)


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
    where: decode.Field,
) -> ChartRef:
    if ref.startswith("oci://"):
        return ChartRef(ref=ref, repository=ref)
    first = ref.split("/", 1)[0]
    if not ref.startswith(("./", "../", "/")) and first in repositories and "/" in ref:
        return ChartRef(ref=ref, repository=repositories[first].location)
    local = inside(root, template_dir, ref, file=where.file, field=where.name)
    if not (root / local).exists():
        raise where.error(
            f"chart '{ref}' not found (looked for '{local}' and repositories: "
            f"{', '.join(sorted(repositories)) or 'none declared'})"
        )
    return ChartRef(ref=ref, local=local)


def _repositories(value: object, at: decode.Field) -> Mapping[str, Repository]:
    found: dict[str, Repository] = {}
    for index, item in enumerate(decode.sequence(value, at)):
        where = at.index(index)
        data = decode.mapping(item, where, required=("name", "url"))
        name = decode.required(data, "name", where, _name)
        url = decode.required(data, "url", where, _name)
        oci = decode.optional(data, "oci", where, decode.boolean, False)
        if not oci and not url.startswith(("http://", "https://", "oci://")):
            raise where.key("url").error(
                f"'{url}' is not an http(s):// or oci:// URL",
                hint="set 'oci: true' for an OCI registry given without a scheme",
            )
        found[name] = Repository(name=name, url=url, oci=oci or url.startswith("oci://"))
    return found


def _set_values(
    data: dict[str, Any], at: decode.Field, *, root: Path, template_dir: str
) -> tuple[Values, list[str]]:
    """`set` (typed like `--set`) then `setString` (always strings), as one values map,
    and the files `file:` entries read (template-relative, like `--set-file`)."""
    merged: Values = {}
    files: list[str] = []
    for key, as_string in (("set", False), ("setString", True)):
        items = decode.optional(data, key, at, decode.sequence, decode.NO_ITEMS)
        for index, item in enumerate(items):
            where = at.key(key).index(index)
            entry = decode.mapping(item, where, allowed=("name", "value", "values", "file"))
            if entry.get("file") is not None:
                parsed, path = _set_file(entry, root=root, template_dir=template_dir, at=where)
                files.append(path)
            else:
                parsed = _one_set(entry, as_string=as_string, at=where)
            merged = values_mod.merge(merged, parsed)
    return merged, files


def _set_file(
    entry: dict[str, Any], *, root: Path, template_dir: str, at: decode.Field
) -> tuple[Values, str]:
    """`file:` — the value is the file's text, as `helm --set-file` sets it."""
    name = decode.required(entry, "name", at, _name)
    relative = decode.string(entry["file"], at.key("file"), empty=False)
    path = inside(root, template_dir, relative, file=at.file, field=at.key("file").name)
    jail.resolve_file(root, path)  # refuses escaping symlinks and special files
    content = yamlio.read_text(root / path, source=path)
    try:
        return dict(helm_python.parse_set_literal(f"{name}={content}")), path
    except helm_python.HelmError:
        raise at.error(f"cannot parse set expression for '{name}'") from None


def _one_set(data: dict[str, Any], *, as_string: bool, at: decode.Field) -> Values:
    name = decode.required(data, "name", at, _name)
    if "values" in data:
        value: Any = decode.sequence(data["values"], at.key("values"))
    elif "value" in data:
        value = data["value"]
    else:
        raise at.error("needs 'value' or 'values'")
    try:
        if as_string:
            return dict(helm_python.parse_set_literal(f"{name}={value}"))
        if isinstance(value, str):
            return dict(helm_python.parse_set_string(f"{name}={_escape_set(value)}"))
        return dict(helm_python.parse_set_json(f"{name}={json.dumps(value)}"))
    except helm_python.HelmError:
        raise at.error(f"cannot parse set expression for '{name}'") from None


def _escape_set(value: str) -> str:
    return value.replace("\\", "\\\\").replace(",", "\\,")
