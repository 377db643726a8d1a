package org.apache.curator.test;

import java.io.Closeable;
import java.io.IOException;
import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.zookeeper.ZooKeeper;

/**
 * An ensemble for tests, as Curator's {@code TestingCluster}, backed by one
 * {@code zk-mock --ports ...} process: one server per spec, on the spec's client port, one
 * session space and one txn log, a leader and followers. {@link #killServer} takes one down as
 * a dead process (its clients fail over, its port is freed; losing the leader or the quorum
 * starts an election), {@link #restartServer} brings it back, caught up, on the same port.
 */
public class TestingCluster implements Closeable {
    private final List<TestingZooKeeperServer> servers;
    private final List<QuorumConfigBuilder> builders;

    public TestingCluster(int instanceQty) {
        this(makeSpecs(instanceQty));
    }

    public TestingCluster(InstanceSpec... specs) {
        this(listToMap(Arrays.asList(specs)));
    }

    public TestingCluster(Collection<InstanceSpec> specs) {
        this(listToMap(specs));
    }

    /**
     * A server for each key, in an ensemble of the specs it maps to. Keys that map to the
     * same specs share one ensemble (as every key does in a cluster made from a list).
     */
    public TestingCluster(Map<InstanceSpec, Collection<InstanceSpec>> specs) {
        Map<Set<InstanceSpec>, QuorumConfigBuilder> byEnsemble = new LinkedHashMap<>();
        List<TestingZooKeeperServer> list = new ArrayList<>();
        for (Map.Entry<InstanceSpec, Collection<InstanceSpec>> e : specs.entrySet()) {
            QuorumConfigBuilder b = byEnsemble.computeIfAbsent(new LinkedHashSet<>(e.getValue()),
                k -> new QuorumConfigBuilder(e.getValue()));
            int index = b.getInstanceSpecs().indexOf(e.getKey());
            if (index < 0) {
                throw new IllegalStateException(e.getKey() + " not found in specs");
            }
            list.add(new TestingZooKeeperServer(b, index));
        }
        this.servers = List.copyOf(list);
        this.builders = List.copyOf(byEnsemble.values());
    }

    public Collection<InstanceSpec> getInstances() {
        List<InstanceSpec> specs = new ArrayList<>();
        for (TestingZooKeeperServer s : servers) {
            specs.add(s.getInstanceSpec());
        }
        return specs;
    }

    public List<TestingZooKeeperServer> getServers() {
        return new ArrayList<>(servers);
    }

    /** Every server's {@code host:port}, comma-separated. */
    public String getConnectString() {
        StringBuilder b = new StringBuilder();
        for (InstanceSpec spec : getInstances()) {
            if (b.length() > 0) {
                b.append(',');
            }
            b.append(spec.getConnectString());
        }
        return b.toString();
    }

    /** Starts every server not started yet (an ensemble's all at once, the first time). */
    public void start() throws Exception {
        for (QuorumConfigBuilder b : builders) {
            List<TestingZooKeeperServer> latent = new ArrayList<>();
            for (TestingZooKeeperServer s : servers) {
                if (s.configBuilder() == b && s.isLatent()) {
                    latent.add(s);
                }
            }
            if (b.ensemble().process() == null && latent.size() == b.size()) {
                b.ensemble().startAll();
                latent.forEach(TestingZooKeeperServer::startedWithEnsemble);
            } else {
                for (TestingZooKeeperServer s : latent) {
                    s.start();
                }
            }
        }
    }

    public void stop() throws IOException {
        for (TestingZooKeeperServer s : servers) {
            s.stop();
        }
    }

    @Override
    public void close() throws IOException {
        for (TestingZooKeeperServer s : servers) {
            s.close();
        }
    }

    /** Kills the server with this spec; false if there is none. */
    public boolean killServer(InstanceSpec instance) throws Exception {
        TestingZooKeeperServer s = serverOf(instance);
        if (s != null) {
            s.kill();
        }
        return s != null;
    }

    /** Restarts the server with this spec; false if there is none. */
    public boolean restartServer(InstanceSpec instance) throws Exception {
        TestingZooKeeperServer s = serverOf(instance);
        if (s != null) {
            s.restart();
        }
        return s != null;
    }

    /** The server with this spec; null if none has it. */
    private TestingZooKeeperServer serverOf(InstanceSpec instance) {
        for (TestingZooKeeperServer s : servers) {
            if (s.getInstanceSpec().equals(instance)) {
                return s;
            }
        }
        return null;
    }

    /** The spec of the server the client is connected to; null if it is not connected. */
    public InstanceSpec findConnectionInstance(ZooKeeper client) throws Exception {
        Method m = ZooKeeper.class.getDeclaredMethod("testableRemoteSocketAddress");
        m.setAccessible(true);
        InetSocketAddress address = (InetSocketAddress) m.invoke(client);
        if (address != null) {
            for (TestingZooKeeperServer s : servers) {
                if (s.getInstanceSpec().getPort() == address.getPort()) {
                    return s.getInstanceSpec();
                }
            }
        }
        return null;
    }

    public static Map<InstanceSpec, Collection<InstanceSpec>> makeSpecs(int instanceQty) {
        return makeSpecs(instanceQty, true);
    }

    /** {@code instanceQty} new specs, each mapped to them all; server ids from 1 if asked. */
    public static Map<InstanceSpec, Collection<InstanceSpec>> makeSpecs(int instanceQty, boolean resetServerIds) {
        if (resetServerIds) {
            InstanceSpec.reset();
        }
        List<InstanceSpec> specs = new ArrayList<>();
        for (int i = 0; i < instanceQty; i++) {
            specs.add(InstanceSpec.newInstanceSpec());
        }
        return listToMap(specs);
    }

    private static Map<InstanceSpec, Collection<InstanceSpec>> listToMap(Collection<InstanceSpec> specs) {
        List<InstanceSpec> all = List.copyOf(specs);
        Map<InstanceSpec, Collection<InstanceSpec>> map = new LinkedHashMap<>();
        for (InstanceSpec s : all) {
            map.put(s, all);
        }
        return map;
    }
}
