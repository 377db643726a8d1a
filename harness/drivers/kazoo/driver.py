#!/usr/bin/env python3
"""A harness driver for kazoo's lock recipes (see harness/DRIVERS.md).

The harness writes one JSON request per line to stdin; this process answers
each with one JSON line on stdout and adds unprompted `state` events from
kazoo's connection listener. Every client of a scenario run is a KazooClient
in this one process. It serves successive runs: `reset` closes every client
and the next run's events carry its `run` (see "Serving successive runs" in
DRIVERS.md).

kazoo is used exactly as an application would use it: its bugs are what the
harness is looking for, so none are worked around here.

Environment: HARNESS_DRIVER_DEBUG=1 logs (to stderr) at DEBUG level instead
of WARNING; HARNESS_DRIVER_SWITCH_INTERVAL sets the interpreter's thread
switch interval in seconds (default 0.05, see SWITCH_INTERVAL_S).
"""

from __future__ import annotations

import json
import logging
import os
import queue
import sys
import threading
import time
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadArgumentsError,
    BadVersionError,
    LockTimeout,
    NodeExistsError,
    NoNodeError,
)
from kazoo.protocol.states import KazooState
from kazoo.recipe.lock import Semaphore

PROTOCOL = 1

KINDS = {
    "exclusive": "kazoo.recipe.lock.Lock",
    "read-write": "kazoo.recipe.lock.ReadLock/WriteLock",
    "semaphore": "kazoo.recipe.lock.Semaphore(max_leases=1)",
}
# The roles each kind accepts.
ROLES = {
    "exclusive": ("exclusive",),
    "read-write": ("read", "write"),
    "semaphore": ("exclusive",),
}

# Errors after which the operation certainly did not happen. Everything else
# (ConnectionLoss, OperationTimeoutError, SessionExpiredError,
# ConnectionClosedError, anything unexpected) leaves the outcome unknown.
DEFINITE = (NoNodeError, NodeExistsError, BadVersionError, BadArgumentsError)

# A real application keeps reconnecting for as long as it runs.
CONNECTION_RETRY = dict(max_tries=-1, delay=0.05, max_delay=1)
START_TIMEOUT_S = 30  # waiting for the first session in `open`
# The interpreter's thread switch interval (default 5 ms). Every kazoo client
# has three threads (connection loop, two callback workers) and every request
# one more; when a stampede makes a thousand of them runnable at once, each
# thread waiting for the GIL wakes up every switch interval to ask for it, and
# the process spends its time in futex calls (measured: ~75% kernel time) while
# its clients miss their pings and their sessions expire. A longer interval
# keeps 1000 contenders alive (see testing/stampede.py); threads that block
# on I/O still hand the GIL over at once.
SWITCH_INTERVAL_S = float(os.environ.get("HARNESS_DRIVER_SWITCH_INTERVAL", "0.05"))
SHUTDOWN_WAIT_S = 15  # closing the clients that are left, all together

log = logging.getLogger("kazoo-driver")


class DriverError(Exception):
    """An error raised by this driver itself, before kazoo sent anything."""

    def __init__(self, code: str, message: str, cls: str = "definite"):
        super().__init__(message)
        self.code, self.cls = code, cls


class Output:
    """Writes whole JSON lines to stdout from one thread.

    Replies come from request threads and events from kazoo's connection
    threads, which must never block (a stalled pipe would otherwise delay
    kazoo's pings), so every line goes through a queue to one writer.
    """

    _STOP = object()

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._stream = sys.stdout.buffer
        self._thread = threading.Thread(target=self._run, name="stdout", daemon=True)
        self._thread.start()

    def send(self, obj: dict[str, Any]) -> None:
        self._queue.put(json.dumps(obj, separators=(",", ":")).encode() + b"\n")

    def close(self) -> None:
        """Writes everything queued so far, then stops the writer."""
        self._queue.put(self._STOP)
        self._thread.join()

    def _run(self) -> None:
        try:
            while True:
                item = self._queue.get()
                # Write whatever else is already waiting before one flush.
                while item is not self._STOP:
                    self._stream.write(item)
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                self._stream.flush()
                if item is self._STOP:
                    return
        except OSError as e:  # the harness is gone: nobody to answer
            log.error("cannot write to stdout (%s); exiting", e)
            os._exit(1)


