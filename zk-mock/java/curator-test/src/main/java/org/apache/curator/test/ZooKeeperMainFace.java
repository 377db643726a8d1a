package org.apache.curator.test;

import java.io.Closeable;

import org.apache.zookeeper.server.quorum.QuorumPeerConfig;

/** What runs one server of a {@link TestingZooKeeperServer}, as Curator's interface has it. */
public interface ZooKeeperMainFace extends Closeable {
    void configure(QuorumConfigBuilder config, int instance) throws Exception;

    void start();

    void kill();

    QuorumPeerConfig getConfig() throws Exception;
}
