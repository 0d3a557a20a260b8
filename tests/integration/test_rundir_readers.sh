#!/usr/bin/env bash
# Every reader of a run directory applies the same rules to its rows (src/rundir): the same set
# of bad run directories goes to `carma report` (text), `carma report --format html`, `carma top
# --once` and `carma model fit`, and all four must agree. A good synthetic run (a `carma run`
# directory with every file model fit needs: samples.csv, attribution.csv, node_util.csv,
# features.csv) is read by all four; then one cell or line at a time is broken:
#   - refused by all four with the same "PATH:LINE: what is wrong" (after each command's own
#     prefix): 1e308 watts on every row, nan, inf, negative watts, watts above the kind's bound
#     (5 kW for a cpu), joules_total beyond what the bound draws, a torn middle line, a channel
#     name that is not UTF-8, a timestamp going back;
#   - accepted by all four, each saying the same one warning: a last line without its line end
#     (a half-cut copy), which is skipped;
# and the bad attribution.csv, utilization.csv and node_util.csv rows for the readers that read
# those files (report and model fit; model fit), refused or skipped alike. The HTML of every accepted run holds no nan
# or inf.
# shellcheck source=tests/integration/lib.sh
. "$CARMA_SRC/tests/integration/lib.sh"

"$PY" - "$CARMA" <<'EOF'
import json, math, os, re, shutil, subprocess, sys

carma = sys.argv[1]
T0, DT, N = 1796000000.0, 0.1, 200
failures = []


def write_run(d):
    os.makedirs(d)
    cpus = 4
    man = {"schema_version": 1, "producer": "carma run", "carma_version": "test",
           "status": "complete", "host": {"hostname": "elsewhere.invalid", "cpus": cpus},
           "options": {"interval_s": DT, "idle_policy": "idle"}}
    json.dump(man, open(f"{d}/manifest.json", "w"))
    end = T0 + (N - 1) * DT
    json.dump({"workloads": [{"name": "train", "start_unix": T0 + 1, "end_unix": end}]},
              open(f"{d}/workloads.json", "w"))
    s = ["timestamp_unix,timestamp_local,channel,source,kind,domain,method,watts,joules_total"]
    a = ["timestamp_unix,channel,job,joules"]
    u = ["timestamp_unix,busy_cpu_s,total_cpu_s,cpu_util"]
    f = ["timestamp_unix,workload,cpu_time_s,task_clock_ns,instructions,cycles"]
    cum = {"rapl/package-0": 0.0, "rapl/package-0/dram": 0.0}
    busy = tot = jt = 0.0
    for i in range(N):
        t = T0 + i * DT
        ts = f"{t:.6f}"
        load = 0.5 + 0.5 * math.sin(i / 15.0)  # the workload's CPUs busy, 0..1 of one CPU
        for ch, kind, base, slope in (("rapl/package-0", "cpu", 30, 120),
                                      ("rapl/package-0/dram", "dram", 4, 16)):
            if i == 0:
                s.append(f"{ts},,{ch},rapl,{kind},total,measured,,0")
                continue
            w = base + slope * load
            cum[ch] += w * DT
            s.append(f"{ts},,{ch},rapl,{kind},total,measured,{w:.6f},{cum[ch]:.6f}")
            if t > T0 + 1:
                a.append(f"{ts},{ch},train,{w * DT * 0.6:.6f}")
                a.append(f"{ts},{ch},idle,{w * DT * 0.4:.6f}")
        if i:
            busy += load * DT
            tot += cpus * DT
            u.append(f"{ts},{busy:.6f},{tot:.6f},{load / cpus:.6f}")
        else:
            u.append(f"{ts},0.000000,0.000000,")
        if t >= T0 + 1 and i % 10 == 0:
            jt = busy
            f.append(f"{ts},train,{jt:.6f},,,")
    g = ["timestamp_unix,gpu,gpu_uuid,pid,workload,gpu_util_pct,mem_util_pct,sm_util_pct,"
         "used_mem_mib"]
    for i in range(0, N, 5):
        ts = f"{T0 + i * DT:.6f}"
        g.append(f"{ts},0,GPU-0000,,,{i % 100},{i % 50},,")
        g.append(f"{ts},0,GPU-0000,4242,train,,,{i % 100},100")
    for name, rows in (("samples", s), ("attribution", a), ("node_util", u), ("features", f),
                       ("utilization", g)):
        open(f"{d}/{name}.csv", "w", newline="").write("\r\n".join(rows) + "\r\n")


