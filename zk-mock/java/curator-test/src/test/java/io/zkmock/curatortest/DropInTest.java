package io.zkmock.curatortest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.ConnectException;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryOneTime;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.KillSession;
import org.apache.curator.test.TestingCluster;
import org.apache.curator.test.TestingServer;
import org.apache.curator.test.Timing;
import org.apache.curator.test.compatibility.Timing2;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.Test;

/**
 * curator-test's classes through Curator 5.4, written against curator-test's API alone: the
 * same compiled tests run once with zk-mock's drop-in on the class path and once with
 * Curator's own curator-test (run-tests.sh), and must pass on both.
 */
class DropInTest {
    private final Timing timing = new Timing();

    static CuratorFramework client(String connectString, int sessionMs) {
        CuratorFramework c = CuratorFrameworkFactory.builder()
            .connectString(connectString)
            .sessionTimeoutMs(sessionMs)
            .connectionTimeoutMs(new Timing().connection())
            .retryPolicy(new RetryOneTime(100))
            .build();
        c.start();
        return c;
    }

    /** Connection states as the client reports them. */
    static BlockingQueue<ConnectionState> states(CuratorFramework c) {
        BlockingQueue<ConnectionState> q = new LinkedBlockingQueue<>();
        c.getConnectionStateListenable().addListener((client, s) -> q.add(s));
        return q;
    }

