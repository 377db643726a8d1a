"""Start cost per test, side by side: zk-mock (what the ``zk_mock`` fixture does)
against a ZooKeeper 3.8 started by kazoo's own test harness (no Docker), each from
start to the first connected kazoo client, then stopped. Medians over the runs.

    python zk-mock/python/benchmarks/start_cost.py [--runs 20] [--classpath '/usr/share/java/*']

Needs the zk-mock package (the wheel) and kazoo installed, and for the ZooKeeper side
Java and Debian's ``zookeeper`` package (its jars in /usr/share/java).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import time

from kazoo.client import KazooClient
from kazoo.testing.common import ZookeeperCluster

from zk_mock import ZkMock


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def first_client(hosts: str, deadline_s: float = 60.0) -> KazooClient:
    client = KazooClient(hosts=hosts, timeout=10, connection_retry={"max_tries": -1, "delay": 0.01, "max_delay": 0.05})
    client.start(timeout=deadline_s)
    return client


def seconds_to_first_client(since: float, hosts: str) -> float:
    """Connects a client to `hosts`: the seconds from `since` until it is connected."""
    client = first_client(hosts)
    took = time.perf_counter() - since
    client.stop()
    client.close()
    return took


def zk_mock_once() -> float:
    t = time.perf_counter()
    server = ZkMock().start()
    took = seconds_to_first_client(t, server.connect_string)
    server.stop()
    return took


def kazoo_harness_once(classpath: str) -> float:
    # kazoo's harness's cluster of one server. Its certificates are made before
    # the clock starts, and the server is started directly: ZookeeperCluster.start()
    # would add a fixed 2 s sleep, which is kazoo's choice and not ZooKeeper's cost.
    cluster = ZookeeperCluster(classpath=classpath, size=1, port_offset=free_port() // 10 * 10 % 50000 + 10000)
    server = cluster[0]
    t = time.perf_counter()
    server.run()
    took = seconds_to_first_client(t, server.address)
    cluster.terminate()
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--classpath", default=os.environ.get("ZOOKEEPER_CLASSPATH", "/usr/share/java/*"))
    args = ap.parse_args()
    rows = []
    for name, once in (("zk-mock (the zk_mock fixture)", zk_mock_once),
                       ("ZooKeeper 3.8 by kazoo's harness", lambda: kazoo_harness_once(args.classpath))):
        once()  # warm the page cache
        times = [once() for _ in range(args.runs)]
        rows.append((name, statistics.median(times), min(times), max(times)))
    print(f"| server | median, start to first connected client | min | max | runs |")
    print(f"|---|---|---|---|---|")
    for name, med, lo, hi in rows:
        print(f"| {name} | {med * 1000:.0f} ms | {lo * 1000:.0f} ms | {hi * 1000:.0f} ms | {args.runs} |")
    print(f"\nzk-mock starts {rows[1][1] / rows[0][1]:.0f}x faster (medians).")


if __name__ == "__main__":
    main()
