package io.zkmock.curatortest;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.Test;

/** Each run has the curator-test it says it has (run-tests.sh sets {@code curator.test.jar}). */
class ClassPathTest {
    @Test
    void testingServerComesFromTheExpectedJar() {
        String expected = System.getProperty("curator.test.jar");
        assertNotNull(expected, "run with -Dcurator.test.jar=<the jar's file name>");
        String from = TestingServer.class.getProtectionDomain().getCodeSource().getLocation().getPath();
        assertTrue(from.endsWith(expected), "TestingServer from " + from + ", expected " + expected);
    }
}
