package io.zkmock;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryForever;
import org.apache.curator.test.TestingServer;

/**
 * Start cost per test, side by side: {@code new ZkMockServer()} against Curator's
 * {@code new TestingServer()}, each from the constructor to the first connected
 * CuratorFramework client, then closed: the first start in a fresh JVM (class loading
 * included), then the median of the next runs.
 * Run by {@code zk-mock/java/run-tests.sh --start-cost [runs]}.
 */
public final class StartCost {
    interface Start {
        AutoCloseable start() throws Exception;
    }

    private StartCost() {}

    static long once(Start start) throws Exception {
        long t = System.nanoTime();
        try (AutoCloseable server = start.start()) {
            String cs = server instanceof ZkMockServer
                ? ((ZkMockServer) server).getConnectString()
                : ((TestingServer) server).getConnectString();
            try (CuratorFramework c = CuratorFrameworkFactory.newClient(cs, new RetryForever(10))) {
                c.start();
                if (!c.blockUntilConnected(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("no connection to " + cs);
                }
                return System.nanoTime() - t;
            }
        }
    }

    static String row(String name, Start start, int runs) throws Exception {
        long first = once(start);
        List<Long> times = new ArrayList<>();
        for (int i = 0; i < runs; i++) {
            times.add(once(start));
        }
        Collections.sort(times);
        long median = times.get(times.size() / 2);
        return String.format("| %s | %d ms | %d ms | %d ms | %d ms | %d |", name, first / 1_000_000,
            median / 1_000_000, times.get(0) / 1_000_000, times.get(times.size() - 1) / 1_000_000, runs);
    }

    /** {@code StartCost [zk-mock|testing-server] [runs]}: one kind per JVM, so each pays its own first start. */
    public static void main(String[] args) throws Exception {
        String kind = args.length > 0 ? args[0] : "zk-mock";
        int runs = args.length > 1 ? Integer.parseInt(args[1]) : 20;
        if (args.length > 2) {
            System.out.println("| server | first start in a fresh JVM | median of the next runs, start to first connected client | min | max | runs |");
            System.out.println("|---|---|---|---|---|---|");
        }
        System.out.println(kind.equals("zk-mock")
            ? row("ZkMockServer (zk-mock)", ZkMockServer::new, runs)
            : row("Curator TestingServer (ZooKeeper 3.8 in the JVM)", TestingServer::new, runs));
    }
}
