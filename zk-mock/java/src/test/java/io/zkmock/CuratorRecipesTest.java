package io.zkmock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.retry.RetryOneTime;
import org.apache.curator.test.TestingServer;
import org.apache.zookeeper.KeeperException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Curator 5.4's recipes under the faults that break them in production: a lock whose
 * holder's session expires, a leader that loses its session, a server restart, a lost
 * reply. The first three run unchanged on zk-mock and on Curator's own TestingServer:
 * {@link #open} is the one line that differs. The faults there come from the client
 * side ({@code injectSessionExpiration}), which any server honours once the session
 * times out; zk-mock can also expire it from the server side at once, and lose a reply,
 * which TestingServer cannot.
 */
class CuratorRecipesTest {
    /** What the tests need of a server: what TestingServer and ZkMockServer share. */
    interface Server extends AutoCloseable {
        String getConnectString();

        void restart() throws Exception;
    }

    static Server open(String kind) throws Exception {
        if (kind.equals("zk-mock")) {
            ZkMockServer s = new ZkMockServer();          // the one line...
            return new Server() {
                public String getConnectString() { return s.getConnectString(); }
                public void restart() throws Exception { s.restart(); }
                public void close() throws Exception { s.close(); }
            };
        }
        TestingServer s = new TestingServer();            // ...that differs
        return new Server() {
            public String getConnectString() { return s.getConnectString(); }
            public void restart() throws Exception { s.restart(); }
            public void close() throws Exception { s.close(); }
        };
    }

    static CuratorFramework client(String connectString) throws InterruptedException {
        CuratorFramework c = CuratorFrameworkFactory.builder()
            .connectString(connectString)
            .sessionTimeoutMs(4_000)
            .connectionTimeoutMs(4_000)
            .retryPolicy(new RetryNTimes(20, 200))
            .build();
        c.start();
        assertTrue(c.blockUntilConnected(10, TimeUnit.SECONDS), "connected");
        return c;
    }

    /** The client believes its session expired and drops it; the server expires it at its timeout. */
    static void expireFromTheClient(CuratorFramework c) throws Exception {
        c.getZookeeperClient().getZooKeeper().getTestable().injectSessionExpiration();
    }

    @ParameterizedTest
    @ValueSource(strings = {"zk-mock", "TestingServer"})
    void aLockIsTakenOverWhenItsHoldersSessionExpires(String kind) throws Exception {
        try (Server server = open(kind);
             CuratorFramework holder = client(server.getConnectString());
             CuratorFramework waiter = client(server.getConnectString())) {
            InterProcessMutex held = new InterProcessMutex(holder, "/locks/job");
            InterProcessMutex wanted = new InterProcessMutex(waiter, "/locks/job");
            assertTrue(held.acquire(5, TimeUnit.SECONDS));
            assertFalse(wanted.acquire(200, TimeUnit.MILLISECONDS), "held");
            expireFromTheClient(holder);
            assertTrue(wanted.acquire(20, TimeUnit.SECONDS), "taken over once the session is gone");
            wanted.release();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"zk-mock", "TestingServer"})
    void aLeaderLatchFailsOverWhenTheLeaderLosesItsSession(String kind) throws Exception {
        try (Server server = open(kind);
             CuratorFramework a = client(server.getConnectString());
             CuratorFramework b = client(server.getConnectString());
             LeaderLatch first = new LeaderLatch(a, "/leader", "a");
             LeaderLatch second = new LeaderLatch(b, "/leader", "b")) {
            first.start();
            assertTrue(first.await(10, TimeUnit.SECONDS), "a leads");
            second.start();
            assertFalse(second.await(300, TimeUnit.MILLISECONDS), "b waits");
            expireFromTheClient(a);
            assertTrue(second.await(20, TimeUnit.SECONDS), "b takes over");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"zk-mock", "TestingServer"})
    void sessionsSurviveARestart(String kind) throws Exception {
        try (Server server = open(kind);
             CuratorFramework c = client(server.getConnectString())) {
            long session = c.getZookeeperClient().getZooKeeper().getSessionId();
            c.create().forPath("/kept", "v".getBytes());
            BlockingQueue<ConnectionState> states = ZkMockServerTest.states(c);
            server.restart();
            assertEquals(ConnectionState.SUSPENDED, states.poll(10, TimeUnit.SECONDS), "the restart cut the connection");
            assertEquals(ConnectionState.RECONNECTED, states.poll(10, TimeUnit.SECONDS), "and the client came back");
            assertNotNull(c.checkExists().forPath("/kept"));
            assertEquals(session, c.getZookeeperClient().getZooKeeper().getSessionId());
        }
    }

    // ---- what only zk-mock can do -------------------------------------------------------

    @Test
    void theServerExpiresTheHoldersSessionAtOnce() throws Exception {
        try (ZkMockServer server = new ZkMockServer();
             CuratorFramework holder = client(server.getConnectString());
             CuratorFramework waiter = client(server.getConnectString())) {
            InterProcessMutex held = new InterProcessMutex(holder, "/locks/job");
            InterProcessMutex wanted = new InterProcessMutex(waiter, "/locks/job");
            assertTrue(held.acquire(5, TimeUnit.SECONDS));
            long start = System.nanoTime();
            server.expireSession(holder.getZookeeperClient().getZooKeeper().getSessionId());
            assertTrue(wanted.acquire(5, TimeUnit.SECONDS));
            assertTrue(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start) < 4_000,
                "no wait for the session timeout");
            wanted.release();
        }
    }

    @Test
    void aLostReplyOnCreateMeetsNodeExistsOnTheRetry() throws Exception {
        try (ZkMockServer server = new ZkMockServer()) {
            CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(server.getConnectString())
                .sessionTimeoutMs(10_000)
                .retryPolicy(new RetryOneTime(100))
                .build();
            c.start();
            try {
                assertTrue(c.blockUntilConnected(10, TimeUnit.SECONDS));
                ZkMockServer.Rule rule = server.rule().ops("create").path("/jobs/1").times(1).loseReply();
                c.create().forPath("/jobs", new byte[0]);
                // Curator retries the create after the connection loss; the node is there.
                assertThrows(KeeperException.NodeExistsException.class,
                    () -> c.create().forPath("/jobs/1", new byte[0]));
                assertEquals(1, rule.fired());
                List<Map<String, Object>> creates = server.requests(null, "/jobs/1", "create");
                assertEquals(List.of(0L, -110L), creates.stream().map(r -> r.get("err")).toList());
            } finally {
                c.close();
            }
        }
    }
}
