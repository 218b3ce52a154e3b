"""Redaction (docs/redaction.md): redacted forms, manifests, Secret markers and the leak guard."""

from __future__ import annotations

import base64
import copy
import json
import re
import string
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from reviewer import proc, yamlio
from reviewer.errors import CommandError, ReviewerError
from reviewer.redact import (
    MIN_SUBSTRING_LENGTH,
    SECRET_MARKER_PREFIX,
    LeakError,
    LeakGuard,
    Redactor,
    redact_scalar,
    redact_tree,
    replacement_map,
)
from reviewer.visible import visible

KEY = b"test-run-key"


def _b64(text: str, *, url: bool = False, pad: bool = True) -> str:
    encode = base64.urlsafe_b64encode if url else base64.b64encode
    encoded = encode(text.encode("utf-8", "surrogatepass")).decode()
    return encoded if pad else encoded.rstrip("=")


def redactor_for(*values: Any, key: bytes = KEY) -> Redactor:
    """A Redactor for `values` as if each came from a SOPS file."""
    real = {f"v{i}": value for i, value in enumerate(values)}
    return Redactor(replacement_map(real, redact_tree(real)), key=key)


# --- one value ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("real", "redacted"),
    [
        ("hello-from-sops", "REDAC-REDA-REDA"),
        ("s3cret!", "REDACT!"),
        ("mycompany.com", "REDACTED.RED"),
        ("db", "RE"),
        ("AKIAIOSFODNN7EXAMPLE", "REDACTED"),
        ("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "REDACTED/REDACTE/REDACTED"),
        (999999, 123456),
        (5432, 5432),
        (True, True),
    ],
)
def test_design_table(real: Any, redacted: Any) -> None:
    assert redact_scalar(real) == redacted
    assert type(redact_scalar(real)) is type(real)


@pytest.mark.parametrize(
    ("real", "redacted"),
    [
        ("", ""),
        ("--- ::", "--- ::"),
        ("pässwörd", "RäREDöRE"),
        ("line1\nline2\n", "REDAC\nREDAC\n"),
        (False, False),
        (None, None),
        (0, 0),
        (9999, 9999),
        (-9999999, -1234567),
        (10000000000, 12345678901),
        (3.14, 3.14),
        (3.14159, 1.23456),
        (-99999.5, -12345.6),
        (9.87654321e100, 1.23456789e100),  # the exponent is kept
        (float("inf"), float("inf")),
    ],
)
def test_more_scalars(real: Any, redacted: Any) -> None:
    assert redact_scalar(real) == redacted
    assert type(redact_scalar(real)) is type(real)


def test_unsupported_type_is_a_bug() -> None:
    with pytest.raises(TypeError):
        redact_scalar(b"bytes")  # type: ignore[call-overload]


def test_tree_keeps_shape_and_keys() -> None:
    tree = {"db": {"password": "s3cret!", "port": 5432, "ids": [999999, "ab", True, None]}}
    before = copy.deepcopy(tree)
    assert redact_tree(tree) == {
        "db": {"password": "REDACT!", "port": 5432, "ids": [123456, "RE", True, None]}
    }
    assert tree == before


def test_replacement_map_from_differing_leaves() -> None:
    real = {"a": "hunter22", "n": 999999, "f": 31415.9, "short": 42, "flag": True, "same": "--"}
    assert replacement_map(real, redact_tree(real)) == {
        "hunter22": "REDACTED",
        "999999": "123456",
        "31415.9": "12345.6",
    }


def test_replacement_map_tolerates_shape_differences() -> None:
    # A .gotmpl branching on a secret may yield different shapes on the two sides.
    real = {"a": {"x": "secret-one"}, "b": ["secret-two", "extra"], "c": "only-real"}
    redacted = {"a": "not-a-map", "b": ["REDACT-RED"], "d": "only-redacted"}
    assert replacement_map(real, redacted) == {"secret-two": "REDACT-RED"}


# --- manifests -------------------------------------------------------------------------


