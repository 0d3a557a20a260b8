#!/usr/bin/env python3
"""Checks a DOM that headless Chromium dumped from carma's HTML report.

    check_html.py DOM.html run REPORT_JSON SERIES...   a carma run: the job table's energies
                                                       are report.json's, each SERIES is a
                                                       chart series
    check_html.py DOM.html srt REPORT_JSON             an srt-slurm log: one table row per
                                                       window with its GPU energy and J/token
    check_html.py DOM.html shown MAX                   every series shows at most MAX points

Always: every <svg> is well-formed XML with no NaN or Infinity in it, and nothing is loaded
from elsewhere (no script, link, img, iframe or url()). Exits 1 with a message on a mismatch.
"""
import html.parser
import json
import re
import sys
import xml.etree.ElementTree as ET


class Dom(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.series = []        # (label, points, shown)
        self.tables = {}        # id -> rows of cell texts
        self.fetching = []
        self._table = None
        self._row = None
        self._cell = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("script", "link", "img", "iframe") or "src" in a:
            self.fetching.append(tag)
        if tag == "g" and a.get("class") == "series":
            self.series.append((a["data-label"], int(a["data-points"]), int(a["data-shown"])))
        if tag == "table":
            self._table = a.get("id")
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._row is not None and self._cell is not None:
            self._row.append(self._cell.strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[self._table].append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def die(msg):
    print(f"check_html: {msg}", file=sys.stderr)
    sys.exit(1)


def number(cell):
    return float(cell.replace("\u2009", "").replace(",", ""))


def close(a, b):
    """the page shows about 4 significant digits"""
    return abs(a - b) <= max(abs(b) * 6e-4, 1e-6)


def main():
    path, mode = sys.argv[1], sys.argv[2]
    text = open(path, encoding="utf-8").read()
    for svg in re.findall(r"<svg.*?</svg>", text, re.S):
        try:
            ET.fromstring(svg)
        except ET.ParseError as e:
            die(f"an <svg> is not well-formed: {e}")
        if re.search(r"nan|inf", svg, re.I) and re.search(r"[\d ]-?(nan|inf)", svg, re.I):
            die("NaN or Infinity in a chart")
    if "url(" in text:
        die("url( in the page")
    dom = Dom()
    dom.feed(text)
    if dom.fetching:
        die(f"the page loads something: {dom.fetching}")
    if mode == "run":
        rep = json.load(open(sys.argv[3]))
        jobs = dom.tables.get("jobs")
        if not jobs:
            die("no job table")
        head = jobs[0]
        col = head.index("energy (J)")
        for w in rep["workloads"]:
            rows = [r for r in jobs[1:] if r[0].split(" ")[0] == w["name"]]
            if len(rows) != 1:
                die(f"job {w['name']}: {len(rows)} rows")
            if not close(number(rows[0][col]), w["energy_j"]):
                die(f"job {w['name']}: {rows[0][col]} J shown, {w['energy_j']} in report.json")
        labels = {s[0] for s in dom.series}
        for want in sys.argv[4:]:
            if want not in labels:
                die(f"no series {want} (have {sorted(labels)})")
    elif mode == "srt":
        rep = json.load(open(sys.argv[3]))
        rows = dom.tables.get("srt-windows")
        if not rows or len(rows) != len(rep) + 1:
            die(f"window table: {len(rows or []) - 1} rows for {len(rep)} windows")
        head = rows[0]
        for r, w in zip(rows[1:], rep):
            if number(r[0]) != w["concurrency"]:
                die(f"row {r[0]}: concurrency {w['concurrency']}")
            if not close(number(r[head.index("GPU energy (J)")]), w["gpu_total_joules"]):
                die(f"concurrency {w['concurrency']}: GPU energy {r[3]}")
            jt = w["joules_per_output_token"]
            if jt is not None and not close(number(r[head.index("J / output token")]), jt):
                die(f"concurrency {w['concurrency']}: J/token")
        if not any(s[0] == "output tok/s per GPU W" for s in dom.series):
            die("no perf/W series")
    elif mode == "shown":
        cap = int(sys.argv[3])
        if not dom.series:
            die("no series")
        for label, points, shown in dom.series:
            if shown > cap + 8:
                die(f"{label}: {shown} points shown of {points}")
        if max(p for _, p, _ in dom.series) <= cap:
            die("no series long enough to be downsampled")
    print(f"check_html: {mode} ok ({len(dom.series)} series, {len(dom.tables)} tables)")


if __name__ == "__main__":
    main()
