package org.apache.curator.test;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * Test timing, as Curator's {@code Timing}: a base duration (10 s, times the
 * {@code timing-multiple} system property), waits that are a multiple of it (5, or the
 * {@code timing-waiting-multiple} property), and a session timeout of a quarter of it.
 */
public class Timing {
    private static final int DEFAULT_SECONDS = 10;
    private static final int DEFAULT_WAITING_MULTIPLE = 5;
    private static final double SESSION_MULTIPLE = 0.25;

    private final long value;
    private final TimeUnit unit;
    private final int waitingMultiple;

    public Timing() {
        this(Integer.getInteger("timing-multiple", 1), waitingMultipleProperty());
    }

    public Timing(double multiple) {
        this((long) (DEFAULT_SECONDS * multiple), TimeUnit.SECONDS, waitingMultipleProperty());
    }

    public Timing(double multiple, int waitingMultiple) {
        this((long) (DEFAULT_SECONDS * multiple), TimeUnit.SECONDS, waitingMultiple);
    }

    public Timing(long value, TimeUnit unit) {
        this(value, unit, waitingMultipleProperty());
    }

    public Timing(long value, TimeUnit unit, int waitingMultiple) {
        this.value = value;
        this.unit = unit;
        this.waitingMultiple = waitingMultiple;
    }

    static int waitingMultipleProperty() {
        return Integer.getInteger("timing-waiting-multiple", DEFAULT_WAITING_MULTIPLE);
    }

    public int milliseconds() {
        return (int) unit.toMillis(value);
    }

    public int seconds() {
        return (int) value;
    }

    /** Waits for the latch for the waiting time; false if it did not open (or on interrupt). */
    public boolean awaitLatch(CountDownLatch latch) {
        Timing wait = forWaiting();
        try {
            return latch.await(wait.value, wait.unit);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Takes a permit within the waiting time; false if none came (or on interrupt). */
    public boolean acquireSemaphore(Semaphore semaphore) {
        return acquireSemaphore(semaphore, 1);
    }

    /** Takes {@code n} permits within the waiting time; false if they did not come. */
    public boolean acquireSemaphore(Semaphore semaphore, int n) {
        Timing wait = forWaiting();
        try {
            return semaphore.tryAcquire(n, wait.value, wait.unit);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** This timing times {@code n}. */
    public Timing multiple(double n) {
        return new Timing((int) (value * n), unit);
    }

    /** The waiting time: this timing times the waiting multiple. */
    public Timing forWaiting() {
        return multiple(waitingMultiple);
    }

    /** Sleeps a quarter of this timing. */
    public void sleepABit() throws InterruptedException {
        unit.sleep(value / 4);
    }

    /** A session timeout, ms: a quarter of this timing. */
    public int session() {
        return multiple(SESSION_MULTIPLE).milliseconds();
    }

    /** A connection timeout, ms: this timing. */
    public int connection() {
        return milliseconds();
    }
}
