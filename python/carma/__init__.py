"""Marks for carma: tell `carma run` / `carma stat` which windows of a program to measure.

    import carma

    with carma.window("train", tokens=4096) as w:
        ...
    print(w.energy.energy_j if w.energy else "not measured")

The module speaks the marks protocol of docs/formats.md (version 1) over the Unix socket named
by $CARMA_SOCKET: one SOCK_SEQPACKET packet per message, one reply per message, in order.

Rules:
- Measurement never breaks the program. Without $CARMA_SOCKET, when the socket cannot be
  connected, when the server goes away or stops answering (REPLY_TIMEOUT_S), marks are off:
  every call does nothing and returns None, and one line on stderr says why, once per process
  (a forked child does not repeat what its parent said, and stays off when the parent was).
- An `error` reply raises nothing: the call returns None, and each distinct message is printed
  once per process, at most MAX_ERRORS of them, then one line saying that more are not shown.
  A window whose begin was not sent (marks off) or was refused sends no end.
- Programmer errors raise ValueError at once, whether marks are on or off: a name that is not
  a str of 1 to 200 bytes of UTF-8 without control characters; tokens or requests that are not
  non-negative integers; an event value that is not a finite real number.
- One connection per process, opened at the first call; a process whose pid changed (fork,
  multiprocessing workers) opens its own, since carma knows the sender by the connection's pid.
  Calls are thread-safe: a lock holds each message and its reply together.
"""

import functools
import math
import numbers
import os
import socket
import sys
import threading
import unicodedata
from typing import NamedTuple, Optional

__version__ = "0.1.0"
__all__ = ["window", "begin", "end", "event", "enabled", "Energy", "PROTOCOL"]

PROTOCOL = 1
REPLY_TIMEOUT_S = 10.0
MAX_ERRORS = 20
_MAX_NAME = 200
_MAX_PACKET = 1024


class Energy(NamedTuple):
    """The `end` reply: the window's id, its times (Unix seconds) and the node's energies in J
    (None where no channel of that kind exists); method is measured, estimated or none."""

    id: int
    t0: float
    t1: float
    energy_j: Optional[float]
    cpu_j: Optional[float]
    gpu_j: Optional[float]
    dram_j: Optional[float]
    method: str


# ---- validation (ValueError for programmer errors) ----

def _check_name(name):
    if not isinstance(name, str):
        raise ValueError("carma: a mark's name must be a str, not %s" % type(name).__name__)
    try:
        n = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError("carma: mark name %r is not valid UTF-8" % name) from None
    if not 1 <= n <= _MAX_NAME:
        raise ValueError("carma: mark name %r: %d bytes, must be 1 to %d" % (name, n, _MAX_NAME))
    if any(unicodedata.category(c) == "Cc" for c in name):
        raise ValueError("carma: mark name %r holds a control character" % name)
    return name


def _check_count(what, n):
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise ValueError("carma: %s must be a non-negative integer, not %r" % (what, n))
    return int(n)


def _check_value(x):
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise ValueError("carma: an event's value must be a real number, not %r" % (x,))
    try:
        f = float(x)
    except OverflowError:
        f = math.inf
    if not math.isfinite(f):
        raise ValueError("carma: an event's value must be finite, not %r" % (x,))
    if isinstance(x, numbers.Integral) and abs(x) < 10**15:
        return str(int(x))
    return repr(f)


# ---- the connection ----

_lock = threading.Lock()
_sock = None  # the connection of process _pid
_pid = None
_off = None  # why marks are off, once they are
_errors_seen = set()
# the begins sent without waiting (window's), whose replies are not read yet, in order; and
# those of their names that the server refused (their end is not sent: it would close another
# window of the name)
_pending = []
_refused = []
_PENDING_MAX = 64


def _say(line):
    try:
        sys.stderr.write("carma: " + line + "\n")
        sys.stderr.flush()
    except Exception:  # no stderr: nothing to say it on
        pass


def _go_off(why):
    global _sock, _off
    if _sock is not None:
        try:
            _sock.close()
        except OSError:
            pass
    _sock = None
    _off = why
    del _pending[:]
    del _refused[:]
    _say("marks off: " + why)


