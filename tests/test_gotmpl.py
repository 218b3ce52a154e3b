"""Go templates rendered by Helm's engine in-process: Helm's functions only, errors by line."""

from __future__ import annotations

import pytest

from reviewer.errors import ConfigError
from reviewer.gotmpl import TemplateRenderer


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
