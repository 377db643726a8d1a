//! [`ZkMock`], the handle tests hold, and its [`ZkMockBuilder`].

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rand::rngs::SmallRng;
use rand::SeedableRng;
use serde::Serialize;
use tokio::sync::watch;

use crate::clock::{Clock, ClockMode};
use crate::codec::DEFAULT_MAX_PACKET;
use crate::error::Error;
use crate::fault::Rule;
use crate::record::{Counters, Notifications, Recorder, Recording, Requests, DEFAULT_CAPACITY};
use crate::server;
use crate::session::SessionManager;
use crate::snapshot::Snapshot;
use crate::state::{lock, Settings, Shared, State};
use crate::Compat;

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
///
/// Its methods control and inspect the server: fault rules and verbs, the
/// session clock, the recorder, snapshots and metrics. [`ZkMock::control`]
/// hands out a [`Control`], a cheap clone with the same methods, for other
/// tasks and threads.
#[derive(Debug)]
pub struct ZkMock {
    control: Control,
    handle: tokio::runtime::Handle,
    shutdown: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

/// The controls of a running server: fault rules and verbs, the session
/// clock, the recorder, snapshots and metrics. Cheap to clone; every clone
/// controls the same server, and does nothing once the server has stopped.
#[derive(Debug, Clone)]
pub struct Control {
    addr: SocketAddr,
    secure_addr: Option<SocketAddr>,
    seed: u64,
    shared: Shared,
}

/// Counters and gauges of a running server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Metrics {
    /// Live sessions.
    pub sessions: usize,
    /// Open client connections.
    pub connections: usize,
    /// Nodes, counted as ZooKeeper does (5 on a fresh server).
    pub znodes: usize,
    /// Watches held, (connection, path, table) entries.
    pub watches: usize,
    /// Ephemeral nodes.
    pub ephemerals: usize,
    /// The last processed zxid.
    pub last_zxid: i64,
    /// Frames received after the handshake.
    pub packets_received: u64,
    /// Frames queued to clients.
    pub packets_sent: u64,
    /// Request, error, watch and notification totals.
    pub totals: Counters,
    /// Fault rules installed.
    pub rules: usize,
    /// Bytes queued for clients and not yet written, all connections.
    pub outbox_bytes: usize,
    /// Connections closed as slow readers (see
    /// [`ZkMockBuilder::max_outbox_bytes`]).
    pub slow_readers_closed: u64,
}

impl ZkMock {
    /// Starts a server on a free loopback port with default settings
    /// (tickTime 2000 ms, session timeouts 4000..=40000 ms, 1 MiB packets,
    /// real-time session clock, recorder on).
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

    /// A handle on this server's controls for other tasks or threads.
    pub fn control(&self) -> Control {
        self.control.clone()
    }

