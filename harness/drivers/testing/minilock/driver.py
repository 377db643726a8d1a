#!/usr/bin/env python3
"""Harness driver (harness/DRIVERS.md, protocol 1) for minilock.

Usage: python3 driver.py [--bug NAME]   (or MINILOCK_BUG=NAME in the environment)
"""
import json, logging, os, sys, threading

if "--bug" in sys.argv:
    os.environ["MINILOCK_BUG"] = sys.argv[sys.argv.index("--bug") + 1]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
logging.basicConfig(stream=sys.stderr, level=logging.WARNING)

import kazoo
from kazoo.client import KazooClient
from kazoo.exceptions import (BadVersionError, ConnectionLoss, NoNodeError, NodeExistsError,
                              OperationTimeoutError, SessionExpiredError, ThrottledOpError)
from kazoo.protocol.states import KazooState
import minilock

BUG = minilock.current_bug()
out = threading.Lock()
state = threading.Lock()
clients = {}    # name -> Client of the current run
run = [0]       # the run of the last reset


def emit(obj):
    with out:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


class Client:
    def __init__(self, name, run):
        self.name, self.run = name, run
        self.silent = False  # crashed, closed or forgotten: no more events
        self.mute = False    # crashed or forgotten: no more replies either
        self.zk = self.lock = None

    def event(self, kind, session):
        if not self.silent:
            ev = {"event": "state", "client": self.name, "state": kind, "run": self.run}
            if session is not None:
                ev["session"] = session
            emit(ev)

    def stop(self, mute=False):
        self.silent = True
        self.mute = self.mute or mute
        if self.lock is not None:
            self.lock.cancel()
        if self.zk is not None:
            try:
                self.zk.stop()  # closeSession (lost at the server if the harness silenced it)
                self.zk.close()
            except Exception as e:
                print(f"driver: stopping {self.name}: {e!r}", file=sys.stderr)


def close_all():
    with state:
        old = list(clients.values())
        clients.clear()
    threads = [threading.Thread(target=c.stop, args=(True,), daemon=True) for c in old]
    [t.start() for t in threads]
    [t.join(8.0) for t in threads]
    return all(not t.is_alive() for t in threads)


def classify(e):
    definite = (NoNodeError, NodeExistsError, BadVersionError, ThrottledOpError, minilock.NotHeld,
                minilock.LockLost, KeyError, ValueError, AssertionError, RuntimeError)
    if isinstance(e, definite) and not isinstance(e, (ConnectionLoss, OperationTimeoutError)):
        return "definite"
    return "indefinite"


def serve(m):
    rid, op, name = m.get("id"), m.get("op"), m.get("client")
    r, cl = {"id": rid, "ok": True}, None
    try:
        if op == "init":
            assert m.get("protocol") == 1, f"protocol {m.get('protocol')} (this driver speaks 1)"
            r.update(implementation=f"minilock ({BUG or 'correct'}) on kazoo {kazoo.__version__}",
                     kinds={"exclusive": "minilock.MiniLock"}, reuse=True)
        elif op == "open":
            if m["lock"].get("kind") != "exclusive" or m["lock"].get("recipe"):
                raise ValueError(f"unsupported lock {m['lock']!r}")
            my_run = run[0]
            with state:
                old = clients.pop(name, None)
            if old is not None:
                old.stop(mute=True)  # replaced: its outstanding requests are moot
            cl = Client(name, my_run)
            t = m["session_timeout_ms"] / 1000
            cl.zk = KazooClient(m["connect"], timeout=t, connection_retry={
                "max_tries": -1, "delay": 0.05, "backoff": 1.5, "max_delay": 0.5, "max_jitter": 0.05})
            minilock.watch_connection(cl.zk, cl.event)
            cl.zk.start(timeout=max(15.0, 3 * t))
            cl.lock = minilock.MiniLock(cl.zk, m["lock"]["path"])
            with state:
                stale = run[0] != my_run  # a reset came while it connected
                if not stale:
                    clients[name] = cl
            if stale:
                cl.stop(mute=True)
                return
            r["session"] = cl.zk._session_id
        elif op == "shutdown":
            close_all()
        elif op == "reset":
            ok = close_all()
            with state:
                run[0] = m["run"]
            if not ok:
                raise RuntimeError("a client would not close")
        else:
            with state:
                cl = clients.get(name)
            if cl is None:
                raise KeyError(f"unknown client {name!r}")
            if op == "acquire":
                if m.get("role") != "exclusive" or m.get("mode") not in ("block", "timeout", "try"):
                    raise ValueError(f"role {m.get('role')!r}, mode {m.get('mode')!r}")
                mode = m["mode"]
                timeout = m.get("timeout_ms", 0) / 1000 if mode == "timeout" else None
                got = cl.lock.acquire(blocking=mode != "try", timeout=timeout)
                r["acquired"] = got
                if got:
                    r["node"], r["session"] = cl.lock.node, cl.lock.session
            elif op == "release":
                cl.lock.release()
            elif op == "touch":  # one attempt, through this client's session
                if cl.zk.state != KazooState.CONNECTED:
                    raise ConnectionLoss("not connected")
                cl.zk.create(m["path"], m["data"].encode())
            elif op == "close":
                with state:
                    if clients.get(name) is cl:
                        del clients[name]
                cl.stop()
            elif op == "crash":  # answer at once; stop it in the background, no more words
                cl.silent = cl.mute = True
                with state:
                    if clients.get(name) is cl:
                        del clients[name]
                threading.Thread(target=cl.stop, args=(True,), daemon=True).start()
                emit(r)
                return
            else:
                raise ValueError(f"unknown op {op!r}")
    except Exception as e:
        if op == "open" and cl is not None and clients.get(name) is not cl:
            cl.stop()  # never registered: do not leave its session behind
        r = {"id": rid, "ok": False, "error": {"class": classify(e), "code": type(e).__name__,
                                               "message": str(e) or repr(e)}}
    if cl is not None and cl.mute:
        return  # a crashed or forgotten client's outstanding request needs no reply
    emit(r)
    if op == "shutdown":
        os._exit(0)


for line in sys.stdin:
    if not line.strip():
        continue
    try:
        msg = json.loads(line)
    except ValueError:
        print(f"driver: not JSON: {line!r}", file=sys.stderr)
        continue
    if not isinstance(msg, dict) or not isinstance(msg.get("id"), int):
        print(f"driver: not a request (no id): {line!r}", file=sys.stderr)
        continue
    threading.Thread(target=serve, args=(msg,), daemon=True).start()
close_all()
os._exit(0)
