"""The preparing lane: where the next processes start, get checked and warm up while the measured CPU measures.

With a second CPU (shared pinning), a worker thread prepares processes one after another on it; without
one (split or no pinning), a preparation runs lazily on the measuring lane, when its result is asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


class Lane:
    """Runs preparations one after another on a worker thread, or lazily on the caller's thread."""

    def __init__(self, ahead: bool):
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="prepare") if ahead else None

    @property
    def ahead(self) -> bool:
        return self.pool is not None

    def submit(self, fn: Callable[[], Any]) -> Future:
        if self.pool is not None:
            return self.pool.submit(fn)
        return _Lazy(fn)

    def shutdown(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


class _Lazy(Future):
    """A future that runs its function on the first call of result()."""

    def __init__(self, fn: Callable[[], Any]):
        super().__init__()
        self._fn: Callable[[], Any] | None = fn

    def result(self, timeout: float | None = None) -> Any:
        fn, self._fn = self._fn, None
        if fn is not None:
            try:
                self.set_result(fn())
            except BaseException as e:
                self.set_exception(e)
        return super().result(timeout)
