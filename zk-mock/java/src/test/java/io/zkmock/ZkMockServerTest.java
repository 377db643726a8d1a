package io.zkmock;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryOneTime;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** ZkMockServer and ZkMockExtension, through Curator 5.4, against the zk-mock binary. */
@ExtendWith(ZkMockExtension.class)
class ZkMockServerTest {
    static CuratorFramework connect(String connectString) throws InterruptedException {
        CuratorFramework c = CuratorFrameworkFactory.builder()
            .connectString(connectString)
            .sessionTimeoutMs(10_000)
            .connectionTimeoutMs(5_000)
            .retryPolicy(new RetryOneTime(100))
            .build();
        c.start();
        assertTrue(c.blockUntilConnected(10, TimeUnit.SECONDS), "connected");
        return c;
    }

    static long sessionOf(CuratorFramework c) throws Exception {
        return c.getZookeeperClient().getZooKeeper().getSessionId();
    }

    @Test
    void servesCuratorOnAFreePort(ZkMockServer server) throws Exception {
        assertTrue(server.getConnectString().startsWith("127.0.0.1:"));
        assertTrue(server.getPort() > 0);
        try (CuratorFramework c = connect(server.getConnectString())) {
            c.create().forPath("/a", "v".getBytes());
            assertArrayEquals("v".getBytes(), c.getData().forPath("/a"));
            assertEquals(List.of(sessionOf(c)), server.sessionIds());
        }
    }

    @Test
    void expireSessionRemovesEphemeralsAndTellsTheClient(ZkMockServer server) throws Exception {
        try (CuratorFramework holder = connect(server.getConnectString());
             CuratorFramework observer = connect(server.getConnectString())) {
            CountDownLatch lost = new CountDownLatch(1);
            holder.getConnectionStateListenable().addListener((c, s) -> {
                if (s == ConnectionState.LOST) {
                    lost.countDown();
                }
            });
            holder.create().withMode(CreateMode.EPHEMERAL).forPath("/eph");
            server.expireSession(sessionOf(holder));
            assertTrue(lost.await(10, TimeUnit.SECONDS), "the holder learns its session is lost");
            assertNull(observer.checkExists().forPath("/eph"));
        }
    }

    @Test
    void aCommitLatencyHoldsEachWrite() throws Exception {
        Duration latency = Duration.ofMillis(150);
        try (ZkMockServer server = new ZkMockServer(new ZkMockServer.Settings().commitLatency(latency), true);
             CuratorFramework c = connect(server.getConnectString())) {
            long begun = System.nanoTime();
            c.create().forPath("/slow", "v".getBytes());
            assertTrue(System.nanoTime() - begun >= latency.toNanos(), "the create waited for its sync");
            assertArrayEquals("v".getBytes(), c.getData().forPath("/slow"));
        }
    }

    @Test
    void aConnectLatencyHoldsEachHandshake() throws Exception {
        Duration latency = Duration.ofMillis(150);
        try (ZkMockServer server = new ZkMockServer(new ZkMockServer.Settings().connectLatency(latency), true)) {
            long begun = System.nanoTime();
            try (CuratorFramework c = connect(server.getConnectString())) {
                assertTrue(System.nanoTime() - begun >= latency.toNanos(), "the handshake waited");
                c.create().forPath("/up", "v".getBytes());
                assertArrayEquals("v".getBytes(), c.getData().forPath("/up"));
            }
        }
    }

    @Test
    void aRequestLatencyHoldsEachReadAndWrite() throws Exception {
        Duration latency = Duration.ofMillis(150);
        try (ZkMockServer server = new ZkMockServer(new ZkMockServer.Settings().requestLatency(latency), true)) {
            try (CuratorFramework c = connect(server.getConnectString())) {
                long begun = System.nanoTime();
                c.create().forPath("/r", "v".getBytes());
                assertTrue(System.nanoTime() - begun >= latency.toNanos(), "the create waited");
                begun = System.nanoTime();
                assertArrayEquals("v".getBytes(), c.getData().forPath("/r"));
                assertTrue(System.nanoTime() - begun >= latency.toNanos(), "the read waited");
            }
        }
    }

    @Test
    void unknownSessionsAreNotFound(ZkMockServer server) {
        assertThrows(ZkMockServer.NotFoundException.class, () -> server.expireSession(12345));
    }

    /**
     * The client's connection states from now on, in order; the first CONNECTED, which
     * Curator may deliver after {@code blockUntilConnected} returns, is left out.
     */
    static BlockingQueue<ConnectionState> states(CuratorFramework c) {
        BlockingQueue<ConnectionState> q = new LinkedBlockingQueue<>();
        c.getConnectionStateListenable().addListener((client, state) -> {
            if (state != ConnectionState.CONNECTED) {
                q.add(state);
            }
        });
        return q;
    }

    static void expectState(BlockingQueue<ConnectionState> q, ConnectionState want) throws InterruptedException {
        ConnectionState got = q.poll(10, TimeUnit.SECONDS);
        assertEquals(want, got, "the client's next connection state");
    }