def config_map(**data: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": data}


def test_whole_substring_and_encoded_occurrences() -> None:
    secret = "pa$$w0rd<&>/x"
    redacted = redact_scalar(secret)
    body = config_map(
        whole=secret,
        url=f"postgres://app:{secret}@db:5432/app",
        ini=f"[auth]\npassword = {secret}\n",
        b64=_b64(secret),
        b64url=_b64(secret, url=True, pad=False),
        json=json.dumps({"p": secret}),
        gojson='{"p":"pa$$w0rd\\u003c\\u0026\\u003e/x"}',
        urlquery=f"https://x/?p={quote(secret, safe='')}",
    )
    out = redactor_for(secret).redact_manifest(body)["data"]
    assert out["whole"] == redacted
    assert out["url"] == f"postgres://app:{redacted}@db:5432/app"
    assert out["ini"] == f"[auth]\npassword = {redacted}\n"
    assert out["b64"] == _b64(redacted)
    assert out["b64url"] == _b64(redacted, url=True, pad=False)
    assert json.loads(out["json"]) == {"p": redacted}
    assert redacted == "RE$$REDA<&>/R"
    assert out["gojson"] == '{"p":"RE$$REDA\\u003c\\u0026\\u003e/R"}'
    assert out["urlquery"] == f"https://x/?p={quote(redacted, safe='')}"


def test_numbers_and_how_helm_prints_them() -> None:
    redactor = redactor_for(9999999, 99999.5)
    out = redactor.redact_manifest(
        config_map(n=9999999, f=99999.5, as_float=9999999.0, go="9.999999e+06", text="id-9999999")
    )["data"]
    assert out == {
        "n": 1234567,
        "f": 12345.6,
        "as_float": 1234567.0,
        "go": "1.234567e+06",
        "text": "id-1234567",
    }
    assert type(out["n"]) is int and type(out["as_float"]) is float


def test_reindented_multiline_secret() -> None:
    body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7"
    pem = f"-----BEGIN KEY-----\n{body}\n-----END KEY-----\n"
    nested = "tls:\n  key: |\n    " + pem.replace("\n", "\n    ")  # like Helm's `indent 4`
    escaped = json.dumps({"key": pem})  # like Helm's toJson
    out = redactor_for(pem).redact_manifest(config_map(nested=nested, escaped=escaped))["data"]
    for line in ("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "BKcwggSjAgEAAoIBAQC7"):
        assert line not in out["nested"] and line not in out["escaped"]
    assert out["nested"] == "tls:\n  key: |\n    " + redact_scalar(pem).replace("\n", "\n    ")
    assert json.loads(out["escaped"]) == {"key": redact_scalar(pem)}


def test_longest_secret_first_and_overlaps() -> None:
    redactor = redactor_for("abcdefgh", "abcd", "ghijkl")
    out = redactor.redact_manifest(config_map(a="x abcdefgh y", b="abcd", c="abcdefghijkl!"))
    assert out["data"] == {"a": "x REDACTED y", "b": "REDA", "c": "REDACTED!"}


def test_short_secrets_only_as_whole_scalars() -> None:
    assert MIN_SUBSTRING_LENGTH == 4
    redactor = redactor_for("db", "abc")
    body = config_map(name="db", other="abc", url="mydb.example/abc", b64=_b64("db"), port=42)
    assert redactor.redact_manifest(body)["data"] == {
        "name": "RE",
        "other": "RED",
        "url": "mydb.example/abc",  # common letters inside text are left alone
        "b64": _b64("RE"),
        "port": 42,
    }


def test_keys_are_never_redacted_and_input_is_not_mutated() -> None:
    body = config_map(**{"hunter22": "hunter22", "list": ["x hunter22"]})
    before = copy.deepcopy(body)
    out = redactor_for("hunter22").redact_manifest(body)
    assert out["data"] == {"hunter22": "REDACTED", "list": ["x REDACTED"]}
    assert body == before


def secret(data: dict[str, Any] | None = None, **string_data: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
    if data is not None:
        body["data"] = data
    if string_data:
        body["stringData"] = string_data
    return body


def test_secret_values_become_keyed_markers() -> None:
    redactor = redactor_for()  # not from SOPS: masked all the same
    out = redactor.redact_manifest(
        secret({"a": _b64("same"), "b": _b64("other"), "c": None}, d="same", e="not base64 !")
    )
    markers = {**out["data"], **out["stringData"]}
    assert markers["c"] is None
    assert markers["a"] == markers["d"]  # same bytes in data and stringData
    assert markers["a"] != markers["b"]
    assert all(m.startswith("<secret:sha256-hmac:") for k, m in markers.items() if k != "c")
    assert out["metadata"] == {"name": "s"}


def test_markers_depend_on_the_run_key() -> None:
    body = secret(token="value-1")
    first = Redactor({}, key=b"run-1").redact_manifest(body)["stringData"]["token"]
    again = Redactor({}, key=b"run-1").redact_manifest(body)["stringData"]["token"]
    other = Redactor({}, key=b"run-2").redact_manifest(body)["stringData"]["token"]
    random_key = Redactor({}).redact_manifest(body)["stringData"]["token"]
    assert first == again
    assert len({first, other, random_key}) == 3
    assert "value-1" not in first


def test_only_core_v1_secrets_are_masked() -> None:
    custom = {"apiVersion": "example.com/v1", "kind": "Secret", "stringData": {"k": "hunter22"}}
    out = redactor_for("hunter22").redact_manifest(custom)
    assert out["stringData"] == {"k": "REDACTED"}


def test_secrets_inside_a_list() -> None:
    body = {"apiVersion": "v1", "kind": "List", "items": [secret(k="x"), config_map(a="hunter22")]}
    out = redactor_for("hunter22").redact_manifest(body)
    assert out["items"][0]["stringData"]["k"].startswith("<secret:")
    assert out["items"][1]["data"] == {"a": "REDACTED"}


def test_redact_text_for_free_text() -> None:
    redactor = redactor_for("hunter22")
    assert redactor.redact_text("error: bad password hunter22") == "error: bad password REDACTED"


# --- leak guard ----------------------------------------------------------------------


def test_guard_error_names_the_location_never_the_value() -> None:
    guard = LeakGuard(["hunter22", 99999])
    with pytest.raises(LeakError) as caught:
        guard.check("line one\nthe password: hunter22\n", "PR comment part 2")
    message = str(caught.value)
    assert "PR comment part 2" in message
    assert "hunter22" not in message
    assert isinstance(caught.value, ReviewerError)


@pytest.mark.parametrize(
    "text",
    [
        _b64("hunter22"),
        _b64("hunter22", url=True, pad=False),
        "u%3Ahunter22%40",
        "port=99999",
        "limit: 9.999999e+06",
    ],
)
def test_guard_finds_encodings(text: str) -> None:
    with pytest.raises(LeakError):
        LeakGuard(["hunter22", 99999, 9999999]).check(text, "report.md")


@pytest.mark.parametrize(
    "secret",
    ["S\u00e9cret\u202eValue99", "p\u00e4ssw\u00adord12345", 'q"uo\x1bte-99', "-----\r\nMIIE-----"],
)
def test_guard_finds_secrets_as_reviewer_shows_them(secret: str) -> None:
    """Reports and messages show control and format characters as escapes (`\\u202e`):
    a secret holding one is still recognised in that form."""
    for shown in (visible(secret), visible(secret, keep_newlines=True)):
        with pytest.raises(LeakError):
            LeakGuard([secret]).check(f"value: {shown}\n", "report")


def test_guard_ignores_short_secrets_and_redaction_output() -> None:
    guard = LeakGuard(["db", "EDACT", "2345", "sha256", "hmac"])
    guard.check("db: mydb\nuser: REDACTED\nport: 12345\nvalue: 1234.56789", "snapshot")
    guard.check("token: <secret:sha256-hmac:0123456789ab>", "snapshot")
    with pytest.raises(LeakError):
        guard.check("user: xEDACTy", "snapshot")
    with pytest.raises(LeakError):
        guard.check("pin 2345", "snapshot")


def test_scrub_output_passes_the_guard() -> None:
    guard = LeakGuard(["hunter22", "abcdef", "defghi"])
    scrubbed = guard.scrub(f"pw=hunter22 b64={_b64('hunter22')} abcdefghi")
    assert scrubbed == "pw=[REDACTED] b64=[REDACTED] [REDACTED]"
    guard.check(scrubbed, "log")


def test_scrub_works_as_the_proc_scrubber() -> None:
    guard = LeakGuard(["hunter22"])
    # The text comes through the environment: proc shows argv unscrubbed.
    command = proc.Command(("sh", "-c", 'echo "$MSG" >&2; exit 3'), env={"MSG": "login hunter22"})
    with pytest.raises(CommandError) as caught:
        proc.run(command, scrub=guard.scrub)
    assert "hunter22" not in caught.value.message
    assert "login [REDACTED]" in caught.value.message


def test_redactor_guard_uses_the_same_secrets() -> None:
    redactor = redactor_for("hunter22", "db")
    guard = redactor.guard()
    guard.check(json.dumps(redactor.redact_manifest(config_map(a="x hunter22", b="db"))), "x")
    with pytest.raises(LeakError):
        guard.check("hunter22", "x")


# --- property: nothing of a secret survives ------------------------------------------

_DELIMITERS = " :/@?&=#%+\n\t\"'\\{}[],.-_$"
KEEP = "keep me: visible!"
MARKER = re.compile(r"<secret:sha256-hmac:[0-9a-f]{12}>")

secret_values = st.one_of(
    st.text(min_size=1, max_size=24),  # any unicode, newlines included
    st.text(alphabet=_DELIMITERS + string.ascii_letters + string.digits, min_size=1, max_size=24),
    st.text(alphabet=string.ascii_letters + string.digits, min_size=1, max_size=3),
    st.text(alphabet=string.ascii_letters + string.digits + "+/", min_size=200, max_size=600),
    st.lists(
        st.text(alphabet=string.ascii_letters + string.digits + "+/", min_size=8, max_size=64),
        min_size=1,
        max_size=4,
    ).map(lambda lines: "-----BEGIN KEY-----\n" + "\n".join(lines) + "\n-----END KEY-----\n"),
    st.integers(min_value=-(10**15), max_value=10**15),
    st.floats(allow_nan=False, allow_infinity=False),
)


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)


def _manifests(values: list[Any]) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for index, value in enumerate(values):
        text = _as_text(value)
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": f"cm-{index}",
                    "annotations": {"b64": _b64(text), "b64url": _b64(text, url=True, pad=False)},
                },
                "data": {
                    "url": f"postgres://app:{text}@db.internal:5432/app?sslmode=require",
                    "config": f"[auth]\npassword = {text}\nuser = app\n",
                    "json": json.dumps({"password": value}),
                    "indented": "tls:\n  key: |\n    " + text.replace("\n", "\n    "),
                    "whole": text,
                    "keep": KEEP,
                },
            }
        )
        objects.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": f"app-{index}"},
                "spec": {"env": [{"name": "PASSWORD", "value": text}], "number": value},
            }
        )
        objects.append(secret({"pw": _b64(text)}, pw=text))
    return objects


