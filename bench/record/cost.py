#!/usr/bin/python3
"""The driver of bench/record/run.sh (which runs it in a mount namespace of its own): writes
a Grace node's ACPI tree (make_tree) and binds its sys/class on /sys/class, then runs `carma record` and srt-slurm's
host collector in turn, each for DURATION seconds at 100 ms, and prints their CPU time."""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time


def run_one(cmd, env, duration, outdir):
    """Runs cmd for duration seconds, then SIGTERM; returns (cpu_s, peak_rss_kib, rows, rc)."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(duration)
    hwm = 0  # peak RSS (KiB) of the program itself: wait4's ru_maxrss also counts the
    # forked copy of this interpreter before the exec
    try:
        with open("/proc/%d/status" % p.pid) as h:
            for line in h:
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
    except OSError:
        pass
    os.kill(p.pid, signal.SIGTERM)  # not p.send_signal: its poll() would reap the child
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode(errors="replace")
    rows = 0
    nodes = os.path.join(outdir, "nodes")
    for f in os.listdir(nodes) if os.path.isdir(nodes) else []:
        if f.endswith(".csv"):
            with open(os.path.join(nodes, f), "rb") as h:
                rows += max(0, sum(1 for _ in h) - 1)
    if p.returncode != 0:
        sys.stderr.write("bench/record: %s exited %d: %s\n" % (cmd[0], p.returncode, err.strip()))
    return ru.ru_utime + ru.ru_stime, hwm, rows, p.returncode


# A Grace node's ACPI power_meter channels as the kernel lays them out (hwmonN/name, the
# attributes in hwmonN/device/): per socket the total, the CPU rail, SysIO and the module.
CHANNELS = [("Grace Power Socket %d", 150.25), ("CPU Power Socket %d", 125.5),
            ("SysIO Power Socket %d", 9.5), ("Module Power Socket %d", 410.0)]


def make_tree(root):
    n = 0
    for sock in (0, 1):
        for name, watts in CHANNELS:
            d = os.path.join(root, "sys/class/hwmon/hwmon%d" % n)
            os.makedirs(d + "/device")
            files = {"name": "power_meter\n", "device/power1_oem_info": name % sock + "\n",
                     "device/power1_average": "%d\n" % int(watts * 1e6 - 250000 * sock),
                     "device/power1_average_interval": "50\n"}
            for f, text in files.items():
                with open(os.path.join(d, f), "w") as h:
                    h.write(text)
            n += 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--carma", required=True)
    ap.add_argument("--peer", default="")
    ap.add_argument("--duration", type=float, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--interval", type=float, default=0.1, help="seconds")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    # the tree on /sys/class (a machine without hwmon has no /sys/class/hwmon to mount on,
    # and sysfs makes no directory)
    tree = tempfile.mkdtemp(prefix="carma-bench-record-tree.")
    make_tree(tree)
    r = subprocess.run(["mount", "--bind", tree + "/sys/class", "/sys/class"])
    if r.returncode != 0:
        sys.exit("bench/record: mount --bind %s/sys/class /sys/class failed" % tree)

    interval = a.interval
    tools = {"carma record": lambda d: [a.carma, "record", "--output-dir", d + "/nodes",
                                         "--ready-dir", d + "/ready", "--source", "acpi",
                                         "--interval", "%gms" % (1e3 * interval), "-q"]}
    env = dict(os.environ, SLURMD_NODENAME="bench")
    if a.peer:
        tools["srt-slurm cpu_power"] = lambda d: [
            sys.executable, "-m", "srtctl.core.cpu_power", "--output-dir", d + "/nodes",
            "--ready-dir", d + "/ready", "--source", "acpi", "--interval-seconds", str(interval)]
        env["PYTHONPATH"] = a.peer
    # each round: a long run and a short one (SHORT s) of each tool; the difference of their
    # CPU times over the difference of their cycles is the cost of one cycle, start-up and
    # shut-down (process start, probing, the interpreter's imports) taken out
    short = min(1.0, a.duration / 4)
    res = {t: [] for t in tools}
    names = list(tools)
    for k in range(a.rounds):
        order = names if k % 2 == 0 else names[::-1]
        for t in order:
            got = []
            for dur in (a.duration, short):
                with tempfile.TemporaryDirectory(prefix="carma-bench-record.") as d:
                    got.append(run_one(tools[t](d), env, dur, d))
            (cpu, rss, rows, rc), (cpu_s, _, rows_s, rc_s) = got
            if rc == 0 and rc_s == 0 and rows > rows_s:
                # rows per cycle: the tool's own count, so that a cycle is what it wrote
                per_row = (cpu - cpu_s) / (rows - rows_s)
                res[t].append((cpu, rss, rows, per_row, cpu_s))

    cycles = a.duration / interval
    lines = ["bench/record: %g s at %g ms (%d cycles), %d rounds, a Grace node's %d ACPI "
             "power_meter channels on /sys/class/hwmon" % (a.duration, 1e3 * interval, cycles,
                                                           a.rounds, 2 * len(CHANNELS))]
    med, tot = {}, {}
    for t in names:
        if not res[t]:
            lines.append("  %-20s no successful run" % t)
            continue
        cpu = statistics.median(x[0] for x in res[t])
        rss = statistics.median(x[1] for x in res[t])
        rows = statistics.median(x[2] for x in res[t])
        per_cycle = statistics.median(x[3] for x in res[t]) * rows / cycles
        start = statistics.median(x[4] for x in res[t])
        med[t] = per_cycle
        tot[t] = cpu
        lines.append("  %-20s CPU %6.2f ms/s over %g s (runs: %s s)  per cycle %6.1f us  "
                     "start+stop %5.1f ms  rows %d  peak RSS %.1f MiB"
                     % (t, 1e3 * cpu / a.duration, a.duration,
                        " ".join("%.3f" % x[0] for x in res[t]), 1e6 * per_cycle,
                        1e3 * start, rows, rss / 1024))
    if len(med) == 2:
        c = med["carma record"]
        ratio = med["srt-slurm cpu_power"] / c if c > 0 else float("inf")
        lines.append("  ratio: srt-slurm's collector uses %.1fx carma record's CPU per cycle, "
                     "%.1fx over the whole run" % (ratio, tot["srt-slurm cpu_power"] /
                                                   max(tot["carma record"], 1e-9)))
    elif not a.peer:
        lines.append("  srt-slurm's collector: not measured (set SRT_SLURM_SRC to a checkout's "
                     "src/, the directory that holds srtctl/core/cpu_power.py)")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    with open(a.out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
