package org.apache.curator.test.compatibility;

import org.apache.curator.test.BaseClassForTests;

/** {@link BaseClassForTests} with a {@link Timing2}, as Curator's own tests use it. */
public class CuratorTestBase extends BaseClassForTests {
    public static final String zk36Group = "zk36";
    public static final String zk37Group = "zk37";
    public static final String zk35TestCompatibilityGroup = "zk35TestCompatibility";

    protected final Timing2 timing = new Timing2();
}