def _strings(tree: Any) -> list[str]:
    if isinstance(tree, dict):
        return [s for value in tree.values() for s in _strings(value)]
    if isinstance(tree, list):
        return [s for item in tree for s in _strings(item)]
    return [tree] if isinstance(tree, str) else []


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(secret_values, min_size=1, max_size=4))
def test_no_secret_survives_redaction(values: list[Any]) -> None:
    real = {f"s{i}": value for i, value in enumerate(values)}
    mapping = replacement_map(real, redact_tree(real))
    protected = [text for text in mapping if len(text) >= MIN_SUBSTRING_LENGTH]
    assume(not any(text in KEEP for text in protected) and KEEP not in mapping)
    redactor = Redactor(mapping, key=KEY)
    manifests = _manifests(values)
    before = copy.deepcopy(manifests)

    out = [redactor.redact_manifest(body) for body in manifests]

    assert manifests == before
    # Secret markers are hex digests: a hex-looking secret may match them by chance.
    scalars = [s for s in _strings(out) if not MARKER.fullmatch(s)]
    for text in protected:
        for scalar in scalars:
            assert text not in scalar
    for original, body in zip(manifests, out, strict=True):
        if body["kind"] == "Secret":
            assert all(MARKER.fullmatch(v) for v in body["data"].values())
            assert all(MARKER.fullmatch(v) for v in body["stringData"].values())
        if body["kind"] == "ConfigMap":
            assert body["data"]["keep"] == KEEP
            whole = original["data"]["whole"]
            assert body["data"]["whole"] == mapping.get(whole, whole)
    serialized = "".join(yamlio.dump(body) for body in out) + json.dumps(out, ensure_ascii=False)
    redactor.guard().check(serialized, "snapshot")


