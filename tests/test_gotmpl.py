"""Go templates rendered by Helm's engine in-process: Helm's functions only, errors by line."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reviewer import gotmpl_fields
from reviewer.errors import ConfigError
from reviewer.gotmpl import (
    NO_RELEASE,
    TemplateRenderer,
    TemplateRequest,
    context_of,
    render_batch,
    render_template,
)


def test_values_and_helm_functions_are_available() -> None:
    text = (
        "name: {{ .Values.name | upper }}\nport: {{ add .Values.port 1 }}\n"
        "{{ toYaml .Values.map }}\n"
    )
    rendered = TemplateRenderer().render(
        text, values={"name": "web", "port": 80, "map": {"k": "v"}}, source="t.gotmpl"
    )
    assert rendered == "name: WEB\nport: 81\nk: v\n"


def test_text_without_actions_is_returned_as_is() -> None:
    text = "plain: {not a template}\n"
    assert TemplateRenderer().render(text, values={}, source="t.gotmpl") is text


def test_the_same_text_renders_differently_for_different_values() -> None:
    renderer = TemplateRenderer()
    text = "v: {{ .Values.v }}"
    assert renderer.render(text, values={"v": 1}, source="t") == "v: 1"
    assert renderer.render(text, values={"v": 2}, source="t") == "v: 2"


@pytest.mark.parametrize("function", ["exec", "env", "readFile"])
def test_helmfile_only_functions_are_named_and_refused(function: str) -> None:
    text = f'a: 1\nb: {{{{ {function} "x" }}}}\n'
    with pytest.raises(ConfigError, match=f"'{function}' is helmfile-only") as failure:
        TemplateRenderer().render(text, values={}, source="values.yaml.gotmpl")
    assert failure.value.file == "values.yaml.gotmpl:2"


def test_an_unknown_function_is_named() -> None:
    with pytest.raises(ConfigError, match="'nosuch' is not defined"):
        TemplateRenderer().render("{{ nosuch 1 }}", values={}, source="x.gotmpl")


def test_a_failing_required_names_the_source_and_line() -> None:
    text = 'a: 1\n\nb: {{ required "b is required" .Values.b }}\n'
    with pytest.raises(ConfigError, match="b is required") as failure:
        TemplateRenderer().render(text, values={}, source="deployment.yaml")
    assert failure.value.file == "deployment.yaml:3"
    assert "gotmpl/templates" not in failure.value.render()


def test_values_are_also_bare_and_release_is_given() -> None:
    text = "{{ .name }} {{ .Values.name }} {{ .Release.Name }}/{{ .Release.Namespace }}"
    renderer = TemplateRenderer()
    assert renderer.render(text, values={"name": "web"}, source="t") == "web web /"
    release = {"Name": "blue-web", "Namespace": "shop"}
    assert renderer.render(text, values={"name": "web"}, source="t", release=release) == (
        "web web blue-web/shop"
    )


def test_text_with_define_blocks_keeps_the_context_and_error_lines() -> None:
    text = (
        '{{ define "twice" }}{{ . }}{{ . }}{{ end }}a: {{ include "twice" .x }}\nb: {{ .y.z.w }}\n'
    )
    renderer = TemplateRenderer()
    with pytest.raises(ConfigError, match="nil pointer") as failure:
        renderer.render(text, values={"x": "ab"}, source="values.yaml.gotmpl")
    assert failure.value.file == "values.yaml.gotmpl:2"
    assert "gotmpl/templates" not in failure.value.render()
    assert renderer.render(text, values={"x": "ab", "y": {"z": {"w": 1}}}, source="v") == (
        "a: abab\nb: 1\n"
    )


# Texts a batch renders side by side in one chart, and texts it must render alone (`$` is
# the chart's top level, `define` names would collide), with templates that fail.
_BATCH_TEXTS = (
    "{{ toJson . }}",
    '{{ toYaml .Values }}\n{{ hasKey . "a" }} {{ .Release.Name | default "none" }}',
    "{{- range $key, $value := . }}{{ $key }}={{ kindOf $value }};{{ end }}",
    "{{ $.Values.a | toJson }} {{ toJson $ }}",
    '{{ define "x" }}[{{ .a }}]{{ end }}{{ include "x" . }}',
    '{{ required "a is required" .a }}',
    "{{ .a.b.c }}",
    # Unbalanced: Helm refuses them; a wrapper must not make them reach past their context.
    "{{ .a }}\n{{ end }}{{ toJson .Values }}{{ with 1 }}",
    "{{ .a }}{{ else }}{{ toJson $ }}",
)
_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=8),
)
_VALUES = st.dictionaries(
    st.sampled_from(["a", "b", "Values", "Release", "x-y", "ü"]),
    st.recursive(
        _LEAVES,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
        max_leaves=8,
    ),
    max_size=5,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(_BATCH_TEXTS), _VALUES), min_size=1, max_size=12))
def test_a_batch_answers_each_template_as_rendering_it_alone(
    items: list[tuple[str, dict[str, Any]]],
) -> None:
    """Templates rendered together in one engine call give Helm's own answer for each,
    errors included, whatever the values (nulls, nesting, keys named like the context's)."""
    requests = [(text, context_of(values, NO_RELEASE)) for text, values in items]
    alone = [render_template({}, text, context) for text, context in requests]
    assert render_batch({}, requests) == alone


@pytest.mark.parametrize("define", ["", '{{ define "x" }}{{ end }}'])
def test_the_dot_is_a_plain_map_and_dollar_values_the_values(define: str) -> None:
    """`.YAML` is the key (helmfile's values templates agree), not the method of Helm's
    `.Values` type that prints the whole context; `$.Values` still reads the values."""
    text = define + "{{ .YAML }} {{ range .list }}{{ $.Values.a }}{{ end }}"
    values = {"YAML": "key", "list": [1, 2], "a": "A"}
    assert TemplateRenderer().render(text, values=values, source="t") == "key AA"


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("user: {{ .user }}\n{{ end }}other: {{ .Values.c1.password }}{{ with 1 }}", 2),
        ("{{ .user }}{{ else }}{{ toJson .Values }}", 1),
    ],
)
def test_text_that_closes_the_context_early_is_refused_alone_and_in_a_batch(
    text: str, line: int
) -> None:
    """Helm refuses an unbalanced `{{ end }}` or `{{ else }}`; wrapped, it would close the
    wrapper's `with` and, in a batch, read the other requests' contexts (their secrets)."""
    renderer = TemplateRenderer()
    try:
        safe = {"user": "a"}
        secret = {"user": "b", "password": "hunter2-SECRET"}
        renderer.prefetch([TemplateRequest(text, values) for values in (safe, secret)])
        with pytest.raises(ConfigError) as refused:
            renderer.render(text, values=safe, source="apps/x/values.yaml.gotmpl")
    finally:
        renderer.close()
    assert refused.value.line == line
    assert "apps/x/values.yaml.gotmpl" in str(refused.value)
    assert "hunter2" not in str(refused.value)


