"""Progress of a long run on stderr: one line per step, with the time so far and an estimate of what is left."""

from __future__ import annotations

import sys
import threading
import time


class Progress:
    def __init__(self) -> None:
        self.started = time.monotonic()
        self.tty = sys.stderr.isatty()
        #: The time left: (a projection, an upper bound) in seconds (Schedule.seconds_left), None before it is known.
        self.left: tuple[float, float] | None = None
        self._lock = threading.Lock()

    def say(self, text: str, *, transient: bool = False) -> None:
        """A line; a transient one (a step inside a pair) is overwritten by the next on a terminal, and not shown
        elsewhere."""
        elapsed = time.monotonic() - self.started
        left = "" if self.left is None else f", ~{_mmss(self.left[0])} left (at most {_mmss(self.left[1])})"
        line = f"[{int(elapsed // 60)}:{int(elapsed % 60):02d}{left}] {text}"
        with self._lock:
            if transient and self.tty:
                print("\r\033[K" + line, end="", file=sys.stderr, flush=True)
            elif not transient:
                print(("\r\033[K" if self.tty else "") + line, file=sys.stderr, flush=True)


def _mmss(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"
