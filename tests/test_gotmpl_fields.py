"""Narrowed template contexts: Helm renders a template the same with only the keys it reaches."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reviewer.errors import ConfigError
from reviewer.gotmpl import (
    NO_RELEASE,
    TemplateRenderer,
    TemplateRequest,
    context_of,
    narrowed_context,
    render_batch,
    render_template,
)
from reviewer.gotmpl_fields import reachable

# Pieces of templates: field chains, blocks that rebind `.`, the whole context in every
# form Helm offers (`.`, `.Values`, `$`, `keys`, `range`), literals with dots and braces,
# names of the methods of Helm's `.Values` type (keys here, as in a batch) and Unicode
# identifiers. `@K@` is filled with a key; it cannot occur in a piece's own text.
_KEYS = ("a", "b", "c", "Values", "Release", "YAML", "AsMap", "aé", "٣", "missing")
_PIECES = (
    "{{ .@K@ }}",
    "{{ .Values.@K@ }}",
    "{{ .@K@.@K@ }}",
    "{{ .Values.@K@.@K@ | toJson }}",
    "{{ toYaml .@K@ }}",
    "{{ toJson . }}",
    "{{ toYaml .Values }}",
    '{{ keys . | sortAlpha | join "," }}',
    '{{ keys .Values | sortAlpha | join "," }}',
    "{{ len . }}",
    '{{ hasKey . "@K@" }}',
    '{{ hasKey .Values "@K@" }}',
    "{{ with .@K@ }}[{{ . | toJson }}]{{ else }}({{ toJson . }}){{ end }}",
    "{{ with .@K@ }}[{{ . | toJson }}]{{ else }}(none){{ end }}",
    "{{ with .Values.@K@ }}{{ .@K@ | toJson }}{{ end }}",
    "{{ range $k, $v := .@K@ }}{{ $k }};{{ end }}",
    "{{ range .Values }}{{ kindOf . }}{{ end }}",
    "{{ if .@K@ }}yes{{ else if .@K@ }}maybe{{ else }}no{{ end }}",
    "{{ $v := .@K@ }}{{ $v | toJson }}",
    "{{ $v := . }}{{ $v.@K@ | toJson }}",
    "{{ $.Values.@K@ | toJson }}",
    '{{ default "d" .@K@ }}',
    '{{ "lit.}}" }}{{ `raw }} .` }}',
    "{{/* {{ toJson . }} */}}",
    "{{- .Release.Name -}}",
    "{{ 1.5 }} {{ .5 }}",
    '{{ index .Values "@K@" | toJson }}',
    '{{ get .@K@ "@K@" }}',
    "{{ (.@K@).@K@ }}",
    "a.b: {{ .@K@ | quote }}\n",
    "{{ .YAML }}",
    "{{ .AsMap | toJson }}",
    "{{ .Values.YAML }}",
    '{{ .Table "@K@" | toJson }}',
    '{{ .PathValue "@K@" }}',
    "{{ .Encode | toJson }}",
    "{{ with .@K@ }}{{ .YAML }}{{ end }}",
    "{{ .aé }}",
    "{{ .Values.٣ | toJson }}",
    "{{ .@K@é }}",
    "{{ .Values.@K@٣ }}",
    '{{ "é.@K@" }}{{/* ü . */}}',
)
_PIECE = st.tuples(st.sampled_from(_PIECES), st.lists(st.sampled_from(_KEYS), min_size=3)).map(
    lambda chosen: _fill(*chosen)
)
_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-9, 9), st.text(max_size=4))
_VALUES = st.dictionaries(
    st.sampled_from(_KEYS[:-1]),
    st.recursive(
        _LEAVES,
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.sampled_from(("a", "b", "c", "YAML")), inner, max_size=3)
        ),
        max_leaves=6,
    ),
    max_size=5,
)


def _fill(piece: str, keys: list[str]) -> str:
    for key in keys:
        piece = piece.replace("@K@", key, 1)
    return piece


def test_every_key_slot_of_a_piece_is_filled() -> None:
    """A slot left unfilled (or a fill landing inside `hasKey`) would leave the piece a
    parse error, which tests nothing."""
    for piece in _PIECES:
        assert "@K@" not in _fill(piece, ["a", "b", "c"])
    assert _fill('{{ hasKey .Values "@K@" }}', ["b"] * 3) == '{{ hasKey .Values "b" }}'


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PIECE, min_size=1, max_size=4), _VALUES, st.sampled_from(["", "r1"]))
def test_a_narrowed_context_renders_as_the_whole_one(
    pieces: list[str], values: dict[str, Any], name: str
) -> None:
    """Whatever the template reaches (fields, blocks, the whole context in any form), Helm's
    answer with the narrowed context equals its answer with the whole one."""
    text = "".join(pieces)
    names = reachable(text)
    if names is None:
        return
    release = {"Name": name, "Namespace": ""}
    whole = render_template({}, text, context_of(values, release))
    narrow = render_template({}, text, narrowed_context(values, release, names))
    assert narrow[0] == whole[0]
    if whole[0] == "ok":
        assert narrow == whole


@pytest.mark.parametrize(
    "text",
    [
        "{{ toJson . }}",
        "{{ toYaml .Values }}",
        "{{ range .Values }}{{ end }}",
        '{{ keys . | join "," }}',
        "{{ $ | toJson }}",
        "{{ $.Values.a }}",
        "{{ with .a }}x{{ else }}{{ toJson . }}{{ end }}",
        "{{ (.Values).a }}",
        '{{ define "x" }}{{ .a }}{{ end }}{{ include "x" .Values }}',
        '{{ printf "}}" . }}',
        "{{ .a ",
        "{{ if .a }}",
    ],
)
def test_what_may_see_the_whole_context_is_not_narrowed(text: str) -> None:
    assert reachable(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{{ .Values.atlas.deployment.clusterName }}", {"Values", "atlas"}),
        ("{{- $atlas := .Values.atlas }}{{ $atlas.instance.name | quote }}", {"atlas"}),
        ("{{ with .Values.atlas.deployment.clusterGroup }}{{ . | quote }}{{ end }}", {"atlas"}),
        ('{{ printf "%s.%s" .a .Values.b }} {{/* . */}}', {"a", "b"}),
        ('{{ "no fields" }}', set()),
    ],
)
def test_field_chains_and_rebound_dots_are_narrowed(text: str, expected: set[str]) -> None:
    names = reachable(text)
    assert names is not None
    assert expected <= names


def test_a_template_reaching_no_key_still_renders() -> None:
    """The narrowed context keeps `.Release`: an empty one would skip the whole template."""
    renderer = TemplateRenderer()
    try:
        assert renderer.render('{{ "x" }}y', values={"a": 1}, source="v") == "xy"
        assert renderer.render("{{ 2 }}", values={}, source="v") == "2"
    finally:
        renderer.close()


def test_renders_that_differ_only_in_keys_never_read_give_each_its_own_values() -> None:
    renderer = TemplateRenderer()
    text = "host: {{ .Values.atlas.name }}.{{ .domain }}\n"
    try:
        for index in range(3):
            values = {"atlas": {"name": f"n{index}"}, "domain": "d", "other": index}
            release = {**NO_RELEASE, "Name": f"r{index}"}
            rendered = renderer.render(text, values=values, source="v", release=release)
            assert rendered == f"host: n{index}.d\n"
    finally:
        renderer.close()


# Names of methods of Helm's `chartutil.Values` (the type of its top-level `.Values`).
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{{ .YAML }}", "yaml {index}"),
        ("{{ .AsMap | toJson }}", '{{"k":{index}}}'),
        ("{{ .Values.YAML }}", "yaml {index}"),
        ('{{ .Table "a" }}', None),
    ],
)
def test_method_names_are_keys_alone_batched_narrowed_and_whole(
    text: str, expected: str | None
) -> None:
    """`.` is a plain map whichever way a render goes: `{{ .YAML }}` is the key `YAML`,
    never the method that prints the whole context, and `.Table "a"` is an error."""
    values = [
        {"YAML": f"yaml {index}", "AsMap": {"k": index}, "a": {"x": index}, "unread": index}
        for index in range(3)
    ]
    whole = [render_template({}, text, context_of(each, NO_RELEASE)) for each in values]
    batched_whole = render_batch({}, [(text, context_of(each, NO_RELEASE)) for each in values])
    names = reachable(text)
    assert names is not None  # narrowed, not rendered whole
    narrowed = [
        render_template({}, text, narrowed_context(each, NO_RELEASE, names)) for each in values
    ]
    alone = TemplateRenderer()
    batched = TemplateRenderer()
    try:
        batched.prefetch(TemplateRequest(text, each) for each in values)
        by_renderer = [
            [_outcome(renderer, text, each) for each in values] for renderer in (alone, batched)
        ]
    finally:
        alone.close()
        batched.close()
    for index, answer in enumerate(whole):
        if expected is None:
            assert answer[0] == "error"
            assert "Table is not a method but has arguments" in answer[1]
        else:
            assert answer == ("ok", expected.format(index=index))
    assert batched_whole == whole
    assert narrowed == whole
    assert by_renderer[0] == by_renderer[1]
    assert by_renderer[0] == [
        answer[1] if answer[0] == "ok" else "error: Table is not a method but has arguments"
        for answer in whole
    ]


def _outcome(renderer: TemplateRenderer, text: str, values: dict[str, Any]) -> str:
    try:
        return renderer.render(text, values=values, source="v.yaml.gotmpl")
    except ConfigError as error:
        assert error.file == "v.yaml.gotmpl:1"
        return "error: " + error.message.rpartition(": ")[2]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{{ .aé }}", "A-E"),
        ("{{ .Values.clé }}", "key"),
        ("{{ .٣ }}", "three"),
        ("{{ .b٣ | quote }}", '"b-three"'),
    ],
)
def test_unicode_identifiers_see_the_whole_context(text: str, expected: str) -> None:
    """Go takes any Unicode letter or digit in a name; an ASCII reading would cut `.aé` to
    `.a` (or skip `.٣` as a number) and send a context without the key the text reads."""
    assert reachable(text) is None
    renderer = TemplateRenderer()
    values = {"aé": "A-E", "clé": "key", "٣": "three", "b٣": "b-three", "a": "a", "b": "b"}
    try:
        assert renderer.render(text, values=values, source="v") == expected
    finally:
        renderer.close()


def test_unicode_in_literals_and_comments_keeps_a_template_narrowed() -> None:
    assert reachable('{{ printf "é %s" .a }}{{/* ü */}}{{ `ß` }}') == frozenset({"a"})
