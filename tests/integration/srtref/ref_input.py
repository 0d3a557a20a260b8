# Reference: srt-slurm's power_energy_report input side (discovery, windows, series) as
# docs/report.md describes it, transcribed into Python for carma's differential tests
# (srt_report_ref.py). One deliberate difference: total_power_w `None` is blank here, as in carma.
import csv, json, re, sys
from datetime import datetime
from pathlib import Path

CPU_UTILIZATION_COLUMNS = ("cpu_util_total", "cpu_util_user", "cpu_util_nice", "cpu_util_sys", "cpu_util_irq")
GPU_UTILIZATION_COLUMNS = ("gpu_util_pct", "sm_active")
CPU_SAMPLES_DIRNAMES = ("cpu", "cpu_power")
_AIPERF_PHASE_RE = re.compile(r"Phase \w+ \(profiling\) (started|complete)")
_AIPERF_PHASE_LINE_RE = re.compile(r"^(?P<stamp>\d{2}:\d{2}:\d{2}\.\d{3}) NOTICE\s+Phase \w+ \(profiling\) (?P<event>started|complete)\b(?P<rest>.*)$")
_AIPERF_ELAPSED_RE = re.compile(r"elapsed=(?P<seconds>\d+(?:\.\d+)?)s")
_SA_BENCH_MARKERS = ("Serving Benchmark Result", "Successful requests:")
_CONC_DIR_RE = re.compile(r"^conc_(\d+)$")
_RESULT_FILE_RE = re.compile(r"^results_concurrency_(\d+)_")

class PowerReportError(RuntimeError): pass

def detect(p):
    a = s = False
    with p.open(encoding="utf-8", errors="replace") as h:
        for line in h:
            if _AIPERF_PHASE_RE.search(line): a = True
            elif any(m in line for m in _SA_BENCH_MARKERS): s = True
    if a and s: raise PowerReportError(f"{p}: matched both aiperf and sa-bench markers")
    if a: return "aiperf"
    if s: return "sa-bench"
    raise PowerReportError(f"{p}: matched neither aiperf nor sa-bench markers")

def discover(log_dir, cpu=None):
    bo = log_dir / "benchmark.out"
    if not bo.is_file(): raise PowerReportError(f"{bo}: not found")
    allm = sorted(log_dir.rglob("samples.csv"))
    cm = [p for p in allm if p.parent.name in CPU_SAMPLES_DIRNAMES]
    gm = [p for p in allm if p.parent.name not in CPU_SAMPLES_DIRNAMES]
    if cpu is not None:
        if not cpu.is_file(): raise PowerReportError(f"{cpu}: not found")
    elif len(cm) > 1:
        raise PowerReportError(f"multiple CPU power samples.csv found below {log_dir}: {', '.join(str(p) for p in cm)}; pick one with --cpu-samples")
    else:
        cpu = cm[0] if cm else None
    if len(gm) > 1: raise PowerReportError(f"multiple GPU power samples.csv found below {log_dir}: {gm}")
    gpu = gm[0] if gm else None
    if cpu is None and gpu is None: raise PowerReportError(f"no power samples.csv (CPU or GPU) found below {log_dir}")
    man = None
    if gpu is not None:
        c = gpu.with_name("manifest.json"); man = c if c.is_file() else None
    t = detect(bo)
    src = []
    if t == "aiperf":
        for j in log_dir.rglob("conc_*/aiperf_artifacts/profile_export.jsonl"):
            m = _CONC_DIR_RE.match(j.parent.parent.name)
            if m: src.append((int(m.group(1)), j))
    else:
        for j in log_dir.rglob("sa-bench_*/results_concurrency_*.json"):
            m = _RESULT_FILE_RE.match(j.name)
            if m: src.append((int(m.group(1)), j))
    if not src: raise PowerReportError(f"no {t} result artifacts found below {log_dir}")
    return bo, cpu, gpu, man, t, sorted(src)

def iso(stamp):
    if not isinstance(stamp, str): return None
    try: return datetime.fromisoformat(stamp).astimezone().timestamp()
    except ValueError: return None