    /// The Tokio runtime the server runs on (for serving extra endpoints such as the admin API).
    pub fn runtime(&self) -> &tokio::runtime::Handle {
        &self.handle
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

impl Control {
    /// As [`ZkMock::addr`].
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// As [`ZkMock::connect_string`].
    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// As [`ZkMock::secure_addr`].
    pub fn secure_addr(&self) -> Option<SocketAddr> {
        self.secure_addr
    }

    /// As [`ZkMock::secure_connect_string`].
    pub fn secure_connect_string(&self) -> Option<String> {
        self.secure_addr.map(|a| a.to_string())
    }

    /// As [`ZkMock::seed`].
    pub fn seed(&self) -> u64 {
        self.seed
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.shared)
    }

    /// As [`ZkMock::last_zxid`].
    pub fn last_zxid(&self) -> i64 {
        self.state().tree.last_zxid()
    }

    /// As [`ZkMock::session_ids`].
    pub fn session_ids(&self) -> Vec<i64> {
        let st = self.state();
        let mut ids: Vec<i64> = st.sessions.iter().map(|s| s.id).collect();
        ids.sort_unstable();
        ids
    }

    /// As [`ZkMock::ephemerals`].
    pub fn ephemerals(&self, session: i64) -> Vec<(String, i64)> {
        let st = self.state();
        let mut v: Vec<(String, i64)> = st
            .tree
            .ephemerals_of(session)
            .filter_map(|p| st.tree.get(p).map(|n| (p.to_string(), n.czxid)))
            .collect();
        v.sort_by_key(|(_, z)| *z);
        v
    }

    /// As [`ZkMock::set_expiry_cleanup_delay`].
    pub fn set_expiry_cleanup_delay(&self, delay: Duration) {
        self.state().settings.expiry_cleanup_delay_ms = delay.as_millis() as u64;
    }

    /// As [`ZkMock::connection_count`].
    pub fn connection_count(&self) -> usize {
        self.state().conns.len()
    }

    // ---- faults -------------------------------------------------------------

    /// As [`ZkMock::rule`].
    pub fn rule(&self, rule: Rule) -> RuleGuard {
        match self.try_rule(rule) {
            Ok(g) => g,
            Err(e) => panic!("zk-mock (seed {}): invalid rule: {e}", self.seed),
        }
    }

    /// As [`ZkMock::try_rule`].
    pub fn try_rule(&self, rule: Rule) -> Result<RuleGuard, String> {
        rule.validate()?;
        let id = self.state().rules.install(rule);
        Ok(RuleGuard {
            shared: Arc::downgrade(&self.shared),
            id,
            seed: self.seed,
            keep: false,
            expect: None,
        })
    }

    /// As [`ZkMock::remove_rule`].
    pub fn remove_rule(&self, id: u64) -> bool {
        self.state().rules.remove(id)
    }

    /// As [`ZkMock::rules`].
    pub fn rules(&self) -> Vec<(u64, Rule, u64)> {
        self.state().rules.list()
    }

    /// As [`ZkMock::expire_session`].
    pub fn expire_session(&self, id: i64) -> bool {
        self.state().expire(id)
    }

    /// As [`ZkMock::expire_all`].
    pub fn expire_all(&self) -> usize {
        let mut st = self.state();
        let ids: Vec<i64> = st.sessions.iter().map(|s| s.id).collect();
        ids.into_iter().filter(|id| st.expire(*id)).count()
    }

    /// As [`ZkMock::disconnect`].
    pub fn disconnect(&self, id: i64) -> bool {
        let mut st = self.state();
        match st.sessions.get(id).and_then(|s| s.conn) {
            Some(conn) => {
                st.close_conn(conn);
                true
            }
            None => false,
        }
    }

    /// As [`ZkMock::disconnect_all`].
    pub fn disconnect_all(&self) -> usize {
        let mut st = self.state();
        let conns: Vec<_> = st.conns.keys().copied().collect();
        for c in &conns {
            st.close_conn(*c);
        }
        conns.len()
    }

    /// As [`ZkMock::stall`].
    #[must_use = "dropping the guard resumes the session at once; Stall::forget keeps it stalled"]
    pub fn stall(&self, id: i64) -> Option<Stall> {
        self.state().stall(id).then(|| Stall {
            shared: Arc::downgrade(&self.shared),
            session: id,
            keep: false,
        })
    }

    /// As [`ZkMock::resume`].
    pub fn resume(&self, id: i64) -> bool {
        self.state().resume(id)
    }

    /// As [`ZkMock::refuse_connections`].
    pub fn refuse_connections(&self) -> Refusal {
        self.state().refusing = true;
        Refusal {
            shared: Arc::downgrade(&self.shared),
        }
    }

    /// As [`ZkMock::accept_connections`].
    pub fn accept_connections(&self) {
        self.state().refusing = false;
    }

    /// As [`ZkMock::set_sequence_counter`].
    pub fn set_sequence_counter(&self, parent: &str, next: i32) -> bool {
        self.state().tree.set_sequence_counter(parent, next)
    }

    // ---- clock --------------------------------------------------------------

    /// As [`ZkMock::advance`].
    pub fn advance(&self, by: Duration) {
        let mut st = self.state();
        st.clock.advance(by);
        st.expire_due();
        st.check_containers_due();
    }

    /// As [`ZkMock::clock_ms`].
    pub fn clock_ms(&self) -> u64 {
        self.state().clock.now_ms()
    }

    /// As [`ZkMock::check_containers`].
    pub fn check_containers(&self) -> usize {
        self.state().check_containers()
    }

    /// As [`ZkMock::compat`].
    pub fn compat(&self) -> Compat {
        self.state().settings.compat
    }

    /// As [`ZkMock::clock_mode`].
    pub fn clock_mode(&self) -> ClockMode {
        self.state().clock.mode()
    }

    // ---- introspection ------------------------------------------------------

    /// As [`ZkMock::recorded`].
    pub fn recorded(&self) -> Recording {
        let st = self.state();
        st.recorder.snapshot(st.seed)
    }

    /// As [`ZkMock::requests`].
    pub fn requests(&self) -> Requests {
        self.state().recorder.requests()
    }

    /// As [`ZkMock::notifications`].
    pub fn notifications(&self) -> Notifications {
        self.state().recorder.notifications()
    }

    /// As [`ZkMock::changes`].
    pub fn changes(&self) -> Vec<crate::record::ChangeRecord> {
        self.state().recorder.changes()
    }

    /// As [`ZkMock::clear_recording`].
    pub fn clear_recording(&self) {
        self.state().recorder.clear();
    }

    /// As [`ZkMock::snapshot`].
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::of(&self.state())
    }

