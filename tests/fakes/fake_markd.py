#!/usr/bin/env python3
"""A fake marks server: the CARMA_SOCKET side of docs/formats.md (protocol 1), for the tests of
clients (python/carma). Standard library only.

    fake_markd.py --socket PATH --log FILE [--ready FILE] [--error OP]... [--drop OP]
                  [--exit-after N] [--cpu-w W] [--gpu-w W] [--dram-w W] [--method M]

Listens on PATH (SOCK_SEQPACKET, mode 0600) and answers every message as carma does, checking
each one as strictly as the protocol says (a malformed one gets `error`). The log is JSON
lines, flushed at once: {"conn": N, "pid": PID, "ev": "connect"|"close"} and
{"conn": N, "pid": PID, "msg": MESSAGE, "reply": REPLY} (pid from SO_PEERCRED).
The `end` energies are the watts given times the window's length (the default: CPU 50 W, GPU
200 W, DRAM empty: no such channel; `--gpu-w ''` makes GPU empty too).
  --error OP      reply `error` TAB `refused by the fake` to every OP message (repeatable)
  --drop OP       close the connection on an OP message instead of replying
  --exit-after N  after replying to N messages in all, close everything and exit (the server
                  gone mid-run)
  --ready FILE    written once PATH listens
Exits 0 on SIGTERM/SIGINT or --exit-after, removing PATH.
"""

import argparse
import json
import math
import os
import re
import selectors
import signal
import socket
import struct
import sys
import time

COUNT = re.compile(r"(tokens|requests)=(0|[1-9][0-9]*)\Z")


def bad_name(name):
    b = name.encode("utf-8")
    if not 1 <= len(b) <= 200:
        return "name of %d bytes" % len(b)
    if any(c < 0x20 or c == 0x7F for c in b):
        return "control character in name"
    return None


class Server:
    def __init__(self, args):
        self.args = args
        self.next_id = 1
        self.open = []  # [id, name, t0, tokens, requests], in order of arrival
        self.replied = 0
        self.log = open(args.log, "a", encoding="utf-8")

    def write(self, **rec):
        self.log.write(json.dumps(rec) + "\n")
        self.log.flush()

    def counts(self, fields):
        got = {}
        for f in fields:
            m = COUNT.match(f)
            if not m or m.group(1) in got:
                return None
            got[m.group(1)] = int(m.group(2))
        return got

    def answer(self, text):
        now = "%.6f" % time.time()
        f = text.split("\t")
        op = f[0]
        if op in self.args.error:
            return "error\trefused by the fake"
        if op == "hello" and len(f) == 1:
            d = os.path.dirname(os.path.abspath(self.args.socket))
            return "ok\tcarma=0.1.0\tprotocol=1\tdir=" + d
        if op not in ("begin", "end", "event"):
            return "error\tunknown message '%s'" % op
        if len(f) < 2 or bad_name(f[1]):
            return "error\t" + (bad_name(f[1]) if len(f) > 1 else "no name")
        name = f[1]
        if op == "event":
            if len(f) != 3 or not f[2].startswith("value="):
                return "error\tan event takes value=X"
            try:
                v = float(f[2][6:])
            except ValueError:
                v = math.nan
            if not math.isfinite(v):
                return "error\tvalue is not a finite number"
            return "ok\tt=" + now
        c = self.counts(f[2:])
        if c is None:
            return "error\tmalformed field in '%s'" % text
        if op == "begin":
            wid = self.next_id
            self.next_id += 1
            self.open.append([wid, name, float(now), c.get("tokens"), c.get("requests")])
            return "ok\tid=%d\tt=%s" % (wid, now)
        for i in range(len(self.open) - 1, -1, -1):
            if self.open[i][1] == name:
                wid, _, t0, _, _ = self.open.pop(i)
                break
        else:
            return "error\tno open window '%s'" % name
        t1 = float(now)
        w = [self.args.cpu_w, self.args.gpu_w, self.args.dram_w]
        j = ["" if x == "" else "%.3f" % (float(x) * (t1 - t0)) for x in w]
        total = "%.3f" % sum(float(x) for x in j if x) if any(j) else ""
        return "ok\tid=%d\tt0=%.6f\tt1=%.6f\tenergy_j=%s\tcpu_j=%s\tgpu_j=%s\tdram_j=%s\tmethod=%s" % (
            wid, t0, t1, total, j[0], j[1], j[2], self.args.method)

    def run(self):
        a = self.args
        if os.path.lexists(a.socket):
            os.unlink(a.socket)
        lsock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        old = os.umask(0o177)
        lsock.bind(a.socket)
        os.umask(old)
        lsock.listen(64)
        sel = selectors.DefaultSelector()
        sel.register(lsock, selectors.EVENT_READ, None)
        conns = {}
        nconn = 0
        stop = []
        signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
        signal.signal(signal.SIGINT, lambda *_: stop.append(1))
        if a.ready:
            with open(a.ready + ".tmp", "w") as f:
                f.write("%d\n" % os.getpid())
            os.rename(a.ready + ".tmp", a.ready)
        while not stop:
            for key, _ in sel.select(0.2):
                if key.data is None:
                    c, _ = lsock.accept()
                    cred = c.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
                    pid = struct.unpack("3i", cred)[0]
                    nconn += 1
                    conns[c] = (nconn, pid)
                    sel.register(c, selectors.EVENT_READ, (nconn, pid))
                    self.write(conn=nconn, pid=pid, ev="connect")
                    continue
                c = key.fileobj
                n, pid = key.data
                data = c.recv(2048)
                if not data or len(data) > 1024:
                    self.write(conn=n, pid=pid, ev="close", why="eof" if not data else "too long")
                    sel.unregister(c)
                    del conns[c]
                    c.close()
                    continue
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError:
                    text = None
                op = (text or "").split("\t")[0]
                if op in a.drop:
                    self.write(conn=n, pid=pid, msg=text, reply=None)
                    self.write(conn=n, pid=pid, ev="close", why="drop")
                    sel.unregister(c)
                    del conns[c]
                    c.close()
                    continue
                reply = "error\tnot UTF-8" if text is None else self.answer(text)
                self.write(conn=n, pid=pid, msg=text, reply=reply)  # logged before the client sees it
                try:
                    c.send(reply.encode("utf-8"))
                except OSError:  # the client is gone: its end of file comes next
                    pass
                self.replied += 1
                if a.exit_after and self.replied >= a.exit_after:
                    stop.append(1)
        for c, (n, pid) in conns.items():
            self.write(conn=n, pid=pid, ev="close", why="exit")
            c.close()
        lsock.close()
        os.unlink(a.socket)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--socket", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--ready")
    p.add_argument("--error", action="append", default=[])
    p.add_argument("--drop", action="append", default=[])
    p.add_argument("--exit-after", type=int, default=0)
    p.add_argument("--cpu-w", default="50")
    p.add_argument("--gpu-w", default="200")
    p.add_argument("--dram-w", default="")
    p.add_argument("--method", default="measured")
    Server(p.parse_args()).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
