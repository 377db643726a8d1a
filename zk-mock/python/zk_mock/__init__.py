"""zk-mock for Python tests: a ZooKeeper 3.8 wire-compatible server.

``ZkMock`` starts the ``zk-mock`` binary (shipped in this package's wheel)
on free loopback ports and drives it through its admin interface::

    from kazoo.client import KazooClient
    from zk_mock import ZkMock

    with ZkMock() as zk:
        client = KazooClient(hosts=zk.connect_string)
        client.start()
        client.create("/lock", ephemeral=True)
        zk.expire(client.client_id[0])   # the server expires the session

Any ZooKeeper client connects to ``connect_string``: kazoo, the Java and C
clients, zkCli. Besides the server, a ``ZkMock`` has the faults tests need:
expiring and disconnecting sessions, stalling one, fault rules (fail, lose
the reply, delay, disconnect, stall, expire) matched by operation, path and
session, refusing new connections, a manual session clock, a snapshot of
the tree and a recorder of every request and notification. With
``servers=3`` it is an ensemble whose servers a test kills, restarts,
partitions, heals and makes lag behind the leader (stale reads, late
watches, expiry at each server's pace).

The pytest plugin (installed with the package) adds the ``zk_mock`` fixture
(a fresh server per test) and ``zk_mock_server`` (one server per session,
reset before each test).
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import queue
import secrets
import shutil
import subprocess
import sysconfig
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Deque, Dict, Iterator, List, Mapping, Optional, Sequence, Union

__all__ = [
    "ERROR_CODES",
    "Rule",
    "ServerInfo",
    "Session",
    "ZkMock",
    "ZkMockDied",
    "ZkMockError",
    "ZkMockNotFound",
    "ZkMockStartError",
    "find_binary",
]

#: ZooKeeper's error codes by name (``KeeperException.Code``), for
#: ``ZkMock.rule(fail=...)``.
ERROR_CODES: Mapping[str, int] = {
    "SYSTEMERROR": -1,
    "RUNTIMEINCONSISTENCY": -2,
    "DATAINCONSISTENCY": -3,
    "CONNECTIONLOSS": -4,
    "MARSHALLINGERROR": -5,
    "UNIMPLEMENTED": -6,
    "OPERATIONTIMEOUT": -7,
    "BADARGUMENTS": -8,
    "UNKNOWNSESSION": -12,
    "NEWCONFIGNOQUORUM": -13,
    "RECONFIGINPROGRESS": -14,
    "APIERROR": -100,
    "NONODE": -101,
    "NOAUTH": -102,
    "BADVERSION": -103,
    "NOCHILDRENFOREPHEMERALS": -108,
    "NODEEXISTS": -110,
    "NOTEMPTY": -111,
    "SESSIONEXPIRED": -112,
    "INVALIDCALLBACK": -113,
    "INVALIDACL": -114,
    "AUTHFAILED": -115,
    "SESSIONMOVED": -118,
    "NOTREADONLY": -119,
    "EPHEMERALONLOCALSESSION": -120,
    "NOWATCHER": -121,
    "REQUESTTIMEOUT": -122,
    "RECONFIGDISABLED": -123,
    "SESSIONCLOSEDREQUIRESASLAUTH": -124,
    "QUOTAEXCEEDED": -125,
    "THROTTLEDOP": -127,
}

_LISTENING = "zk-mock listening on "
_ADMIN = "zk-mock admin interface on http://"


class ZkMockError(Exception):
    """Something zk-mock refused or could not do (the message says what)."""


class ZkMockNotFound(ZkMockError, LookupError):
    """No such session, rule, server or node (the admin interface's 404)."""


class ZkMockStartError(ZkMockError):
    """The binary is missing, or did not start (a port in use, a bad setting)."""


class ZkMockDied(ZkMockError):
    """The server process ended while the test still used it."""


def find_binary(binary: Optional[str] = None) -> str:
    """Where the ``zk-mock`` binary is.

    In order: ``binary`` if given, the ``ZK_MOCK_BINARY`` environment
    variable, the scripts directory of this Python (where the wheel installs
    it), then ``PATH``. Raises :class:`ZkMockStartError` naming every place
    it looked when none has it.
    """
    looked: List[str] = []

    def usable(path: str) -> bool:
        return os.path.isfile(path) and os.access(path, os.X_OK)

    for what, path in (
        ("the binary argument (or --zk-mock-binary)", binary),
        ("the ZK_MOCK_BINARY environment variable", os.environ.get("ZK_MOCK_BINARY")),
    ):
        if path:
            if usable(path):
                return path
            looked.append(f"{what}: {path} (not an executable file)")
        else:
            looked.append(f"{what}: not set")
    name = "zk-mock.exe" if os.name == "nt" else "zk-mock"
    scripts = sysconfig.get_path("scripts")
    if scripts:
        candidate = os.path.join(scripts, name)
        if usable(candidate):
            return candidate
        looked.append(f"this Python's scripts directory: {candidate} (absent)")
    on_path = shutil.which("zk-mock")
    if on_path:
        return on_path
    looked.append("PATH: no zk-mock")
    raise ZkMockStartError(
        "cannot find the zk-mock binary; looked in:\n  - "
        + "\n  - ".join(looked)
        + "\n(the zk-mock wheel installs it; `cargo install --path zk-mock` puts it on PATH;"
        " or set ZK_MOCK_BINARY to its path)"
    )


@dataclass(frozen=True)
class Session:
    """A live session, as the server sees it."""

    #: The session id (what kazoo's ``client.client_id[0]`` is).
    id: int
    #: Negotiated timeout, ms.
    timeout: int
    #: Whether a connection serves it now.
    connected: bool
    #: Whether a stall holds it.
    stalled: bool
    #: Its ephemeral nodes.
    ephemerals: List[str]
    #: Its connection's watches: ``{"path": ..., "kind": ...}``.
    watches: List[Dict[str, Any]]
    #: Session-clock ms when it expires unless something arrives.
    expires_at_ms: int
    #: Everything the server said about it.
    raw: Dict[str, Any] = field(repr=False, compare=False, default_factory=dict)

    @classmethod
    def _of(cls, v: Dict[str, Any]) -> "Session":
        return cls(
            id=int(v["id"]),
            timeout=int(v.get("timeout", 0)),
            connected=bool(v.get("connected", False)),
            stalled=bool(v.get("stalled", False)),
            ephemerals=list(v.get("ephemerals", [])),
            watches=list(v.get("watches", [])),
            expires_at_ms=int(v.get("expires_at_ms", 0)),
            raw=v,
        )


@dataclass(frozen=True)
class ServerInfo:
    """One server of the ensemble (a standalone mock has one), as the
    admin interface's ``GET /servers`` has it."""

    #: 0 to n−1 (ZooKeeper's myid is the index + 1).
    index: int
    #: Its client address, ``host:port`` (what :attr:`ZkMock.hosts` lists).
    addr: str
    #: ``"serving"``, ``"killed"``, ``"partitioned"`` or ``"electing"``.
    status: str
    #: Whether it leads.
    leader: bool
    #: How far behind the leader it applies txns: ``{}`` (not at all),
    #: ``{"txns": n}`` or ``{"ms": n}``.
    lag: Dict[str, int]
    #: The last zxid it has applied.
    last_zxid: int
    #: Committed txns it has not applied yet.
    behind: int
    #: Cut off from the quorum and serving read-only clients.
    read_only: bool
    #: Its client connections.
    connections: int
    #: Everything the server said about it.
    raw: Dict[str, Any] = field(repr=False, compare=False, default_factory=dict)

    @classmethod
    def _of(cls, v: Dict[str, Any]) -> "ServerInfo":
        return cls(
            index=int(v["index"]),
            addr=str(v["addr"]),
            status=str(v["status"]),
            leader=bool(v.get("leader", False)),
            lag={k: int(n) for k, n in dict(v.get("lag") or {}).items()},
            last_zxid=int(v.get("last_zxid", 0)),
            behind=int(v.get("behind", 0)),
            read_only=bool(v.get("read_only", False)),
            connections=int(v.get("connections", 0)),
            raw=v,
        )


class Rule:
    """An installed fault rule. A context manager: leaving it removes it."""

    def __init__(self, mock: "ZkMock", rule_id: int, spec: Dict[str, Any]) -> None:
        self._mock = mock
        #: The server's id for the rule.
        self.id = rule_id
        #: The rule as sent (the admin interface's JSON).
        self.spec = spec
        self._removed = False

    @property
    def fired(self) -> int:
        """How many requests the rule has acted on so far."""
        for r in self._mock._call("GET", "/rules"):
            if r["id"] == self.id:
                return int(r["fired"])
        raise ZkMockNotFound(f"rule {self.id} is no longer installed")

    def remove(self) -> None:
        """Removes the rule (again: nothing)."""
        if self._removed:
            return
        self._removed = True
        with contextlib.suppress(ZkMockNotFound):
            self._mock._call("DELETE", f"/rules/{self.id}")

    def __enter__(self) -> "Rule":
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"Rule(id={self.id}, spec={self.spec!r})"


SessionId = Union[int, str]


class ZkMock:
    """A zk-mock server in a child process, for one test or many.

    Keyword arguments are the server's settings; each is the binary's flag
    of the same name (``tick_time=200`` is ``--tick-time 200``). ``None``
    leaves the server's default.

    :param tick_time: ms (2000); session timeouts are bounded by 2 and 20 ticks.
    :param compat: ``"3.8"`` (default) or ``"3.9"``: which server to be.
    :param seed: the seed of the server's random choices (fault probabilities).
    :param clock: ``"real"`` (default) or ``"manual"``: a manual session clock
        moves only by :meth:`advance_clock`, so sessions expire when the test says.
    :param min_session_timeout, max_session_timeout: ms.
    :param max_packet_size: bytes (jute.maxbuffer).
    :param super_digest: ``"super:<digest>"``, as zookeeper.DigestAuthenticationProvider.superDigest.
    :param servers: an ensemble of this many servers (one connect string;
        :meth:`servers` and the methods after it control each one).
    :param election_window: ms an ensemble's leader election takes.
    :param readonly_mode: ``readonlymode.enabled``.
    :param recorder_capacity: records kept (0: no recording).
    :param extended_types, reconfig_enabled: the server switches of those names.
    :param container_check_interval: ms between container checks.
    :param commit_latency_us: how long each write takes to commit, µs (0:
        at once). Writes wait for the transaction log's sync, in batches, as
        in ZooKeeper; for code whose tests rely on a real server's slower writes.
    :param connect_latency_us: how long each handshake takes at least, µs (0:
        as soon as it can be answered); for code whose tests rely on a real
        server's slower session set-up.
    :param request_latency_us: how long every request takes besides a write's
        sync, µs (0: none); each is answered no sooner than this after it is read.
    :param port: the first client port (0, the default: free ones).
    :param binary: the ``zk-mock`` executable (see :func:`find_binary`).
    :param extra_args: more flags for the binary.
    :param start_timeout: seconds to wait for the server to start.
    :param request_timeout: seconds for each admin request.

    The server starts on :meth:`start` or on entering the ``with`` block,
    and stops on :meth:`stop` or leaving it. It also stops if this process
    ends without stopping it: it exits when its standard input closes.
    """

    def __init__(
        self,
        *,
        tick_time: Optional[int] = None,
        compat: Optional[str] = None,
        seed: Optional[int] = None,
        clock: Optional[str] = None,
        min_session_timeout: Optional[int] = None,
        max_session_timeout: Optional[int] = None,
        max_packet_size: Optional[int] = None,
        super_digest: Optional[str] = None,
        servers: Optional[int] = None,
        election_window: Optional[int] = None,
        readonly_mode: bool = False,
        recorder_capacity: Optional[int] = None,
        extended_types: bool = False,
        reconfig_enabled: bool = False,
        container_check_interval: Optional[int] = None,
        commit_latency_us: Optional[int] = None,
        connect_latency_us: Optional[int] = None,
        request_latency_us: Optional[int] = None,
        port: int = 0,
        binary: Optional[str] = None,
        extra_args: Sequence[str] = (),
        start_timeout: float = 10.0,
        request_timeout: float = 10.0,
    ) -> None:
        if clock not in (None, "real", "manual"):
            raise ValueError(f"clock must be 'real' or 'manual', not {clock!r}")
        if compat not in (None, "3.8", "3.9"):
            raise ValueError(f"compat must be '3.8' or '3.9', not {compat!r}")
        args: List[str] = ["--port", str(port)]
        for flag, value in (
            ("--tick-time", tick_time),
            ("--compat", compat),
            ("--seed", seed),
            ("--clock", clock),
            ("--min-session-timeout", min_session_timeout),
            ("--max-session-timeout", max_session_timeout),
            ("--max-packet-size", max_packet_size),
            ("--super-digest", super_digest),
            ("--servers", servers),
            ("--election-window", election_window),
            ("--recorder-capacity", recorder_capacity),
            ("--container-check-interval", container_check_interval),
            ("--commit-latency-us", commit_latency_us),
            ("--connect-latency-us", connect_latency_us),
            ("--request-latency-us", request_latency_us),
        ):
            if value is not None:
                args += [flag, str(value)]
        for flag, on in (
            ("--readonly-mode", readonly_mode),
            ("--extended-types", extended_types),
            ("--reconfig-enabled", reconfig_enabled),
        ):
            if on:
                args.append(flag)
        self._args = args + list(extra_args)
        self._binary = binary
        self._start_timeout = start_timeout
        self._request_timeout = request_timeout
        self._token = secrets.token_hex(16)
        self._process: Optional[subprocess.Popen[bytes]] = None
        self._stderr: Deque[str] = collections.deque(maxlen=200)
        self._connect_string: Optional[str] = None
        self._admin: Optional[str] = None
        self._seed: Optional[int] = None

    # -- the process -------------------------------------------------------

    def start(self) -> "ZkMock":
        """Starts the server; returns once it accepts clients."""
        if self._process is not None:
            raise ZkMockError("this ZkMock is already started")
        binary = find_binary(self._binary)
        # A ZkMock started again after stop() is a new process: nothing of
        # the last one's addresses or output carries over.
        self._connect_string = None
        self._admin = None
        self._seed = None
        self._stderr.clear()
        env = dict(os.environ)
        env["ZK_MOCK_ADMIN_TOKEN"] = self._token
        env.setdefault("RUST_LOG", "warn")
        cmd = [binary, *self._args, "--admin-port", "0", "--exit-with-stdin"]
        try:
            process = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
            )
        except OSError as e:
            raise ZkMockStartError(f"cannot run {binary}: {e}") from e
        self._process = process
        lines: "queue.Queue[Optional[str]]" = queue.Queue()
        threading.Thread(
            target=_pump, args=(process.stdout, lines.put), daemon=True, name="zk-mock stdout"
        ).start()
        threading.Thread(
            target=_pump,
            args=(process.stderr, self._stderr.append),
            daemon=True,
            name="zk-mock stderr",
        ).start()
        deadline = time.monotonic() + self._start_timeout
        try:
            while self._connect_string is None or self._admin is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ZkMockStartError(
                        f"zk-mock did not start within {self._start_timeout}s"
                        f" ({' '.join(cmd)}){self._stderr_tail()}"
                    )
                try:
                    line = lines.get(timeout=min(left, 0.1))
                except queue.Empty:
                    if process.poll() is not None:
                        raise self._start_failed(cmd) from None
                    continue
                if line is None:
                    # Its stdout closed: it is exiting (or closed stdout
                    # and lives on, which the kill below ends).
                    try:
                        process.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        pass
                    raise self._start_failed(cmd)
                if line.startswith(_LISTENING):
                    rest = line[len(_LISTENING):]
                    self._connect_string = rest.split(" ", 1)[0]
                    if "(seed " in rest:
                        self._seed = int(rest.split("(seed ", 1)[1].rstrip(")"))
                elif line.startswith(_ADMIN):
                    self._admin = "http://" + line[len(_ADMIN):].split(" ", 1)[0]
        except BaseException:
            self._kill()
            raise
        # The pump keeps reading whatever else it prints (into the queue,
        # unread), so it never blocks on a full pipe.
        return self

    def _start_failed(self, cmd: Sequence[str]) -> ZkMockStartError:
        code = self._process.poll() if self._process else None
        # The stderr pump may still be reading the last lines.
        time.sleep(0.05)
        return ZkMockStartError(
            f"zk-mock exited with code {code} before it served ({' '.join(cmd)})"
            f"{self._stderr_tail()}"
        )

    def _stderr_tail(self) -> str:
        tail = [line for line in list(self._stderr)[-20:] if line and line.strip()]
        return ("\nits last output:\n  " + "\n  ".join(tail)) if tail else ""

    def stop(self) -> None:
        """Stops the server (again: nothing). Its clients see the connection close."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(OSError):
                if process.stdin:
                    process.stdin.close()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._kill()
        self._process = None

    def _kill(self) -> None:
        process = self._process
        if process is None:
            return
        with contextlib.suppress(OSError):
            process.kill()
        with contextlib.suppress(Exception):
            process.wait(timeout=5)
        self._process = None

    def __enter__(self) -> "ZkMock":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        """Whether the server process is alive."""
        return self._process is not None and self._process.poll() is None

    @property
    def connect_string(self) -> str:
        """``host:port[,host:port...]`` for any ZooKeeper client."""
        if self._connect_string is None:
            raise ZkMockError("the server is not started")
        return self._connect_string

    @property
    def hosts(self) -> List[str]:
        """Each server's ``host:port``."""
        return self.connect_string.split(",")

    @property
    def admin_url(self) -> str:
        """The admin interface's base URL (each request needs :attr:`admin_token`)."""
        if self._admin is None:
            raise ZkMockError("the server is not started")
        return self._admin

    @property
    def admin_token(self) -> str:
        """The bearer token the admin interface wants."""
        return self._token

    @property
    def seed(self) -> Optional[int]:
        """The seed the server runs with (to replay a run)."""
        return self._seed

    # -- the admin interface ------------------------------------------------

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        url = self.admin_url + path
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self._token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self._request_timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            try:
                message = json.loads(e.read() or b"{}").get("error", e.reason)
            except ValueError:
                message = str(e.reason)
            if e.code == 404:
                raise ZkMockNotFound(message) from None
            raise ZkMockError(f"{method} {path}: {e.code} {message}") from None
        except (urllib.error.URLError, OSError) as e:
            self._check_alive()
            raise ZkMockError(f"{method} {path}: {e}") from e
        return json.loads(raw) if raw else None

    def _check_alive(self) -> None:
        process = self._process
        if process is None:
            raise ZkMockError("the server is not started (or was stopped)")
        code = process.poll()
        if code is not None:
            time.sleep(0.05)
            raise ZkMockDied(f"zk-mock exited with code {code} during the test{self._stderr_tail()}")

    def sessions(self) -> List[Session]:
        """The live sessions."""
        return [Session._of(v) for v in self._call("GET", "/sessions")]

    def expire(self, session_id: SessionId) -> None:
        """Expires a session as the server's session tracker would: its
        ephemerals go, its client is told SESSION_EXPIRED."""
        self._call("POST", f"/sessions/{session_id}/expire")

    def expire_all(self) -> int:
        """Expires every session; returns how many."""
        return int(self._call("POST", "/sessions/expire")["expired"])

    def disconnect(self, session_id: SessionId) -> None:
        """Closes a session's connection; the session lives on (its client reconnects)."""
        self._call("POST", f"/sessions/{session_id}/disconnect")

    def disconnect_all(self) -> int:
        """Closes every connection; returns how many."""
        return int(self._call("POST", "/sessions/disconnect")["disconnected"])

    @contextlib.contextmanager
    def stall(self, session_id: SessionId) -> Iterator[None]:
        """Holds a session's traffic both ways while inside: a network
        partition for that one client. Past its timeout the session expires."""
        self._call("POST", f"/sessions/{session_id}/stall")
        try:
            yield
        finally:
            # The session may have expired meanwhile: nothing to resume.
            with contextlib.suppress(ZkMockError):
                self._call("POST", f"/sessions/{session_id}/resume")

    def rule(
        self,
        *,
        ops: Union[None, str, Sequence[Union[str, int]]] = None,
        path: Optional[str] = None,
        path_prefix: Optional[str] = None,
        path_glob: Optional[str] = None,
        path_under: Optional[str] = None,
        session: Optional[SessionId] = None,
        nth: Optional[int] = None,
        times: Optional[int] = None,
        probability: Optional[float] = None,
        after: Optional["Rule"] = None,
        within: Optional[float] = None,
        fail: Union[None, str, int] = None,
        delay: Optional[float] = None,
        lose_reply: bool = False,
        disconnect: bool = False,
        stall: bool = False,
        expire: bool = False,
    ) -> Rule:
        """Installs a fault rule: which requests, and what happens to them.

        Which: ``ops`` (a name such as ``"create"``, which covers every
        create op code, or a list of names or op codes), at most one of
        ``path`` (exact), ``path_prefix``, ``path_glob`` (``*`` within a
        segment, ``**`` across) and ``path_under`` (the node and below),
        ``session``, ``nth`` (only the n-th match, from 1), ``times`` (the
        first n matches), ``probability``, and ``after`` (another rule) with
        ``within`` (seconds of the session clock): only in that window after
        the other rule first fired, for a fault followed by a lockout.

        What, exactly one: ``fail`` (an error code's name such as
        ``"NONODE"``, or its number), ``delay`` (seconds before the reply),
        ``lose_reply`` (apply, then close the connection without a reply),
        ``disconnect`` (close before applying), ``stall`` (apply, then hold
        the session), ``expire`` (expire the session instead).
        """
        verdicts: List[Dict[str, Any]] = []
        if fail is not None:
            verdicts.append({"type": "fail", "code": _error_code(fail)})
        if delay is not None:
            verdicts.append({"type": "delay", "ms": int(round(delay * 1000))})
        for on, kind in (
            (lose_reply, "lose_reply"),
            (disconnect, "disconnect"),
            (stall, "stall"),
            (expire, "expire"),
        ):
            if on:
                verdicts.append({"type": kind})
        if len(verdicts) != 1:
            raise ValueError(
                "a rule needs exactly one of fail=, delay=, lose_reply=, disconnect=, stall=, expire="
            )
        paths = [
            (k, v)
            for k, v in (
                ("exact", path),
                ("prefix", path_prefix),
                ("glob", path_glob),
                ("under", path_under),
            )
            if v is not None
        ]
        if len(paths) > 1:
            raise ValueError("give at most one of path=, path_prefix=, path_glob=, path_under=")
        spec: Dict[str, Any] = {"verdict": verdicts[0]}
        if ops is not None:
            spec["ops"] = [ops] if isinstance(ops, (str, int)) else list(ops)
        if paths:
            spec["path"] = {paths[0][0]: paths[0][1]}
        if session is not None:
            spec["session"] = str(session)
        for key, value in (("nth", nth), ("times", times), ("probability", probability)):
            if value is not None:
                spec[key] = value
        if (after is None) != (within is None):
            raise ValueError("give after= and within= together")
        if after is not None and within is not None:
            spec["after"] = {"rule": after.id, "for_ms": int(round(within * 1000))}
        created = self._call("POST", "/rules", spec)
        return Rule(self, int(created["id"]), spec)

    def rules(self) -> List[Dict[str, Any]]:
        """The installed rules, each with its ``id`` and ``fired`` count."""
        return list(self._call("GET", "/rules"))

    @contextlib.contextmanager
    def refuse_connections(self) -> Iterator[None]:
        """While inside, new connections are closed as soon as they are accepted."""
        self._call("POST", "/connections/refuse")
        try:
            yield
        finally:
            with contextlib.suppress(ZkMockDied):
                self._call("POST", "/connections/accept")

    def advance_clock(self, ms: int) -> int:
        """Moves the session clock (``clock="manual"``) forward: sessions
        whose timeout passes expire. Returns the clock, in ms."""
        return int(self._call("POST", "/clock/advance", {"ms": int(ms)})["clock_ms"])

    def clock(self) -> Dict[str, Any]:
        """The session clock: ``{"clock_ms": ..., "mode": "real" | "manual"}``."""
        return dict(self._call("GET", "/clock"))

    def set_sequence_counter(self, path: str, next: int) -> None:
        """Sets the number the next sequential child of ``path`` gets, as if
        that many had been made: ``2**31 - 1`` makes the one after it wrap to
        ``-2147483648``, as ZooKeeper's 32-bit counter does (names then sort
        wrongly as text, and a lock that compares them so breaks).

        :raises ZkMockNotFound: if ``path`` does not exist.
        :raises ZkMockError: if ``next`` is not a 32-bit signed integer.
        """
        self._call("POST", "/sequence_counter", {"path": path, "next": int(next)})

    def snapshot(self) -> Dict[str, Any]:
        """The tree, the sessions and the watches, as JSON."""
        return dict(self._call("GET", "/snapshot"))

    def requests(
        self,
        *,
        session: Optional[SessionId] = None,
        path: Optional[str] = None,
        op: Optional[str] = None,
    ) -> List[Dict[str, Any]]:
        """Recorded requests, oldest first, optionally only a session's, a
        path's or an operation's (``"create"``, ``"getData"``, ...)."""
        return list(self._call("GET", "/recorder/requests" + _query(session=session, path=path, op=op)))

    def notifications(
        self,
        *,
        session: Optional[SessionId] = None,
        path: Optional[str] = None,
        event: Optional[str] = None,
    ) -> List[Dict[str, Any]]:
        """Recorded watch notifications, oldest first (``event``:
        ``"NodeCreated"``, ``"NodeDeleted"``, ``"NodeDataChanged"``, ...)."""
        return list(
            self._call("GET", "/recorder/notifications" + _query(session=session, path=path, event=event))
        )

    def counts(self) -> Dict[str, int]:
        """Totals since the start (or the last clear): requests, errors,
        watches and notifications."""
        return dict(self.metrics()["totals"])

    def metrics(self) -> Dict[str, Any]:
        """The server's counters: sessions, connections, znodes, watches, ..."""
        return dict(self._call("GET", "/metrics"))

    def clear_recording(self) -> None:
        """Forgets the recorded requests and notifications, and the counts."""
        self._call("DELETE", "/recorder")

    def reset(self) -> None:
        """Back to a new server on the same ports: every session expired,
        every node but ``/`` and ``/zookeeper`` deleted, the rules removed,
        stalls and a refusal ended, the recording cleared."""
        self._call("POST", "/reset")

    # -- the ensemble's servers (``servers=n``) -----------------------------

    def servers(self) -> List[ServerInfo]:
        """Each server, by index: status, leader, lag, zxid, backlog, connections."""
        return [ServerInfo._of(v) for v in self._call("GET", "/servers")]

    def _server_verb(self, index: int, verb: str) -> bool:
        try:
            self._call("POST", f"/servers/{int(index)}/{verb}")
            return True
        except ZkMockError as e:
            # 409 "server 1 cannot kill: it is killed": nothing to do.
            if f"cannot {verb}: it is " in str(e):
                return False
            raise

    def kill_server(self, index: int) -> bool:
        """Kills one server: its connections drop and its port closes; its
        clients fail over and keep their sessions. Killing the leader (or
        the quorum) starts an election. False if it was not serving."""
        return self._server_verb(index, "kill")

    def restart_server(self, index: int) -> bool:
        """Restarts a killed or partitioned server on its port: it catches up,
        then serves. False if it was not down; :class:`ZkMockError` if its
        port was taken meanwhile."""
        return self._server_verb(index, "restart")

    def partition_server(self, index: int) -> bool:
        """Cuts one server off from the quorum: it closes its connections and
        stops serving (with ``readonly_mode=True``, it serves read-only
        clients once the read-only delay has passed). False if it was not
        serving."""
        return self._server_verb(index, "partition")

    def heal_server(self, index: int) -> bool:
        """Ends a partition (or, as :meth:`restart_server`, a kill): the
        server catches up and serves again. False if it was not down, or was
        killed and cannot listen on its port again."""
        return self._server_verb(index, "heal")

    def lag_server(
        self, index: int, *, txns: Optional[int] = None, ms: Optional[int] = None
    ) -> ServerInfo:
        """Makes a follower apply each commit ``txns`` commits late, or ``ms``
        ms (of the session clock) late; neither: no lag, and what it holds
        back applies at once. Reads through it are stale, its watches fire
        late, a write or a new session through it is answered when it applies
        it, and a session expires there when it applies the closeSession.
        A client's close is a write too: with a ``txns`` lag, the last
        commits wait for more to come, so end the lag (``lag_server(i)``, or
        leave :meth:`lagging`) before stopping that server's clients.

        :raises ZkMockError: for the leader, which applies each txn as it
            commits it (the message says so).
        :raises ValueError: for both ``txns=`` and ``ms=``.
        """
        if txns is not None and ms is not None:
            raise ValueError("a lag is txns= or ms=, not both")
        body: Dict[str, int] = {}
        if txns is not None:
            body["txns"] = int(txns)
        if ms is not None:
            body["ms"] = int(ms)
        return ServerInfo._of(self._call("POST", f"/servers/{int(index)}/lag", body))

    def catch_up_server(self, index: int) -> ServerInfo:
        """Applies everything a lagging follower holds back (its lag stays)."""
        return ServerInfo._of(self._call("POST", f"/servers/{int(index)}/catch_up"))

    @contextlib.contextmanager
    def lagging(
        self, index: int, *, txns: Optional[int] = None, ms: Optional[int] = None
    ) -> Iterator[ServerInfo]:
        """A follower lags while inside (see :meth:`lag_server`); on leaving,
        its lag ends and it applies what it held back (unless the server was
        stopped, or died, inside)."""
        info = self.lag_server(index, txns=txns, ms=ms)
        try:
            yield info
        finally:
            if self.running:
                with contextlib.suppress(ZkMockDied):
                    self.lag_server(index)

    def leader_election(self, window: Optional[float] = None) -> None:
        """Starts a leader election: every server drops its clients for the
        window (seconds; by default the ``election_window`` the server was
        started with, in ms), then, once a quorum is up, the highest index
        that is up leads in a new epoch."""
        body = None if window is None else {"ms": int(round(window * 1000))}
        self._call("POST", "/election", body)

    def __repr__(self) -> str:
        state = self._connect_string if self.running else "stopped"
        return f"ZkMock({state})"


def _error_code(code: Union[str, int]) -> int:
    if isinstance(code, int):
        return code
    key = code.upper().replace("_", "")
    for name, value in ERROR_CODES.items():
        if name == key:
            return value
    raise ValueError(f"unknown ZooKeeper error code {code!r}; one of {', '.join(ERROR_CODES)}")


def _query(**params: Optional[Union[str, int]]) -> str:
    given = {k: str(v) for k, v in params.items() if v is not None}
    return ("?" + urllib.parse.urlencode(given)) if given else ""


def _pump(stream: Any, put: Any) -> None:
    """Reads a child's stream line by line into ``put`` (``None`` at its end)."""
    try:
        for raw in iter(stream.readline, b""):
            put(raw.decode("utf-8", "replace").rstrip("\n"))
    except (OSError, ValueError):
        pass
    finally:
        with contextlib.suppress(Exception):
            put(None)
