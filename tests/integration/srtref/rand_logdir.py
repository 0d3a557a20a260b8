#!/usr/bin/python3
# Writes a random srt-slurm log directory for the report's differential test
# (tests/integration/test_report.sh): usage rand_logdir.py DIR SEED. Windows lie inside the
# sampled span (sometimes not quite: those give srt-slurm's coverage errors), scrapes come on a
# jittered grid, GPUs of a host share each scrape's timestamp, some rows are missing or
# doubled, CPU files in every known layout, roles from a manifest or none.
import json, os, random, sys, shutil
root, seed = sys.argv[1], int(sys.argv[2])
R = random.Random(seed)
shutil.rmtree(root, ignore_errors=True)
def put(rel, text, crlf=False):
    p = os.path.join(root, rel); os.makedirs(os.path.dirname(p), exist_ok=True)
    if crlf: text = text.replace("\n", "\r\n")
    with open(p, "w", newline="") as f: f.write(text)
def num(x):  # an int or a float, as JSON would hold it
    return int(x) if R.random() < 0.4 else float(x) + R.choice([0, 0.5, 0.25, 0.1])
bench = R.choice(["sa-bench", "aiperf"])
lines = ["some log line", "another\twith tab"]
if bench == "sa-bench":
    lines += ["============ Serving Benchmark Result ============", "Successful requests: 10"]
nphase = R.choice([0, 1, 1, 2]) if bench == "aiperf" else 0
for k in range(max(nphase, 1 if bench == "aiperf" else 0)):
    h = R.randrange(24); m = R.randrange(60)
    lines.append(f"{h:02d}:{m:02d}:{R.randrange(60):02d}.{R.randrange(1000):03d} NOTICE   Phase profiling (profiling) started | x")
    if nphase and R.random() < 0.8:
        el = f" elapsed={R.randrange(5000)}.{R.randrange(100)}s" if R.random() < 0.5 else ""
        lines.append(f"{R.randrange(24):02d}:{R.randrange(60):02d}:{R.randrange(60):02d}.{R.randrange(1000):03d} NOTICE   Phase profiling (profiling) complete{el}")
R.shuffle(lines)
put("benchmark.out", "\n".join(lines) + "\n", crlf=R.random() < 0.3)
concs = R.sample([1, 2, 4, 8, 16, 32, 64, 128], R.randint(1, 4))
for c in concs:
    pre = R.choice(["", "sweep/", "a/b/", "a-x/"])
    if bench == "sa-bench":
        s0 = 1000 + R.randrange(0, 60); d = {"benchmark_start_time_unix": num(s0), "benchmark_end_time_unix": num(s0 + R.choice([0, 1, 5, 30, 100])),
             "total_input_tokens": num(R.randrange(10**6)), "total_output_tokens": num(R.randrange(10**5))}
        if R.random() < 0.6: d["duration"] = R.choice([num(99), None])
        put(f"{pre}sa-bench_{R.choice(['x', 'isl_1_osl_2'])}/results_concurrency_{c}_{R.choice(['a', 'gpus_4'])}.json", json.dumps(d))
    else:
        recs = []
        for _ in range(R.randint(1, 8)):
            s = R.randrange(1000 * 10**9, 1060 * 10**9); e = s + R.randrange(10**11)
            r = {"metadata": {"benchmark_phase": R.choice(["profiling", "profiling", "warmup"]), "request_start_ns": s, "request_end_ns": e}}
            er = R.choice([None, None, "", 0, {}, [], "boom", {"c": 1}, 1, False, True])
            if er is not None or R.random() < 0.3: r["error"] = er
            recs.append(json.dumps(r))
        recs.append(json.dumps({"metadata": {"benchmark_phase": "profiling", "request_start_ns": 1010 * 10**9, "request_end_ns": 1050 * 10**9}}))
        R.shuffle(recs)
        base = f"{pre}conc_{c}/aiperf_artifacts/"
        put(base + "profile_export.jsonl", "\n".join(recs) + "\n")
        agg = {"total_osl": {"avg": num(R.randrange(1000))}, "total_isl": {"avg": num(R.randrange(1000))}}
        if R.random() < 0.5: agg["benchmark_duration"] = R.choice([{"avg": num(50)}, num(40), {"unit": "s"}, None])
        if R.random() < 0.5: agg["start_time"] = R.choice(["2026-03-08T01:30:00.5", "2026-09-06T14:32:00.646759", "2026-09-06T14:32:00+05:30", "junk", 12])
        if R.random() < 0.5: agg["end_time"] = R.choice(["2026-11-01T01:30:00", "2026-09-06 14:33:40", "2026-09-06T14:33:40Z"])
        put(base + "profile_export_aiperf.json", json.dumps(agg))
