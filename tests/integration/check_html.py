#!/usr/bin/env python3
"""Checks a DOM that headless Chromium dumped from carma's HTML report.

    check_html.py DOM.html run REPORT_JSON SERIES...   a carma run: the job table's energies
                                                       are report.json's, each SERIES is a
                                                       chart series
    check_html.py DOM.html srt REPORT_JSON             an srt-slurm log: one table row per
                                                       window with its GPU energy and J/token
    check_html.py DOM.html shown MAX                   every series shows at most MAX points
    check_html.py DOM.html marks REPORT_JSON [N]       a run with marks: the timeline has a bar
                                                       per mark window (N of them, when given)
                                                       on the power charts' time axis, lanes
                                                       without overlaps, one workload a lane,
                                                       labels, tooltips, unended ones hatched,
                                                       the events' ticks, the bands behind the
                                                       power charts, the table of the windows
    check_html.py DOM.html nomarks                     no timeline, no band, no marks table
    check_html.py DOM.html collect-marks REPORT_JSON   a collect page: each mark window in the
                                                       windows table and on the timeline, on the
                                                       axis of the power-per-node chart

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


def rounds_to(cell, want):
    """the cell shows want rounded to the cell's decimals"""
    dec = len(cell.split(".")[1]) if "." in cell else 0
    return abs(number(cell) - want) <= 0.5 * 10 ** -dec * (1 + 1e-6) + 1e-12


SVG_NS = "{http://www.w3.org/2000/svg}"


def charts(text):
    """figure id -> the chart's <svg> parsed (namespace dropped from the tags)"""
    out = {}
    for fid, svg in re.findall(r'<figure class="chart" id="([^"]+)">(<svg.*?</svg>)', text, re.S):
        root = ET.fromstring(svg)
        for el in root.iter():
            if el.tag.startswith(SVG_NS):
                el.tag = el.tag[len(SVG_NS):]
        out[fid] = root
    return out


def x_axis(svg, x0):
    """(time -> pixel, the ticks [(label, x)]) from a chart's x tick labels and its unit"""
    ticks = [(float(t.text), float(t.get("x"))) for t in svg.iter("text")
             if t.get("class") == "xtick"]
    label = [t.text for t in svg.iter("text") if t.get("class") == "xlabel"][0]
    div = 3600 if label.endswith("(h)") else 60 if label.endswith("(min)") else 1
    if len(ticks) < 2:
        die(f"fewer than two x ticks: {ticks}")
    (v0, p0), (v1, p1) = ticks[0], ticks[-1]
    slope = (p1 - p0) / (v1 - v0)
    for v, p in ticks:
        if abs(p0 + (v - v0) * slope - p) > 0.15:
            die(f"the x ticks are not on one scale: {ticks}")
    return (lambda t: p0 + ((t - x0) / div - v0) * slope), ticks


def title_of(el):
    t = el.find("title")
    return t.text if t is not None else ""