    @Test
    void stopAndStartKeepTheSessionAsTestingServerDoes(ZkMockServer server) throws Exception {
        try (CuratorFramework c = connect(server.getConnectString())) {
            BlockingQueue<ConnectionState> states = states(c);
            long session = sessionOf(c);
            c.create().withMode(CreateMode.EPHEMERAL).forPath("/eph");
            server.stop();
            expectState(states, ConnectionState.SUSPENDED);
            server.start();
            expectState(states, ConnectionState.RECONNECTED);
            assertEquals(session, sessionOf(c), "the same session");
            assertNotNull(c.checkExists().forPath("/eph"), "its ephemeral survived");
            server.restart();
            expectState(states, ConnectionState.SUSPENDED);
            expectState(states, ConnectionState.RECONNECTED);
            assertEquals(session, sessionOf(c));
            assertNotNull(c.checkExists().forPath("/eph"));
        }
    }

    @Test
    void stopStopsEveryServerOfAnEnsemble() throws Exception {
        try (ZkMockServer server = new ZkMockServer(new ZkMockServer.Settings().servers(3), true);
             CuratorFramework c = connect(server.getConnectString())) {
            assertEquals(3, server.getConnectString().split(",").length);
            BlockingQueue<ConnectionState> states = states(c);
            c.create().forPath("/kept");
            server.stop();
            expectState(states, ConnectionState.SUSPENDED);
            // No other server to fail over to while it is stopped.
            assertNull(states.poll(1500, TimeUnit.MILLISECONDS), "stays suspended while stopped");
            server.start();
            expectState(states, ConnectionState.RECONNECTED);
            assertNotNull(c.checkExists().forPath("/kept"));
        }
    }

    @Test
    void aLaggingFollowerServesStaleReadsAndExpiresItsSessionsAtItsOwnPace() throws Exception {
        try (ZkMockServer server = new ZkMockServer(new ZkMockServer.Settings().servers(3), true)) {
            String[] hosts = server.getConnectString().split(",");
            List<Map<String, Object>> servers = server.servers();
            assertEquals(true, servers.get(0).get("leader"));
            assertEquals(hosts[2], servers.get(2).get("addr"));
            ZkMockServer.ZkMockException refused =
                assertThrows(ZkMockServer.ZkMockException.class, () -> server.lagServer(0, 1));
            assertTrue(refused.getMessage().contains("server 0 is the leader"), refused.getMessage());
            try (CuratorFramework writer = connect(hosts[0]);
                 CuratorFramework reader = connect(hosts[2])) {
                server.lagServer(2, 1);
                assertEquals(Map.of("txns", 1L), server.servers().get(2).get("lag"));
                writer.create().forPath("/config", "v1".getBytes());
                assertNull(reader.checkExists().forPath("/config"), "a stale read");
                assertEquals(1L, server.servers().get(2).get("behind"));
                server.catchUpServer(2);
                assertArrayEquals("v1".getBytes(), reader.getData().forPath("/config"));

                // The leader decides the expiry; server 2 applies the closeSession one
                // commit late, and serves the session from its replica until then.
                BlockingQueue<ConnectionState> states = states(reader);
                server.expireSession(sessionOf(reader));
                assertEquals(1L, server.servers().get(2).get("behind"));
                assertArrayEquals("v1".getBytes(), reader.getData().forPath("/config"));
                assertNull(states.poll(), "nothing yet");
                writer.create().forPath("/tick");
                expectState(states, ConnectionState.SUSPENDED);
                expectState(states, ConnectionState.LOST);

                server.lagServer(1, Duration.ofMillis(500));
                assertEquals(Map.of("ms", 500L), server.servers().get(1).get("lag"));
                server.endLag(1);
                server.endLag(2);
                assertEquals(Map.of(), server.servers().get(2).get("lag"));
            }
        }
    }

    @Test
    void aSequenceCounterSetNearItsEndWrapsToNegative(ZkMockServer server) throws Exception {
        try (CuratorFramework c = connect(server.getConnectString())) {
            c.create().forPath("/locks");
            server.setSequenceCounter("/locks", Integer.MAX_VALUE);
            String first = c.create().withMode(CreateMode.PERSISTENT_SEQUENTIAL).forPath("/locks/n-");
            String second = c.create().withMode(CreateMode.PERSISTENT_SEQUENTIAL).forPath("/locks/n-");
            assertEquals("/locks/n-2147483647", first);
            assertEquals("/locks/n--2147483648", second);
            assertThrows(ZkMockServer.NotFoundException.class, () -> server.setSequenceCounter("/none", 1));
        }
    }

