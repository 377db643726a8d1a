package org.apache.curator.test;

import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.UnknownHostException;
import java.util.Collections;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One server's settings: its client port, data directory, server id, tick time and custom
 * properties, as Curator's {@code InstanceSpec} has them. Unset values (negative, or
 * {@code null}) are chosen here: a free port, a fresh temporary directory, the next server id.
 * Two specs are equal when their host and client port are.
 *
 * <p>zk-mock uses the client port, the host, the tick time and the properties it knows
 * ({@code minSessionTimeout}, {@code maxSessionTimeout}, {@code localSessionsEnabled},
 * {@code reconfigEnabled}); the election and quorum ports are kept only to be reported, as
 * zk-mock's servers talk to each other in one process.
 */
public class InstanceSpec {
    private static final AtomicInteger NEXT_SERVER_ID = new AtomicInteger(1);
    private static final String LOCALHOST = localhost();

    private final File dataDirectory;
    private final int port;
    private final int electionPort;
    private final int quorumPort;
    private final boolean deleteDataDirectoryOnClose;
    private final int serverId;
    private final int tickTime;
    private final int maxClientCnxns;
    private final Map<String, Object> customProperties;
    private final String hostname;

    /** The loopback address "localhost" names, preferring one that is not link-local. */
    private static String localhost() {
        try {
            for (InetAddress a : InetAddress.getAllByName("localhost")) {
                if (!a.isLinkLocalAddress()) {
                    return a.getHostAddress();
                }
            }
        } catch (UnknownHostException e) {
            // "localhost" it is.
        }
        return "localhost";
    }

    /** Server ids start from 1 again. */
    public static void reset() {
        NEXT_SERVER_ID.set(1);
    }

    /** A spec with everything chosen here. */
    public static InstanceSpec newInstanceSpec() {
        return new InstanceSpec(null, -1, -1, -1, true, -1, -1, -1);
    }

    /** A port that was free a moment ago. */
    public static int getRandomPort() {
        try (ServerSocket s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        } catch (IOException e) {
            throw new Error(e);
        }
    }

    public InstanceSpec(File dataDirectory, int port, int electionPort, int quorumPort,
            boolean deleteDataDirectoryOnClose, int serverId) {
        this(dataDirectory, port, electionPort, quorumPort, deleteDataDirectoryOnClose, serverId, -1, -1, null, null);
    }

    public InstanceSpec(File dataDirectory, int port, int electionPort, int quorumPort,
            boolean deleteDataDirectoryOnClose, int serverId, int tickTime, int maxClientCnxns) {
        this(dataDirectory, port, electionPort, quorumPort, deleteDataDirectoryOnClose, serverId, tickTime,
            maxClientCnxns, null, null);
    }

    public InstanceSpec(File dataDirectory, int port, int electionPort, int quorumPort,
            boolean deleteDataDirectoryOnClose, int serverId, int tickTime, int maxClientCnxns,
            Map<String, Object> customProperties) {
        this(dataDirectory, port, electionPort, quorumPort, deleteDataDirectoryOnClose, serverId, tickTime,
            maxClientCnxns, customProperties, null);
    }

    public InstanceSpec(File dataDirectory, int port, int electionPort, int quorumPort,
            boolean deleteDataDirectoryOnClose, int serverId, int tickTime, int maxClientCnxns,
            Map<String, Object> customProperties, String hostname) {
        this.dataDirectory = dataDirectory != null ? dataDirectory : DirectoryUtils.createTempDirectory();
        this.port = port >= 0 ? port : getRandomPort();
        this.electionPort = electionPort >= 0 ? electionPort : getRandomPort();
        this.quorumPort = quorumPort >= 0 ? quorumPort : getRandomPort();
        this.deleteDataDirectoryOnClose = deleteDataDirectoryOnClose;
        this.serverId = serverId >= 0 ? serverId : NEXT_SERVER_ID.getAndIncrement();
        this.tickTime = tickTime > 0 ? tickTime : -1;
        this.maxClientCnxns = maxClientCnxns >= 0 ? maxClientCnxns : -1;
        this.customProperties = customProperties == null
            ? Collections.emptyMap()
            : Collections.unmodifiableMap(customProperties);
        this.hostname = hostname != null ? hostname : LOCALHOST;
    }

    public int getServerId() {
        return serverId;
    }

    public File getDataDirectory() {
        return dataDirectory;
    }

    public int getPort() {
        return port;
    }

    public int getElectionPort() {
        return electionPort;
    }

    public int getQuorumPort() {
        return quorumPort;
    }

    /** {@code host:port}. */
    public String getConnectString() {
        return hostname + ":" + port;
    }

    /** The tick time in ms; -1 for the default. */
    public int getTickTime() {
        return tickTime;
    }

    /** The connection limit; -1 for the default. */
    public int getMaxClientCnxns() {
        return maxClientCnxns;
    }

    public boolean deleteDataDirectoryOnClose() {
        return deleteDataDirectoryOnClose;
    }

    public Map<String, Object> getCustomProperties() {
        return customProperties;
    }

    public String getHostname() {
        return hostname;
    }

    @Override
    public String toString() {
        return "InstanceSpec{dataDirectory=" + dataDirectory + ", port=" + port + ", electionPort=" + electionPort
            + ", quorumPort=" + quorumPort + ", deleteDataDirectoryOnClose=" + deleteDataDirectoryOnClose
            + ", serverId=" + serverId + ", tickTime=" + tickTime + ", maxClientCnxns=" + maxClientCnxns
            + ", customProperties=" + customProperties + ", hostname=" + hostname + "} " + super.toString();
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (o == null || getClass() != o.getClass()) {
            return false;
        }
        InstanceSpec that = (InstanceSpec) o;
        return port == that.port && hostname.equals(that.hostname);
    }

    @Override
    public int hashCode() {
        return hostname.hashCode() + port;
    }
}
