import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.test.TestingServer;
import org.apache.zookeeper.ZooKeeper;

/**
 * The steps of Curator 5.4's {@code TestInterProcessMutexBase#testKilledSession}, repeated, on
 * whichever curator-test is on the class path (Curator's, or zk-mock's drop-in), with a shorter
 * session so that a run of many takes minutes.
 *
 * <p>Two threads of one client take the same {@code InterProcessMutex}; when the first holds it,
 * the client's ZooKeeper handle is told that its session expired
 * ({@code injectSessionExpiration()}, which closes the connection at once). The second thread
 * must then get the lock once the server expires the old session and deletes the first holder's
 * node, within the test's wait (2.625 sessions).
 *
 * <p>Each iteration prints one line: the time the second lock took, or that it was not granted.
 * When it is not granted, the program also prints the data watches the <em>old</em> handle still
 * holds: a watch on the first holder's node there means that the second thread's {@code getData}
 * watch was registered on the dead handle, which no event will ever fire. The ZooKeeper client's
 * own log (slf4j-simple on stderr; run.sh turns on {@code ClientCnxn}'s debug lines) shows the
 * order: "injectSessionExpiration() called", then the reply to that getData read on the old
 * session.
 *
 * <p>The injection lands while the second thread's requests are in flight, and where among them
 * decides the outcome. With STEP_US above 0, iteration i waits ((i - 1) mod 30) * STEP_US
 * microseconds after the first lock is granted before it injects, to sweep that moment across
 * the second thread's requests; the Curator test injects at once (STEP_US 0).
 *
 * <pre>java KilledSession ITERATIONS SESSION_MS [STEP_US]</pre>
 */
public final class KilledSession {
    public static void main(String[] args) throws Exception {
        int iterations = args.length > 0 ? Integer.parseInt(args[0]) : 20;
        int sessionMs = args.length > 1 ? Integer.parseInt(args[1]) : 3_000;
        long stepNanos = args.length > 2 ? Long.parseLong(args[2]) * 1_000 : 0;
        long waitMs = (long) (sessionMs * 2.625);
        int lost = 0;
        try (TestingServer server = new TestingServer()) {
            for (int i = 1; i <= iterations; i++) {
                System.err.println("KILLED-SESSION iteration " + i + " begins");
                long delayNanos = ((i - 1) % 30) * stepNanos;
                String outcome =
                    iteration(server.getConnectString(), sessionMs, waitMs, delayNanos, "/locks/lock-" + i);
                if (outcome.startsWith("NOT")) {
                    lost++;
                }
                System.out.println("iteration " + i + ": " + outcome);
                System.err.println("KILLED-SESSION iteration " + i + " ends: " + outcome);
            }
        }
        System.out.println("RESULT " + lost + " of " + iterations + " iterations did not grant the second lock");
    }

    private static String iteration(String connect, int sessionMs, long waitMs, long delayNanos, String path)
        throws Exception {
        CuratorFramework client =
            CuratorFrameworkFactory.newClient(connect, sessionMs, 10_000, new ExponentialBackoffRetry(100, 3));
        client.start();
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try {
            InterProcessMutex mutex1 = new InterProcessMutex(client, path);
            InterProcessMutex mutex2 = new InterProcessMutex(client, path);
            Semaphore semaphore = new Semaphore(0);
            for (InterProcessMutex mutex : List.of(mutex1, mutex2)) {
                threads.submit(() -> {
                    mutex.acquire();
                    semaphore.release();
                    Thread.sleep(1_000_000);
                    return null;
                });
            }
            if (!semaphore.tryAcquire(1, 10, TimeUnit.SECONDS)) {
                return "NOT STARTED: the first lock was not granted within 10 s";
            }
            ZooKeeper old = client.getZookeeperClient().getZooKeeper();
            long until = System.nanoTime() + delayNanos;
            while (System.nanoTime() < until) {
                Thread.onSpinWait();
            }
            old.getTestable().injectSessionExpiration();
            long start = System.nanoTime();
            if (semaphore.tryAcquire(1, waitMs, TimeUnit.MILLISECONDS)) {
                return "second lock granted after " + (System.nanoTime() - start) / 1_000_000 + " ms";
            }
            return "NOT granted within " + waitMs + " ms; the old handle's data watches: "
                + watches(old, "getDataWatches") + ", the new handle's: "
                + watches(client.getZookeeperClient().getZooKeeper(), "getDataWatches");
        } finally {
            threads.shutdownNow();
            client.close();
        }
    }

    /** ZooKeeper's own accessor for a handle's registered watches (package-private, for tests). */
    private static Object watches(ZooKeeper zk, String accessor) {
        try {
            var method = ZooKeeper.class.getDeclaredMethod(accessor);
            method.setAccessible(true);
            return method.invoke(zk);
        } catch (ReflectiveOperationException e) {
            return "(unreadable: " + e + ")";
        }
    }
}