    /// As [`ZkMock::metrics`].
    pub fn metrics(&self) -> Metrics {
        let st = self.state();
        Metrics {
            sessions: st.sessions.iter().count(),
            connections: st.conns.len(),
            znodes: st.tree.node_count(),
            watches: st.watches.count(),
            ephemerals: st
                .sessions
                .iter()
                .map(|s| st.tree.ephemerals_of(s.id).count())
                .sum(),
            last_zxid: st.tree.last_zxid(),
            packets_received: st.packets_received,
            packets_sent: st.packets_sent,
            totals: st.recorder.total(),
            rules: st.rules.list().len(),
            outbox_bytes: st
                .conns
                .values()
                .map(|c| c.queued.load(std::sync::atomic::Ordering::Relaxed))
                .sum(),
            slow_readers_closed: st.slow_readers_closed,
        }
    }

    /// As [`ZkMock::wait_until`].
    pub async fn wait_until(
        &self,
        timeout: Duration,
        mut done: impl FnMut(&Recording) -> bool,
    ) -> Result<Recording, String> {
        let mut changes = self.state().changes.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let rec = self.recorded();
            if done(&rec) {
                return Ok(rec);
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                _ => {
                    let rec = self.recorded();
                    if done(&rec) {
                        return Ok(rec);
                    }
                    return Err(format!(
                        "zk-mock (seed {}): condition not met within {timeout:?}\n{rec}",
                        self.seed
                    ));
                }
            }
        }
    }
}

