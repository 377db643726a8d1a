//! [`ZkMock`], the handle tests hold, and its [`ZkMockBuilder`].

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use tokio::sync::watch;

use crate::clock::{Clock, SystemClock};
use crate::codec::DEFAULT_MAX_PACKET;
use crate::error::Error;
use crate::server;
use crate::session::SessionManager;
use crate::state::{lock, Settings, Shared, State};

/// A running in-process ZooKeeper server.
///
/// The server runs on its own thread with its own Tokio runtime, so it works
/// under any test runtime (`#[tokio::test]`'s current-thread one included)
/// and dropping the handle stops it synchronously: every connection is closed
/// and the port is released.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let zk = zk_mock::ZkMock::start().await;
/// assert!(zk.connect_string().starts_with("127.0.0.1:"));
/// # }
/// ```
#[derive(Debug)]
pub struct ZkMock {
    addr: SocketAddr,
    shared: Shared,
    shutdown: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl ZkMock {
    /// Starts a server on a free loopback port with default settings
    /// (tickTime 2000 ms, session timeouts 4000..=40000 ms, 1 MiB packets).
    ///
    /// # Panics
    /// If no loopback port can be bound or no thread can be spawned; use
    /// [`ZkMock::builder`] to handle those errors.
    pub async fn start() -> ZkMock {
        ZkMock::builder()
            .start()
            .await
            .expect("zk-mock failed to start")
    }

    /// A builder for non-default settings.
    pub fn builder() -> ZkMockBuilder {
        ZkMockBuilder::default()
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The connect string to hand to a client, e.g. `127.0.0.1:40123`.
    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// The last processed zxid.
    pub fn last_zxid(&self) -> i64 {
        lock(&self.shared).tree.last_zxid()
    }

    /// Ids of the live sessions, in ascending order.
    pub fn session_ids(&self) -> Vec<i64> {
        let st = lock(&self.shared);
        let mut ids: Vec<i64> = st.sessions.iter().map(|s| s.id).collect();
        ids.sort_unstable();
        ids
    }

    /// Number of open client connections.
    pub fn connection_count(&self) -> usize {
        lock(&self.shared).conns.len()
    }

    /// Stops the server now (the same as dropping the handle).
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        let _ = self.shutdown.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ZkMock {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Settings for a [`ZkMock`]; every setter consumes and returns the builder.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let zk = zk_mock::ZkMock::builder().tick_time(500).start().await.unwrap();
/// # drop(zk);
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
        }
    }
}

impl ZkMockBuilder {
    /// Where to listen; the default is `127.0.0.1:0` (a free loopback port).
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.addr = addr;
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
        let listener = std::net::TcpListener::bind(self.addr).map_err(|source| Error::Bind {
            addr: self.addr,
            source,
        })?;
        listener
            .set_nonblocking(true)
            .map_err(|source| Error::Bind {
                addr: self.addr,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| Error::Bind {
            addr: self.addr,
            source,
        })?;
        let clock: Arc<dyn Clock> = Arc::new(SystemClock::default());
        let id_ms = clock.wall_ms() as u64;
        let sessions = SessionManager::new(id_ms, self.tick_time, min, max);
        let settings = Settings {
            tick_time: self.tick_time,
            max_packet: self.max_packet,
            super_digest: self.super_digest,
        };
        let shared: Shared = Arc::new(Mutex::new(State::new(clock, sessions, settings)));
        let (tx, rx) = watch::channel(false);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(Error::Runtime)?;
        let server_state = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("zk-mock-{}", addr.port()))
            .spawn(move || {
                runtime.block_on(async move {
                    match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => server::run(l, server_state, rx).await,
                        Err(e) => tracing::error!(%e, "cannot register listener"),
                    }
                });
                // Dropping the runtime cancels every connection task and closes its socket.
            })
            .map_err(Error::Runtime)?;
        tracing::info!(%addr, "zk-mock listening");
        Ok(ZkMock {
            addr,
            shared,
            shutdown: tx,
            thread: Some(thread),
        })
    }
}
