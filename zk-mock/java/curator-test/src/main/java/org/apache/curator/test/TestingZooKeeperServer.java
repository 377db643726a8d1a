package org.apache.curator.test;

import java.io.Closeable;
import java.io.IOException;
import java.util.Collection;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One server of a {@link QuorumConfigBuilder}'s ensemble (its only one, for a single server),
 * backed by zk-mock. As Curator's: {@link #start()} starts it once, {@link #stop()} and
 * {@link #kill()} take it down (its clients are cut off and its port is freed),
 * {@link #restart()} brings it back on the same port with its sessions, and {@link #close()}
 * ends it (the process ends with the ensemble's last server).
 */
public class TestingZooKeeperServer implements Closeable {
    private enum State { LATENT, STARTED, STOPPED, CLOSED }

    private final AtomicReference<State> state = new AtomicReference<>(State.LATENT);
    private final QuorumConfigBuilder configBuilder;
    private final int index;

    public TestingZooKeeperServer(QuorumConfigBuilder configBuilder) {
        this(configBuilder, 0);
    }

    public TestingZooKeeperServer(QuorumConfigBuilder configBuilder, int thisInstanceIndex) {
        this.configBuilder = configBuilder;
        this.index = thisInstanceIndex;
    }

    public Collection<InstanceSpec> getInstanceSpecs() {
        return configBuilder.getInstanceSpecs();
    }

    public InstanceSpec getInstanceSpec() {
        return configBuilder.getInstanceSpec(index);
    }

    /** Its index in its ensemble. */
    int index() {
        return index;
    }

    QuorumConfigBuilder configBuilder() {
        return configBuilder;
    }

    /** Starts it, once: nothing if it was started before (use {@link #restart()}). */
    public void start() throws Exception {
        if (!state.compareAndSet(State.LATENT, State.STARTED)) {
            return;
        }
        try {
            configBuilder.ensemble().start(index);
        } catch (Exception | Error e) {
            state.set(State.LATENT);
            throw e;
        }
    }

    /** Whether it was never started (or is to be restarted). */
    boolean isLatent() {
        return state.get() == State.LATENT;
    }

    /** Marks it started when its ensemble started every server at once. */
    void startedWithEnsemble() {
        state.compareAndSet(State.LATENT, State.STARTED);
    }

    /** Takes it down at once, as a dead process: its clients are cut off, its port is freed. */
    public void kill() {
        configBuilder.ensemble().kill(index);
        state.set(State.STOPPED);
    }

    /** Stops it (if started): as {@link #kill()}. */
    public void stop() throws IOException {
        if (state.compareAndSet(State.STARTED, State.STOPPED)) {
            configBuilder.ensemble().kill(index);
        }
    }

    /**
     * Starts it again on the same port, with the data and sessions it had (stopping it
     * first if it runs).
     *
     * @throws IllegalStateException once it is closed
     * @throws java.net.BindException if another server took its port meanwhile
     */
    public void restart() throws Exception {
        if (state.get() == State.CLOSED) {
            throw new IllegalStateException("Cannot restart a closed instance");
        }
        if (state.get() == State.STARTED) {
            stop();
        }
        state.set(State.LATENT);
        start();
    }

    /** Stops it for good, and deletes its data directory if its spec says so. */
    @Override
    public void close() throws IOException {
        stop();
        if (state.compareAndSet(State.STOPPED, State.CLOSED) || state.compareAndSet(State.LATENT, State.CLOSED)) {
            configBuilder.ensemble().close(index);
            InstanceSpec spec = getInstanceSpec();
            if (spec.deleteDataDirectoryOnClose()) {
                DirectoryUtils.deleteRecursively(spec.getDataDirectory());
            }
        }
    }
}
