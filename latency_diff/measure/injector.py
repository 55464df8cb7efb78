"""Disturbances for the robustness benchmark: bounded neighbours that compete with the measured processes.

- stall: a CPU burner on the measured CPU that spins for a random 5-60 ms, sleeps a random
  0.2-1.5 s, and again (about 4% of one CPU, in bursts that look like the stalls of a shared VM).
- drift: a memory-streaming neighbour, on for a random 20-60 s, off for a random 20-60 s, and again:
  while on, it copies a buffer larger than the last-level cache over and over (`--cpu` says where;
  the other CPU, as a noisy neighbour on the same host would). It slows whatever on the measured CPU
  misses the caches: a drift of the machine's speed for tens of seconds at a time.

Each stops by itself after --seconds, and on SIGTERM. The seed makes the pattern repeatable.

Usage: python3 -m latency_diff.measure.injector stall --cpu 1 --seconds 600 [--seed 1]
       python3 -m latency_diff.measure.injector drift --cpu 0 --seconds 600 [--seed 1] [--mb 64]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import time
from collections.abc import Callable

BURST_MS = (5.0, 60.0)
PAUSE_S = (0.2, 1.5)
DRIFT_ON_S = (20.0, 60.0)
DRIFT_OFF_S = (20.0, 60.0)
#: The streamed buffer, larger than any last-level cache of the machines the kit runs on.
DRIFT_MB = 64


def burn(seconds: float, rng: random.Random, clock=time.monotonic, sleep=time.sleep) -> tuple[int, float]:
    """Stall bursts until `seconds` have passed; returns (bursts, seconds spent burning)."""
    end = clock() + seconds
    bursts, burned = 0, 0.0
    while clock() < end:
        length = rng.uniform(*BURST_MS) / 1000
        start = clock()
        stop = min(start + length, end)
        while clock() < stop:
            pass
        bursts += 1
        burned += clock() - start
        pause = rng.uniform(*PAUSE_S)
        if clock() + pause >= end:
            break
        sleep(pause)
    return bursts, burned


def stream_once(src: bytearray, dst: bytearray) -> None:
    dst[:] = src  # a memcpy of the whole buffer: streams it through the caches


def drift(seconds: float, rng: random.Random, mb: int = DRIFT_MB, clock=time.monotonic, sleep=time.sleep,
          work: Callable[[], None] | None = None) -> list[tuple[float, float]]:
    """On and off periods until `seconds` have passed; returns the on periods as (start, end) offsets in seconds."""
    if work is None:
        src, dst = bytearray(os.urandom(1 << 20)) * mb, bytearray(mb << 20)

        def work() -> None:
            stream_once(src, dst)
    start = clock()
    end = start + seconds
    periods = []
    while clock() < end:
        on_until = min(clock() + rng.uniform(*DRIFT_ON_S), end)
        t0 = clock()
        while clock() < on_until:
            work()
        periods.append((t0 - start, clock() - start))
        off = rng.uniform(*DRIFT_OFF_S)
        if clock() + off >= end:
            break
        sleep(off)
    return periods


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=("stall", "drift"), help="stall: CPU bursts on --cpu; drift: memory streaming on "
                   "--cpu, on and off for tens of seconds")
    p.add_argument("--cpu", type=int, help="the CPU to run on (default: wherever the scheduler puts it)")
    p.add_argument("--seconds", type=float, required=True, help="how long to run (it stops by itself)")
    p.add_argument("--seed", type=int, default=1, help="random seed of the pattern (default 1)")
    p.add_argument("--mb", type=int, default=DRIFT_MB, help=f"drift: the streamed buffer in MB (default {DRIFT_MB})")
    args = p.parse_args(argv)
    if args.seconds <= 0 or args.seconds > 24 * 3600:
        p.error("--seconds must be more than 0 and at most a day")
    if not 1 <= args.mb <= 4096:
        p.error("--mb must be 1 to 4096")
    if args.cpu is not None:
        try:
            os.sched_setaffinity(0, {args.cpu})
        except OSError as e:
            p.error(f"--cpu {args.cpu}: {e.strerror}")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    rng = random.Random(args.seed)
    if args.mode == "stall":
        bursts, burned = burn(args.seconds, rng)
        print(f"injector: {bursts} bursts, {burned:.2f} s of CPU in {args.seconds:.0f} s "
              f"({burned / args.seconds:.1%})", file=sys.stderr)
    else:
        periods = drift(args.seconds, rng, args.mb)
        on = sum(b - a for a, b in periods)
        print(f"injector: {len(periods)} drift periods, on for {on:.0f} s of {args.seconds:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
