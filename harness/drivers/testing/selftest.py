#!/usr/bin/env python3
"""Self-test of a harness driver (harness/DRIVERS.md) against a real zk-mock.

Starts target/debug/zk-mock (waiting for it to be built), starts the driver
command and plays a short exchange through the driver protocol, asserting the
replies, the events and what the server holds (through zk-mock's admin API):

    python3 harness/drivers/testing/selftest.py python3 harness/drivers/kazoo/driver.py
    python3 harness/drivers/testing/selftest.py 'python3 harness/drivers/skeleton.py'
    python3 harness/drivers/testing/selftest.py --planted-bug \\
        python3 harness/drivers/testing/release_ignores_connection_loss.py

State events are checked only for a driver that sends them (one that answers
`open` after a `connected` event). `--planted-bug` expects the driver's
release to leave its lock node behind when the delete's connection drops.
Exits 0 when every check passed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[3]
TICK_MS = 500  # zk-mock's tick (default): session timeouts from 1 s to 10 s
SESSION_MS = 4000  # the clients' session timeout
CRASH_SESSION_MS = 2000  # the crashed clients' (they must expire quickly)


class Failure(Exception):
    pass


class Skipped(Exception):
    pass


def check(cond: Any, what: str) -> None:
    if not cond:
        raise Failure(what)


# ---- zk-mock -------------------------------------------------------------


class ZkMock:
    """A zk-mock process with its admin interface."""

    def __init__(self, binary: Path, tick_ms: int = TICK_MS) -> None:
        self.proc = subprocess.Popen(
            [str(binary), "--port", "0", "--admin-port", "0", "--tick-time", str(tick_ms)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        # It prints its addresses once it listens (ports 0: no race for a port).
        self.connect = self.admin = ""
        deadline = time.monotonic() + 20
        while not (self.connect and self.admin):
            line = self.proc.stdout.readline()
            if not line or time.monotonic() > deadline:
                raise Failure(f"zk-mock did not start (exit code {self.proc.poll()})")
            if m := re.match(r"zk-mock listening on (\S+)", line):
                self.connect = m.group(1)
            elif m := re.match(r"zk-mock admin interface on (\S+)", line):
                self.admin = m.group(1)

    def http(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.admin + path, data=data, method=method)
        if data is not None:
            req.add_header("content-type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                text = r.read()
        except urllib.error.HTTPError as e:
            raise Failure(f"admin {method} {path}: {e.code} {e.read().decode(errors='replace')}") from None
        except OSError as e:  # URLError, timeouts
            raise Failure(f"admin {method} {path}: {e}") from None
        return json.loads(text) if text else None

    def sessions(self) -> dict[int, dict[str, Any]]:
        return {s["id"]: s for s in self.http("GET", "/sessions")}

    def tree(self) -> dict[str, Any]:
        return self.http("GET", "/snapshot")["tree"]

    def children(self, path: str) -> dict[str, Any]:
        """The nodes right under `path`, by full path."""
        prefix = path.rstrip("/") + "/"
        return {p: n for p, n in self.tree().items() if p.startswith(prefix) and "/" not in p[len(prefix):]}

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# ---- the driver ----------------------------------------------------------


class Driver:
    """A driver process: sends requests, collects replies and events, and
    records every breach of the protocol it sees."""

    def __init__(self, cmd: list[str]) -> None:
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, bufsize=0
        )
        self.ids = itertools.count(1)
        self.cond = threading.Condition()
        self.sent: dict[int, dict[str, Any]] = {}
        self.replies: dict[int, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self.violations: list[str] = []
        self.clients: set[str] = set()  # every client name ever opened
        self.crashed: set[str] = set()
        self.silenced: set[int] = set()  # requests that must never be answered
        self.run = 0  # the `run` of the last reset (events must carry a run after one)
        self.before_reset: set[int] = set()  # requests sent before the last reset
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            try:
                msg = json.loads(line)
                check(isinstance(msg, dict), "not an object")
            except (ValueError, Failure) as e:
                self._violation(f"stdout line is not a JSON object ({e}): {line!r}")
                continue
            with self.cond:
                if "event" in msg:
                    if msg.get("client") not in self.clients and msg.get("client") is not None:
                        self._violation(f"event for an unknown client: {line}")
                    if msg.get("client") in self.crashed and msg["event"] == "state":
                        self._violation(f"state event for a crashed client: {line}")
                    run = msg.get("run")
                    if self.run and msg["event"] != "log" and type(run) is not int:
                        self._violation(f"event without an integer run after a reset: {line}")
                    elif type(run) is int and run > self.run:
                        self._violation(f"event of run {run}, which has not started: {line}")
                    self.events.append({**msg, "_at": time.monotonic()})
                elif type(msg.get("id")) is int:
                    rid = msg["id"]
                    if rid in self.before_reset and rid not in self.replies:
                        pass  # a request of the run a reset ended: its reply may come or not
                    elif rid not in self.sent:
                        self._violation(f"reply to an unknown id: {line}")
                    elif rid in self.replies:
                        self._violation(f"second reply: {line}")
                    elif rid in self.silenced:
                        self._violation(f"reply to a request of a crashed client: {line}")
                    elif not isinstance(msg.get("ok"), bool):
                        self._violation(f"reply without a boolean ok: {line}")
                    elif not msg["ok"] and not valid_error(msg.get("error")):
                        self._violation(f"malformed error reply: {line}")
                    self.replies[rid] = msg
                else:
                    self._violation(f"neither a reply nor an event: {line}")
                self.cond.notify_all()

    def _violation(self, what: str) -> None:
        self.violations.append(what)

    # requests

    def send(self, op: str, **fields: Any) -> int:
        rid = next(self.ids)
        msg = {"id": rid, "op": op, **fields}
        with self.cond:
            self.sent[rid] = msg
            if op == "open":
                self.clients.add(fields["client"])
        self.write(json.dumps(msg))
        return rid

    def write(self, line: str) -> None:
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def reply(self, rid: int, timeout: float = 10) -> dict[str, Any]:
        with self.cond:
            if not self.cond.wait_for(lambda: rid in self.replies or self.proc.poll() is not None, timeout):
                raise Failure(f"no reply to {self.sent[rid]} within {timeout}s")
            if rid not in self.replies:
                raise Failure(f"the driver exited (code {self.proc.returncode}) before answering {self.sent[rid]}")
            return self.replies[rid]

    def call(self, op: str, timeout: float = 10, **fields: Any) -> dict[str, Any]:
        """A request that must succeed; returns its reply."""
        r = self.reply(self.send(op, **fields), timeout)
        check(r["ok"], f"{op} {fields} failed: {r}")
        return r

    def fails(self, op: str, cls: str | None = None, timeout: float = 10, **fields: Any) -> dict[str, Any]:
        """A request that must fail (with error class `cls`, if given); returns the error."""
        r = self.reply(self.send(op, **fields), timeout)
        check(not r["ok"], f"{op} {fields} should have failed: {r}")
        check(cls is None or r["error"]["class"] == cls, f"{op} {fields}: expected a {cls} error: {r}")
        return r["error"]

    def pending(self, rid: int, seconds: float) -> None:
        """Checks that request `rid` stays unanswered for `seconds`."""
        with self.cond:
            self.cond.wait_for(lambda: rid in self.replies, seconds)
            check(rid not in self.replies, f"{self.sent[rid]} should still wait, got {self.replies.get(rid)}")

    def event(self, match: Callable[[dict[str, Any]], bool], what: str, since: int = 0, timeout: float = 10) -> dict:
        """The first event from index `since` on that `match`es, waiting for it."""
        def found() -> dict | None:
            return next((e for e in self.events[since:] if match(e)), None)

        with self.cond:
            self.cond.wait_for(lambda: found() is not None, timeout)
            ev = found()
        check(ev is not None, f"no {what} event within {timeout}s; events: {self.events[since:]}")
        return ev

    def states(self, client: str, since: int = 0) -> list[str]:
        with self.cond:
            return [e["state"] for e in self.events[since:] if e.get("event") == "state" and e.get("client") == client]

    def mark(self) -> int:
        with self.cond:
            return len(self.events)

    def stderr_tail(self, lines: int = 30) -> str:
        self.stderr.seek(0)
        return "".join(self.stderr.readlines()[-lines:])

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def valid_error(err: Any) -> bool:
    return (
        isinstance(err, dict)
        and err.get("class") in ("definite", "indefinite")
        and isinstance(err.get("code"), str)
        and isinstance(err.get("message"), str)
    )


# ---- the exchange --------------------------------------------------------


class SelfTest:
    def __init__(self, zk: ZkMock, drv: Driver, planted_bug: bool) -> None:
        self.zk, self.drv, self.planted_bug = zk, drv, planted_bug
        self.kinds: dict[str, str] = {}
        self.reuse = False  # init said `reuse`
        self.sessions: dict[str, int] = {}
        self.eventful = False  # whether the driver sends state events
        self.notes: list[str] = []

    def open(self, client: str, path: str, kind: str = "exclusive", timeout_ms: int = SESSION_MS) -> int:
        since = self.drv.mark()
        lock = {"kind": kind, "path": path}
        r = self.drv.call("open", timeout=30, client=client, connect=self.zk.connect,
                          session_timeout_ms=timeout_ms, lock=lock)
        session = r.get("session")
        check(type(session) is int, f"open {client}: session {session!r} is not an integer")
        check(session in self.zk.sessions(), f"open {client}: session {session} is not live at the server")
        check(session not in self.sessions.values(), f"open {client}: session {session} reused")
        self.sessions[client] = session
        states = self.drv.states(client, since)
        if self.eventful:
            ev = self.drv.event(lambda e: e.get("client") == client and e.get("state") == "connected",
                                f"connected of {client}", since)
            check(ev.get("session") == session, f"connected of {client} names session {ev.get('session')}")
        check(states in ([], ["connected"]), f"open {client}: unexpected states before the reply: {states}")
        return session

    def acquire(self, client: str, mode: str = "block", role: str = "exclusive", **kw: Any) -> dict[str, Any]:
        return self.drv.call("acquire", client=client, role=role, mode=mode, **kw)

    def owned(self, r: dict[str, Any], client: str, lock_path: str) -> None:
        """Checks an acquire's `node` (if given): under the lock, owned by the client's session."""
        node = r.get("node")
        if node is None:
            return
        check(node.startswith(lock_path + "/"), f"node {node} is not under {lock_path}")
        stat = self.zk.tree().get(node, {}).get("stat")
        check(stat is not None, f"{client}'s node {node} does not exist")
        check(stat["ephemeralOwner"] == self.sessions[client],
              f"{client}'s node {node} is owned by {stat['ephemeralOwner']}, not {self.sessions[client]}")

    def ephemerals(self, path: str) -> dict[int, list[str]]:
        """The ephemeral children of `path`, by owner."""
        by_owner: dict[int, list[str]] = {}
        for p, n in self.zk.children(path).items():
            if owner := n["stat"]["ephemeralOwner"]:
                by_owner.setdefault(owner, []).append(p)
        return by_owner

    def wait_for(self, cond: Callable[[], Any], what: str, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while not cond():
            check(time.monotonic() < deadline, f"no {what} within {timeout}s")
            time.sleep(0.05)

    # sections

    def init(self) -> None:
        r = self.drv.call("init", protocol=1)
        check(isinstance(r.get("implementation"), str) and r["implementation"], f"init: no implementation: {r}")
        check(isinstance(r.get("kinds"), dict) and "exclusive" in r["kinds"], f"init: no exclusive kind: {r}")
        check(all(k in ("exclusive", "read-write", "semaphore", "reentrant") for k in r["kinds"]),
              f"init: unknown kinds {r['kinds']}")
        self.kinds = r["kinds"]
        check(r.get("reuse") in (None, True, False), f"init: reuse must be a boolean: {r}")
        self.reuse = r.get("reuse") is True
        self.notes.append(f"implementation: {r['implementation']}; kinds: {', '.join(self.kinds)}"
                          + ("; serves successive runs (reset checked)" if self.reuse else ""))
        self.drv.fails("init", protocol=99)  # a protocol it does not speak

    def exclusive(self) -> None:
        path = "/selftest/basic/lock"
        since = self.drv.mark()
        self.open("a", path)
        # A driver that sends state events sends `connected` before answering open.
        self.eventful = "connected" in self.drv.states("a", since)
        self.notes.append("state events: " + ("checked" if self.eventful else "none sent, not checked"))
        self.open("b", path)

        ra = self.acquire("a")
        check(ra["acquired"] is True, f"a: {ra}")
        self.owned(ra, "a", path)
        wait_b = self.drv.send("acquire", client="b", role="exclusive", mode="block")
        self.drv.pending(wait_b, 0.5)

        res = "/selftest/basic/lock.resource"
        self.drv.call("touch", client="a", path=res, data="")
        self.drv.call("touch", client="a", path=res + "/a.r0.0.enter", data="0x1")
        node = self.zk.tree()[res + "/a.r0.0.enter"]
        check(node["data"] == "0x1" and node["stat"]["ephemeralOwner"] == 0, f"touched node: {node}")
        check(node["acl"] == ["world:anyone:31"], f"touched node's ACL: {node['acl']}")
        self.drv.fails("touch", "definite", client="a", path=res + "/a.r0.0.enter", data="0x1")  # NodeExists
        self.drv.fails("touch", "definite", client="a", path="/selftest/missing/x", data="")  # NoNode
        self.drv.call("touch", client="a", path=res + "/a.r0.1.exit", data="0x1")
        self.drv.pending(wait_b, 0.1)
        self.drv.call("release", client="a")
        rb = self.drv.reply(wait_b)
        check(rb["ok"] and rb["acquired"] is True, f"b after a's release: {rb}")
        self.owned(rb, "b", path)
        check(rb.get("node") is None or rb.get("node") != ra.get("node"), "a and b got the same node")

        self.open("c", path)
        rc = self.acquire("c", "try")
        check(rc["acquired"] is False, f"c try while b holds: {rc}")
        t0 = time.monotonic()
        rc = self.acquire("c", "timeout", timeout_ms=300)
        took = time.monotonic() - t0
        check(rc["acquired"] is False, f"c timeout while b holds: {rc}")
        check(took >= 0.25, f"c's 300 ms timeout returned after {took:.3f}s")
        self.drv.fails("release", "definite", client="c")  # not held
        owners = self.ephemerals(path)
        check(list(owners) == [self.sessions["b"]], f"lock nodes left after c's failed acquires: {owners}")
        self.drv.call("release", client="b")
        rc = self.acquire("c", "try")
        check(rc["acquired"] is True, f"c try on a free lock: {rc}")
        self.owned(rc, "c", path)
        self.drv.call("release", client="c")
        check(self.ephemerals(path) == {}, f"lock nodes left after every release: {self.ephemerals(path)}")

    def read_write(self) -> None:
        path = "/selftest/rw/lock"
        for c in ("r1", "r2", "w"):
            self.open(c, path, "read-write")
        self.drv.fails("acquire", "definite", client="r1", role="exclusive", mode="try")  # not a role of the kind
        r1 = self.acquire("r1", role="read")
        r2 = self.acquire("r2", role="read")
        check(r1["acquired"] and r2["acquired"], f"two readers: {r1} {r2}")
        self.owned(r1, "r1", path)
        self.owned(r2, "r2", path)
        rw = self.acquire("w", "try", role="write")
        check(rw["acquired"] is False, f"writer try while two readers hold: {rw}")
        wait_w = self.drv.send("acquire", client="w", role="write", mode="block")
        self.drv.pending(wait_w, 0.5)
        self.drv.call("release", client="r1")
        self.drv.pending(wait_w, 0.3)
        self.drv.call("release", client="r2")
        rw = self.drv.reply(wait_w)
        check(rw["ok"] and rw["acquired"] is True, f"writer after both readers released: {rw}")
        self.owned(rw, "w", path)
        rr = self.acquire("r1", "try", role="read")
        check(rr["acquired"] is False, f"reader try while the writer holds: {rr}")
        self.drv.call("release", client="w")

    def semaphore(self) -> None:
        path = "/selftest/sem/lock"
        self.open("s1", path, "semaphore")
        self.open("s2", path, "semaphore")
        r1 = self.acquire("s1")
        check(r1["acquired"] is True, f"s1: {r1}")
        self.owned(r1, "s1", path)
        r2 = self.acquire("s2", "try")
        check(r2["acquired"] is False, f"s2 try while s1 holds the one lease: {r2}")
        wait = self.drv.send("acquire", client="s2", role="exclusive", mode="block")
        self.drv.pending(wait, 0.5)
        self.drv.call("release", client="s1")
        r2 = self.drv.reply(wait)
        check(r2["ok"] and r2["acquired"] is True, f"s2 after s1's release: {r2}")
        self.owned(r2, "s2", path)
        self.drv.call("release", client="s2")

    def malformed(self) -> None:
        self.drv.write("this is not JSON")
        self.drv.write("[1, 2, 3]")
        self.drv.write('{"op": "init", "protocol": 1}')  # no id
        self.drv.fails("frobnicate")
        self.drv.fails("acquire", client="nobody", role="exclusive", mode="try")
        self.drv.fails("acquire", client="a")  # no role, no mode
        self.drv.call("init", protocol=1)  # still alive, and answered nothing else

    def expiry(self) -> None:
        path = "/selftest/expire/lock"
        old = self.open("e", path)
        r = self.acquire("e")
        check(r["acquired"] is True, f"e: {r}")
        self.owned(r, "e", path)
        since = self.drv.mark()
        self.zk.http("POST", f"/sessions/{old}/expire")
        check(self.ephemerals(path) == {}, "e's lock node outlived its session")
        if self.eventful:
            lost = self.drv.event(lambda e: e.get("client") == "e" and e.get("state") == "lost", "lost of e", since)
            check(lost.get("session", old) == old, f"lost names session {lost.get('session')}, not {old}")
            new = self.drv.event(lambda e: e.get("client") == "e" and e.get("state") == "connected",
                                 "connected (a new session) of e", since)
            check(new.get("session") not in (None, old), f"connected after expiry: {new}")
            self.sessions["e"] = new["session"]
            self.notes.append(f"expiry of a holder: {' -> '.join(self.drv.states('e', since))}")
        # Any answer will do (the node is gone either way), but an answer it must be.
        rr = self.drv.reply(self.drv.send("release", client="e"))
        self.notes.append(f"release after expiry: {'ok' if rr['ok'] else rr['error']}")
        if self.eventful and rr["ok"]:  # the client lives on, in its new session
            r = self.acquire("e")
            check(r["acquired"] is True, f"e in its new session: {r}")
            self.owned(r, "e", path)
            self.drv.call("release", client="e")

    def dropped_delete(self) -> None:
        """The release's delete never reaches the server (its connection drops)."""
        path = "/selftest/drop/lock"
        self.open("d1", path)
        self.open("d2", path)
        r = self.acquire("d1")
        check(r["acquired"] is True, f"d1: {r}")
        rule = self.zk.http("POST", "/rules", {"ops": ["delete"], "path": {"prefix": path + "/"},
                                               "session": self.sessions["d1"], "nth": 1,
                                               "verdict": {"type": "disconnect"}})
        since = self.drv.mark()
        rr = self.drv.reply(self.drv.send("release", client="d1"))
        time.sleep(1.0)  # time to reconnect and retry
        self.zk.http("DELETE", f"/rules/{rule['id']}")
        left = self.ephemerals(path).get(self.sessions["d1"], [])
        release = "ok" if rr["ok"] else f"{rr['error']['class']} {rr['error']['code']}"
        self.notes.append(f"release whose delete was dropped: {release}; node left behind: {bool(left)}")
        if self.eventful:
            states = self.drv.states("d1", since)
            check(states[:2] == ["suspended", "reconnected"], f"d1's states on a dropped connection: {states}")
            self.notes.append(f"dropped connection: {' -> '.join(states)}")
        if self.planted_bug:
            check(rr["ok"], f"the planted bug swallows the connection loss, but release said {rr}")
            check(left, "the planted bug should leave d1's lock node behind")
            r2 = self.acquire("d2", "try")
            check(r2["acquired"] is False, f"d2 took a lock whose orphan node still stands: {r2}")
        else:
            check(not left, f"d1's lock node {left} outlived its release (a lost delete forgotten)")
            r2 = self.acquire("d2", "try")
            check(r2["acquired"] is True, f"d2 after d1's release: {r2}")
            self.drv.call("release", client="d2")

    def try_cleanup_dropped(self) -> None:
        """Informational (python-zk/kazoo#732): a try-acquire that finds the lock
        busy deletes its node, and that delete's connection drops."""
        path = "/selftest/try732/lock"
        self.open("p1", path)
        self.open("p2", path)
        check(self.acquire("p1")["acquired"] is True, "p1 should hold")
        rule = self.zk.http("POST", "/rules", {"ops": ["delete"], "path": {"prefix": path + "/"},
                                               "session": self.sessions["p2"], "nth": 1,
                                               "verdict": {"type": "disconnect"}})
        r = self.drv.reply(self.drv.send("acquire", client="p2", role="exclusive", mode="try"))
        time.sleep(1.0)
        self.zk.http("DELETE", f"/rules/{rule['id']}")
        left = self.ephemerals(path).get(self.sessions["p2"], [])
        outcome = f"acquired={r['acquired']}" if r["ok"] else f"{r['error']['class']} {r['error']['code']}"
        self.notes.append(f"try-acquire whose cleanup delete was dropped: {outcome}; "
                          f"orphan node left while its session lives: {bool(left)}")
        self.drv.call("release", client="p1")
        self.drv.call("close", client="p2")  # its orphan, if any, goes with its session
        self.drv.call("close", client="p1")

    def crash(self) -> None:
        path = "/selftest/crash/lock"
        for c in ("h", "w1", "w2"):
            self.open(c, path, timeout_ms=CRASH_SESSION_MS)
        check(self.acquire("h")["acquired"] is True, "h should hold")
        # w1 queues behind h, then w2 behind w1: w2 gets the lock only once both
        # crashed sessions have expired.
        wait_w1 = self.drv.send("acquire", client="w1", role="exclusive", mode="block")
        self.wait_for(lambda: self.sessions["w1"] in self.ephemerals(path), "w1's lock node")
        wait_w2 = self.drv.send("acquire", client="w2", role="exclusive", mode="block")
        self.drv.pending(wait_w2, 0.5)
        for c in ("w1", "h"):
            self.zk.http("POST", f"/sessions/{self.sessions[c]}/stall")
            with self.drv.cond:
                self.drv.crashed.add(c)
                if c == "w1":
                    self.drv.silenced.add(wait_w1)  # w1's acquire must never be answered
            t0 = time.monotonic()
            self.drv.call("crash", client=c)
            took = time.monotonic() - t0
            check(took < 1.0, f"crash of {c} answered after {took:.2f}s")
        # Both sessions expire after their timeout; then w2 holds.
        r = self.drv.reply(wait_w2, timeout=CRASH_SESSION_MS / 1000 * 2 + 5)
        check(r["ok"] and r["acquired"] is True, f"w2 after h and w1 crashed: {r}")
        self.owned(r, "w2", path)
        live = self.zk.sessions()
        check(self.sessions["h"] not in live and self.sessions["w1"] not in live,
              f"crashed sessions h={self.sessions['h']} w1={self.sessions['w1']} still live: {live}")
        self.drv.pending(wait_w1, 0.5)
        self.drv.call("release", client="w2")

    def close(self) -> None:
        path = "/selftest/close/lock"
        session = self.open("z", path)
        check(self.acquire("z")["acquired"] is True, "z should hold")
        self.drv.call("close", client="z")
        check(session not in self.zk.sessions(), "z's session outlived its close")
        check(self.ephemerals(path) == {}, "z's lock node outlived its close")
        self.drv.fails("acquire", client="z", role="exclusive", mode="try")  # z is closed

    def reset(self) -> None:
        """`reset` ends a run: every session closes, and the next run's client of
        the same name is a new one whose events carry the new run."""
        if not self.reuse:
            raise Skipped("the driver's init does not say reuse")
        path = "/selftest/reset/lock"
        self.open("r", path)
        check(self.acquire("r")["acquired"] is True, "r should hold")
        open_sessions = [s for c, s in self.sessions.items() if c not in self.drv.crashed]
        if self.eventful:
            ev = self.drv.event(lambda e: e.get("client") == "r" and e.get("state") == "connected", "connected of r")
            check(ev.get("run") == 0, f"an event before the first reset carries run {ev.get('run')!r}, not 0")
        with self.drv.cond:
            self.drv.before_reset = set(self.drv.sent)
        self.drv.call("reset", timeout=20, run=1)
        with self.drv.cond:
            self.drv.run = 1
        live = self.zk.sessions()
        check(not [s for s in open_sessions if s in live], f"sessions left open after reset: {live}")
        check(self.ephemerals(path) == {}, "r's lock node outlived the reset")
        since = self.drv.mark()
        self.sessions.pop("r")
        self.open("r", path)
        if self.eventful:
            ev = self.drv.event(lambda e: e.get("client") == "r" and e.get("state") == "connected",
                                "connected of r in the next run", since)
            check(ev.get("run") == 1, f"an event of the next run carries run {ev.get('run')!r}, not 1")
        r = self.acquire("r")
        check(r["acquired"] is True, "r should hold in the next run")
        self.owned(r, "r", path)
        self.drv.call("release", client="r")

    def shutdown(self) -> None:
        open_sessions = [s for c, s in self.sessions.items() if c not in self.drv.crashed]
        self.drv.call("shutdown")
        try:
            code = self.drv.proc.wait(15)
        except subprocess.TimeoutExpired:
            raise Failure("the driver did not exit within 15 s of answering shutdown") from None
        check(code == 0, f"the driver exited with code {code}")
        live = self.zk.sessions()
        check(not [s for s in open_sessions if s in live], f"sessions left open after shutdown: {live}")


