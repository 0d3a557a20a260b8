#!/usr/bin/env python3
"""Helpers of bench/gpu/h200-check.sh (standard library only):

    h200_tool.py nvml-energy [--lib PATH]         NVML energy counters now, as JSON (ctypes)
    h200_tool.py selfcpu --json FILE -- CMD...    run CMD; write its own CPU time to FILE
    h200_tool.py experiment --out FILE ...        write the experiment file of a carma run
    h200_tool.py summary --work DIR --json F --txt F   gather everything into the summary

nvml-energy loads $CARMA_NVML_LIBRARY (else libnvidia-ml.so.1, as carma does) and prints
{"ok", "lib", "t_unix", "gpus":[{"index","name","energy_mj","power_mw"}], "error"}; it is
the reference read around each run, independent of carma.

selfcpu: CMD's stdout and stderr are this process's. When CMD has exited, before it is reaped,
its own CPU time is read from the zombie: /proc/PID/schedstat (ns on the CPU, exact) and
/proc/PID/stat utime + stime (clock ticks); its children (the workloads) are not in either.
wait4's rusage (CMD and every child it waited for) is written too. SIGTERM and SIGINT sent to
this process are noted, not passed on: timeout(1) signals the whole group, CMD included.
"""

import argparse
import csv
import ctypes
import json
import os
import signal
import statistics
import subprocess
import sys
import time


# ---------------------------------------------------------------- nvml-energy
def nvml_energy(lib=None):
    out = {"ok": False, "lib": None, "t_unix": None, "gpus": [], "error": None}
    name = lib or os.environ.get("CARMA_NVML_LIBRARY") or "libnvidia-ml.so.1"
    out["lib"] = name
    try:
        nv = ctypes.CDLL(name)
    except OSError as e:
        out["error"] = "cannot load %s: %s" % (name, e)
        return out
    init = getattr(nv, "nvmlInit_v2", None) or getattr(nv, "nvmlInit", None)
    if init is None:
        out["error"] = "%s has no nvmlInit" % name
        return out
    r = init()
    if r != 0:
        out["error"] = "nvmlInit: error %d" % r
        return out
    try:
        n = ctypes.c_uint(0)
        r = nv.nvmlDeviceGetCount_v2(ctypes.byref(n))
        if r != 0:
            out["error"] = "nvmlDeviceGetCount: error %d" % r
            return out
        out["t_unix"] = time.time()
        for i in range(n.value):
            h = ctypes.c_void_p()
            g = {"index": i, "name": None, "energy_mj": None, "power_mw": None}
            if nv.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(i), ctypes.byref(h)) != 0:
                out["gpus"].append(g)
                continue
            buf = ctypes.create_string_buffer(96)
            if nv.nvmlDeviceGetName(h, buf, ctypes.c_uint(96)) == 0:
                g["name"] = buf.value.decode(errors="replace")
            e = ctypes.c_ulonglong(0)
            if nv.nvmlDeviceGetTotalEnergyConsumption(h, ctypes.byref(e)) == 0:
                g["energy_mj"] = e.value
            p = ctypes.c_uint(0)
            if nv.nvmlDeviceGetPowerUsage(h, ctypes.byref(p)) == 0:
                g["power_mw"] = p.value
            out["gpus"].append(g)
        out["ok"] = True
    finally:
        nv.nvmlShutdown()
    return out


