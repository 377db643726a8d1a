package org.apache.curator.test;

import java.io.IOException;

import org.apache.zookeeper.server.ZooKeeperServer;
import org.apache.zookeeper.server.quorum.QuorumPeerConfig;

/**
 * Curator runs a ZooKeeper server inside the test's JVM with this class; zk-mock runs none, so
 * here it exists only for code that names it (a custom {@code ServerCnxnFactory} checks for
 * {@link TestZooKeeperServer}). Starting one is refused with the reason.
 */
public class TestingZooKeeperMain implements ZooKeeperMainFace {
    private QuorumConfigBuilder config;
    private int instance;

    @Override
    public void configure(QuorumConfigBuilder config, int instance) {
        this.config = config;
        this.instance = instance;
    }

    @Override
    public QuorumPeerConfig getConfig() throws Exception {
        return config == null ? null : config.buildConfig(instance);
    }

    /** Refused: zk-mock runs no ZooKeeper server in this JVM (use {@link TestingServer}). */
    @Override
    public void start() {
        throw new UnsupportedOperationException(TestingServer.NO_JVM_SERVER);
    }

    @Override
    public void kill() {
    }

    @Override
    public void close() throws IOException {
    }

    /** A name for code that checks for Curator's in-JVM server; zk-mock never creates one. */
    public static class TestZooKeeperServer extends ZooKeeperServer {
        /** Refused: zk-mock runs no ZooKeeper server in this JVM. */
        public TestZooKeeperServer() {
            throw new UnsupportedOperationException(TestingServer.NO_JVM_SERVER);
        }

        public void noteStartup() {
        }
    }
}
