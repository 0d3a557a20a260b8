#!/usr/bin/env python3
"""profile_fold.py: where a `carma stat` tick's time goes, from a perf profile or a callgrind
profile of one run (bench/profile.sh runs both).

usage: profile_fold.py perf PERF_SCRIPT_OUTPUT TICKS
       profile_fold.py callgrind CALLGRIND_ANNOTATE_OUTPUT FIXED_ANNOTATE_OUTPUT TICKS

perf: the output of `perf script -F pid,period,ip,sym` of a `perf record --call-graph dwarf`
of carma stat. Only the first process's samples count (the command's fork before its exec is
carma's too, but it is the command's start, not the tick). Each sample goes to the part of
the tick named by the first of carma's functions found walking its stack from the leaf (a
sample in `rapl_read` under `sampler_tick` under `run_tick` is a read); a sample with none of
the loop's functions on its stack is the run's fixed cost (exec, probe, summary, exit).

callgrind: the outputs of `callgrind_annotate --inclusive=yes --threshold=100` of the run and
of the same command with `-- true` (the fixed cost: start, probe, summary, exit). The parts
from the inclusive instruction counts (Ir, user space only) of functions no compiler inlines
(called through a pointer or from another file: a release build will do); the run's
instructions less the fixed run's are the tick's, and what they hold beyond the parts is
"integration, attribution, the rest".

Prints a Markdown table: part, share of the steady cost, and per tick (µs of CPU or
instructions), TICKS being the run's ticks (distinct timestamps in its samples.csv).
"""
import re
import sys

# the parts of a tick, by the carma functions that do them; first match from the leaf wins
PARTS = [
    ("channel reads (`*_read`: `pread` + parse)",
     {"rapl_read", "powercap_read", "perf_read", "hwmon_read", "nvml_read", "dcgm_read",
      "meter_read", "estimate_read"}),
    ("`proc/stat` (`procstat_sample`, every 10 ms)", {"procstat_sample"}),
    ("process tree (`proctree_update`)", {"proctree_update"}),
    ("`samples.csv` (`write_samples`: format + `write`)",
     {"write_samples", "samples_csv_write_tick", "samples_csv_flush"}),
    ("wake-up (`jobs_wait`: `poll`, the switch in; `sampler_ack`: the timerfd `read`)",
     {"jobs_wait", "sampler_ack", "jobs_kill_step"}),
    ("integration, attribution, the rest of the tick",
     {"run_tick", "sampler_tick", "integrate", "attrib_tick", "markd_publish_sampler",
      "dcgm_util_tick", "note_orphans", "sampler_refresh_util"}),
]
FIXED = "fixed cost (exec, probe, summary, exit): left out of the shares"


def part_of(stack):
    for sym in stack:
        for name, funcs in PARTS:
            if sym in funcs:
                return name
    return FIXED


def fold_perf(path):
    totals = {}
    pid0 = None
    stack, head = [], None

    def flush():
        if head is None:
            return
        pid, period = head
        if pid != pid0:
            return
        p = part_of(stack)
        totals[p] = totals.get(p, 0) + period

    hdr = re.compile(r"^\s*(\d+)\s+(\d+)\s*$")
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("\t") or line.startswith(" " * 8):
                parts = line.split(None, 1)
                if len(parts) == 2:
                    sym = parts[1].strip()
                    sym = re.sub(r"\s*\(inlined\)$", "", sym)
                    sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
                    sym = sym.split(" (")[0]
                    stack.append(sym)
                continue
            m = hdr.match(line)
            if m:
                flush()
                pid, period = int(m.group(1)), int(m.group(2))
                if pid0 is None:
                    pid0 = pid
                head, stack = (pid, period), []
            elif not line.strip():
                continue
        flush()
    return totals, "µs of CPU per tick", 1e-3  # periods are ns


def callgrind_incl(path):
    incl = {}
    row = re.compile(r"^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S+)")
    with open(path, errors="replace") as f:
        for line in f:
            m = row.match(line)
            if not m:
                continue
            ir = int(m.group(1).replace(",", ""))
            func = m.group(2).rsplit(":", 1)[-1].split("'")[0]
            incl[func] = incl.get(func, 0) + ir
    return incl


# functions no compiler inlines: source reads through ops->read, and calls into other files
CG_PARTS = [
    {"rapl_read", "hwmon_read", "nvml_read", "dcgm_read", "meter_read", "estimate_read"},
    {"procstat_sample"},
    {"proctree_update"},
    {"samples_csv_write_tick", "samples_csv_flush"},
    {"jobs_wait", "sampler_ack", "jobs_kill_step"},
]


def fold_callgrind(path, fixed_path):
    run, fixed = callgrind_incl(path), callgrind_incl(fixed_path)
    if "main" not in run or "main" not in fixed:
        sys.stderr.write("profile_fold.py: no main in %s or %s\n" % (path, fixed_path))
        sys.exit(1)
    totals = {}
    for (name, _), funcs in zip(PARTS, CG_PARTS):
        totals[name] = sum(run.get(x, 0) - fixed.get(x, 0) for x in funcs)
    steady = run["main"] - fixed["main"]
    totals[PARTS[-1][0]] = max(steady - sum(totals.values()), 0)
    totals[FIXED] = fixed["main"]
    return totals, "instructions per tick (user space)", 1.0


def main():
    a = sys.argv
    if not ((len(a) == 4 and a[1] == "perf") or (len(a) == 5 and a[1] == "callgrind")):
        sys.stderr.write(__doc__)
        return 2
    ticks = int(a[-1])
    if ticks <= 0:
        sys.stderr.write("profile_fold.py: no ticks in the run\n")
        return 1
    if a[1] == "perf":
        totals, unit, scale = fold_perf(a[2])
    else:
        totals, unit, scale = fold_callgrind(a[2], a[3])
    steady = sum(v for k, v in totals.items() if k != FIXED)
    if steady <= 0:
        sys.stderr.write("profile_fold.py: %s: no sample of the tick's functions (a build "
                         "without symbols?)\n" % a[2])
        return 1
    perf = a[1] == "perf"
    fmt = (lambda x: "%.1f" % x) if perf else (lambda x: "{:,.0f}".format(x))
    print("| part | share | %s |" % unit)
    print("|---|---|---|")
    for name, _ in PARTS:
        v = totals.get(name, 0)
        print("| %s | %.1f %% | %s |" % (name, 100.0 * v / steady, fmt(v * scale / ticks)))
    print("| **the tick** | 100 %% | **%s** |" % fmt(steady * scale / ticks))
    fixed = totals.get(FIXED, 0) * scale
    print("| %s | | %s in all |" % (FIXED, "%.1f ms" % (fixed / 1e3) if perf else fmt(fixed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
