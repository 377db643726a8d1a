"""minilock: a small exclusive ZooKeeper lock on kazoo's raw client operations.

The standard recipe: an ephemeral sequential node under the lock path; list the
children, sort them by sequence number; hold if first, otherwise watch the
immediate predecessor and list again when it goes. Release deletes the own node.
A connection loss on create is resolved by looking for the attempt's GUID in the
children ("protected" create); release retries on connection loss.

Planted bugs for testing lock checkers, chosen by MINILOCK_BUG (unset: correct):
  persistent         the lock node is created persistent instead of ephemeral
  blind-create-retry a ConnectionLoss on create is retried with a new create,
                     without looking for the node the first one may have made
  no-relist          a waiter whose predecessor went takes the lock without
                     listing the children again
  expiry-as-disconnect  the connection-state listener reports a session expiry
                     as a disconnection, and the new session as "reconnected"
"""
import os
import threading
import time
import uuid

from kazoo.exceptions import (ConnectionClosedError, ConnectionLoss, NoNodeError,
                              OperationTimeoutError, SessionExpiredError, ThrottledOpError)
from kazoo.protocol.states import EventType, KazooState

BUGS = ("persistent", "blind-create-retry", "no-relist", "expiry-as-disconnect")


def current_bug():
    bug = os.environ.get("MINILOCK_BUG") or None
    if bug is not None and bug not in BUGS:
        raise ValueError(f"unknown MINILOCK_BUG {bug!r} (one of {', '.join(BUGS)})")
    return bug


class LockLost(Exception):
    """The lock node went while this client held it (another session deleted it)."""


class NotHeld(Exception):
    """release() of a lock this object does not hold."""


class Cancelled(Exception):
    """cancel() was called while an operation was under way."""


def _seq(name):
    # ZooKeeper's %010d of a signed 32-bit counter: "-2147483648" has eleven characters.
    return int(name.rsplit("-lock-", 1)[1])


def _creation_order(own):
    # Serial-number arithmetic from our own node: after 2147483647 comes -2147483648.
    return lambda name: (_seq(name) - own + 2**31) % 2**32


def watch_connection(zk, callback, bug=None):
    """Tell `callback(state, session)` the client's connection states as the
    application should see them: connected (a new session), suspended,
    reconnected (the same session again), lost (the session is gone)."""
    bug = current_bug() if bug is None else bug
    seen = {"session": None, "lost": False}

    def listener(state):
        sid = zk._session_id
        if state == KazooState.CONNECTED:
            if bug == "expiry-as-disconnect" and seen["lost"]:
                kind = "reconnected"  # BUG: "we were disconnected, now we are back"
                sid = seen["session"]  # ... to the session it believes survived
            elif seen["session"] is not None and sid == seen["session"]:
                kind = "reconnected"
            else:
                kind = "connected"
            seen["session"], seen["lost"] = sid, False
        elif state == KazooState.SUSPENDED:
            kind = "suspended"
        else:  # LOST: the session expired or the client was closed
            seen["lost"] = True
            kind = "suspended" if bug == "expiry-as-disconnect" else "lost"
        callback(kind, seen["session"] if kind != "lost" else sid)
        if kind == "lost":
            seen["session"] = None

    zk.add_listener(listener)
    return listener


