package io.zkmock;

import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** A class whose {@code @BeforeAll} takes a server shares it with all its tests. */
@ExtendWith(ZkMockExtension.class)
class PerClassServerTest {
    static ZkMockServer shared;

    @BeforeAll
    static void setUp(ZkMockServer server) {
        shared = server;
    }

    @Test
    void first(ZkMockServer server) {
        assertSame(shared, server);
    }

    @Test
    void second(ZkMockServer server) {
        assertSame(shared, server);
        assertTrue(server.isRunning());
    }

    @AfterAll
    static void stillRunningUntilTheClassIsDone() {
        assertTrue(shared.isRunning());
    }
}
