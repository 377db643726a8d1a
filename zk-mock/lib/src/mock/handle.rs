//! [`ZkMock`], the handle tests hold: it starts and stops the server, and
//! its methods control and inspect it.

use std::net::SocketAddr;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::watch;

use crate::clock::ClockMode;
use crate::fault::Rule;
use crate::record::{Notifications, Recording, Requests};
use crate::snapshot::Snapshot;
use crate::Compat;

use crate::record::RecordView;
use crate::{SessionId, WaitTimeout};

use super::{Control, HoldGate, Metrics, Refusal, RuleGuard, Stall};

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
    pub(super) control: Control,
    pub(super) handle: tokio::runtime::Handle,
    pub(super) shutdown: watch::Sender<bool>,
    pub(super) thread: Option<JoinHandle<()>>,
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

    /// Starts an ensemble of `n` servers on free loopback ports (see
    /// [`ZkMockBuilder::servers`](crate::ZkMockBuilder::servers)); [`connect_string`](Self::connect_string)
    /// names them all.
    ///
    /// # Panics
    /// As [`start`](Self::start).
    pub async fn ensemble(n: usize) -> ZkMock {
        ZkMock::builder()
            .servers(n)
            .start()
            .await
            .expect("zk-mock failed to start")
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

impl ZkMock {
    // The controls (the same as `Control`'s, which other tasks can hold).

    /// The address the server listens on (server 0's, for an ensemble).
    pub fn addr(&self) -> SocketAddr {
        self.control.addr()
    }

    /// Every server's client address (one for a single server).
    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.control.addrs()
    }

    /// The connect string to hand to a client, e.g. `127.0.0.1:40123`
    /// (for an ensemble, every server's, comma-separated).
    pub fn connect_string(&self) -> String {
        self.control.connect_string()
    }

    /// Where TLS clients connect, if `ZkMockBuilder::tls` (the `tls` feature)
    /// turned it on.
    pub fn secure_addr(&self) -> Option<SocketAddr> {
        self.control.secure_addr()
    }

    /// The connect string of the secure port, if TLS is on.
    pub fn secure_connect_string(&self) -> Option<String> {
        self.control.secure_connect_string()
    }

    /// The seed every random choice of this server comes from; pass it to
    /// [`ZkMockBuilder::seed`](crate::ZkMockBuilder::seed) to replay a run.
    pub fn seed(&self) -> u64 {
        self.control.seed()
    }

    /// The last processed zxid.
    pub fn last_zxid(&self) -> i64 {
        self.control.last_zxid()
    }

    /// Ids of the live sessions, in ascending order.
    pub fn session_ids(&self) -> Vec<SessionId> {
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
    pub fn ephemerals(&self, session: impl Into<SessionId>) -> Vec<(String, i64)> {
        self.control.ephemerals(session)
    }

    /// Sets the delay of the ephemeral cleanup of sessions expired from now
    /// on ([`ZkMockBuilder::expiry_cleanup_delay`](crate::ZkMockBuilder::expiry_cleanup_delay)).
    pub fn set_expiry_cleanup_delay(&self, delay: Duration) {
        self.control.set_expiry_cleanup_delay(delay)
    }

    /// Sets the commit latency for writes from now on
    /// ([`ZkMockBuilder::commit_latency`](crate::ZkMockBuilder::commit_latency));
    /// zero applies them at once again.
    pub fn set_commit_latency(&self, latency: Duration) {
        self.control.set_commit_latency(latency)
    }

    /// Sets how long each handshake takes at least, for handshakes read
    /// from now on ([`ZkMockBuilder::connect_latency`](crate::ZkMockBuilder::connect_latency));
    /// zero answers them as soon as they can be again.
    pub fn set_connect_latency(&self, latency: Duration) {
        self.control.set_connect_latency(latency)
    }

    /// Sets the request latency for requests from now on
    /// ([`ZkMockBuilder::request_latency`](crate::ZkMockBuilder::request_latency)).
    pub fn set_request_latency(&self, latency: Duration) {
        self.control.set_request_latency(latency)
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
    /// let eph = CreateRequest { path: "/e".into(), data: None, acl: Acl::open_shared(), flags: 1 };
    /// owner.request(OpCode::Create, &eph).await?;
    /// assert!(zk.expire_session(owner.session_id));
    /// assert!(zk.snapshot().tree.get("/e").is_none(), "ephemerals go with the session");
    /// assert_eq!(owner.read_frame().await?, None, "its connection is closed, nothing sent");
    /// # Ok(())
    /// # }
    /// ```
    pub fn expire_session(&self, id: impl Into<SessionId>) -> bool {
        self.control.expire_session(id)
    }

    /// A new, closed gate: what a hold rule
    /// ([`Match::hold_reply`](crate::fault::Match::hold_reply),
    /// [`Match::hold_request`](crate::fault::Match::hold_request)) or
    /// [`expire_session_until`](Self::expire_session_until) holds waits for
    /// it to open ([`HoldGate::open`], or dropping the guard). A test
    /// forces an order of events with it: "this reply reaches the client
    /// only after that happened", with no sleep.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// use std::time::Duration;
    /// use zk_mock::{client::RawClient, fault::{OpFamily, Rule}, proto::*};
    /// let zk = zk_mock::ZkMock::start().await;
    /// let gate = zk.gate();
    /// let _held = zk.rule(Rule::when().op(OpFamily::Create).hold_reply(gate.id()));
    /// let mut c = RawClient::connect(zk.addr(), 10_000).await?;
    /// let create = CreateRequest { path: "/a".into(), data: None, acl: Acl::open_shared(), flags: 0 };
    /// let header = RequestHeader { xid: 1, op_type: OpCode::Create as i32 };
    /// let mut frame = bytes::BytesMut::new();
    /// zk_mock::codec::Record::encode(&header, &mut frame);
    /// zk_mock::codec::Record::encode(&create, &mut frame);
    /// c.send_frame(&frame).await?;
    /// zk.wait_until(Duration::from_secs(5), |v| v.snapshot().tree.get("/a").is_some()).await.unwrap();
    /// c.set_read_timeout(Duration::from_millis(200));
    /// assert!(c.read_frame().await.is_err(), "applied, but its reply is held");
    /// gate.open();
    /// c.set_read_timeout(Duration::from_secs(5));
    /// assert!(c.next_reply().await?.is_some(), "delivered once the gate opened");
    /// # Ok(())
    /// # }
    /// ```
    pub fn gate(&self) -> HoldGate {
        self.control.gate()
    }

    /// Opens a gate by id (one whose [`HoldGate`] was forgotten); false if
    /// it was not a closed gate.
    pub fn open_gate(&self, gate: crate::fault::GateId) -> bool {
        self.control.open_gate(gate)
    }

    /// Expires a session now, as [`expire_session`](Self::expire_session)
    /// does, but applies its closeSession transaction (the deletion of its
    /// ephemerals, and the watchers' notifications) only when `gate` opens:
    /// a client sees what a server that has not applied the expiry yet
    /// shows (CURATOR-604), for exactly as long as the test says. The
    /// session is gone at once (a re-attach is told it expired). A gate
    /// that is open already: at once. False if there is no such session.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// use zk_mock::{client::RawClient, proto::*, ZkMock};
    /// let zk = ZkMock::start().await;
    /// let mut owner = RawClient::connect(zk.addr(), 10_000).await?;
    /// let eph = CreateRequest { path: "/e".into(), data: None, acl: Acl::open_shared(), flags: 1 };
    /// owner.request(OpCode::Create, &eph).await?;
    /// let gate = zk.gate();
    /// assert!(zk.expire_session_until(owner.session_id, gate.id()));
    /// assert!(zk.session_ids().is_empty(), "the session is gone");
    /// assert!(zk.snapshot().tree.get("/e").is_some(), "its node is not, yet");
    /// gate.open();
    /// assert!(zk.snapshot().tree.get("/e").is_none());
    /// # Ok(())
    /// # }
    /// ```
    pub fn expire_session_until(
        &self,
        id: impl Into<SessionId>,
        gate: crate::fault::GateId,
    ) -> bool {
        self.control.expire_session_until(id, gate)
    }

    /// Expires every session, oldest first (the same closeSession zxids
    /// every run); returns how many.
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
    pub fn disconnect(&self, id: impl Into<SessionId>) -> bool {
        self.control.disconnect(id)
    }

    /// Closes every client connection, oldest first (the recorder's
    /// disconnects come in that order every run); returns how many.
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
    pub fn stall(&self, id: impl Into<SessionId>) -> Option<Stall> {
        self.control.stall(id)
    }

    /// Ends a stall (a forgotten [`Stall`] guard's, or a
    /// [`Verdict::Stall`](crate::fault::Verdict::Stall) rule's): what was
    /// held is delivered. False if it was not stalled.
    pub fn resume(&self, id: impl Into<SessionId>) -> bool {
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

    /// Puts the server back as a new one, keeping its ports and its clock:
    /// every session expires (its client is told so), every node but `/`
    /// and the system nodes under `/zookeeper` is deleted, the fault rules
    /// are removed, stalls and a refusal end, and the recording is cleared.
    /// The zxid keeps counting up, as a real server's would, so a client
    /// that reconnects is not refused for having seen a later one. What a
    /// test fixture shared by many tests calls between them.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use zk_mock::client::RawClient;
    /// use zk_mock::proto::{Acl, CreateRequest, OpCode, PathWatchRequest};
    /// let zk = zk_mock::ZkMock::start().await;
    /// let mut c = RawClient::connect(zk.addr(), 10_000).await.unwrap();
    /// let create = CreateRequest { path: "/left-over".into(), data: None, acl: Acl::open_shared(), flags: 0 };
    /// assert_eq!(c.request(OpCode::Create, &create).await.unwrap().header.err, 0);
    /// zk.reset();
    /// assert!(zk.session_ids().is_empty());
    /// let mut c = RawClient::connect(zk.addr(), 10_000).await.unwrap();
    /// let exists = PathWatchRequest { path: "/left-over".into(), watch: false };
    /// let gone = c.request(OpCode::Exists, &exists).await.unwrap();
    /// assert_eq!(gone.header.err, zk_mock::proto::ErrorCode::NoNode.code());
    /// # }
    /// ```
    pub fn reset(&self) {
        self.control.reset()
    }

    /// Accepts connections again.
    pub fn accept_connections(&self) {
        self.control.accept_connections()
    }

    /// Sets the next sequential suffix under `parent` (ZooKeeper's stored
    /// cversion of the parent, which also moves its reported cversion), for
    /// example near `i32::MAX` to test code against the counter's wrap to
    /// negative numbers (`%010d` of `i32::MIN` is `-2147483648`). False, and
    /// nothing set, if the leader has no such node. Not a transaction: no
    /// zxid, no notification. In an ensemble, a lagging follower sets it once
    /// it has applied every txn committed before, so it names every
    /// sequential node as the leader did.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// use zk_mock::{client::RawClient, proto::*};
    /// let zk = zk_mock::ZkMock::start().await;
    /// let mut c = RawClient::connect(zk.addr(), 10_000).await?;
    /// let seq = CreateRequest { path: "/n-".into(), data: None, acl: Acl::open_shared(), flags: 2 };
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
    /// [`container_check_interval`](crate::ZkMockBuilder::container_check_interval)):
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

    /// Everything recorded so far, as an owned copy; to query without
    /// copying, see [`inspect`](Self::inspect).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// use zk_mock::{client::RawClient, proto::*, record::RequestQuery};
    /// let zk = zk_mock::ZkMock::start().await;
    /// let mut c = RawClient::connect(zk.addr(), 10_000).await?;
    /// c.request(OpCode::Exists, &PathWatchRequest { path: "/x".into(), watch: true }).await?;
    /// let rec = zk.recorded();
    /// assert_eq!(rec.requests.iter().op(OpCode::Exists).errors().count(), 1);
    /// assert_eq!(rec.watches[0].kind, zk_mock::record::WatchKind::Exist);
    /// print!("{rec}"); // one line per request, watch and notification
    /// # Ok(())
    /// # }
    /// ```
    pub fn recorded(&self) -> Recording {
        self.control.recorded()
    }

    /// The recorded requests, as an owned copy of that log.
    pub fn requests(&self) -> Requests {
        self.control.requests()
    }

    /// The recorded notifications, as an owned copy of that log.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use zk_mock::record::NotificationQuery;
    /// # let zk = zk_mock::ZkMock::start().await;
    /// # let session = 0;
    /// let sent = zk.notifications().iter().to_session(session).by_path("/lock").count();
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

    /// Runs `f` over the live log, borrowed: queries through
    /// [`RequestQuery`](crate::record::RequestQuery) and
    /// [`NotificationQuery`](crate::record::NotificationQuery) copy
    /// nothing. The server is paused while `f` runs, so `f` must not call
    /// the mock's own methods (that panics, with a message saying so): the
    /// view has [`snapshot`](RecordView::snapshot) and
    /// [`session_ids`](RecordView::session_ids) for that.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// use zk_mock::{client::RawClient, proto::*, record::RequestQuery};
    /// let zk = zk_mock::ZkMock::start().await;
    /// let mut c = RawClient::connect(zk.addr(), 10_000).await?;
    /// c.request(OpCode::GetData, &PathWatchRequest { path: "/x".into(), watch: false }).await?;
    /// let misses = zk.inspect(|log| log.requests().by_path("/x").error(ErrorCode::NoNode).count());
    /// assert_eq!(misses, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn inspect<T>(&self, f: impl FnOnce(RecordView<'_>) -> T) -> T {
        self.control.inspect(f)
    }

    /// Waits until `done` holds, checking it over the live log (as
    /// [`inspect`](Self::inspect) does, nothing copied) at once and after
    /// every change the server records; gives up after `timeout`.
    ///
    /// # Errors
    /// [`WaitTimeout`], which prints the seed and the recording as it stood.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use zk_mock::{client::RawClient, proto::*, record::RequestQuery};
    /// let zk = zk_mock::ZkMock::start().await;
    /// let mut c = RawClient::connect(zk.addr(), 10_000).await?;
    /// c.request(OpCode::Sync, &PathRequest { path: "/".into() }).await?;
    /// zk.wait_until(Duration::from_secs(5), |log| log.requests().op(OpCode::Sync).count() == 1)
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn wait_until(
        &self,
        timeout: Duration,
        done: impl FnMut(RecordView<'_>) -> bool,
    ) -> Result<(), WaitTimeout> {
        self.control.wait_until(timeout, done).await
    }
}