def _after_fork_in_child():
    # the parent's lock may have been held by another thread; its socket is the parent's
    global _lock, _sock, _pid
    _lock = threading.Lock()
    if _sock is not None:
        try:
            _sock.close()
        except OSError:
            pass
    _sock = None
    _pid = None
    del _pending[:]
    del _refused[:]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _fields(reply):
    """The key=value fields of a reply after its first one."""
    out = {}
    for f in reply[1:]:
        k, sep, v = f.partition("=")
        if sep:
            out[k] = v
    return out


def _send(msg):
    """Sends msg (with _lock held and _sock connected); False when the connection broke (marks
    are then off)."""
    try:
        _sock.send(msg, getattr(socket, "MSG_NOSIGNAL", 0))
        return True
    except OSError as e:
        _go_off("lost the connection to %s: %s" % (os.environ.get("CARMA_SOCKET", ""),
                                                   e.strerror or e))
        return False


def _report(fields, reply):
    """An error reply to the message of fields: each distinct text once, MAX_ERRORS of them."""
    text = "\t".join(reply[1:]) if reply[0] == "error" else "\t".join(reply)
    if text not in _errors_seen and len(_errors_seen) <= MAX_ERRORS:
        _errors_seen.add(text)
        if len(_errors_seen) > MAX_ERRORS:
            _say("marks: more errors from the server, not shown")
        else:
            _say("marks: %s: %s" % (" ".join(fields[:2]), text))


def _drain():
    """Reads the replies of the begins sent without waiting (with _lock held and _sock
    connected), keeping the names the server refused; False when marks went off."""
    while _pending:
        name = _pending.pop(0)
        reply = _recv()
        if reply is None:
            return False
        if reply[0] != "ok":
            _refused.append(name)
            _report(["begin", name], reply)
    return True


def _exchange(msg):
    """Sends msg, returns the reply's fields (a list of str). Called with _lock held and _sock
    connected; on a broken connection marks go off and None is returned."""
    if _pending and not _drain():
        return None
    if not _send(msg):
        return None
    return _recv()


def _recv():
    """The next reply's fields; None when marks went off."""
    path = os.environ.get("CARMA_SOCKET", "")
    try:
        data = _sock.recv(65536)
    except socket.timeout:
        _go_off("no reply from %s in %g s" % (path, REPLY_TIMEOUT_S))
        return None
    except OSError as e:
        _go_off("lost the connection to %s: %s" % (path, e.strerror or e))
        return None
    if not data:
        _go_off("%s: the server closed the connection" % path)
        return None
    return data.decode("utf-8", "replace").split("\t")


def _connect():
    """Opens this process's connection (with _lock held); False when marks are off."""
    global _sock, _pid
    path = os.environ.get("CARMA_SOCKET", "")
    if not path:
        _go_off("CARMA_SOCKET is not set (run the program under carma run or carma stat -o DIR)")
        return False
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.settimeout(REPLY_TIMEOUT_S)
        s.connect(path)
    except OSError as e:
        s.close()
        _go_off("cannot connect to %s: %s" % (path, e.strerror or e))
        return False
    _sock, _pid = s, os.getpid()
    reply = _exchange(b"hello")
    if reply is None:
        return False
    proto = _fields(reply).get("protocol")
    if reply[0] != "ok" or proto != str(PROTOCOL):
        _go_off("%s speaks protocol %s, this module %d" % (path, proto, PROTOCOL))
        return False
    return True


def _call(fields, nowait=False):
    """Sends one message (a list of str fields); returns the ok reply's fields, or None (marks
    off, or an error reply, reported). nowait (a begin): sent without reading its reply, which
    a later call reads; True when sent. An end of a name whose begin the server refused is not
    sent (None)."""
    msg = "\t".join(fields).encode("utf-8")
    if len(msg) > _MAX_PACKET:  # cannot happen with checked fields; kept as a guard
        raise ValueError("carma: message of %d bytes, over %d" % (len(msg), _MAX_PACKET))
    with _lock:
        if _off is not None:
            return None
        if _sock is None or _pid != os.getpid():
            if _sock is not None:  # forked without the at-fork hook
                _after_fork_in_child()
            if not _connect():
                return None
        if nowait:
            if len(_pending) >= _PENDING_MAX and not _drain():
                return None
            if not _send(msg):
                return None
            _pending.append(fields[1])
            return True
        if fields[0] == "end":
            if _pending and not _drain():
                return None
            if fields[1] in _refused:
                _refused.remove(fields[1])
                return None
        reply = _exchange(msg)
        if reply is None:
            return None
        if reply[0] == "ok":
            return reply
        _report(fields, reply)
        return None


