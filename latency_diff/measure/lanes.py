"""The two lanes: where the next processes start, get checked and warm up while the measured CPU measures.

With a second CPU (shared pinning), a worker thread prepares processes one after another on it; without
one (split or no pinning), a preparation runs lazily on the measuring lane, when its result is asked for.
`Lanes` is the preparing lane as the measuring lane sees it: preparations submitted ahead, waited for
(lending the measured CPU to a slow one, --lend-cpu), their times kept for the next pairs' segments,
and finished processes stopped in the background.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from . import pair

#: While the measured CPU waits for a preparation, the process being prepared is lent it this often (--lend-cpu).
LEND_POLL_S = 0.25
#: Preparation times kept for the segments of the next pairs (schedule.Schedule.segments).
RECENT_PREPARATIONS = 8


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


class Lanes:
    """The preparing lane seen from the measuring lane, and the stopping of finished processes."""

    def __init__(self, ctx: pair.Context, ahead: bool, lend: bool):
        self.ctx = ctx
        self.prepare = Lane(ahead)
        self.lend = lend
        #: Stops finished processes (off the measured CPU) while the measuring lane goes on.
        self.reaper = ThreadPoolExecutor(max_workers=2, thread_name_prefix="stop") if ahead else None
        #: Recent server processes' preparation times, for how long a pair can measure for free.
        self.prepare_times: deque[float] = deque(maxlen=RECENT_PREPARATIONS)

    @property
    def ahead(self) -> bool:
        return self.prepare.ahead

    def submit(self, fn: Callable[[], Any]) -> Future:
        return self.prepare.submit(fn)

    def wait(self, future: Future) -> Any:
        """The preparation's result; meanwhile the process being prepared is lent the measured CPU (--lend-cpu)."""
        if self.lend and self.ahead:
            last = time.monotonic()
            while not futures.wait([future], timeout=LEND_POLL_S).done:
                now = time.monotonic()
                pair.lend(self.ctx, now - last)
                last = now
        return future.result()

    def recent(self) -> deque[float] | None:
        """Recent preparation times, when processes are prepared ahead (else a pair cannot measure for free)."""
        return self.prepare_times if self.ahead else None

    def in_background(self, fn: Callable[[], None]) -> bool:
        """Hands fn to the reaper; False, with fn not run, when there is none or the run is stopping."""
        if self.reaper is None or self.ctx.stopping.is_set():
            return False
        self.reaper.submit(fn)
        return True

    def shutdown(self) -> None:
        if self.reaper is not None:
            self.reaper.shutdown(wait=True)
        self.prepare.shutdown()
