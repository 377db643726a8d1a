"""A pytest plugin that runs kazoo's own test suite against zk-mock.

kazoo's harness (kazoo/testing/harness.py) starts a cluster of Java ZooKeeper
servers; this plugin replaces it with one `zk-mock` binary ($ZK_MOCK_BIN),
a standalone server, restartable on the same port as the harness expects.

    ZK_MOCK_BIN=target/debug/zk-mock python3 -m pytest -p zkmock_kazoo \
        --pyargs kazoo.tests
"""
import os
import socket
import subprocess

import kazoo.testing.harness as harness


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MockServer:
    """What the harness uses of `ManagedZooKeeper`."""

    host = "127.0.0.1"

    def __init__(self, binary):
        self.binary = binary
        self.client_port = _free_port()
        self.secure_client_port = self.client_port
        self.process = None

    @property
    def address(self):
        return "%s:%s" % (self.host, self.client_port)

    @property
    def secure_address(self):
        return self.address

    @property
    def running(self):
        return self.process is not None and self.process.poll() is None

    def run(self):
        if self.running:
            return
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.client_port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        # The first line says where it listens: it is serving.
        self.process.stdout.readline()

    def stop(self):
        if self.process is not None:
            self.process.terminate()
            self.process.wait()
            self.process = None

    def reset(self):
        self.stop()

    def destroy(self):
        self.stop()

    def get_logs(self, num_lines=100):
        return []


class MockCluster:
    """What the harness uses of `ZookeeperCluster`."""

    def __init__(self, binary):
        self._servers = [MockServer(binary)]

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
        self.stop()

    def reset(self):
        self.stop()

    def get_logs(self):
        return []


_CLUSTER = None


def _get_global_cluster():
    global _CLUSTER
    if _CLUSTER is None:
        _CLUSTER = MockCluster(os.environ["ZK_MOCK_BIN"])
    return _CLUSTER


def pytest_configure(config):
    harness.get_global_cluster = _get_global_cluster
