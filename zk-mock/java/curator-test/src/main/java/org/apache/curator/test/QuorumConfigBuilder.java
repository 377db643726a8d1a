package org.apache.curator.test;

import java.io.Closeable;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Properties;

import org.apache.curator.test.compatibility.Timing2;
import org.apache.zookeeper.server.quorum.QuorumPeerConfig;

/**
 * The servers of one ensemble (one spec for a single server), and the zoo.cfg each would have.
 * With zk-mock, the servers of one builder are one {@code zk-mock --ports ...} process.
 */
public class QuorumConfigBuilder implements Closeable {
    private final List<InstanceSpec> specs;
    private final boolean fromRandom;
    private MockEnsemble ensemble; // guarded by this

    public QuorumConfigBuilder(Collection<InstanceSpec> specs) {
        this(specs.toArray(new InstanceSpec[0]));
    }

    public QuorumConfigBuilder(InstanceSpec... specs) {
        fromRandom = specs == null || specs.length == 0;
        this.specs = fromRandom
            ? List.of(InstanceSpec.newInstanceSpec())
            : Collections.unmodifiableList(new ArrayList<>(Arrays.asList(specs)));
    }

    /** Whether the spec was made here because none was given. */
    public boolean isFromRandom() {
        return fromRandom;
    }

    public InstanceSpec getInstanceSpec(int index) {
        return specs.get(index);
    }

    public List<InstanceSpec> getInstanceSpecs() {
        return specs;
    }

    public int size() {
        return specs.size();
    }

    /** The zk-mock process serving these specs (started by the first server started). */
    synchronized MockEnsemble ensemble() {
        if (ensemble == null) {
            ensemble = new MockEnsemble(specs);
        }
        return ensemble;
    }

    @Override
    public void close() {
    }

    public QuorumPeerConfig buildConfig() throws Exception {
        return buildConfig(0);
    }

    /** Server {@code index}'s configuration, as ZooKeeper would parse its zoo.cfg. */
    public QuorumPeerConfig buildConfig(int index) throws Exception {
        Properties properties = buildConfigProperties(index);
        File cfg = File.createTempFile("zoo", ".cfg");
        cfg.deleteOnExit();
        QuorumPeerConfig config = new QuorumPeerConfig() {
            {
                configFileStr = cfg.getPath();
            }
        };
        config.parseProperties(properties);
        return config;
    }

    /**
     * Server {@code index}'s zoo.cfg: its data directory and client port, the tick time (the
     * spec's, or {@link Timing2#tickTime()}), a minimum session timeout of one tick, the
     * {@code server.N} lines of an ensemble, and the spec's custom properties.
     */
    public Properties buildConfigProperties(int index) throws Exception {
        boolean cluster = specs.size() > 1;
        InstanceSpec spec = specs.get(index);
        if (cluster) {
            writeMyId(spec);
        }
        Properties p = new Properties();
        String localSessions = System.getProperty("readonlymode.enabled", "false");
        p.setProperty("localSessionsEnabled", localSessions);
        p.setProperty("localSessionsUpgradingEnabled", localSessions);
        p.setProperty("initLimit", "10");
        p.setProperty("syncLimit", "5");
        p.setProperty("dataDir", spec.getDataDirectory().getCanonicalPath());
        p.setProperty("clientPort", Integer.toString(spec.getPort()));
        String tick = Integer.toString(tickTime(spec));
        p.setProperty("tickTime", tick);
        p.setProperty("minSessionTimeout", tick);
        if (spec.getMaxClientCnxns() >= 0) {
            p.setProperty("maxClientCnxns", Integer.toString(spec.getMaxClientCnxns()));
        }
        if (cluster) {
            for (InstanceSpec s : specs) {
                p.setProperty("server." + s.getServerId(), String.format("%s:%d:%d;%s:%d", s.getHostname(),
                    s.getQuorumPort(), s.getElectionPort(), s.getHostname(), s.getPort()));
            }
        }
        p.putAll(spec.getCustomProperties());
        return p;
    }

    /** The tick time a spec's server runs with, ms. */
    static int tickTime(InstanceSpec spec) {
        return spec.getTickTime() >= 0 ? spec.getTickTime() : new Timing2().tickTime();
    }

    private static void writeMyId(InstanceSpec spec) throws IOException {
        Files.write(new File(spec.getDataDirectory(), "myid").toPath(),
            Integer.toString(spec.getServerId()).getBytes(StandardCharsets.UTF_8));
    }
}
