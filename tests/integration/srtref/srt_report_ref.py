#!/usr/bin/python3
# A reference for `carma report --edges snap` on srt-slurm log directories: srt-slurm's
# power_energy_report as the formats doc (docs/srt-slurm-report.md, from the shared formats
# doc §6) describes it, transcribed into Python with numpy, the way srt-slurm computes it
# (np.searchsorted, np.trapz, np.mean, np.percentile). ref_input.py is the input side
# (discovery, windows, series); this file is the assembly (§6.5-§6.7), the JSON and the text
# (§6.8). It is a transcription of the description, not srt-slurm's code.
#
# usage: srt_report_ref.py LOG_DIR [--cpu-samples CSV] [--json-out FILE]
# prints the text report, or `error: <message>` on stderr and exit 1.
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ref_input as ri  # noqa: E402

MAX_GAP = 3.0


class ReportError(RuntimeError):
    pass


def windowed_energy(label, times, watts, start, end):
    if len(times) == 0:
        raise ReportError(f"{label}: no power samples available")
    t = np.asarray(times, dtype=float)
    w = np.asarray(watts, dtype=float)

    def nearest(x):
        i = int(np.searchsorted(t, x, side="left"))
        if i <= 0:
            return 0
        if i >= len(t):
            return len(t) - 1
        return i - 1 if (x - t[i - 1]) <= (t[i] - x) else i

    si, ei = nearest(start), nearest(end)
    if abs(t[si] - start) > MAX_GAP:
        raise ReportError(f"{label}: nearest sample to window start is {abs(t[si] - start):.3f}s away, no coverage")
    if abs(t[ei] - end) > MAX_GAP:
        raise ReportError(f"{label}: nearest sample to window end is {abs(t[ei] - end):.3f}s away, no coverage")
    if ei <= si:
        raise ReportError(f"{label}: window narrower than the sample spacing")
    ts, ws = t[si:ei + 1], w[si:ei + 1]
    joules = float(np.trapz(ws, ts))
    dur = end - start
    return {
        "label": label,
        "joules": joules,
        "avg_power_w": joules / dur if dur > 0 else 0.0,
        "sample_start_unix": float(t[si]),
        "sample_end_unix": float(t[ei]),
        "samples": int(ei - si + 1),
        "mean_w": float(np.mean(ws)),
        "min_w": float(np.min(ws)),
        "p5_w": float(np.percentile(ws, 5)),
        "p50_w": float(np.percentile(ws, 50)),
        "p95_w": float(np.percentile(ws, 95)),
        "p99_w": float(np.percentile(ws, 99)),
        "max_w": float(np.max(ws)),
    }


def util_rows(util, group_of, start, end, warnings):
    rows, groups = [], {}
    for key in sorted(util):
        label = util[key]["label"]
        for col in sorted(util[key]["cols"]):
            ts, vs = util[key]["cols"][col]
            inside = [v for t, v in zip(ts, vs) if start <= t <= end]
            if not inside:
                warnings.append(f"{label} {col}: no samples inside the window, utilization not reported")
                continue
            s = {"label": label, "column": col, "mean": float(np.mean(inside)), "max": max(inside),
                 "samples": len(inside)}
            rows.append(s)
            for g in group_of(key):
                groups.setdefault((g, col), []).append(s)
    for (g, col) in sorted(groups):
        m = groups[(g, col)]
        rows.append({"label": g, "column": col, "mean": sum(x["mean"] for x in m) / len(m),
                     "max": max(x["max"] for x in m), "samples": sum(x["samples"] for x in m)})
    return rows