impl ZkMock {
    // The controls (the same as `Control`'s, which other tasks can hold).

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.control.addr()
    }

    /// The connect string to hand to a client, e.g. `127.0.0.1:40123`.
    pub fn connect_string(&self) -> String {
        self.control.connect_string()
    }

    /// Where TLS clients connect, if [`ZkMockBuilder::tls`] turned it on.
    pub fn secure_addr(&self) -> Option<SocketAddr> {
        self.control.secure_addr()
    }

    /// The connect string of the secure port, if TLS is on.
    pub fn secure_connect_string(&self) -> Option<String> {
        self.control.secure_connect_string()
    }

    /// The seed every random choice of this server comes from; pass it to
    /// [`ZkMockBuilder::seed`] to replay a run.
    pub fn seed(&self) -> u64 {
        self.control.seed()
    }

    /// The last processed zxid.
    pub fn last_zxid(&self) -> i64 {
        self.control.last_zxid()
    }

    /// Ids of the live sessions, in ascending order.
    pub fn session_ids(&self) -> Vec<i64> {
        self.control.session_ids()
    }

    /// The ephemeral nodes a session owns, with each node's czxid, in
    /// ascending czxid order: which lock node a session holds, read from the
    /// server's own tree (the harness's fencing tokens come from here).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let zk = zk_mock::ZkMock::start().await;
    /// assert!(zk.ephemerals(42).is_empty());
    /// # }
    /// ```
    pub fn ephemerals(&self, session: i64) -> Vec<(String, i64)> {
        self.control.ephemerals(session)
    }

    /// Sets the delay of the ephemeral cleanup of sessions expired from now
    /// on ([`ZkMockBuilder::expiry_cleanup_delay`]).
    pub fn set_expiry_cleanup_delay(&self, delay: Duration) {
        self.control.set_expiry_cleanup_delay(delay)
    }

    /// Number of open client connections.
    pub fn connection_count(&self) -> usize {
        self.control.connection_count()
    }

    /// Installs a fault rule after the ones already installed. Rules are
    /// evaluated in install order; the first that fires decides. The rule is
    /// removed when the returned guard is dropped.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use zk_mock::{fault::{OpFamily, Rule}, proto::ErrorCode, ZkMock};
    /// let zk = ZkMock::start().await;
    /// let guard = zk.rule(Rule::when().op(OpFamily::GetData).path("/config").fail(ErrorCode::NoAuth));
    /// assert_eq!(guard.fired(), 0);
    /// drop(guard); // uninstalled
    /// # }
    /// ```
    ///
    /// With [`RuleGuard::expect`], dropping the guard also checks how many
    /// times the rule fired, as wiremock verifies its mocks.
    ///
    /// # Panics
    /// If the rule is invalid (see [`Rule::validate`]); [`try_rule`](Self::try_rule) returns the error instead.
    pub fn rule(&self, rule: Rule) -> RuleGuard {
        self.control.rule(rule)
    }

    /// [`rule`](Self::rule) that reports an invalid rule as an error.
    ///
    /// # Errors
    /// The message of [`Rule::validate`].
    pub fn try_rule(&self, rule: Rule) -> Result<RuleGuard, String> {
        self.control.try_rule(rule)
    }

    /// Removes a rule by id (for rules whose guard was forgotten); false if unknown.
    pub fn remove_rule(&self, id: u64) -> bool {
        self.control.remove_rule(id)
    }

    /// The installed rules: (id, rule, times fired), in evaluation order.
    pub fn rules(&self) -> Vec<(u64, Rule, u64)> {
        self.control.rules()
    }

    /// Expires a session now, exactly as the server's own expiry does: its
    /// ephemerals are deleted in one transaction, watchers are told, and its
    /// connection is closed with nothing sent. False if there is no such session.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// use zk_mock::{client::RawClient, proto::*, ZkMock};
    /// let zk = ZkMock::start().await;
    /// let mut owner = RawClient::connect(zk.addr(), 10_000).await?;
    /// let eph = CreateRequest { path: "/e".into(), data: None, acl: Acl::open_unsafe(), flags: 1 };
    /// owner.request(OpCode::Create, &eph).await?;
    /// assert!(zk.expire_session(owner.session_id));
    /// assert!(zk.snapshot().tree.get("/e").is_none(), "ephemerals go with the session");
    /// assert_eq!(owner.read_frame().await?, None, "its connection is closed, nothing sent");
    /// # Ok(())
    /// # }
    /// ```
    pub fn expire_session(&self, id: i64) -> bool {
        self.control.expire_session(id)
    }

    /// Expires every session; returns how many.
    pub fn expire_all(&self) -> usize {
        self.control.expire_all()
    }

    /// Closes a session's connection (the session lives on: the client sees
    /// connection loss and reconnects). False if it has no connection.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let zk = zk_mock::ZkMock::start().await;
    /// let mut c = zk_mock::client::RawClient::connect(zk.addr(), 10_000).await?;
    /// assert!(zk.disconnect(c.session_id));
    /// assert_eq!(c.read_frame().await?, None);
    /// assert_eq!(zk.session_ids(), vec![c.session_id], "the session lives on");
    /// # Ok(())
    /// # }
    /// ```
    pub fn disconnect(&self, id: i64) -> bool {
        self.control.disconnect(id)
    }

    /// Closes every client connection; returns how many.
    pub fn disconnect_all(&self) -> usize {
        self.control.disconnect_all()
    }

    /// Stalls a session until the returned guard is dropped: its replies,
    /// pings and notifications are held and nothing more is read from it; a
    /// reconnect for it waits too. The client times out and retries; if the
    /// stall outlasts the session timeout, the session expires. `None` if
    /// there is no such session. [`Stall::forget`] keeps it stalled until
    /// [`resume`](Self::resume) (or its expiry).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// use std::time::Duration;
    /// use zk_mock::{client::RawClient, proto::*};
    /// let zk = zk_mock::ZkMock::start().await;
    /// let mut c = RawClient::connect(zk.addr(), 10_000).await?;
    /// let stall = zk.stall(c.session_id).expect("a live session");
    /// let sync = RequestHeader { xid: 1, op_type: OpCode::Sync as i32 };
    /// let mut frame = bytes::BytesMut::new();
    /// zk_mock::codec::Record::encode(&sync, &mut frame);
    /// zk_mock::codec::Record::encode(&PathRequest { path: "/".into() }, &mut frame);
    /// c.send_frame(&frame).await?;
    /// c.set_read_timeout(Duration::from_millis(200));
    /// assert!(c.read_frame().await.is_err(), "held while stalled");
    /// drop(stall); // resumes
    /// c.set_read_timeout(Duration::from_secs(5));
    /// assert!(c.next_reply().await?.is_some(), "delivered on resume");
    /// # Ok(())
    /// # }
    /// ```
    #[must_use = "dropping the guard resumes the session at once; Stall::forget keeps it stalled"]
    pub fn stall(&self, id: i64) -> Option<Stall> {
        self.control.stall(id)
    }

    /// Ends a stall (a forgotten [`Stall`] guard's, or a
    /// [`Verdict::Stall`](crate::fault::Verdict::Stall) rule's): what was
    /// held is delivered. False if it was not stalled.
    pub fn resume(&self, id: i64) -> bool {
        self.control.resume(id)
    }

    /// Closes new connections as soon as they are accepted until the guard is
    /// dropped (or [`accept_connections`](Self::accept_connections)).
    /// Existing connections are not touched.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use zk_mock::client::RawClient;
    /// let zk = zk_mock::ZkMock::start().await;
    /// let refusal = zk.refuse_connections();
    /// assert!(RawClient::connect(zk.addr(), 10_000).await.is_err());
    /// drop(refusal);
    /// assert!(RawClient::connect(zk.addr(), 10_000).await.is_ok());
    /// # }
    /// ```
    pub fn refuse_connections(&self) -> Refusal {
        self.control.refuse_connections()
    }

    /// Accepts connections again.
    pub fn accept_connections(&self) {
        self.control.accept_connections()
    }

    /// Sets the next sequential suffix under `parent` (ZooKeeper's stored
    /// cversion of the parent, which also moves its reported cversion), for
    /// example near `i32::MAX` to test code against the counter's wrap to
    /// negative numbers (`%010d` of `i32::MIN` is `-2147483648`). False if the
    /// node does not exist. Not a transaction: no zxid, no notification.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// use zk_mock::{client::RawClient, proto::*};
    /// let zk = zk_mock::ZkMock::start().await;
    /// let mut c = RawClient::connect(zk.addr(), 10_000).await?;
    /// let seq = CreateRequest { path: "/n-".into(), data: None, acl: Acl::open_unsafe(), flags: 2 };
    /// assert!(zk.set_sequence_counter("/", i32::MAX));
    /// let first: CreateResponse = c.request(OpCode::Create, &seq).await?.decode().unwrap();
    /// let second: CreateResponse = c.request(OpCode::Create, &seq).await?.decode().unwrap();
    /// assert_eq!((first.path.as_str(), second.path.as_str()), ("/n-2147483647", "/n--2147483648"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn set_sequence_counter(&self, parent: &str, next: i32) -> bool {
        self.control.set_sequence_counter(parent, next)
    }

    /// Moves the session clock forward, then expires every session whose
    /// deadline has passed, before returning. With [`ClockMode::Manual`] this
    /// is the only way time passes for sessions.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// use std::time::Duration;
    /// use zk_mock::{clock::ClockMode, client::RawClient, ZkMock};
    /// let zk = ZkMock::builder().clock(ClockMode::Manual).start().await.unwrap();
    /// let c = RawClient::connect(zk.addr(), 4000).await?; // silent from now on
    /// zk.advance(Duration::from_millis(4000));
    /// assert_eq!(zk.session_ids(), vec![c.session_id], "deadlines round up to the next tick");
    /// zk.advance(Duration::from_millis(2000));
    /// assert!(zk.session_ids().is_empty(), "expired when advance returned");
    /// # Ok(())
    /// # }
    /// ```
    pub fn advance(&self, by: Duration) {
        self.control.advance(by)
    }

    /// The session clock, in ms since the server started.
    pub fn clock_ms(&self) -> u64 {
        self.control.clock_ms()
    }

    /// Runs the container check now (as the background check does every
    /// [`container_check_interval`](ZkMockBuilder::container_check_interval)):
    /// deletes every empty container that once had a child and every
    /// childless TTL node older than its TTL; returns how many it deleted.
    pub fn check_containers(&self) -> usize {
        self.control.check_containers()
    }

    /// The ZooKeeper release the server imitates.
    pub fn compat(&self) -> Compat {
        self.control.compat()
    }

    /// Which clock the server runs on.
    pub fn clock_mode(&self) -> ClockMode {
        self.control.clock_mode()
    }

    /// Everything recorded so far, as an owned copy.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// use zk_mock::{client::RawClient, proto::*};
    /// let zk = zk_mock::ZkMock::start().await;
    /// let mut c = RawClient::connect(zk.addr(), 10_000).await?;
    /// c.request(OpCode::Exists, &PathWatchRequest { path: "/x".into(), watch: true }).await?;
    /// let rec = zk.recorded();
    /// assert_eq!(rec.requests.op(OpCode::Exists).errors().count(), 1);
    /// assert_eq!(rec.watches[0].kind, zk_mock::record::WatchKind::Exist);
    /// print!("{rec}"); // one line per request, watch and notification
    /// # Ok(())
    /// # }
    /// ```
    pub fn recorded(&self) -> Recording {
        self.control.recorded()
    }

    /// The recorded requests.
    pub fn requests(&self) -> Requests {
        self.control.requests()
    }

    /// The recorded notifications.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # let zk = zk_mock::ZkMock::start().await;
    /// # let session = 0;
    /// let sent = zk.notifications().to_session(session).by_path("/lock").count();
    /// # assert_eq!(sent, 0);
    /// # }
    /// ```
    pub fn notifications(&self) -> Notifications {
        self.control.notifications()
    }

    /// The recorded changes to the tree (creates, deletes, setData), in
    /// commit order, each with its zxid and the session that caused it:
    /// the history an invariant checker replays.
    pub fn changes(&self) -> Vec<crate::record::ChangeRecord> {
        self.control.changes()
    }

    /// Forgets everything recorded so far (the counters too).
    pub fn clear_recording(&self) {
        self.control.clear_recording()
    }

    /// The tree, sessions and watches, as an owned, printable copy.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let zk = zk_mock::ZkMock::start().await;
    /// let snap = zk.snapshot();
    /// assert_eq!(snap.tree["/"].stat.cversion, -1);
    /// assert!(snap.to_string().contains("/zookeeper/config"));
    /// # }
    /// ```
    pub fn snapshot(&self) -> Snapshot {
        self.control.snapshot()
    }

    /// Counters and gauges.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let zk = zk_mock::ZkMock::start().await;
    /// assert_eq!(zk.metrics().znodes, 5);
    /// # }
    /// ```
    pub fn metrics(&self) -> Metrics {
        self.control.metrics()
    }

    /// Waits until `done` holds for the recording, checking after every
    /// change the server records; gives up after `timeout`.
    ///
    /// # Errors
    /// On timeout, a message with the seed and the recording as it stood.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// use std::time::Duration;
    /// use zk_mock::{client::RawClient, proto::*};
    /// let zk = zk_mock::ZkMock::start().await;
    /// let mut c = RawClient::connect(zk.addr(), 10_000).await?;
    /// c.request(OpCode::Sync, &PathRequest { path: "/".into() }).await?;
    /// let rec = zk.wait_until(Duration::from_secs(5), |r| r.requests.op(OpCode::Sync).count() == 1).await.unwrap();
    /// assert_eq!(rec.total.requests, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn wait_until(
        &self,
        timeout: Duration,
        done: impl FnMut(&Recording) -> bool,
    ) -> Result<Recording, String> {
        self.control.wait_until(timeout, done).await
    }
}

