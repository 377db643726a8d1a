import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.retry.RetryOneTime;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingCluster;

/**
 * The steps behind Curator 5.4's "Bad old value for change node" in
 * {@code TestCuratorCacheConsistency#testConsistencyAfterSimulation}, on a {@code TestingCluster}
 * of 3: whichever curator-test is on the class path (Curator's, or zk-mock's drop-in).
 *
 * <p>Client 1 holds a {@code CuratorCache} of {@code /base} and talks to server A only; client 2
 * talks to the other two. Server A is killed; while client 1 is disconnected, client 2 deletes
 * {@code /base/x} ("a", version 0) and creates it again ("b", version 0). Server A comes back and
 * client 1 reconnects. The cache's rebuild reads "b" and keeps it without telling its listeners:
 * {@code CuratorCacheImpl.putStorage} fires a change only when the version differs, and both are
 * version 0. Client 2 then sets "c": the cache's change event says the old value was "b", while
 * its listener last saw "a", which is what the Curator test reports as an error. Prints the
 * listener's events and the outcome.
 */
public final class CacheRace {
    public static void main(String[] args) throws Exception {
        try (TestingCluster cluster = new TestingCluster(3)) {
            cluster.start();
            List<InstanceSpec> specs = new ArrayList<>(cluster.getInstances());
            InstanceSpec a = specs.get(0);
            String others = specs.get(1).getConnectString() + "," + specs.get(2).getConnectString();
            CuratorFramework c1 =
                CuratorFrameworkFactory.newClient(a.getConnectString(), 30_000, 10_000, new RetryOneTime(200));
            CuratorFramework c2 = CuratorFrameworkFactory.newClient(others, 30_000, 10_000, new RetryOneTime(200));
            c1.start();
            c2.start();
            c1.blockUntilConnected();
            c2.blockUntilConnected();
            c2.create().forPath("/base", new byte[0]);
            c2.create().forPath("/base/x", bytes("a"));

            // What the Curator test's listener keeps: the last node each event gave.
            Map<String, ChildData> seen = new ConcurrentHashMap<>();
            AtomicReference<String> error = new AtomicReference<>();
            List<String> events = Collections.synchronizedList(new ArrayList<>());
            CuratorCache cache = CuratorCache.build(c1, "/base");
            cache.listenable().addListener((type, old, node) ->
                events.add(type + " " + describe(old) + " -> " + describe(node)));
            cache.listenable().addListener(CuratorCacheListener.builder()
                .forCreates(node -> seen.put(node.getPath(), node))
                .forChanges((old, node) -> {
                    ChildData previous = seen.put(node.getPath(), node);
                    if (previous == null || !Arrays.equals(previous.getData(), old.getData())) {
                        error.compareAndSet(null, "Bad old value for change node: " + node.getPath()
                            + " (the listener last saw " + (previous == null ? "nothing" : text(previous))
                            + ", the cache's old value is " + text(old) + ")");
                    }
                })
                .forDeletes(node -> seen.remove(node.getPath()))
                .build());
            cache.start();
            await(() -> seen.containsKey("/base/x"), "the cache has /base/x");

            cluster.killServer(a);
            await(() -> !c1.getZookeeperClient().isConnected(), "client 1 is disconnected");
            c2.delete().forPath("/base/x");
            c2.create().forPath("/base/x", bytes("b"));
            cluster.restartServer(a);
            await(() -> c1.getZookeeperClient().isConnected(), "client 1 is connected again");
            await(() -> cache.get("/base/x").map(d -> text(d).equals("b")).orElse(false), "the cache holds b");
            System.out.println("after the reconnect the cache holds b; its listener last saw "
                + text(seen.get("/base/x")));

            c2.setData().forPath("/base/x", bytes("c"));
            await(() -> text(seen.get("/base/x")).equals("c"), "the listener has c");
            events.forEach(e -> System.out.println("  event " + e));
            System.out.println(error.get() == null ? "RESULT consistent" : "RESULT " + error.get());
            cache.close();
            c1.close();
            c2.close();
        }
        System.exit(0);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    private static String text(ChildData d) {
        return new String(d.getData(), java.nio.charset.StandardCharsets.UTF_8);
    }

    private static String describe(ChildData d) {
        return d == null ? "-" : d.getPath() + "=" + text(d) + " (version " + d.getStat().getVersion() + ")";
    }

    private static void await(BooleanSupplier condition, String what) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > end) {
                System.out.println("RESULT timed out waiting until " + what);
                System.exit(2);
            }
            Thread.sleep(20);
        }
    }
}