def check_bars(svg, want, to_px, group_of=None):
    """each window of want (dicts: id, name, start, end, unended, node_j) has its bar at its
    begin..end; lanes hold no overlaps (and one group each); labels fit or are cut"""
    bars = {}
    tl = [g for g in svg.iter("g") if g.get("class") == "timeline"]
    if len(tl) != 1:
        die("no timeline group in the marks chart")
    lane_h = float(tl[0].get("data-lane-height"))
    for g in svg.iter("g"):
        if g.get("class") == "mark":
            bars[int(g.get("data-id"))] = g
    if len(bars) != len(want):
        die(f"{len(bars)} bars on the timeline for {len(want)} mark windows")
    lanes = {}
    for w in want:
        g = bars.get(w["id"])
        if g is None:
            die(f"no bar for mark {w['id']} ({w['name']})")
        if abs(float(g.get("data-start")) - w["start"]) > 2e-6 or \
                abs(float(g.get("data-end")) - w["end"]) > 2e-6:
            die(f"mark {w['id']}: data-start/end {g.get('data-start')}..{g.get('data-end')}, "
                f"the report {w['start']}..{w['end']}")
        r = g.find("rect")
        x, width = float(r.get("x")), float(r.get("width"))
        a, z = to_px(w["start"]), to_px(w["end"])
        if abs(x - a) > 0.3 or (abs(x + width - z) > 0.3 and not (z - a < 1 and width == 1)):
            die(f"mark {w['id']} ({w['name']}): bar x {x}..{x + width}, the axis puts "
                f"{w['start']}..{w['end']} at {a:.2f}..{z:.2f}")
        title = title_of(g)
        if not title.startswith(w.get("title", f"{w['name']} (mark {w['id']})")):
            die(f"mark {w['id']}: tooltip {title!r}")
        m = re.search(r"node (-?[\d.]+) J", title)
        if w["node_j"] is not None and (not m or not close(float(m.group(1)), w["node_j"])):
            die(f"mark {w['id']}: tooltip {title!r}, node {w['node_j']} J in the report")
        if w.get("job_j") is not None:
            m = re.search(r"job (-?[\d.]+) J", title)
            if not m or not close(float(m.group(1)), w["job_j"]):
                die(f"mark {w['id']}: tooltip {title!r}, job {w['job_j']} J in the report")
        if "%.3f s" % (w["end"] - w["start"]) not in title:
            die(f"mark {w['id']}: no duration in the tooltip {title!r}")
        flagged = g.get("data-flagged") == "true"
        hatched = any(p.get("class") == "hatch" for p in g.iter("path"))
        if flagged != w["unended"] or hatched != w["unended"]:
            die(f"mark {w['id']}: unended {w['unended']}, flagged {flagged}, hatched {hatched}")
        if w["unended"] and "unended" not in title:
            die(f"mark {w['id']}: the tooltip does not say unended")
        text = g.find("text")
        room = (width - 6) / 6.2
        full = w["name"] + (" (unended)" if w["unended"] else "")
        if text is not None:
            if text.text not in (w["name"], full) and not (
                    text.text.endswith("…") and w["name"].startswith(text.text[:-1])):
                die(f"mark {w['id']}: label {text.text!r} for {w['name']!r}")
        elif lane_h >= 12 and room >= len(w["name"]):
            die(f"mark {w['id']} ({w['name']}): no label in a bar {width:.1f} px wide")
        lanes.setdefault(int(g.get("data-lane")), []).append(w)
    for lane, ws in lanes.items():
        ws.sort(key=lambda w: w["start"])
        for p, q in zip(ws, ws[1:]):
            if q["start"] < p["end"] - 1e-9 and lane < 63:
                die(f"lane {lane}: mark {p['id']} ({p['start']}..{p['end']}) overlaps mark "
                    f"{q['id']} ({q['start']}..{q['end']})")
        if group_of and len({group_of(w) for w in ws}) != 1:
            die(f"lane {lane}: marks of several workloads {sorted({group_of(w) for w in ws})}")
    if group_of:  # each group's lanes together
        order = [group_of(lanes[k][0]) for k in sorted(lanes)]
        seen = []
        for gname in order:
            if gname in seen and seen[-1] != gname:
                die(f"the lanes of {gname} are not together: {order}")
            seen.append(gname)
    return bars, lanes


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
    elif mode == "marks":
        rep = json.load(open(sys.argv[3]))
        cs = charts(text)
        tlsvg = cs.get("marks-timeline")
        if tlsvg is None:
            die("no marks timeline")
        power = [k for k in cs if k.startswith("power-")]
        if not power:
            die("no power chart")
        x0 = rep[0]["start_unix"]
        to_px, ticks = x_axis(cs[power[0]], x0)
        if x_axis(tlsvg, x0)[1] != ticks:
            die(f"the timeline's axis {x_axis(tlsvg, x0)[1]} is not the power chart's {ticks}")
        for k in power[1:]:
            if x_axis(cs[k], x0)[1] != ticks:
                die(f"chart {k} has another time axis than {power[0]}")
        marks = [w for w in rep if w["window"] == "mark"]
        if len(sys.argv) > 4 and len(marks) != int(sys.argv[4]):
            die(f"{len(marks)} mark windows in the report, {sys.argv[4]} expected")
        want = [{"id": w["mark_id"], "name": w["name"], "start": w["start_unix"],
                 "end": w["end_unix"], "unended": w["unended"],
                 "node_j": w["node_total_joules"], "job_j": w["job_joules"],
                 "workload": w["workload"]} for w in marks]
        bars, lanes = check_bars(tlsvg, want, to_px, lambda w: w["workload"])
        # the events: every one of the run window's, as ticks
        ticks_ev = [g for g in tlsvg.iter("g") if g.get("class") == "tick"]
        n_ev = sum(int(g.get("data-count")) for g in ticks_ev)
        if n_ev != len(rep[0]["events"]):
            die(f"{n_ev} events on the timeline, {len(rep[0]['events'])} in the run window")
        for g in ticks_ev:
            line = g.find("line")
            t = float(g.get("data-time"))
            if abs(float(line.get("x1")) - to_px(t)) > 0.3:
                die(f"event at {t}: tick at x {line.get('x1')}, the axis says {to_px(t):.2f}")
        # behind each power chart: the first lane of each workload, as bands
        first = {}
        for lane in sorted(lanes):
            first.setdefault(lanes[lane][0]["workload"], lane)
        top = sorted(w["id"] for lane in first.values() for w in lanes[lane])
        for k in power:
            bands = [r for r in cs[k].iter("rect") if r.get("class") == "band"]
            if sorted(int(r.get("data-id")) for r in bands) != top:
                die(f"chart {k}: bands {sorted(int(r.get('data-id')) for r in bands)}, the "
                    f"workloads' first lanes hold {top}")
            for r in bands:
                bar = bars[int(r.get("data-id"))].find("rect")
                if abs(float(r.get("x")) - float(bar.get("x"))) > 0.02 or \
                        abs(float(r.get("width")) - float(bar.get("width"))) > 0.02:
                    die(f"chart {k}: band {r.get('data-id')} is not under its bar")
        rows = dom.tables.get("marks-table")
        if not rows or len(rows) != len(marks) + 1:
            die(f"marks table: {len(rows or []) - 1} rows for {len(marks)} mark windows")
        head = rows[0]
        for r, w in zip(rows[1:], marks):
            if not r[0].startswith(w["name"]) or int(number(r[1])) != w["mark_id"]:
                die(f"marks table: row {r} for mark {w['mark_id']} {w['name']}")
            if ("unended" in r[0]) != w["unended"]:
                die(f"marks table: row {r}: unended is {w['unended']}")
            if not rounds_to(r[head.index("node (J)")], w["node_total_joules"]):
                die(f"marks table: mark {w['mark_id']}: node {r[head.index('node (J)')]} J")
            if not rounds_to(r[head.index("length (s)")], w["duration_seconds"]):
                die(f"marks table: mark {w['mark_id']}: length {r[head.index('length (s)')]}")
            if "job (J)" in head and w["job_joules"] is not None and \
                    not rounds_to(r[head.index("job (J)")], w["job_joules"]):
                die(f"marks table: mark {w['mark_id']}: job {r[head.index('job (J)')]} J")
        print(f"check_html: {len(bars)} bars in {len(lanes)} lanes, {n_ev} events, "
              f"{len(top)} bands a chart")
    elif mode == "nomarks":
        if "marks-timeline" in charts(text) or 'class="mark"' in text or \
                'class="band"' in text or "marks-table" in dom.tables:
            die("a timeline of marks in a page without marks")
    elif mode == "collect-marks":
        rep = json.load(open(sys.argv[3]))
        rows = dom.tables.get("collect-windows")
        marks = [w for w in rep["windows"] if w["source"] == "mark"]
        if not marks:
            die("no mark window in the collect report")
        for w in marks:
            r = [r for r in rows[1:] if r[0] == w["name"] and r[1] == "mark"]
            if len(r) != 1:
                die(f"collect windows table: {len(r)} rows for mark {w['name']}")
            head = rows[0]
            if not rounds_to(r[0][head.index("job energy (J)")], w["job"]["energy_j"]):
                die(f"collect mark {w['name']}: job energy {r[0]}")
        cs = charts(text)
        if "marks-timeline" not in cs:
            die("no marks timeline on the collect page")
        x0 = rep["windows"][0]["start_unix"]
        to_px, ticks = x_axis(cs["power-nodes"], x0)
        if x_axis(cs["marks-timeline"], x0)[1] != ticks:
            die("the collect timeline's axis is not the power-per-node chart's")
        want = [{"id": i + 1, "name": w["name"], "start": w["start_unix"], "end": w["end_unix"],
                 "unended": False, "node_j": None, "job_j": w["job"]["energy_j"],
                 "title": f"{w['name']} (mark)"} for i, w in enumerate(marks)]
        check_bars(cs["marks-timeline"], want, to_px)
    print(f"check_html: {mode} ok ({len(dom.series)} series, {len(dom.tables)} tables)")


if __name__ == "__main__":
    main()