/// Uninstalls its fault rule when dropped, after checking its
/// [`expect`](Self::expect)ation, if it has one.
#[derive(Debug)]
#[must_use = "dropping the guard uninstalls the rule at once"]
pub struct RuleGuard {
    shared: Weak<Mutex<State>>,
    id: u64,
    seed: u64,
    keep: bool,
    expect: Option<Times>,
}

/// How many times a rule is expected to fire: a number (`1`) or a range
/// (`1..`, `2..=3`, `..5`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Times {
    min: u64,
    max: Option<u64>,
}

impl Times {
    fn contains(&self, n: u64) -> bool {
        n >= self.min && self.max.is_none_or(|m| n <= m)
    }
}

impl std::fmt::Display for Times {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let plural = |n: u64| if n == 1 { "time" } else { "times" };
        match self.max {
            Some(m) if m == self.min => write!(f, "{m} {}", plural(m)),
            Some(m) if self.min == 0 => write!(f, "at most {m} {}", plural(m)),
            Some(m) => write!(f, "{} to {m} times", self.min),
            None => write!(f, "at least {} {}", self.min, plural(self.min)),
        }
    }
}

impl From<u64> for Times {
    fn from(n: u64) -> Times {
        Times {
            min: n,
            max: Some(n),
        }
    }
}

