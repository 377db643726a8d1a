"""A pytest plugin that runs kazoo's own test suite against zk-mock.

kazoo's harness (kazoo/testing/harness.py) starts a cluster of Java ZooKeeper
servers; with $ZK_MOCK_BIN set this plugin replaces it with one `zk-mock`
binary: a standalone server with ZOOKEEPER_CLUSTER_SIZE=1, else an ensemble
(`--servers N`, read-only mode on as kazoo's servers have it, local sessions
when the harness asks for them) whose servers kazoo's tests stop and start
one by one. Without it, kazoo's own harness runs (the baseline: real
ZooKeeper). Either way, with $KAZOO_OUTCOMES set, each test's outcome is
written there, one `nodeid<TAB>outcome` line per test.

    # against zk-mock
    ZK_MOCK_BIN=target/debug/zk-mock KAZOO_OUTCOMES=mock.tsv \
        python3 -m pytest -p zkmock_kazoo --pyargs kazoo.tests
    # the baseline: one real ZooKeeper 3.8.0 from Debian's packages
    ZOOKEEPER_CLASSPATH='/usr/share/java/*' ZOOKEEPER_CLUSTER_SIZE=1 \
        ZOOKEEPER_VERSION=3.8.0 KAZOO_OUTCOMES=real.tsv \
        python3 -m pytest -p zkmock_kazoo --pyargs kazoo.tests
    # an ensemble of 3 (zk-mock's, or, without ZK_MOCK_BIN, real servers)
    ZOOKEEPER_CLUSTER_SIZE=3 ZK_MOCK_BIN=... KAZOO_OUTCOMES=mock3.tsv ...

`cargo test -p zk-mock-cli --features cross-clients --test clients kazoos_own`
runs the first and requires every test in `zookeeper-3.8.0.passed` (the
tests that pass on the baseline) to pass; `..._on_an_ensemble` runs the
3-server form against `zookeeper-3.8.0-ensemble.passed`.
"""
import json
import os
import socket
import subprocess
import urllib.error
import urllib.request

import tempfile

from OpenSSL.crypto import FILETYPE_PEM, dump_certificate, dump_privatekey