    @Test
    void aPartitionedServerDropsItsClientsUntilItIsHealed() throws Exception {
        try (ZkMockServer server = new ZkMockServer(new ZkMockServer.Settings().servers(3), true);
             CuratorFramework c = connect(server.getConnectString().split(",")[1])) {
            BlockingQueue<ConnectionState> states = states(c);
            long session = sessionOf(c);
            assertTrue(server.partitionServer(1));
            assertEquals(false, server.partitionServer(1), "it was not serving");
            assertEquals("partitioned", server.servers().get(1).get("status"));
            expectState(states, ConnectionState.SUSPENDED);
            assertTrue(server.healServer(1));
            assertEquals(false, server.healServer(1), "it was not down");
            expectState(states, ConnectionState.RECONNECTED);
            assertEquals(session, sessionOf(c));
        }
    }

    @Test
    void aRuleFailsMatchingRequestsAndCountsThem(ZkMockServer server) throws Exception {
        try (CuratorFramework c = connect(server.getConnectString())) {
            c.create().forPath("/cfg", "v".getBytes());
            try (ZkMockServer.Rule rule = server.rule().ops("getData").path("/cfg").fail(-101)) {
                assertThrows(KeeperException.NoNodeException.class, () -> c.getData().forPath("/cfg"));
                assertNotNull(c.checkExists().forPath("/cfg"), "other ops pass");
                assertEquals(1, rule.fired());
            }
            assertArrayEquals("v".getBytes(), c.getData().forPath("/cfg"), "removed when closed");
            assertEquals(List.of(), server.rules());
        }
    }

    @Test
    void theRecorderSeesEveryRequest(ZkMockServer server) throws Exception {
        try (CuratorFramework c = connect(server.getConnectString())) {
            c.create().forPath("/r", new byte[0]);
            c.setData().forPath("/r", "x".getBytes());
            List<Map<String, Object>> ops = server.requests(sessionOf(c), "/r", null);
            assertEquals("setData", ops.get(ops.size() - 1).get("op"));
            server.reset();
            assertEquals(List.of(), server.sessionIds(), "reset expired every session");
        }
    }

    @Test
    void aMissingBinaryNamesEveryPlaceItLooked() {
        assumeTrue(System.getenv("ZK_MOCK_BINARY") == null, "ZK_MOCK_BINARY is set");
        String path = System.getenv("PATH") == null ? "" : System.getenv("PATH");
        for (String dir : path.split(File.pathSeparator)) {
            assumeTrue(!new File(dir, "zk-mock").canExecute(), "zk-mock is on PATH");
        }
        String before = System.getProperty("zkmock.binary");
        System.setProperty("zkmock.binary", "/nonexistent/zk-mock");
        try {
            ZkMockServer.StartException e = assertThrows(ZkMockServer.StartException.class,
                () -> new ZkMockServer(new ZkMockServer.Settings().binary("/also/missing"), true));
            assertTrue(e.getMessage().contains("/also/missing"), e.getMessage());
            assertTrue(e.getMessage().contains("zkmock.binary system property: /nonexistent/zk-mock"), e.getMessage());
            assertTrue(e.getMessage().contains("ZK_MOCK_BINARY"), e.getMessage());
            assertTrue(e.getMessage().contains("PATH"), e.getMessage());
        } finally {
            if (before == null) {
                System.clearProperty("zkmock.binary");
            } else {
                System.setProperty("zkmock.binary", before);
            }
        }
    }

    @Test
    void aPortInUseIsAClearErrorNotAHang() throws Exception {
        try (ServerSocket taken = new ServerSocket()) {
            taken.bind(new InetSocketAddress("127.0.0.1", 0));
            long start = System.nanoTime();
            ZkMockServer.StartException e = assertThrows(ZkMockServer.StartException.class,
                () -> new ZkMockServer(taken.getLocalPort()));
            assertTrue(Duration.ofNanos(System.nanoTime() - start).toSeconds() < 10);
            assertTrue(e.getMessage().contains("exited with code"), e.getMessage());
            assertTrue(e.getMessage().toLowerCase().contains("in use"), e.getMessage());
        }
    }

    @Test
    void aServerThatDiesMidTestIsReported(ZkMockServer server) throws Exception {
        ProcessHandle.of(server.pid()).ifPresent(ProcessHandle::destroyForcibly);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (server.isRunning() && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        ZkMockServer.DiedException e = assertThrows(ZkMockServer.DiedException.class, server::sessionIds);
        assertTrue(e.getMessage().contains("exited"), e.getMessage());
    }

    @Test
    void aClosedServerStartsAgainAsANewProcess() throws Exception {
        ZkMockServer server = new ZkMockServer();
        long first = server.pid();
        server.close();
        server.start();
        try (CuratorFramework c = connect(server.getConnectString())) {
            assertTrue(server.isRunning());
            assertTrue(server.pid() != first, "a new process");
            assertEquals(List.of(sessionOf(c)), server.sessionIds());
        } finally {
            server.close();
        }
    }

    @Test
    void closingTwiceIsHarmless() throws Exception {
        ZkMockServer server = new ZkMockServer();
        server.close();
        server.close();
        assertTrue(!server.isRunning());
    }
}
