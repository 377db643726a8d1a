package io.zkmock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The faults and observations ZkMockServer adds to TestingServer's shape, through Curator. */
@ExtendWith(ZkMockExtension.class)
class FaultsTest {
    @Test
    void aDisconnectedSessionReconnectsAndKeepsItsEphemerals(ZkMockServer server) throws Exception {
        try (CuratorFramework c = ZkMockServerTest.connect(server.getConnectString())) {
            BlockingQueue<ConnectionState> states = ZkMockServerTest.states(c);
            long session = ZkMockServerTest.sessionOf(c);
            c.create().withMode(CreateMode.EPHEMERAL).forPath("/eph");
            server.disconnectSession(session);
            ZkMockServerTest.expectState(states, ConnectionState.SUSPENDED);
            ZkMockServerTest.expectState(states, ConnectionState.RECONNECTED);
            assertEquals(session, ZkMockServerTest.sessionOf(c), "the same session");
            assertNotNull(c.checkExists().forPath("/eph"));
        }
    }

    @Test
    void aStallHoldsAClientUntilItIsClosed(ZkMockServer server) throws Exception {
        try (CuratorFramework c = ZkMockServerTest.connect(server.getConnectString())) {
            CompletableFuture<Stat> pending;
            try (AutoCloseable stall = server.stall(ZkMockServerTest.sessionOf(c))) {
                pending = CompletableFuture.supplyAsync(() -> {
                    try {
                        return c.checkExists().forPath("/");
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                });
                Thread.sleep(300);
                assertFalse(pending.isDone(), "nothing moves while stalled");
                assertEquals(Boolean.TRUE, server.sessions().get(0).get("stalled"));
            }
            assertNotNull(pending.get(5, TimeUnit.SECONDS), "answered once the stall ends");
        }
    }

    @Test
    void refusedConnectionsKeepNewClientsOutUntilTheHandleCloses(ZkMockServer server) throws Exception {
        try (CuratorFramework c = CuratorFrameworkFactory.builder()
                .connectString(server.getConnectString())
                .sessionTimeoutMs(10_000)
                .connectionTimeoutMs(5_000)
                .retryPolicy(new RetryOneTime(100))
                .build()) {
            try (AutoCloseable refusing = server.refuseConnections()) {
                c.start();
                assertFalse(c.blockUntilConnected(1, TimeUnit.SECONDS), "kept out");
                assertEquals(List.of(), server.sessionIds());
            }
            assertTrue(c.blockUntilConnected(10, TimeUnit.SECONDS), "let in");
        }
    }

    @Test
    void theManualClockExpiresSessionsWhenTheTestSays() throws Exception {
        try (ZkMockServer server = new ZkMockServer(new ZkMockServer.Settings().manualClock().tickTime(100), true);
             CuratorFramework c = CuratorFrameworkFactory.builder()
                 .connectString(server.getConnectString())
                 .sessionTimeoutMs(2_000)
                 .retryPolicy(new RetryOneTime(100))
                 .build()) {
            c.start();
            assertTrue(c.blockUntilConnected(10, TimeUnit.SECONDS));
            CountDownLatch lost = new CountDownLatch(1);
            c.getConnectionStateListenable().addListener((client, s) -> {
                if (s == ConnectionState.LOST) {
                    lost.countDown();
                }
            });
            Thread.sleep(500);
            assertEquals(1, server.sessionIds().size(), "real time does not expire it");
            assertTrue(server.advanceClock(10_000) >= 10_000, "the clock moved");
            assertEquals(List.of(), server.sessionIds());
            assertTrue(lost.await(10, TimeUnit.SECONDS), "the client learns it expired");
        }
    }

    @Test
    void theRecorderSeesNotificationsAndTheSnapshotHoldsTheTree(ZkMockServer server) throws Exception {
        try (CuratorFramework c = ZkMockServerTest.connect(server.getConnectString())) {
            CountDownLatch fired = new CountDownLatch(1);
            c.create().forPath("/w", "1".getBytes());
            c.getData().usingWatcher((org.apache.zookeeper.Watcher) e -> fired.countDown()).forPath("/w");
            c.setData().forPath("/w", "2".getBytes());
            assertTrue(fired.await(5, TimeUnit.SECONDS));
            List<Map<String, Object>> seen = server.notifications(null, "/w", "NodeDataChanged");
            assertEquals(1, seen.size(), seen.toString());
            assertEquals(3, ((Number) seen.get(0).get("event_type")).intValue(), "NodeDataChanged");
            assertEquals(List.of(), server.notifications(null, "/w", "NodeDeleted"));
            assertEquals(ZkMockServerTest.sessionOf(c), ((Number) seen.get(0).get("session")).longValue());

            Map<String, Object> snapshot = server.snapshot();
            @SuppressWarnings("unchecked")
            Map<String, Object> tree = (Map<String, Object>) snapshot.get("tree");
            assertTrue(tree.containsKey("/w"), tree.keySet().toString());
            assertNull(tree.get("/nope"));
        }
    }
}
