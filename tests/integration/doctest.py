#!/usr/bin/python3
"""Runs the command examples of carma's Markdown documents and compares the shape of their
output with the document's text (tests/integration/test_docs.sh; docs/testing.md).

    doctest.py --build BUILD [--src SRC] [--show] [--keep] [--timeout S] FILE.md...

Blocks, in each FILE (fenced with three backquotes):

- ```console: lines starting with "$ " are commands (a line ending with "\\" goes on on the
  next one); the lines after a command, up to the next command or the block's end, are its
  expected output. A command with no output lines is run and must exit 0; its output is not
  compared. A command ending with "&" is started in the background (its output is not
  compared) and ended with the document's shell.
- ```sh, ```bash, ```shell, and plain blocks one of whose lines starts with a command
  (carma, make, bash, ...): these are not run; each must be marked, or the test fails.

Marks: HTML comments on the lines just before the block's fence.

    <!-- doctest: skip (REASON) -->        not run here (a real GPU, a Slurm cluster...):
                                            counted and printed with its reason
    <!-- doctest: synopsis -->             a usage synopsis, not a command
    <!-- doctest: vm -->                   runs on this machine, and needs it to have no
                                            measured power sensor (a VM): skipped, with the
                                            reason, where carma finds one
    <!-- doctest: fake-nvml SCENARIO -->   the fake NVML (build/tests/fakes/libfake-nvml.so)
                                            with tests/fakes/nvml/SCENARIO.scenario, its
                                            clients' folder ./gpu-clients (emptied first)
    <!-- doctest: plant FIXTURE DIR -->     tests/fixtures/FIXTURE copied to ./DIR and kept
                                            alive by carma-plant (tests/fakes/plant/FIXTURE.conf,
                                            else a mirror of /proc/stat) until the document ends
    <!-- doctest: exit N -->               every command of the block must exit with N
    <!-- doctest: quiet -->                its figures need this machine's CPUs mostly idle
                                            (a power model's fit needs the load to vary):
                                            skipped, with the figure, when other processes
                                            keep more than half of them busy
    <!-- doctest: retry N -->              up to N tries (for figures that depend on this
                                            machine's load: a fit needs the load to vary);
                                            before a new try the block's background jobs are
                                            ended and the files it made removed

Every document runs in its own temporary directory, its blocks in order (a later block sees
the files an earlier one made), with the repository's top-level entries (examples/, tests/,
data/, build/ ...) linked into it, so that the commands run as written from a fresh clone's
top, and carma plus the test fakes (carma-busy, carma-gpujob, carma-plant, ...) first on
PATH. Its commands run in one bash, as typed at a prompt (an export, a cd, a background job
stays for the next command: `kill %1` works); when the document is done, that shell's process
group (every process it started) is ended by its id. stdin is /dev/null; stdout and stderr
are read together.

Shape: each line of the document's output and of the actual output is normalized (every
number, with its sign, commas and exponent, becomes N, and so do nan and inf; the temporary
directory and the repository root are removed from paths; runs of blanks become one; leading
blanks become one blank; trailing ones go; blank lines at the start and end of the output
are dropped). A document line that is "..." stands for any number of lines (none included);
"..." inside a line for any text. Every other line must match one actual line, in order, and
no actual line may be left over. --show prints every command's actual output, to paste into
the document when it changes on purpose.

Exit status: 0 when every block ran as written (skips counted), 1 otherwise, 2 for usage.
"""

import argparse
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

COMMAND_WORDS = ("carma", "make", "bash", "ninja", "meson", "python3", "sbatch", "cp", "sh",
                 "build/", "./")
SCRIPT_LANGS = ("sh", "bash", "shell")
MARK_RE = re.compile(r"^\s*<!--\s*doctest:\s*(.*?)\s*-->\s*$")
NUM_RE = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?|(?<![\w.])[-+]?(?:nan|inf)(?!\w)")


class DocError(Exception):
    pass


class Block:
    def __init__(self, path, line, lang, lines, marks):
        self.path = path
        self.line = line  # the fence's line number (1-based)
        self.lang = lang
        self.lines = lines  # (line number, text) of the block's body
        self.marks = marks  # the doctest marks before it, as strings

    def where(self):
        return "%s:%d" % (self.path, self.line)

    def mark(self, word):
        for m in self.marks:
            if m == word or m.startswith(word + " ") or m.startswith(word + "("):
                return m[len(word):].strip()
        return None