_GUARD_SECRETS = ["hunter2-pass", "12345", "line one\nline two", "password", "56789ab"]
_GUARD_PUBLIC = ["password", "hunter"]
# Pieces where no secret shows but inside what redaction writes or a public word: the
# secrets' redacted forms (12345 and 1234567.8 are redacted numbers, and equal or hold
# the secret 12345), a Secret marker holding 56789ab, the key `password`, near misses.
_CLEAN_PIECES = st.one_of(
    st.sampled_from(
        [
            *(str(redact_scalar(secret)) for secret in _GUARD_SECRETS),
            str(redact_scalar(12345)),
            str(redact_scalar(1234567.8)),
            f"{SECRET_MARKER_PREFIX}0123456789ab>",
            "[REDACTED]",
            *_GUARD_PUBLIC,
            *("hunter2", "pass", "12346", "line one\n    line three", "aGVsbG8=", " ", "-"),
        ]
    ),
    st.text(max_size=6).filter(lambda text: "12345" not in text),  # too short for the rest
)
# Pieces showing a secret (or an encoding of it) where no redaction token or public word
# covers it: a number inside a word is no redacted number, `passwords` is no key.
_LEAKS = st.builds(
    lambda before, leak, after: before + leak + after,
    st.text("xR _-:.", max_size=3),
    st.sampled_from(
        [
            "hunter2-pass",
            _b64("hunter2-pass"),
            quote("line one\nline two", safe=""),
            json.dumps("line one\nline two")[1:-1],
            "line one\n      line two",  # re-indented by Helm's `indent`
            "id12345",
            "12345th",
            "passwords",
            "mypassword",
            "56789ab",
            _b64("56789ab"),
        ]
    ),
    st.text("xR _-:.", max_size=3),
)


@settings(max_examples=300, deadline=None)
@given(
    clean=st.lists(_CLEAN_PIECES, max_size=8),
    leak=st.none() | st.tuples(_LEAKS, st.integers(min_value=0, max_value=8)),
    separator=st.sampled_from(["|", " | ", "|\n  "]),
)
def test_leak_guard_refuses_a_secret_outside_redaction_output_and_public_words(
    clean: list[str], leak: tuple[str, int] | None, separator: str
) -> None:
    # No form of these secrets holds `|`: a secret in the text shows within one piece.
    guard = LeakGuard(_GUARD_SECRETS, public=_GUARD_PUBLIC)
    pieces = list(clean)
    if leak is not None:
        pieces.insert(leak[1], leak[0])
    text = separator.join(pieces)
    if leak is None:
        guard.check(text, "report")
        return
    with pytest.raises(LeakError) as refused:
        guard.check(text, "report")
    assert not any(secret in str(refused.value) for secret in _GUARD_SECRETS)