def rep_aiperf(agg):
    d = agg.get("benchmark_duration")
    ds = d.get("avg") if isinstance(d, dict) else d
    st, en = iso(agg.get("start_time")), iso(agg.get("end_time"))
    if ds is None and st is None and en is None: return None
    return {"source": "aiperf-json", "start": st, "end": en, "duration": float(ds) if ds is not None else None,
            "note": "start/end are aiperf's naive local ISO stamps converted in this host's timezone"}

def tod(s):
    h, m, x = s.split(":"); return int(h) * 3600 + int(m) * 60 + float(x)

def rep_phase(bo):
    st, co = [], []
    with bo.open(encoding="utf-8", errors="replace") as h:
        for line in h:
            m = _AIPERF_PHASE_LINE_RE.match(line.rstrip("\n"))
            if m is None: continue
            if m.group("event") == "started": st.append(m.group("stamp"))
            else: co.append((m.group("stamp"), m.group("rest")))
    if not st or not co: return {"source": "unavailable", "start": None, "end": None, "duration": None, "note": None}
    if len(st) != 1 or len(co) != 1:
        return {"source": "unavailable", "start": None, "end": None, "duration": None,
                "note": f"{max(len(st), len(co))} profiling phases in {bo.name}; cannot pair them to one concurrency"}
    s, (e, rest) = st[0], co[0]
    el = _AIPERF_ELAPSED_RE.search(rest)
    if el is not None: d = float(el.group("seconds"))
    else:
        d = tod(e) - tod(s)
        if d < 0: d += 24 * 3600.0
    return {"source": "aiperf-phase-log", "start": None, "end": None, "duration": d,
            "note": f"phase started {s}, complete {e} (time-of-day only)"}

def window(conc, src, bo):
    if src.name == "profile_export.jsonl":
        a, b = [], []
        with src.open(encoding="utf-8") as h:
            for line in h:
                line = line.strip()
                if not line: continue
                r = json.loads(line)
                if r.get("error"): continue
                md = r.get("metadata", {})
                if md.get("benchmark_phase") != "profiling": continue
                a.append(md["request_start_ns"]); b.append(md["request_end_ns"])
        if not a: raise PowerReportError(f"{src}: no successful profiling-phase records")
        ap = src.with_name("profile_export_aiperf.json")
        if not ap.is_file(): raise PowerReportError(f"{ap}: not found (expected alongside {src})")
        agg = json.loads(ap.read_text())
        out, inp = agg["total_osl"]["avg"], agg["total_isl"]["avg"]
        rep = rep_aiperf(agg)
        if rep is None and bo.is_file(): rep = rep_phase(bo)
        if rep is None: rep = {"source": "unavailable", "start": None, "end": None, "duration": None, "note": None}
        return {"type": "aiperf", "conc": conc, "path": str(src), "start": min(a) / 1e9, "end": max(b) / 1e9,
                "out": out, "in": inp, "rep": rep}
    r = json.loads(src.read_text())
    for k in ("benchmark_start_time_unix", "benchmark_end_time_unix", "total_input_tokens", "total_output_tokens"):
        if k not in r: raise PowerReportError(f"{src}: missing required field {k!r}")
    d = r.get("duration")
    return {"type": "sa-bench", "conc": conc, "path": str(src), "start": r["benchmark_start_time_unix"],
            "end": r["benchmark_end_time_unix"], "out": r["total_output_tokens"], "in": r["total_input_tokens"],
            "rep": {"source": "sa-bench-json", "start": float(r["benchmark_start_time_unix"]),
                    "end": float(r["benchmark_end_time_unix"]), "duration": float(d) if d is not None else None,
                    "note": None if d is not None else "result JSON has no 'duration' field"}}

# cpu_rails
SUFFIX = {"cpuSidePowerUsageW": "total", "cpuRailPowerUsageW": "cpu_rail", "socPowerUsageW": "soc",
          "dramPowerUsageW": "dram", "modulePowerUsageW": "module", "cpuPowerUsageW": "dcgm"}
