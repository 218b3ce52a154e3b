"""Chart sources: a release's `ChartRef` + version → a chart on local disk.

Modules, each depending only on those above it:
  - `errors`: `ChartError` and the reasons a chart could not be fetched;
  - `semver`: versions and constraints, chosen the way Helm chooses them;
  - `credentials`: logins for private repositories, never from the repository under review;
  - `archive`: chart archives' digests and `Chart.yaml`;
  - `remote`: where a remote chart lives;
  - `cache`: `ChartCache`, on disk, shared by both sides of a diff and across runs;
  - `once`: computing each chart at most once per run;
  - `transport`: HTTP(S) GETs that send a login only to the same origin;
  - `logins`: the logins of one run, and keeping their passwords out of messages;
  - `workdir`: the run's private directory for working copies and registry logins;
  - `source`: `ResolvedChart`, the `ChartSource` protocol and the choice of a version;
  - `http_source`: `HttpSource`, HTTP(S) repositories through `index.yaml`;
  - `oci_source`: `OciSource`, OCI registries through their tag lists;
  - `downloads`: `Downloads`, a remote chart from the cache, a repository or a registry;
  - `dependencies`: `DependencyBuilder`, missing dependencies like `helm dependency build`;
  - `fetcher`: `ChartFetcher`, which composes them.
"""

from __future__ import annotations

from reviewer.charts.archive import sha256_file
from reviewer.charts.cache import default_cache_dir
from reviewer.charts.credentials import (
    CREDENTIALS_ENV,
    Credentials,
    Login,
    default_credentials_file,
)
from reviewer.charts.errors import (
    BAD_CREDENTIALS,
    CHART_NOT_FOUND,
    CORRUPT_ARCHIVE,
    DEPENDENCY_MISSING,
    NOT_CACHED,
    UNREACHABLE,
    VERSION_NOT_FOUND,
    ChartError,
)
from reviewer.charts.fetcher import ChartFetcher
from reviewer.charts.semver import Constraint, Version, is_exact, select_version
from reviewer.charts.source import ChartSource, ResolvedChart
from reviewer.charts.transport import display_url

__all__ = [
    "BAD_CREDENTIALS",
    "CHART_NOT_FOUND",
    "CORRUPT_ARCHIVE",
    "CREDENTIALS_ENV",
    "DEPENDENCY_MISSING",
    "NOT_CACHED",
    "UNREACHABLE",
    "VERSION_NOT_FOUND",
    "ChartError",
    "ChartFetcher",
    "ChartSource",
    "Constraint",
    "Credentials",
    "Login",
    "ResolvedChart",
    "Version",
    "default_cache_dir",
    "default_credentials_file",
    "display_url",
    "is_exact",
    "select_version",
    "sha256_file",
]
