"""The cases of test_python_marks.sh: each marks windows with python/carma against
tests/fakes/fake_markd.py (CARMA_SOCKET) and then checks the fake's log (the messages it got,
with the sender's pid), exiting 1 with a message on the first wrong thing.

    check_marks.py CASE LOG
"""

import json
import multiprocessing
import os
import sys
import threading
import time

import carma


def bad(msg):
    print("check_marks %s: %s" % (sys.argv[1], msg), file=sys.stderr)
    sys.exit(1)


def expect(cond, msg):
    if not cond:
        bad(msg)


def log():
    with open(sys.argv[2], encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def messages():
    return [r["msg"] for r in log() if "msg" in r]


def check_energy(w, what):
    e = w.energy
    expect(isinstance(e, carma.Energy), "%s: energy %r" % (what, e))
    expect(e.id == w.id and isinstance(e.id, int), "%s: end id %r, begin id %r" % (what, e.id, w.id))
    expect(isinstance(e.t0, float) and e.t0 <= e.t1, "%s: times %r %r" % (what, e.t0, e.t1))
    d = e.t1 - e.t0
    expect(abs(e.cpu_j - 50 * d) < 0.002 and abs(e.gpu_j - 200 * d) < 0.002,
           "%s: %r for %f s (the fake: 50 W CPU, 200 W GPU)" % (what, e, d))
    expect(abs(e.energy_j - e.cpu_j - e.gpu_j) < 0.002, "%s: total %r" % (what, e))
    expect(e.dram_j is None and e.method == "measured", "%s: dram_j/method of %r" % (what, e))
    reply = [r["reply"] for r in log() if r.get("msg", "").startswith("end\t" + w.name)
             and ("\tid=%d\t" % e.id) in r["reply"] + "\t"]
    expect(len(reply) == 1 and ("t1=%.6f" % e.t1) in reply[0], "%s: reply %r" % (what, reply))


def case_basic():
    expect(carma.__version__ == "0.1.0", "__version__ %r" % carma.__version__)
    with carma.window("ctx", tokens=3, requests=2) as w:
        time.sleep(0.05)
        w.tokens = 7
    check_energy(w, "ctx")
    expect(w.energy.t1 - w.energy.t0 >= 0.05, "ctx lasted %r" % (w.energy,))

    @carma.window("dec", requests=1)
    def f(x):
        return x + 1

    expect(f(1) == 2 and f(2) == 3 and f.__name__ == "f", "the decorated function")
    with carma.window("outer") as o:
        with carma.window("inner") as i1:
            pass
        with carma.window("inner") as i2:
            pass
        with carma.window("outer") as o2:
            pass
    for w, what in ((o, "outer"), (i1, "inner 1"), (i2, "inner 2"), (o2, "outer 2")):
        check_energy(w, what)
    expect(o.id < i1.id < i2.id < o2.id, "ids %r" % ([o.id, i1.id, i2.id, o2.id],))
    try:
        with carma.window("raises") as r:
            raise KeyError("boom")
    except KeyError:
        pass
    else:
        bad("the exception inside a window was lost")
    check_energy(r, "raises")
    b = carma.begin("be", requests=4)
    e = carma.end("be", tokens=9)
    expect(isinstance(b, int) and e.id == b, "begin %r end %r" % (b, e))
    expect(isinstance(carma.event("loss", 0.25), float) and carma.event("n", 12) is not None, "event")
    expect(carma.end("nosuch") is None and carma.end("nosuch") is None, "end of an unknown name")
    expect(carma.enabled(), "enabled()")
    want = ["hello", "begin\tctx\ttokens=3\trequests=2", "end\tctx\ttokens=7\trequests=2",
            "begin\tdec\trequests=1", "end\tdec\trequests=1", "begin\tdec\trequests=1",
            "end\tdec\trequests=1", "begin\touter", "begin\tinner", "end\tinner", "begin\tinner",
            "end\tinner", "begin\touter", "end\touter", "end\touter", "begin\traises",
            "end\traises", "begin\tbe\trequests=4", "end\tbe\ttokens=9", "event\tloss\tvalue=0.25",
            "event\tn\tvalue=12", "end\tnosuch", "end\tnosuch"]
    expect(messages() == want, "messages %r, expected %r" % (messages(), want))
    expect(len({r["conn"] for r in log()}) == 1, "more than one connection")
    print(carma.__file__)


def shard(i):
    # its own name: end NAME closes the most recent window of that name, whoever opened it
    with carma.window("worker%d" % i, tokens=i) as w:
        pass
    return os.getpid(), w.id, w.energy and w.energy.id


def case_fork():
    me = os.getpid()
    with carma.window("parent") as w:
        pass
    pid = os.fork()
    if pid == 0:
        with carma.window("child") as c:
            pass
        os._exit(0 if c.energy and c.energy.id == c.id else 3)
    _, st = os.waitpid(pid, 0)
    expect(st == 0, "the forked child's window: status %r" % st)
    with carma.window("parent-after") as w2:  # the child closed its copy, not ours
        pass
    expect(w.energy and w2.energy, "the parent's windows")
    got = {}
    for method in ("fork", "spawn"):
        with multiprocessing.get_context(method).Pool(3) as pool:
            res = pool.map(shard, range(6), chunksize=1)
        for wpid, wid, eid in res:
            expect(wid is not None and wid == eid, "%s worker %d: ids %r %r" % (method, wpid, wid, eid))
        got[method] = {r[0] for r in res}
    rows = log()
    conn_pids = [r["pid"] for r in rows if r.get("ev") == "connect"]
    expect(len(conn_pids) == len(set(conn_pids)), "a pid with two connections: %r" % conn_pids)
    workers = got["fork"] | got["spawn"]
    expect(set(conn_pids) == {me, pid} | workers,
           "connections from %r, expected parent %d, child %d, workers %r" % (conn_pids, me, pid, workers))
    for r in rows:
        m = r.get("msg", "")
        who = {"parent": me, "parent-after": me, "child": pid}.get(m.split("\t")[1] if "\t" in m else "")
        if who is not None:
            expect(r["pid"] == who, "%r from pid %d, expected %d" % (m, r["pid"], who))
        if m.startswith(("begin\tworker", "end\tworker")):
            expect(r["pid"] in workers, "%r from pid %d, not a worker" % (m, r["pid"]))
    n = sum(1 for r in rows if r.get("msg", "").startswith("end\tworker"))
    expect(n == 12, "%d worker windows ended, expected 12" % n)


def case_threads():
    errors = []

    def marker(i):
        for j in range(50):
            with carma.window("t%d" % i, tokens=j) as w:
                pass
            if not w.energy or w.energy.id != w.id:
                errors.append("thread %d window %d: id %r, energy %r" % (i, j, w.id, w.energy))
            carma.event("t%d" % i, j)

    threads = [threading.Thread(target=marker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expect(not errors, "; ".join(errors[:3]))
    rows = log()
    expect(sum(1 for r in rows if r.get("ev") == "connect") == 1, "more than one connection")
    msgs = [r for r in rows if "msg" in r]
    expect(len(msgs) == 1 + 8 * 150, "%d messages" % len(msgs))
    expect(all(r["reply"].startswith("ok\t") for r in msgs), "an error reply")


def case_off():
    # no server: every call a no-op, one line on stderr (a forked child says nothing more)
    with carma.window("a", tokens=1) as w:
        pass
    expect(w.energy is None and w.id is None, "window %r" % w)
    expect(carma.begin("b") is None and carma.end("b") is None and carma.event("c", 1) is None,
           "begin/end/event")
    expect(not carma.enabled(), "enabled()")
    pid = os.fork()
    if pid == 0:
        with carma.window("child") as c:
            pass
        os._exit(0 if c.energy is None else 3)
    expect(os.waitpid(pid, 0)[1] == 0, "the child's window")


def case_gone():
    # the fake exits after 4 replies (hello, begin, end, begin): no exception, energy None
    got = []
    for i in range(5):
        with carma.window("w") as w:
            time.sleep(0.05)
        got.append(w.energy)
    expect(got[0] is not None and all(e is None for e in got[1:]), "energies %r" % got)
    expect(carma.event("after", 1) is None, "event after the end")


def case_dropped():
    # the fake closes the connection on the first end: no exception, energy None
    for i in range(3):
        with carma.window("w") as w:
            pass
        expect(w.energy is None, "energy %r" % (w.energy,))
    expect(carma.event("after", 1) is None, "event after the end")


def case_errors():
    # the fake refuses every begin: no exception; each distinct message once on stderr
    for i in range(3):
        with carma.window("w") as w:
            pass
        expect(w.energy is None and w.id is None, "window %r" % w)
    expect(carma.event("e", 2) is not None, "an event after the errors")
    expect(carma.end("w") is None, "end of a window that never began")
    want = ["hello"] + ["begin\tw"] * 3 + ["event\te\tvalue=2", "end\tw"]
    expect(messages() == want, "messages %r, expected %r" % (messages(), want))


def case_invalid():
    def raises(what, f, *args, **kw):
        try:
            f(*args, **kw)
        except ValueError:
            return
        bad("%s: no ValueError" % what)

    for name in ("", "a\tb", "a\nb", "x" * 201, "\u00e9" * 101, "a\x7f", "a\x85", b"bytes", 3, None):
        raises("name %r" % (name,), carma.window, name)
        raises("begin %r" % (name,), carma.begin, name)
    for n in (-1, 1.5, True, "3"):
        raises("tokens %r" % (n,), carma.window, "ok", tokens=n)
        raises("requests %r" % (n,), carma.end, "ok", requests=n)
    w = carma.window("ok")
    raises("w.tokens = -1", setattr, w, "tokens", -1)
    for v in (float("nan"), float("inf"), "3", None, True, 10 ** 400):
        raises("event value %r" % (v,), carma.event, "ok", v)
    expect(messages() == [], "messages sent: %r" % messages())
    with carma.window("x" * 200) as a, carma.window("\u00e9" * 100) as b:
        pass
    expect(a.energy and b.energy, "names of 200 bytes")


if __name__ == "__main__":
    globals()["case_" + sys.argv[1]]()
