"""Once per run: each chart, index and dependency build is computed at most once."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from reviewer.charts.errors import ChartError

T = TypeVar("T")


class Once(Generic[T]):
    """Compute each key at most once, even from several threads; failures are remembered too."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._locks: dict[Hashable, threading.Lock] = {}
        self._done: dict[Hashable, T | ChartError] = {}

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The value for `key`, computed by `compute` the first time; a remembered failure again."""
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._done:
                try:
                    self._done[key] = compute()
                except ChartError as error:
                    self._done[key] = error
            found = self._done[key]
        if isinstance(found, ChartError):
            raise found.with_traceback(None)
        return found
