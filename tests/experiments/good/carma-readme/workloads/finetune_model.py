#!/usr/bin/env python3
"""A stand-in for CARMA's workloads/finetune_model.py: the same command line, a little CPU work.

It takes --model_name and --max_steps as CARMA's script does, runs max_steps "training steps"
of about 10 ms of arithmetic each on the CPU (no GPU, the standard library only) and prints a
line per 20 steps and a last line with the loss, so that carma's tests can run CARMA's README
example as it is written.
"""
import argparse
import os
import sys
import time


def step(state, n=20000):
    """One step: n multiply-adds on a small state; returns the new state and its 'loss'."""
    a, b = state
    for i in range(n):
        a = (a * 1103515245 + 12345 + i) % 2147483648
        b = (b + a) % 1000003
    return (a, b), b / 1000003.0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model_name", required=True)
    p.add_argument("--max_steps", type=int, default=60)
    p.add_argument("--step_ms", type=float, default=10.0, help="wall time per step, at least")
    a = p.parse_args()
    if a.max_steps < 0:
        p.error("--max_steps must be >= 0")
    print(f"finetune {a.model_name}: {a.max_steps} steps, "
          f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '')}", flush=True)
    state, loss = (1, 1), 1.0
    for s in range(1, a.max_steps + 1):
        t0 = time.monotonic()
        state, loss = step(state)
        left = a.step_ms / 1000.0 - (time.monotonic() - t0)
        if left > 0:
            time.sleep(left)
        if s % 20 == 0:
            print(f"step {s}/{a.max_steps} loss {loss:.4f}", flush=True)
    print(f"done: {a.model_name} loss {loss:.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