def report(w, cpu, gpu):
    start, end = w["start"], w["end"]
    warnings = []
    cpu_socket, cpu_node, cpu_util = [], [], []
    if cpu is not None:
        socks, nodes, util, _ = cpu
        for (h, n) in sorted(socks):
            cpu_socket.append(windowed_energy(f"cpu/{h}/socket{n}", *socks[(h, n)], start, end))
        for h in sorted(nodes):
            cpu_node.append(windowed_energy(f"cpu/{h}", *nodes[h], start, end))
        u = {k: {"label": f"cpu/{k[0]}/socket{k[1]}", "cols": v} for k, v in util.items()}
        cpu_util = util_rows(u, lambda k: [f"cpu/{k[0]}"], start, end, warnings)
    gpu_dev, gpu_role, gpu_node, gpu_util = [], [], [], []
    if gpu is not None:
        dev, nodes, per_role, util, droles = gpu
        for (h, i) in sorted(dev):
            gpu_dev.append(windowed_energy(f"gpu/{h}/gpu{i}", *dev[(h, i)], start, end))
        for h in sorted(nodes):
            gpu_node.append(windowed_energy(f"gpu/{h}", *nodes[h], start, end))
        for r in sorted(per_role):
            for h in sorted(per_role[r]):
                gpu_role.append(windowed_energy(f"gpu/{h}/{r}", *per_role[r][h], start, end))
        if not per_role:
            warnings.append("GPU role breakdown unavailable (no manifest.json / expected_devices)")
        u = {k: {"label": f"gpu/{k[0]}/gpu{k[1]}", "cols": v} for k, v in util.items()}
        gpu_util = util_rows(
            u, lambda k: [f"gpu/{k[0]}"] + [f"gpu/{k[0]}/{r}" for r in sorted(droles.get(k, ()))],
            start, end, warnings)
        if cpu is None:
            warnings.append("combined perf/W unavailable: no CPU power leg in this run (GPU-only figures reported)")
    cpu_total = sum(b["joules"] for b in cpu_node)
    gpu_total = sum(b["joules"] for b in gpu_node)
    combined = cpu_total + gpu_total
    out, inp = w["out"], w["in"]
    d = end - start
    node_rows = cpu_node + gpu_node
    rate_o = out / d if d > 0 else None
    rate_t = (out + inp) / d if d > 0 else None
    gpu_avg = gpu_total / d if gpu_node and d > 0 else None
    comb_avg = combined / d if gpu_node and cpu_node and d > 0 else None

    def ratio(a, b):
        return None if a is None or b is None or b == 0 else a / b

    rep = w["rep"]
    return {
        "benchmark_type": w["type"], "concurrency": w["conc"], "start_unix": start, "end_unix": end,
        "output_tokens": out, "input_tokens": inp,
        "cpu_per_socket": cpu_socket, "cpu_per_node": cpu_node, "cpu_total_joules": cpu_total,
        "gpu_per_device": gpu_dev, "gpu_per_role": gpu_role, "gpu_per_node": gpu_node,
        "gpu_total_joules": gpu_total, "combined_total_joules": combined,
        "joules_per_output_token": combined / out if out else None,
        "joules_per_total_token": combined / (out + inp) if (out + inp) else None,
        "timing": {
            "computed": {"start_unix": start, "end_unix": end, "duration_seconds": d},
            "reported": {"source": rep["source"], "start_unix": rep["start"], "end_unix": rep["end"],
                         "duration_seconds": rep["duration"], "note": rep["note"]},
            "coverage": {
                "sample_start_unix": min(b["sample_start_unix"] for b in node_rows) if node_rows else None,
                "sample_end_unix": max(b["sample_end_unix"] for b in node_rows) if node_rows else None,
                "duration_seconds": (max(b["sample_end_unix"] for b in node_rows)
                                     - min(b["sample_start_unix"] for b in node_rows)) if node_rows else None,
            },
        },
        "perf_per_watt": {
            "output_tokens_per_second": rate_o, "total_tokens_per_second": rate_t,
            "gpu_avg_power_w": gpu_avg, "combined_avg_power_w": comb_avg,
            "output_tokens_per_second_per_gpu_watt": ratio(rate_o, gpu_avg),
            "output_tokens_per_second_per_combined_watt": ratio(rate_o, comb_avg),
            "total_tokens_per_second_per_gpu_watt": ratio(rate_t, gpu_avg),
            "total_tokens_per_second_per_combined_watt": ratio(rate_t, comb_avg),
        },
        "cpu_utilization": cpu_util, "gpu_utilization": gpu_util, "warnings": warnings,
    }


def F2(x):
    return "n/a" if x is None else f"{x:,.2f}"


def U3(x):
    return "n/a" if x is None else f"{x:.3f}"


