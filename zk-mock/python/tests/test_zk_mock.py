"""zk_mock and its pytest plugin, through kazoo, against the installed binary.

Run from a virtualenv with the wheel installed (as `.ci/run` does):
``pytest zk-mock/python/tests``.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time

import pytest
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import ConnectionLoss, NoNodeError, NodeExistsError

import zk_mock as zk_mock_module
from zk_mock import ZkMock, ZkMockDied, ZkMockError, ZkMockNotFound, ZkMockStartError

# pytester runs the plugin in pytest runs of its own.
pytest_plugins = ["pytester"]


def connect(server: ZkMock, timeout: float = 10.0) -> KazooClient:
    client = KazooClient(hosts=server.connect_string, timeout=timeout)
    client.start(timeout=10)
    return client


def wait_for(what: str, done, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.fixture
def clients():
    made = []

    def make(server: ZkMock, **kw) -> KazooClient:
        c = connect(server, **kw)
        made.append(c)
        return c

    yield make
    for c in made:
        c.stop()
        c.close()


@pytest.mark.skipif(not os.environ.get("ZK_MOCK_WHEEL_TEST"), reason="CI's wheel job only")
def test_the_package_under_test_is_the_installed_wheel():
    # `.ci/run` installs the wheel into a fresh virtualenv: the module and the
    # binary must come from there, not from the source tree.
    assert "site-packages" in zk_mock_module.__file__
    binary = zk_mock_module.find_binary()
    assert binary.startswith(os.path.dirname(os.path.dirname(zk_mock_module.sysconfig.get_path("scripts"))))


def test_the_fixture_serves_a_real_client(zk_mock, clients):
    c = clients(zk_mock)
    c.create("/a", b"v")
    assert c.get("/a")[0] == b"v"
    assert zk_mock.connect_string.startswith("127.0.0.1:")
    assert [s.id for s in zk_mock.sessions()] == [c.client_id[0]]


def test_expiring_a_session_removes_its_ephemerals_and_tells_its_client(zk_mock, clients):
    holder = clients(zk_mock)
    observer = clients(zk_mock)
    holder.create("/eph", ephemeral=True)
    states = []
    holder.add_listener(states.append)
    zk_mock.expire(holder.client_id[0])
    wait_for("the session to be lost", lambda: KazooState.LOST in states)
    assert observer.exists("/eph") is None


def test_unknown_sessions_are_not_found(zk_mock):
    with pytest.raises(ZkMockNotFound):
        zk_mock.expire(12345)


def test_disconnect_keeps_the_session(zk_mock, clients):
    c = clients(zk_mock)
    sid = c.client_id[0]
    c.create("/eph", ephemeral=True)
    states = []
    c.add_listener(states.append)
    zk_mock.disconnect(sid)
    wait_for("a reconnect", lambda: states[-2:] == [KazooState.SUSPENDED, KazooState.CONNECTED])
    assert c.client_id[0] == sid
    assert c.exists("/eph") is not None


def test_a_stall_holds_a_client_until_it_ends(zk_mock, clients):
    c = clients(zk_mock)
    sid = c.client_id[0]
    with zk_mock.stall(sid):
        pending = c.exists_async("/")
        time.sleep(0.3)
        assert not pending.ready(), "nothing moves while stalled"
        assert [s.stalled for s in zk_mock.sessions()] == [True]
    assert pending.get(timeout=5) is not None


def test_a_rule_fails_matching_requests_and_counts_them(zk_mock, clients):
    c = clients(zk_mock)
    c.create("/cfg", b"v")
    with zk_mock.rule(ops="getData", path="/cfg", fail="NONODE") as rule:
        with pytest.raises(NoNodeError):
            c.get("/cfg")
        assert c.exists("/cfg") is not None, "other ops pass"
        assert rule.fired == 1
    assert c.get("/cfg")[0] == b"v", "removed on leaving the block"
    assert zk_mock.rules() == []


def test_a_lost_reply_applies_the_create_and_cuts_the_connection(zk_mock, clients):
    c = clients(zk_mock)
    zk_mock.rule(ops="create", path="/job", lose_reply=True, times=1)
    with pytest.raises(ConnectionLoss):
        c.create("/job", b"")
    # Applied all the same: a retry finds it.
    with pytest.raises(NodeExistsError):
        c.retry(c.create, "/job", b"")


def test_a_rule_after_another_locks_requests_out_for_its_window(zk_mock, clients):
    c = clients(zk_mock)
    c.create("/mylock", b"")
    first = zk_mock.rule(ops="create", path_prefix="/mylock/", lose_reply=True, times=1)
    lockout = zk_mock.rule(ops="getData", after=first, within=60, disconnect=True)
    with pytest.raises(ConnectionLoss):
        c.create("/mylock/a", b"")
    # Within the minute after the first fired, every getData's connection is closed.
    with pytest.raises(ConnectionLoss):
        c.get("/mylock/a")
    assert lockout.fired >= 1
    assert [r.get("after") for r in zk_mock.rules()] == [None, {"rule": first.id, "for_ms": 60000}]
    with pytest.raises(ValueError, match="together"):
        zk_mock.rule(ops="create", after=first, disconnect=True)


def test_rule_arguments_are_checked_before_they_reach_the_server(zk_mock):
    with pytest.raises(ValueError, match="exactly one"):
        zk_mock.rule(ops="create")
    with pytest.raises(ValueError, match="exactly one"):
        zk_mock.rule(ops="create", stall=True, expire=True)
    with pytest.raises(ValueError, match="unknown ZooKeeper error code"):
        zk_mock.rule(fail="BANANA")
    with pytest.raises(ZkMockError, match="bad rule"):
        zk_mock.rule(ops="frobnicate", stall=True)


def test_refused_connections_keep_new_clients_out_until_the_block_ends(zk_mock):
    with zk_mock.refuse_connections():
        c = KazooClient(hosts=zk_mock.connect_string)
        with pytest.raises(Exception):
            c.start(timeout=1)
        c.stop()
        c.close()
    c = connect(zk_mock)
    assert c.exists("/") is not None
    c.stop()
    c.close()


@pytest.mark.zk_mock(clock="manual", tick_time=100)
def test_the_manual_clock_expires_sessions_when_the_test_says(zk_mock, clients):
    c = clients(zk_mock, timeout=2.0)
    c.create("/eph", ephemeral=True)
    assert zk_mock.clock()["mode"] == "manual"
    time.sleep(0.5)
    assert len(zk_mock.sessions()) == 1, "real time does not expire it"
    zk_mock.advance_clock(10_000)
    assert zk_mock.sessions() == []


@pytest.mark.zk_mock(commit_latency_us=150_000)
def test_a_commit_latency_holds_each_write_for_its_sync(zk_mock, clients):
    c = clients(zk_mock)
    begun = time.monotonic()
    c.create("/slow", b"v")
    assert time.monotonic() - begun >= 0.15, "the create waited for its sync"
    assert c.get("/slow")[0] == b"v"


@pytest.mark.zk_mock(connect_latency_us=150_000)
def test_a_connect_latency_holds_each_handshake(zk_mock, clients):
    begun = time.monotonic()
    c = clients(zk_mock)
    assert time.monotonic() - begun >= 0.15, "the handshake waited"
    c.create("/up", b"v")
    assert c.get("/up")[0] == b"v"


@pytest.mark.zk_mock(request_latency_us=150_000)
def test_a_request_latency_holds_each_read(zk_mock, clients):
    c = clients(zk_mock)
    c.create("/r", b"v")
    begun = time.monotonic()
    assert c.get("/r")[0] == b"v"
    assert time.monotonic() - begun >= 0.15, "the read waited"


def test_the_recorder_sees_every_request_and_notification(zk_mock, clients):
    c = clients(zk_mock)
    seen = threading.Event()
    c.create("/w", b"1")
    c.get("/w", watch=lambda event: seen.set())
    c.set("/w", b"2")
    assert seen.wait(5)
    ops = [r["op"] for r in zk_mock.requests(path="/w")]
    assert ops[:3] == ["create", "getData", "setData"]
    (n,) = zk_mock.notifications(path="/w")
    assert n["session"] == c.client_id[0]
    assert zk_mock.counts()["notifications"] == 1
    zk_mock.clear_recording()
    assert zk_mock.requests(path="/w") == []


def test_a_sequence_counter_set_near_its_end_wraps_to_negative(zk_mock, clients):
    c = clients(zk_mock)
    c.create("/locks")
    zk_mock.set_sequence_counter("/locks", 2**31 - 1)
    first = c.create("/locks/n-", sequence=True)
    second = c.create("/locks/n-", sequence=True)
    assert (first, second) == ("/locks/n-2147483647", "/locks/n--2147483648")
    with pytest.raises(ZkMockNotFound, match="no node"):
        zk_mock.set_sequence_counter("/none", 1)
    with pytest.raises(ZkMockError, match="32-bit"):
        zk_mock.set_sequence_counter("/locks", 2**31)


def test_the_snapshot_holds_the_tree(zk_mock, clients):
    c = clients(zk_mock)
    c.create("/snap", b"x")
    snap = zk_mock.snapshot()
    assert "/snap" in snap["tree"]
    assert snap["last_zxid"] >= 1


def test_a_missing_binary_says_where_it_looked(monkeypatch, tmp_path):
    monkeypatch.setenv("ZK_MOCK_BINARY", "/nonexistent/zk-mock")
    monkeypatch.setenv("PATH", "/nonexistent")
    # As if the wheel had not installed it in this Python's scripts directory.
    monkeypatch.setattr(zk_mock_module.sysconfig, "get_path", lambda name: str(tmp_path))
    with pytest.raises(ZkMockStartError) as e:
        ZkMock(binary="/also/missing").start()
    message = str(e.value)
    assert "/also/missing" in message
    assert "ZK_MOCK_BINARY" in message and "/nonexistent/zk-mock" in message
    assert str(tmp_path) in message
    assert "PATH" in message


def test_a_port_in_use_is_a_clear_error_not_a_hang():
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(ZkMockStartError) as e:
        ZkMock(port=port).start()
    assert time.monotonic() - started < 10
    assert "exited with code" in str(e.value)
    assert "in use" in str(e.value).lower()
    taken.close()


def test_a_server_that_dies_mid_test_is_reported(zk_mock):
    os.kill(zk_mock._process.pid, signal.SIGKILL)
    wait_for("the process to end", lambda: not zk_mock.running)
    with pytest.raises(ZkMockDied, match="exited"):
        zk_mock.sessions()


def test_a_stopped_server_starts_again_as_a_new_one():
    server = ZkMock()
    with server:
        first_pid = server._process.pid
        c = connect(server)
        c.create("/gone", b"")
        c.stop()
        c.close()
    with server:
        assert server.running
        c = connect(server)
        assert c.exists("/gone") is None, "a new process, a new tree"
        c.stop()
        c.close()
        assert server._process.pid != first_pid, "a new process"


def test_stopping_twice_is_harmless_and_the_port_closes():
    server = ZkMock().start()
    host, port = server.hosts[0].split(":")
    server.stop()
    server.stop()
    with pytest.raises(OSError):
        socket.create_connection((host, int(port)), timeout=1)


def test_the_shared_server_is_reset_before_each_test(pytester):
    # Two tests in order, in a pytest run of their own, each through the
    # installed plugin.
    pytester.makepyfile(
        """
        from kazoo.client import KazooClient

        def _client(server):
            c = KazooClient(hosts=server.connect_string)
            c.start(timeout=10)
            return c

        def test_first_leaves_things_behind(zk_mock_server):
            c = _client(zk_mock_server)
            c.create("/left-over", b"")
            zk_mock_server.rule(ops="delete", fail="NOAUTH")
            c.stop()

        def test_second_starts_clean(zk_mock_server):
            c = _client(zk_mock_server)
            assert c.exists("/left-over") is None
            assert zk_mock_server.rules() == []
            assert c.get_children("/") == ["zookeeper"]
            c.stop()
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def connect_to(server: ZkMock, index: int) -> KazooClient:
    """A client of one server of an ensemble (its connect string names only that one)."""
    client = KazooClient(hosts=server.hosts[index], timeout=10.0)
    client.start(timeout=10)
    return client


