package org.apache.curator.test.compatibility;

import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.curator.test.Timing;

/**
 * Test timing, as Curator's {@code Timing2}: a base duration (10 s, times the
 * {@code timing-multiple} system property), waits that are a multiple of it (5, or the
 * {@code timing-waiting-multiple} property), a session timeout of 1.5 times it, and a tick
 * time of a tenth of it (what the test servers are started with).
 */
public class Timing2 {
    private static final int DEFAULT_SECONDS = 10;
    private static final int DEFAULT_WAITING_MULTIPLE = 5;
    private static final double TICK_TIME_MULTIPLE = 0.10;
    private static final double SESSION_MULTIPLE = 1.5;
    /** A session and most of another: a missed heartbeat, then the expiry. */
    private static final double SESSION_SLEEP_MULTIPLE = SESSION_MULTIPLE * 1.75;

    private final long value;
    private final TimeUnit unit;
    private final int waitingMultiple;

    public Timing2() {
        this(Integer.getInteger("timing-multiple", 1), waitingMultipleProperty());
    }

    public Timing2(double multiple) {
        this((long) (DEFAULT_SECONDS * multiple), TimeUnit.SECONDS, waitingMultipleProperty());
    }

    public Timing2(double multiple, int waitingMultiple) {
        this((long) (DEFAULT_SECONDS * multiple), TimeUnit.SECONDS, waitingMultiple);
    }

    public Timing2(long value, TimeUnit unit) {
        this(value, unit, waitingMultipleProperty());
    }

    public Timing2(long value, TimeUnit unit, int waitingMultiple) {
        this.value = value;
        this.unit = unit;
        this.waitingMultiple = waitingMultiple;
    }

    private static int waitingMultipleProperty() {
        return Integer.getInteger("timing-waiting-multiple", DEFAULT_WAITING_MULTIPLE);
    }

    public int milliseconds() {
        return (int) unit.toMillis(value);
    }

    public int seconds() {
        return (int) value;
    }

    /** The same timing as a {@link Timing}: its waits are the same. */
    private Timing asTiming() {
        return new Timing(value, unit, waitingMultiple);
    }

    /** Waits for the latch for the waiting time; false if it did not open (or on interrupt). */
    public boolean awaitLatch(CountDownLatch latch) {
        return asTiming().awaitLatch(latch);
    }

    /** The queue's next element within the waiting time. */
    public <T> T takeFromQueue(BlockingQueue<T> queue) throws Exception {
        Timing2 wait = forWaiting();
        try {
            T v = queue.poll(wait.value, wait.unit);
            if (v == null) {
                throw new TimeoutException("Timed out trying to take from queue");
            }
            return v;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw e;
        }
    }

    /** Takes a permit within the waiting time; false if none came (or on interrupt). */
    public boolean acquireSemaphore(Semaphore semaphore) {
        return asTiming().acquireSemaphore(semaphore);
    }

    /** Takes {@code n} permits within the waiting time; false if they did not come. */
    public boolean acquireSemaphore(Semaphore semaphore, int n) {
        return asTiming().acquireSemaphore(semaphore, n);
    }

    /** This timing times {@code n}. */
    public Timing2 multiple(double n) {
        return new Timing2((int) (value * n), unit);
    }

    /** This timing times {@code n}, with this waiting multiple. */
    public Timing2 multiple(double n, int waitingMultiple) {
        return new Timing2((int) (value * n), unit, waitingMultiple);
    }

    /** The waiting time: this timing times the waiting multiple. */
    public Timing2 forWaiting() {
        return multiple(waitingMultiple);
    }

    /** Long enough for a session to expire. */
    public Timing2 forSessionSleep() {
        return multiple(SESSION_SLEEP_MULTIPLE, 1);
    }

    /** A quarter of this timing. */
    public Timing2 forSleepingABit() {
        return multiple(0.25);
    }

    public void sleepABit() throws InterruptedException {
        forSleepingABit().sleep();
    }

    public void sleep() throws InterruptedException {
        unit.sleep(value);
    }

    /** A session timeout, ms: 1.5 times this timing. */
    public int session() {
        return multiple(SESSION_MULTIPLE).milliseconds();
    }

    /** A connection timeout, ms: this timing. */
    public int connection() {
        return milliseconds();
    }

    /** The tick time test servers use, ms: a tenth of this timing (at least 1). */
    public int tickTime() {
        return (int) Math.max(1, milliseconds() * TICK_TIME_MULTIPLE);
    }
}
