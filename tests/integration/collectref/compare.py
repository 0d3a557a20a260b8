#!/usr/bin/python3
# Compares `carma report --json` of a collect directory (CARMA) with collect_report_ref.py's
# JSON (REF): every number REF has, within a relative TOL (absolute for values near 0).
# usage: compare.py CARMA.json REF.json [--tol 1e-9]
import json
import math
import sys

carma = json.load(open(sys.argv[1]))
ref = json.load(open(sys.argv[2]))
tol = float(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--tol" else 1e-9
bad = []
n = 0


def close(x, y):
    if x is None or y is None:
        return x is None and y is None
    if isinstance(x, str) or isinstance(y, str):
        return x == y
    return abs(x - y) <= tol * max(abs(x), abs(y), 1.0)


def cmp(path, c, r):
    global n
    if isinstance(r, dict):
        if not isinstance(c, dict):
            bad.append("%s: not an object in carma" % path)
            return
        for k, v in r.items():
            if k not in c:
                bad.append("%s.%s: missing in carma" % (path, k))
                continue
            cmp(path + "." + k, c[k], v)
    elif isinstance(r, list):
        if not isinstance(c, list) or len(c) != len(r):
            bad.append("%s: %s items in carma, %d in the reference" %
                       (path, len(c) if isinstance(c, list) else "no", len(r)))
            return
        for i, (x, y) in enumerate(zip(c, r)):
            cmp("%s[%d]" % (path, i), x, y)
    else:
        n += 1
        if not close(c, r):
            bad.append("%s: carma %r, reference %r" % (path, c, r))


cmp("", carma, ref)
if bad:
    print("%d of %d numbers differ:" % (len(bad), n))
    for b in bad[:40]:
        print("  " + b)
    sys.exit(1)
print("%d numbers agree within %g" % (n, tol))