impl From<std::ops::Range<u64>> for Times {
    fn from(r: std::ops::Range<u64>) -> Times {
        Times {
            min: r.start,
            max: Some(r.end.saturating_sub(1)),
        }
    }
}

impl From<std::ops::RangeInclusive<u64>> for Times {
    fn from(r: std::ops::RangeInclusive<u64>) -> Times {
        Times {
            min: *r.start(),
            max: Some(*r.end()),
        }
    }
}

impl From<std::ops::RangeFrom<u64>> for Times {
    fn from(r: std::ops::RangeFrom<u64>) -> Times {
        Times {
            min: r.start,
            max: None,
        }
    }
}

impl From<std::ops::RangeTo<u64>> for Times {
    fn from(r: std::ops::RangeTo<u64>) -> Times {
        Times {
            min: 0,
            max: Some(r.end.saturating_sub(1)),
        }
    }
}

impl From<std::ops::RangeToInclusive<u64>> for Times {
    fn from(r: std::ops::RangeToInclusive<u64>) -> Times {
        Times {
            min: 0,
            max: Some(r.end),
        }
    }
}

impl RuleGuard {
    /// The rule's id (as `DELETE /rules/{id}` takes it).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// How many times the rule has fired.
    pub fn fired(&self) -> u64 {
        self.shared
            .upgrade()
            .and_then(|s| lock(&s).rules.fired(self.id))
            .unwrap_or(0)
    }

