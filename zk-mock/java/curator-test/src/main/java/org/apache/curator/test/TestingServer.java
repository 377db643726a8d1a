package org.apache.curator.test;

import java.io.Closeable;
import java.io.File;
import java.io.IOException;

import io.zkmock.ZkMockServer;

/**
 * A ZooKeeper server for tests, as Curator's {@code TestingServer}, backed by the
 * {@code zk-mock} binary in a child process (found as {@link ZkMockServer} finds it: the
 * {@code zkmock.binary} system property, {@code ZK_MOCK_BINARY}, then {@code PATH}).
 *
 * <ul>
 * <li>It listens on its spec's host and port (a free port unless one is given), with a tick
 *     time of {@code new Timing2().tickTime()} and a minimum session timeout of one tick,
 *     as Curator's test servers.
 * <li>{@link #stop()} cuts its clients off and frees the port (another server may start
 *     on it); {@link #restart()} listens on it again, and sessions survive, as they do
 *     across a restart of a real server with its data directory.
 * <li>The system properties a JVM server would read at start are read here:
 *     {@code znode.container.checkIntervalMs}, {@code readonlymode.enabled},
 *     {@code zookeeper.extendedTypesEnabled}, {@code jute.maxbuffer} and
 *     {@code zookeeper.DigestAuthenticationProvider.superDigest}. A custom
 *     {@code zookeeper.serverCnxnFactory} is refused with the fault rule to use instead;
 *     Curator's {@code ChaosMonkeyCnxnFactory} is played by two such rules.
 * <li>{@link #getZkMock()} reaches zk-mock's faults: server-side expiry, fault rules, stalls,
 *     the recorder.
 * </ul>
 */
public class TestingServer implements Closeable {
    /** Why no ZooKeeper server runs in this JVM. */
    static final String NO_JVM_SERVER = "zk-mock's curator-test runs no ZooKeeper server in this JVM: "
        + "TestingServer and TestingCluster start the zk-mock binary instead";

    private final TestingZooKeeperServer server;
    private final InstanceSpec spec;

    public TestingServer() throws Exception {
        this(-1, null, true);
    }

    public TestingServer(boolean start) throws Exception {
        this(-1, null, start);
    }

    public TestingServer(int port) throws Exception {
        this(port, null, true);
    }

    public TestingServer(int port, boolean start) throws Exception {
        this(port, null, start);
    }

    public TestingServer(int port, File tempDirectory) throws Exception {
        this(port, tempDirectory, true);
    }

    public TestingServer(int port, File tempDirectory, boolean start) throws Exception {
        this(new InstanceSpec(tempDirectory, port, -1, -1, true, -1), start);
    }

    public TestingServer(InstanceSpec spec, boolean start) throws Exception {
        this.spec = spec;
        this.server = new TestingZooKeeperServer(new QuorumConfigBuilder(spec));
        if (start) {
            server.start();
        }
    }

    TestingZooKeeperServer getTestingZooKeeperServer() {
        return server;
    }

    public int getPort() {
        return spec.getPort();
    }

    /** The spec's data directory (zk-mock keeps its data in memory; tests may use it). */
    public File getTempDirectory() {
        return spec.getDataDirectory();
    }

    /** Starts it, once (after {@link #stop()}, {@link #restart()} starts it again). */
    public void start() throws Exception {
        server.start();
    }

    /** Cuts its clients off and frees its port; sessions wait for {@link #restart()}. */
    public void stop() throws IOException {
        server.stop();
    }

    /** Listens on its port again; sessions that had not timed out carry on. */
    public void restart() throws Exception {
        server.restart();
    }

    @Override
    public void close() throws IOException {
        server.close();
    }

    public String getConnectString() {
        return spec.getConnectString();
    }

    /**
     * The zk-mock server behind it, for what Curator's cannot do: expire a session from the
     * server ({@code expireSession}), fault rules ({@code rule()}), stalls, the manual clock
     * and the recorder.
     *
     * @throws IllegalStateException before it is started, or once it is closed
     */
    public ZkMockServer getZkMock() {
        ZkMockServer s = server.configBuilder().ensemble().process();
        if (s == null) {
            throw new IllegalStateException("the server is not started");
        }
        return s;
    }
}
