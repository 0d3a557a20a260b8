#!/usr/bin/env python3
"""A slow-client flood on loopback, for the exporter's connection limits (test_exporter_dos.sh).

Keeps up to --count connections open to 127.0.0.1:PORT for --duration seconds, each sending its
request one byte per --byte-every seconds and never finishing it: the request line and Host at
once, then an endless header (or, for every --body-every'th connection, complete headers with a
large Content-Length and then the body one byte at a time). A connection the server closes is
replaced (at most --burst new ones per tick), as an attacker would. The connections come from
the source addresses of --sources (127.0.0.0/8 only, which Linux routes to loopback: no other
address is ever used), round robin.

At the end, every socket is closed and one JSON object goes to stdout:
  opened, connected, connect_failed, closed_by_server, responses (connections that got bytes
  back), max_open (connected at once), max_age_s (the longest any connection stayed open,
  measured from its connect to its close or to the end), and ages_over (how many connections
  lived past --age-limit seconds, when given).

Python standard library only (sockets, selectors).
"""
import argparse
import errno
import ipaddress
import json
import selectors
import socket
import sys
import time


def parse_sources(text):
    """'127.0.0.2' or '127.0.0.2-127.0.0.101': a list of loopback addresses."""
    lo, _, hi = text.partition("-")
    a = ipaddress.IPv4Address(lo)
    b = ipaddress.IPv4Address(hi) if hi else a
    loop = ipaddress.IPv4Network("127.0.0.0/8")
    if a not in loop or b not in loop or b < a:
        raise SystemExit(f"slow_clients: --sources {text}: only 127.0.0.0/8 ranges (loopback)")
    return [str(ipaddress.IPv4Address(i)) for i in range(int(a), int(b) + 1)]


class Conn:
    __slots__ = ("sock", "opened", "connected", "next_send", "rest", "body", "got")

    def __init__(self, sock, now, body):
        self.sock = sock
        self.opened = now
        self.connected = None
        self.next_send = 0.0
        self.rest = b""
        self.body = body
        self.got = False


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--sources", default="127.0.0.2")
    ap.add_argument("--duration", type=float, default=13.0)
    ap.add_argument("--byte-every", type=float, default=1.0)
    ap.add_argument("--body-every", type=int, default=0)
    ap.add_argument("--burst", type=int, default=200)
    ap.add_argument("--age-limit", type=float, default=0.0)
    a = ap.parse_args()
    if not 1 <= a.count <= 2000:
        raise SystemExit("slow_clients: --count: 1 to 2000")
    if not 1.0 <= a.duration <= 60.0:
        raise SystemExit("slow_clients: --duration: 1 to 60 seconds")
    sources = parse_sources(a.sources)
    target = ("127.0.0.1", a.port)

    sel = selectors.DefaultSelector()
    conns = set()
    st = dict(opened=0, connected=0, connect_failed=0, closed_by_server=0, responses=0,
              max_open=0, max_age_s=0.0, ages_over=0)
    tick = 0.1
    t0 = time.monotonic()
    end = t0 + a.duration
    nsrc = 0

    def close(c, now, by_server):
        sel.unregister(c.sock)
        c.sock.close()
        conns.discard(c)
        if c.connected is not None:
            age = now - c.connected
            st["max_age_s"] = max(st["max_age_s"], age)
            if a.age_limit and age > a.age_limit:
                st["ages_over"] += 1
            if by_server:
                st["closed_by_server"] += 1
        elif by_server:
            st["connect_failed"] += 1

    while True:
        now = time.monotonic()
        if now >= end:
            break
        # top up, a burst at a time
        for _ in range(min(a.burst, a.count - len(conns))):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                s.bind((sources[nsrc % len(sources)], 0))
            except OSError:
                s.close()
                st["connect_failed"] += 1
                break
            nsrc += 1
            body = a.body_every > 0 and st["opened"] % a.body_every == a.body_every - 1
            c = Conn(s, now, body)
            st["opened"] += 1
            rc = s.connect_ex(target)
            if rc not in (0, errno.EINPROGRESS):
                s.close()
                st["connect_failed"] += 1
                continue
            conns.add(c)
            sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, c)
        # events until the next tick
        for key, ev in sel.select(timeout=tick):
            c = key.data
            now = time.monotonic()
            if c.connected is None and ev & selectors.EVENT_WRITE:
                if c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                    close(c, now, True)
                    continue
                c.connected = now
                st["connected"] += 1
                head = f"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{a.port}\r\n"
                if c.body:
                    head += "Content-Length: 1000000\r\n\r\n"
                else:
                    head += "X-Slow: "
                c.rest = head.encode()
                c.next_send = now
                sel.modify(c.sock, selectors.EVENT_READ, c)
                continue
            if ev & selectors.EVENT_READ:
                try:
                    data = c.sock.recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if data:
                    if not c.got:
                        st["responses"] += 1
                    c.got = True
                    continue
                close(c, now, True)
        # one byte (the whole head at first) from each connection that is due
        now = time.monotonic()
        nopen = 0
        for c in list(conns):
            if c.connected is None:
                continue
            nopen += 1
            if now < c.next_send:
                continue
            out = c.rest if c.rest else b"a"
            try:
                c.sock.send(out)
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                close(c, now, True)
                continue
            c.rest = b""
            c.next_send = now + a.byte_every
        st["max_open"] = max(st["max_open"], nopen)

    now = time.monotonic()
    for c in list(conns):
        close(c, now, False)
    st["max_age_s"] = round(st["max_age_s"], 3)
    json.dump(st, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
