#!/usr/bin/env python3
"""A known CPU load for the quickstart experiment: keeps one core busy DUTY of every 100 ms
for SECONDS of wall time, then prints the CPU time it used.

    python3 load.py [--seconds 4] [--duty 1.0]

Standard library only.
"""

import argparse
import os
import sys
import time

PERIOD_S = 0.1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=4.0, help="wall time to run (s)")
    ap.add_argument("--duty", type=float, default=1.0,
                    help="busy fraction of every 100 ms period, 0 to 1")
    a = ap.parse_args()
    if not 0 <= a.duty <= 1 or a.seconds < 0:
        ap.error("--duty must be in [0, 1] and --seconds >= 0")

    start = time.monotonic()
    end = start + a.seconds
    k = 0
    x = 0
    while True:
        period = start + k * PERIOD_S
        if period >= end:
            break
        busy_end = min(period + a.duty * PERIOD_S, end)
        while time.monotonic() < busy_end:
            for i in range(1000):
                x += i * i
        rest = min(period + PERIOD_S, end) - time.monotonic()
        if rest > 0:
            time.sleep(rest)
        k += 1
    t = os.times()
    print("load: duty %.2f for %.1f s, cpu %.3f s (pid %d)"
          % (a.duty, a.seconds, t.user + t.system, os.getpid()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
