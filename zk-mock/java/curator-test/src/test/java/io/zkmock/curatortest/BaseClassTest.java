package io.zkmock.curatortest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.test.TestingCluster;
import org.apache.curator.test.compatibility.CuratorTestBase;
import org.junit.jupiter.api.Test;

/** A test written on Curator's test base: a server per test, and a cluster on demand. */
class BaseClassTest extends CuratorTestBase {
    @Test
    void eachTestHasAServer() throws Exception {
        assertNotNull(server);
        try (CuratorFramework c = DropInTest.client(server.getConnectString(), timing.session())) {
            assertTrue(c.blockUntilConnected(timing.forWaiting().seconds(), TimeUnit.SECONDS));
            c.create().creatingParentsIfNeeded().forPath("/a/b");
            assertEquals(1, c.getChildren().forPath("/a").size());
        }
    }

    @Test
    void aClusterOnDemand() throws Exception {
        try (TestingCluster cluster = createAndStartCluster(3);
             CuratorFramework c = DropInTest.client(cluster.getConnectString(), timing.session())) {
            assertTrue(c.blockUntilConnected(timing.forWaiting().seconds(), TimeUnit.SECONDS));
            c.create().forPath("/x");
        }
    }

    @Test
    void timingIsCuratorsTiming() {
        // 10 s by default, waits five times that, sessions 1.5 times it, ticks a tenth.
        assertEquals(10_000, timing.milliseconds());
        assertEquals(50, timing.forWaiting().seconds());
        assertEquals(15_000, timing.session());
        assertEquals(1_000, timing.tickTime());
        // Timing's sessions are a quarter of 10 s, in whole seconds.
        assertEquals(2_000, new org.apache.curator.test.Timing().session());
    }
}