def parse_blocks(path, text):
    """Every fenced block of a Markdown text, with the marks on the lines before it."""
    blocks = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)(```+)\s*([A-Za-z0-9_-]*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang, start = len(m.group(1)), m.group(2), m.group(3), i
        body = []
        i += 1
        while i < len(lines) and not re.match(r"^\s*" + fence + r"\s*$", lines[i]):
            text = lines[i]
            k = len(text) - len(text.lstrip(" "))
            body.append((i + 1, text[min(k, indent):]))  # a block in a list item is indented
            i += 1
        if i >= len(lines):
            raise DocError("%s:%d: a code block that is never closed" % (path, start + 1))
        i += 1
        marks = []
        k = start - 1
        while k >= 0 and MARK_RE.match(lines[k]):
            marks.insert(0, MARK_RE.match(lines[k]).group(1))
            k -= 1
        for m in marks:
            word = m.split()[0] if m.split() else ""
            word = word.split("(")[0]
            if word not in ("skip", "synopsis", "vm", "fake-nvml", "plant", "exit", "retry",
                            "quiet"):
                raise DocError("%s:%d: unknown doctest mark '%s'" % (path, start + 1, m))
        blocks.append(Block(path, start + 1, lang, body, marks))
    return blocks


def is_command_block(block):
    """A block that is not ```console but shows commands to run."""
    if block.lang in SCRIPT_LANGS:
        return True
    if block.lang:
        return False
    for _, text in block.lines:
        t = text.strip()
        if t.startswith("$ "):
            return True
        if any(t == w or t.startswith(w + " ") or (w.endswith("/") and t.startswith(w))
               for w in COMMAND_WORDS):
            return True
    return False


def console_commands(block):
    """[(line, command, [expected lines])] of a console block."""
    cmds = []
    body = block.lines
    i = 0
    while i < len(body):
        ln, text = body[i]
        if not text.startswith("$ "):
            if cmds:
                cmds[-1][2].append(text)
            elif text.strip():
                raise DocError("%s:%d: output before the first command" % (block.path, ln))
            i += 1
            continue
        cmd = text[2:]
        while cmd.endswith("\\") and i + 1 < len(body):
            i += 1
            nxt = body[i][1]
            cmd = cmd + "\n" + (nxt[2:] if nxt.startswith("> ") else nxt)
        cmds.append((ln, cmd, []))
        i += 1
    for _, _, out in cmds:
        while out and not out[-1].strip():
            out.pop()
    return cmds


def normalize(line, subs):
    for old, new in subs:
        line = line.replace(old, new)
    line = line.rstrip()
    lead = " " if line[:1].isspace() else ""
    line = NUM_RE.sub("N", line.strip())
    line = re.sub(r"\s+", " ", line)
    return lead + line


def expected_items(lines, subs):
    items = []
    for text in lines:
        if text.strip() == "...":
            if not items or items[-1] is not None:
                items.append(None)
            continue
        norm = normalize(text, subs)
        parts = norm.split("...")
        pat = ".*".join(re.escape(p) for p in parts)
        # a "..." between blanks may also stand for nothing: "a ... b" matches "a b"
        pat = pat.replace(r"\ .*\ ", r"(?:\ .*)?\ ")
        items.append((text, re.compile(pat + r"\Z")))
    return items


def match(items, actual):
    """True when the expected items match every actual (normalized) line."""
    memo = {}

    def m(i, j):
        key = (i, j)
        if key in memo:
            return memo[key]
        if i == len(items):
            r = j == len(actual)
        elif items[i] is None:
            r = any(m(i + 1, k) for k in range(j, len(actual) + 1))
        else:
            r = j < len(actual) and items[i][1].match(actual[j]) is not None and m(i + 1, j + 1)
        memo[key] = r
        return r

    return m(0, 0)


def first_mismatch(items, actual):
    """A hint: the first expected line that matches no actual line at or after the last match."""
    j = 0
    for it in items:
        if it is None:
            continue
        k = j
        while k < len(actual) and not it[1].match(actual[k]):
            k += 1
        if k == len(actual):
            return "no output line matches the document's line %r (normalized: %r)" % (
                it[0], it[1].pattern)
        j = k + 1
    return "the output has lines the document does not show (add them, or a '...' line)"


def machine_busy(seconds):
    """The fraction of all CPUs' time that was busy over the next seconds (/proc/stat)."""
    def read():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        idle = v[3] + (v[4] if len(v) > 4 else 0)
        return sum(v[:8]) - idle, sum(v[:8])
    b0, t0 = read()
    time.sleep(seconds)
    b1, t1 = read()
    return (b1 - b0) / (t1 - t0) if t1 > t0 else 0.0


class Shell:
    """One bash per document: its commands run there in order, as typed at a prompt (an
    export, a cd or a background job stays for the next command). No job control: every
    process it starts is in its process group, which is ended by its id at the end."""

    def __init__(self, cwd, env):
        self.token = "__DOCTEST_%d_%d__" % (os.getpid(), int(time.time() * 1000))
        self.p = subprocess.Popen(["bash", "--norc", "--noprofile"], cwd=cwd, env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, start_new_session=True)
        self.buf = b""
        self.block_pids = []  # the background jobs of the block being run

    def run(self, cmd, timeout, background=False):
        """(exit status, output) of cmd; None for the status when it ran past timeout."""
        if background:
            script = ("%s </dev/null >/dev/null 2>&1 &\nprintf '%s_BG %%d\\n' $!; sleep 0.3\n"
                      % (cmd, self.token))
        else:
            script = "{ %s\n} </dev/null 2>&1\n" % cmd
        script += "printf '\\n%s %%d\\n' $?\n" % self.token
        self.p.stdin.write(script.encode())
        self.p.stdin.flush()
        end = time.monotonic() + timeout
        pat = re.compile(rb"\n" + self.token.encode() + rb" (\d+)\n")
        fd = self.p.stdout.fileno()
        while True:
            for bg in re.finditer(rb"(?m)^" + self.token.encode() + rb"_BG (\d+)\n", self.buf):
                self.block_pids.append(int(bg.group(1)))
            self.buf = re.sub(rb"(?m)^" + self.token.encode() + rb"_BG \d+\n", b"", self.buf)
            m = pat.search(self.buf)
            if m:
                out, self.buf = self.buf[:m.start()], self.buf[m.end():]
                return int(m.group(1)), out.decode("utf-8", "replace")
            left = end - time.monotonic()
            if left <= 0:
                return None, self.buf.decode("utf-8", "replace")
            r, _, _ = select.select([fd], [], [], left)
            if r:
                data = os.read(fd, 65536)
                if not data:
                    return None, self.buf.decode("utf-8", "replace") + "\n(the shell exited)"
                self.buf += data

    def close(self):
        try:
            os.killpg(self.p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.p.pid, signal.SIGKILL)
            self.p.wait()
        # the group may outlive the shell (a background job): end what is left of it
        try:
            os.killpg(self.p.pid, signal.SIGTERM)
            time.sleep(0.2)
            os.killpg(self.p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class Runner:
    def __init__(self, args):
        self.args = args
        self.src = os.path.abspath(args.src)
        self.build = os.path.abspath(args.build)
        self.fakes = os.path.join(self.build, "tests", "fakes")
        self.bg = []  # carma-plant processes of the current document
        self.failures = 0
        self.ran = 0
        self.skipped = []
        self.synopses = 0
        self._host_measured = None
        self.bindir = tempfile.mkdtemp(prefix="carma-doctest-bin.")
        self._link(os.path.join(self.build, "carma"), os.path.join(self.bindir, "carma"))
        if os.path.isdir(self.fakes):
            for name in sorted(os.listdir(self.fakes)):
                p = os.path.join(self.fakes, name)
                if name.startswith("carma-") and os.access(p, os.X_OK) and os.path.isfile(p):
                    self._link(p, os.path.join(self.bindir, name))

    @staticmethod
    def _link(target, name):
        if not os.path.exists(target):
            raise DocError("%s not found (is it built?)" % target)
        os.symlink(target, name)

    def fail(self, where, msg):
        self.failures += 1
        print("FAIL %s: %s" % (where, msg))

    def host_measured(self):
        """The reason this machine is no VM (a measured channel), or ''."""
        if self._host_measured is None:
            p = subprocess.run([os.path.join(self.build, "carma"), "sensors", "--sample",
                                "10ms"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=60)
            found = [ln.split()[1] for ln in p.stdout.splitlines()
                     if len(ln.split()) > 4 and ln.split()[4] == "measured"]
            self._host_measured = ("this machine has measured channels (%s)" % ", ".join(found)
                                   if found else "")
        return self._host_measured

    def nvml_env(self, block, cwd):
        """The shell lines that set the fake NVML's environment of a block, and unset it."""
        nv = block.mark("fake-nvml")
        if nv is None:
            return "", ""
        scen = os.path.join(self.src, "tests", "fakes", "nvml", nv + ".scenario")
        if not os.path.isfile(scen):
            raise DocError("%s: no scenario %s" % (block.where(), scen))
        clients = os.path.join(cwd, "gpu-clients")
        shutil.rmtree(clients, ignore_errors=True)
        os.makedirs(clients)
        names = {"CARMA_NVML_LIBRARY": os.path.join(self.fakes, "libfake-nvml.so"),
                 "CARMA_FAKE_NVML_SCENARIO": scen, "CARMA_FAKE_NVML_CLIENTS": clients}
        return ("export " + " ".join("%s=%s" % (k, shlex.quote(v)) for k, v in names.items()),
                "unset " + " ".join(names))

    def start_plant(self, block, cwd, spec):
        words = spec.split()
        if len(words) != 2:
            raise DocError("%s: want <!-- doctest: plant FIXTURE DIR -->" % block.where())
        fixture, dest = words
        tree = os.path.join(cwd, dest)
        if os.path.exists(tree):
            return  # started by an earlier block
        shutil.copytree(os.path.join(self.src, "tests", "fixtures", fixture), tree,
                        symlinks=True)
        conf = os.path.join(self.src, "tests", "fakes", "plant", fixture + ".conf")
        if not os.path.isfile(conf):
            conf = tree + ".plant.conf"
            with open(conf, "w") as f:
                f.write("stat proc/stat\n")
        pidfile = tree + ".pid"
        p = subprocess.Popen([os.path.join(self.fakes, "carma-plant"), "--tree", tree,
                              "--config", conf, "--truth", tree + ".truth.csv", "--pidfile",
                              pidfile], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, cwd=cwd, start_new_session=True)
        self.bg.append(p)
        for _ in range(500):
            if os.path.exists(pidfile) and os.path.getsize(pidfile) > 0:
                return
            if p.poll() is not None:
                raise DocError("%s: carma-plant exited with %d" % (block.where(), p.returncode))
            time.sleep(0.01)
        raise DocError("%s: carma-plant did not start within 5 s" % block.where())

    def stop_background(self):
        for p in self.bg:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.bg = []

    def run_doc(self, path):
        rel = os.path.relpath(path, self.src)
        if rel.startswith(".."):
            rel = path
        with open(path, encoding="utf-8") as f:
            blocks = parse_blocks(rel, f.read())
        cwd = tempfile.mkdtemp(prefix="carma-doctest.")
        for name in os.listdir(self.src):
            if not name.startswith(".") and name != "build":
                os.symlink(os.path.join(self.src, name), os.path.join(cwd, name))
        os.symlink(self.build, os.path.join(cwd, "build"))
        subs = [(cwd + "/", ""), (cwd, "."), (os.path.realpath(cwd) + "/", ""),
                (self.src + "/", ""), (self.build + "/", "build/")]
        env = dict(os.environ)
        env["PATH"] = self.bindir + os.pathsep + env.get("PATH", "/usr/bin:/bin")
        for k in ("CARMA_NVML_LIBRARY", "CARMA_FAKE_NVML_SCENARIO", "CARMA_FAKE_NVML_CLIENTS"):
            env.pop(k, None)
        shell = None
        try:
            for b in blocks:
                if shell is None:
                    shell = Shell(cwd, env)
                if not self.run_block(b, cwd, subs, shell):
                    shell.close()
                    shell = None  # a command that hung: the next block gets a new shell
        finally:
            if shell:
                shell.close()
            self.stop_background()
            if self.args.keep:
                print("# %s: files kept in %s" % (rel, cwd))
            else:
                shutil.rmtree(cwd, ignore_errors=True)

    def run_block(self, b, cwd, subs, shell):
        """Runs a block; False when its shell cannot go on (a command ran past its time)."""
        skip = b.mark("skip")
        if b.mark("synopsis") is not None:
            self.synopses += 1
            return True
        if skip is not None:
            why = skip.strip()
            if why.startswith("(") and why.endswith(")"):
                why = why[1:-1].strip()
            self.skipped.append((b.where(), why or "no reason given"))
            return True
        if b.lang != "console":
            if is_command_block(b):
                self.fail(b.where(), "a block of commands that is neither ```console nor marked "
                          "(<!-- doctest: skip (why) --> or <!-- doctest: synopsis -->)")
            return True
        if b.mark("vm") is not None and self.host_measured():
            self.skipped.append((b.where(), "needs a machine without sensors: "
                                 + self.host_measured()))
            return True
        if b.mark("quiet") is not None:
            busy = machine_busy(1.0)
            if busy > 0.5:
                self.skipped.append((b.where(), "needs a quiet machine: other processes kept "
                                     "%.0f%% of the CPUs busy" % (100 * busy)))
                return True
        plant = b.mark("plant")
        if plant is not None:
            self.start_plant(b, cwd, plant)
        want_rc = int(b.mark("exit") or 0)
        cmds = console_commands(b)
        if not cmds:
            raise DocError("%s: a console block without a '$ ' command" % b.where())
        tries = int(b.mark("retry") or 1)
        before = set(os.listdir(cwd))
        for attempt in range(1, tries + 1):
            fails, alive = self.run_commands(b, cwd, subs, shell, cmds, want_rc)
            if not fails or not alive or attempt == tries:
                break
            print("# %s: try %d of %d failed (%s), again from a clean directory" % (
                b.where(), attempt, tries, fails[0][1].split("\n")[0]))
            for pid in shell.block_pids:
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
            time.sleep(0.2)
            for name in set(os.listdir(cwd)) - before:
                p = os.path.join(cwd, name)
                if os.path.isdir(p) and not os.path.islink(p):
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    os.unlink(p)
        for where, msg in fails:
            self.fail(where, msg)
        self.ran += 1
        if not fails:
            print("ok   %s (%d command%s)" % (b.where(), len(cmds), "" if len(cmds) == 1 else "s"))
        return alive

    def run_commands(self, b, cwd, subs, shell, cmds, want_rc):
        """([(where, message)] of the failures, whether the shell can go on)."""
        setenv, unsetenv = self.nvml_env(b, cwd)
        if setenv:
            shell.run(setenv, 10)
        shell.block_pids = []
        fails = []
        alive = True
        for ln, cmd, expected in cmds:
            where = "%s:%d" % (b.path, ln)
            bare = re.sub(r"\s+#[^'\"]*$", "", cmd).rstrip()
            background = bare.endswith("&") and not bare.endswith("&&")
            t0 = time.monotonic()
            rc, out = shell.run(bare[:-1] if background else cmd, self.args.timeout, background)
            secs = time.monotonic() - t0
            lines = out.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            if self.args.show:
                print("# %s (%.1f s, exit %s)\n$ %s" % (where, secs, rc, cmd))
                print("\n".join(lines))
            if rc is None:
                fails.append((where, "'%s' ran past %d s; its output:\n%s" % (
                    cmd, self.args.timeout, "\n".join("    " + x for x in lines))))
                alive = False
                break
            if rc != want_rc:
                fails.append((where, "'%s' exited with status %d, not %d; its output:\n%s" % (
                    cmd, rc, want_rc, "\n".join("    " + x for x in lines))))
                continue
            if not expected or background:
                continue
            items = expected_items(expected, subs)
            actual = [normalize(x, subs) for x in lines]
            while actual and not actual[0]:
                actual.pop(0)
            while actual and not actual[-1]:
                actual.pop()
            if not match(items, actual):
                fails.append((where, "the output of '%s' does not have the document's shape: "
                              "%s\n  document:\n%s\n  output:\n%s" % (
                                  cmd, first_mismatch(items, actual),
                                  "\n".join("    " + x for x in expected),
                                  "\n".join("    " + x for x in lines))))
        if alive and unsetenv:
            shell.run(unsetenv, 10)
        return fails, alive


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="the meson build directory")
    ap.add_argument("--src", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    ap.add_argument("--show", action="store_true", help="print every command's output")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directories")
    ap.add_argument("--timeout", type=int, default=90, help="seconds per command (90)")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    args.src = os.path.abspath(args.src)
    try:
        r = Runner(args)
    except DocError as e:
        print("doctest: %s" % e, file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        for f in args.files:
            try:
                r.run_doc(os.path.abspath(f))
            except DocError as e:
                r.fail(os.path.relpath(f, args.src), str(e))
    finally:
        shutil.rmtree(r.bindir, ignore_errors=True)
    for where, why in r.skipped:
        print("skip %s: %s" % (where, why))
    print("%d block%s run, %d failed, %d skipped, %d synopses" % (
        r.ran, "" if r.ran == 1 else "s", r.failures, len(r.skipped), r.synopses))
    return 1 if r.failures else 0


if __name__ == "__main__":
    sys.exit(main())
