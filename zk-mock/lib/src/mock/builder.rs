//! [`ZkMockBuilder`]: the settings of a server, and its start.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rand::rngs::SmallRng;
use rand::SeedableRng;
use tokio::sync::watch;

use crate::clock::{Clock, ClockMode};
use crate::codec::DEFAULT_MAX_PACKET;
use crate::core::{Settings, Shared, State};
use crate::error::Error;
use crate::listen::Port;
use crate::record::{Recorder, DEFAULT_CAPACITY};
use crate::server;
use crate::session::SessionManager;
use crate::Compat;

use super::{Control, ZkMock};

/// Settings for a [`ZkMock`]; every setter consumes and returns the builder.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use zk_mock::clock::ClockMode;
/// let zk = zk_mock::ZkMock::builder().tick_time(500).clock(ClockMode::Manual).seed(42).start().await.unwrap();
/// assert_eq!(zk.seed(), 42);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ZkMockBuilder {
    addr: SocketAddr,
    tick_time: u64,
    min_session_timeout: Option<i32>,
    max_session_timeout: Option<i32>,
    max_packet: usize,
    super_digest: Option<String>,
    clock: ClockMode,
    seed: Option<u64>,
    start_time: Option<SystemTime>,
    /// See [`Settings::count_open_files`].
    count_open_files: bool,
    record: bool,
    recorder_capacity: usize,
    listen_backlog: u32,
    worker_threads: usize,
    compat: Compat,
    container_check_interval: Duration,
    extended_types: bool,
    reconfig_enabled: bool,
    #[cfg(feature = "tls")]
    tls: Option<crate::tls::Tls>,
    secure_port: u16,
    max_outbox: usize,
    expiry_cleanup_delay: Duration,
    commit_latency: Duration,
    connect_latency: Duration,
    request_latency: Duration,
    servers: usize,
    /// Each server's client port, when given one by one.
    ports: Option<Vec<u16>>,
    membership: Vec<String>,
    election_window: Duration,
    read_only_mode: bool,
    read_only_after: Duration,
    local_sessions: bool,
}

impl Default for ZkMockBuilder {
    fn default() -> Self {
        ZkMockBuilder {
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            tick_time: 2000,
            min_session_timeout: None,
            max_session_timeout: None,
            max_packet: DEFAULT_MAX_PACKET,
            super_digest: None,
            clock: ClockMode::Real,
            seed: None,
            start_time: None,
            count_open_files: true,
            record: true,
            recorder_capacity: DEFAULT_CAPACITY,
            listen_backlog: 1024,
            worker_threads: 1,
            compat: Compat::V3_8,
            container_check_interval: Duration::from_secs(60),
            extended_types: false,
            reconfig_enabled: false,
            #[cfg(feature = "tls")]
            tls: None,
            secure_port: 0,
            max_outbox: 128 << 20,
            expiry_cleanup_delay: Duration::ZERO,
            commit_latency: Duration::ZERO,
            connect_latency: Duration::ZERO,
            request_latency: Duration::ZERO,
            servers: 1,
            ports: None,
            membership: Vec::new(),
            election_window: Duration::from_millis(200),
            read_only_mode: false,
            read_only_after: Duration::from_millis(2000),
            local_sessions: false,
        }
    }
}

impl ZkMock {
    /// A builder for non-default settings.
    pub fn builder() -> ZkMockBuilder {
        ZkMockBuilder::default()
    }
}

impl ZkMockBuilder {
    /// An ensemble of `n` servers (at least 1, the default): `n` client
    /// ports, one connect string naming them all, one session space and one
    /// txn log, each server with its own replica. Server 0 leads. With a
    /// fixed port in [`listen`](Self::listen), server `i` listens on
    /// `port + i`. See [`ZkMock::server`](crate::ZkMock::server).
    pub fn servers(mut self, n: usize) -> Self {
        self.servers = n.max(1);
        self.ports = None;
        self
    }

    /// An ensemble with one server per port, each on its own port in this
    /// order (0: a free one), on [`listen`](Self::listen)'s address: the
    /// ports a test's configuration already chose, as Curator's
    /// `TestingCluster` takes them from its instance specs. Replaces
    /// [`servers`](Self::servers); no ports is one server on `listen`'s.
    pub fn ports(mut self, ports: impl IntoIterator<Item = u16>) -> Self {
        let ports: Vec<u16> = ports.into_iter().collect();
        self.servers = ports.len().max(1);
        self.ports = (!ports.is_empty()).then_some(ports);
        self
    }

