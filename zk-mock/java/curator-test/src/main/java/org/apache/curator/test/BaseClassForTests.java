package org.apache.curator.test;

import java.io.IOException;
import java.net.BindException;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * The base of Curator-style tests: a fresh {@link TestingServer} in {@link #server} before each
 * test, closed after it. As Curator's, it sets Curator's debugging properties (no connection
 * issue logs, watchers removed in the foreground, namespace watcher maps checked empty) while
 * a test runs, and tries a second time when a server fails to start.
 */
public class BaseClassForTests {
    protected volatile TestingServer server;

    private static final String DONT_LOG_CONNECTION_ISSUES = debugProperty("PROPERTY_DONT_LOG_CONNECTION_ISSUES");
    private static final String REMOVE_WATCHERS_IN_FOREGROUND = debugProperty("PROPERTY_REMOVE_WATCHERS_IN_FOREGROUND");
    private static final String VALIDATE_NAMESPACE_WATCHER_MAP_EMPTY =
        debugProperty("PROPERTY_VALIDATE_NAMESPACE_WATCHER_MAP_EMPTY");

    /** A property name of Curator's {@code DebugUtils} (read by name: curator-client may be absent). */
    private static String debugProperty(String field) {
        try {
            return (String) Class.forName("org.apache.curator.utils.DebugUtils").getField(field).get(null);
        } catch (ReflectiveOperationException | LinkageError e) {
            return null;
        }
    }

    private static void set(String property) {
        if (property != null) {
            System.setProperty(property, "true");
        }
    }

    private static void clear(String property) {
        if (property != null) {
            System.clearProperty(property);
        }
    }

    @BeforeEach
    public void setup() throws Exception {
        set(DONT_LOG_CONNECTION_ISSUES);
        set(REMOVE_WATCHERS_IN_FOREGROUND);
        set(VALIDATE_NAMESPACE_WATCHER_MAP_EMPTY);
        try {
            createServer();
        } catch (FailedServerStartException once) {
            closeServer();
            createServer();
        }
    }

    /** A started cluster of {@code qty} servers (tried twice, as a server is). */
    public TestingCluster createAndStartCluster(int qty) throws Exception {
        TestingCluster cluster = new TestingCluster(qty);
        try {
            cluster.start();
        } catch (FailedServerStartException once) {
            try {
                cluster.close();
            } catch (Exception ignored) {
                // A second cluster follows.
            }
            cluster = new TestingCluster(qty);
            cluster.start();
        }
        return cluster;
    }

    /** Starts {@link #server}; a port taken meanwhile is a {@link FailedServerStartException}. */
    protected void createServer() throws Exception {
        while (server == null) {
            try {
                server = new TestingServer();
            } catch (BindException e) {
                server = null;
                throw new FailedServerStartException("Getting bind exception - retrying to allocate server");
            }
        }
    }

    @AfterEach
    public void teardown() throws Exception {
        clear(VALIDATE_NAMESPACE_WATCHER_MAP_EMPTY);
        clear(REMOVE_WATCHERS_IN_FOREGROUND);
        closeServer();
    }

    private void closeServer() {
        if (server != null) {
            try {
                server.close();
            } catch (IOException e) {
                e.printStackTrace();
            } finally {
                server = null;
            }
        }
    }
}
