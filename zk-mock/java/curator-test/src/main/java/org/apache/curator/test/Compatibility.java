package org.apache.curator.test;

import org.apache.zookeeper.server.ServerCnxn;
import org.apache.zookeeper.server.ServerCnxnFactory;

/**
 * Helpers for code that extends ZooKeeper's own server classes (a custom
 * {@code ServerCnxnFactory}, for one). They act on those classes, which run only in a JVM
 * ZooKeeper: zk-mock refuses such factories at start (see {@link TestingServer}), so with it
 * these are reached only by code that builds a ZooKeeper server itself.
 */
public class Compatibility {
    /** Closes every connection of the factory. */
    public static void serverCnxnFactoryCloseAll(ServerCnxnFactory factory) {
        factory.closeAll(ServerCnxn.DisconnectReason.UNKNOWN);
    }

    /** Closes one connection. */
    public static void serverCnxnClose(ServerCnxn cnxn) {
        cnxn.close(ServerCnxn.DisconnectReason.UNKNOWN);
    }
}