    /// The ensemble's membership at the start, as `server.N=spec` lines of a
    /// zoo.cfg (`server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181`):
    /// what `/zookeeper/config` holds and who votes. Server N is the
    /// ensemble's server N − 1; a server the lines do not name, or name as an
    /// `observer`, does not vote (it serves and follows, as an observer
    /// does), and the first participant leads. Default: every server a
    /// participant. A reconfig changes it.
    pub fn membership<I, S>(mut self, lines: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.membership = lines.into_iter().map(Into::into).collect();
        self
    }

    /// How long an ensemble is without a leader when it loses one (a killed
    /// or partitioned leader, a lost quorum): 200 ms by default.
    pub fn election_window(mut self, window: Duration) -> Self {
        self.election_window = window;
        self
    }

    /// `readonlymode.enabled`: a server of an ensemble that is cut off from
    /// the quorum (partitioned, or left without one) starts a read-only
    /// server after [`read_only_after`](Self::read_only_after) and takes
    /// clients that said they can be read-only: reads are answered from its
    /// replica, writes and sync get NOTREADONLY, other clients are closed.
    /// New sessions there need [`local_sessions`](Self::local_sessions), as
    /// in ZooKeeper 3.8.
    pub fn read_only_mode(mut self, enabled: bool) -> Self {
        self.read_only_mode = enabled;
        self
    }

    /// How long a cut-off server waits before it goes read-only:
    /// `max(2000 ms, tickTime)` by default, as `QuorumPeer` does.
    pub fn read_only_after(mut self, after: Duration) -> Self {
        self.read_only_after = after;
        self
    }

    /// `localSessionsEnabled`: a read-only server can create (local)
    /// sessions. Without it, it answers a new read-only client with a
    /// NOTREADONLY header instead of a session, as 3.8 does.
    pub fn local_sessions(mut self, enabled: bool) -> Self {
        self.local_sessions = enabled;
        self
    }