@dataclass(eq=False)
class Request:
    """One request from the harness."""

    msg: dict[str, Any]
    client: Client | None = None  # the client it is for, once known


@dataclass(eq=False)
class Client:
    """One harness client: a KazooClient and the lock object(s) of its kind."""

    name: str
    kind: str
    zk: KazooClient
    run: int  # the run it was opened in: its events say so
    locks: dict[str, Any] = field(default_factory=dict)  # role -> lock object
    current: Any = None  # the lock object of the last acquire
    session: int | None = None  # the last session id kazoo reported
    state: KazooState | None = None  # the last state kazoo reported
    silent: bool = False  # closing or crashed: report no more events
    crashed: bool = False  # crashed: answer no more of its requests


class Driver:
    def __init__(self, out: Output) -> None:
        self.out = out
        self.clients: dict[str, Client] = {}
        self.clients_lock = threading.Lock()
        self.run_number = 0  # the `run` of the last reset

    # ---- plumbing -------------------------------------------------------

    def serve(self, stdin) -> None:
        for raw in iter(stdin.readline, b""):
            line = raw.decode("utf-8", "replace").strip()
            if line:
                self.dispatch(line)
        log.info("stdin closed, exiting")

    def dispatch(self, line: str) -> None:
        try:
            msg = json.loads(line)
        except ValueError as e:
            log.error("ignoring a line that is not JSON (%s): %.200s", e, line)
            return
        if not isinstance(msg, dict) or type(msg.get("id")) is not int:
            log.error("ignoring a request without an integer id: %.200s", line)
            return
        op = msg.get("op")
        # The client is looked up here, in the order the requests came, so
        # that a request sent before its client's crash belongs to the
        # crashed client even if its thread starts after the crash.
        name = msg.get("client")
        req = Request(msg, self.clients.get(name) if isinstance(name, str) and op != "open" else None)
        if op == "shutdown":
            self.shutdown(req)
        elif op in ("init", "crash", "reset"):
            self.run(req)  # answered at once, on this thread
        else:
            # Anything that may block runs on its own thread so that other
            # clients' requests keep flowing while an acquire waits.
            threading.Thread(target=self.run, args=(req,), name=f"req-{msg['id']}", daemon=True).start()

    def run(self, req: Request) -> None:
        """Runs one request and answers it, unless its client crashed meanwhile."""
        msg = req.msg
        handler = getattr(self, "op_" + str(msg.get("op")), None)
        try:
            if handler is None:
                raise DriverError("BadRequest", f"unknown op {msg.get('op')!r}")
            reply = {"id": msg["id"], "ok": True, **(handler(req) or {})}
        except Exception as e:  # every failure becomes an error reply
            log.debug("request %s failed", msg["id"], exc_info=True)
            reply = {"id": msg["id"], "ok": False, "error": error_of(e)}
        if req.client is not None and req.client.crashed and msg.get("op") != "crash":
            log.debug("not answering request %s of crashed client %s", msg["id"], req.client.name)
            return
        self.out.send(reply)

    @staticmethod
    def client(req: Request) -> Client:
        if req.client is None:
            raise DriverError("UnknownClient", f"no open client {req.msg.get('client')!r}")
        return req.client

    def event(self, c: Client, state: str) -> None:
        ev: dict[str, Any] = {"event": "state", "client": c.name, "state": state, "run": c.run}
        if c.session is not None:
            ev["session"] = c.session
        self.out.send(ev)

    # ---- requests -------------------------------------------------------

    def op_init(self, req: Request) -> dict[str, Any]:
        protocol = arg(req.msg, "protocol", int)
        if protocol != PROTOCOL:
            raise DriverError("UnsupportedProtocol", f"protocol {protocol}; this driver speaks {PROTOCOL}")
        return {"implementation": f"kazoo {version('kazoo')}", "kinds": KINDS, "reuse": True}

    def op_open(self, req: Request) -> dict[str, Any]:
        msg = req.msg
        name = arg(msg, "client", str)
        connect = arg(msg, "connect", str)
        timeout_ms = arg(msg, "session_timeout_ms", int)
        lock = arg(msg, "lock", dict)
        kind, path = arg(lock, "kind", str), arg(lock, "path", str)
        if kind not in KINDS:
            raise DriverError("UnsupportedKind", f"kind {kind!r}; this driver has {sorted(KINDS)}")
        if "recipe" in lock:
            raise DriverError("UnsupportedRecipe", f"recipe {lock['recipe']!r}: kazoo has none")

        with self.clients_lock:
            old = self.clients.pop(name, None)
        if old is not None:  # an open for an open client replaces it
            stop(old)

        zk = KazooClient(hosts=connect, timeout=timeout_ms / 1000, connection_retry=CONNECTION_RETRY)
        c = req.client = Client(name, kind, zk, self.run_number)
        zk.add_listener(lambda state: self.on_state(c, state))
        # Registered before start, so that a crash or close of a client still
        # opening finds it; unless a reset ended its run meanwhile.
        with self.clients_lock:
            if c.run != self.run_number:
                c.crashed = c.silent = True
                raise DriverError("RunOver", f"client {name}: its run ended before it opened")
            self.clients[name] = c
        try:
            zk.start(timeout=START_TIMEOUT_S)
        except Exception:
            with self.clients_lock:
                if self.clients.get(name) is c:
                    del self.clients[name]
            raise
        if kind == "exclusive":
            c.locks["exclusive"] = zk.Lock(path)
        elif kind == "read-write":
            c.locks["read"] = zk.ReadLock(path)
            c.locks["write"] = zk.WriteLock(path)
        else:
            c.locks["exclusive"] = zk.Semaphore(path, max_leases=1)
        client_id = zk.client_id
        return {"session": client_id[0] if client_id else c.session}

    def op_acquire(self, req: Request) -> dict[str, Any]:
        c, msg = self.client(req), req.msg
        role, mode = arg(msg, "role", str), arg(msg, "mode", str)
        if role not in ROLES[c.kind]:
            raise DriverError("BadRole", f"role {role!r} for kind {c.kind!r}; expected one of {ROLES[c.kind]}")
        lock = c.locks[role]
        if mode == "block":
            call = dict()
        elif mode == "timeout":
            call = dict(timeout=arg(msg, "timeout_ms", (int, float)) / 1000)
        elif mode == "try":
            call = dict(blocking=False)
        else:
            raise DriverError("BadRequest", f"mode {mode!r}: expected block, timeout or try")
        c.current = lock
        try:
            acquired = bool(lock.acquire(**call))
        except LockTimeout:
            acquired = False
        reply: dict[str, Any] = {"acquired": acquired}
        if acquired and (node := node_of(lock)):
            reply["node"] = node
        if acquired and c.zk.client_id:
            reply["session"] = c.zk.client_id[0]
        return reply

    def op_release(self, req: Request) -> None:
        c = self.client(req)
        # kazoo's release() returns False (and sends nothing) when the lock
        # object does not think it holds.
        if c.current is None or not c.current.release():
            raise DriverError("NotHeld", f"client {c.name} does not hold the lock")

    def op_touch(self, req: Request) -> None:
        c, msg = self.client(req), req.msg
        path, data = arg(msg, "path", str), arg(msg, "data", str)
        # Persistent, with kazoo's default ACL (OPEN_ACL_UNSAFE).
        c.zk.create(path, data.encode(), makepath=False)

    def op_close(self, req: Request) -> None:
        c = self.client(req)
        with self.clients_lock:
            if self.clients.get(c.name) is c:
                del self.clients[c.name]
        c.silent = True
        c.zk.stop()
        c.zk.close()

    def op_crash(self, req: Request) -> None:
        c = self.client(req)
        with self.clients_lock:
            if self.clients.get(c.name) is c:
                del self.clients[c.name]
        # From now on this client says nothing: no events, no replies.
        c.crashed = c.silent = True
        # stop() ends kazoo's connection loop so that it never reconnects (nor
        # starts a new session). Its closeSession goes to a connection the
        # harness has stalled, so the session expires as after a real crash.
        # stop() waits for that connection to die, so it runs on a thread of
        # its own and this reply goes out at once.
        threading.Thread(target=stop, args=(c, False), name=f"crash-{c.name}", daemon=True).start()

    def close_all(self, crashed: bool, next_run: int | None = None) -> bool:
        """Closes every client left, all together; True if all closed in time.

        With `crashed`, their outstanding requests are not answered either.
        With `next_run`, that run starts at once: an `open` of the run that
        ends, still under way, cannot register its client after this.
        """
        with self.clients_lock:
            left = list(self.clients.values())
            self.clients.clear()
            if next_run is not None:
                self.run_number = next_run
        for c in left:
            c.silent = True
            c.crashed = c.crashed or crashed
        closers = [threading.Thread(target=stop, args=(c,), daemon=True) for c in left]
        for t in closers:
            t.start()
        deadline = time.monotonic() + SHUTDOWN_WAIT_S
        for t in closers:
            t.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in closers)

    def op_reset(self, req: Request) -> None:
        """Ends the run: every client closes (closeSession) and is forgotten.

        Runs on the stdin thread, so nothing of the next run starts before the
        reply. Clients of the run (closed here, crashed or closed before) say
        nothing more; a late line of theirs would carry their old `run`.
        """
        run = arg(req.msg, "run", int)
        if not self.close_all(crashed=True, next_run=run):
            # Not reusable: the harness shuts this process down.
            raise DriverError("ResetIncomplete", f"some clients did not close within {SHUTDOWN_WAIT_S}s")

    def shutdown(self, req: Request) -> None:
        if not self.close_all(crashed=False):
            log.warning("shutdown: some clients did not close within %ss", SHUTDOWN_WAIT_S)
        self.out.send({"id": req.msg["id"], "ok": True})
        self.out.close()
        os._exit(0)

    # ---- kazoo's connection state ---------------------------------------

    def on_state(self, c: Client, state: KazooState) -> None:
        """kazoo's state listener. Runs on kazoo's connection thread: must not block."""
        if state == KazooState.CONNECTED:
            client_id = c.zk.client_id
            session = client_id[0] if client_id else None
            same = session is not None and session == c.session
            name = "reconnected" if c.state == KazooState.SUSPENDED and same else "connected"
            c.session = session
        elif state == KazooState.SUSPENDED:
            name = "suspended"
        elif state == KazooState.LOST:
            name = "lost"  # c.session still names the session that went
        else:  # pragma: no cover - kazoo has no other states
            name = str(state).lower()
        c.state = state
        if not c.silent:
            self.event(c, name)


