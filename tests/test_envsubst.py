"""Flux's envsubst, checked against the cases of its own Go test suite and its parser."""

from __future__ import annotations

import pytest

from reviewer.sources.envsubst import SubstitutionError, expand

EXPANDED = [
    ({}, "abcdEFGH28ij", "abcdEFGH28ij"),
    ({"var01": "abcdEFGH28ij"}, "${#var01}", "12"),
    ({"var01": "abcdEFGH28ij"}, "${var01^}", "AbcdEFGH28ij"),
    ({"var01": "abcdEFGH28ij"}, "${var01^^}", "ABCDEFGH28IJ"),
    ({"var01": "ABCDEFGH28IJ"}, "${var01,}", "aBCDEFGH28IJ"),
    ({"var01": "ABCDEFGH28IJ"}, "${var01,,}", "abcdefgh28ij"),
    ({"p": "/home/bozo/ideas/thoughts.for.today"}, "${p:11}", "ideas/thoughts.for.today"),
    ({"p": "/home/bozo/ideas/thoughts.for.today"}, "${p:11:5}", "ideas"),
    ({"p": "abc"}, "${p:-2}", "abc"),  # `:-` is a default, not a negative offset
    ({"p": "abc"}, "${p:x}", "abc"),  # an offset that is no number leaves the value
    ({"var": "abc"}, "${var=xyz}", "abc"),
    ({}, "${var=xyz}", "xyz"),
    ({"var": ""}, "${var=xyz}", "xyz"),  # unlike bash, `=` also replaces an empty value
    ({"default_var": "foo"}, "something ${var=${default_var}}", "something foo"),
    ({"d": "foo1"}, "foo: ${var=prefix${d}-suffix}", "foo: prefixfoo1-suffix"),
    ({}, "${var:=xyz}", "xyz"),
    ({}, "${var:-xyz}", "xyz"),
    ({}, "${var:?xyz}", "xyz"),  # parsed as a default, not bash's error
    ({"var": "set"}, "${var:+xyz}", "set"),  # parsed as a default, not bash's alternative
    ({"z": "abcABC123ABCabc"}, "${z/%abc/XYZ}", "abcABC123ABCXYZ"),
    ({"z": "abcABC123ABCabc"}, "${z/#abc/XYZ}", "XYZABC123ABCabc"),
    ({"z": "abcABC123ABCabc"}, "${z//abc/xyz}", "xyzABC123ABCxyz"),
    ({"z": "abcABC123ABCabc"}, "${z/abc/xyz}", "xyzABC123ABCabc"),
    ({"f": "bash.string.txt"}, "${f#*.}", "string.txt"),
    ({"f": "/path/to/file"}, "${f#*/}", "path/to/file"),
    ({"f": "bash.string.txt"}, "${f##*.}", "txt"),
    ({"f": "/path/to/file"}, "${f##*/}", "file"),
    ({"f": "bash.string.txt"}, "${f%.*}", "bash.string"),
    ({"f": "bash.string.txt"}, "${f%%.*}", "bash"),
    ({"var01": "abcdEFGH28ij"}, "${var=${var01^^}}", "ABCDEFGH28IJ"),
    ({"var01": "abcdEFGH28ij"}, "$${var01}", "${var01}"),
    (
        {"var01": "abcdEFGH28ij"},
        "some text ${var01}$${var$${var01}$var01${var01}",
        "some text abcdEFGH28ij${var${var01}$var01abcdEFGH28ij",
    ),
    ({"default_var": "foo"}, "something $${var=${default_var}}", "something ${var=foo}"),
    ({"z": "foo/bar"}, "${z/\\//-}", "foo-bar"),
    ({"z": "foo/bar/baz"}, "${z//\\//-}", "foo-bar-baz"),
    ({"d": "foo"}, "\\\\something ${var=${d}}", "\\\\something foo"),
    ({"z": "foo.bar"}, "${z/./}", "foobar"),
    ({"x": "1"}, "$x and $$ and ${x}", "$x and $ and 1"),
    ({"x": "é"}, "${#x}", "2"),  # bytes, as Go counts them
]


@pytest.mark.parametrize(("variables", "text", "expected"), EXPANDED)
def test_expands_as_flux_does(variables: dict[str, str], text: str, expected: str) -> None:
    assert expand(text, variables, strict=False) == expected


@pytest.mark.parametrize(
    "text",
    [
        "${missing}",
        "${#missing}",
        "${missing^^}",
        "${missing:0:10}",
        "${missing/a/b}",
        "${missing%%p}",
        "${set:-${missing}}",
    ],
)
def test_strict_mode_fails_on_a_variable_read_without_default(text: str) -> None:
    with pytest.raises(SubstitutionError, match=r'variable not set .strict mode.: "missing"'):
        expand(text, {"set": "x"}, strict=True)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("${missing:-fallback}", "fallback"),
        ("${missing:=a}", "a"),
        ("${missing=a}", "a"),
        ("${empty}", ""),
    ],
)
def test_strict_mode_accepts_defaults_and_empty_values(text: str, expected: str) -> None:
    assert expand(text, {"empty": ""}, strict=True) == expected


def test_missing_variable_is_empty_when_not_strict() -> None:
    assert expand("a${missing}b", {}, strict=False) == "ab"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("${var-d}", "missing closing brace"),  # listed by the README, refused by the parser
        ("${var+d}", "missing closing brace"),
        ("${a.b}", "missing closing brace"),
        ("${var", "missing closing brace"),
        ("${}", "unable to parse variable name"),
        ("${var:-d", "unable to parse substitution"),
        ("${var:}", "unable to parse substitution"),
        ("${var#}", "unable to parse substitution"),
        ("${var/a}", "bad substitution"),
        ("${var^^^}", "bad substitution"),
    ],
)
def test_unsupported_forms_are_errors_without_the_text(text: str, message: str) -> None:
    with pytest.raises(SubstitutionError, match=message) as caught:
        expand(text, {"var": "secret-value"}, strict=False)
    assert "secret-value" not in str(caught.value)
