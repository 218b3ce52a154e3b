"""Real age identities and real sops encryption for tests, with no extra tool installed."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from reviewer import proc
from reviewer.sops import KeylessMode, SopsDecoder, find_sops

# --- age identities without the age tool -------------------------------------------
# An age X25519 identity is 32 random bytes, bech32-encoded; its recipient is the
# X25519 public key. RFC 7748 and BIP 173 in a few lines, so tests need no
# `age-keygen` and no extra package.

_P = 2**255 - 19
_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def _x25519(scalar: bytes, point: bytes = (9).to_bytes(32, "little")) -> bytes:
    k = (int.from_bytes(scalar, "little") & ~7 & ~(1 << 255)) | (1 << 254)
    x1 = int.from_bytes(point, "little") & ((1 << 255) - 1)
    x2, z2, x3, z3, swap = 1, 0, x1, 1, 0
    for t in reversed(range(255)):
        bit = (k >> t) & 1
        if swap ^ bit:
            x2, x3, z2, z3 = x3, x2, z3, z2
        swap = bit
        a, b, c, d = x2 + z2, x2 - z2, x3 + z3, x3 - z3
        aa, bb, da, cb = a * a, b * b, d * a, c * b
        e = aa - bb
        x3, z3 = (da + cb) ** 2 % _P, x1 * (da - cb) ** 2 % _P
        x2, z2 = aa * bb % _P, e * (aa + 121665 * e) % _P
    if swap:
        x2, z2 = x3, z3
    return (x2 * pow(z2, _P - 2, _P) % _P).to_bytes(32, "little")


def _polymod(values: list[int]) -> int:
    check = 1
    for value in values:
        top = check >> 25
        check = (check & 0x1FFFFFF) << 5 ^ value
        for i, gen in enumerate((0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)):
            check ^= gen if (top >> i) & 1 else 0
    return check


def _hrp_words(hrp: str) -> list[int]:
    return [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]


def _regroup(data: bytes | list[int], source_bits: int, target_bits: int) -> list[int]:
    acc = bits = 0
    out: list[int] = []
    for value in data:
        acc, bits = acc << source_bits | value, bits + source_bits
        while bits >= target_bits:
            bits -= target_bits
            out.append(acc >> bits & ((1 << target_bits) - 1))
    if bits and target_bits == 5:
        out.append(acc << (5 - bits) & 31)
    return out


def bech32_encode(hrp: str, data: bytes) -> str:
    words = _regroup(data, 8, 5)
    polymod = _polymod([*_hrp_words(hrp), *words, 0, 0, 0, 0, 0, 0]) ^ 1
    checksum = [(polymod >> 5 * (5 - i)) & 31 for i in range(6)]
    return hrp + "1" + "".join(_BECH32[w] for w in [*words, *checksum])


def bech32_decode(text: str) -> tuple[str, bytes]:
    hrp, _, data = text.lower().rpartition("1")
    words = [_BECH32.index(c) for c in data]
    assert _polymod([*_hrp_words(hrp), *words]) == 1, "bad bech32 checksum"
    return hrp, bytes(_regroup(words[:-6], 5, 8))


@dataclass(frozen=True)
class AgeIdentity:
    """An age X25519 identity: the secret key line and its public recipient."""

    secret_key: str
    recipient: str

    @classmethod
    def generate(cls) -> AgeIdentity:
        scalar = os.urandom(32)
        secret = bech32_encode("age-secret-key-", scalar).upper()
        return cls(secret, bech32_encode("age", _x25519(scalar)))

    def write(self, path: Path) -> Path:
        path.write_text(f"# public key: {self.recipient}\n{self.secret_key}\n", encoding="utf-8")
        return path


def encrypt(
    directory: Path,
    document: Any,
    identity: AgeIdentity,
    *options: str,
    name: str = "secrets.sops.yaml",
) -> Path:
    """Encrypt `document` with the real sops for `identity`; returns the encrypted file."""
    source = directory / f".{name}.plain.yaml"
    source.write_text(
        json.dumps(document, ensure_ascii=False), encoding="utf-8"
    )  # JSON is YAML, types exact
    types = ("--input-type", "yaml", "--output-type", "yaml")
    argv = proc.argv(
        find_sops(os.environ), "--encrypt", "--age", identity.recipient, *options, *types, source
    )
    command = proc.Command(argv, cwd=directory)
    target = directory / name
    target.write_bytes(proc.run(command).stdout)
    source.unlink()
    return target


def sops_decoder(
    keyless: KeylessMode = KeylessMode.FALLBACK, binary: Path | None = None
) -> SopsDecoder:
    """A decoder whose sops sees this test's environment, as `cli.main` hands it down."""
    programs = proc.Programs.from_environment(os.environ)
    return SopsDecoder(keyless=keyless, binary=binary, programs=programs)


def isolate_sops_key(monkeypatch: pytest.MonkeyPatch, directory: Path) -> AgeIdentity:
    """A fresh age identity that sops finds through SOPS_AGE_KEY_FILE; CI variables unset."""
    for name in ("SOPS_AGE_KEY", "SOPS_AGE_KEY_FILE", "SOPS_AGE_KEY_CMD", "CI", "GITHUB_ACTIONS"):
        monkeypatch.delenv(name, raising=False)
    identity = AgeIdentity.generate()
    monkeypatch.setenv("SOPS_AGE_KEY_FILE", str(identity.write(directory / "keys.txt")))
    return identity