def stop(c: Client, close: bool = True) -> None:
    """Stops a client's KazooClient; logs instead of raising."""
    c.silent = True
    try:
        c.zk.stop()
        if close:
            c.zk.close()
    except Exception:
        log.warning("stopping client %s failed", c.name, exc_info=True)


def node_of(lock: Any) -> str | None:
    """The path of the lock's own node, as kazoo knows it."""
    if isinstance(lock, Semaphore):
        return lock.create_path  # the lease node
    return f"{lock.path}/{lock.node}" if lock.node else None


def arg(msg: dict[str, Any], name: str, types: type | tuple[type, ...]) -> Any:
    """A required field of a request, checked before anything is sent."""
    value = msg.get(name)
    if value is None or not isinstance(value, types) or isinstance(value, bool):
        raise DriverError("BadRequest", f"field {name!r} missing or of the wrong type: {value!r}")
    return value


def error_of(e: Exception) -> dict[str, str]:
    if isinstance(e, DriverError):
        return {"class": e.cls, "code": e.code, "message": str(e)}
    cls = "definite" if isinstance(e, DEFINITE) else "indefinite"
    return {"class": cls, "code": type(e).__name__, "message": str(e) or type(e).__name__}


def main() -> None:
    debug = bool(os.environ.get("HARNESS_DRIVER_DEBUG"))
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if debug else logging.WARNING,
        format="%(asctime)s %(levelname)s %(threadName)s %(name)s: %(message)s",
    )
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    out = Output()
    Driver(out).serve(sys.stdin.buffer)
    out.close()
    os._exit(0)  # do not wait for daemon threads or kazoo's atexit hooks


if __name__ == "__main__":
    main()