def run(args):
    p = subprocess.run([carma] + args, capture_output=True)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


# "PATH:LINE: ..." after the command's own prefix ("error: ", "carma: ")
MSG = re.compile(r"^(?:error|carma): (.*)$", re.M)
WARN = re.compile(r"warning: (\S+:\d+: the last line has no line end[^\n]*)")
HTML_WARN = re.compile(r"<li>(\S+:\d+: the last line has no line end[^<]*)</li>")


def readers(d, files):
    """The outcome of each reader of d: (accepted, message) where message is the error, or the
    torn-line warning of an accepted run (None when there is none)."""
    out = {}
    c, so, se = run(["report", d])
    m = MSG.search(se)
    w = WARN.search(so.decode("utf-8", "replace"))
    out["report"] = (c == 0, m.group(1) if c else (w.group(1) if w else None))
    html = f"{d}.html"
    c, so, se = run(["report", "--format", "html", d, "-o", html])
    m = MSG.search(se)
    w = HTML_WARN.search(open(html, encoding="utf-8").read()) if c == 0 else None
    out["html"] = (c == 0, m.group(1) if c else (w.group(1) if w else None))
    if c == 0:
        page = open(html, encoding="utf-8").read()
        bad = re.findall(r'="[^"]*(?:nan|inf)[^"]*"', page, re.I)
        if bad:
            failures.append(f"{d}: the HTML holds {bad[:3]}")
    if "samples.csv" in files:
        c, so, se = run(["top", "--once", d])
        m = MSG.search(se)
        w = WARN.search(se)
        out["top"] = (c == 0, m.group(1) if c else (w.group(1) if w else None))
    c, so, se = run(["model", "fit", d, "-o", f"{d}.model.json"])
    m = MSG.search(se)
    w = WARN.search(se)
    out["model fit"] = (c == 0, m.group(1) if c else (w.group(1) if w else None))
    if c == 0:
        text = open(f"{d}.model.json").read()
        if re.search(r"nan|inf", text, re.I):
            failures.append(f"{d}: the model holds nan or inf")
    return out


def edit(d, name, fn):
    p = f"{d}/{name}"
    data = open(p, "rb").read()
    open(p, "wb").write(fn(data))


def cell(line, col, value):
    """Sets column col of data line `line` (1-based, the header is line 1) of a CSV text."""
    def fn(data):
        rows = data.split(b"\r\n")
        f = rows[line - 1].split(b",")
        f[col] = value
        rows[line - 1] = b",".join(f)
        return b"\r\n".join(rows)
    return fn


def every_watts(value):
    def fn(data):
        rows = data.split(b"\r\n")
        for k in range(1, len(rows)):
            f = rows[k].split(b",")
            if len(f) == 9 and f[7]:
                f[7] = value
                rows[k] = b",".join(f)
        return b"\r\n".join(rows)
    return fn


good = "good"
write_run(good)
base = readers(good, ["samples.csv"])
for k, (ok, msg) in base.items():
    if not ok or msg:
        failures.append(f"the good run: {k}: {'accepted' if ok else 'refused'}: {msg}")