# decoys
put("power/windows/results_concurrency_4_w.json", "{}")
put("conc_x/aiperf_artifacts/profile_export.jsonl", "{}\n")
hosts = R.sample(["node-a", "node-b", "n10", "n2", "x"], R.randint(1, 3))
step = R.choice([0.5, 1.0, 1.0, 2.0, 2.9])
grid = []
t = 990.0 + R.random()
while t < 1175.0:
    grid.append(t)
    t += step * R.choice([1, 1, 1, 1, 0.5, 1.5, 2.5 if R.random() < 0.05 else 1])
grid = [round(x, R.choice([1, 3, 6])) for x in grid]
legs = R.choice(["gpu", "cpu", "both"])
if legs in ("gpu", "both"):
    v2 = R.random() < 0.6
    hdr = "schema_version,timestamp_unix,scrape_seq,hostname,gpu_index,gpu_uuid,power_w" + (",gpu_util_pct,sm_active" if v2 else "")
    rows = [hdr]
    gpus = sorted(R.sample([0, 1, 2, 3, 10], R.randint(1, 3)))
    for seq, t0 in enumerate(grid):
        for h in hosts:
            t = t0 + (0.25 * hosts.index(h) if R.random() < 0.9 else 0.0)
            for g in gpus:
                if R.random() < 0.02: continue
                w = R.choice([100.0, 50.5, 0.1, 123.456, 400.0, 700.25]) + R.random() * 10
                row = f"{2 if v2 else 1},{t!r},{seq},{h},{g},GPU-{h}{g},{w!r}"
                if v2: row += "," + R.choice(["", "60.0", "0.5", "99.5"]) + "," + R.choice(["", "0.25"])
                rows.append(row)
                if R.random() < 0.01: rows.append(row)
    put("power/samples.csv", "\n".join(rows) + "\n", crlf=R.random() < 0.5)
    if R.random() < 0.7:
        devs = []
        for _ in range(R.randint(0, 5)):
            devs.append({"hostname": R.choice(hosts), "gpu_index": R.choice([0, 1, 2, 3, 10]),
                         "assignments": [{"worker_role": R.choice(["prefill", "decode", "agg"])} for _ in range(R.randint(0, 3))]})
        m = {"schema_version": 1}
        if devs or R.random() < 0.5: m["expected_devices"] = devs
        put("power/manifest.json", json.dumps(m))
if legs in ("cpu", "both"):
    layouts = [
        ("schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,total_power_w", 0),
        ("schema_version,timestamp_unix,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,dram_w,total_power_w", 3),
        ("schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,power_w,total_power_w", 0),
        ("schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,power_w,total_power_w,cpu_util_total,cpu_util_user,cpu_util_nice,cpu_util_sys,cpu_util_irq", 0),
        ("schema_version,timestamp_unix,timestamp_local,hostname,source,sensor,socket_id,power_w,cpu_rail_w,soc_w,dram_w,total_power_w,cpu_util_total,cpu_util_user,cpu_util_nice,cpu_util_sys,cpu_util_irq", 3),
    ]
    hdr, _ = R.choice(layouts)
    cols = hdr.split(",")
    sensors = ["CPU0:cpuSidePowerUsageW", "CPU0:cpuRailPowerUsageW", "CPU0:socPowerUsageW", "CPU1:cpuPowerUsageW",
               "Grace Power Socket 0", "CPU Power Socket 0", "SysIO Power Socket 0", "Module Power Socket 1",
               "Total Input Power in uW socket 1", "junk sensor", "aaa", "DRAM Power socket 0", "x:modulePowerUsageW"]
    rows = [hdr]
    mysens = R.sample(sensors, R.randint(1, 3))
    for t0 in grid:
        for h in hosts:
            t = t0 + 0.1
            total = repr(R.choice([188.0, 190.5, 200.125]) + R.random()) if R.random() < 0.97 else ""
            for sock in ("0", "1"):
                for sn in mysens:
                    vals = {"schema_version": "1", "timestamp_unix": repr(t), "timestamp_local": "t",
                            "hostname": h, "source": "acpi", "sensor": sn,
                            "socket_id": sock if R.random() < 0.98 else "", "power_w": repr(R.choice([93.5, 48.0, 5.25]) + R.random()),
                            "cpu_rail_w": "", "soc_w": "", "dram_w": "", "total_power_w": total}
                    for c in ("cpu_util_total", "cpu_util_user", "cpu_util_nice", "cpu_util_sys", "cpu_util_irq"):
                        vals[c] = R.choice(["", "", "0.5", "0.25"])
                    rows.append(",".join(vals[c] for c in cols))
    where = R.choice(["power/cpu/samples.csv", "cpu_power/samples.csv"])
    put(where, "\n".join(rows) + "\n", crlf=R.random() < 0.5)
    if R.random() < 0.3:
        put("cpu_power/nodes/node-a.csv", hdr + "\n")
