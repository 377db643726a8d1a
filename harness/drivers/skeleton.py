#!/usr/bin/env python3
"""Test your own lock (harness/DRIVERS.md): replace the three functions; kazoo's Lock stands in for yours."""
import json, os, sys, threading
from kazoo.client import KazooClient
from kazoo.exceptions import LockTimeout, NoNodeError, NodeExistsError

def make_lock(zk, path): return zk.Lock(path)  # your lock on `path`, with a started KazooClient

def acquire(lock, blocking, timeout):  # True once held; False if busy (try) or timed out
    try: return lock.acquire(blocking=blocking, timeout=timeout)
    except LockTimeout: return False

def release(lock):
    if not lock.release(): raise KeyError("not held")

clients, crashed, out = {}, set(), threading.Lock()

def serve(m):
    r, op, c = {"id": m.get("id"), "ok": True}, m.get("op"), m.get("client")
    try:
        if op == "init":
            assert m["protocol"] == 1, "this driver speaks protocol 1"
            r |= {"implementation": "my lock", "kinds": {"exclusive": "skeleton.make_lock"}}
        elif op == "open":
            zk = KazooClient(m["connect"], timeout=m["session_timeout_ms"] / 1000, connection_retry={"max_tries": -1})
            zk.start()
            clients[c] = (zk, make_lock(zk, m["lock"]["path"]))
            r["session"] = zk.client_id[0]
        elif op == "acquire":
            r["acquired"] = bool(acquire(clients[c][1], m["mode"] != "try", m.get("timeout_ms", 0) / 1000 or None))
        elif op == "release": release(clients[c][1])
        elif op == "touch": clients[c][0].create(m["path"], m["data"].encode())
        elif op == "close": clients.pop(c)[0].stop()
        elif op == "crash":  # drop it at once, without waiting: the harness has silenced its connection
            crashed.add(c)
            threading.Thread(target=clients.pop(c)[0].stop, daemon=True).start()
        elif op == "shutdown": [zk.stop() for zk, _ in clients.values()]
        else: raise KeyError(f"unknown op {op!r}")
    except Exception as e:  # definite: it did not happen; indefinite: unknown (connection loss, expiry...)
        cls = "definite" if isinstance(e, (NoNodeError, NodeExistsError, KeyError, AssertionError)) else "indefinite"
        r = {"id": m.get("id"), "ok": False, "error": {"class": cls, "code": type(e).__name__, "message": str(e)}}
    if r["id"] is not None and (op == "crash" or c not in crashed):  # a crashed client says no more
        with out: print(json.dumps(r), flush=True)
    if op == "shutdown": os._exit(0)

for line in sys.stdin:  # one thread per request: an acquire may block
    try: threading.Thread(target=serve, args=(json.loads(line),), daemon=True).start()
    except ValueError: print(f"skeleton: not JSON: {line!r}", file=sys.stderr)
os._exit(0)
