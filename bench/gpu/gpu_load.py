#!/usr/bin/env python3
"""A GPU load of adjustable intensity: bf16 matrix products on cuda:0, busy DUTY of every
100 ms period (a product, then synchronize, again until the busy part of the period is over),
asleep the rest of it, for SECONDS of wall time; prints one JSON line at the end.

    python3 gpu_load.py --seconds S --duty D [--size N] [--mode auto|gpu|fake]
                        [--barrier DIR --peers K] [--name NAME]

--size N: the matrices are N x N bf16 (default 8192: three of them, 384 MiB, plus the CUDA
context; one product is 2 N^3 = 1.1 TFLOP, about 1.4 ms on an H200 alone).
--mode: gpu needs torch with CUDA (exit 3 otherwise); fake spins the CPU on a small pure-Python
chunk instead of each product (to test the scripts on a machine without a GPU); auto (default)
is gpu when torch sees a GPU, else fake, and the JSON says which and why.
--barrier DIR --peers K: after the warm-up, each process drops a file in DIR and waits (at most
60 s) until K are there, so that collocated loads start their timed part together.

The timed part starts after the warm-up (torch import, allocation, three products). The
schedule is absolute (period k starts at start + k x period), so sleeps' lateness does not
accumulate. SIGTERM or SIGINT end the timed part early; the JSON is still printed, with
"interrupted": true. Output keys: name, mode, mode_reason, device, size, duty, period_s,
seconds, iterations, iters_per_s (over the wall time of the timed part), busy_s (time inside
busy parts, products included), iters_per_busy_s, wall_s, start_unix, end_unix, warmup_s,
tflop_per_s (2 N^3 x iterations / wall_s, gpu mode), max_mem_bytes, pid, interrupted.
"""

import argparse
import json
import os
import signal
import sys
import time

stop = False


def on_signal(signum, frame):
    global stop
    stop = True


def setup_gpu(size):
    """Returns (step, info) for the gpu mode, or raises with the reason it is unusable."""
    import torch  # noqa: PLC0415 (imported here: the fake mode needs no torch)

    if not torch.cuda.is_available():
        raise RuntimeError("torch %s sees no CUDA device" % torch.__version__)
    dev = torch.device("cuda:0")
    g = torch.Generator(device=dev)
    g.manual_seed(1234)
    a = torch.randn(size, size, device=dev, dtype=torch.bfloat16, generator=g)
    b = torch.randn(size, size, device=dev, dtype=torch.bfloat16, generator=g)
    c = torch.empty(size, size, device=dev, dtype=torch.bfloat16)

    def step():
        torch.matmul(a, b, out=c)
        torch.cuda.synchronize(dev)

    for _ in range(3):
        step()
    info = {"device": torch.cuda.get_device_name(dev), "torch": torch.__version__}

    def mem():
        return int(torch.cuda.max_memory_allocated(dev))

    return step, info, mem


def setup_fake():
    def step():
        s = 0
        for i in range(20000):
            s += i
        return s

    step()
    return step, {"device": "cpu (fake)"}, lambda: 0


def barrier(path, peers, timeout_s=60.0):
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "ready.%d" % os.getpid()), "w") as f:
        f.write("%.6f\n" % time.time())
    t_end = time.monotonic() + timeout_s
    while time.monotonic() < t_end and not stop:
        n = sum(1 for x in os.listdir(path) if x.startswith("ready."))
        if n >= peers:
            return n
        time.sleep(0.005)
    return -1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, required=True, help="wall time of the timed part")
    ap.add_argument("--duty", type=float, required=True, help="busy fraction, 0 to 1")
    ap.add_argument("--size", type=int, default=8192, help="matrix size N (default 8192)")
    ap.add_argument("--period", type=float, default=0.1, help="period in s (default 0.1)")
    ap.add_argument("--mode", choices=["auto", "gpu", "fake"], default="auto")
    ap.add_argument("--fake", action="store_const", const="fake", dest="mode",
                    help="the same as --mode fake")
    ap.add_argument("--barrier", help="a directory shared by the collocated loads")
    ap.add_argument("--peers", type=int, default=1, help="how many loads the barrier waits for")
    ap.add_argument("--name", default="", help="a name copied into the JSON")
    a = ap.parse_args()
    if not 0 <= a.duty <= 1 or a.seconds < 0 or a.size < 1 or a.period <= 0:
        ap.error("--duty in [0, 1], --seconds >= 0, --size >= 1, --period > 0")
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    t0 = time.monotonic()
    mode, reason = a.mode, "asked"
    step = info = mem = None
    if mode in ("auto", "gpu"):
        try:
            step, info, mem = setup_gpu(a.size)
            mode = "gpu"
        except Exception as e:  # noqa: BLE001 (any failure: no usable GPU)
            if mode == "gpu":
                print(json.dumps({"name": a.name, "error": "gpu mode: %s: %s"
                                  % (type(e).__name__, e)}), flush=True)
                return 3
            mode, reason = "fake", "auto: %s: %s" % (type(e).__name__, e)
    if mode == "fake":
        step, info, mem = setup_fake()
    elif reason == "asked" and a.mode == "auto":
        reason = "auto: torch sees a GPU"
    warmup_s = time.monotonic() - t0

    waited = None
    if a.barrier:
        waited = barrier(a.barrier, a.peers)

    start = time.monotonic()
    start_unix = time.time()
    end = start + a.seconds
    iters = 0
    busy_s = 0.0
    k = 0
    while not stop:
        p0 = start + k * a.period
        if p0 >= end:
            break
        busy_end = min(p0 + a.duty * a.period, end)
        now = time.monotonic()
        b0 = now
        while now < busy_end and not stop:
            step()
            iters += 1
            now = time.monotonic()
        if now > b0:
            busy_s += now - b0
        rest = min(p0 + a.period, end) - time.monotonic()
        if rest > 0 and not stop:
            time.sleep(rest)
        k += 1
    wall = time.monotonic() - start
    end_unix = start_unix + wall
    out = {
        "name": a.name, "mode": mode, "mode_reason": reason, "device": info.get("device"),
        "torch": info.get("torch"), "size": a.size, "duty": a.duty, "period_s": a.period,
        "seconds": a.seconds, "iterations": iters,
        "iters_per_s": iters / wall if wall > 0 else None,
        "busy_s": busy_s, "iters_per_busy_s": iters / busy_s if busy_s > 0 else None,
        "wall_s": wall, "start_unix": start_unix, "end_unix": end_unix, "warmup_s": warmup_s,
        "barrier_peers_seen": waited,
        "tflop_per_s": (2.0 * a.size ** 3 * iters / wall / 1e12
                        if mode == "gpu" and wall > 0 else None),
        "max_mem_bytes": mem(), "pid": os.getpid(), "interrupted": stop,
    }
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