class _ClearedByAnotherThread(dict[str, Any]):
    """The reachable-keys memo as a planning thread may see it: another thread clears it
    (beyond its size bound) right after every lookup."""

    def __contains__(self, key: object) -> bool:
        found = super().__contains__(key)
        self.clear()
        return found

    def get(self, key: str, default: Any = None) -> Any:
        found = super().get(key, default)
        self.clear()
        return found


def test_a_memo_cleared_between_lookups_still_renders() -> None:
    renderer = TemplateRenderer()
    renderer._fields = _ClearedByAnotherThread()
    try:
        for index in range(3):
            assert renderer.render("{{ .a }}", values={"a": index}, source="t") == str(index)
    finally:
        renderer.close()


def test_a_key_the_reading_missed_never_shares_an_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Should the reading of a template miss a key it uses, the whole context's answer is
    not kept under the narrowed context's key, and the text is rendered whole afterwards."""
    monkeypatch.setattr(gotmpl_fields, "reachable", lambda text: {"a"})  # `b` missed
    text = '{{ .a }}-{{ required "b is required" .b }}'
    renderer = TemplateRenderer()
    try:
        first = renderer.render(text, values={"a": 1, "b": "one"}, source="t")
        second = renderer.render(text, values={"a": 1, "b": "two"}, source="t")
    finally:
        renderer.close()
    assert (first, second) == ("1-one", "1-two")
