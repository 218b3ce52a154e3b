"""Keys for Secret markers: shared by one CI run's jobs, or this user's own on this machine.

A marker is a keyed hash of a Secret value; renders compare only when both used the same key,
and nobody without the key can compute one.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Callable, Mapping
from pathlib import Path

_MARKER_KEY_CONTEXT = b"reviewer secret markers v1\0"


def shared_marker_key(environ: Mapping[str, str], *, warn: Callable[[str], None]) -> bytes | None:
    """A Secret-marker key that every job of one CI run derives alike, or None.

    Derived from the SOPS age key material (secret, and present in every job
    that decrypts) and the CI run id, so the shards of one sharded review mark
    equal values equally while nobody without the key can compute a marker.
    Without key material each process keeps a random key; an unreadable
    `SOPS_AGE_KEY_FILE` is reported through `warn` (naming the file) and does the same.
    """
    material = environ.get("SOPS_AGE_KEY", "").encode()
    key_file = environ.get("SOPS_AGE_KEY_FILE")
    if not material and key_file:
        try:
            material = Path(key_file).read_bytes()
        except OSError as exc:
            warn(
                f"warning: SOPS_AGE_KEY_FILE {key_file} cannot be read ({type(exc).__name__}): "
                "Secret markers use a random key, so separate runs or shards mark values apart"
            )
            return None
    if not material.strip():
        return None
    run = environ.get("GITHUB_RUN_ID", "") + "/" + environ.get("GITHUB_RUN_ATTEMPT", "")
    return hmac.new(material, _MARKER_KEY_CONTEXT + run.encode(), hashlib.sha256).digest()


LOCAL_MARKER_KEY_FILE = "marker-key"


def local_marker_key(directory: Path) -> bytes | None:
    """This user's own random marker key, kept in `directory` (mode 0600), made on first use.

    For local runs without SOPS key material: two renders on this machine mark equal
    values equally, so their outputs compare, while nobody without the file can compute
    a marker. None (a random key for this process) when the file cannot be used.
    """
    path = directory / LOCAL_MARKER_KEY_FILE
    try:
        directory.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_key(path)
    except OSError:
        return None
    with os.fdopen(descriptor, "wb") as file:
        file.write(secrets.token_bytes(_KEY_BYTES))
    return _read_key(path)


_KEY_BYTES = 32


def _read_key(path: Path) -> bytes | None:
    try:
        key = path.read_bytes()
    except OSError:
        return None
    return key if len(key) == _KEY_BYTES else None
