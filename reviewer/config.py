"""`.reviewer.yaml`: repository-level settings (layout and noise rules).

Keys (all optional):

`definitions`
    Definitions root, relative to the repository (default `deployments`).
`templates`
    App templates root (default `templates`).
`variant`
    ATLAS's `atlas.variant`, also the `variant` release label (default `default`).
`noise`
    Noise rules: `labels`, `annotations`, `paths`, `kinds` (see reviewer/noise.py
    and README.md).
`limits`
    Render limits: `renderSeconds`, `memoryMiB`, `outputMiB` (see reviewer/limits.py).
`charts`
    Chart hosts: `allowedHosts`, `allowPrivate` (see reviewer/charts/policy.py).
`sources`
    Where releases and objects come from: a list of `{name, kind, paths, ...options}`
    (kinds in reviewer/sources/registry.py, see docs/sources.md). Without it, the
    sources are detected from the repository.

A diff reads this file from the target (base) side, so a pull request cannot
hide its own changes by adding noise rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from reviewer import decode, yamlio
from reviewer import limits as limits_mod
from reviewer.charts import policy
from reviewer.charts.policy import STRICT, NetworkPolicy
from reviewer.discover import Layout
from reviewer.errors import ConfigError
from reviewer.limits import Limits
from reviewer.nested_render import NestedOptions
from reviewer.nested_render import from_mapping as nested_options
from reviewer.noise import NoiseRules
from reviewer.paths import inside
from reviewer.sources.protocol import COMMON_FIELDS, Source, SourceEntry
from reviewer.sources.registry import kinds

CONFIG_FILE = ".reviewer.yaml"
_KEYS = ("definitions", "templates", "variant", "noise", "limits", "charts", "sources", "nested")


@dataclass(frozen=True)
class RepoConfig:
    """Settings read from `.reviewer.yaml` (defaults when the file is absent)."""

    layout: Layout = field(default_factory=Layout)
    noise: NoiseRules = field(default_factory=NoiseRules)
    limits: Limits = field(default_factory=Limits)
    charts: NetworkPolicy = STRICT
    sources: tuple[Source, ...] = ()
    """Declared sources; empty: detect them from the repository."""
    nested: NestedOptions = field(default_factory=NestedOptions)


def load(root: Path, name: str = CONFIG_FILE) -> RepoConfig:
    """Read the settings file `name` (default `.reviewer.yaml`) at `root`.

    The default file may be absent (defaults apply); a file named explicitly must exist.
    """
    # An absolute path is the user's own file on a local run (`reviewer ci` refuses one).
    absolute = Path(name).is_absolute()
    source = name if absolute else inside(root, ".", name, file=name, field="config")
    path = root / source
    if not path.is_file():
        if name != CONFIG_FILE:
            raise ConfigError(name, "settings file not found in the repository", field="config")
        return RepoConfig()
    top = decode.Field(source)
    data = decode.mapping(yamlio.read_mapping(path, source=source), top, allowed=_KEYS)
    layout = Layout(
        definitions=decode.optional(data, "definitions", top, _directory, Layout.definitions),
        templates=decode.optional(data, "templates", top, _directory, Layout.templates),
        variant=decode.optional(data, "variant", top, _variant, Layout.variant),
    )
    noise = decode.optional_map(data, "noise", top)
    return RepoConfig(
        layout=layout,
        noise=NoiseRules.from_mapping(noise, source=source),
        limits=limits_mod.from_mapping(data.get("limits"), source=source),
        charts=policy.from_mapping(data.get("charts"), source=source, allow_loopback=False),
        sources=_declared_sources(data, top),
        nested=nested_options(data.get("nested"), source=source),
    )


def with_overrides(config: RepoConfig, *, definitions: str | None, templates: str | None) -> Layout:
    """The layout: command-line values win over `.reviewer.yaml`, which wins over defaults."""
    return Layout(
        definitions=definitions or config.layout.definitions,
        templates=templates or config.layout.templates,
        variant=config.layout.variant,
    )


def _directory(value: object, at: decode.Field) -> str:
    text = decode.string(value, at)
    if not text or text.startswith("/") or ".." in text.split("/"):
        raise at.error("must be a relative directory inside the repository")
    return text.strip("/")


def _declared_sources(data: dict[str, object], top: decode.Field) -> tuple[Source, ...]:
    if data.get("sources") is None:
        return ()
    return _sources(data["sources"], top.key("sources"))


def _sources(value: object, at: decode.Field) -> tuple[Source, ...]:
    entries = decode.sequence(value, at)
    if not entries:
        raise at.error("must list at least one source", hint="remove the key to detect sources")
    sources = tuple(_source(item, at.index(index)) for index, item in enumerate(entries))
    names = [source.name for source in sources]
    for index, name in enumerate(names):
        if name in names[:index]:
            raise at.index(index).key("name").error(f"source name '{name}' is used twice")
    return sources


def _source(value: object, at: decode.Field) -> Source:
    data = decode.mapping(value, at, required=("kind",))
    kind_name = decode.string(data["kind"], at.key("kind"), choices=tuple(kinds))
    kind = kinds[kind_name]
    paths: tuple[str, ...] = decode.optional(data, "paths", at, _paths, ())
    default_name = paths[0].rsplit("/", 1)[-1] if paths and paths[0] != "." else kind_name
    name = decode.optional(data, "name", at, _source_name, default_name)
    options = {key: item for key, item in data.items() if key not in COMMON_FIELDS}
    return kind.decode(SourceEntry(name, kind_name, paths, options, at))


def _paths(value: object, at: decode.Field) -> tuple[str, ...]:
    items = decode.sequence(value, at)
    return tuple(_path(item, at.index(index)) for index, item in enumerate(items))


def _path(value: object, at: decode.Field) -> str:
    text = decode.string(value, at)
    if text.startswith("/") or ".." in text.split("/"):
        raise at.error("must be a relative directory inside the repository")
    return text.strip("/") or "."


def _source_name(value: object, at: decode.Field) -> str:
    text = decode.string(value, at, empty=False)
    if "/" in text or text in (".", "*"):
        raise at.error("must be a name without '/' (it is the first part of every identity)")
    return text


def _variant(value: object, at: decode.Field) -> str:
    return decode.text(value, at) or Layout.variant