    static void awaitState(BlockingQueue<ConnectionState> q, ConnectionState want) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(new Timing().forWaiting().seconds());
        List<ConnectionState> seen = new ArrayList<>();
        while (System.nanoTime() < deadline) {
            ConnectionState s = q.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
            if (s == want) {
                return;
            }
            if (s != null) {
                seen.add(s);
            }
        }
        throw new AssertionError("no " + want + " state (saw " + seen + ")");
    }

    /** Waits until exactly one of the latches leads (a latch may be re-electing after a reconnect). */
    static void awaitOneLeader(LeaderLatch a, LeaderLatch b) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(new Timing().forWaiting().seconds());
        while (a.hasLeadership() == b.hasLeadership()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not exactly one leader: " + a.hasLeadership() + ", " + b.hasLeadership());
            }
            Thread.sleep(10);
        }
    }

    static boolean refused(int port) throws Exception {
        try (Socket s = new Socket("127.0.0.1", port)) {
            return false;
        } catch (ConnectException e) {
            return true;
        }
    }

    @Test
    void aServerServesItsSpecsPortAndTickTime() throws Exception {
        int port = InstanceSpec.getRandomPort();
        InstanceSpec spec = new InstanceSpec(null, port, -1, -1, true, -1, 500, -1);
        try (TestingServer server = new TestingServer(spec, true)) {
            assertEquals(port, server.getPort());
            assertEquals(spec.getHostname() + ":" + port, server.getConnectString());
            assertTrue(server.getTempDirectory().isDirectory());
            // A tick of 500 ms: the minimum session timeout is one tick and the maximum 20.
            try (CuratorFramework low = client(server.getConnectString(), 100);
                 CuratorFramework high = client(server.getConnectString(), 60_000)) {
                low.blockUntilConnected();
                high.blockUntilConnected();
                assertEquals(500, low.getZookeeperClient().getZooKeeper().getSessionTimeout());
                assertEquals(10_000, high.getZookeeperClient().getZooKeeper().getSessionTimeout());
                low.create().forPath("/a", "x".getBytes());
                assertEquals("x", new String(high.getData().forPath("/a")));
            }
        }
    }

    @Test
    void aServerNotStartedListensOnlyOnceStarted() throws Exception {
        try (TestingServer server = new TestingServer(false)) {
            assertTrue(refused(server.getPort()));
            server.start();
            try (CuratorFramework c = client(server.getConnectString(), timing.session())) {
                assertTrue(c.blockUntilConnected(timing.forWaiting().seconds(), TimeUnit.SECONDS));
            }
        }
    }

    @Test
    void sessionsSurviveARestartAndTheClientReconnects() throws Exception {
        try (TestingServer server = new TestingServer();
             CuratorFramework c = client(server.getConnectString(), new Timing2().session())) {
            BlockingQueue<ConnectionState> states = states(c);
            c.blockUntilConnected();
            c.create().withMode(CreateMode.EPHEMERAL).forPath("/mine");
            long session = c.getZookeeperClient().getZooKeeper().getSessionId();
            server.restart();
            awaitState(states, ConnectionState.SUSPENDED);
            awaitState(states, ConnectionState.RECONNECTED);
            assertEquals(session, c.getZookeeperClient().getZooKeeper().getSessionId());
            assertNotNull(c.checkExists().forPath("/mine"));
        }
    }

    /** A stopped server frees its port: a new server can start on it at once. */
    @Test
    void aStoppedServersPortTakesANewServer() throws Exception {
        TestingServer first = new TestingServer();
        int port = first.getPort();
        try {
            try (CuratorFramework c = client(first.getConnectString(), timing.session())) {
                c.blockUntilConnected();
                c.create().forPath("/from-first");
            }
            first.stop();
            assertTrue(refused(port), "a stopped server's port refuses connections");
            try (TestingServer second = new TestingServer(port);
                 CuratorFramework c = client(second.getConnectString(), timing.session())) {
                assertEquals(port, second.getPort());
                c.blockUntilConnected();
                assertNull(c.checkExists().forPath("/from-first"), "a new server, a new tree");
                c.create().forPath("/from-second");
            }
            // The second has gone; the first comes back on the port with its own tree.
            first.restart();
            try (CuratorFramework c = client(first.getConnectString(), timing.session())) {
                c.blockUntilConnected();
                assertNotNull(c.checkExists().forPath("/from-first"));
                assertNull(c.checkExists().forPath("/from-second"));
            }
        } finally {
            first.close();
        }
    }

    /** KillSession expires the session: the holder loses its lock and another takes it. */
    @Test
    void killSessionExpiresTheHoldersSessionAndTheLockPasses() throws Exception {
        try (TestingServer server = new TestingServer();
             CuratorFramework holder = client(server.getConnectString(), timing.session());
             CuratorFramework waiter = client(server.getConnectString(), timing.session())) {
            BlockingQueue<ConnectionState> states = states(holder);
            InterProcessMutex mine = new InterProcessMutex(holder, "/locks/a");
            assertTrue(mine.acquire(timing.forWaiting().seconds(), TimeUnit.SECONDS));
            long session = holder.getZookeeperClient().getZooKeeper().getSessionId();
            InterProcessMutex theirs = new InterProcessMutex(waiter, "/locks/a");
            CountDownLatch acquired = new CountDownLatch(1);
            Thread t = new Thread(() -> {
                try {
                    if (theirs.acquire(new Timing().forWaiting().seconds(), TimeUnit.SECONDS)) {
                        acquired.countDown();
                        theirs.release();
                    }
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            t.start();
            ZooKeeper zk = holder.getZookeeperClient().getZooKeeper();
            KillSession.kill(zk);
            awaitState(states, ConnectionState.LOST);
            assertTrue(timing.awaitLatch(acquired), "the waiter takes the lock once the holder's session is gone");
            t.join();
            awaitState(states, ConnectionState.RECONNECTED);
            assertNotEquals(session, holder.getZookeeperClient().getZooKeeper().getSessionId());
        }
    }

    /** A cluster's leader latch fails over when the leader's server is killed, and it comes back. */
    @Test
    void aClusterFailsOverWhenAServerIsKilledAndTakesItBack() throws Exception {
        try (TestingCluster cluster = new TestingCluster(3)) {
            cluster.start();
            assertEquals(3, cluster.getServers().size());
            assertEquals(3, cluster.getConnectString().split(",").length);
            List<InstanceSpec> specs = new ArrayList<>(cluster.getInstances());
            for (int i = 0; i < 3; i++) {
                assertEquals(i + 1, specs.get(i).getServerId());
                assertEquals(specs.get(i), cluster.getServers().get(i).getInstanceSpec());
            }
            try (CuratorFramework a = client(cluster.getConnectString(), new Timing2().session());
                 CuratorFramework b = client(cluster.getConnectString(), new Timing2().session());
                 LeaderLatch la = new LeaderLatch(a, "/leader", "a");
                 LeaderLatch lb = new LeaderLatch(b, "/leader", "b")) {
                BlockingQueue<ConnectionState> states = states(a);
                a.blockUntilConnected();
                la.start();
                assertTrue(la.await(timing.forWaiting().seconds(), TimeUnit.SECONDS));
                lb.start();
                InstanceSpec on = cluster.findConnectionInstance(a.getZookeeperClient().getZooKeeper());
                assertNotNull(on, "a is connected to one of the servers");
                assertTrue(specs.contains(on));
                assertTrue(cluster.killServer(on));
                assertTrue(refused(on.getPort()), "a killed server's port refuses connections");
                awaitState(states, ConnectionState.SUSPENDED);
                awaitState(states, ConnectionState.RECONNECTED);
                InstanceSpec now = cluster.findConnectionInstance(a.getZookeeperClient().getZooKeeper());
                assertNotNull(now);
                assertNotEquals(on, now, "a moved to another server");
                // Two servers of three are a quorum: writes go on.
                a.create().forPath("/after-kill");
                assertNotNull(b.checkExists().forPath("/after-kill"));
                assertTrue(cluster.restartServer(on));
                try (CuratorFramework c = client(on.getConnectString(), timing.session())) {
                    assertTrue(c.blockUntilConnected(timing.forWaiting().seconds(), TimeUnit.SECONDS));
                    c.sync().forPath("/");
                    assertNotNull(c.checkExists().forPath("/after-kill"), "the restarted server caught up");
                }
                awaitOneLeader(la, lb);
            }
            assertFalse(cluster.killServer(InstanceSpec.newInstanceSpec()), "no such server");
        }
    }
}
