"""A stall injector: a bounded CPU burner that competes with the measured processes for their CPU.

It spins for a random 5-60 ms, sleeps a random 0.2-1.5 s, and again, until --seconds have passed
(about 4% of one CPU, in bursts that look like the stalls of a shared cloud VM). Pin it to the CPU
under test with --cpu. The seed makes the pattern repeatable. It stops by itself, and on SIGTERM.

Usage: python3 -m latency_diff.injector --cpu 1 --seconds 600 [--seed 1]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import time

BURST_MS = (5.0, 60.0)
PAUSE_S = (0.2, 1.5)


def burn(seconds: float, rng: random.Random, clock=time.monotonic, sleep=time.sleep) -> tuple[int, float]:
    """Bursts until `seconds` have passed; returns (bursts, seconds spent burning)."""
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cpu", type=int, help="the CPU to burn on (default: wherever the scheduler puts it)")
    p.add_argument("--seconds", type=float, required=True, help="how long to run (it stops by itself)")
    p.add_argument("--seed", type=int, default=1, help="random seed of the burst pattern (default 1)")
    args = p.parse_args(argv)
    if args.seconds <= 0 or args.seconds > 24 * 3600:
        p.error("--seconds must be more than 0 and at most a day")
    if args.cpu is not None:
        try:
            os.sched_setaffinity(0, {args.cpu})
        except OSError as e:
            p.error(f"--cpu {args.cpu}: {e.strerror}")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    bursts, burned = burn(args.seconds, random.Random(args.seed))
    print(f"injector: {bursts} bursts, {burned:.2f} s of CPU in {args.seconds:.0f} s "
          f"({burned / args.seconds:.1%})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
