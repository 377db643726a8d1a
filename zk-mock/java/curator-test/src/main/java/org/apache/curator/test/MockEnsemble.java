package org.apache.curator.test;

import java.net.BindException;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArraySet;

import io.zkmock.ZkMockServer;

/**
 * The zk-mock process behind one {@link QuorumConfigBuilder}: {@code zk-mock --ports ...},
 * one server per spec on the spec's client port. It is started by the first server started,
 * its servers are killed and restarted one by one (a killed server's port is free), and it
 * ends when every server is closed.
 */
final class MockEnsemble {
    /** The property ZooKeeper reads its connection factory's class from. */
    static final String CNXN_FACTORY = "zookeeper.serverCnxnFactory";

    /** Every ensemble with a live process in this JVM, for {@link KillSession}. */
    static final Set<MockEnsemble> LIVE = new CopyOnWriteArraySet<>();

    private static final System.Logger LOG = System.getLogger(MockEnsemble.class.getName());

    /**
     * The system property that sets the commit latency, in µs. By default a write takes
     * about what it takes on curator-test's {@code TestingServer} on a local disk: some
     * recipes' tests pass only because a write is that slow (a bounded
     * {@code DistributedQueue} checks its bound against a cache its own writes outrun).
     * 0 answers writes at once.
     */
    static final String COMMIT_LATENCY = "zkmock.commitLatencyMicros";

    /** The commit latency unless {@link #COMMIT_LATENCY} says otherwise, µs. */
    static final int DEFAULT_COMMIT_LATENCY_MICROS = 150;

    /**
     * The system property that sets the request latency, in µs: how long every request takes
     * through the server besides a write's sync. The default, with the commit latency's, makes
     * a read and a write through ZooKeeper's Java client take about what they take on
     * curator-test's {@code TestingServer} (an exists 190 µs, a create 410 to 510 µs, the
     * medians): a test whose threads race a release against the next holder's read of the
     * lock's children wins that race about as often as it does there. 0 answers at once.
     */
    static final String REQUEST_LATENCY = "zkmock.requestLatencyMicros";

    /** The request latency unless {@link #REQUEST_LATENCY} says otherwise, µs. */
    static final int DEFAULT_REQUEST_LATENCY_MICROS = 10;

    /**
     * The system property that sets how long each handshake takes at least, µs: Curator's
     * {@code TestingServer} set up a new server's first session in 2.2 ms (the median), and a
     * test that adds a {@code CONNECTED} listener just after {@code client.start()} relies on it.
     * 0 answers at once.
     */
    static final String CONNECT_LATENCY = "zkmock.connectLatencyMicros";

    /** The connect latency unless {@link #CONNECT_LATENCY} says otherwise, µs. */
    static final int DEFAULT_CONNECT_LATENCY_MICROS = 2000;

    /**
     * The system property that sets how long a cluster's first leader election takes, ms.
     * Curator's {@code TestingCluster.start()} returns once each server's {@code QuorumPeer}
     * runs, before the servers have elected a leader: a client that connects meanwhile is
     * closed unanswered and tries again, so a test's clients find the cluster at different
     * moments, not all at once. 0 starts the cluster with its leader elected.
     */
    static final String START_ELECTION = "zkmock.startElectionMillis";

    /** The first election's length unless {@link #START_ELECTION} says otherwise, ms. */
    static final int DEFAULT_START_ELECTION_MILLIS = 200;

    /** The custom properties that become the binary's flags; others are ignored with a warning. */
    private static final Set<String> KNOWN_PROPERTIES = Set.of("minSessionTimeout", "maxSessionTimeout", "reconfigEnabled");

    private final List<InstanceSpec> specs;
    private final boolean[] up;
    private final boolean[] closed;
    private ZkMockServer server; // guarded by this

    MockEnsemble(List<InstanceSpec> specs) {
        this.specs = specs;
        this.up = new boolean[specs.size()];
        this.closed = new boolean[specs.size()];
    }

    /** The process, if it runs. */
    synchronized ZkMockServer process() {
        return server;
    }

    /** Starts server {@code index}: the process with only it up, or the server again. */
    synchronized void start(int index) throws Exception {
        if (server == null) {
            launch();
            for (int j = 0; j < specs.size(); j++) {
                if (j != index) {
                    server.killServer(j);
                }
            }
        } else if (!up[index]) {
            restart(index);
        }
        up[index] = true;
        closed[index] = false;
    }

    /** Starts every server (what a cluster's start does). */
    synchronized void startAll() throws Exception {
        if (server == null) {
            launch();
            java.util.Arrays.fill(up, true);
            java.util.Arrays.fill(closed, false);
            int election = Integer.getInteger(START_ELECTION, DEFAULT_START_ELECTION_MILLIS);
            if (specs.size() > 1 && election > 0) {
                server.leaderElection(Duration.ofMillis(election));
            }
            return;
        }
        for (int j = 0; j < specs.size(); j++) {
            if (!up[j]) {
                start(j);
            }
        }
    }