@pytest.mark.zk_mock(servers=3)
def test_a_lagging_follower_serves_stale_reads_and_the_leader_refuses_a_lag(zk_mock):
    servers = zk_mock.servers()
    assert [(s.index, s.leader, s.status) for s in servers] == [
        (0, True, "serving"),
        (1, False, "serving"),
        (2, False, "serving"),
    ]
    assert [s.addr for s in servers] == zk_mock.hosts
    writer = connect_to(zk_mock, 0)
    reader = connect_to(zk_mock, 2)
    try:
        with pytest.raises(ZkMockError, match="server 0 is the leader: a leader applies each txn"):
            zk_mock.lag_server(0, txns=1)
        with pytest.raises(ValueError):
            zk_mock.lag_server(2, txns=1, ms=10)
        assert zk_mock.lag_server(2, txns=1).lag == {"txns": 1}
        writer.create("/config", b"v1")
        assert reader.exists("/config") is None, "a stale read"
        assert zk_mock.servers()[2].behind == 1
        assert zk_mock.catch_up_server(2).behind == 0
        assert reader.get("/config")[0] == b"v1"
        # Inside the block it lags; on leaving, it applies what it held back.
        with zk_mock.lagging(1, txns=2) as info:
            assert info.lag == {"txns": 2}
            writer.set("/config", b"v2")
            assert zk_mock.servers()[1].behind == 1
        assert zk_mock.servers()[1].lag == {}
        assert zk_mock.servers()[1].behind == 0
        assert zk_mock.lag_server(1, ms=500).lag == {"ms": 500}
    finally:
        # A client's close is a write: through a lagging server it would wait
        # for that server to apply it.
        zk_mock.lag_server(1)
        zk_mock.lag_server(2)
        for c in (writer, reader):
            c.stop()
            c.close()


