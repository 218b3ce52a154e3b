"""The renders a deployment's planning will ask for, gathered so the sandbox answers them in
one round trip each (`TemplateRenderer.prefetch`) instead of one trip per template.

A request is only a forecast: planning still asks for every render itself and takes the
prefetched answer when the text and context match. A forecast that fails, or one that
planning never asks for, costs a render and changes nothing; errors are always raised by
planning's own render, so they name the same file and line as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from reviewer import values as values_mod
from reviewer.deployment import AppSpec
from reviewer.errors import ReviewerError
from reviewer.gotmpl import TemplateRequest
from reviewer.values import Layer, Values, ValuesEntry, ValuesLoader


@dataclass(frozen=True)
class ReleaseSetting:
    """What a release's values are loaded from, worked out once for the forecast and the plan."""

    entries: list[tuple[ValuesEntry, str, bool]]
    """(entry, level label, is secret), lowest priority first."""
    labels: dict[str, str]
    release: dict[str, Any]
    """Its `.Release`."""
    atlas: Values
    """The atlas its instance sees."""
    instance_values: Values
    """The instance's inline values."""


def app_templates(
    loader: ValuesLoader,
    instances: Iterable[tuple[AppSpec, Values]],
    templates: Mapping[str, str],
) -> Iterator[TemplateRequest]:
    """Each app instance's template render (`templates.expand`), given the context it sees
    (`plan_contexts.template_context` with its atlas)."""
    for app, context in instances:
        source = templates[app.template]
        if not source.endswith(values_mod.GOTMPL_SUFFIX):
            continue
        try:
            text = loader.read_text(source)
        except ReviewerError:
            continue  # expanding the app reports it
        yield TemplateRequest(text, context)


def release_values(
    loader: ValuesLoader,
    layers: Iterable[Layer],
    hierarchy: Values,
    settings: Iterable[ReleaseSetting],
) -> Iterator[TemplateRequest]:
    """Each release's first values template render (`ValuesLoader.release_layers`).

    None when the hierarchy itself is rendered per release: its values are not known yet.
    """
    if any(loader.uses_release(layer.source) for layer in layers):
        return
    for setting in settings:
        try:
            request = loader.first_template(
                setting.entries,
                hierarchy=hierarchy,
                atlas=setting.atlas,
                release=setting.release,
                instance_values=setting.instance_values,
            )
        except ReviewerError:
            continue  # planning the release reports it
        if request is not None:
            yield request
