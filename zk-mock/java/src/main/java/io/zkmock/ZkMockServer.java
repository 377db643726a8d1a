package io.zkmock;

import java.io.BufferedReader;
import java.io.Closeable;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A zk-mock server for Java tests, in the shape of Curator's {@code TestingServer}:
 * {@code new ZkMockServer()} starts a ZooKeeper 3.8 wire-compatible server on a free
 * loopback port, {@link #getConnectString()} is what clients connect to, and
 * {@link #stop()}, {@link #restart()} and {@link #close()} do what they do there.
 * Moving a test from {@code TestingServer} is one line.
 *
 * <p>Beyond {@code TestingServer}, it has the faults tests need, through zk-mock's admin
 * interface: {@link #expireSession(long)} expires a session from the server side (its
 * ephemerals go, its client is told), {@link #disconnectSession(long)}, fault rules
 * ({@link #rule()}: fail, lose the reply, delay, disconnect, stall or expire chosen
 * requests), {@link #stall(long)}, {@link #refuseConnections()}, a manual session clock
 * ({@link #advanceClock(long)}) and a recorder of every request ({@link #requests}).
 *
 * <p>The server is the {@code zk-mock} binary in a child process. It is found through the
 * {@code zkmock.binary} system property, then the {@code ZK_MOCK_BINARY} environment
 * variable, then {@code PATH}; when none has it, the exception names each place. The child
 * exits when this JVM does, however it ends (it watches its standard input).
 */
public final class ZkMockServer implements Closeable {
    private static final String LISTENING = "zk-mock listening on ";
    private static final String ADMIN = "zk-mock admin interface on http://";

    /** Something zk-mock refused or could not do; the message says what. */
    public static class ZkMockException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        public ZkMockException(String message) {
            super(message);
        }

        public ZkMockException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** No such session, rule, server or node (the admin interface's 404). */
    public static final class NotFoundException extends ZkMockException {
        private static final long serialVersionUID = 1L;

        public NotFoundException(String message) {
            super(message);
        }
    }

    /** The binary is missing, or did not start (a port in use, a bad setting). */
    public static final class StartException extends ZkMockException {
        private static final long serialVersionUID = 1L;

        public StartException(String message) {
            super(message);
        }
    }

    /** The server process ended while the test still used it. */
    public static final class DiedException extends ZkMockException {
        private static final long serialVersionUID = 1L;

        public DiedException(String message) {
            super(message);
        }
    }

    /** The server's settings; each is the binary's flag of the same name. */
    public static final class Settings {
        private int port;
        private List<Integer> ports;
        private final List<String> args = new ArrayList<>();
        private String binary;
        private Duration startTimeout = Duration.ofSeconds(10);

        /** The client port (0, the default: a free one). */
        public Settings port(int port) {
            this.port = port;
            return this;
        }

        /**
         * An ensemble with one server on each of these client ports, in order (0: a free
         * one), in place of {@link #port(int)} and {@link #servers(int)}: ports a test's
         * configuration chose already.
         */
        public Settings ports(int... ports) {
            this.ports = java.util.Arrays.stream(ports).boxed().toList();
            return this;
        }

        /** The address the client ports listen on (127.0.0.1 by default). */
        public Settings host(String address) {
            return flag("--host", address);
        }

        /** {@code tickTime}, ms. */
        public Settings tickTime(int ms) {
            return flag("--tick-time", ms);
        }

        /** Which server to be: "3.8" (default) or "3.9". */
        public Settings compat(String version) {
            return flag("--compat", version);
        }

        /** A manual session clock: sessions expire when {@link ZkMockServer#advanceClock} says. */
        public Settings manualClock() {
            return flag("--clock", "manual");
        }

        /** The seed of the server's random choices. */
        public Settings seed(long seed) {
            return flag("--seed", seed);
        }

        /** {@code minSessionTimeout}, ms. */
        public Settings minSessionTimeout(int ms) {
            return flag("--min-session-timeout", ms);
        }

        /** {@code maxSessionTimeout}, ms. */
        public Settings maxSessionTimeout(int ms) {
            return flag("--max-session-timeout", ms);
        }

        /**
         * How long each write takes to commit (none by default: at once). Writes wait for
         * the transaction log's sync, in batches, as in ZooKeeper: for code whose tests rely
         * on a real server's slower writes.
         */
        public Settings commitLatency(Duration latency) {
            return flag("--commit-latency-us", latency.toNanos() / 1000);
        }

        /**
         * How long each handshake takes at least: a ConnectRequest is answered no sooner than this
         * after it is read, for code whose tests rely on a real server's slower session set-up
         * (a listener added just after a client's start).
         */
        public Settings connectLatency(Duration latency) {
            return flag("--connect-latency-us", latency.toNanos() / 1000);
        }

        /**
         * How long every request takes through the server besides a write's sync (none by
         * default): each is answered no sooner than this after it is read, in order.
         */
        public Settings requestLatency(Duration latency) {
            return flag("--request-latency-us", latency.toNanos() / 1000);
        }

        /** An ensemble of this many servers behind one connect string. */
        public Settings servers(int n) {
            return flag("--servers", n);
        }

        /** Any other flag of the binary, with its value if it has one. */
        public Settings flag(String flag, Object... value) {
            args.add(flag);
            for (Object v : value) {
                args.add(String.valueOf(v));
            }
            return this;
        }

        /** The {@code zk-mock} executable (otherwise the lookup described on the class). */
        public Settings binary(String path) {
            this.binary = path;
            return this;
        }

        /** How long to wait for the server to start (10 s). */
        public Settings startTimeout(Duration d) {
            this.startTimeout = d;
            return this;
        }
    }

    private final Settings settings;
    private final String token;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final Deque<String> stderr = new ArrayDeque<>(); // guarded by itself
    private Process process;
    private String connectString;
    private String adminUrl;
    private boolean stopped;

    /** Starts a server on a free port. */
    public ZkMockServer() throws Exception {
        this(new Settings(), true);
    }

    /** A server on a free port, started if {@code start}. */
    public ZkMockServer(boolean start) throws Exception {
        this(new Settings(), start);
    }

    /** Starts a server on {@code port} (0: a free one). */
    public ZkMockServer(int port) throws Exception {
        this(new Settings().port(port), true);
    }

    /** A server on {@code port} (0: a free one), started if {@code start}. */
    public ZkMockServer(int port, boolean start) throws Exception {
        this(new Settings().port(port), start);
    }

    /** A server with these settings, started if {@code start}. */
    public ZkMockServer(Settings settings, boolean start) throws Exception {
        this.settings = settings;
        byte[] secret = new byte[16];
        new SecureRandom().nextBytes(secret);
        this.token = HexFormat.of().formatHex(secret);
        if (start) {
            start();
        }
    }

    /**
     * Where the {@code zk-mock} binary is: {@code explicit} if given, the {@code zkmock.binary}
     * system property, the {@code ZK_MOCK_BINARY} environment variable, then {@code PATH}.
     *
     * @throws StartException naming each place it looked, when none has it
     */
    public static String findBinary(String explicit) {
        List<String> looked = new ArrayList<>();
        String[][] given = {
            {"the Settings.binary(...) argument", explicit},
            {"the zkmock.binary system property", System.getProperty("zkmock.binary")},
            {"the ZK_MOCK_BINARY environment variable", System.getenv("ZK_MOCK_BINARY")},
        };
        for (String[] g : given) {
            if (g[1] == null || g[1].isEmpty()) {
                looked.add(g[0] + ": not set");
            } else if (new File(g[1]).canExecute()) {
                return g[1];
            } else {
                looked.add(g[0] + ": " + g[1] + " (not an executable file)");
            }
        }
        String path = System.getenv("PATH");
        if (path != null) {
            for (String dir : path.split(File.pathSeparator)) {
                File f = new File(dir, "zk-mock");
                if (f.canExecute()) {
                    return f.getPath();
                }
            }
        }
        looked.add("PATH (" + path + "): no zk-mock");
        throw new StartException("cannot find the zk-mock binary; looked in:\n  - "
            + String.join("\n  - ", looked)
            + "\n(the zk-mock wheel or `cargo install --path zk-mock` puts it on PATH;"
            + " or set -Dzkmock.binary=path/to/zk-mock)");
    }

    /**
     * Starts the server: the first time, the process; after {@link #stop()}, the server
     * again on the same port, with the sessions it had (as a restarted ZooKeeper keeps them).
     */
    public synchronized void start() throws Exception {
        if (process != null) {
            if (stopped) {
                everyServer("restart");
                stopped = false;
            }
            return;
        }
        String binary = findBinary(settings.binary);
        // Started again after close(): a new process, nothing of the last one's addresses.
        connectString = null;
        adminUrl = null;
        stopped = false;
        synchronized (stderr) {
            stderr.clear();
        }
        List<String> cmd = new ArrayList<>();
        cmd.add(binary);
        if (settings.ports != null) {
            cmd.add("--ports");
            cmd.add(settings.ports.stream().map(String::valueOf).collect(java.util.stream.Collectors.joining(",")));
        } else {
            cmd.add("--port");
            cmd.add(String.valueOf(settings.port));
        }
        cmd.addAll(settings.args);
        cmd.add("--admin-port");
        cmd.add("0");
        cmd.add("--exit-with-stdin");
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().put("ZK_MOCK_ADMIN_TOKEN", token);
        pb.environment().putIfAbsent("RUST_LOG", "warn");
        Process p;
        try {
            p = pb.start();
        } catch (IOException e) {
            throw new StartException("cannot run " + binary + ": " + e.getMessage());
        }
        process = p;
        BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        pump(p.getInputStream(), lines::add, "zk-mock stdout");
        pump(p.getErrorStream(), this::keepStderr, "zk-mock stderr");
        long deadline = System.nanoTime() + settings.startTimeout.toNanos();
        try {
            while (connectString == null || adminUrl == null) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new StartException("zk-mock did not start within " + settings.startTimeout
                        + " (" + String.join(" ", cmd) + ")" + stderrTail());
                }
                String line = lines.poll(Math.min(left, TimeUnit.MILLISECONDS.toNanos(100)), TimeUnit.NANOSECONDS);
                if (line == null) {
                    if (!p.isAlive()) {
                        throw startFailed(cmd);
                    }
                    continue;
                }
                if (line.startsWith(LISTENING)) {
                    connectString = line.substring(LISTENING.length()).split(" ", 2)[0];
                } else if (line.startsWith(ADMIN)) {
                    adminUrl = "http://" + line.substring(ADMIN.length()).split(" ", 2)[0];
                }
            }
        } catch (RuntimeException | InterruptedException e) {
            kill();
            throw e;
        }
    }

    private StartException startFailed(List<String> cmd) throws InterruptedException {
        process.waitFor(5, TimeUnit.SECONDS);
        Thread.sleep(50); // the stderr pump's last lines
        return new StartException("zk-mock exited with code " + process.exitValue()
            + " before it served (" + String.join(" ", cmd) + ")" + stderrTail());
    }

    private void keepStderr(String line) {
        synchronized (stderr) {
            stderr.addLast(line);
            while (stderr.size() > 200) {
                stderr.removeFirst();
            }
        }
    }

    private String stderrTail() {
        List<String> tail = new ArrayList<>();
        synchronized (stderr) {
            for (String l : stderr) {
                if (!l.isBlank()) {
                    tail.add(l);
                }
            }
        }
        if (tail.isEmpty()) {
            return "";
        }
        return "\nits last output:\n  " + String.join("\n  ", tail.subList(Math.max(0, tail.size() - 20), tail.size()));
    }

    private static void pump(InputStream in, java.util.function.Consumer<String> put, String name) {
        Thread t = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    put.accept(line);
                }
            } catch (IOException ignored) {
                // The process ended.
            }
        }, name);
        t.setDaemon(true);
        t.start();
    }

    /**
     * Stops the server as {@code TestingServer.stop()} does: its clients lose their
     * connections and its port closes (connections are refused, and another server may
     * listen there), until {@link #start()} or {@link #restart()} listens on it again.
     * The sessions survive that (the process keeps them). With {@link Settings#servers(int)},
     * every server of the ensemble stops.
     */
    public synchronized void stop() throws IOException {
        if (process == null || stopped || !process.isAlive()) {
            return;
        }
        everyServer("kill");
        stopped = true;
    }

    /**
     * Kills server {@code index} of the ensemble (0 for a single server), as its process
     * dying would: its clients lose their connections and move to another server, its port
     * closes (another server may take it), and it applies nothing until
     * {@link #restartServer(int)}. False if it was not serving.
     */
    public boolean killServer(int index) {
        return serverVerb(index, "kill");
    }

    /**
     * Restarts a killed server on its port: it catches up and serves again. False if it
     * was not down.
     *
     * @throws ZkMockException when its port was taken meanwhile (the message says so)
     */
    public boolean restartServer(int index) {
        return serverVerb(index, "restart");
    }

    private boolean serverVerb(int index, String verb) {
        try {
            call("POST", "/servers/" + index + "/" + verb, null);
            return true;
        } catch (ZkMockException e) {
            if (e.getMessage() != null && e.getMessage().contains("cannot " + verb + ": it is")) {
                return false;
            }
            throw e;
        }
    }

    /**
     * Starts a leader election in the ensemble, as losing its leader would: every server
     * drops its clients and takes none until {@code window} has passed, then the
     * highest-numbered server that is up leads ({@code POST /election}).
     */
    public void leaderElection(Duration window) {
        call("POST", "/election", Map.of("ms", window.toMillis()));
    }

    /**
     * Sets the number the next sequential child of {@code path} gets, as if that many had been
     * made: {@code Integer.MAX_VALUE} makes the one after it wrap to {@code -2147483648}, as
     * ZooKeeper's 32-bit counter does (names then sort wrongly as text, and a lock that compares
     * them so breaks).
     *
     * @throws NotFoundException if {@code path} does not exist
     */
    public void setSequenceCounter(String path, int next) {
        call("POST", "/sequence_counter", Map.of("path", path, "next", next));
    }

    /**
     * Cuts server {@code index} off from the quorum: it closes its connections and stops
     * serving until {@link #healServer(int)} (with the {@code --readonly-mode} flag, it serves
     * read-only clients once the read-only delay has passed). False if it was not serving.
     */
    public boolean partitionServer(int index) {
        return serverVerb(index, "partition");
    }

    /**
     * Ends a partition (or, as {@link #restartServer(int)}, a kill): the server catches up and
     * serves again. False if it was not down, or was killed and cannot listen on its port again.
     */
    public boolean healServer(int index) {
        return serverVerb(index, "heal");
    }

    /**
     * Makes follower {@code index} apply each commit {@code txns} commits late: reads through
     * it are stale, its watches fire late, a write or a new session through it is answered
     * when it applies it, and a session expires there when it applies the closeSession. A
     * client's close is a write too, and the last commits wait for more to come: end the lag
     * ({@link #endLag(int)}) before closing that server's clients.
     *
     * @throws ZkMockException for the leader, which applies each txn as it commits it (the
     *     message says so)
     */
    public void lagServer(int index, int txns) {
        call("POST", "/servers/" + index + "/lag", Map.of("txns", txns));
    }

    /**
     * Makes follower {@code index} apply each commit {@code lag} after it (on the session
     * clock), as {@link #lagServer(int, int)} does by count.
     *
     * @throws ZkMockException for the leader (the message says why)
     */
    public void lagServer(int index, Duration lag) {
        call("POST", "/servers/" + index + "/lag", Map.of("ms", lag.toMillis()));
    }

    /** Ends server {@code index}'s lag: it applies what it held back at once. */
    public void endLag(int index) {
        call("POST", "/servers/" + index + "/lag", Map.of());
    }

    /** Applies everything follower {@code index} holds back; its lag stays. */
    public void catchUpServer(int index) {
        call("POST", "/servers/" + index + "/catch_up", null);
    }

    /**
     * The servers, by index, as the admin interface's {@code GET /servers} has them: {@code
     * index}, {@code addr}, {@code status} ({@code serving}, {@code killed}, {@code
     * partitioned}, {@code electing}), {@code leader}, {@code lag} ({@code {}}, {@code
     * {txns=n}} or {@code {ms=n}}), {@code last_zxid}, {@code behind} (committed txns not
     * applied yet), {@code read_only} and {@code connections}.
     */
    public List<Map<String, Object>> servers() {
        return listOfMaps(call("GET", "/servers", null));
    }

    /** Posts {@code verb} ({@code kill}, {@code restart}) to every server of the process: one, or the ensemble's. */
    private void everyServer(String verb) {
        int servers = servers().size();
        for (int i = 0; i < servers; i++) {
            call("POST", "/servers/" + i + "/" + verb, null);
        }
    }

    /** Stops and starts the server: clients reconnect, and their sessions survive. */
    public synchronized void restart() throws Exception {
        stop();
        start();
    }

    /** Ends the server process (again: nothing). */
    @Override
    public synchronized void close() throws IOException {
        if (process == null) {
            return;
        }
        try {
            process.getOutputStream().close(); // --exit-with-stdin: it exits
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                kill();
            }
        } catch (InterruptedException e) {
            kill();
            Thread.currentThread().interrupt();
        }
        process = null;
    }

    private void kill() {
        if (process != null) {
            process.destroyForcibly();
            try {
                process.waitFor(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            process = null;
        }
    }

    /** {@code host:port[,host:port...]} for any ZooKeeper client. */
    public String getConnectString() {
        if (connectString == null) {
            throw new IllegalStateException("the server is not started");
        }
        return connectString;
    }

    /** The client port. */
    public int getPort() {
        String first = getConnectString().split(",")[0];
        return Integer.parseInt(first.substring(first.lastIndexOf(':') + 1));
    }

    /** The admin interface's base URL; its requests need {@link #getAdminToken()} as a bearer token. */
    public String getAdminUrl() {
        if (adminUrl == null) {
            throw new IllegalStateException("the server is not started");
        }
        return adminUrl;
    }

    /** The admin interface's bearer token. */
    public String getAdminToken() {
        return token;
    }

    /** The server process's id. */
    public long pid() {
        if (process == null) {
            throw new IllegalStateException("the server is not started");
        }
        return process.pid();
    }

    /** Whether the server process is alive. */
    public boolean isRunning() {
        return process != null && process.isAlive();
    }

    // ---- the admin interface --------------------------------------------------------------

    private Object call(String method, String path, Object body) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(getAdminUrl() + path))
            .timeout(Duration.ofSeconds(10))
            .header("Authorization", "Bearer " + token);
        if (body == null) {
            b.method(method, HttpRequest.BodyPublishers.noBody());
        } else {
            b.header("Content-Type", "application/json")
                .method(method, HttpRequest.BodyPublishers.ofString(Json.write(body)));
        }
        HttpResponse<String> r;
        try {
            r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            checkAlive();
            throw new ZkMockException(method + " " + path + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ZkMockException(method + " " + path + ": interrupted", e);
        }
        Object v = r.body().isEmpty() ? null : Json.parse(r.body());
        if (r.statusCode() >= 400) {
            String message = v instanceof Map ? String.valueOf(((Map<?, ?>) v).get("error")) : r.body();
            if (r.statusCode() == 404) {
                throw new NotFoundException(message);
            }
            throw new ZkMockException(method + " " + path + ": " + r.statusCode() + " " + message);
        }
        return v;
    }

    private void checkAlive() {
        Process p = process;
        if (p == null) {
            throw new ZkMockException("the server is not started (or was closed)");
        }
        if (!p.isAlive()) {
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            throw new DiedException("zk-mock exited with code " + p.exitValue() + " during the test" + stderrTail());
        }
    }

    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> listOfMaps(Object v) {
        return (List<Map<String, Object>>) v;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Object v) {
        return (Map<String, Object>) v;
    }

    /** The live sessions' ids. */
    public List<Long> sessionIds() {
        List<Long> ids = new ArrayList<>();
        for (Map<String, Object> s : sessions()) {
            ids.add(((Number) s.get("id")).longValue());
        }
        return ids;
    }

    /** The live sessions, as the server sees them (id, timeout, connected, stalled, ephemerals, watches). */
    public List<Map<String, Object>> sessions() {
        return listOfMaps(call("GET", "/sessions", null));
    }

    /** Expires a session from the server side: its ephemerals go, its client is told it expired. */
    public void expireSession(long sessionId) {
        call("POST", "/sessions/" + sessionId + "/expire", null);
    }

    /** Closes a session's connection; the session lives on and its client reconnects. */
    public void disconnectSession(long sessionId) {
        call("POST", "/sessions/" + sessionId + "/disconnect", null);
    }

    /** Holds a session's traffic both ways until the returned handle is closed. */
    public AutoCloseable stall(long sessionId) {
        call("POST", "/sessions/" + sessionId + "/stall", null);
        return () -> {
            try {
                call("POST", "/sessions/" + sessionId + "/resume", null);
            } catch (ZkMockException e) {
                // It expired meanwhile: nothing to resume.
            }
        };
    }

    /** Closes new connections as they are accepted, until the returned handle is closed. */
    public AutoCloseable refuseConnections() {
        call("POST", "/connections/refuse", null);
        return () -> call("POST", "/connections/accept", null);
    }

    /** Moves the manual session clock forward; sessions whose timeout passes expire. Returns the clock, ms. */
    public long advanceClock(long ms) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("ms", ms);
        return ((Number) map(call("POST", "/clock/advance", body)).get("clock_ms")).longValue();
    }

    /** The tree, the sessions and the watches. */
    public Map<String, Object> snapshot() {
        return map(call("GET", "/snapshot", null));
    }

    /** The server's counters: sessions, connections, znodes, totals, ... */
    public Map<String, Object> metrics() {
        return map(call("GET", "/metrics", null));
    }

    /** Recorded requests, oldest first; each filter may be null ({@code op}: "create", "getData", ...). */
    public List<Map<String, Object>> requests(Long session, String path, String op) {
        return listOfMaps(call("GET", "/recorder/requests" + query("session", session, "path", path, "op", op), null));
    }

    /** Recorded watch notifications, oldest first; each filter may be null ({@code event}: "NodeDeleted", ...). */
    public List<Map<String, Object>> notifications(Long session, String path, String event) {
        return listOfMaps(call("GET", "/recorder/notifications" + query("session", session, "path", path, "event", event), null));
    }

    /** Forgets the recording and the counts. */
    public void clearRecording() {
        call("DELETE", "/recorder", null);
    }

    /** Back to a new server on the same port: sessions expired, tree wiped, rules and recording gone. */
    public void reset() {
        call("POST", "/reset", null);
    }

    private static String query(Object... kv) {
        StringBuilder q = new StringBuilder();
        for (int i = 0; i < kv.length; i += 2) {
            if (kv[i + 1] != null) {
                q.append(q.length() == 0 ? '?' : '&').append(kv[i]).append('=')
                    .append(URLEncoder.encode(String.valueOf(kv[i + 1]), StandardCharsets.UTF_8));
            }
        }
        return q.toString();
    }

    /** Starts a fault rule: which requests, then what happens to them. */
    public RuleBuilder rule() {
        return new RuleBuilder();
    }

    /** The installed rules, each with its {@code id} and {@code fired} count. */
    public List<Map<String, Object>> rules() {
        return listOfMaps(call("GET", "/rules", null));
    }

    /** Which requests a rule matches; a verdict method installs it. */
    public final class RuleBuilder {
        private final Map<String, Object> spec = new LinkedHashMap<>();

        /** Operations: a name such as "create" covers every create op code. */
        public RuleBuilder ops(String... ops) {
            spec.put("ops", List.of(ops));
            return this;
        }

        /** Exactly this path. */
        public RuleBuilder path(String path) {
            return pathMatch("exact", path);
        }

        /** Paths starting with this. */
        public RuleBuilder pathPrefix(String prefix) {
            return pathMatch("prefix", prefix);
        }

        /** A glob: {@code *} within a segment, {@code **} across. */
        public RuleBuilder pathGlob(String glob) {
            return pathMatch("glob", glob);
        }

        /** This node and every node below it. */
        public RuleBuilder pathUnder(String path) {
            return pathMatch("under", path);
        }

        private RuleBuilder pathMatch(String kind, String value) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put(kind, value);
            spec.put("path", m);
            return this;
        }

        /** Operations by op code, exactly (1 is create alone, 15 create2 alone). */
        public RuleBuilder opCodes(int... codes) {
            spec.put("ops", java.util.Arrays.stream(codes).boxed().toList());
            return this;
        }

        /**
         * Only within {@code window} (of the session clock) after {@code first} first fired:
         * a fault, then a lockout.
         */
        public RuleBuilder after(Rule first, Duration window) {
            Map<String, Object> a = new LinkedHashMap<>();
            a.put("rule", first.id());
            a.put("for_ms", window.toMillis());
            spec.put("after", a);
            return this;
        }

        /** Only this session's requests. */
        public RuleBuilder session(long sessionId) {
            spec.put("session", String.valueOf(sessionId));
            return this;
        }

        /** Only the n-th matching request (from 1). */
        public RuleBuilder nth(long n) {
            spec.put("nth", n);
            return this;
        }

        /** Only the first n matching requests. */
        public RuleBuilder times(long n) {
            spec.put("times", n);
            return this;
        }

        /** Each matching request with this probability. */
        public RuleBuilder probability(double p) {
            spec.put("probability", p);
            return this;
        }

        /** Answer with this ZooKeeper error code (e.g. -101, NONODE) instead of applying. */
        public Rule fail(int code) {
            return verdict("fail", "code", code);
        }

        /** Apply, then close the connection without a reply: the client sees connection loss. */
        public Rule loseReply() {
            return verdict("lose_reply", null, null);
        }

        /** Close the connection before applying. */
        public Rule disconnect() {
            return verdict("disconnect", null, null);
        }

        /** Hold the reply this long. */
        public Rule delay(Duration d) {
            return verdict("delay", "ms", d.toMillis());
        }

        /** Apply, then stall the session. */
        public Rule stall() {
            return verdict("stall", null, null);
        }

        /** Expire the session instead of applying. */
        public Rule expire() {
            return verdict("expire", null, null);
        }

        private Rule verdict(String type, String key, Object value) {
            Map<String, Object> v = new LinkedHashMap<>();
            v.put("type", type);
            if (key != null) {
                v.put(key, value);
            }
            spec.put("verdict", v);
            Map<String, Object> created = map(call("POST", "/rules", spec));
            return new Rule(((Number) created.get("id")).longValue());
        }
    }

    /** An installed fault rule; closing it removes it. */
    public final class Rule implements AutoCloseable {
        private final long id;

        private Rule(long id) {
            this.id = id;
        }

        /** The server's id for it. */
        public long id() {
            return id;
        }

        /** How many requests it has acted on. */
        public long fired() {
            for (Map<String, Object> r : rules()) {
                if (((Number) r.get("id")).longValue() == id) {
                    return ((Number) r.get("fired")).longValue();
                }
            }
            throw new NotFoundException("rule " + id + " is no longer installed");
        }

        /** Removes it (again: nothing). */
        @Override
        public void close() {
            try {
                call("DELETE", "/rules/" + id, null);
            } catch (NotFoundException e) {
                // Already gone.
            }
        }
    }

    @Override
    public String toString() {
        return "ZkMockServer(" + (isRunning() ? connectString : "not running") + ")";
    }
}