@pytest.mark.zk_mock(servers=3)
def test_a_session_expires_at_the_pace_of_its_lagging_server(zk_mock):
    writer = connect_to(zk_mock, 0)
    client = connect_to(zk_mock, 2)
    states = []
    client.add_listener(states.append)
    try:
        writer.create("/e", b"v")
        client.sync("/e")
        zk_mock.lag_server(2, txns=1)
        # The leader decides the expiry; server 2 holds the closeSession
        # back and serves the session from its replica as before.
        zk_mock.expire(client.client_id[0])
        assert zk_mock.servers()[2].behind == 1
        assert client.get("/e")[0] == b"v"
        assert client.state == KazooState.CONNECTED and states == []
        # One more commit: server 2 applies the closeSession and closes the
        # connection; the client comes back to hear its session expired.
        writer.create("/tick")
        wait_for("the expiry, at server 2's pace", lambda: KazooState.LOST in states)
    finally:
        # The client's next session, and any close, would wait for the lag.
        zk_mock.lag_server(2)
        for c in (writer, client):
            c.stop()
            c.close()


@pytest.mark.zk_mock(servers=3)
def test_a_killed_or_partitioned_server_drops_its_clients_until_it_is_back(zk_mock):
    client = connect_to(zk_mock, 1)
    states = []
    client.add_listener(states.append)
    session = client.client_id[0]
    try:
        client.create("/a", b"v")
        assert zk_mock.kill_server(1) is True
        assert zk_mock.kill_server(1) is False, "it was not serving"
        assert zk_mock.servers()[1].status == "killed"
        wait_for("the client to lose its server", lambda: KazooState.SUSPENDED in states)
        assert zk_mock.restart_server(1) is True
        assert zk_mock.restart_server(1) is False, "it was not down"
        wait_for("the client to reconnect", lambda: states[-1] == KazooState.CONNECTED)
        assert client.client_id[0] == session, "the session survives"
        assert client.get("/a")[0] == b"v"

        states.clear()
        assert zk_mock.partition_server(1) is True
        assert zk_mock.servers()[1].status == "partitioned"
        wait_for("the client to lose its server", lambda: KazooState.SUSPENDED in states)
        assert zk_mock.heal_server(1) is True
        assert zk_mock.heal_server(1) is False, "it was not down"
        wait_for("the client to reconnect", lambda: states[-1] == KazooState.CONNECTED)
        assert client.client_id[0] == session
    finally:
        client.stop()
        client.close()


@pytest.mark.zk_mock(servers=3, election_window=200)
def test_killing_the_leader_elects_the_highest_id_left(zk_mock):
    assert zk_mock.kill_server(0) is True
    wait_for("a new leader", lambda: any(s.leader and s.index != 0 for s in zk_mock.servers()))
    servers = zk_mock.servers()
    assert [s.index for s in servers if s.leader] == [2]
    assert servers[2].last_zxid >> 32 > 0, "a new epoch"
    zk_mock.leader_election(2.0)  # long enough to see it under way
    assert all(s.status == "electing" for s in zk_mock.servers() if s.index != 0)
    wait_for("the election's end", lambda: zk_mock.servers()[2].status == "serving")
    assert zk_mock.restart_server(0) is True