import kazoo.testing.harness as harness
from kazoo.testing.common import ZookeeperCluster


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MockServer:
    """What the harness uses of `ManagedZooKeeper`.

    kazoo's tests stop and restart a server and expect what a restarted
    ZooKeeper keeps: its data and its sessions (a client reconnects to the
    same session after `stop(); run()`). The mock keeps both in memory, so
    `stop()` takes the server down as clients see it instead: every
    connection is cut and new ones are turned away until `run()`. The
    process lives on until `destroy()`.
    """

    host = "127.0.0.1"

    def __init__(self, binary, tls_dir):
        self.binary = binary
        self.tls_dir = tls_dir
        self.client_port = _free_port()
        self.admin_port = _free_port()
        self.secure_client_port = _free_port()
        self.process = None
        self.down = False

    @property
    def address(self):
        return "%s:%s" % (self.host, self.client_port)

    @property
    def secure_address(self):
        return "%s:%s" % (self.host, self.secure_client_port)

    @property
    def running(self):
        alive = self.process is not None and self.process.poll() is None
        return alive and not self.down

    def _admin(self, path):
        url = "http://127.0.0.1:%d%s" % (self.admin_port, path)
        req = urllib.request.Request(url, data=b"", method="POST")
        with urllib.request.urlopen(req, timeout=5) as r:
            return json.load(r)

    def run(self):
        if self.process is not None and self.process.poll() is None:
            if self.down:
                self._admin("/connections/accept")
                self.down = False
            return
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.client_port),
                "--admin-port",
                str(self.admin_port),
                # kazoo's harness gives its servers this super user
                # ("super", password "test").
                "--super-digest",
                "super:D/InIHSb7yEEbrWz8b9l71RjZJU=",
                # ... and turns reconfigEnabled on.
                "--reconfig-enabled",
                # ... and a secureClientPort with its generated server
                # certificate. (Not its truststore: kazoo's certificates
                # are X.509 v1, which rustls does not accept from a client,
                # so the mock asks for no client certificate.)
                "--secure-port",
                str(self.secure_client_port),
                "--tls-cert",
                os.path.join(self.tls_dir, "server.pem"),
                "--tls-key",
                os.path.join(self.tls_dir, "server.key"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        # The first line says where it listens: it is serving.
        self.process.stdout.readline()
        self.down = False

    def stop(self):
        if self.process is None or self.process.poll() is not None:
            return
        if not self.down:
            self._admin("/connections/refuse")
            self._admin("/sessions/disconnect")
            self.down = True

    def destroy(self):
        if self.process is not None:
            self.process.terminate()
            self.process.wait()
            self.process = None
        self.down = False

    def reset(self):
        self.destroy()

    def get_logs(self, num_lines=100):
        return []


class EnsembleServer:
    """One server of a `zk-mock --servers N`, as `ManagedZooKeeper`: `stop()`
    kills it (its clients fail over to the others; a restarted ZooKeeper
    keeps its data and the ensemble its sessions), `run()` restarts it."""

    host = "127.0.0.1"

    def __init__(self, ensemble, index):
        self.ensemble = ensemble
        self.index = index
        self.killed = False

    @property
    def address(self):
        return self.ensemble.addresses[self.index]

    @property
    def secure_address(self):
        # The ensemble's secure port is server 0's.
        return self.ensemble.secure_address

    @property
    def running(self):
        return self.ensemble.alive() and not self.killed

    def run(self):
        if not self.ensemble.alive():
            self.ensemble.start()
        elif self.killed:
            self.ensemble.admin("/servers/%d/restart" % self.index)
        self.killed = False

    def stop(self):
        if self.ensemble.alive() and not self.killed:
            self.ensemble.admin("/servers/%d/kill" % self.index)
            self.killed = True

    def destroy(self):
        self.ensemble.destroy()
        self.killed = False

    def reset(self):
        self.destroy()

    def get_logs(self, num_lines=100):
        return []


class MockEnsemble:
    """The `zk-mock --servers N` process behind `EnsembleServer`s."""

    def __init__(self, binary, tls_dir, size, local_sessions):
        self.binary = binary
        self.tls_dir = tls_dir
        self.size = size
        self.local_sessions = local_sessions
        self.process = None
        self.addresses = []
        self.secure_address = None
        self.admin_address = None

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def admin(self, path):
        url = "http://%s%s" % (self.admin_address, path)
        req = urllib.request.Request(url, data=b"", method="POST")
        try:
            with urllib.request.urlopen(req, timeout=5) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:
            if e.code != 409:  # 409: it already was
                raise

    def start(self):
        args = [
            self.binary,
            "--port", "0",
            "--servers", str(self.size),
            "--admin-port", "0",
            "--super-digest", "super:D/InIHSb7yEEbrWz8b9l71RjZJU=",
            "--reconfig-enabled",
            # kazoo's servers run with -Dreadonlymode.enabled=true.
            "--readonly-mode",
            "--secure-port", str(_free_port()),
            "--tls-cert", os.path.join(self.tls_dir, "server.pem"),
            "--tls-key", os.path.join(self.tls_dir, "server.key"),
        ]
        if self.local_sessions:
            args.append("--local-sessions")
        self.process = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        # "zk-mock listening on A,B,C (seed N)", "zk-mock TLS on S",
        # "zk-mock admin interface on http://ADDR"
        first = self.process.stdout.readline().split()
        self.addresses = first[3].split(",")
        for line in self.process.stdout:
            if line.startswith("zk-mock TLS on "):
                self.secure_address = line.split()[3]
            if line.startswith("zk-mock admin interface on http://"):
                self.admin_address = line.split("http://")[1].split()[0]
                break

    def destroy(self):
        if self.process is not None:
            self.process.terminate()
            self.process.wait()
            self.process = None


class MockCluster:
    """What the harness uses of `ZookeeperCluster`."""

    def __init__(self, binary, size=1, local_sessions=False):
        # The same certificates kazoo's own cluster generates.
        self._ssl_configuration = {}
        ZookeeperCluster.perform_ssl_certs_generation(self)
        self._tls_dir = tempfile.mkdtemp(prefix="zk-mock-kazoo-tls-")
        ssl = self._ssl_configuration
        for name, data in [
            ("server.pem", dump_certificate(FILETYPE_PEM, ssl["server_cert"])),
            ("server.key", dump_privatekey(FILETYPE_PEM, ssl["server_key"])),
        ]:
            with open(os.path.join(self._tls_dir, name), "wb") as f:
                f.write(data)
        if size == 1:
            self._servers = [MockServer(binary, self._tls_dir)]
        else:
            ensemble = MockEnsemble(binary, self._tls_dir, size, local_sessions)
            self._servers = [EnsembleServer(ensemble, i) for i in range(size)]

    get_ssl_client_configuration = ZookeeperCluster.get_ssl_client_configuration

    def __getitem__(self, k):
        return self._servers[k]

    def __iter__(self):
        return iter(self._servers)

    def __len__(self):
        return len(self._servers)

    def start(self):
        for s in self._servers:
            s.run()

    def stop(self):
        for s in self._servers:
            s.stop()

    def terminate(self):
        for s in self._servers:
            s.destroy()

    def reset(self):
        self.terminate()

    def get_logs(self):
        return []


_CLUSTER = None
_CLUSTER_CONF = None


def _get_global_cluster():
    # As kazoo's get_global_cluster: a new cluster when the settings change
    # (TestReadOnlyMode turns local sessions on).
    global _CLUSTER, _CLUSTER_CONF
    conf = (
        int(os.environ.get("ZOOKEEPER_CLUSTER_SIZE", "1")),
        os.environ.get("ZOOKEEPER_LOCAL_SESSION_RO", "false") == "true",
    )
    if _CLUSTER is not None and _CLUSTER_CONF != conf:
        _CLUSTER.terminate()
        _CLUSTER = None
    if _CLUSTER is None:
        _CLUSTER = MockCluster(os.environ["ZK_MOCK_BIN"], *conf)
        _CLUSTER_CONF = conf
    return _CLUSTER


_OUTCOMES = {}


def pytest_configure(config):
    if os.environ.get("ZK_MOCK_BIN"):
        harness.get_global_cluster = _get_global_cluster


def pytest_runtest_logreport(report):
    # A test passes if its setup, call and teardown all do.
    if report.failed:
        _OUTCOMES[report.nodeid] = "failed"
    elif report.skipped:
        _OUTCOMES.setdefault(report.nodeid, "skipped")
    elif report.when == "call":
        _OUTCOMES.setdefault(report.nodeid, "passed")


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("KAZOO_OUTCOMES")
    if path:
        with open(path, "w") as f:
            for nodeid, outcome in sorted(_OUTCOMES.items()):
                f.write("%s\t%s\n" % (nodeid, outcome))
