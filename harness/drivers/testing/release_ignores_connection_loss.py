#!/usr/bin/env python3
"""skeleton.py with ONE PLANTED BUG, for the harness's own tests: its release deletes the
lock node once and, when that delete's connection is lost, swallows the error and forgets
the node (like apache/curator#1193, CURATOR-678). If the delete never reached the server,
the node stays while the session lives: a lock nobody can take. Everything else is the
skeleton's, and passes the basic exchange."""
import json, os, sys, threading
from types import SimpleNamespace
from kazoo.client import KazooClient
from kazoo.exceptions import (BadArgumentsError, BadVersionError, ConnectionClosedError, ConnectionLoss,
                              LockTimeout, NodeExistsError, NoNodeError, SessionExpiredError)

def make_lock(zk, path):  # your lock on `path`, given a started KazooClient
    return zk.Lock(path)

def acquire(lock, blocking, timeout):  # True once held; False if busy (try) or timed out
    try:
        return lock.acquire(blocking=blocking, timeout=timeout)
    except LockTimeout:
        return False

def release(lock):  # THE PLANTED BUG: kazoo's Lock.release retries the delete; this does not
    if not lock.is_acquired:
        raise LookupError("not held")
    try:
        lock.client.delete(f"{lock.path}/{lock.node}")
    except (ConnectionLoss, ConnectionClosedError):
        pass  # THE BUG: the delete may not have happened, and the node is forgotten
    except (NoNodeError, SessionExpiredError):
        pass  # already gone (with its session): kazoo's own release ends the same way
    # Reset the Lock as its own release does, and also forget that a create was tried:
    # otherwise the next acquire would look for a node with this lock's prefix, find
    # the leftover one and adopt it, hiding the bug.
    lock.is_acquired, lock.node, lock.create_tried = False, None, False

# ---- the protocol; nothing to change below ----
DEFINITE = (LookupError, NoNodeError, NodeExistsError, BadVersionError, BadArgumentsError)  # nothing happened
clients, out = {}, threading.Lock()

def run(m, c):  # one thread per request, as an acquire may block
    reply = {"id": m["id"], "ok": True}
    try:
        match m["op"]:
            case "init":
                if m["protocol"] != 1:
                    raise LookupError(f"unknown protocol {m['protocol']}; this driver speaks 1")
                name = "PLANTED BUG: skeleton whose release ignores ConnectionLoss (kazoo Lock)"
                reply |= {"implementation": name, "kinds": {"exclusive": "skeleton.make_lock"}}
            case "open":
                if old := clients.pop(m["client"], None):  # an open of an open client replaces it
                    old.zk.stop()
                retry_forever = dict(max_tries=-1, delay=0.05, max_delay=1)
                zk = KazooClient(m["connect"], timeout=m["session_timeout_ms"] / 1000, connection_retry=retry_forever)
                zk.start()
                clients[m["client"]] = SimpleNamespace(zk=zk, lock=make_lock(zk, m["lock"]["path"]), crashed=False)
                reply["session"] = zk.client_id[0]
            case "acquire":
                timeout = m["timeout_ms"] / 1000 if m["mode"] == "timeout" else None
                reply["acquired"] = acquire(c.lock, m["mode"] != "try", timeout)
            case "release":
                release(c.lock)
            case "touch":  # a persistent node with kazoo's default open ACL
                c.zk.create(m["path"], m["data"].encode())
            case "close":
                del clients[m["client"]]
                c.zk.stop()
            case "crash":  # drop it at once, without closeSession (the harness stalled its connection)
                del clients[m["client"]]
                c.crashed = True
                threading.Thread(target=c.zk.stop, daemon=True).start()
            case "shutdown":
                for other in clients.values():
                    other.zk.stop()
            case op:
                raise LookupError(f"unknown op {op!r}")
    except Exception as e:
        cls = "definite" if isinstance(e, DEFINITE) else "indefinite"
        reply = {"id": m["id"], "ok": False, "error": {"class": cls, "code": type(e).__name__, "message": str(e)}}
    if m.get("op") == "crash" or not (c and c.crashed):  # a crashed client's requests get no reply
        with out:  # whole lines only
            print(json.dumps(reply), flush=True)
    if m.get("op") == "shutdown":
        os._exit(0)

for line in sys.stdin:
    try:
        m = json.loads(line)
        if type(m.get("id")) is not int:
            raise ValueError("no integer id")
    except (ValueError, AttributeError) as e:  # not JSON, not an object, no id
        print(f"release_ignores_connection_loss: ignoring {line!r}: {e}", file=sys.stderr)
        continue
    threading.Thread(target=run, args=(m, clients.get(m.get("client"))), daemon=True).start()
os._exit(0)  # stdin closed: don't wait for kazoo's threads
