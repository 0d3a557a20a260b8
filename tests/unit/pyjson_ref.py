#!/usr/bin/python3
"""CPython reference for src/report/pyjson.c (driven by tests/unit/test_pyjson.c).

Usage:
    pyjson_ref.py nums FILE   FILE holds lines "<x> <decimals> <flags>": x as float.hex()
                              text (or nan, -nan, inf, -inf), flags a subset of "+," or "-"
                              for none. Prints "<repr(x)> <format(x, spec)>" per line, spec
                              being [+][,].<decimals>f.
    pyjson_ref.py json FILE   FILE holds one JSON document. Prints json.dumps of it with
                              indent=2, indent=0, indent=4 and no indent, each followed by a
                              newline.
"""
import json
import sys


def nums(path):
    out = []
    with open(path, encoding="ascii") as f:
        for line in f:
            t, d, flags = line.split()
            x = float.fromhex(t) if "0x" in t else float(t)
            spec = ("+" if "+" in flags else "") + ("," if "," in flags else "") + "." + d + "f"
            out.append(repr(x) + " " + format(x, spec) + "\n")
    sys.stdout.write("".join(out))


def dumps(path):
    with open(path, encoding="utf-8") as f:
        v = json.load(f)
    for indent in (2, 0, 4, None):
        sys.stdout.write(json.dumps(v, indent=indent) + "\n")


if __name__ == "__main__":
    {"nums": nums, "json": dumps}[sys.argv[1]](sys.argv[2])
