#!/usr/bin/env python3
"""Self-test of the Curator driver (harness/drivers/curator/driver) against zk-mock.

Starts a zk-mock server and the driver, plays a short exchange of the protocol of
harness/DRIVERS.md and checks every reply: the kinds exclusive, read-write,
semaphore and reentrant; the acquire modes block, timeout and try; touch; errors
and their classes; malformed requests; crash and close; and faults injected through
zk-mock's admin interface (a holder's session expired, a waiter's session expired).
What Curator does after a session expiry is printed, not only checked.

    python3 harness/drivers/curator/selftest.py [--zk-mock PATH] [--driver CMD] [-v]

Standard library only. The zk-mock binary defaults to target/debug/zk-mock (it is
waited for, every 30 s, if it is not there yet: it may still be building).
Exit status 0 when every check passed.
"""

import argparse
import json
import os
import queue
import shlex
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
SESSION_MS = 2000

failures = []
verbose = False


def say(*args):
    print(*args, flush=True)


def check(cond, what):
    if cond:
        say(f"  ok    {what}")
    else:
        say(f"  FAIL  {what}")
        failures.append(what)
    return cond


# --------------------------------------------------------------------- zk-mock


class ZkMock:
    """A zk-mock server on free ports (it picks them and announces them on stdout)."""

    def __init__(self, binary):
        self.proc = subprocess.Popen(
            [binary, "--port", "0", "--admin-port", "0", "--tick-time", "500"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.connect = self.admin = None
        deadline = time.time() + 20
        while (self.connect is None or self.admin is None) and time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            if line.startswith("zk-mock listening on "):
                self.connect = line.split()[3]
            elif line.startswith("zk-mock admin interface on "):
                self.admin = line.split()[4]
        if self.connect is None or self.admin is None:
            self.stop()
            raise SystemExit("zk-mock did not announce its ports")
        # keep draining its stdout so it never blocks
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()

    def http(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.admin + path, data=data, method=method,
                                     headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            text = r.read().decode()
            return json.loads(text) if text else None

    def sessions(self):
        got = self.http("GET", "/sessions")
        if isinstance(got, dict):  # tolerate {"sessions": [...]}
            got = got.get("sessions", [])
        return {int(s["id"]) for s in got}

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()


# ---------------------------------------------------------------------- driver


class Driver:
    """The driver process: requests out, replies and events in, every line checked."""

    def __init__(self, cmd):
        self.t0 = time.time()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1)
        self.next_id = 1
        self.lines = queue.Queue()
        self.log = []          # every message in arrival order: replies and events
        self.replies = {}
        self.stderr_tail = []
        self.cond = threading.Condition()
        self.bad_lines = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
                if not isinstance(msg, dict):
                    raise ValueError("not an object")
            except ValueError:
                self.bad_lines.append(line)
                continue
            if verbose:
                say(f"    < {line.rstrip()}")
            with self.cond:
                msg["_t"] = time.time()
                self.log.append(msg)
                if "id" in msg:
                    if msg["id"] in self.replies:
                        self.bad_lines.append("second reply: " + line)
                    self.replies[msg["id"]] = msg
                self.cond.notify_all()

    def _read_err(self):
        for line in self.proc.stderr:
            self.stderr_tail = (self.stderr_tail + [line.rstrip()])[-200:]
            if verbose:
                say(f"    ! {line.rstrip()}")

    def raw(self, line):
        if verbose:
            say(f"    > {line}")
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def send(self, op, **fields):
        rid = self.next_id
        self.next_id += 1
        self.raw(json.dumps({"id": rid, "op": op, **fields}))
        return rid

    def reply(self, rid, timeout=15):
        with self.cond:
            self.cond.wait_for(lambda: rid in self.replies, timeout)
            return self.replies.get(rid)

    def call(self, op, timeout=15, **fields):
        return self.reply(self.send(op, **fields), timeout)

    def quiet(self, rid, secs):
        """True when request rid got no reply within secs."""
        time.sleep(secs)
        with self.cond:
            return rid not in self.replies

    def events(self, client=None, since=0.0):
        with self.cond:
            return [m for m in self.log if "event" in m and m["_t"] >= since
                    and (client is None or m.get("client") == client)]

    def wait_event(self, pred, timeout=15, since=0.0):
        deadline = time.time() + timeout
        with self.cond:
            while True:
                for m in self.log:
                    if "event" in m and m["_t"] >= since and pred(m):
                        return m
                left = deadline - time.time()
                if left <= 0:
                    return None
                self.cond.wait(left)

    def index(self, msg):
        with self.cond:
            return next(i for i, m in enumerate(self.log) if m is msg)


def ok(reply):
    return reply is not None and reply.get("ok") is True


def err(reply, cls, code=None):
    if reply is None or reply.get("ok") is not False:
        return False
    e = reply.get("error", {})
    return e.get("class") == cls and (code is None or e.get("code") == code)


def states(d, client, since=0.0):
    return [(e["state"], e.get("session")) for e in d.events(client, since) if e["event"] == "state"]


# ----------------------------------------------------------------------- steps


def open_client(d, name, kind, path):
    rid = d.send("open", client=name, connect=d.connect, session_timeout_ms=SESSION_MS,
                 lock={"kind": kind, "path": path})
    r = d.reply(rid, 30)
    check(ok(r) and isinstance(r.get("session"), int) and r["session"] != 0,
          f"open {name} ({kind}): session {r and r.get('session')}")
    ev = d.wait_event(lambda m: m.get("client") == name and m.get("state") == "connected", 5)
    check(ev is not None and ev.get("session") == (r or {}).get("session")
          and d.index(ev) < d.index(r), f"{name}: `connected` with its session, before the open reply")
    return r.get("session") if r else None


def test_exclusive(d, zk):
    say("exclusive (InterProcessMutex)")
    open_client(d, "a", "exclusive", "/selftest/ex/lock")
    open_client(d, "b", "exclusive", "/selftest/ex/lock")
    sc = open_client(d, "c", "exclusive", "/selftest/ex/lock")

    r = d.call("acquire", client="a", role="exclusive", mode="block")
    check(ok(r) and r.get("acquired") is True, "a acquires")
    check(str(r.get("node", "")).startswith("/selftest/ex/lock/"), f"a's node: {r.get('node')}")
    b_acq = d.send("acquire", client="b", role="exclusive", mode="block")
    check(d.quiet(b_acq, 0.5), "b's blocking acquire waits while a holds")

    check(ok(d.call("touch", client="a", path="/selftest.a.enter", data="0x1")), "a touches")
    r = d.call("touch", client="a", path="/selftest.a.enter", data="0x1")
    check(err(r, "definite", "NodeExists"), f"touching the same path again: definite NodeExists ({r})")
    r = d.call("touch", client="a", path="/no/such/parent/x", data="")
    check(err(r, "definite", "NoNode"), "touch under a missing parent: definite NoNode")

    r = d.call("acquire", client="c", role="exclusive", mode="try")
    check(ok(r) and r.get("acquired") is False, "c's try-acquire while a holds: acquired false")
    # What acquire(0, ms) did at the server, from zk-mock's recorder.
    reqs = zk.http("GET", f"/recorder/requests?session={sc}")
    if isinstance(reqs, dict):
        reqs = reqs.get("requests", [])
    writes = [(q["op"], q.get("path"), q["err"]) for q in reqs if q["op"] in ("create", "create2", "delete")]
    say(f"    observed: c's try-acquire at the server: {writes}")
    check(len(writes) == 2 and writes[0][0].startswith("create") and writes[1][0] == "delete"
          and writes[1][1].startswith(writes[0][1]),  # sequential: the create names the prefix
          "Curator's try (acquire(0, ms)) creates a lock node and deletes it again")
    t = time.time()
    r = d.call("acquire", client="c", role="exclusive", mode="timeout", timeout_ms=300)
    took = time.time() - t
    check(ok(r) and r.get("acquired") is False and took >= 0.3,
          f"c's 300 ms timeout-acquire while a holds: acquired false after {took:.2f} s")

    check(ok(d.call("release", client="a")), "a releases")
    r = d.reply(b_acq, 10)
    check(ok(r) and r.get("acquired") is True, "b's blocked acquire returns acquired true")
    r = d.call("acquire", client="c", role="exclusive", mode="try")
    check(ok(r) and r.get("acquired") is False, "c's try-acquire while b holds: acquired false")
    check(ok(d.call("touch", client="b", path="/selftest.b.enter", data="0x2")), "b touches")
    check(ok(d.call("release", client="b")), "b releases")
    r = d.call("acquire", client="c", role="exclusive", mode="try")
    check(ok(r) and r.get("acquired") is True, "c's try-acquire on a free lock: acquired true")
    check(ok(d.call("release", client="c")), "c releases")

    r = d.call("release", client="a")
    check(err(r, "definite", "IllegalMonitorStateException"),
          f"a releases what it does not hold: definite IllegalMonitorStateException ({r and r.get('error')})")
    r = d.call("acquire", client="a", role="read", mode="block")
    check(err(r, "definite"), "role read on an exclusive lock: definite error")
    for c in "abc":
        check(ok(d.call("close", client=c)), f"close {c}")


def test_read_write(d):
    say("read-write (InterProcessReadWriteLock)")
    for c in ("r1", "r2", "w"):
        open_client(d, c, "read-write", "/selftest/rw/lock")
    r = d.call("acquire", client="r1", role="read", mode="block")
    check(ok(r) and r.get("acquired"), "r1 reads")
    r = d.call("acquire", client="r2", role="read", mode="block")
    check(ok(r) and r.get("acquired"), "r2 reads at the same time")
    r = d.call("acquire", client="w", role="write", mode="try")
    check(ok(r) and r.get("acquired") is False, "w's try-write while readers hold: acquired false")
    w_acq = d.send("acquire", client="w", role="write", mode="block")
    check(d.quiet(w_acq, 0.5), "w's blocking write waits for the readers")
    check(ok(d.call("release", client="r1")), "r1 releases")
    check(d.quiet(w_acq, 0.3), "w still waits while r2 reads")
    check(ok(d.call("release", client="r2")), "r2 releases")
    r = d.reply(w_acq, 10)
    check(ok(r) and r.get("acquired") is True, "w writes once both readers left")
    r = d.call("acquire", client="r1", role="read", mode="try")
    check(ok(r) and r.get("acquired") is False, "r1's try-read while w writes: acquired false")
    check(ok(d.call("release", client="w")), "w releases (the write half it acquired)")
    for c in ("r1", "r2", "w"):
        d.call("close", client=c)


def test_semaphore(d):
    say("semaphore (InterProcessSemaphoreMutex)")
    open_client(d, "s1", "semaphore", "/selftest/sem/lock")
    open_client(d, "s2", "semaphore", "/selftest/sem/lock")
    r = d.call("acquire", client="s1", role="exclusive", mode="block")
    check(ok(r) and r.get("acquired"), f"s1 takes the lease (node {r and r.get('node')})")
    r = d.call("acquire", client="s2", role="exclusive", mode="try")
    check(ok(r) and r.get("acquired") is False, "s2's try while s1 holds: acquired false")
    s2_acq = d.send("acquire", client="s2", role="exclusive", mode="block")
    check(d.quiet(s2_acq, 0.5), "s2's blocking acquire waits")
    check(ok(d.call("release", client="s1")), "s1 releases")
    r = d.reply(s2_acq, 10)
    check(ok(r) and r.get("acquired") is True, "s2 gets the lease")
    check(ok(d.call("release", client="s2")), "s2 releases")
    r = d.call("release", client="s2")
    check(err(r, "definite"), f"s2 releases again: definite ({r and r.get('error')})")
    for c in ("s1", "s2"):
        d.call("close", client=c)


def test_reentrant(d):
    say("reentrant (InterProcessMutex, re-entered)")
    open_client(d, "e1", "reentrant", "/selftest/re/lock")
    open_client(d, "e2", "reentrant", "/selftest/re/lock")
    r1 = d.call("acquire", client="e1", role="exclusive", mode="block")
    t = time.time()
    r2 = d.call("acquire", client="e1", role="exclusive", mode="block", timeout=5)
    check(ok(r1) and ok(r2) and r2.get("acquired") and time.time() - t < 1,
          "e1 acquires, then re-enters at once")
    check(r1.get("node") == r2.get("node"), "the re-entry names the same node")
    check(ok(d.call("release", client="e1")), "e1 releases once")
    r = d.call("acquire", client="e2", role="exclusive", mode="try")
    check(ok(r) and r.get("acquired") is False, "e2's try: still held after one release")
    check(ok(d.call("release", client="e1")), "e1 releases twice")
    r = d.call("acquire", client="e2", role="exclusive", mode="try")
    check(ok(r) and r.get("acquired") is True, "e2's try: free after the second release")
    check(ok(d.call("release", client="e2")), "e2 releases")
    for c in ("e1", "e2"):
        d.call("close", client=c)


def test_malformed(d):
    say("malformed requests")
    since = time.time()
    d.raw("this is not json")
    ev = d.wait_event(lambda m: m.get("event") == "log" and "malformed" in m.get("message", ""), 5, since)
    check(ev is not None, "a line that is not JSON: a log event, and the driver goes on")
    d.raw('{"id": 9001, "op": "acquire", "client": ')
    check(err(d.reply(9001, 5), "definite", "BadRequest"), "broken JSON with a visible id: a definite BadRequest")
    d.raw('{"id": 9002, "op": "frobnicate"}')
    check(err(d.reply(9002, 5), "definite", "UnknownOp"), "an unknown op: definite UnknownOp")
    d.raw('{"id": 9003, "op": "acquire", "client": "nobody", "role": "exclusive", "mode": "block"}')
    check(err(d.reply(9003, 5), "definite", "UnknownClient"), "an unknown client: definite UnknownClient")
    d.raw('{"id": 9004, "op": "init", "protocol": 99}')
    check(err(d.reply(9004, 5), "definite", "UnsupportedProtocol"), "protocol 99: definite UnsupportedProtocol")
    r = d.call("open", client="bad", connect=d.connect, session_timeout_ms=SESSION_MS,
               lock={"kind": "exclusive", "path": "/x", "recipe": "herd"})
    check(err(r, "definite", "UnsupportedRecipe"), "a zk-lock recipe: definite UnsupportedRecipe")


def test_expiry(d, zk):
    say("fault: a holder's and a waiter's sessions expired (admin POST /sessions/{id}/expire)")
    sx = open_client(d, "x", "exclusive", "/selftest/exp/lock")
    open_client(d, "y", "exclusive", "/selftest/exp/lock")
    sz = open_client(d, "z", "exclusive", "/selftest/exp/lock")
    r = d.call("acquire", client="x", role="exclusive", mode="block")
    check(ok(r) and r.get("acquired"), "x holds")
    y_acq = d.send("acquire", client="y", role="exclusive", mode="block")
    check(d.quiet(y_acq, 0.5), "y waits")

    since = time.time()
    zk.http("POST", f"/sessions/{sx}/expire")
    lost = d.wait_event(lambda m: m.get("client") == "x" and m.get("state") == "lost", 10, since)
    check(lost is not None and lost.get("session") == sx, f"x hears `lost` (session {sx})")
    new = d.wait_event(lambda m: m.get("client") == "x" and m.get("state") == "connected", 10, since)
    check(new is not None and new.get("session") not in (None, sx),
          "x then reports `connected` with a new session (Curator's RECONNECTED after LOST)")
    r = d.reply(y_acq, 10)
    check(ok(r) and r.get("acquired") is True, "y acquires once x's session (and node) are gone")
    time.sleep(0.3)
    say(f"    observed: x's states after the expiry: {states(d, 'x', since)}")
    r = d.call("touch", client="x", path="/selftest.x.after-expiry", data="0x9")
    say(f"    observed: x touches after losing its session: {r}")
    r = d.call("release", client="x")
    say(f"    observed: x releases the lock its lost session held: {r}")
    check(r is not None, "x's release after expiry answers")

    # A waiter's session expires while it is blocked in acquire().
    z_acq = d.send("acquire", client="z", role="exclusive", mode="block")
    check(d.quiet(z_acq, 0.5), "z waits behind y")
    since = time.time()
    zk.http("POST", f"/sessions/{sz}/expire")
    lost = d.wait_event(lambda m: m.get("client") == "z" and m.get("state") == "lost", 10, since)
    check(lost is not None, "z (waiting) hears `lost`")
    got_quick = not d.quiet(z_acq, 2.0)
    r = d.replies.get(z_acq)
    say(f"    observed: z's blocked acquire after its session expired: "
        f"{r if got_quick else 'still blocked 2 s later'}")
    say(f"    observed: z's states: {states(d, 'z', since)}")
    check(ok(d.call("release", client="y")), "y releases")
    if not got_quick:
        r = d.reply(z_acq, 10)
        say(f"    observed: z's acquire once y released: {r}")
    if ok(r) and r.get("acquired"):
        check(ok(d.call("release", client="z")), "z releases")
    for c in ("x", "y", "z"):
        check(ok(d.call("close", client=c)), f"close {c}")


def test_crash_and_close(d, zk):
    say("crash and close")
    sk = open_client(d, "k", "exclusive", "/selftest/crash/lock")
    sw = open_client(d, "kw", "exclusive", "/selftest/crash/lock")
    r = d.call("acquire", client="k", role="exclusive", mode="block")
    check(ok(r) and r.get("acquired"), "k holds")
    kw_acq = d.send("acquire", client="kw", role="exclusive", mode="block")
    check(d.quiet(kw_acq, 0.3), "kw waits")

    # As the harness does: silence the connection at the server, then crash.
    zk.http("POST", f"/sessions/{sk}/stall")
    t = time.time()
    r = d.call("crash", client="k", timeout=5)
    check(ok(r) and time.time() - t < 1.0, f"crash answers at once ({time.time() - t:.3f} s)")
    time.sleep(0.3)
    check(sk in zk.sessions(), "the crashed client's session lives on at the server (no closeSession)")
    r = d.reply(kw_acq, SESSION_MS / 1000 * 4 + 5)
    check(ok(r) and r.get("acquired") is True,
          "kw acquires once the crashed session expired")
    check(sk not in zk.sessions(), "the crashed session is gone (expired)")
    check(not d.events("k", t), f"no event for k after the crash {states(d, 'k', t)}")
    d.call("release", client="kw")

    # close while a request is still outstanding
    r = d.call("acquire", client="kw", role="exclusive", mode="block")
    sv = open_client(d, "kv", "exclusive", "/selftest/crash/lock")
    kv_acq = d.send("acquire", client="kv", role="exclusive", mode="block")
    check(d.quiet(kv_acq, 0.3), "kv waits behind kw")
    close_id = d.send("close", client="kv")
    r_close = d.reply(close_id, 10)
    r_acq = d.reply(kv_acq, 1)
    check(ok(r_close), "close of kv, with an acquire outstanding, answers")
    check(r_acq is not None and d.index(r_acq) < d.index(r_close),
          f"kv's outstanding acquire was answered before the close: {r_acq and r_acq.get('error')}")
    time.sleep(0.2)
    check(sv not in zk.sessions(), "kv's session was closed at the server (closeSession)")
    check(ok(d.call("release", client="kw")), "kw releases")
    check(ok(d.call("close", client="kw")), "close kw")
    check(err(d.call("release", client="kw"), "definite", "UnknownClient"), "a closed client is unknown")


def proc_status(pid):
    """(VmRSS in MiB, threads) of a process, from /proc."""
    rss = threads = 0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) / 1024
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
    except OSError:
        pass
    return rss, threads


def stampede(d, n, session_ms):
    """n clients open at once, then all acquire one lock; each touches and releases as
    soon as it holds. Prints times, the driver's peak RSS and thread count."""
    say(f"stampede: {n} clients, session timeout {session_ms} ms")
    peak = {"rss": 0.0, "threads": 0}
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            rss, threads = proc_status(d.proc.pid)
            peak["rss"] = max(peak["rss"], rss)
            peak["threads"] = max(peak["threads"], threads)
            time.sleep(0.2)

    threading.Thread(target=sample, daemon=True).start()
    names = [f"s.{i}" for i in range(n)]
    t0 = time.time()
    ids = {c: d.send("open", client=c, connect=d.connect, session_timeout_ms=session_ms,
                     lock={"kind": "exclusive", "path": "/stampede/lock"}) for c in names}
    opened = sum(ok(d.reply(rid, 300)) for rid in ids.values())
    t_open = time.time() - t0
    rss_open, threads_open = proc_status(d.proc.pid)
    check(opened == n, f"{opened}/{n} opened in {t_open:.1f} s "
          f"(driver RSS {rss_open:.0f} MiB, {threads_open} threads)")

    t1 = time.time()
    pending = {d.send("acquire", client=c, role="exclusive", mode="block"): c for c in names}
    granted = 0
    deadline = time.time() + 600
    while pending and time.time() < deadline:
        with d.cond:
            d.cond.wait_for(lambda: any(i in d.replies for i in pending), deadline - time.time())
            done = [i for i in pending if i in d.replies]
        for i in done:
            c = pending.pop(i)
            if ok(d.replies[i]) and d.replies[i].get("acquired"):
                granted += 1
                d.call("touch", client=c, path=f"/stampede.{c}", data=c)
                d.call("release", client=c)
    t_acq = time.time() - t1
    check(granted == n, f"{granted}/{n} acquired, touched and released in turn in {t_acq:.1f} s "
          f"({1000 * t_acq / max(granted, 1):.1f} ms per hand-off)")
    t2 = time.time()
    closes = [d.send("close", client=c) for c in names]
    closed = sum(ok(d.reply(rid, 120)) for rid in closes)
    stop.set()
    check(closed == n, f"{closed}/{n} closed in {time.time() - t2:.1f} s")
    say(f"    driver peak: RSS {peak['rss']:.0f} MiB, {peak['threads']} threads")


def find_zk_mock(path):
    while not os.path.exists(path):
        say(f"waiting for {path} (polling every 30 s; it is being built)")
        time.sleep(30)
    return path


def main():
    global verbose
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zk-mock", default=os.path.join(
        os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target")), "debug", "zk-mock"))
    ap.add_argument("--driver", default=os.path.join(HERE, "driver"),
                    help="the driver's command line")
    ap.add_argument("-v", "--verbose", action="store_true", help="show every line")
    ap.add_argument("--stampede", type=int, metavar="N",
                    help="instead of the checks: N clients contend for one lock (load test)")
    ap.add_argument("--session-ms", type=int, default=10000, help="session timeout of --stampede")
    args = ap.parse_args()
    verbose = args.verbose

    zk = ZkMock(find_zk_mock(args.zk_mock))
    d = Driver(shlex.split(args.driver))
    d.connect = zk.connect
    try:
        say(f"zk-mock on {zk.connect} (admin {zk.admin})")
        r = d.call("init", protocol=1, timeout=60)
        check(ok(r) and r.get("implementation", "").startswith("curator "),
              f"init: {r and r.get('implementation')}, {time.time() - d.t0:.2f} s after the start")
        check(set((r or {}).get("kinds", {})) == {"exclusive", "read-write", "semaphore", "reentrant"},
              "init lists the kinds exclusive, read-write, semaphore, reentrant")

        if args.stampede:
            stampede(d, args.stampede, args.session_ms)
        else:
            test_exclusive(d, zk)
            test_read_write(d)
            test_semaphore(d)
            test_reentrant(d)
            test_malformed(d)
            test_expiry(d, zk)
            test_crash_and_close(d, zk)

        say("shutdown")
        r = d.call("shutdown", timeout=20)
        check(ok(r), "shutdown answers")
        try:
            rc = d.proc.wait(10)
        except subprocess.TimeoutExpired:
            rc = None
        check(rc == 0, f"the driver exits 0 after shutdown ({rc})")
        check(not d.bad_lines, f"every stdout line was one JSON object, every id answered once {d.bad_lines[:3]}")
    finally:
        if d.proc.poll() is None:
            d.proc.kill()
        zk.stop()
    if failures:
        say(f"\n{len(failures)} checks FAILED:")
        for f in failures:
            say(f"  - {f}")
        say("driver stderr, last lines:")
        for line in d.stderr_tail[-30:]:
            say(f"  | {line}")
        return 1
    say("\nall checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