    /** Kills server {@code index}: its clients are cut off and its port is freed. */
    synchronized void kill(int index) {
        if (server != null && up[index]) {
            server.killServer(index);
        }
        up[index] = false;
    }

    /** Closes server {@code index}; the process ends with the last. */
    synchronized void close(int index) {
        kill(index);
        closed[index] = true;
        for (boolean c : closed) {
            if (!c) {
                return;
            }
        }
        if (server != null) {
            try {
                server.close();
            } catch (java.io.IOException e) {
                LOG.log(System.Logger.Level.WARNING, "closing zk-mock", e);
            }
            LIVE.remove(this);
            server = null;
        }
    }

    private void restart(int index) throws BindException {
        try {
            server.restartServer(index);
        } catch (ZkMockServer.ZkMockException e) {
            throw bindOr(e);
        }
    }

    private void launch() throws Exception {
        String factory = System.getProperty(CNXN_FACTORY);
        String chaos = ChaosMonkey.recognise(factory);
        InstanceSpec first = specs.get(0);
        int[] ports = specs.stream().mapToInt(InstanceSpec::getPort).toArray();
        int tick = QuorumConfigBuilder.tickTime(first);
        Map<String, Object> custom = first.getCustomProperties();
        ZkMockServer.Settings settings = new ZkMockServer.Settings()
            .ports(ports)
            .host(address(first.getHostname()))
            .tickTime(tick)
            .minSessionTimeout(intProperty(custom, "minSessionTimeout", tick))
            .flag("--container-check-interval", Integer.getInteger("znode.container.checkIntervalMs", 60_000))
            .commitLatency(Duration.ofNanos(1000L * Integer.getInteger(COMMIT_LATENCY, DEFAULT_COMMIT_LATENCY_MICROS)))
            .connectLatency(Duration.ofNanos(1000L * Integer.getInteger(CONNECT_LATENCY, DEFAULT_CONNECT_LATENCY_MICROS)))
            .requestLatency(Duration.ofNanos(1000L * Integer.getInteger(REQUEST_LATENCY, DEFAULT_REQUEST_LATENCY_MICROS)))
            .startTimeout(Duration.ofMillis(new Timing().forWaiting().milliseconds()));
        if (custom.containsKey("maxSessionTimeout")) {
            settings.maxSessionTimeout(intProperty(custom, "maxSessionTimeout", 20 * tick));
        }
        if (Boolean.getBoolean("readonlymode.enabled")) {
            settings.flag("--readonly-mode").flag("--local-sessions");
        }
        if (Boolean.getBoolean("zookeeper.extendedTypesEnabled")) {
            settings.flag("--extended-types");
        }
        if ("true".equals(String.valueOf(custom.get("reconfigEnabled")))) {
            settings.flag("--reconfig-enabled");
        }
        Integer maxBuffer = Integer.getInteger("jute.maxbuffer");
        if (maxBuffer != null) {
            settings.flag("--max-packet-size", maxBuffer);
        }
        String superDigest = System.getProperty("zookeeper.DigestAuthenticationProvider.superDigest");
        if (superDigest != null) {
            settings.flag("--super-digest", superDigest);
        }
        for (String key : custom.keySet()) {
            if (!KNOWN_PROPERTIES.contains(key)) {
                LOG.log(System.Logger.Level.WARNING,
                    "zk-mock ignores the custom property {0} (it knows {1})", key, KNOWN_PROPERTIES);
            }
        }
        ZkMockServer s = new ZkMockServer(settings, false);
        try {
            s.start();
        } catch (ZkMockServer.ZkMockException e) {
            throw bindOr(e);
        }
        server = s;
        LIVE.add(this);
        if (chaos != null) {
            ChaosMonkey.install(s, factory);
        }
    }

    /** A port taken is a {@link BindException}, as a JVM server's is (test bases retry on it). */
    private static BindException bindOr(RuntimeException e) {
        String m = String.valueOf(e.getMessage());
        if (m.contains("cannot listen on") || m.contains("AddrInUse") || m.contains("in use")) {
            BindException b = new BindException(m);
            b.initCause(e);
            return b;
        }
        throw e;
    }

    private static String address(String host) {
        try {
            return InetAddress.getByName(host).getHostAddress();
        } catch (java.net.UnknownHostException e) {
            return "127.0.0.1";
        }
    }

    private static int intProperty(Map<String, Object> custom, String key, int otherwise) {
        Object v = custom.get(key);
        return v == null ? otherwise : Integer.parseInt(String.valueOf(v));
    }

    /** Expires the session from the server side; false if no server here has it. */
    synchronized boolean expire(long sessionId) {
        if (server == null) {
            return false;
        }
        try {
            server.expireSession(sessionId);
            return true;
        } catch (ZkMockServer.NotFoundException e) {
            return false;
        }
    }

    /** The specs, in server order. */
    List<InstanceSpec> specs() {
        return new ArrayList<>(specs);
    }
}
