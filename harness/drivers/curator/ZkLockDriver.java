// The harness driver for Apache Curator 5.4 (see harness/DRIVERS.md).
//
// One JVM hosts every client of a scenario run, and serves successive runs:
// `reset` closes every client, and the next run's events carry its `run` (see
// "Serving successive runs" in DRIVERS.md). It reads newline-delimited
// JSON requests on stdin and writes replies and events, one JSON object per
// line, on stdout. Logs (ours, Curator's, ZooKeeper's) go to stderr only.
//
// Threading, the one thing a Curator driver must get right: InterProcessMutex
// (and the two halves of InterProcessReadWriteLock, which are
// InterProcessMutexes) are re-entrant *per thread* and must be released by the
// thread that acquired them. So every request of one client runs, in order, on
// that client's own single thread. Only `crash` and `close`, which may arrive
// while that thread is blocked in acquire(), are handled elsewhere: `crash` on
// the stdin thread (it answers at once), `close` on a control thread.
//
// Curator is used as an application would use it; its bugs are not worked
// around here: finding them is the harness's job.
//
// No dependencies beyond the JDK and the Curator / ZooKeeper jars (the small
// JSON reader and writer are at the end of this file).

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.curator.RetryPolicy;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.BoundedExponentialBackoffRetry;
import org.apache.curator.utils.CloseableUtils;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.ZooKeeper;

public final class ZkLockDriver {
    static final int PROTOCOL = 1;

    /** How long `open` waits for the first session before it fails. */
    static final long OPEN_TIMEOUT_MS = 60_000;
    /** How long `close` waits for an outstanding request to end (after interrupting it). */
    static final long CLOSE_DRAIN_MS = 5_000;
    /**
     * How long `shutdown` spends closing the clients left before it answers anyway (the
     * harness kills a driver that has not answered shutdown in 10 s). Closes are slow
     * with ZooKeeper's NIO transport: each holds a JVM-wide lock for 100 ms (see the
     * launcher), so 1000 clients would take 100 s; the sessions not closed in time
     * expire at the server, as a killed process's would.
     */
    static final long SHUTDOWN_CLOSE_MS = 5_000;

    // ---------------------------------------------------------------- output

    /**
     * The real stdout, kept for protocol lines only. main() points System.out at
     * stderr, so a library that prints to System.out cannot corrupt the protocol.
     */
    static PrintStream protocolOut;

    /** Writes one whole line and flushes it; the lock keeps lines from interleaving. */
    static void emit(Map<String, Object> message) {
        String line = Json.write(message);
        synchronized (ZkLockDriver.class) {
            protocolOut.print(line);
            protocolOut.print('\n');
            protocolOut.flush();
        }
    }

    static void log(String message) {
        System.err.println("[curator-driver] " + message);
    }

