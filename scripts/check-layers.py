#!/usr/bin/env python3
"""check-layers: the architecture's rules (docs/architecture.md), checked on the sources.

  scripts/check-layers.py [BUILD]

1. Layers: a file of src/X/ includes headers of X/ and of the layers below X only; folders
   of one layer include none of each other's headers.
2. The printing boundary: nothing below src/cli/ writes stdout (printf, puts, putchar,
   stdout) or calls exit() (a forked child's _exit() is its own).
3. No two files call each other: with BUILD (a meson build directory holding carma's
   objects), no object calls a function defined in another object that calls one of its.
4. Function names follow file names: with BUILD, every function and object a file below
   src/cli/ exports begins with the file's name or its folder's and file's (module_verb:
   ledger_post in analysis/ledger.c, srt_log_open in srt/log.c), or with the one established
   prefix PREFIXES gives a module.

Prints each violation as "FILE:LINE: what" and exits 1 when there is one, 0 otherwise.
"""
import os
import re
import subprocess
import sys

# lowest first; folders on one line are one layer
LAYERS = [
    ["core"],
    ["sources"],
    ["sampler"],
    ["analysis"],
    ["workload"],
    ["rundir"],
    ["collect"],
    ["export", "srt", "serve", "import", "model"],
    ["report"],
    ["cli"],
]
# modules whose names are older than the rule: their one prefix
PREFIXES = {
    "core/err": "carma_err_",
    "core/timeutil": "time_",
    "core/pidlive": "pid_",
    "sources/procfs": "procstat_",
    "sources/source": "channel_set_",
    "sources/meter": "wattsup_",
    "analysis/gpu_split": "gpu_",
    "workload/perfcount": "perf_counter",
    "workload/supervise": "supervisor_",
    "collect/collector": "collect_",
    "collect/promparse": "prom_",
    "export/carma_files": "carma_",
    "serve/connguard": "conn_guard_",
    "model/features": "fx_",
    "model/powermodel": "pm_",
}

RANK = {d: k for k, layer in enumerate(LAYERS) for d in layer}

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")

INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"')
PRINTING = re.compile(r"\b(printf|puts|putchar|exit)\s*\(|\bstdout\b")


def strip_comments(text):
    """The text with comments and string literals blanked, lines kept."""
    out = []
    k, n = 0, len(text)
    while k < n:
        c = text[k]
        if text.startswith("/*", k):
            e = text.find("*/", k + 2)
            e = n if e < 0 else e + 2
            out.append(re.sub(r"[^\n]", " ", text[k:e]))
            k = e
        elif text.startswith("//", k):
            e = text.find("\n", k)
            e = n if e < 0 else e
            k = e
        elif c in "\"'":
            e = k + 1
            while e < n and text[e] != c and text[e] != "\n":
                e += 2 if text[e] == "\\" else 1
            out.append(c + " " * (min(e, n) - k - 1) + (c if e < n else ""))
            k = e + 1
        else:
            out.append(c)
            k += 1
    return "".join(out)


def sources():
    for d in sorted(os.listdir(SRC)):
        p = os.path.join(SRC, d)
        if not os.path.isdir(p):
            continue
        for f in sorted(os.listdir(p)):
            if f.endswith((".c", ".h")):
                yield d, os.path.join("src", d, f)


def check_sources(bad):
    for folder, rel in sources():
        if folder not in RANK:
            bad.append(f"{rel}:1: folder {folder}/ is in no layer of scripts/check-layers.py")
            continue
        text = open(os.path.join(ROOT, rel), encoding="utf-8").read()
        for no, line in enumerate(text.split("\n"), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            to = m.group(1)
            if to == folder:
                continue
            if to not in RANK:
                bad.append(f"{rel}:{no}: includes {to}/, a folder in no layer")
            elif RANK[to] > RANK[folder]:
                bad.append(f"{rel}:{no}: {folder}/ includes {to}/, a layer above it")
            elif RANK[to] == RANK[folder]:
                bad.append(f"{rel}:{no}: {folder}/ includes {to}/, a folder of its own layer")
        if folder == "cli":
            continue
        code = strip_comments(text)
        for no, line in enumerate(code.split("\n"), 1):
            m = PRINTING.search(line)
            if m:
                bad.append(f"{rel}:{no}: {m.group(0).strip()} below cli/ (the printing boundary)")


def nm(args, obj):
    r = subprocess.run(["nm"] + args + [obj], capture_output=True, text=True, check=True)
    return r.stdout.splitlines()


def check_calls(build, bad):
    # carma's own objects (src/cli/) and its library's (every other folder of src/)
    objdirs = [os.path.join(build, "carma.p"), os.path.join(build, "src", "libcarma.a.p")]
    paths = {}
    for objdir in objdirs:
        if not os.path.isdir(objdir):
            bad.append(f"{objdir}: no such directory (build carma first: ninja -C {build})")
            return
        for f in os.listdir(objdir):
            if f.endswith(".c.o") and not f.startswith("meson"):
                # src_cli_run.c.o (carma.p), analysis_ledger.c.o (libcarma.a.p)
                key = f[len("src_"):] if f.startswith("src_") else f
                paths[key] = os.path.join(objdir, f)
    objs = sorted(paths)
    defined, functions, undefined = {}, {}, {}  # functions: calls, not an ops table's data
    for o in objs:
        path = paths[o]
        for line in nm(["-g", "--defined-only"], path):
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TDBRC":
                defined[parts[2]] = o
                if parts[1] == "T":
                    functions[parts[2]] = o
        undefined[o] = {line.split()[-1] for line in nm(["-u"], path) if line.strip()}
    calls = {}
    for o, syms in undefined.items():
        for s in syms:
            d = functions.get(s)
            if d and d != o:
                calls.setdefault((o, d), s)
    def name(o):
        return o[:-len(".c.o")].replace("_", "/", 1)

    for o in objs:
        folder, module = name(o).split("/", 1)
        if folder == "cli":
            continue
        ok = (module, folder + "_" + module, PREFIXES.get(name(o), module))
        for sym, d in sorted(defined.items()):
            if d == o and not sym.startswith(ok):
                bad.append(f"src/{name(o)}.c:1: exports {sym}, a name that does not begin "
                           f"with {module}")
    for (a, b), s in sorted(calls.items()):
        if a < b and (b, a) in calls:
            bad.append(f"src/{name(a)}.c:1: calls src/{name(b)}.c ({s}) and is called by it "
                       f"({calls[(b, a)]})")


def main():
    bad = []
    check_sources(bad)
    if len(sys.argv) > 1:
        check_calls(sys.argv[1], bad)
    for b in bad:
        print(b)
    if bad:
        print(f"check-layers: {len(bad)} violation(s) of docs/architecture.md's rules", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
