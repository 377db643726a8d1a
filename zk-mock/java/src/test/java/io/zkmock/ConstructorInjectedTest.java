package io.zkmock;

import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** A server taken by the test class's constructor is the class's: every test gets it. */
@ExtendWith(ZkMockExtension.class)
class ConstructorInjectedTest {
    private static ZkMockServer first;
    private final ZkMockServer server;

    ConstructorInjectedTest(ZkMockServer server) {
        this.server = server;
        if (first == null) {
            first = server;
        }
    }

    @Test
    void one(ZkMockServer param) {
        assertSame(first, server, "one server for every instance");
        assertSame(server, param, "and for the tests' parameters");
    }

    @Test
    void two(ZkMockServer param) {
        assertSame(first, server);
        assertSame(server, param);
        assertTrue(server.isRunning());
    }

    @AfterAll
    static void stillRunningUntilTheClassIsDone() {
        assertTrue(first.isRunning());
    }
}