class MiniLock:
    def __init__(self, zk, path, bug=None):
        self.zk = zk
        self.path = path.rstrip("/")
        self.bug = current_bug() if bug is None else bug
        self.node = None      # full path of the node this object holds
        self.session = None   # the session that created it
        self._cancelled = False
        self._wake = threading.Event()
        zk.add_listener(self._on_state)

    # -- plumbing ---------------------------------------------------------
    def _on_state(self, state):
        self._wake.set()  # any change of connection state: look again

    def cancel(self):
        self._cancelled = True
        self._wake.set()

    def _check(self, session):
        if self._cancelled:
            raise Cancelled()
        if self.zk._stopped.is_set():
            raise ConnectionClosedError("client stopped")
        if session is not None and self.zk._session_id != session:  # None once LOST
            raise SessionExpiredError(f"session {session:#x} is gone")

    def _wait_connected(self, session):
        while True:
            self._check(session)
            if self.zk.connected and (session is None or self.zk._session_id == session):
                return
            self._wake.clear()
            self._wake.wait(0.05)

    def _retry(self, session, fn, *args, **kw):
        """fn(*args) until it runs through `session`; never across sessions."""
        while True:
            self._wait_connected(session)
            try:
                out = fn(*args, **kw)
            except (ConnectionLoss, OperationTimeoutError):
                continue
            except ThrottledOpError:  # not executed: the server is loaded, ask again
                time.sleep(0.02)
                continue
            self._check(session)  # it ran under `session`, which still lives
            return out

    # -- acquire ----------------------------------------------------------
    def _create(self, session):
        guid = uuid.uuid4().hex
        prefix = f"{self.path}/ml-{guid}-lock-"
        while True:
            self._wait_connected(session)
            try:
                return self.zk.create(prefix, b"", ephemeral=self.bug != "persistent",
                                      sequence=True, makepath=True)
            except ThrottledOpError:  # not executed: ask again
                time.sleep(0.02)
            except (ConnectionLoss, OperationTimeoutError):
                if self.bug == "blind-create-retry":
                    continue  # BUG: the first create may have been applied
                for child in self._retry(session, self.zk.get_children, self.path):
                    if guid in child:
                        return f"{self.path}/{child}"

    def _drop(self, node, session):
        """Delete a node we gave up on, through `session`; gone with it otherwise."""
        try:
            self._retry(session, self.zk.delete, node)
        except NoNodeError:
            pass
        except (SessionExpiredError, ConnectionClosedError, Cancelled):
            pass

    def acquire(self, blocking=True, timeout=None):
        """True once held; False if busy (blocking=False) or `timeout` s ran out."""
        if self.node is not None:
            raise RuntimeError("already held by this object (not reentrant)")
        deadline = None if timeout is None else time.monotonic() + timeout
        self._cancelled = False
        self._wait_connected(None)
        session = self.zk._session_id
        node = self._create(session)
        name = node.rsplit("/", 1)[1]
        try:
            while True:
                children = self._retry(session, self.zk.get_children, self.path)
                if name not in children:
                    raise LockLost(f"{node} vanished while queued")
                children.sort(key=_creation_order(_seq(name)))
                i = children.index(name)
                if i == 0:
                    break
                if not blocking:
                    self._drop(node, session)
                    return False
                woke = threading.Event()
                deleted = []

                def watcher(event, woke=woke, deleted=deleted):
                    if event.type == EventType.DELETED:
                        deleted.append(event)
                    woke.set()
                    self._wake.set()

                self._wake.clear()
                stat = self._retry(session, self.zk.exists, f"{self.path}/{children[i - 1]}",
                                   watch=watcher)
                if stat is None:
                    if self.bug == "no-relist":
                        break  # BUG: the predecessor is gone, so "we are next"
                    continue
                while not woke.is_set():
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        self._drop(node, session)
                        return False
                    self._wake.wait(1.0 if left is None else min(1.0, left))
                    self._wake.clear()
                    self._check(session)
                if self.bug == "no-relist" and deleted:
                    break  # BUG: woken by the predecessor's deletion, "we are next"
        except BaseException:
            self._drop(node, session)
            raise
        self.node, self.session = node, session
        return True

    # -- release ----------------------------------------------------------
    def release(self):
        node, session = self.node, self.session
        if node is None:
            raise NotHeld("not held")
        sent = False
        try:
            while True:
                self._wait_connected(session)
                try:
                    self.zk.delete(node)
                    return
                except NoNodeError:
                    if sent:
                        return  # our earlier delete was applied; its reply was lost
                    raise LockLost(f"{node} was deleted while held")
                except ThrottledOpError:  # not executed: ask again
                    time.sleep(0.02)
                except (ConnectionLoss, OperationTimeoutError):
                    sent = True
        finally:
            self.node = self.session = None
