package org.apache.curator.test;

import org.apache.zookeeper.ZooKeeper;

/**
 * Expires a client's session. On a zk-mock server started here ({@link TestingServer},
 * {@link TestingCluster}) the session is expired by the server, as its timeout would: its
 * ephemeral nodes are deleted, watchers of them are told, and the client learns it on its
 * connection. Returns once the client knows its session is gone. For a client of another
 * server, it falls back to what Curator does: the client expires its own session.
 */
public class KillSession {
    public static void kill(ZooKeeper client) {
        long id = client.getSessionId();
        for (MockEnsemble e : MockEnsemble.LIVE) {
            if (e.expire(id)) {
                awaitClosed(client);
                return;
            }
        }
        client.getTestable().injectSessionExpiration();
    }

    public static void kill(ZooKeeper client, String connectString) throws Exception {
        kill(client);
    }

    public static void kill(ZooKeeper client, String connectString, int maxMs) throws Exception {
        kill(client);
    }

    /** Waits (at most a session timeout and a bit) until the client has seen its expiry. */
    private static void awaitClosed(ZooKeeper client) {
        long deadline = System.nanoTime() + (client.getSessionTimeout() + 5_000L) * 1_000_000L;
        while (client.getState().isAlive() && System.nanoTime() < deadline) {
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