W, J = 7, 8  # samples.csv's watts and joules_total columns
# (name, file, edit, refused: the message after the directory, or None: accepted with a warning)
cases = [
    ("w1e308", "samples.csv", every_watts(b"1e308"),
     "samples.csv:4: watts: 1e+308 W is no reading of a cpu channel (from 0 to 5000 W, "
     "docs/sources.md)"),
    ("wnan", "samples.csv", cell(20, W, b"nan"), "samples.csv:20: watts: 'nan' is not a finite number"),
    ("winf", "samples.csv", cell(20, W, b"inf"), "samples.csv:20: watts: 'inf' is not a finite number"),
    ("wneg", "samples.csv", cell(20, W, b"-3.5"),
     "samples.csv:20: watts: -3.5 W is no reading of a cpu channel (from 0 to 5000 W, "
     "docs/sources.md)"),
    ("wbound", "samples.csv", cell(21, W, b"2000.000001"),
     "samples.csv:21: watts: 2000 W is no reading of a dram channel (from 0 to 2000 W, "
     "docs/sources.md)"),
    ("jbound", "samples.csv", cell(20, J, b"1e20"),
     "samples.csv:20: joules_total: 1e+20 J is no energy of a cpu channel over the file's 0.9 s "
     "(from 0 to 14000 J)"),
    ("torn_middle", "samples.csv", lambda d: d.replace(d.split(b"\r\n")[29], d.split(b"\r\n")[29][:30], 1),
     "samples.csv:30: 3 fields, the header has 9"),
    ("utf8", "samples.csv", lambda d: d.replace(b"rapl/package-0/dram", b"rapl/dr\xe9am"),
     "samples.csv:3: channel is not valid UTF-8 (byte 0xe9 at offset 7 of the cell)"),
    ("back", "samples.csv", cell(30, 0, b"1795999999.000000"),
     "samples.csv:30: timestamp_unix goes back in time"),
    ("torn_last", "samples.csv", lambda d: d[:-20], None),
    ("a_nan", "attribution.csv", cell(5, 3, b"nan"), "attribution.csv:5: joules: 'nan' is not a finite number"),
    ("a_big", "attribution.csv", cell(5, 3, b"1e300"),
     "attribution.csv:5: joules: 1e+300 J is no share of a channel's energy over 1.1 s of samples "
     "(at most 3.2e+06 J either way)"),
    ("a_torn", "attribution.csv", lambda d: d[:-7], None),
    ("u_inf", "node_util.csv", cell(40, 2, b"inf"), "node_util.csv:40: total_cpu_s: 'inf' is not a finite number"),
    ("u_torn", "node_util.csv", lambda d: d[:-3], None),
    ("g_pct", "utilization.csv", cell(6, 5, b"150"),
     "utilization.csv:6: gpu_util_pct 150 is not a percentage from 0 to 100"),
    ("g_index", "utilization.csv", cell(7, 1, b"-1"),
     "utilization.csv:7: gpu: '-1' is not a GPU index (0 to 255)"),
    ("g_torn", "utilization.csv", lambda d: d[:-5], None),
]
for name, fname, fn, want in cases:
    d = name
    shutil.copytree(good, d)
    edit(d, fname, fn)
    got = readers(d, [fname])
    # the readers of the file; report and html do not read node_util.csv, top only samples.csv
    who = [k for k in got if fname == "samples.csv" or k in ("model fit",)
           or (fname in ("attribution.csv", "utilization.csv") and k in ("report", "html"))]
    for k in who:
        ok, msg = got[k]
        if want is None:
            if not ok:
                failures.append(f"{name}: {k} refused the run: {msg}")
                continue
            if not msg or not msg.startswith(f"{d}/{fname}:") or "it is skipped" not in msg:
                failures.append(f"{name}: {k}: no torn-line warning for {fname}: {msg!r}")
        else:
            if ok:
                failures.append(f"{name}: {k} accepted the run (want: {want})")
            elif msg != f"{d}/{want}":
                failures.append(f"{name}: {k} said {msg!r}, want {d}/{want!r}")
    msgs = {got[k][1] for k in who}
    if len(msgs) != 1:
        failures.append(f"{name}: the readers disagree: " + "; ".join(f"{k}: {got[k]}" for k in who))
    print(f"{name}: {sorted(who)} -> {'accepted' if want is None else 'refused'}: {msgs.pop() if len(msgs) == 1 else '?'}")

if failures:
    print("\n".join(failures))
    sys.exit(1)
EOF