# ---------------------------------------------------------------- selfcpu
def selfcpu(json_path, cmd):
    t0 = time.monotonic()
    start_unix = time.time()
    p = subprocess.Popen(cmd)
    got = []

    def fwd(signum, frame):
        # not passed on: CMD is in this process's group, which timeout(1) signals as a
        # whole, and a second signal would make carma kill its workloads at once
        got.append(signum)

    signal.signal(signal.SIGTERM, fwd)
    signal.signal(signal.SIGINT, fwd)
    while True:
        try:
            os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
            break
        except InterruptedError:
            continue
    t1 = time.monotonic()
    res = {"cmd": cmd, "pid": p.pid, "wall_s": t1 - t0, "start_unix": start_unix,
           "end_unix": start_unix + (t1 - t0), "self_s": None, "stat_s": None,
           "rusage_s": None, "exit": None, "signals": got}
    try:
        with open("/proc/%d/schedstat" % p.pid) as f:
            res["self_s"] = int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open("/proc/%d/stat" % p.pid) as f:
            fl = f.read().rsplit(")", 1)[1].split()
        res["stat_s"] = (int(fl[11]) + int(fl[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        pass
    _, status, ru = os.wait4(p.pid, 0)
    res["rusage_s"] = ru.ru_utime + ru.ru_stime
    res["exit"] = os.waitstatus_to_exitcode(status)
    if res["self_s"] is None:
        res["self_s"] = res["stat_s"]
    with open(json_path, "w") as f:
        json.dump(res, f, indent=1)
    return res["exit"] if res["exit"] >= 0 else 128 - res["exit"]


# ---------------------------------------------------------------- experiment
def experiment(a):
    loads = []
    for spec in a.load:  # NAME:DUTY
        name, duty = spec.split(":")
        loads.append((name, duty))
    wl = []
    for name, duty in loads:
        wl.append({
            "name": name,
            "type": "exec",
            "gpu": 0,
            "script": a.python,
            "args": [a.script, "--seconds", str(a.seconds), "--duty", duty, "--size",
                     str(a.size), "--mode", a.mode, "--barrier", a.barrier, "--peers",
                     str(len(loads)), "--name", name],
            "env": {"PYTHONUNBUFFERED": "1"},
            "timeout_s": a.seconds + a.slack,
            "allocation": {"gpus": [0]},
        })
    doc = {
        "experiment_name": a.name,
        "description": "bench/gpu/h200-check.sh: %d GPU loads collocated on GPU 0 (duty %s), "
                       "%s s each, interval %s" % (len(loads), ", ".join(d for _, d in loads),
                                                   a.seconds, a.interval),
        "workloads": wl,
        "monitoring": {"interval": a.interval, "baseline_s": a.baseline},
    }
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")


# ---------------------------------------------------------------- summary
def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def last_json_line(path):
    """The last line of a file that parses as a JSON object, or None."""
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


def fnum(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def pct(a, b):
    if a is None or b in (None, 0):
        return None
    return 100.0 * a / b


def interp(ts, js, t, tol=0.0):
    """joules_total at time t, linear between the ticks around it; a t outside the ticks by
    at most tol s is taken at the nearest end (carma's last tick can come a little before the
    last workload's end_unix is taken); None further out."""
    if not ts or t is None or t < ts[0] - tol or t > ts[-1] + tol:
        return None
    t = min(max(t, ts[0]), ts[-1])
    lo, hi = 0, len(ts) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ts[mid] <= t:
            lo = mid
        else:
            hi = mid
    if ts[hi] == ts[lo]:
        return js[lo]
    return js[lo] + (js[hi] - js[lo]) * (t - ts[lo]) / (ts[hi] - ts[lo])


def samples_stats(run_dir, gpu_channels, w_start, w_end, interval_s):
    """Per GPU channel, from samples.csv: ticks, spacing, energy over the run and over the
    workloads' span [w_start, w_end], and how often the counter did not move between ticks."""
    path = os.path.join(run_dir, "samples.csv")
    per = {}
    all_ts = []
    try:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                t = fnum(row.get("timestamp_unix"))
                if t is None:
                    continue
                if not all_ts or all_ts[-1] != t:
                    all_ts.append(t)
                ch = row.get("channel")
                if ch not in gpu_channels:
                    continue
                d = per.setdefault(ch, {"t": [], "j": [], "w": [], "blank_w": 0})
                j = fnum(row.get("joules_total"))
                w = fnum(row.get("watts"))
                if w is None:
                    d["blank_w"] += 1
                else:
                    d["w"].append(w)
                if j is not None:
                    d["t"].append(t)
                    d["j"].append(j)
    except OSError as e:
        return {"error": "samples.csv: %s" % e}
    out = {"ticks": len(all_ts)}
    if len(all_ts) > 2:
        dts = sorted(b - a for a, b in zip(all_ts, all_ts[1:]))
        out["tick_dt_ms"] = {"median": 1e3 * statistics.median(dts),
                             "p99": 1e3 * dts[min(len(dts) - 1, int(0.99 * len(dts)))],
                             "max": 1e3 * dts[-1]}
    chans = {}
    for ch, d in per.items():
        c = {"rows": len(d["t"]), "blank_watts": d["blank_w"]}
        if d["j"]:
            c["energy_run_j"] = d["j"][-1] - d["j"][0]
            c["covered_s"] = d["t"][-1] - d["t"][0]
            tol = 2.0 * (interval_s or 0.1)
            e0 = interp(d["t"], d["j"], w_start, tol)
            e1 = interp(d["t"], d["j"], w_end, tol)
            c["energy_workloads_span_j"] = (e1 - e0) if e0 is not None and e1 is not None \
                else None
            c["workloads_span_s"] = (w_end - w_start) if w_start and w_end else None
            c["avg_power_workloads_span_w"] = (c["energy_workloads_span_j"] / c["workloads_span_s"]
                                               if c["energy_workloads_span_j"] is not None
                                               and c["workloads_span_s"] else None)
            steps = [b - a for a, b in zip(d["j"], d["j"][1:])]
            c["ticks_counter_unchanged_pct"] = pct(sum(1 for s in steps if s == 0), len(steps)) \
                if steps else None
        if d["w"]:
            c["watts_max"] = max(d["w"])
            c["watts_median"] = statistics.median(d["w"])
        chans[ch] = c
    out["gpu_channels"] = chans
    return out


def attribution_sums(run_dir, gpu_channels):
    """Per GPU channel, the sum of attribution.csv's rows per job (workload, idle, other,
    unattributed): the split carma wrote, whatever report.json says of it."""
    path = os.path.join(run_dir, "attribution.csv")
    out = {}
    try:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                ch = row.get("channel")
                if ch not in gpu_channels:
                    continue
                j = fnum(row.get("joules"))
                if j is None:
                    continue
                d = out.setdefault(ch, {})
                d[row.get("job")] = d.get(row.get("job"), 0.0) + j
    except OSError as e:
        return {"error": "attribution.csv: %s" % e}
    return out


def gpu_entry(g):
    """report.json's gpus[] entry: the keys the summary prints, then every other one as is
    (basis_s is an object of seconds per basis: sm, context, allocation, none)."""
    keys = ["channel", "index", "name", "uuid", "form", "energy_j", "covered_s", "drift_pct",
            "static_power_w", "jobs_j", "idle_j", "other_j", "unattributed_j", "basis_s",
            "owners", "invalid_samples"]
    e = {k: g.get(k) for k in keys}
    for k in g:
        if k not in keys:
            e[k] = g[k]
    return e


def carma_condition(cdir, interval_s):
    res = {"run_dir": None, "carma_exit": None, "report": None, "errors": []}
    run_dir = None
    try:
        with open(os.path.join(cdir, "run_dir.txt")) as f:
            run_dir = f.readline().strip() or None
    except OSError:
        pass
    res["run_dir"] = run_dir
    sc = load_json(os.path.join(cdir, "selfcpu.json"))
    if sc:
        res["carma_exit"] = sc.get("exit")
        res["carma_wall_s"] = sc.get("wall_s")
        res["carma_cpu_s"] = sc.get("self_s")
        res["carma_cpu_stat_s"] = sc.get("stat_s")
        res["carma_plus_children_cpu_s"] = sc.get("rusage_s")
        res["carma_cpu_pct_one_core"] = pct(sc.get("self_s"), sc.get("wall_s"))
        if sc.get("self_s") is not None and sc.get("wall_s") and interval_s:
            res["carma_us_per_tick"] = 1e6 * sc["self_s"] / (sc["wall_s"] / interval_s)
    else:
        res["errors"].append("no selfcpu.json: carma's CPU time unknown")
    if not run_dir or not os.path.isdir(run_dir):
        res["errors"].append("no run directory")
        return res
    rep = load_json(os.path.join(run_dir, "report.json"))
    man = load_json(os.path.join(run_dir, "manifest.json")) or {}
    wj = load_json(os.path.join(run_dir, "workloads.json")) or {}
    gpu_channels = [c.get("name") for c in man.get("channels", [])
                    if c.get("kind") == "gpu" or str(c.get("name", "")).startswith("nvml/")]
    res["gpu_channels"] = gpu_channels
    starts = [w.get("start_unix") for w in wj.get("workloads", []) if w.get("start_unix")]
    ends = [w.get("end_unix") for w in wj.get("workloads", []) if w.get("end_unix")]
    w_start = min(starts) if starts else None
    w_end = max(ends) if ends else None
    if rep is None:
        res["errors"].append("no report.json in %s" % run_dir)
    else:
        r = {"duration_s": rep.get("duration_s"), "total_energy_j": rep.get("total_energy_j"),
             "attribution": rep.get("attribution"),
             "idle_j": (rep.get("idle") or {}).get("energy_j"),
             "other_j": (rep.get("other") or {}).get("energy_j"),
             "unattributed_j": (rep.get("unattributed") or {}).get("energy_j"),
             "node_channels": rep.get("node_channels"), "workloads": {}, "gpus": None}
        for w in rep.get("workloads", []):
            bk = w.get("energy_by_kind_j") or {}
            r["workloads"][w.get("name")] = {
                "exit_status": w.get("exit_status"), "duration_s": w.get("duration_s"),
                "energy_j": w.get("energy_j"), "gpu_kind_j": bk.get("gpu"),
                "gpu_j": w.get("gpu_j"), "cpu_time_s": w.get("cpu_time_s"),
                "method": w.get("method"),
            }
        if isinstance(rep.get("gpus"), list):
            r["gpus"] = [gpu_entry(g) for g in rep["gpus"] if isinstance(g, dict)]
        missing = []
        if r["gpus"] is None:
            missing.append("gpus[]")
        if any(v["gpu_j"] is None for v in r["workloads"].values()):
            missing.append("workloads[].gpu_j")
        r["missing_keys"] = missing
        res["report"] = r
    res["samples"] = samples_stats(run_dir, gpu_channels, w_start, w_end, interval_s)
    res["attribution_csv_gpu_j"] = attribution_sums(run_dir, gpu_channels)
    res["workloads_span_s"] = (w_end - w_start) if w_start and w_end else None
    return res


def nvml_ref(cdir):
    b = load_json(os.path.join(cdir, "nvml_before.json"))
    a = load_json(os.path.join(cdir, "nvml_after.json"))
    if not b or not a or not b.get("ok") or not a.get("ok"):
        return {"error": (b or {}).get("error") or (a or {}).get("error") or "not read"}
    out = {"window_s": a["t_unix"] - b["t_unix"], "gpus": []}
    for gb, ga in zip(b["gpus"], a["gpus"]):
        e = None
        if gb.get("energy_mj") is not None and ga.get("energy_mj") is not None:
            e = (ga["energy_mj"] - gb["energy_mj"]) / 1e3
        out["gpus"].append({"index": gb["index"], "name": gb.get("name"), "energy_j": e,
                            "avg_power_w": e / out["window_s"] if e is not None
                            and out["window_s"] > 0 else None})
    return out


def dcgm_stat_gpus(path):
    """The GPU channels of one `carma stat --json-out` file, and their sums."""
    j = load_json(path)
    if not j:
        return None
    gpus = {}
    for c in j.get("channels") or []:
        if c.get("kind") == "gpu" and c.get("domain") == "total":
            gpus[c.get("name")] = {k: c.get(k) for k in ("energy_j", "avg_power_w", "covered_s",
                                                         "gauge_drift_pct", "invalid")}
    es = [g["energy_j"] for g in gpus.values() if g["energy_j"] is not None]
    ps = [g["avg_power_w"] for g in gpus.values() if g["avg_power_w"] is not None]
    return {"exit_status": j.get("exit_status"), "duration_s": j.get("duration_s"),
            "gpus": gpus, "gpu_energy_j": sum(es) if es else None,
            "gpu_avg_power_w": sum(ps) if ps else None, "warnings": j.get("warnings")}


def dcgm_part(W, steps):
    """The DCGM step: the library, `carma sensors --sources dcgm` (embedded engine, and through
    nv-hostengine), and one load's GPU energy by DCGM and by NVML."""
    D = os.path.join(W, "dcgm")
    mine = [s for s in steps if str(s.get("step", "")).startswith("dcgm")]
    absent = next((s.get("error") for s in mine
                   if s.get("step") == "dcgm" and s.get("status") == "note"), None)
    if not os.path.isdir(D):
        return {"ran": False, "why": absent or "the DCGM step did not run (no carma binary?)",
                "steps": mine}
    out = {"ran": True, "library": None, "steps": mine}
    try:
        with open(os.path.join(D, "library.txt")) as f:
            out["library"] = f.read().strip() or None
    except OSError:
        pass
    for key, name in (("sensors", "sensors.json"), ("hostengine", "sensors-hostengine.json")):
        sj = load_json(os.path.join(D, name))
        out[key] = None if not sj else {
            "channels": [{k: c.get(k) for k in ("name", "kind", "zone", "domain", "form", "watts",
                                                 "label", "path")}
                         for c in sj.get("channels", []) if c.get("source") == "dcgm"],
            "unavailable": [u for u in sj.get("unavailable") or [] if u.get("source") == "dcgm"],
            "notes": [n for n in sj.get("notes") or [] if n.get("source") == "dcgm"],
        }
    d = dcgm_stat_gpus(os.path.join(D, "stat-dcgm.json"))
    n = dcgm_stat_gpus(os.path.join(D, "stat-nvml.json"))
    cmp_ = {"dcgm": d, "nvml": n, "energy_diff_pct": None, "avg_power_diff_pct": None}
    if d and n:
        for key, f in (("energy_diff_pct", "gpu_energy_j"),
                       ("avg_power_diff_pct", "gpu_avg_power_w")):
            r = pct(d[f], n[f])
            cmp_[key] = None if r is None else r - 100.0
    out["comparison"] = cmp_
    return out


def summary(a):
    W = a.work
    meta = load_json(os.path.join(W, "meta.json")) or {}
    steps = []
    try:
        with open(os.path.join(W, "steps.jsonl")) as f:
            for line in f:
                try:
                    steps.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    S = {"what": "bench/gpu/h200-check.sh", "meta": meta, "steps": steps,
         "errors": [s for s in steps if s.get("status") not in ("ok", "note")],
         "notes": [s for s in steps if s.get("status") == "note"]}
    # sensors
    sj = load_json(os.path.join(W, "sensors.json"))
    if sj:
        S["sensors"] = {
            "channels": [{"name": c.get("name"), "kind": c.get("kind"), "method": c.get("method"),
                          "form": c.get("form"), "watts": c.get("watts"), "label": c.get("label")}
                         for c in sj.get("channels", [])],
            "unavailable": sj.get("unavailable"), "notes": sj.get("notes"),
        }
    else:
        S["sensors"] = None
    S["nvidia_smi"] = None
    try:
        with open(os.path.join(W, "nvidia-smi.txt")) as f:
            S["nvidia_smi"] = f.read().strip() or None
    except OSError:
        pass
    S["dcgm"] = dcgm_part(W, steps)
    # conditions
    conds = {}
    for cond in meta.get("conditions", []):
        cdir = os.path.join(W, cond["name"])
        c = {"kind": cond["kind"], "interval": cond.get("interval"), "loads": {}}
        for ld in meta.get("loads", []):
            name = ld["name"]
            if cond["kind"] == "bare":
                j = last_json_line(os.path.join(cdir, name + ".out"))
            else:
                rd = None
                try:
                    with open(os.path.join(cdir, "run_dir.txt")) as f:
                        rd = f.readline().strip()
                except OSError:
                    pass
                j = last_json_line(os.path.join(rd, "logs", name + ".out")) if rd else None
            c["loads"][name] = None if j is None else {
                k: j.get(k) for k in ("mode", "device", "iterations", "iters_per_s", "busy_s",
                                      "iters_per_busy_s", "wall_s", "start_unix", "end_unix",
                                      "warmup_s", "tflop_per_s", "max_mem_bytes", "interrupted",
                                      "barrier_peers_seen", "error")}
        c["nvml_ref"] = nvml_ref(cdir)
        if cond["kind"] == "carma":
            c.update(carma_condition(cdir, cond.get("interval_s")))
        conds[cond["name"]] = c
    S["conditions"] = conds
    # overhead: each load's iterations/s under carma against the bare runs
    bare_names = [c["name"] for c in meta.get("conditions", []) if c["kind"] == "bare"]
    ov = {}
    for ld in meta.get("loads", []):
        name = ld["name"]
        bare = [conds[b]["loads"][name]["iters_per_s"] for b in bare_names
                if conds.get(b) and conds[b]["loads"].get(name)
                and conds[b]["loads"][name].get("iters_per_s")]
        ref = statistics.mean(bare) if bare else None
        o = {"duty": ld["duty"], "bare_iters_per_s": bare, "bare_mean": ref,
             "bare_spread_pct": (100.0 * (max(bare) - min(bare)) / ref
                                 if len(bare) > 1 and ref else None)}
        for cn, c in conds.items():
            if c["kind"] != "carma":
                continue
            v = (c["loads"].get(name) or {}).get("iters_per_s")
            o[cn + "_iters_per_s"] = v
            o[cn + "_slowdown_pct"] = (100.0 * (1 - v / ref) if v is not None and ref else None)
        ov[name] = o
    S["overhead"] = ov
    with open(a.json, "w") as f:
        json.dump(S, f, indent=1)
        f.write("\n")
    try:
        txt = render(S)
    except Exception as e:  # noqa: BLE001 (the JSON is written: say why the text is not)
        import traceback
        txt = "the text summary failed (%s: %s); h200-summary.json is complete\n%s" % (
            type(e).__name__, e, traceback.format_exc())
    with open(a.txt, "w") as f:
        f.write(txt)
    sys.stdout.write(txt)
    return 0


def f_(x, fmt="%.3f"):
    if x is None:
        return "-"
    if isinstance(x, dict):
        return "{" + ", ".join("%s %s" % (k, f_(v, fmt)) for k, v in x.items()) + "}"
    try:
        return fmt % x
    except (TypeError, ValueError):
        return str(x)


def render_dcgm(D):
    """The summary's DCGM lines."""
    if not D:
        return ["DCGM: not looked at"]
    if not D.get("ran"):
        why = str(D.get("why"))
        return [why if why.startswith("DCGM:") else "DCGM: " + why]
    L = ["DCGM: %s" % D.get("library")]
    for key, what in (("sensors", "embedded engine"), ("hostengine", "--dcgm-host 127.0.0.1")):
        sens = D.get(key)
        if sens is None:
            if key == "sensors" or any(s.get("step") == "dcgm_sensors_hostengine"
                                       for s in D.get("steps") or []):
                L.append("  sensors (%s): not read" % what)
            continue
        chans = sens.get("channels") or []
        L.append("  sensors (%s): %s" % (what, ", ".join(
            "%s (%s %s %s W)" % (c["name"], c.get("domain"), c.get("form"),
                                 f_(c.get("watts"), "%.1f")) for c in chans) or "no channel"))
        for u in sens.get("unavailable") or []:
            L.append("    unavailable: %s" % u.get("reason"))
        for n in sens.get("notes") or []:
            L.append("    note: %s" % n.get("note"))
    for s in D.get("steps") or []:
        if s.get("step") == "dcgm_hostengine" and s.get("status") == "note":
            L.append("  %s" % s.get("error"))
    c = D.get("comparison") or {}
    for src in ("dcgm", "nvml"):
        x = c.get(src)
        if not x:
            L.append("  one load, --sources %s: no figures" % src)
            continue
        L.append("  one load, --sources %s: GPU energy %s J over %s s (%s W); %s" % (
            src, f_(x.get("gpu_energy_j"), "%.1f"), f_(x.get("duration_s"), "%.2f"),
            f_(x.get("gpu_avg_power_w"), "%.1f"), ", ".join(
                "%s %s J, %s W, drift %s %%" % (k, f_(g.get("energy_j"), "%.1f"),
                                                f_(g.get("avg_power_w"), "%.1f"),
                                                f_(g.get("gauge_drift_pct"), "%.3f"))
                for k, g in (x.get("gpus") or {}).items()) or "no GPU channel"))
    if c.get("dcgm") and c.get("nvml"):
        L.append("  DCGM against NVML: energy %s %%, average power %s %% (DCGM's window holds"
                 " NVML's: the inner carma's start and end too)" % (
                     f_(c.get("energy_diff_pct"), "%+.2f"),
                     f_(c.get("avg_power_diff_pct"), "%+.2f")))
    return L


def render(S):
    L = []
    m = S["meta"]
    L.append("carma H200 check (%s mode), %s" % (m.get("mode"), m.get("date")))
    L.append("carma: %s (%s)" % (m.get("carma_bin"), m.get("carma_source")))
    L.append("loads: %s; %s s each, size %s, python %s" % (
        ", ".join("%s duty %s" % (x["name"], x["duty"]) for x in m.get("loads", [])),
        m.get("seconds"), m.get("size"), m.get("python")))
    if S.get("nvidia_smi"):
        L.append("nvidia-smi: %s" % S["nvidia_smi"].splitlines()[0])
    sens = S.get("sensors")
    if sens:
        L.append("sensors: " + ", ".join("%s (%s %s %s W)" % (c["name"], c["method"], c["form"],
                                                              f_(c["watts"], "%.1f"))
                                         for c in sens["channels"]))
        for u in sens.get("unavailable") or []:
            L.append("  unavailable: %s: %s" % (u.get("source"), u.get("reason")))
    else:
        L.append("sensors: not read")
    L.extend(render_dcgm(S.get("dcgm")))
    L.append("")
    L.append("%-12s %-8s %6s %10s %10s %9s %9s %9s" % (
        "run", "load", "duty", "iters", "iters/s", "wall s", "busy s", "TFLOP/s"))
    for cn, c in S["conditions"].items():
        for ln, v in c["loads"].items():
            duty = next((x["duty"] for x in m.get("loads", []) if x["name"] == ln), None)
            if v is None:
                L.append("%-12s %-8s %6s %10s" % (cn, ln, duty, "no output"))
                continue
            if v.get("error"):
                L.append("%-12s %-8s %6s  error: %s" % (cn, ln, duty, str(v["error"])[:100]))
                continue
            L.append("%-12s %-8s %6s %10s %10s %9s %9s %9s" % (
                cn, ln, duty, v.get("iterations"), f_(v.get("iters_per_s"), "%.2f"),
                f_(v.get("wall_s"), "%.2f"), f_(v.get("busy_s"), "%.2f"),
                f_(v.get("tflop_per_s"), "%.1f")))
    L.append("")
    L.append("overhead (iterations/s against the mean of the bare runs; + = slower under carma):")
    for ln, o in S["overhead"].items():
        parts = ["%s: bare %s (spread %s %%)" % (ln, f_(o["bare_mean"], "%.2f"),
                                                   f_(o["bare_spread_pct"], "%.2f"))]
        for k in sorted(o):
            if k.endswith("_slowdown_pct"):
                parts.append("%s %s %%" % (k[:-len("_slowdown_pct")], f_(o[k], "%+.2f")))
        L.append("  " + ", ".join(parts))
    L.append("")
    for cn, c in S["conditions"].items():
        ref = c.get("nvml_ref") or {}
        refg = (ref.get("gpus") or [{}])[0]
        if c["kind"] != "carma":
            L.append("%s: NVML reference GPU0 %s J over %s s (%s W)" % (
                cn, f_(refg.get("energy_j"), "%.1f"), f_(ref.get("window_s"), "%.2f"),
                f_(refg.get("avg_power_w"), "%.1f")))
            continue
        L.append("%s (interval %s): run dir %s" % (cn, c.get("interval"), c.get("run_dir")))
        L.append("  carma exit %s, wall %s s, own CPU %s s = %s %% of one core, %s us/tick" % (
            c.get("carma_exit"), f_(c.get("carma_wall_s"), "%.2f"), f_(c.get("carma_cpu_s")),
            f_(c.get("carma_cpu_pct_one_core"), "%.3f"), f_(c.get("carma_us_per_tick"), "%.1f")))
        r = c.get("report")
        if r:
            L.append("  report: %s s, node %s J, idle %s J, other %s J, unattributed %s J" % (
                f_(r.get("duration_s"), "%.2f"), f_(r.get("total_energy_j"), "%.1f"),
                f_(r.get("idle_j"), "%.1f"), f_(r.get("other_j"), "%.1f"),
                f_(r.get("unattributed_j"), "%.1f")))
            for wn, w in r["workloads"].items():
                L.append("  %-8s exit %s, %s s, energy %s J, gpu (kind) %s J, gpu_j %s, cpu %s s"
                         % (wn, w.get("exit_status"), f_(w.get("duration_s"), "%.2f"),
                            f_(w.get("energy_j"), "%.1f"), f_(w.get("gpu_kind_j"), "%.1f"),
                            json.dumps(w.get("gpu_j")), f_(w.get("cpu_time_s"), "%.2f")))
            for g in r.get("gpus") or []:
                L.append("  %s (%s): energy %s J over %s s, drift %s %%, static %s W, jobs %s J,"
                         " idle %s J, other %s J, unattributed %s J, basis s %s, owners %s" % (
                             g.get("channel") or g.get("index"), g.get("name"),
                             f_(g.get("energy_j"), "%.1f"), f_(g.get("covered_s"), "%.2f"),
                             f_(g.get("drift_pct"), "%.4f"), f_(g.get("static_power_w"), "%.1f"),
                             f_(g.get("jobs_j"), "%.1f"), f_(g.get("idle_j"), "%.1f"),
                             f_(g.get("other_j"), "%.1f"), f_(g.get("unattributed_j"), "%.1f"),
                             f_(g.get("basis_s"), "%.2f"), g.get("owners")))
            if r.get("missing_keys"):
                L.append("  report.json lacks: %s (null in the summary)"
                         % ", ".join(r["missing_keys"]))
        smp = c.get("samples") or {}
        dt = smp.get("tick_dt_ms") or {}
        L.append("  samples: %s ticks, dt median %s ms, p99 %s ms, max %s ms" % (
            smp.get("ticks"), f_(dt.get("median"), "%.2f"), f_(dt.get("p99"), "%.2f"),
            f_(dt.get("max"), "%.2f")))
        for ch, s in (smp.get("gpu_channels") or {}).items():
            L.append("  %s: %s J over the run, %s J over the workloads' %s s (%s W),"
                     " counter unchanged in %s %% of ticks" % (
                         ch, f_(s.get("energy_run_j"), "%.1f"),
                         f_(s.get("energy_workloads_span_j"), "%.1f"),
                         f_(s.get("workloads_span_s"), "%.2f"),
                         f_(s.get("avg_power_workloads_span_w"), "%.1f"),
                         f_(s.get("ticks_counter_unchanged_pct"), "%.1f")))
        for ch, jobs in (c.get("attribution_csv_gpu_j") or {}).items():
            if isinstance(jobs, dict):
                L.append("  attribution.csv %s: %s" % (ch, ", ".join(
                    "%s %.1f J" % (k, v) for k, v in sorted(jobs.items()))))
        L.append("  NVML reference GPU0 %s J over %s s (carma's wrapper, before/after)" % (
            f_(refg.get("energy_j"), "%.1f"), f_(ref.get("window_s"), "%.2f")))
        for e in c.get("errors") or []:
            L.append("  error: %s" % e)
    if m.get("mode") == "dry":
        L.append("(dry mode: the fake NVML's counter starts at each process's nvmlInit, so the"
                 " NVML reference is meaningless here; the loads spin the CPU; the fake DCGM's"
                 " counter steps by a fixed amount per dcgmUpdateAllFields call, so its GPU"
                 " figures follow the reading rate)")
    L.append("")
    for s in S.get("notes") or []:
        L.append("note: %s: %s" % (s.get("step"), s.get("error")))
    errs = S.get("errors") or []
    L.append("steps: %d, not ok: %d" % (len(S["steps"]), len(errs)))
    for s in errs:
        L.append("  %s: %s (rc %s, %s s) %s" % (s.get("step"), s.get("status"), s.get("rc"),
                                               s.get("seconds"), s.get("error") or ""))
    return "\n".join(L) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("nvml-energy")
    p.add_argument("--lib")
    p.add_argument("--out")
    p = sub.add_parser("selfcpu")
    p.add_argument("--json", required=True)
    p.add_argument("argv", nargs=argparse.REMAINDER)
    p = sub.add_parser("experiment")
    p.add_argument("--out", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--interval", required=True)
    p.add_argument("--python", required=True)
    p.add_argument("--script", required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--mode", default="gpu")
    p.add_argument("--barrier", required=True)
    p.add_argument("--baseline", type=float, default=3)
    p.add_argument("--slack", type=float, default=120)
    p.add_argument("--load", action="append", required=True, help="NAME:DUTY")
    p = sub.add_parser("summary")
    p.add_argument("--work", required=True)
    p.add_argument("--json", required=True)
    p.add_argument("--txt", required=True)
    a = ap.parse_args()
    if a.cmd == "nvml-energy":
        r = nvml_energy(a.lib)
        s = json.dumps(r)
        if a.out:
            with open(a.out, "w") as f:
                f.write(s + "\n")
        print(s)
        if not r["ok"]:
            print("nvml-energy: %s" % r["error"], file=sys.stderr)
        return 0 if r["ok"] else 1
    if a.cmd == "selfcpu":
        argv = a.argv[1:] if a.argv and a.argv[0] == "--" else a.argv
        if not argv:
            ap.error("selfcpu: no command")
        return selfcpu(a.json, argv)
    if a.cmd == "experiment":
        experiment(a)
        return 0
    return summary(a)


if __name__ == "__main__":
    sys.exit(main())
