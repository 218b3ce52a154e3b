"""Template functions whose result changes from one render to the next.

Helm's engine is deterministic but for these (Sprig's random, time and key functions, and
host lookups): a template that calls none of them renders the same twice. Two things rely
on it: the plan cache stores no plan a `.gotmpl` calling one made, and a chart calling none
is not rendered a second time to find its regenerated fields (reviewer/regenerated.py).
A false match (the word in a comment) only costs a render or a plan.
"""

from __future__ import annotations

import io
import re
import tarfile
from pathlib import Path

_CALLS = re.compile(
    rb"\b(now|ago|date[A-Za-z]*|unixEpoch|rand[A-Za-z]*|uuidv4|shuffle|htpasswd|bcrypt"
    rb"|encryptAES|getHostByName|gen(PrivateKey|CA|CAWithKey|SelfSignedCert"
    rb"|SelfSignedCertWithKey|SignedCert|SignedCertWithKey))\b"
)
_ARCHIVE_DEPTH = 3  # a chart archive holding subchart archives holding subchart archives


def calls_unstable(text: bytes) -> bool:
    """Whether a template's text names any of those functions."""
    return _CALLS.search(text) is not None


def chart_may_vary(chart: Path) -> bool:
    """Whether a chart directory or archive (subcharts included) names any of them;
    an unreadable chart may."""
    try:
        if chart.is_dir():
            return any(_file_may_vary(path) for path in chart.rglob("*") if path.is_file())
        return _archive_may_vary(chart.read_bytes(), _ARCHIVE_DEPTH)
    except (OSError, tarfile.TarError, EOFError, ValueError):
        return True


def _file_may_vary(path: Path) -> bool:
    data = path.read_bytes()
    if path.name.endswith(".tgz"):
        return _archive_may_vary(data, _ARCHIVE_DEPTH)
    return calls_unstable(data)


def _archive_may_vary(data: bytes, depth: int) -> bool:
    if depth == 0:
        return True
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        for member in archive:
            if not member.isfile():
                continue
            stream = archive.extractfile(member)
            content = stream.read() if stream is not None else b""
            if member.name.endswith(".tgz"):
                if _archive_may_vary(content, depth - 1):
                    return True
            elif calls_unstable(content):
                return True
    return False
