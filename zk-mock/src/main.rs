//! `zk-mock`: serve the mock on a TCP port so test suites in any language can use it.

use std::net::{IpAddr, SocketAddr};

use clap::{Parser, ValueEnum};
use tracing_subscriber::EnvFilter;
use zk_mock::clock::ClockMode;

/// A wire-compatible Apache ZooKeeper 3.8 server for tests: starts at once,
/// needs no Java, and takes fault rules over an HTTP admin interface.
#[derive(Debug, Parser)]
#[command(name = "zk-mock", version)]
struct Args {
    /// Client port (0 picks a free one; the chosen address is printed).
    #[arg(long, default_value_t = 2181)]
    port: u16,
    /// Address the client ports listen on (`0.0.0.0` for clients in other
    /// containers).
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    /// Serve the HTTP+JSON admin interface on this port (0 picks a free one).
    /// Whoever reaches it controls the server and reads every node.
    #[arg(long = "admin-port")]
    admin_port: Option<u16>,
    /// Address the admin interface listens on: loopback unless this says
    /// otherwise (and then give it --admin-token).
    #[arg(long = "admin-host", default_value = "127.0.0.1")]
    admin_host: IpAddr,
    /// Require `Authorization: Bearer <token>` on every admin request.
    #[arg(
        long = "admin-token",
        env = "ZK_MOCK_ADMIN_TOKEN",
        hide_env_values = true
    )]
    admin_token: Option<String>,
    /// ZooKeeper tickTime in ms; session timeouts are bounded by 2 and 20 ticks.
    #[arg(long = "tick-time", default_value_t = 2000)]
    tick_time: u64,
    /// minSessionTimeout in ms (default 2 × tick time).
    #[arg(long = "min-session-timeout")]
    min_session_timeout: Option<i32>,
    /// maxSessionTimeout in ms (default 20 × tick time).
    #[arg(long = "max-session-timeout")]
    max_session_timeout: Option<i32>,
    /// Largest accepted packet in bytes (jute.maxbuffer).
    #[arg(long = "max-packet-size", default_value_t = 0xfffff)]
    max_packet_size: usize,
    /// Super user digest, `user:base64(sha1(user:password))`.
    #[arg(long = "super-digest")]
    super_digest: Option<String>,
    /// Session clock: `real`, or `manual` (time moves only by `POST /clock/advance`).
    #[arg(long, value_enum, default_value_t = ClockArg::Real)]
    clock: ClockArg,
    /// Seed of every random choice (probabilistic fault rules).
    #[arg(long)]
    seed: Option<u64>,
    /// The wall time the server's clock starts at, in milliseconds since
    /// the Unix epoch (ctime and mtime follow it); default: now.
    #[arg(long = "start-time-ms")]
    start_time_ms: Option<u64>,
    /// Connections the kernel queues before they are accepted
    /// (ZooKeeper's clientPortListenBacklog).
    #[arg(long = "listen-backlog", default_value_t = 1024)]
    listen_backlog: u32,
    /// Threads serving connections (1: a single thread, the default).
    #[arg(long = "worker-threads", default_value_t = 1)]
    worker_threads: usize,
    /// The ZooKeeper release to imitate where 3.8 and 3.9 differ: `3.8` or `3.9`.
    #[arg(long, default_value = "3.8")]
    compat: zk_mock::Compat,
    /// How often empty containers and expired TTL nodes are deleted, in ms
    /// (znode.container.checkIntervalMs).
    #[arg(long = "container-check-interval", default_value_t = 60_000)]
    container_check_interval: u64,
    /// Allow TTL nodes (zookeeper.extendedTypesEnabled).
    #[arg(long = "extended-types")]
    extended_types: bool,
    /// Answer reconfig as a standalone server with reconfigEnabled=true
    /// (UNIMPLEMENTED instead of RECONFIGDISABLED).
    #[arg(long = "reconfig-enabled")]
    reconfig_enabled: bool,
    /// Bytes of replies and notifications that may wait for one client to
    /// read them; a slower reader's connection is closed.
    #[arg(long = "max-outbox-bytes", default_value_t = 128 << 20)]
    max_outbox_bytes: usize,
    /// Records of each kind (requests, watches, notifications, sessions,
    /// changes) the recorder keeps before dropping the oldest; 0 keeps none
    /// (counters are kept either way).
    #[arg(long = "recorder-capacity", default_value_t = zk_mock::record::DEFAULT_CAPACITY)]
    recorder_capacity: usize,
    /// Also serve TLS on this port (secureClientPort; 0 picks a free one).
    /// Needs --tls-cert and --tls-key.
    #[arg(long = "secure-port", requires_all = ["tls_cert", "tls_key"])]
    secure_port: Option<u16>,
    /// The secure port's certificate chain, PEM (leaf first).
    #[arg(long = "tls-cert", requires = "secure_port")]
    tls_cert: Option<std::path::PathBuf>,
    /// The secure port's private key, PEM.
    #[arg(long = "tls-key", requires = "secure_port")]
    tls_key: Option<std::path::PathBuf>,
    /// Require client certificates signed by this CA, PEM (ssl.clientAuth=need).
    #[arg(long = "tls-ca", requires = "secure_port")]
    tls_ca: Option<std::path::PathBuf>,
    /// Serve an ensemble of N servers on ports PORT..PORT+N-1 (0: N free
    /// ports), one session space and one txn log; the admin interface's
    /// /servers endpoints kill, restart, partition and lag them.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=255))]
    servers: u16,
    /// Serve an ensemble with one server on each of these client ports, in
    /// order (comma-separated; 0 picks a free one): ports a test's
    /// configuration chose already. In place of --port and --servers.
    #[arg(long, value_delimiter = ',', num_args = 1.., conflicts_with_all = ["port", "servers"])]
    ports: Vec<u16>,
    /// The ensemble's membership at the start, one zoo.cfg line each
    /// (repeatable): `server.N=host:port:port[:participant|observer];[host:]port`.
    /// Server N is the one on PORT+N-1 (or the N-th of --ports); one not
    /// named as a participant does not vote. Default: every server a
    /// participant.
    #[arg(long = "membership", value_name = "SERVER_LINE")]
    membership: Vec<String>,
    /// In an ensemble, how long the servers go without a leader when they
    /// lose it (ms).
    #[arg(long = "election-window", default_value_t = 200)]
    election_window: u64,
    /// readonlymode.enabled: a server cut off from the quorum serves
    /// clients that can be read-only.
    #[arg(long = "readonly-mode")]
    readonly_mode: bool,
    /// How long a cut-off server waits before it goes read-only (ms;
    /// default max(2000, tick time)).
    #[arg(long = "read-only-after")]
    read_only_after: Option<u64>,
    /// localSessionsEnabled: a read-only server can create sessions.
    #[arg(long = "local-sessions")]
    local_sessions: bool,
    /// How long a write takes to commit, in µs (default 0: at once). Each
    /// write and each new session's handshake waits for the transaction
    /// log's sync of its batch, as in ZooKeeper; writes that arrive during
    /// a sync share the next one.
    #[arg(long = "commit-latency-us", default_value_t = 0)]
    commit_latency_us: u64,
    /// How long a handshake takes at least, in µs (default 0: as soon as
    /// it can be answered). Each ConnectRequest is answered no sooner than
    /// this after it is read; tokio's timer rounds it up to the next ms.
    #[arg(long = "connect-latency-us", default_value_t = 0)]
    connect_latency_us: u64,
    /// How long every request takes through the server besides a write's
    /// sync, in µs (default 0). Each is answered no sooner than this after
    /// it is read, in its connection's order.
    #[arg(long = "request-latency-us", default_value_t = 0)]
    request_latency_us: u64,
    /// Exit when standard input reaches its end: a wrapper (the Python and
    /// Java ones) keeps a pipe to it open, so the server goes when the test
    /// process that started it does, however that ends.
    #[arg(long = "exit-with-stdin")]
    exit_with_stdin: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ClockArg {
    Real,
    Manual,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let args = Args::parse();
    let mut builder = zk_mock::ZkMock::builder()
        .listen(SocketAddr::new(args.host, args.port))
        .tick_time(args.tick_time)
        .max_packet_size(args.max_packet_size)
        .listen_backlog(args.listen_backlog)
        .worker_threads(args.worker_threads)
        .compat(args.compat)
        .container_check_interval(std::time::Duration::from_millis(
            args.container_check_interval,
        ))
        .extended_types(args.extended_types)
        .reconfig_enabled(args.reconfig_enabled)
        .max_outbox_bytes(args.max_outbox_bytes)
        .servers(usize::from(args.servers))
        .membership(args.membership.clone())
        .election_window(std::time::Duration::from_millis(args.election_window))
        .read_only_mode(args.readonly_mode)
        .local_sessions(args.local_sessions)
        .commit_latency(std::time::Duration::from_micros(args.commit_latency_us))
        .connect_latency(std::time::Duration::from_micros(args.connect_latency_us))
        .request_latency(std::time::Duration::from_micros(args.request_latency_us))
        .record(args.recorder_capacity > 0)
        .recorder_capacity(args.recorder_capacity)
        .clock(match args.clock {
            ClockArg::Real => ClockMode::Real,
            ClockArg::Manual => ClockMode::Manual,
        });
    if !args.ports.is_empty() {
        builder = builder.ports(args.ports.iter().copied());
    }
    if let Some(ms) = args.min_session_timeout {
        builder = builder.min_session_timeout(ms);
    }
    if let Some(ms) = args.max_session_timeout {
        builder = builder.max_session_timeout(ms);
    }
    if let Some(d) = args.super_digest {
        builder = builder.super_digest(d);
    }
    if let Some(ms) = args.read_only_after {
        builder = builder.read_only_after(std::time::Duration::from_millis(ms));
    }
    if let Some(s) = args.seed {
        builder = builder.seed(s);
    }
    if let Some(ms) = args.start_time_ms {
        builder = builder.start_time(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms));
    }
    if let (Some(port), Some(cert), Some(key)) = (args.secure_port, &args.tls_cert, &args.tls_key) {
        let mut tls = zk_mock::Tls::from_pem_files(cert, key)?;
        if let Some(ca) = &args.tls_ca {
            tls = tls.client_ca_file(ca)?;
        }
        builder = builder.tls(tls).secure_port(port);
    }
    let mock = builder.start_blocking()?;
    println!(
        "zk-mock listening on {} (seed {})",
        mock.connect_string(),
        mock.seed()
    );
    if let Some(secure) = mock.secure_connect_string() {
        println!("zk-mock TLS on {secure}");
    }
    if let Some(port) = args.admin_port {
        let addr = SocketAddr::new(args.admin_host, port);
        let admin = match &args.admin_token {
            Some(token) => mock.serve_admin_with_token(addr, token.clone())?,
            None => {
                if !args.admin_host.is_loopback() {
                    tracing::warn!(
                        %addr,
                        "the admin interface is reachable beyond this machine without a token: \
                         anyone who reaches it can expire sessions and read every node \
                         (give --admin-token or ZK_MOCK_ADMIN_TOKEN)"
                    );
                }
                mock.serve_admin(addr)?
            }
        };
        let auth = if args.admin_token.is_some() {
            " (bearer token required)"
        } else {
            ""
        };
        println!("zk-mock admin interface on http://{admin}{auth}");
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (stdin_closed, stdin_eof) = tokio::sync::oneshot::channel::<()>();
    if args.exit_with_stdin {
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
            let _ = stdin_closed.send(());
        });
    }
    rt.block_on(async {
        let stdin_eof = async {
            match stdin_eof.await {
                Ok(()) => tracing::info!("standard input closed"),
                // Not watched: never.
                Err(_) => std::future::pending().await,
            }
        };
        #[cfg(unix)]
        {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
            tokio::select! {
                r = tokio::signal::ctrl_c() => r?,
                _ = term.recv() => {}
                () = stdin_eof => {}
            }
        }
        #[cfg(not(unix))]
        tokio::select! {
            r = tokio::signal::ctrl_c() => r?,
            () = stdin_eof => {}
        }
        Ok::<_, std::io::Error>(())
    })?;
    tracing::info!("shutting down");
    mock.shutdown();
    Ok(())
}