    /// Where to listen; the default is `127.0.0.1:0` (a free loopback port).
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.addr = addr;
        self
    }

    /// Sets the listen backlog: how many connections the kernel queues
    /// before the server accepts them (default 1024, as tokio's; a burst of
    /// connects larger than the backlog waits for SYN retransmits, about 1 s;
    /// ZooKeeper's `clientPortListenBacklog`).
    pub fn listen_backlog(mut self, connections: u32) -> Self {
        self.listen_backlog = connections.max(1);
        self
    }

    /// Which ZooKeeper release to imitate where 3.8 and 3.9 differ (default
    /// 3.8); see [`Compat`] for every difference.
    pub fn compat(mut self, compat: Compat) -> Self {
        self.compat = compat;
        self
    }

    /// How often the container check deletes empty containers and expired
    /// TTL nodes (ZooKeeper's `znode.container.checkIntervalMs`, default
    /// 60 s; tests want about a second). The check goes by the session
    /// clock: on a manual clock it runs when [`Control::advance`] passes its
    /// time, and [`Control::check_containers`] runs it at once either way.
    pub fn container_check_interval(mut self, every: Duration) -> Self {
        self.container_check_interval = every.max(Duration::from_millis(1));
        self
    }

    /// Allows TTL nodes (ZooKeeper's `zookeeper.extendedTypesEnabled`,
    /// default off, when createTTL and the TTL create modes answer
    /// UNIMPLEMENTED).
    pub fn extended_types(mut self, enabled: bool) -> Self {
        self.extended_types = enabled;
        self
    }

    /// Also serve TLS clients on a second port (ZooKeeper's
    /// `secureClientPort`), on the same host as the plain port:
    /// [`ZkMock::secure_addr`] tells where. See [`Tls`](crate::Tls).
    ///
    /// Needs the `tls` feature (rustls with ring).
    #[cfg(feature = "tls")]
    pub fn tls(mut self, tls: crate::tls::Tls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The secure port to listen on (default 0: a free one). Only used with
    /// `tls` (the `tls` feature).
    pub fn secure_port(mut self, port: u16) -> Self {
        self.secure_port = port;
        self
    }

    /// How many bytes of replies and notifications may wait for one
    /// client to read them (default 128 MiB). A client past it is a slow
    /// reader: its connection is closed (its session lives on, as after any
    /// disconnect) instead of the server buffering without limit. A stalled
    /// connection (a `stall` fault) holds its frames and is exempt.
    pub fn max_outbox_bytes(mut self, bytes: usize) -> Self {
        self.max_outbox = bytes.max(1);
        self
    }

    /// Delays the ephemeral cleanup of sessions the server expires (default
    /// none). The session ends at once — its connection is closed and a
    /// re-attach is told it expired — but its closeSession transaction, which
    /// deletes its ephemeral nodes, is applied this much later on the
    /// session clock. A client that reconnects with a new session meanwhile
    /// sees its old session's nodes, as it would through a server that has
    /// not yet applied the expiry (CURATOR-604). Also
    /// [`Control::set_expiry_cleanup_delay`].
    pub fn expiry_cleanup_delay(mut self, delay: Duration) -> Self {
        self.expiry_cleanup_delay = delay;
        self
    }

    /// How long a write takes to commit (default none: at once). ZooKeeper
    /// applies and answers a write only once its transaction log is synced
    /// to disk, and it syncs in batches: a write that arrives during a sync
    /// waits for the next one, which covers every write that came meanwhile.
    /// With a latency, zk-mock does the same: each write (and each new
    /// session's handshake) is held until its batch's sync of `latency`
    /// ends, and what its connection sends after it waits behind it.
    ///
    /// For code whose tests pass only because a real server's writes take a
    /// while: Curator's `DistributedQueue` with a bound, for one, checks
    /// the bound against a cache its own writes can outrun. Curator's
    /// `TestingServer` answered a create in about 0.5 ms where zk-mock
    /// answered in 0.05 ms (`zk-mock/java/curator-suite/latency/run.sh`,
    /// 2026-11-27). Also [`Control::set_commit_latency`] and
    /// `zk-mock --commit-latency-us`.
    ///
    /// ```
    /// # #[tokio::main] async fn main() {
    /// use std::time::Duration;
    /// let zk = zk_mock::ZkMock::builder()
    ///     .commit_latency(Duration::from_micros(250))
    ///     .start()
    ///     .await
    ///     .unwrap();
    /// # drop(zk); }
    /// ```
    pub fn commit_latency(mut self, latency: Duration) -> Self {
        self.commit_latency = latency;
        self
    }

    /// How long a handshake takes at least (default none): each
    /// ConnectRequest, a new session's or a reconnect's, is answered no
    /// sooner than `latency` after it is read, and no sooner than its
    /// createSession's sync with a [`commit_latency`](Self::commit_latency).
    /// Nothing else the connection sent is read meanwhile, as ZooKeeper
    /// reads nothing more from a connection before its session is set up.
    ///
    /// For code whose tests pass only because a real server takes a while
    /// to set up a session: a listener for Curator's `CONNECTED`, added
    /// just after `client.start()`, misses the event when the session is up
    /// first. Curator's `TestingServer` answered a new session's
    /// ConnectRequest in 0.7 ms once warm, and the first one of a new server
    /// in 2.2 ms (medians), where zk-mock answered in 0.07 ms, or 0.5 ms with
    /// a 250 µs commit latency (2026-11-27, a raw socket on this project's
    /// 2-core machine, `zk-mock/java/curator-suite/latency/run.sh`). The
    /// wait is on tokio's timer, which rounds it up to the next millisecond.
    /// Also [`Control::set_connect_latency`] and `zk-mock --connect-latency-us`.
    ///
    /// ```
    /// # #[tokio::main] async fn main() {
    /// use std::time::Duration;
    /// let zk = zk_mock::ZkMock::builder()
    ///     .connect_latency(Duration::from_millis(2))
    ///     .start()
    ///     .await
    ///     .unwrap();
    /// # drop(zk); }
    /// ```
    pub fn connect_latency(mut self, latency: Duration) -> Self {
        self.connect_latency = latency;
        self
    }

    /// How long every request takes through the server besides a write's
    /// sync (default none). A real server hands each request from thread
    /// to thread (`PrepRequestProcessor`, `SyncRequestProcessor`,
    /// `FinalRequestProcessor`): through ZooKeeper's Java client, an exists
    /// on Curator's `TestingServer` took 190 µs (the median) where zk-mock
    /// answered in 42 µs (2026-11-27, this project's 2-core machine,
    /// `zk-mock/java/curator-suite/latency/run.sh`). With a latency, each
    /// request is answered no sooner than `latency` after it is read (a
    /// write: `latency` after its sync, see
    /// [`commit_latency`](Self::commit_latency)), in its connection's
    /// order; requests read meanwhile are not held back by it, each waits
    /// its own. A new session's handshake is a createSession and waits
    /// too; a reconnect does not, as ZooKeeper re-attaches a session
    /// outside its pipeline (see [`connect_latency`](Self::connect_latency)).
    /// Also [`Control::set_request_latency`] and `zk-mock --request-latency-us`.
    ///
    /// For code whose tests pass only because a real server's reads are
    /// slower: a race between one thread's release and another's read
    /// of the lock's children, as in Curator's own
    /// `TestInterProcessMutex#testReentrantSingleLock`.
    pub fn request_latency(mut self, latency: Duration) -> Self {
        self.request_latency = latency;
        self
    }

    /// ZooKeeper's `reconfigEnabled` (default off). A standalone server
    /// cannot reconfigure either way; the setting only changes its answer to
    /// reconfig (16): RECONFIGDISABLED when off, UNIMPLEMENTED when on (what
    /// kazoo's test harness, which turns it on, sees).
    pub fn reconfig_enabled(mut self, enabled: bool) -> Self {
        self.reconfig_enabled = enabled;
        self
    }

    /// Threads serving connections (default 1: one thread, a current-thread
    /// Tokio runtime, the cheapest to start). More threads serve more
    /// sessions in parallel when the clients have cores to spare; the data
    /// tree stays one short critical section per request either way, so
    /// every ordering guarantee holds with any number.
    pub fn worker_threads(mut self, threads: usize) -> Self {
        self.worker_threads = threads.max(1);
        self
    }

    /// ZooKeeper's `tickTime` in ms (default 2000): session deadlines round up
    /// to it and the default timeout bounds are 2 and 20 ticks.
    pub fn tick_time(mut self, ms: u64) -> Self {
        self.tick_time = ms;
        self
    }

    /// `minSessionTimeout` in ms (default 2 × tickTime).
    pub fn min_session_timeout(mut self, ms: i32) -> Self {
        self.min_session_timeout = Some(ms);
        self
    }

    /// `maxSessionTimeout` in ms (default 20 × tickTime).
    pub fn max_session_timeout(mut self, ms: i32) -> Self {
        self.max_session_timeout = Some(ms);
        self
    }

    /// `jute.maxbuffer`: the largest frame accepted (default 0xfffff bytes).
    /// A larger length prefix closes the connection with no reply.
    pub fn max_packet_size(mut self, bytes: usize) -> Self {
        self.max_packet = bytes;
        self
    }

    /// `zookeeper.DigestAuthenticationProvider.superDigest`: a connection that
    /// authenticates with digest credentials hashing to this `user:hash`
    /// value is a super user and passes every ACL check.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// // `super:test` hashes to this value (see `zk_mock::acl::digest`).
    /// let zk = zk_mock::ZkMock::builder().super_digest("super:D/InIHSb7yEEbrWz8b9l71RjZJU=").start().await.unwrap();
    /// # drop(zk);
    /// # }
    /// ```
    pub fn super_digest(mut self, user_hash: impl Into<String>) -> Self {
        self.super_digest = Some(user_hash.into());
        self
    }

    /// The session clock: real time (default) or [`ClockMode::Manual`], where
    /// only [`ZkMock::advance`] moves it.
    pub fn clock(mut self, mode: ClockMode) -> Self {
        self.clock = mode;
        self
    }

    /// The seed of every random choice (probabilistic fault rules). Without
    /// one, a seed is drawn from the time; [`ZkMock::seed`] tells which.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The wall-clock time the server's clock starts at (default: when the
    /// server starts). The ctime and mtime of every node it makes, when a
    /// TTL node is due, the expiry times `dump` prints, and the session ids
    /// without a [`seed`](Self::seed) follow from it. With [`ClockMode::Manual`] and a
    /// seed, a run that sends the same requests in the same order gets the
    /// same replies to them, Stats included. (The four-letter words still
    /// show what a run cannot fix: the clients' ports, the process's open
    /// files and environment.)
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use zk_mock::{clock::ClockMode, ZkMock};
    ///
    /// let zk = ZkMock::builder()
    ///     .clock(ClockMode::Manual)
    ///     .seed(7)
    ///     .start_time(UNIX_EPOCH + Duration::from_secs(1_700_000_000))
    ///     .start()
    ///     .await
    ///     .unwrap();
    /// # drop(zk);
    /// # }
    /// ```
    pub fn start_time(mut self, at: SystemTime) -> Self {
        self.start_time = Some(at);
        self
    }

    /// Whether `mntr` counts the process's open files (default true); the
    /// fuzz targets' server turns it off so that its replays compare bytes.
    pub(crate) fn count_open_files(mut self, on: bool) -> Self {
        self.count_open_files = on;
        self
    }

    /// Whether the recorder keeps a log (default true). Counters are kept either way.
    pub fn record(mut self, on: bool) -> Self {
        self.record = on;
        self
    }

    /// How many records of each kind the recorder keeps before dropping the
    /// oldest (default 100,000).
    pub fn recorder_capacity(mut self, records: usize) -> Self {
        self.recorder_capacity = records;
        self
    }

    /// Binds the listener and starts the server.
    ///
    /// # Errors
    /// [`Error::Bind`] if the address cannot be bound, [`Error::Runtime`] if
    /// the server thread cannot start, [`Error::Config`] for contradictory settings.
    pub async fn start(self) -> Result<ZkMock, Error> {
        self.start_blocking()
    }

    /// [`start`](Self::start) for callers outside an async context (the binary).
    ///
    /// # Errors
    /// As for [`start`](Self::start).
    pub fn start_blocking(self) -> Result<ZkMock, Error> {
        let (min, max) = self.session_timeouts()?;
        let mut listeners = Vec::with_capacity(self.servers);
        let mut addrs = Vec::with_capacity(self.servers);
        for i in 0..self.servers {
            let mut at = self.addr;
            if let Some(ports) = &self.ports {
                at.set_port(ports[i]);
            } else if at.port() != 0 {
                let port = u16::try_from(usize::from(at.port()) + i).map_err(|_| {
                    Error::Config(format!(
                        "{} servers from port {} run past port 65535",
                        self.servers,
                        at.port()
                    ))
                })?;
                at.set_port(port);
            }
            let (port, listener) = Port::bind(at, self.listen_backlog)
                .map_err(|source| Error::Bind { addr: at, source })?;
            addrs.push(port.addr());
            listeners.push((Arc::new(port), listener, None));
        }
        let ports: Arc<[Arc<Port>]> = listeners.iter().map(|(p, _, _)| p.clone()).collect();
        let addr = addrs[0];
        let secure = self.secure_listener()?;
        let secure_port = secure.as_ref().map(|(p, _, _)| p.clone());
        let secure_addr = secure_port.as_ref().map(|p| p.addr());
        let (mut state, seed) = self.new_state(addr.port(), min, max);
        state
            .init_quorum(&addrs, &self.membership)
            .map_err(Error::Config)?;
        let shared: Shared = Arc::new(Mutex::new(state));
        let (tx, rx) = watch::channel(false);
        let runtime = if self.worker_threads > 1 {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(self.worker_threads)
                .thread_name(format!("zk-mock-{}-worker", addr.port()))
                .enable_all()
                .build()
        } else {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
        }
        .map_err(Error::Runtime)?;
        let handle = runtime.handle().clone();
        let server_state = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("zk-mock-{}", addr.port()))
            .spawn(move || {
                runtime.block_on(server::run(listeners, secure, server_state, rx));
                // Dropping the runtime cancels every connection task and closes its socket.
            })
            .map_err(Error::Runtime)?;
        tracing::info!(?addrs, ?secure_addr, seed, "zk-mock listening");
        Ok(ZkMock {
            control: Control {
                addrs: addrs.into(),
                ports,
                secure_addr,
                secure_port,
                seed,
                shared,
                runtime: handle.clone(),
            },
            handle,
            shutdown: tx,
            thread: Some(thread),
        })
    }
}

