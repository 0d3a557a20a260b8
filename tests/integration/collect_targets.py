#!/usr/bin/env python3
"""Fake Prometheus exporters for `carma collect`'s tests and benchmark (standard library only).

One process listens on one or more ports of one address and answers every GET/HEAD (any path)
with a canned /metrics body, over HTTP/1.1 with keep-alive (or Connection: close with --close).

    collect_targets.py --body FILE [--host 127.0.0.1] [--port P ... | --count N]
                       [--mode ok|garbage|slow|hang|404|reset] [--mode-file F] [--delay S]
                       [--close] [--ready FILE] [--log FILE]

--body FILE is re-read on every request, so a test changes what a target serves by rewriting
it (write a temporary file and rename it over FILE). --port 0 (the default) or --count N pick
free ports; --ready FILE gets the bound ports, one per line, once every socket listens (written
to a temporary file and renamed). --mode-file F, when it exists, overrides --mode on every
request with its first word: a test makes a live target slow, hang or serve garbage. Modes:
ok (the body), garbage (a body no Prometheus parser accepts), slow (the body after --delay S),
hang (never answers), 404 (an error status), reset (closes the connection without answering).
--log FILE appends "conn PORT ID" for each accepted connection and "req PORT ID" for each
request. SIGTERM and SIGINT end it.
"""

import argparse
import asyncio
import os
import signal
import sys

GARBAGE = b'carma_power_watts{node="x",channel="broken 1\n# TYPE\n\x00\x01garbage\n'


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--body", required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, action="append")
    p.add_argument("--count", type=int, default=0)
    p.add_argument("--mode", default="ok",
                   choices=["ok", "garbage", "slow", "hang", "404", "reset"])
    p.add_argument("--mode-file")
    p.add_argument("--delay", type=float, default=2.0)
    p.add_argument("--close", action="store_true")
    p.add_argument("--ready")
    p.add_argument("--log")
    return p.parse_args()


class Server:
    def __init__(self, args):
        self.args = args
        self.next_id = 0
        self.log = open(args.log, "a", buffering=1) if args.log else None

    def mode(self):
        if self.args.mode_file:
            try:
                with open(self.args.mode_file) as f:
                    words = f.read().split()
                if words:
                    return words[0]
            except OSError:
                pass
        return self.args.mode

    def body(self):
        try:
            with open(self.args.body, "rb") as f:
                return f.read()
        except OSError:
            return None

    async def handle(self, reader, writer, port):
        self.next_id += 1
        cid = self.next_id
        if self.log:
            self.log.write(f"conn {port} {cid}\n")
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                method = line.split(b" ", 1)[0]
                close = self.args.close
                size = len(line)
                while True:
                    h = await reader.readline()
                    size += len(h)
                    if not h or h in (b"\r\n", b"\n") or size > 16384:
                        break
                    if h.lower().startswith(b"connection:") and b"close" in h.lower():
                        close = True
                if self.log:
                    self.log.write(f"req {port} {cid}\n")
                mode = self.mode()
                if mode == "hang":
                    await asyncio.sleep(3600)
                    break
                if mode == "reset":
                    break
                if mode == "slow":
                    await asyncio.sleep(self.args.delay)
                status = "200 OK"
                body = self.body()
                if mode == "garbage":
                    body = GARBAGE
                elif mode == "404":
                    status, body = "404 Not Found", b"Not Found\n"
                elif body is None:
                    status, body = "500 Internal Server Error", b"no body file\n"
                head = (f"HTTP/1.1 {status}\r\n"
                        "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                        f"Content-Length: {len(body)}\r\n"
                        f"Connection: {'close' if close else 'keep-alive'}\r\n\r\n")
                writer.write(head.encode() + (b"" if method == b"HEAD" else body))
                await writer.drain()
                if close:
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            try:
                writer.close()
            except Exception:
                pass

    async def run(self):
        ports = self.args.port or []
        if self.args.count:
            ports = ports + [0] * self.args.count
        if not ports:
            ports = [0]
        servers, bound = [], []
        for p in ports:
            srv = await asyncio.start_server(
                lambda r, w: self.handle(r, w, w.get_extra_info("sockname")[1]),
                host=self.args.host, port=p, reuse_address=True, backlog=128)
            servers.append(srv)
            bound.append(srv.sockets[0].getsockname()[1])
        if self.args.ready:
            tmp = self.args.ready + ".tmp"
            with open(tmp, "w") as f:
                f.write("".join(f"{p}\n" for p in bound))
            os.rename(tmp, self.args.ready)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for s in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(s, stop.set)
        await stop.wait()
        for srv in servers:
            srv.close()


def main():
    args = parse_args()
    try:
        asyncio.run(Server(args).run())
    except OSError as e:
        print(f"collect_targets.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