def find_zk_mock(explicit: str | None, wait_s: float) -> Path:
    binary = Path(explicit or os.environ.get("ZK_MOCK") or REPO / "target/debug/zk-mock")
    deadline = time.monotonic() + wait_s
    while not binary.exists():
        if time.monotonic() > deadline:
            raise Failure(f"{binary} does not exist (build it with `cargo build -p zk-mock-cli`)")
        print(f"waiting for {binary} to be built…", file=sys.stderr)
        time.sleep(30)
    return binary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zk-mock", help="the zk-mock binary (default: $ZK_MOCK or target/debug/zk-mock)")
    ap.add_argument("--wait", type=float, default=3600, help="seconds to wait for zk-mock to be built")
    ap.add_argument("--planted-bug", action="store_true",
                    help="expect release to leave its node behind when its delete is dropped")
    ap.add_argument("--stderr", action="store_true", help="show the driver's stderr even when it passes")
    ap.add_argument("driver", nargs=argparse.REMAINDER, help="the driver command")
    args = ap.parse_args()
    cmd = args.driver[1:] if args.driver[:1] == ["--"] else args.driver
    if len(cmd) == 1:
        cmd = shlex.split(cmd[0])
    if not cmd:
        ap.error("no driver command")

    zk = ZkMock(find_zk_mock(args.zk_mock, args.wait))
    drv = Driver(cmd)
    test = SelfTest(zk, drv, args.planted_bug)
    def kind(name: str, section: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            if name not in test.kinds:
                raise Skipped(f"the driver does not list kind {name!r}")
            section()
        return run

    sections = [
        ("init", test.init),
        ("exclusive", test.exclusive),
        ("read-write", kind("read-write", test.read_write)),
        ("semaphore", kind("semaphore", test.semaphore)),
        ("malformed", test.malformed),
        ("expiry", test.expiry),
        ("dropped-delete", test.dropped_delete),
        ("try-cleanup-dropped", test.try_cleanup_dropped),
        ("crash", test.crash),
        ("close", test.close),
        ("reset", test.reset),
        ("shutdown", test.shutdown),
    ]
    failed = False
    t_all = time.monotonic()
    try:
        for name, section in sections:
            t0 = time.monotonic()
            try:
                section()
            except Skipped as s:
                print(f"skip  {name}: {s}")
                continue
            except Failure as e:
                print(f"FAIL  {name}: {e}")
                failed = True
                break
            print(f"ok    {name} ({time.monotonic() - t0:.1f}s)")
        time.sleep(0.2)  # late lines
        for v in drv.violations:
            print(f"FAIL  protocol: {v}")
            failed = True
    finally:
        drv.kill()
        zk.stop()
    for n in test.notes:
        print(f"note  {n}")
    if failed or args.stderr:
        print("---- driver stderr (tail) ----\n" + drv.stderr_tail(10_000 if args.stderr else 30))
    print(f"{'FAILED' if failed else 'PASSED'}: {shlex.join(cmd)} ({time.monotonic() - t_all:.1f}s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