impl ZkMockBuilder {
    /// The secure port's listener, acceptor and address, if TLS is on.
    #[cfg(feature = "tls")]
    fn secure_listener(&self) -> Result<Option<server::Listening>, Error> {
        let Some(tls) = &self.tls else {
            return Ok(None);
        };
        let acceptor = tls.acceptor()?;
        let want = SocketAddr::new(self.addr.ip(), self.secure_port);
        let (port, l) = Port::bind(want, self.listen_backlog)
            .map_err(|source| Error::Bind { addr: want, source })?;
        Ok(Some((Arc::new(port), l, Some(acceptor))))
    }

    /// Without the `tls` feature there is no secure port.
    #[cfg(not(feature = "tls"))]
    #[allow(clippy::unnecessary_wraps)]
    fn secure_listener(&self) -> Result<Option<server::Listening>, Error> {
        Ok(None)
    }

    /// The negotiable session timeout range: the settings', or 2 and 20
    /// ticks as ZooKeeper's defaults.
    fn session_timeouts(&self) -> Result<(i32, i32), Error> {
        if self.tick_time == 0 {
            return Err(Error::Config("tick time must be positive".into()));
        }
        let tick = i32::try_from(self.tick_time)
            .map_err(|_| Error::Config("tick time too large".into()))?;
        let min = self.min_session_timeout.unwrap_or(tick.saturating_mul(2));
        let max = self.max_session_timeout.unwrap_or(tick.saturating_mul(20));
        if min > max {
            return Err(Error::Config(format!(
                "min session timeout {min} > max {max}"
            )));
        }
        Ok((min, max))
    }