def text(reports):
    lines = []
    for r in reports:
        lines.append(f"[{r['benchmark_type']} concurrency={r['concurrency']}] window={r['end_unix'] - r['start_unix']:.2f}s")
        for w in r["warnings"]:
            lines.append(f"  warning: {w}")
        lines.append(f"  cpu total:      {F2(r['cpu_total_joules'])} J")
        lines.append(f"  gpu total:      {F2(r['gpu_total_joules'])} J")
        lines.append(f"  combined total: {F2(r['combined_total_joules'])} J")
        lines.append(f"  tokens: output={r['output_tokens']:,.0f} input={r['input_tokens']:,.0f}")
        lines.append(f"  J/output-token: {F2(r['joules_per_output_token'])}")
        lines.append(f"  J/total-token:  {F2(r['joules_per_total_token'])}")
        c, rep, cov = r["timing"]["computed"], r["timing"]["reported"], r["timing"]["coverage"]
        s = f"  timing: computed start={U3(c['start_unix'])} end={U3(c['end_unix'])} duration={c['duration_seconds']:.2f}s | "
        if rep["source"] == "unavailable":
            s += "reported: n/a" + (f" ({rep['note']})" if rep["note"] else "")
        else:
            s += f"reported[{rep['source']}]"
            if rep["start_unix"] is not None or rep["end_unix"] is not None:
                s += f" start={U3(rep['start_unix'])} end={U3(rep['end_unix'])}"
            if rep["duration_seconds"] is not None:
                s += (f" duration={rep['duration_seconds']:.2f}s "
                      f"(computed-reported={c['duration_seconds'] - rep['duration_seconds']:+.2f}s)")
        if cov["sample_start_unix"] is not None:
            s += f" | samples cover {U3(cov['sample_start_unix'])}..{U3(cov['sample_end_unix'])} ({cov['duration_seconds']:.2f}s)"
        lines.append(s)
        p = r["perf_per_watt"]
        g = (f"gpu avg={F2(p['gpu_avg_power_w'])} W -> output {p['output_tokens_per_second_per_gpu_watt']:.4f} tok/s/W, "
             f"total {p['total_tokens_per_second_per_gpu_watt']:.4f} tok/s/W") if p["gpu_avg_power_w"] is not None else "gpu: n/a"
        cb = (f"combined avg={F2(p['combined_avg_power_w'])} W -> output {p['output_tokens_per_second_per_combined_watt']:.4f} tok/s/W, "
              f"total {p['total_tokens_per_second_per_combined_watt']:.4f} tok/s/W") if p["combined_avg_power_w"] is not None else "combined: n/a"
        lines.append(f"  perf/W: output={F2(p['output_tokens_per_second'])} tok/s total={F2(p['total_tokens_per_second'])} tok/s | {g} | {cb}")
        for b in r["cpu_per_socket"] + r["gpu_per_device"] + r["gpu_per_role"]:
            lines.append(f"    {b['label']}: {F2(b['joules'])} J ({F2(b['avg_power_w'])} W avg; p50={F2(b['p50_w'])} "
                         f"p95={F2(b['p95_w'])} p99={F2(b['p99_w'])} max={F2(b['max_w'])} W)")
        order, cols = [], {}
        for u in r["cpu_utilization"] + r["gpu_utilization"]:
            if u["label"] not in cols:
                order.append(u["label"])
                cols[u["label"]] = []
            cols[u["label"]].append(f"{u['column']} mean={F2(u['mean'])} max={F2(u['max'])}")
        for label in order:
            lines.append(f"    {label} utilization: " + "; ".join(cols[label]))
    lines.append("")
    lines.append(f"total energy across all concurrency points: {F2(sum(r['combined_total_joules'] for r in reports))} J")
    return "\n".join(lines)


def build(log_dir, cpu_samples=None):
    bo, c, g, man, t, srcs = ri.discover(Path(log_dir), Path(cpu_samples) if cpu_samples else None)
    wins = [ri.window(conc, s, bo) for conc, s in srcs]
    cpu = ri.load_cpu(c) if c else None
    gpu = None
    if g:
        roles = ri.load_roles(man) if man else None
        gpu = ri.load_gpu(g, roles)
    return [report(w, cpu, gpu) for w in wins]


def main():
    args = sys.argv[1:]
    cpu = out = None
    if "--cpu-samples" in args:
        i = args.index("--cpu-samples")
        cpu = args[i + 1]
        del args[i:i + 2]
    if "--json-out" in args:
        i = args.index("--json-out")
        out = args[i + 1]
        del args[i:i + 2]
    try:
        reports = build(args[0], cpu)
    except (ri.PowerReportError, ReportError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if out:
        with open(out, "w") as f:
            f.write(json.dumps(reports, indent=2) + "\n")
    print(text(reports))
    return 0


if __name__ == "__main__":
    sys.exit(main())
