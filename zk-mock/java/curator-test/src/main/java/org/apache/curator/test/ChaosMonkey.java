package org.apache.curator.test;

import java.lang.reflect.Field;
import java.time.Duration;

import io.zkmock.ZkMockServer;

/**
 * A custom {@code ServerCnxnFactory} (the {@code zookeeper.serverCnxnFactory} system
 * property) is code that runs inside a JVM ZooKeeper, which zk-mock is not. ZooKeeper's own
 * factories need nothing. Curator's {@code ChaosMonkeyCnxnFactory} is recognised by its class
 * name and played with two fault rules: the first create (op 1 or 15) under its
 * {@code CHAOS_ZNODE_PREFIX} is applied and its connection closed with no reply; then, for
 * {@code LOCKOUT_DURATION_MS}, every request but {@code sync} and pings has its connection
 * closed before it is applied. Any other factory is refused with the rule to write instead.
 */
final class ChaosMonkey {
    private static final String NIO = "org.apache.zookeeper.server.NIOServerCnxnFactory";
    private static final String NETTY = "org.apache.zookeeper.server.NettyServerCnxnFactory";

    /** Every op code a client sends but sync, ping, createSession, auth and sasl. */
    private static final int[] LOCKED_OUT = {
        1, 2, 3, 4, 5, 6, 7, 8, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 101, 103, 104, 105, 106, 107, -11,
    };

    private ChaosMonkey() {
    }

    /**
     * The factory's class name if it is a {@code ChaosMonkeyCnxnFactory}; null for none or
     * ZooKeeper's own.
     *
     * @throws UnsupportedOperationException for any other factory, naming the rule to use
     */
    static String recognise(String factory) {
        if (factory == null || factory.isBlank() || factory.equals(NIO) || factory.equals(NETTY)) {
            return null;
        }
        if (factory.equals("ChaosMonkeyCnxnFactory") || factory.endsWith(".ChaosMonkeyCnxnFactory")) {
            return factory;
        }
        throw new UnsupportedOperationException("zk-mock cannot use the ServerCnxnFactory " + factory
            + " (system property " + MockEnsemble.CNXN_FACTORY + "): it is code for a ZooKeeper server in this"
            + " JVM, and zk-mock is a separate process. Do what it does with a fault rule on the server instead:"
            + " testingServer.getZkMock().rule().ops(\"create\").pathPrefix(\"/locks/\").times(1)"
            + ".loseReply() (or .disconnect(), .fail(code), .delay(d), .stall(), .expire()),"
            + " and .after(rule, window) for a lockout after a fault; clear the property for this test."
            + " Curator's ChaosMonkeyCnxnFactory is recognised by its name and needs nothing.");
    }

    /** Installs the two rules on a server just started. */
    static void install(ZkMockServer server, String factory) {
        String prefix = constant(factory, "CHAOS_ZNODE_PREFIX", "/mylock/");
        long lockout = constant(factory, "LOCKOUT_DURATION_MS", 6000L);
        ZkMockServer.Rule first = server.rule().opCodes(1, 15).pathPrefix(prefix).times(1).loseReply();
        server.rule().opCodes(LOCKED_OUT).after(first, Duration.ofMillis(lockout)).disconnect();
    }

    /** The factory class's public constant, if it can be loaded and has it. */
    @SuppressWarnings("unchecked")
    private static <T> T constant(String factory, String name, T otherwise) {
        try {
            Class<?> c = Class.forName(factory, false, Thread.currentThread().getContextClassLoader());
            Field f = c.getField(name);
            Object v = f.get(null);
            return otherwise.getClass().isInstance(v) ? (T) v : otherwise;
        } catch (ReflectiveOperationException | LinkageError e) {
            return otherwise;
        }
    }
}