def _counts(tokens, requests):
    out = []
    if tokens is not None:
        out.append("tokens=%d" % tokens)
    if requests is not None:
        out.append("requests=%d" % requests)
    return out


def _float(v):
    return float(v) if v not in (None, "") else None


# ---- the API ----

def enabled():
    """True when marks reach carma (connecting now if needed), False when they are off."""
    with _lock:
        if _off is not None:
            return False
        if _sock is not None and _pid == os.getpid():
            return True
    return _call(["hello"]) is not None


def begin(name, tokens=None, requests=None):
    """Opens a window NAME; returns its id, or None (marks off, or an error reply)."""
    fields = ["begin", _check_name(name)]
    fields += _counts(_check_count("tokens", tokens), _check_count("requests", requests))
    reply = _call(fields)
    if reply is None:
        return None
    try:
        return int(_fields(reply)["id"])
    except (KeyError, ValueError):
        return None


def _begin_nowait(name, tokens, requests):
    """Opens a window NAME without waiting for the server's reply (a window's begin): True when
    sent, None when marks are off. A refusal is told, once, when the reply is read, and the
    window's end is then not sent."""
    fields = ["begin", _check_name(name)]
    fields += _counts(_check_count("tokens", tokens), _check_count("requests", requests))
    return _call(fields, nowait=True)


def end(name, tokens=None, requests=None):
    """Closes the most recent open window NAME; returns its Energy, or None (marks off, no such
    window, or an error reply)."""
    fields = ["end", _check_name(name)]
    fields += _counts(_check_count("tokens", tokens), _check_count("requests", requests))
    reply = _call(fields)
    if reply is None:
        return None
    f = _fields(reply)
    try:
        return Energy(int(f["id"]), float(f["t0"]), float(f["t1"]), _float(f.get("energy_j")),
                      _float(f.get("cpu_j")), _float(f.get("gpu_j")), _float(f.get("dram_j")),
                      f.get("method", "none"))
    except (KeyError, ValueError):
        _say("marks: a malformed end reply: %r" % "\t".join(reply))
        return None


def event(name, value):
    """Records an event NAME with a number; returns the time carma got it (Unix s) or None."""
    reply = _call(["event", _check_name(name), "value=" + _check_value(value)])
    if reply is None:
        return None
    try:
        return float(_fields(reply)["t"])
    except (KeyError, ValueError):
        return None


class window:
    """A window of the program, as a context manager or a decorator:

        with carma.window("prefill", requests=8) as w:
            w.tokens = run_batch()
        w.energy  # an Energy, or None

        @carma.window("step")
        def step(batch): ...

    begin is sent on entry with the tokens and requests known then, without waiting for the
    server's reply (read by the end), and end on exit with those known at the end (a window's
    are those given at its end, else at its begin); w.id is the window's id from the end's
    reply."""

    def __init__(self, name, tokens=None, requests=None):
        self.name = _check_name(name)
        self.tokens = tokens
        self.requests = requests
        self.id = None
        self.energy = None

    @property
    def tokens(self):
        return self._tokens

    @tokens.setter
    def tokens(self, n):
        self._tokens = _check_count("tokens", n)

    @property
    def requests(self):
        return self._requests

    @requests.setter
    def requests(self, n):
        self._requests = _check_count("requests", n)

    def __enter__(self):
        self.energy = None
        self.id = None
        self._sent = _begin_nowait(self.name, self.tokens, self.requests) is not None
        return self

    def __exit__(self, *exc):
        # no end for a window that did not begin: it would close another window of the name
        # (end itself sends none for a begin that the server refused)
        if self._sent:
            self.energy = end(self.name, self.tokens, self.requests)
            self.id = self.energy.id if self.energy else None
        return False

    def __call__(self, func):
        name, tokens, requests = self.name, self.tokens, self.requests

        @functools.wraps(func)
        def marked(*args, **kwargs):
            with window(name, tokens, requests):
                return func(*args, **kwargs)

        return marked

    def __repr__(self):
        return "carma.window(%r, id=%r, energy=%r)" % (self.name, self.id, self.energy)