PATS = (("module", re.compile(r"\bModule\s+Power\s+Socket\s+(\d+)\b", re.I)),
        ("total", re.compile(r"\bGrace\s+Power\s+Socket\s+(\d+)\b", re.I)),
        ("total", re.compile(r"\bTotal(?:\s+Input)?\s+Power(?:\s+in\s+uW)?\s+Socket\s+(\d+)\b", re.I)),
        ("cpu_rail", re.compile(r"\bCPU\s+Rail(?:\s+Input)?\s+Power(?:\s+in\s+uW)?\s+Socket\s+(\d+)\b", re.I)),
        ("soc", re.compile(r"\bSoC\s+Rail(?:\s+Input)?\s+Power(?:\s+in\s+uW)?\s+Socket\s+(\d+)\b", re.I)),
        ("dram", re.compile(r"\bDRAM(?:\s+Input)?\s+Power(?:\s+in\s+uW)?\s+Socket\s+(\d+)\b", re.I)),
        ("cpu_rail", re.compile(r"\bCPU(?:\s+Input)?\s+Power(?:\s+in\s+uW)?\s+Socket\s+(\d+)\b", re.I)),
        ("soc", re.compile(r"\bSysIO\s+Power\s+Socket\s+(\d+)\b", re.I)))
PREF = ("total", "dcgm", "cpu_rail", "soc", "dram", "module", "other")
def classify(sensor):
    _, _, suf = sensor.partition(":")
    if suf in SUFFIX: return SUFFIX[suf]
    for k, p in PATS:
        if p.search(sensor): return k
    return "other"
def rank(sensor): return PREF.index(classify(sensor))

def ss(rows):
    out = {}
    for k, pts in rows.items():
        pts.sort(key=lambda p: p[0]); out[k] = ([t for t, _ in pts], [w for _, w in pts])
    return out
def coll(row, cols, ts, store):
    for c in cols:
        raw = row.get(c)
        if raw is None or raw == "": continue
        store.setdefault(c, []).append((ts, float(raw)))
def sutil(raw): return {k: ss(c) for k, c in raw.items() if c}

def load_cpu(path):
    with path.open(newline="", encoding="utf-8") as h:
        rd = csv.DictReader(h)
        wide = rd.fieldnames is not None and all(c in rd.fieldnames for c in ("cpu_rail_w", "soc_w", "dram_w"))
        bys, nodes, util = {}, {}, {}
        for row in rd:
            ts = float(row["timestamp_unix"]); host = row["hostname"]; sr = row["socket_id"]
            if sr != "":
                key = (host, int(sr)); sensor = "power_w" if wide else row["sensor"]
                bys.setdefault(key, {}).setdefault(sensor, {})[ts] = float(row["power_w"])
                coll(row, CPU_UTILIZATION_COLUMNS, ts, util.setdefault(key, {}))
            # carma reads the host collector's repr(None) as blank (srt-slurm raises on it)
            if row["total_power_w"] not in ("", "None"):
                nodes.setdefault(host, {})[ts] = float(row["total_power_w"])
    sel, chosen = {}, {}
    for key, sensors in bys.items():
        best = next(iter(sensors)) if wide else min(sensors, key=lambda n: (rank(n), n))
        sel[key] = list(sensors[best].items()); chosen[key] = best
    return ss(sel), ss({h: list(v.items()) for h, v in nodes.items()}), sutil(util), chosen

def load_roles(p):
    m = json.loads(p.read_text()); roles = {}
    for d in m.get("expected_devices", []):
        roles[(d["hostname"], d["gpu_index"])] = {a["worker_role"] for a in d["assignments"]}
    return roles

def load_gpu(path, roles):
    dev, nodes, rt, util = {}, {}, {}, {}
    with path.open(newline="", encoding="utf-8") as h:
        for row in csv.DictReader(h):
            ts = float(row["timestamp_unix"]); host = row["hostname"]; gi = int(row["gpu_index"]); w = float(row["power_w"])
            dev.setdefault((host, gi), []).append((ts, w))
            coll(row, GPU_UTILIZATION_COLUMNS, ts, util.setdefault((host, gi), {}))
            nodes.setdefault(host, {}); nodes[host][ts] = nodes[host].get(ts, 0.0) + w
            if roles is not None:
                for r in roles.get((host, gi), ()):
                    bh = rt.setdefault(r, {}).setdefault(host, {}); bh[ts] = bh.get(ts, 0.0) + w
    return ss(dev), ss({h: list(v.items()) for h, v in nodes.items()}), \
        {r: ss({h: list(v.items()) for h, v in bh.items()}) for r, bh in rt.items()}, sutil(util), roles or {}