    /// Expects the rule to fire `times` (a number or a range) by the time
    /// the guard is dropped; dropping it panics otherwise, naming the rule
    /// and the counts (unless the thread is already panicking).
    ///
    /// ```should_panic
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use zk_mock::{fault::{OpFamily, Rule}, ZkMock};
    /// let zk = ZkMock::start().await;
    /// let _lost = zk.rule(Rule::when().op(OpFamily::Create).lose_reply()).expect(1);
    /// // ... no create is ever sent: dropping `_lost` panics with
    /// // "rule #1 (create|create2|createContainer|createTTL → lose reply)
    /// //  was expected to fire 1 time, and fired 0 times".
    /// # }
    /// ```
    pub fn expect(mut self, times: impl Into<Times>) -> Self {
        self.expect = Some(times.into());
        self
    }

    /// Checks the [`expect`](Self::expect)ation now.
    ///
    /// # Errors
    /// The message dropping the guard would panic with.
    pub fn verify(&self) -> Result<(), String> {
        let Some(want) = &self.expect else {
            return Ok(());
        };
        let Some(shared) = self.shared.upgrade() else {
            return Err(format!(
                "zk-mock (seed {}): rule #{} cannot be verified: its server was dropped first \
                 (drop the guard, or call verify(), before the server)",
                self.seed, self.id
            ));
        };
        let state = lock(&shared);
        let Some((rule, tally)) = state.rules.get(self.id) else {
            return Err(format!(
                "zk-mock (seed {}): rule #{} was removed before it could be verified",
                self.seed, self.id
            ));
        };
        if want.contains(tally.fired) {
            return Ok(());
        }
        Err(format!(
            "zk-mock (seed {}): rule #{} ({}) was expected to fire {want}, and fired {} {} \
             ({} {} met its criteria)",
            self.seed,
            self.id,
            rule.describe(),
            tally.fired,
            if tally.fired == 1 { "time" } else { "times" },
            tally.matched,
            if tally.matched == 1 {
                "request"
            } else {
                "requests"
            },
        ))
    }

    /// Keeps the rule installed for the server's lifetime (unverified).
    pub fn forget(mut self) {
        self.keep = true;
    }
}