    static Map<String, Object> obj(Object... keysAndValues) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < keysAndValues.length; i += 2) {
            m.put((String) keysAndValues[i], keysAndValues[i + 1]);
        }
        return m;
    }

    static void replyOk(long id, Object... fields) {
        Map<String, Object> m = obj("id", id, "ok", true);
        m.putAll(obj(fields));
        emit(m);
    }

    static void replyError(long id, String cls, String code, String message) {
        emit(obj("id", id, "ok", false,
                "error", obj("class", cls, "code", code, "message", message)));
    }

    static void replyError(long id, Throwable t) {
        Map<String, Object> error = classify(t);
        emit(obj("id", id, "ok", false, "error", error));
    }

    /** A request the driver refuses before calling the library: it did not happen. */
    static final class BadRequest extends RuntimeException {
        final String code;

        BadRequest(String code, String message) {
            super(message);
            this.code = code;
        }
    }

    /** release() of a lock the client does not hold: definite, in the library's words. */
    static final class NotHeld extends Exception {
        NotHeld(RuntimeException cause) {
            super(cause.getMessage(), cause);
        }
    }

    /**
     * The error classes of DRIVERS.md. `definite`: the library refused before (or
     * instead of) changing anything. `indefinite`: anything whose outcome is unknown,
     * including every exception of unknown cause.
     */
    static Map<String, Object> classify(Throwable t) {
        // Unwrap the JDK's wrappers (never Curator's own exceptions).
        while ((t instanceof java.util.concurrent.ExecutionException
                || t instanceof java.lang.reflect.UndeclaredThrowableException
                || t instanceof java.lang.reflect.InvocationTargetException)
                && t.getCause() != null) {
            t = t.getCause();
        }
        String message = t.getMessage() != null ? t.getMessage() : t.toString();
        if (t instanceof BadRequest) {
            return obj("class", "definite", "code", ((BadRequest) t).code, "message", message);
        }
        if (t instanceof NotHeld) {
            return obj("class", "definite", "code", t.getCause().getClass().getSimpleName(), "message", message);
        }
        String cls;
        String code;
        if (t instanceof KeeperException) {
            KeeperException.Code kc = ((KeeperException) t).code();
            code = keeperCodeName(kc, t);
            switch (kc) {
                case NONODE:
                case NODEEXISTS:
                case BADVERSION:
                    cls = "definite";
                    break;
                default: // CONNECTIONLOSS, SESSIONEXPIRED, OPERATIONTIMEOUT, and the rest
                    cls = "indefinite";
            }
        } else {
            code = t.getClass().getSimpleName();
            // IllegalMonitorStateException: InterProcessMutex's "You do not own the lock".
            // (IllegalStateException is not among them: Curator also throws it in the
            // middle of an operation whose framework was closed under it, "Expected state
            // [STARTED] was [STOPPED]". The semaphore's "Not acquired" is a NotHeld.)
            if (t instanceof IllegalMonitorStateException || t instanceof IllegalArgumentException) {
                cls = "definite";
            } else {
                cls = "indefinite"; // InterruptedException, IOException, anything else
            }
        }
        return obj("class", cls, "code", code, "message", message);
    }

    /** "ConnectionLoss" for CONNECTIONLOSS: the name of KeeperException's subclass for the code. */
    static String keeperCodeName(KeeperException.Code code, Throwable t) {
        try {
            String name = KeeperException.create(code).getClass().getSimpleName();
            if (name.endsWith("Exception") && !name.equals("KeeperException")) {
                return name.substring(0, name.length() - "Exception".length());
            }
        } catch (RuntimeException ignored) {
            // KeeperException.create refuses OK and unknown codes
        }
        return code.name();
    }

    // --------------------------------------------------------------- clients

    static final Map<String, Client> clients = new ConcurrentHashMap<>();

    /** The `run` of the last reset (0 before the first): clients opened now carry it. */
    static volatile long runNumber = 0;

    /** Threads for close and for shutdown's parallel closes (never the stdin thread). */
    static final ExecutorService control = Executors.newCachedThreadPool(daemonThreads("control"));

    static ThreadFactory daemonThreads(String prefix) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, prefix + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }

    /**
     * A client: one CuratorFramework (one ZooKeeper session at a time) and the lock
     * objects of its kind, driven from one thread.
     */
    static final class Client {
        final String name;
        /** The run it was opened in: every event of this client says so. */
        final long run = runNumber;
        /** Runs every request of this client, in order, on one thread (see the file comment). */
        final ExecutorService thread;

        volatile CuratorFramework framework;
        /** Set by crash: nothing more is written for this client, replies or events. */
        volatile boolean crashed;
        /** Set by close/replace: no more state events (the harness may forget the client). */
        volatile boolean closing;

        String kind;
        InterProcessMutex mutex;                // exclusive, reentrant
        InterProcessReadWriteLock readWrite;    // read-write
        InterProcessSemaphoreMutex semaphore;   // semaphore
        /** What this client holds, last acquired on top (one entry per acquire, re-entries too). */
        final Deque<InterProcessLock> held = new ArrayDeque<>();

        /** The session the last state event named, to tell RECONNECTED from a new session. */
        volatile long lastSession;
        final CountDownLatch firstConnected = new CountDownLatch(1);

        Client(String name) {
            this.name = name;
            this.thread = Executors.newSingleThreadExecutor(daemonThreads("client-" + name));
        }

        /** A request waiting for, or running on, this client's thread. */
        final class Job implements Runnable {
            final long id;
            final Request body;

            Job(long id, Request body) {
                this.id = id;
                this.body = body;
            }

            @Override
            public void run() {
                Map<String, Object> reply;
                try {
                    reply = obj("id", id, "ok", true);
                    reply.putAll(body.run());
                } catch (Throwable t) {
                    reply = obj("id", id, "ok", false, "error", classify(t));
                }
                write(reply, false);
            }
        }

        /**
         * Writes a reply or an event of this client, unless it crashed (or, for events,
         * is closing). The check and the write are one step under the client's lock, so
         * nothing of a client can follow its `crash` reply (or its `close` reply).
         */
        synchronized void write(Map<String, Object> message, boolean event) {
            if (!crashed && !(event && closing)) {
                emit(message);
            }
        }

        /** Runs a request on this client's thread; its reply is dropped once the client crashed. */
        void submit(long id, Request body) {
            try {
                thread.execute(new Job(id, body));
            } catch (RejectedExecutionException e) {
                // closed or crashed under our feet
                write(obj("id", id, "ok", false, "error", obj("class", "definite", "code", "ClientClosed",
                        "message", "client " + name + " is closed")), false);
            }
        }

        /** Stops the thread: interrupts the running request, answers those that never ran. */
        void stopThread() {
            for (Runnable r : thread.shutdownNow()) {
                if (r instanceof Job) {
                    write(obj("id", ((Job) r).id, "ok", false, "error", obj("class", "definite",
                            "code", "ClientClosed", "message", "client " + name + " was closed first")), false);
                }
            }
        }

        void state(String state, long session) {
            Map<String, Object> m = obj("event", "state", "client", name, "state", state, "run", run);
            if (session != 0) {
                m.put("session", session);
            }
            write(m, true);
        }

        // ---- requests, all on this client's thread

        Map<String, Object> open(String connect, int sessionTimeoutMs, String kind, String path)
                throws Exception {
            // Curator's default connection timeout is 15 s; with the short sessions of
            // tests an operation should not wait for a connection longer than the
            // session could survive, so min(session timeout, 15 s).
            int connectionTimeoutMs = Math.min(sessionTimeoutMs, 15_000);
            CuratorFramework fw = CuratorFrameworkFactory.builder()
                    .connectString(connect)
                    .sessionTimeoutMs(sessionTimeoutMs)
                    .connectionTimeoutMs(connectionTimeoutMs)
                    .retryPolicy(retryPolicy())
                    // Curator's EnsembleTracker reads /zookeeper/config and
                    // points the client at the servers' own client ports;
                    // under the harness the connect string is the client's
                    // proxies (or the mock's chosen servers), which the
                    // tracker would route around: every fault, and the
                    // history's attribution of the client's writes, lost
                    // at its first failover.
                    .ensembleTracker(false)
                    .build();
            // Before start(), so that the first CONNECTED is not missed.
            fw.getConnectionStateListenable().addListener((c, s) -> onState(c, s));
            synchronized (this) {
                if (crashed || closing) {
                    throw new InterruptedException("client " + name + " went away while opening");
                }
                framework = fw;
            }
            fw.start();
            if (!fw.blockUntilConnected((int) OPEN_TIMEOUT_MS, TimeUnit.MILLISECONDS)) {
                throw new KeeperException.ConnectionLossException(); // the outcome is unknown
            }
            // Curator posts CONNECTED to listeners on its own thread; wait for our
            // listener to have written the `connected` event, so it precedes the reply.
            if (!firstConnected.await(OPEN_TIMEOUT_MS, TimeUnit.MILLISECONDS)) {
                throw new KeeperException.ConnectionLossException();
            }
            this.kind = kind;
            switch (kind) {
                case "exclusive":
                case "reentrant":
                    mutex = new InterProcessMutex(fw, path);
                    break;
                case "read-write":
                    readWrite = new InterProcessReadWriteLock(fw, path);
                    break;
                case "semaphore":
                    semaphore = new InterProcessSemaphoreMutex(fw, path);
                    break;
                default:
                    throw new BadRequest("UnknownKind", "kind " + kind + " is not supported");
            }
            return obj("session", sessionOf(fw));
        }

        Map<String, Object> acquire(String role, String mode, Long timeoutMs) throws Exception {
            InterProcessLock lock = lockFor(role);
            boolean acquired;
            switch (mode) {
                case "block":
                    lock.acquire();
                    acquired = true;
                    break;
                case "timeout":
                    if (timeoutMs == null || timeoutMs < 0) {
                        throw new BadRequest("BadRequest", "mode timeout needs timeout_ms >= 0");
                    }
                    acquired = lock.acquire(timeoutMs, TimeUnit.MILLISECONDS);
                    break;
                case "try":
                    // Curator has no tryLock(): acquire with a zero wait is the closest a
                    // user can get. It still creates a lock node, looks at its place and,
                    // when not first, deletes the node again before returning false.
                    acquired = lock.acquire(0, TimeUnit.MILLISECONDS);
                    break;
                default:
                    throw new BadRequest("BadRequest", "unknown mode " + mode);
            }
            Map<String, Object> r = obj("acquired", acquired);
            if (acquired) {
                held.push(lock);
                r.put("session", sessionOf(framework));
                String node = lockNode(lock);
                if (node != null) {
                    r.put("node", node);
                }
            }
            return r;
        }

        Map<String, Object> release() throws Exception {
            // Like the libraries themselves (InterProcessMutex drops its thread's record
            // in a finally; InterProcessSemaphoreMutex clears its lease before closing it),
            // the hold is forgotten even when release() throws.
            if (held.isEmpty()) {
                // Nothing held: release() of the client's lock lets the library say so in
                // its own words (InterProcessMutex: IllegalMonitorStateException "You do
                // not own the lock"; InterProcessSemaphoreMutex: IllegalStateException
                // "Not acquired"), which is definite whatever its class.
                try {
                    defaultLock().release();
                } catch (IllegalMonitorStateException | IllegalStateException e) {
                    throw new NotHeld(e);
                }
                return obj();
            }
            held.pop().release();
            return obj();
        }

        Map<String, Object> touch(String path, String data) throws Exception {
            // A persistent node with an open ACL, in one attempt through the session the
            // client has now (its ZooKeeper handle), as kazoo's create and zookeeper-client's
            // do. Not through the framework: its RetryPolicy would carry the write across a
            // connection loss into a session Curator makes later, and land it long after
            // the holder left its critical section (seen in harness/chaos: an exit marker
            // sent at 1.09 s, applied at 2.78 s through a new session) — a write that no
            // lock can be blamed for.
            framework.getZookeeperClient().getZooKeeper().create(
                    path,
                    data.getBytes(StandardCharsets.UTF_8),
                    org.apache.zookeeper.ZooDefs.Ids.OPEN_ACL_UNSAFE,
                    org.apache.zookeeper.CreateMode.PERSISTENT);
            return obj();
        }

        InterProcessLock lockFor(String role) {
            if (kind == null) {
                throw new BadRequest("NotOpen", "client " + name + " is not open");
            }
            if (kind.equals("read-write")) {
                switch (role) {
                    case "read":
                        return readWrite.readLock();
                    case "write":
                        return readWrite.writeLock();
                    default:
                        throw new BadRequest("BadRole", "kind read-write has roles read and write, not " + role);
                }
            }
            if (!role.equals("exclusive")) {
                throw new BadRequest("BadRole", "kind " + kind + " has role exclusive only, not " + role);
            }
            return defaultLock();
        }

        InterProcessLock defaultLock() {
            if (kind == null) {
                throw new BadRequest("NotOpen", "client " + name + " is not open");
            }
            switch (kind) {
                case "read-write":
                    return readWrite.writeLock();
                case "semaphore":
                    return semaphore;
                default:
                    return mutex;
            }
        }

        // ---- connection states, on Curator's ConnectionStateManager thread

        void onState(CuratorFramework fw, ConnectionState s) {
            switch (s) {
                case CONNECTED: {
                    // Curator posts CONNECTED once, for the framework's first session.
                    long sid = sessionOf(fw);
                    lastSession = sid;
                    state("connected", sid);
                    firstConnected.countDown();
                    break;
                }
                case RECONNECTED: {
                    // Curator says RECONNECTED for a new session after LOST too: a
                    // different session id makes it `connected` for the harness.
                    long sid = sessionOf(fw);
                    boolean same = sid == lastSession;
                    lastSession = sid;
                    state(same ? "reconnected" : "connected", sid);
                    break;
                }
                case SUSPENDED:
                    state("suspended", lastSession);
                    break;
                case LOST:
                    // The session that was lost (Curator has not made a new one yet).
                    state("lost", lastSession);
                    break;
                default: // READ_ONLY: not used against a single server
                    write(obj("event", "log", "client", name, "message", "connection state " + s, "run", run), true);
            }
        }

        // ---- close and crash, never on this client's thread

        /** Closes the session (closeSession) and ends any outstanding request. */
        void close() {
            CuratorFramework fw;
            synchronized (this) {
                closing = true;
                fw = framework;
            }
            if (fw != null) {
                CloseableUtils.closeQuietly(fw);
            }
            // A request still running (an acquire Curator never wakes after close) is
            // interrupted; it replies, with its error, before close replies.
            stopThread();
            try {
                if (!thread.awaitTermination(CLOSE_DRAIN_MS, TimeUnit.MILLISECONDS)) {
                    log("client " + name + ": a request is still running after close; its reply is dropped");
                    synchronized (this) {
                        crashed = true;
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        /**
         * The process "dies" for this client: no closeSession (the session must expire
         * at the server), no more traffic, no more replies or events.
         */
        void crash() {
            CuratorFramework fw;
            synchronized (this) {
                crashed = true;
                fw = framework;
            }
            Thread reaper = new Thread(() -> {
                // First cut the ZooKeeper connection without closeSession, so that nothing
                // this client does from now on (an interrupted acquire deleting its node,
                // a retry) reaches the server; then stop its thread and Curator's.
                if (fw != null) {
                    dropConnection(fw);
                }
                thread.shutdownNow(); // crashed: nothing is answered any more
                if (fw != null) {
                    // ZooKeeper.close() on a handle whose connection is gone sends nothing.
                    CloseableUtils.closeQuietly(fw);
                }
            }, "crash-" + name);
            reaper.setDaemon(true);
            reaper.start();
        }
    }

    /**
     * The retry policy of every client. A real application keeps going through any
     * outage its session could survive, and past it into a new session, so the policy
     * retries a lot: exponential back-off (the family Curator's documentation shows and
     * most applications use) from 50 ms, capped at 1 s, up to 20 times (the Bounded
     * variant caps the sleep without logging a warning at every retry; past ~25 retries
     * ExponentialBackoffRetry's int arithmetic overflows). Each try also waits up to the
     * connection timeout for a connection, so an operation gives up only after roughly
     * 20 x (connection timeout + 1 s) of outage (about 60 s with 2 s sessions): long
     * enough that no fault of a scenario surfaces as an error merely because the driver
     * gave up early, short enough that a permanent outage ends in an error, not a hang.
     * RetryForever would be the other honest choice.
     *
     * Note that the policy reaches further than single operations: InterProcessMutex's
     * acquire starts over, with a new lock node, when its node vanished (NoNode, e.g. its
     * session expired while it waited) for as long as this policy allows.
     */
    static RetryPolicy retryPolicy() {
        return new BoundedExponentialBackoffRetry(50, 1000, 20);
    }

    static long sessionOf(CuratorFramework fw) {
        try {
            return fw.getZookeeperClient().getZooKeeper().getSessionId();
        } catch (Exception e) {
            return 0;
        }
    }

    /**
     * Closes a framework's ZooKeeper connection without sending closeSession: the
     * public ClientCnxn.disconnect() (which stops the send and event threads), reached
     * through ZooKeeper's protected `cnxn` field. Falls back to nothing: the caller's
     * close() then sends a closeSession that the stalled connection loses anyway.
     */
    static void dropConnection(CuratorFramework fw) {
        try {
            ZooKeeper zk = fw.getZookeeperClient().getZooKeeper();
            Field f = ZooKeeper.class.getDeclaredField("cnxn");
            f.setAccessible(true);
            Object cnxn = f.get(zk);
            cnxn.getClass().getMethod("disconnect").invoke(cnxn);
        } catch (Throwable t) {
            log("crash: could not drop the connection without closeSession: " + t);
        }
    }

    // The lock node, for the optional `node` of an acquire reply. Curator does not
    // publish it, so it is read (never changed) through reflection: InterProcessMutex's
    // protected getLockPath() (per thread: this is the acquiring thread) and
    // InterProcessSemaphoreMutex's private lease. Failing that, no `node`.
    static final Method MUTEX_LOCK_PATH = accessibleMethod(InterProcessMutex.class, "getLockPath");
    static final Field SEMAPHORE_LEASE = accessibleField(InterProcessSemaphoreMutex.class, "lease");

    static String lockNode(InterProcessLock lock) {
        try {
            if (lock instanceof InterProcessMutex && MUTEX_LOCK_PATH != null) {
                return (String) MUTEX_LOCK_PATH.invoke(lock);
            }
            if (lock instanceof InterProcessSemaphoreMutex && SEMAPHORE_LEASE != null) {
                Lease lease = (Lease) SEMAPHORE_LEASE.get(lock);
                return lease != null ? lease.getNodeName() : null;
            }
        } catch (Throwable ignored) {
            // optional information
        }
        return null;
    }

    static Method accessibleMethod(Class<?> c, String name) {
        try {
            Method m = c.getDeclaredMethod(name);
            m.setAccessible(true);
            return m;
        } catch (Throwable t) {
            return null;
        }
    }

    static Field accessibleField(Class<?> c, String name) {
        try {
            Field f = c.getDeclaredField(name);
            f.setAccessible(true);
            return f;
        } catch (Throwable t) {
            return null;
        }
    }

    // ------------------------------------------------------------- versions

    static String curatorVersion() {
        String v = InterProcessMutex.class.getPackage().getImplementationVersion();
        if (v != null) {
            return v;
        }
        // Debian's jars have no Implementation-Version; Maven's pom.properties has it.
        try (InputStream in = InterProcessMutex.class.getResourceAsStream(
                "/META-INF/maven/org.apache.curator/curator-recipes/pom.properties")) {
            if (in != null) {
                Properties p = new Properties();
                p.load(in);
                v = p.getProperty("version");
            }
        } catch (Exception ignored) {
            // unknown
        }
        return v != null ? v : "unknown";
    }

    static String zookeeperVersion() {
        try {
            return org.apache.zookeeper.Version.getFullVersion();
        } catch (Throwable t) {
            return "unknown";
        }
    }

    // ---------------------------------------------------------------- main

    interface Request {
        Map<String, Object> run() throws Exception;
    }

    static final Pattern ID = Pattern.compile("\"id\"\\s*:\\s*(-?\\d+)");

    public static void main(String[] args) throws Exception {
        protocolOut = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            Map<String, Object> req;
            try {
                Object parsed = Json.parse(line);
                if (!(parsed instanceof Map)) {
                    throw new IllegalArgumentException("not a JSON object");
                }
                @SuppressWarnings("unchecked")
                Map<String, Object> m = (Map<String, Object>) parsed;
                req = m;
            } catch (RuntimeException e) {
                // Answer the id if one can be seen at all; otherwise all we can do is say so.
                Matcher idm = ID.matcher(line);
                String why = "malformed request: " + e.getMessage() + ": " + line;
                log(why);
                if (idm.find()) {
                    replyError(Long.parseLong(idm.group(1)), "definite", "BadRequest", why);
                } else {
                    emit(obj("event", "log", "message", why));
                }
                continue;
            }
            Object idv = req.get("id");
            if (!(idv instanceof Long)) {
                String why = "request without an integer id: " + line;
                log(why);
                emit(obj("event", "log", "message", why));
                continue;
            }
            long id = (Long) idv;
            try {
                dispatch(id, req);
            } catch (Throwable t) {
                replyError(id, t);
            }
        }
        // stdin closed: the harness is gone; exit without waiting for sessions to close.
        protocolOut.flush();
        System.exit(0);
    }

    static void dispatch(long id, Map<String, Object> req) throws Exception {
        String op = str(req, "op");
        switch (op) {
            case "init": {
                long protocol = num(req, "protocol");
                if (protocol != PROTOCOL) {
                    throw new BadRequest("UnsupportedProtocol",
                            "protocol " + protocol + " is not supported (this driver speaks " + PROTOCOL + ")");
                }
                String mutex = InterProcessMutex.class.getName();
                Map<String, Object> kinds = obj(
                        "exclusive", mutex,
                        "read-write", InterProcessReadWriteLock.class.getName() + " (readLock()/writeLock())",
                        "semaphore", InterProcessSemaphoreMutex.class.getName(),
                        "reentrant", mutex + " (re-entered)");
                String transport = System.getProperty("zookeeper.clientCnxnSocket", "ClientCnxnSocketNIO");
                emit(obj("event", "log", "message", "curator " + curatorVersion() + ", zookeeper client "
                        + zookeeperVersion() + " (" + transport.substring(transport.lastIndexOf('.') + 1)
                        + "), java " + System.getProperty("java.version")));
                replyOk(id, "implementation", "curator " + curatorVersion(), "kinds", kinds, "reuse", true);
                return;
            }
            case "open": {
                String name = str(req, "client");
                String connect = str(req, "connect");
                long sessionTimeout = num(req, "session_timeout_ms");
                Map<String, Object> lock = map(req, "lock");
                String kind = str(lock, "kind");
                String path = str(lock, "path");
                if (lock.get("recipe") != null) {
                    throw new BadRequest("UnsupportedRecipe",
                            "Curator implements none of zk-lock's recipes (asked for " + lock.get("recipe") + ")");
                }
                if (!List.of("exclusive", "read-write", "semaphore", "reentrant").contains(kind)) {
                    throw new BadRequest("UnknownKind", "kind " + kind + " is not supported");
                }
                // Registered at once (a crash or close may follow before the session is
                // up); the old client of that name, if any, is closed first on the new
                // client's thread.
                Client client = new Client(name);
                Client old = clients.put(name, client);
                client.submit(id, () -> {
                    if (old != null) {
                        old.close();
                    }
                    try {
                        return client.open(connect, (int) sessionTimeout, kind, path);
                    } catch (Throwable t) {
                        CuratorFramework fw = client.framework;
                        if (fw != null) {
                            CloseableUtils.closeQuietly(fw);
                        }
                        throw t;
                    }
                });
                return;
            }
            case "acquire": {
                Client c = client(req);
                String role = req.containsKey("role") ? str(req, "role") : "exclusive";
                String mode = req.containsKey("mode") ? str(req, "mode") : "block";
                Long timeout = req.get("timeout_ms") instanceof Long ? (Long) req.get("timeout_ms") : null;
                c.submit(id, () -> c.acquire(role, mode, timeout));
                return;
            }
            case "release": {
                Client c = client(req);
                c.submit(id, c::release);
                return;
            }
            case "touch": {
                Client c = client(req);
                String path = str(req, "path");
                String data = req.get("data") == null ? "" : str(req, "data");
                c.submit(id, () -> c.touch(path, data));
                return;
            }
            case "close": {
                Client c = client(req);
                clients.remove(c.name, c);
                control.execute(() -> {
                    c.close();
                    replyOk(id);
                });
                return;
            }
            case "crash": {
                Client c = client(req);
                clients.remove(c.name, c);
                c.crash();
                replyOk(id);
                return;
            }
            case "reset": {
                // On the stdin thread: nothing of the next run starts before the reply.
                long run = num(req, "run");
                List<Client> left = new ArrayList<>(clients.values());
                clients.clear();
                runNumber = run;
                boolean closed = closeAll(left, "reset");
                // The run's clients say nothing more (a late line would carry their old run).
                for (Client c : left) {
                    synchronized (c) {
                        c.crashed = true;
                    }
                }
                if (!closed) {
                    // Not reusable: the harness shuts this process down.
                    throw new BadRequest("ResetIncomplete", "some clients did not close in time");
                }
                replyOk(id);
                return;
            }
            case "shutdown": {
                List<Client> left = new ArrayList<>(clients.values());
                clients.clear();
                closeAll(left, "shutdown");
                replyOk(id);
                protocolOut.flush();
                System.exit(0);
                return;
            }
            default:
                throw new BadRequest("UnknownOp", "unknown op " + op);
        }
    }

    /** Closes the clients all together, waiting at most SHUTDOWN_CLOSE_MS; true if all closed. */
    static boolean closeAll(List<Client> left, String why) throws InterruptedException {
        CountDownLatch done = new CountDownLatch(left.size());
        ExecutorService closers = Executors.newFixedThreadPool(
                Math.max(1, Math.min(32, left.size())), daemonThreads(why));
        for (Client c : left) {
            closers.execute(() -> {
                try {
                    c.close();
                } finally {
                    done.countDown();
                }
            });
        }
        boolean all = done.await(SHUTDOWN_CLOSE_MS, TimeUnit.MILLISECONDS);
        if (!all) {
            log(why + ": " + done.getCount() + " clients did not close in time");
        }
        closers.shutdown();
        return all;
    }

    static Client client(Map<String, Object> req) {
        String name = str(req, "client");
        Client c = clients.get(name);
        if (c == null) {
            throw new BadRequest("UnknownClient", "no open client " + name);
        }
        return c;
    }

    static String str(Map<String, Object> m, String key) {
        Object v = m.get(key);
        if (!(v instanceof String)) {
            throw new BadRequest("BadRequest", "field " + key + " must be a string");
        }
        return (String) v;
    }

    static long num(Map<String, Object> m, String key) {
        Object v = m.get(key);
        if (!(v instanceof Long)) {
            throw new BadRequest("BadRequest", "field " + key + " must be an integer");
        }
        return (Long) v;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> map(Map<String, Object> m, String key) {
        Object v = m.get(key);
        if (!(v instanceof Map)) {
            throw new BadRequest("BadRequest", "field " + key + " must be an object");
        }
        return (Map<String, Object>) v;
    }

    // ---------------------------------------------------------------- JSON

    /**
     * Just enough JSON for the protocol: objects (kept in order), arrays, strings,
     * integers as Long (64-bit ids exactly), other numbers as Double, booleans, null.
     */
    static final class Json {
        private final String s;
        private int i;

        private Json(String s) {
            this.s = s;
        }

        static Object parse(String text) {
            Json p = new Json(text);
            p.ws();
            Object v = p.value();
            p.ws();
            if (p.i != text.length()) {
                throw p.err("trailing characters");
            }
            return v;
        }

        private IllegalArgumentException err(String what) {
            return new IllegalArgumentException(what + " at offset " + i);
        }

        private void ws() {
            while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
        }

        private Object value() {
            if (i >= s.length()) {
                throw err("unexpected end");
            }
            char c = s.charAt(i);
            switch (c) {
                case '{':
                    return object();
                case '[':
                    return array();
                case '"':
                    return string();
                case 't':
                    return literal("true", Boolean.TRUE);
                case 'f':
                    return literal("false", Boolean.FALSE);
                case 'n':
                    return literal("null", null);
                default:
                    if (c == '-' || (c >= '0' && c <= '9')) {
                        return number();
                    }
                    throw err("unexpected character '" + c + "'");
            }
        }

        private Object literal(String word, Object v) {
            if (!s.startsWith(word, i)) {
                throw err("bad literal");
            }
            i += word.length();
            return v;
        }

        private Map<String, Object> object() {
            Map<String, Object> m = new LinkedHashMap<>();
            i++; // {
            ws();
            if (i < s.length() && s.charAt(i) == '}') {
                i++;
                return m;
            }
            while (true) {
                ws();
                if (i >= s.length() || s.charAt(i) != '"') {
                    throw err("expected a key");
                }
                String k = string();
                ws();
                expect(':');
                ws();
                m.put(k, value());
                ws();
                if (i < s.length() && s.charAt(i) == ',') {
                    i++;
                    continue;
                }
                expect('}');
                return m;
            }
        }

        private List<Object> array() {
            List<Object> l = new ArrayList<>();
            i++; // [
            ws();
            if (i < s.length() && s.charAt(i) == ']') {
                i++;
                return l;
            }
            while (true) {
                ws();
                l.add(value());
                ws();
                if (i < s.length() && s.charAt(i) == ',') {
                    i++;
                    continue;
                }
                expect(']');
                return l;
            }
        }

        private void expect(char c) {
            if (i >= s.length() || s.charAt(i) != c) {
                throw err("expected '" + c + "'");
            }
            i++;
        }

        private String string() {
            StringBuilder b = new StringBuilder();
            i++; // opening quote
            while (true) {
                if (i >= s.length()) {
                    throw err("unterminated string");
                }
                char c = s.charAt(i++);
                if (c == '"') {
                    return b.toString();
                }
                if (c < 0x20) {
                    throw err("control character in string");
                }
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                if (i >= s.length()) {
                    throw err("unterminated escape");
                }
                char e = s.charAt(i++);
                switch (e) {
                    case '"': b.append('"'); break;
                    case '\\': b.append('\\'); break;
                    case '/': b.append('/'); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'n': b.append('\n'); break;
                    case 'r': b.append('\r'); break;
                    case 't': b.append('\t'); break;
                    case 'u':
                        if (i + 4 > s.length()) {
                            throw err("short \\u escape");
                        }
                        try {
                            b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        } catch (NumberFormatException x) {
                            throw err("bad \\u escape");
                        }
                        i += 4; // surrogate pairs come as two escapes and join up in the String
                        break;
                    default:
                        throw err("bad escape \\" + e);
                }
            }
        }

        private Object number() {
            int start = i;
            if (s.charAt(i) == '-') {
                i++;
            }
            boolean integral = true;
            while (i < s.length()) {
                char c = s.charAt(i);
                if (c >= '0' && c <= '9') {
                    i++;
                } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
                    integral = false;
                    i++;
                } else {
                    break;
                }
            }
            String t = s.substring(start, i);
            try {
                if (integral) {
                    return Long.parseLong(t); // exact for every 64-bit id
                }
                return Double.parseDouble(t);
            } catch (NumberFormatException x) {
                throw err("bad number " + t);
            }
        }

        static String write(Object v) {
            StringBuilder b = new StringBuilder();
            write(b, v);
            return b.toString();
        }

        private static void write(StringBuilder b, Object v) {
            if (v == null) {
                b.append("null");
            } else if (v instanceof String) {
                quote(b, (String) v);
            } else if (v instanceof Boolean || v instanceof Long || v instanceof Integer) {
                b.append(v);
            } else if (v instanceof Number) {
                double d = ((Number) v).doubleValue();
                b.append(Double.isFinite(d) ? String.valueOf(d) : "null");
            } else if (v instanceof Map) {
                b.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                    if (!first) {
                        b.append(',');
                    }
                    first = false;
                    quote(b, String.valueOf(e.getKey()));
                    b.append(':');
                    write(b, e.getValue());
                }
                b.append('}');
            } else if (v instanceof List) {
                b.append('[');
                boolean first = true;
                for (Object o : (List<?>) v) {
                    if (!first) {
                        b.append(',');
                    }
                    first = false;
                    write(b, o);
                }
                b.append(']');
            } else {
                quote(b, v.toString());
            }
        }

        private static void quote(StringBuilder b, String s) {
            b.append('"');
            for (int k = 0; k < s.length(); k++) {
                char c = s.charAt(k);
                switch (c) {
                    case '"': b.append("\\\""); break;
                    case '\\': b.append("\\\\"); break;
                    case '\n': b.append("\\n"); break;
                    case '\r': b.append("\\r"); break;
                    case '\t': b.append("\\t"); break;
                    default:
                        if (c < 0x20 || c == 0x2028 || c == 0x2029) {
                            b.append(String.format("\\u%04x", (int) c));
                        } else {
                            b.append(c);
                        }
                }
            }
            b.append('"');
        }
    }

    private ZkLockDriver() {
    }
}
