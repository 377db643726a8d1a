package io.zkmock.curatortest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingCluster;
import org.apache.curator.test.TestingServer;
import org.apache.curator.test.Timing;
import org.apache.zookeeper.KeeperException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** What the drop-in adds to curator-test's API, and what it refuses. */
@Tag("zk-mock-only")
class ZkMockOnlyTest {
    private static final String FACTORY = "zookeeper.serverCnxnFactory";

    @AfterEach
    void clearFactory() {
        System.clearProperty(FACTORY);
    }

    @Test
    void aCustomConnectionFactoryIsRefusedWithTheRuleToUseInstead() throws Exception {
        System.setProperty(FACTORY, "com.example.DropEveryThirdPacketFactory");
        UnsupportedOperationException e =
            assertThrows(UnsupportedOperationException.class, () -> new TestingServer().close());
        assertTrue(e.getMessage().contains("com.example.DropEveryThirdPacketFactory"), e.getMessage());
        assertTrue(e.getMessage().contains("rule()"), e.getMessage());
        // ZooKeeper's own factories need nothing.
        System.setProperty(FACTORY, "org.apache.zookeeper.server.NettyServerCnxnFactory");
        try (TestingServer s = new TestingServer()) {
            assertTrue(s.getZkMock().isRunning());
        }
    }

    /**
     * Curator's ChaosMonkeyCnxnFactory, named: the first create under /mylock/ is applied and
     * its connection closed unanswered, then requests are locked out for 6 s.
     */
    @Test
    void chaosMonkeyCnxnFactoryIsPlayedByTwoRules() throws Exception {
        System.setProperty(FACTORY, "org.apache.curator.framework.recipes.leader.ChaosMonkeyCnxnFactory");
        try (TestingServer server = new TestingServer();
             CuratorFramework c = CuratorFrameworkFactory.newClient(server.getConnectString(), 30_000,
                 new Timing().connection(), new RetryNTimes(0, 0))) {
            c.start();
            c.blockUntilConnected();
            c.create().forPath("/mylock");
            assertThrows(KeeperException.ConnectionLossException.class, () -> c.create().forPath("/mylock/a"));
            assertEquals(2, server.getZkMock().rules().size());
            // Locked out: a request's connection is closed before it is applied.
            BlockingQueue<ConnectionState> states = DropInTest.states(c);
            c.blockUntilConnected();
            assertThrows(KeeperException.ConnectionLossException.class, () -> c.delete().forPath("/mylock/a"));
            DropInTest.awaitState(states, ConnectionState.SUSPENDED);
            // The create was applied; after the lockout the node can be read and deleted.
            try (CuratorFramework patient = CuratorFrameworkFactory.newClient(server.getConnectString(), 30_000,
                     new Timing().connection(), new RetryNTimes(40, 250))) {
                patient.start();
                assertNotNull(patient.checkExists().forPath("/mylock/a"));
                patient.delete().forPath("/mylock/a");
            }
        }
    }

    @Test
    void getZkMockExpiresASessionFromTheServer() throws Exception {
        try (TestingServer server = new TestingServer();
             CuratorFramework c = DropInTest.client(server.getConnectString(), 30_000)) {
            BlockingQueue<ConnectionState> states = DropInTest.states(c);
            c.blockUntilConnected();
            server.getZkMock().expireSession(c.getZookeeperClient().getZooKeeper().getSessionId());
            DropInTest.awaitState(states, ConnectionState.LOST);
        }
    }

    /**
     * Curator's TestingCluster.start() returns before its servers have elected a leader; the
     * drop-in's too: each server answers srvr that it is not serving, and a client connects
     * once the election is over.
     */
    @Test
    void aNewClusterElectsItsFirstLeaderAfterStartReturns() throws Exception {
        try (TestingCluster cluster = new TestingCluster(3)) {
            cluster.start();
            for (InstanceSpec s : cluster.getInstances()) {
                String answer = srvr(s.getPort());
                assertTrue(answer.contains("not currently serving"), answer);
            }
            try (CuratorFramework c = DropInTest.client(cluster.getConnectString(), 30_000)) {
                assertTrue(c.blockUntilConnected(new Timing().forWaiting().seconds(), TimeUnit.SECONDS));
            }
            for (InstanceSpec s : cluster.getInstances()) {
                String answer = srvr(s.getPort());
                assertTrue(answer.contains("Mode: "), answer);
            }
        }
    }

    /** The answer to the four-letter word {@code srvr}. */
    static String srvr(int port) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            OutputStream out = s.getOutputStream();
            out.write("srvr".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
