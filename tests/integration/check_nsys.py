#!/usr/bin/env python3
"""Checks a `carma run` directory whose GPU energy was split again by Nsight Systems kernel
busy time (tests/integration/test_nsys.sh): standard library only.

    check_nsys.py RUN_DIR --job NAME:BUSY_S... --ratio A:B:R [--dyn-j J]

--job: the workload's total busy_s in nsys_gpu.csv is BUSY_S, 3% under to 30% over (the
fake nsys's kernels span its process's whole life, start-up included);
--ratio: A's GPU energy over B's is R within 5% (their kernels' busy time ratio);
--dyn-j: the workloads' GPU energy together is J (the GPU's dynamic energy over the jobs'
lives, the fake NVML's truth) within 3%.
Prints each figure; exits 1 when a check fails.
"""
import argparse
import csv
import json
import os
import sys

failed = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failed.append(what)


def near(a, b, rel):
    return abs(a - b) <= rel * max(abs(b), 1e-9)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--job", action="append", default=[])
    ap.add_argument("--ratio")
    ap.add_argument("--dyn-j", type=float)
    a = ap.parse_args()
    rd = a.run
    rep = json.load(open(os.path.join(rd, "report.json")))

    raw = open(os.path.join(rd, "nsys_gpu.csv"), "rb").read()
    check(raw.startswith(b"interval_start_unix,interval_end_unix,gpu,pid,workload,busy_s\r\n"),
          "nsys_gpu.csv header, CRLF")
    check(raw.count(b"\n") == raw.count(b"\r\n"), "nsys_gpu.csv: every line ends in CRLF")
    rows = list(csv.DictReader(open(os.path.join(rd, "nsys_gpu.csv"), newline="")))
    busy = {}
    for r in rows:
        check_ts = all(len(r[k].split(".")[1]) == 6 for k in ("interval_start_unix",
                                                                "interval_end_unix"))
        if not check_ts or float(r["busy_s"]) <= 0 or r["gpu"] != "0":
            check(False, "nsys_gpu.csv row %s" % r)
        busy[r["workload"]] = busy.get(r["workload"], 0) + float(r["busy_s"])
        span = float(r["interval_end_unix"]) - float(r["interval_start_unix"])
        if float(r["busy_s"]) > span + 1e-6:
            check(False, "busy_s %s over its interval of %.6f s" % (r["busy_s"], span))
    for spec in a.job:
        name, want = spec.split(":")
        got = busy.get(name, 0)
        # the fake nsys's kernels cover its child's whole life, start-up included (slower in
        # a sanitized build): from 3% under to 30% over
        w = float(want)
        check(0.97 * w <= got <= 1.3 * w, "busy time of %s: %.3f s (want %s s, its process's "
              "life)" % (name, got, want))

    check(rep["attribution"].get("gpu") == "nsys", "report.json attribution.gpu = nsys")
    check(os.path.exists(os.path.join(rd, "attribution_nvml.csv")), "attribution_nvml.csv kept")
    total_run = rep["idle"]["energy_j"] + rep["other"]["energy_j"] + \
        rep["unattributed"]["energy_j"] + sum(w["energy_j"] for w in rep["workloads"])
    check(near(total_run, rep["total_energy_j"], 1e-6),
          "run: workloads + idle + other + unattributed = %.3f J = total %.3f J" %
          (total_run, rep["total_energy_j"]))
    attr = {}
    nvml = {}
    for name, into in (("attribution.csv", attr), ("attribution_nvml.csv", nvml)):
        for r in csv.DictReader(open(os.path.join(rd, name), newline="")):
            into.setdefault(r["channel"], {}).setdefault(r["job"], 0.0)
            into[r["channel"]][r["job"]] += float(r["joules"])
    for g in rep["gpus"]:
        s = g["jobs_j"] + g["idle_j"] + g["other_j"] + g["unattributed_j"]
        check(g.get("attribution") == "nsys", "%s split by nsys" % g["channel"])
        check(near(s, g["energy_j"], 1e-6), "%s: jobs + idle + other + unattributed = %.3f J = "
              "energy %.3f J" % (g["channel"], s, g["energy_j"]))
        a_sum = sum(attr[g["channel"]].values())
        n_sum = sum(nvml[g["channel"]].values())
        check(near(a_sum, n_sum, 1e-6), "%s: attribution.csv %.3f J = attribution_nvml.csv %.3f J"
              % (g["channel"], a_sum, n_sum))
        jobs = sum(w["gpu_j"][g["channel"]] for w in rep["workloads"])
        check(near(jobs, g["jobs_j"], 1e-6), "%s: Σ gpu_j %.3f J = jobs_j %.3f J" %
              (g["channel"], jobs, g["jobs_j"]))
        for w in rep["workloads"]:
            in_csv = attr[g["channel"]].get(w["name"], 0)
            check(near(in_csv, w["gpu_j"][g["channel"]], 1e-4), "%s: %s's rows %.3f J = gpu_j"
                  % (g["channel"], w["name"], in_csv))
        print("     %s: nsys_basis_s %s, nsys_busy_s %s" % (g["channel"], g["nsys_basis_s"],
                                                            g["nsys_busy_s"]))
    if a.ratio:
        x, y, r = a.ratio.split(":")
        ch = rep["gpus"][0]["channel"]
        gx = next(w for w in rep["workloads"] if w["name"] == x)["gpu_j"][ch]
        gy = next(w for w in rep["workloads"] if w["name"] == y)["gpu_j"][ch]
        nx, ny = nvml[ch].get(x, 0), nvml[ch].get(y, 0)
        check(gy > 0 and near(gx / gy, float(r), 0.05),
              "%s / %s GPU energy: %.1f / %.1f J = %.3f (want %s; NVML's split %.1f / %.1f J)" %
              (x, y, gx, gy, gx / gy if gy else 0, r, nx, ny))
    if a.dyn_j:
        jobs = rep["gpus"][0]["jobs_j"]
        check(near(jobs, a.dyn_j, 0.03), "workloads' GPU energy %.1f J = dynamic truth %.1f J" %
              (jobs, a.dyn_j))
    if failed:
        print("%d checks failed" % len(failed))
        sys.exit(1)


if __name__ == "__main__":
    main()
