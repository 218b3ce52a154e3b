"""Values: loading files of every level and merging them in the order of docs/values.md.

Every loaded file becomes a `Layer` (where it came from, which level, what it
set), so later stages can explain which file set a value. SOPS files are read
through a `SecretsLoader`, the seam where decryption (or keyless placeholders,
or redaction) plugs in.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from reviewer import jail, yamlio
from reviewer.discover import Cluster, DeploymentDir
from reviewer.errors import ConfigError, ReviewerError
from reviewer.gotmpl import NO_RELEASE, TemplateRequest
from reviewer.paths import inside

ATLAS = "atlas"
SOPS_SUFFIX = ".sops.yaml"
GOTMPL_SUFFIX = ".gotmpl"
# Within one hierarchy level: .sops.yaml < .yaml < .yaml.gotmpl
_LEVEL_SUFFIXES = (".sops.yaml", ".yaml", ".yaml.gotmpl")

Values = dict[str, Any]


class SecretsLoader(Protocol):
    """Turns a SOPS file into values (decrypted, placeholders or redacted)."""

    def load(self, path: Path, *, source: str) -> Values:
        """The values of the SOPS file at `path`; `source` is its repo-relative name."""
        ...


class Templates(Protocol):
    """Renders `.gotmpl` files (`gotmpl.TemplateRenderer`)."""

    def render(
        self, text: str, *, values: dict[str, Any], source: str, release: Mapping[str, Any]
    ) -> str:
        """`text` rendered with `values` as `.Values` and `release` as `.Release`."""
        ...


class NoSecrets:
    """The loader used when SOPS support is not configured: refuses SOPS files."""

    def load(self, path: Path, *, source: str) -> Values:
        """Refuse: the file is encrypted and no loader was configured."""
        raise ConfigError(source, "SOPS-encrypted values need a secrets loader")


@dataclass(frozen=True)
class Layer:
    """One values source after loading: file (or inline entry), level and content."""

    source: str  # repo-relative file, or "<file> <field>" for inline maps
    level: str  # e.g. "global", "group production", "template values", "instance secrets"
    values: Values
    secret: bool = False


@dataclass(frozen=True)
class ValuesEntry:
    """A `values:`/`secrets:` list item: a file relative to `base`, or an inline map."""

    declared_in: str  # the file that lists the entry
    field: str  # e.g. "apps[0].values[1]"
    base: str  # repo-relative directory that relative paths start from
    file: str | None = None
    inline: Values | None = None


def merge(lower: Mapping[str, Any], higher: Mapping[str, Any]) -> Values:
    """Deep-merge maps; scalars, lists and explicit nulls from `higher` replace `lower`."""
    # Planning merges the hierarchy into every release's layers, often into an empty map:
    # the shortcuts and looking below only for maps are what keep that cheap.
    if not lower:
        return dict(higher)
    result = dict(lower)
    if not higher:
        return result
    for key, value in higher.items():
        if isinstance(value, dict):
            below = result.get(key)
            if isinstance(below, dict):
                value = merge(below, value)
        result[key] = value
    return result


def with_atlas(values: Mapping[str, Any], atlas: Values) -> Values:
    """`values` with the `atlas` key forced to the context (values files cannot override it)."""
    return {**values, ATLAS: atlas}


@dataclass
class ValuesLoader:
    """Reads values files of one repository side; renders `.gotmpl` files on the way."""

    root: Path
    templates: Templates
    secrets: SecretsLoader
    _release_aware: dict[str, bool] = field(default_factory=dict)
    # A side's files do not change while it is planned: every deployment reads the same
    # global, group and template files, so each is checked, read and listed only once.
    _texts: dict[str, str] = field(default_factory=dict)
    _listings: dict[str, frozenset[str]] = field(default_factory=dict)
    _jail: jail.Jail | None = None

    def load_file(
        self,
        source: str,
        *,
        context: Values,
        secret: bool,
        release: Mapping[str, Any] = NO_RELEASE,
    ) -> Values:
        """Load one repo-relative values file; `.gotmpl` files see `context` as `.Values`."""
        if secret or source.endswith(SOPS_SUFFIX):
            # The file the jail checked, not the name again: that is the one to read.
            return self.secrets.load(self.resolve_file(source), source=source)
        text = self.read_text(source)
        if source.endswith(GOTMPL_SUFFIX):
            text = self.templates.render(text, values=context, source=source, release=release)
        return yamlio.load_mapping(text, source=source)

    def read_text(self, source: str) -> str:
        """The text of a repo-relative file, jail-checked and read once per side."""
        text = self._texts.get(source)
        if text is None:
            text = yamlio.read_text(self.resolve_file(source), source=source)
            self._texts[source] = text
        return text

    def resolve_file(self, source: str) -> Path:
        """The real path of a repo-relative file; refuses escaping symlinks and special files."""
        if self._jail is None:
            self._jail = jail.Jail(self.root)
        return self._jail.resolve_file(source)

    def is_file(self, source: str) -> bool:
        """Whether the repo-relative `source` is a file (or a link to one), listing its
        directory once per side instead of a `stat` per lookup."""
        directory, _, name = source.rpartition("/")
        names = self._listings.get(directory)
        if names is None:
            names = _files_in(self.root / directory)
            self._listings[directory] = names
        return name in names

    def for_release(
        self, layers: Iterable[Layer], *, atlas: Values, release: Mapping[str, Any]
    ) -> list[Layer]:
        """Hierarchy layers as one release sees them: `.gotmpl` files using `.Release` re-rendered.

        ATLAS walks the hierarchy again per release with the real `.Release`; files
        that do not mention it render the same, so their first rendering is kept.
        """
        result: list[Layer] = []
        merged: Values = {}
        for layer in layers:
            if self.uses_release(layer.source):
                context = with_atlas(merged, atlas)
                values = self.load_file(
                    layer.source, context=context, secret=False, release=release
                )
                layer = Layer(layer.source, layer.level, values, secret=layer.secret)
            result.append(layer)
            merged = merge(merged, layer.values)
        return result

    def uses_release(self, source: str) -> bool:
        """Whether the file is a `.gotmpl` that mentions `.Release`."""
        if not source.endswith(GOTMPL_SUFFIX):
            return False
        known = self._release_aware.get(source)
        if known is None:
            known = ".Release" in self.read_text(source)
            self._release_aware[source] = known
        return known

    def hierarchy(
        self, cluster: Cluster, deployment: DeploymentDir, *, atlas: Values, plain_only: bool
    ) -> list[Layer]:
        """Layers of global → groups → cluster → deployment, lowest priority first.

        `plain_only` skips SOPS files (deployment.yaml is rendered without secrets).
        """
        layers: list[Layer] = []
        merged: Values = {}
        for source, level in _hierarchy_files(self.is_file, cluster, deployment):
            if plain_only and source.endswith(SOPS_SUFFIX):
                continue
            context = with_atlas(merged, atlas)
            values = self.load_file(source, context=context, secret=False)
            layers.append(Layer(source, level, values, secret=source.endswith(SOPS_SUFFIX)))
            merged = merge(merged, values)
        return layers

    def release_layers(
        self,
        entries: Iterable[tuple[ValuesEntry, str, bool]],
        *,
        hierarchy: Values,
        atlas: Values,
        release: Mapping[str, Any] = NO_RELEASE,
        instance_values: Values | None = None,
    ) -> list[Layer]:
        """Load release-level entries (template/instance values, then secrets) in order.

        Each `.gotmpl` file sees atlas + what was merged so far, overlaid by the
        hierarchy, and `release` as `.Release`; template-level files also see the
        instance's inline values under the hierarchy, as in ATLAS.
        """
        layers: list[Layer] = []
        merged: Values = {}
        for entry, level, secret in entries:
            # Only a `.gotmpl` file sees a context: building one merges the whole hierarchy.
            rendered = not secret and (entry.file or "").endswith(GOTMPL_SUFFIX)
            context = (
                _entry_context(merged, level, hierarchy, atlas, instance_values) if rendered else {}
            )
            values = self._load_entry(entry, context=context, secret=secret, release=release)
            source = entry.file or f"{entry.declared_in} {entry.field}"
            layers.append(Layer(source, level, values, secret=secret))
            merged = merge(merged, values)
        return layers

    def first_template(
        self,
        entries: Iterable[tuple[ValuesEntry, str, bool]],
        *,
        hierarchy: Values,
        atlas: Values,
        release: Mapping[str, Any],
        instance_values: Values | None = None,
    ) -> TemplateRequest | None:
        """The first render `release_layers` will ask for with these arguments, if any.

        The same walk, with a renderer that stops at the first template and a secrets
        loader that stops at the first secret (secrets come last and never render).
        """
        if self._jail is None:
            self._jail = jail.Jail(self.root)  # shared with the copy, as the memos are
        forecasting = replace(self, templates=_Forecaster(), secrets=_StopAtSecrets())
        try:
            forecasting.release_layers(
                entries,
                hierarchy=hierarchy,
                atlas=atlas,
                release=release,
                instance_values=instance_values,
            )
        except _Forecast as found:
            return found.request
        except (_Stopped, ReviewerError):
            return None
        return None

    def _load_entry(
        self,
        entry: ValuesEntry,
        *,
        context: Values,
        secret: bool,
        release: Mapping[str, Any] = NO_RELEASE,
    ) -> Values:
        if entry.inline is not None:
            return entry.inline
        assert entry.file is not None
        if not self.is_file(entry.file):
            raise ConfigError(
                entry.declared_in,
                f"file '{entry.file}' does not exist",
                field=entry.field,
                hint="paths are relative to the file that lists them",
            )
        return self.load_file(entry.file, context=context, secret=secret, release=release)


class _Forecast(Exception):
    """The first render a walk asks for, raised to end the walk there."""

    def __init__(self, request: TemplateRequest) -> None:
        super().__init__()
        self.request = request


class _Stopped(Exception):
    """A walk reached a secret before any template."""


class _Forecaster:
    """A renderer that answers text without actions and stops at the first template."""

    def render(
        self, text: str, *, values: dict[str, Any], source: str, release: Mapping[str, Any]
    ) -> str:
        if "{{" not in text:
            return text
        raise _Forecast(TemplateRequest(text, values, release))


class _StopAtSecrets:
    def load(self, path: Path, *, source: str) -> Values:
        raise _Stopped


def inline(entries: Iterable[ValuesEntry]) -> Values:
    """The inline maps among `entries`, merged in order (files are left out)."""
    merged: Values = {}
    for entry in entries:
        if entry.inline is not None:
            merged = merge(merged, entry.inline)
    return merged


def _entry_context(
    merged: Values, level: str, hierarchy: Values, atlas: Values, instance_values: Values | None
) -> Values:
    """What a release-level `.gotmpl` sees: merged so far (template-level files also the
    instance's inline values), overlaid by the hierarchy, plus atlas."""
    seen = merged
    if instance_values and level.startswith("template"):
        seen = merge(merged, instance_values)
    return with_atlas(merge(seen, hierarchy), atlas)


def combine(layers: Iterable[Layer]) -> Values:
    """Merge layers in order (later wins)."""
    merged: Values = {}
    for layer in layers:
        merged = merge(merged, layer.values)
    return merged


def _files_in(directory: Path) -> frozenset[str]:
    """Names of the files in `directory` (symlinks followed, as `Path.is_file` does), and of
    links that lead nowhere: reading one then fails naming it, where counting it absent
    would drop its values without a word."""
    try:
        with os.scandir(directory) as entries:
            return frozenset(entry.name for entry in entries if _file_or_broken_link(entry))
    except OSError:
        return frozenset()


def _file_or_broken_link(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file() or (entry.is_symlink() and not entry.is_dir())
    except OSError:  # a loop of links (ELOOP): one entry, not the whole listing
        return True


def _hierarchy_lookup(cluster: Cluster, deployment: DeploymentDir) -> list[tuple[str, str]]:
    """Every file the hierarchy lookup looks for, in priority order, with its level label."""
    directories = [(level.path, f"{level.kind}.values", level.label) for level in cluster.levels]
    directories.append((deployment.path, "values", f"deployment {deployment.name}"))
    return [
        (f"{directory}/{stem}{suffix}", label)
        for directory, stem, label in directories
        for suffix in _LEVEL_SUFFIXES
    ]


def hierarchy_candidates(cluster: Cluster, deployment: DeploymentDir) -> list[str]:
    """Every hierarchy file a deployment's lookup looks for, whether it exists or not."""
    return [source for source, _ in _hierarchy_lookup(cluster, deployment)]


def _hierarchy_files(
    is_file: Callable[[str], bool], cluster: Cluster, deployment: DeploymentDir
) -> list[tuple[str, str]]:
    """Existing hierarchy files in priority order, each with its level label."""
    return [
        (source, label)
        for source, label in _hierarchy_lookup(cluster, deployment)
        if is_file(source)
    ]


def entries(
    items: Any, *, declared_in: str, field: str, base: str, root: Path, allow_inline: bool
) -> list[ValuesEntry]:
    """Validate a `values:`/`secrets:` list into entries; files must stay inside the repo."""
    if items is None:
        return []
    if not isinstance(items, list):
        raise ConfigError(declared_in, "must be a list of file paths or maps", field=field)
    result: list[ValuesEntry] = []
    for index, item in enumerate(items):
        item_field = f"{field}[{index}]"
        if isinstance(item, str):
            path = inside(root, base, item, file=declared_in, field=item_field)
            result.append(ValuesEntry(declared_in, item_field, base, file=path))
        elif isinstance(item, dict) and allow_inline:
            result.append(ValuesEntry(declared_in, item_field, base, inline=item))
        else:
            allowed = "a file path or a map" if allow_inline else "a file path"
            raise ConfigError(declared_in, f"must be {allowed}", field=item_field)
    return result