    /// The server state these settings describe for a server on `port`,
    /// without starting anything (the fuzzing harness uses it as is).
    pub(crate) fn state_for(&self, port: u16) -> Result<(State, u64), Error> {
        let (min, max) = self.session_timeouts()?;
        Ok(self.new_state(port, min, max))
    }

    /// The server state these settings describe, and its seed.
    fn new_state(&self, port: u16, min: i32, max: i32) -> (State, u64) {
        let seed = self.seed.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
        let clock = Clock::new(self.clock, self.start_time);
        // Session ids have ZooKeeper's layout (server id 1, 40 bits of a ms
        // clock, a 16-bit counter); with an explicit seed the clock bits come
        // from the seed, so a replayed run sees the same ids.
        let id_ms = self.seed.unwrap_or(clock.wall_ms() as u64);
        let sessions = SessionManager::new(id_ms, self.tick_time, min, max);
        let settings = Settings {
            tick_time: self.tick_time,
            max_packet: self.max_packet,
            super_digest: self.super_digest.clone(),
            client_port: port,
            min_session_timeout: min,
            max_session_timeout: max,
            compat: self.compat,
            container_check_interval_ms: self.container_check_interval.as_millis() as u64,
            extended_types: self.extended_types,
            reconfig_enabled: self.reconfig_enabled,
            max_outbox: self.max_outbox,
            expiry_cleanup_delay_ms: self.expiry_cleanup_delay.as_millis() as u64,
            election_window_ms: u64::try_from(self.election_window.as_millis()).unwrap_or(u64::MAX),
            read_only_mode: self.read_only_mode,
            read_only_after_ms: u64::try_from(self.read_only_after.as_millis())
                .unwrap_or(u64::MAX)
                .max(if self.read_only_after == Duration::from_millis(2000) {
                    self.tick_time
                } else {
                    0
                }),
            local_sessions: self.local_sessions,
            commit_latency: self.commit_latency,
            connect_latency: self.connect_latency,
            request_latency: self.request_latency,
            count_open_files: self.count_open_files,
        };
        let recorder = Recorder::new(self.record, self.recorder_capacity);
        let state = State::new(
            clock,
            sessions,
            settings,
            recorder,
            seed,
            SmallRng::seed_from_u64(seed),
            self.servers,
        );
        (state, seed)
    }
}