impl Drop for RuleGuard {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        let verdict = self.verify();
        if let Some(s) = self.shared.upgrade() {
            lock(&s).rules.remove(self.id);
        }
        if let Err(message) = verdict {
            if !std::thread::panicking() {
                panic!("{message}");
            }
        }
    }
}

/// Holds a session's traffic ([`ZkMock::stall`]) until dropped.
#[derive(Debug)]
#[must_use = "dropping the guard resumes the session at once"]
pub struct Stall {
    shared: Weak<Mutex<State>>,
    session: i64,
    keep: bool,
}

impl Stall {
    /// The stalled session.
    pub fn session(&self) -> i64 {
        self.session
    }

    /// Leaves the session stalled: until [`ZkMock::resume`], or until it
    /// expires.
    pub fn forget(mut self) {
        self.keep = true;
    }
}

impl Drop for Stall {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        if let Some(s) = self.shared.upgrade() {
            lock(&s).resume(self.session);
        }
    }
}

/// Accepts connections again when dropped.
#[derive(Debug)]
#[must_use = "dropping the guard accepts connections again at once"]
pub struct Refusal {
    shared: Weak<Mutex<State>>,
}

impl Drop for Refusal {
    fn drop(&mut self) {
        if let Some(s) = self.shared.upgrade() {
            lock(&s).refusing = false;
        }
    }
}

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
        }
    }
}

impl ZkMockBuilder {
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

    /// The secure port to listen on (default 0: a free one). Only with
    /// [`tls`](Self::tls).
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
        let bind_err = |source| Error::Bind {
            addr: self.addr,
            source,
        };
        let listener = bind(self.addr, self.listen_backlog).map_err(bind_err)?;
        let addr = listener.local_addr().map_err(bind_err)?;
        let secure = self.secure_listener()?;
        let secure_addr = secure.as_ref().map(|(_, _, a)| *a);
        let (state, seed) = self.new_state(addr.port(), min, max);
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
                runtime.block_on(async move {
                    let secure = match secure.map(|(l, acceptor, _)| {
                        tokio::net::TcpListener::from_std(l).map(|l| (l, acceptor))
                    }) {
                        None => None,
                        Some(Ok(s)) => Some(s),
                        Some(Err(e)) => {
                            tracing::error!(%e, "cannot register the secure listener");
                            return;
                        }
                    };
                    match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => server::run(l, secure, server_state, rx).await,
                        Err(e) => tracing::error!(%e, "cannot register listener"),
                    }
                });
                // Dropping the runtime cancels every connection task and closes its socket.
            })
            .map_err(Error::Runtime)?;
        tracing::info!(%addr, ?secure_addr, seed, "zk-mock listening");
        Ok(ZkMock {
            control: Control {
                addr,
                secure_addr,
                seed,
                shared,
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
    fn secure_listener(
        &self,
    ) -> Result<Option<(std::net::TcpListener, server::Acceptor, SocketAddr)>, Error> {
        let Some(tls) = &self.tls else {
            return Ok(None);
        };
        let acceptor = tls.acceptor()?;
        let want = SocketAddr::new(self.addr.ip(), self.secure_port);
        let secure_err = |source| Error::Bind { addr: want, source };
        let l = bind(want, self.listen_backlog).map_err(secure_err)?;
        let a = l.local_addr().map_err(secure_err)?;
        Ok(Some((l, acceptor, a)))
    }

    /// Without the `tls` feature there is no secure port.
    #[cfg(not(feature = "tls"))]
    #[allow(clippy::unnecessary_wraps)]
    fn secure_listener(
        &self,
    ) -> Result<Option<(std::net::TcpListener, server::Acceptor, SocketAddr)>, Error> {
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
        let clock = Clock::new(self.clock);
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
        };
        let recorder = Recorder::new(self.record, self.recorder_capacity);
        let state = State::new(
            clock,
            sessions,
            settings,
            recorder,
            seed,
            SmallRng::seed_from_u64(seed),
        );
        (state, seed)
    }
}

/// A non-blocking listener with an explicit backlog (std's `bind` uses 128).
fn bind(addr: SocketAddr, backlog: u32) -> std::io::Result<std::net::TcpListener> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(i32::try_from(backlog).unwrap_or(i32::MAX))?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}
