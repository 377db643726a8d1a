//! The real-ZooKeeper target: a TCP proxy per client between the clients and
//! the server (faults), session takeover (expiry), and an observer session
//! (history).
//!
//! Each client gets its own proxy listener on `127.0.0.1:0`. A proxied
//! connection is framed in both directions (4-byte big-endian length prefix):
//! the first client frame is the `ConnectRequest`, the first server frame the
//! `ConnectResponse`, whose session id and password the proxy keeps for the
//! session takeover. Later client frames are requests (`RequestHeader` then
//! body), later server frames replies (`ReplyHeader` then body), so request
//! faults can match an op and a path and find the reply by its xid.
//!
//! Faults:
//! - disconnect: both sockets of the client's connections are closed; the
//!   client reconnects through the same listener.
//! - stall / resume: nothing is forwarded in either direction (and new
//!   connections of that client are held) until resume; what was read in the
//!   meantime is delivered then.
//! - refuse: while on, every proxy closes the connections it accepts at once.
//! - lose_reply: the request goes to the server; its reply is dropped and the
//!   connection closed. drop_request: the connection is closed instead of
//!   forwarding the request.
//! - expire: the session-takeover technique Java and Curator tests use: a
//!   raw connection straight to the server re-attaches the captured session
//!   (which makes the server close the client's own connection) and sends
//!   closeSession on it. The client's reconnection is held meanwhile, so it
//!   cannot take the session back first; it then learns that the session
//!   expired.
//!
//! History: an observer session with a persistent recursive watch on the
//! parent of the lock directory records every created, deleted and changed
//! node in arrival order, which is zxid order (ZooKeeper sends a session's
//! notifications in commit order). The zxids themselves are not known (3.8
//! notifications carry −1), nor the session behind each change.
//!
//! Ensembles (`--target real`, a scenario with `server: {servers: N}`): the
//! harness starts a fresh real N-server ensemble for the scenario
//! ([`RealEnsemble`]). Each client's proxy listens once per server, so its
//! connect string names N addresses and its library fails over as it would
//! in production, while every fault still follows the client. `kill_server`
//! and `restart_server` stop and start a server's JVM; which server a client
//! is on is the one its last accepted handshake came from. There is an
//! observer on every server, each connected to that server only: a
//! persistent watch is not replayed after a reconnection (3.8 re-adds it
//! without the events missed meanwhile), so the history is taken from an
//! observer whose connection never dropped. When every observer lost its
//! connection (a killed leader drops every client for the election), the
//! one that saw the most is completed from the proxies' ledger: each create
//! and delete a client was told succeeded, by its zxid, that the observer
//! did not see (only server-side deletions at a session's end can then go
//! unrecorded, and the history's notes say so). Lag, partitions and leader
//! elections on demand are the mock's alone.

mod observer;
mod proxy;
mod takeover;

use std::net::SocketAddr;
use std::sync::Arc;

use parking_lot::Mutex;
use zk_mock::real::{RealEnsemble, RealZkBuilder};
use zookeeper_client as zk;

use crate::error::RunError;
use crate::fault::RequestFault;
use crate::target::History;
use observer::{Known, Observer, OpKind};
use proxy::Proxies;

/// How the harness starts real ZooKeeper servers (`--target real`): a
/// 200 ms tick, session timeouts from 400 ms to 10 s (scenarios ask for
/// short ones), no cap on connections per address, a deep listen backlog,
/// the JVM's own heap and full JIT (stampedes of a thousand clients).
pub fn real_zookeeper() -> RealZkBuilder {
    RealZkBuilder::default()
        .heap(None)
        .quick_jit(false)
        .tick_time(200)
        .cfg("minSessionTimeout=400")
        .cfg("maxSessionTimeout=10000")
        .cfg("maxClientCnxns=0")
        .cfg("clientPortListenBacklog=1024")
}

/// A connect string naming every one of `servers`.
fn connect_string_of(servers: &[SocketAddr]) -> String {
    servers
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// A real ZooKeeper (one server, or an ensemble the harness started) behind
/// per-client proxies, with an observer session on each server.
#[derive(Debug)]
pub(crate) struct RealTarget {
    servers: Vec<SocketAddr>,
    proxies: Proxies,
    observers: Vec<Observer>,
    /// A session on every server (it fails over, where an observer stays
    /// on its own server), for the harness's reads when no observer is
    /// connected: a rolling restart leaves each observer without its
    /// server in turn.
    failover: zk::Client,
    /// The ensemble started for this scenario, whose servers the timeline
    /// kills and restarts.
    ensemble: Option<Arc<Mutex<RealEnsemble>>>,
}

impl RealTarget {
    /// Connects the observer, removes what an earlier run of the scenario
    /// left under its lock and resource directories, and starts watching.
    pub(crate) async fn start(
        server: SocketAddr,
        lock_dir: &str,
        res_dir: &str,
    ) -> Result<RealTarget, RunError> {
        RealTarget::on(vec![server], None, lock_dir, res_dir).await
    }

    /// Starts a real ensemble of `n` servers ([`real_zookeeper`]'s
    /// settings) for one scenario; it stops when the target is dropped.
    pub(crate) async fn start_ensemble(
        n: usize,
        lock_dir: &str,
        res_dir: &str,
    ) -> Result<RealTarget, RunError> {
        let ensemble = tokio::task::spawn_blocking(move || {
            RealEnsemble::start(n, real_zookeeper()).map_err(Box::new)
        })
        .await
        .map_err(|e| RunError::Implementation(format!("starting a real ensemble: {e}")))??;
        let servers = (0..n).map(|i| ensemble.addr(i)).collect();
        RealTarget::on(
            servers,
            Some(Arc::new(Mutex::new(ensemble))),
            lock_dir,
            res_dir,
        )
        .await
    }

    async fn on(
        servers: Vec<SocketAddr>,
        ensemble: Option<Arc<Mutex<RealEnsemble>>>,
        lock_dir: &str,
        res_dir: &str,
    ) -> Result<RealTarget, RunError> {
        let mut observers = Vec::new();
        for &server in &servers {
            observers.push(Observer::start(server, lock_dir, res_dir).await?);
        }
        let cs = connect_string_of(&servers);
        let failover = zk::Client::connector()
            .with_session_timeout(std::time::Duration::from_secs(10))
            .connect(&cs)
            .await
            .map_err(|e| RunError::zk(format!("the harness's session to {cs}"), e))?;
        Ok(RealTarget {
            proxies: Proxies::new(servers.clone()),
            servers,
            observers,
            failover,
            ensemble,
        })
    }

    /// Every server's address (the harness's own session fails over).
    pub(crate) fn server_connect_string(&self) -> String {
        connect_string_of(&self.servers)
    }
    /// The client's proxy addresses: one per server, or for `only` these.
    pub(crate) async fn connect_string(
        &self,
        client: &str,
        only: Option<&[usize]>,
    ) -> Result<String, RunError> {
        if only.is_some() && self.ensemble.is_none() {
            return Err(RunError::Ensemble);
        }
        self.proxies.connect_string(client, only)
    }
    /// The server `session` is connected to.
    pub(crate) fn server_of(&self, session: i64) -> Option<usize> {
        self.ensemble.as_ref()?;
        self.proxies.server_of(session)
    }
    /// Kills or restarts server `i` of the ensemble. A restart is done when
    /// the server leads or follows again (a fresh data directory: it syncs
    /// from the leader); one that does not come back is the run's error.
    pub(crate) async fn server_verb(&self, verb: &str, i: usize) -> Result<(), RunError> {
        let Some(e) = &self.ensemble else {
            return Err(RunError::Ensemble);
        };
        if i >= self.servers.len() {
            return Err(RunError::NoSuchServer(vec![i]));
        }
        let e = e.clone();
        match verb {
            "kill" => {
                tokio::task::spawn_blocking(move || e.lock().kill(i))
                    .await
                    .map_err(|e| RunError::Implementation(format!("killing server {i}: {e}")))?;
                Ok(())
            }
            "restart" => {
                Ok(
                    tokio::task::spawn_blocking(move || e.lock().restart(i).map_err(Box::new))
                        .await
                        .map_err(|e| {
                            RunError::Implementation(format!("restarting server {i}: {e}"))
                        })??,
                )
            }
            "partition" => Err(RunError::MockOnly("partition_server")),
            _ => Err(RunError::MockOnly("heal_server")),
        }
    }
    /// An observer whose session is connected now, else the harness's
    /// session on every server (which fails over to whichever is up).
    fn reader(&self) -> &zk::Client {
        self.observers
            .iter()
            .map(|o| &o.client)
            .find(|c| matches!(c.state(), zk::SessionState::SyncConnected))
            .unwrap_or(&self.failover)
    }
    pub(crate) async fn expire(&self, client: &str) -> bool {
        self.proxies.expire(client).await
    }
    pub(crate) fn disconnect(&self, client: &str) -> bool {
        self.proxies.disconnect(client)
    }
    pub(crate) fn stall(&self, client: &str) -> bool {
        self.proxies.stall(client)
    }
    pub(crate) fn resume(&self, client: &str) -> bool {
        self.proxies.resume(client)
    }
    pub(crate) fn request_fault(&self, fault: &RequestFault, client: Option<&str>) {
        self.proxies.request_fault(fault, client)
    }
    pub(crate) fn new_gate(&self) -> u64 {
        self.proxies.new_gate()
    }
    pub(crate) fn open_gate(&self, gate: u64) {
        self.proxies.open_gate(gate)
    }
    pub(crate) fn open_all_gates(&self) {
        self.proxies.open_all_gates()
    }
    pub(crate) fn faults_fired(&self) -> u64 {
        self.proxies.faults_fired()
    }
    pub(crate) fn refuse(&self, on: bool) {
        self.proxies.refuse(on)
    }
    /// See `Target::lock_node`: the library's hint first, then the creates
    /// the proxies saw this session make under `dir` (newest first), then a
    /// walk of `dir` (for creates whose replies were lost); each confirmed
    /// by an `exists` through [`RealTarget::reader`] (ephemeralOwner, czxid).
    ///
    /// A read that fails (no server reachable just then, as in a restart)
    /// is tried again for up to 15 s, each time through whichever session
    /// is connected: "it owns no lock node" (token 0) is an answer the
    /// server gave, never a read that did not get through.
    pub(crate) async fn lock_node(
        &self,
        session: i64,
        dir: &str,
        hint: Option<&str>,
    ) -> Option<(String, i64)> {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(15);
        loop {
            match self.try_lock_node(session, dir, hint).await {
                Ok(found) => return found,
                Err(e) if tokio::time::Instant::now() < deadline => {
                    tracing::debug!(session, dir, "reading the lock node: {e}; again");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                Err(e) => {
                    tracing::warn!(session, dir, "reading the lock node: {e}; token 0");
                    return None;
                }
            }
        }
    }

    async fn try_lock_node(
        &self,
        session: i64,
        dir: &str,
        hint: Option<&str>,
    ) -> Result<Option<(String, i64)>, zk::Error> {
        let prefix = format!("{dir}/");
        let c = self.reader();
        if self.servers.len() > 1 {
            // The observer's server may not have applied the library's
            // newest writes yet.
            match c.sync(dir).await {
                Ok(()) | Err(zk::Error::NoNode) => {}
                Err(e) => return Err(e),
            }
        }
        let owned = |stat: &zk::Stat| stat.ephemeral_owner == session;
        if let Some(h) = hint.filter(|h| h.starts_with(&prefix)) {
            if let Some(stat) = c.check_stat(h).await? {
                if owned(&stat) {
                    return Ok(Some((h.to_string(), stat.czxid)));
                }
            }
        }
        let mut made: Vec<Known> = self
            .proxies
            .shared
            .ledger
            .lock()
            .iter()
            .filter(|k| {
                k.kind == OpKind::Create && k.session == session && k.path.starts_with(&prefix)
            })
            .cloned()
            .collect();
        made.sort_by_key(|k| std::cmp::Reverse(k.zxid));
        for k in made {
            if let Some(stat) = c.check_stat(&k.path).await? {
                if owned(&stat) {
                    return Ok(Some((k.path, stat.czxid)));
                }
            }
        }
        // A walk of `dir`, for creates whose replies were lost (synced above).
        Ok(crate::target::walk_lock_nodes(c, dir)
            .await?
            .into_iter()
            .filter(|(_, st)| owned(st))
            .max_by_key(|(_, st)| st.czxid)
            .map(|(p, st)| (p, st.czxid)))
    }

    /// The history as an observer saw it: the first one whose connection
    /// never dropped, else the one that saw the most (its notes say where
    /// changes may be missing).
    pub(crate) fn history(&self, prefixes: &[String]) -> History {
        let known = self.proxies.shared.ledger.lock().clone();
        let best = self
            .observers
            .iter()
            .find(|o| o.notes.lock().is_empty())
            .or_else(|| self.observers.iter().max_by_key(|o| o.seen.lock().len()))
            .expect("a target has at least one server");
        best.history(prefixes, &known)
    }
}

#[cfg(test)]
mod tests {
    use super::observer::{attribute, history_of, parent, Who};
    use super::proxy::{classify, match_rules, next_frame, RequestRule, MAX_FRAME};
    use super::takeover::{source_for, CLIENTS_PER_SOURCE};
    use super::*;
    use crate::fault::{FaultVerdict, RequestFault};
    use bytes::{Bytes, BytesMut};
    use zk_mock::codec::Record;
    use zk_mock::proto::{ConnectRequest, OpCode, RequestHeader};
    use zk_mock::record::ChangeKind;

    use std::time::Duration;
    use zk_mock::client::RawClient;
    use zk_mock::fault::OpFamily;

    use zk_mock::codec::frame;
    use zk_mock::proto::{
        Acl, CreateRequest, DeleteRequest, ErrorCode, PathWatchRequest, SetDataRequest,
    };

    fn request(xid: i32, op: OpCode, body: &impl Record) -> Bytes {
        let mut b = BytesMut::new();
        RequestHeader {
            xid,
            op_type: op as i32,
        }
        .encode(&mut b);
        body.encode(&mut b);
        b.freeze()
    }

    fn create(path: &str) -> CreateRequest {
        CreateRequest {
            path: path.into(),
            data: None,
            acl: Acl::open_shared(),
            flags: 3,
        }
    }

    fn fault(op: &str, times: u64, apply: bool) -> RequestFault {
        RequestFault {
            family: OpFamily::parse(op).unwrap(),
            path: zk_mock::fault::PathMatch::Glob(zk_mock::fault::Glob::below("/h/lock")),
            nth: None,
            times,
            verdict: if apply {
                FaultVerdict::LoseReply
            } else {
                FaultVerdict::DropRequest
            },
        }
    }

    fn rule(op: OpKind, client: Option<&str>, times: u64, apply: bool) -> RequestRule {
        let op = match op {
            OpKind::Create => "create",
            _ => "delete",
        };
        RequestRule::new(&fault(op, times, apply), client)
    }

    #[test]
    fn next_frame_finds_whole_frames_and_waits_for_a_partial_one() {
        assert_eq!(next_frame(&frame(b"one")), Ok(Some(3)));
        assert_eq!(next_frame(&frame(b"")), Ok(Some(0)));
        let mut two = frame(b"one").to_vec();
        two.extend_from_slice(&frame(b"two"));
        assert_eq!(next_frame(&two), Ok(Some(3)), "the first of two");
        // Fewer than four bytes, or part of the body: nothing yet.
        assert_eq!(next_frame(&[0, 0, 0]), Ok(None));
        assert_eq!(next_frame(&frame(b"partial")[..6]), Ok(None));
    }

    #[test]
    fn next_frame_refuses_negative_and_huge_lengths() {
        assert_eq!(next_frame(&(-1i32).to_be_bytes()), Err(()));
        assert_eq!(next_frame(&((MAX_FRAME + 1) as i32).to_be_bytes()), Err(()));
        assert_eq!(next_frame(&(MAX_FRAME as i32).to_be_bytes()), Ok(None));
    }

    #[test]
    fn rules_match_every_create_variant_and_delete_under_the_directory() {
        for op in [
            OpCode::Create,
            OpCode::Create2,
            OpCode::CreateContainer,
            OpCode::CreateTtl,
        ] {
            let mut rules = vec![rule(OpKind::Create, None, 1, true)];
            assert_eq!(
                match_rules(&mut rules, "c", op as i32, Some("/h/lock/n-01")),
                Some(FaultVerdict::LoseReply)
            );
        }
        let mut rules = vec![rule(OpKind::Create, None, 5, true)];
        // Not a create, not under `/h/lock/`, the directory itself, a sibling with the same prefix.
        assert_eq!(
            match_rules(&mut rules, "c", OpCode::Delete as i32, Some("/h/lock/x")),
            None
        );
        assert_eq!(
            match_rules(&mut rules, "c", OpCode::GetData as i32, Some("/h/lock/x")),
            None
        );
        assert_eq!(
            match_rules(&mut rules, "c", OpCode::Create2 as i32, Some("/h/lock")),
            None
        );
        assert_eq!(
            match_rules(
                &mut rules,
                "c",
                OpCode::Create2 as i32,
                Some("/h/lock.resource/m")
            ),
            None
        );
        assert_eq!(rules[0].tally.fired, 0);
        let mut rules = vec![rule(OpKind::Delete, None, 1, false)];
        assert_eq!(
            match_rules(&mut rules, "c", OpCode::Delete as i32, Some("/h/lock/x")),
            Some(FaultVerdict::DropRequest)
        );
    }

    #[test]
    fn rules_respect_the_client_and_the_times_budget() {
        let mut rules = vec![
            rule(OpKind::Create, Some("unlucky"), 2, true),
            rule(OpKind::Create, None, 1, false),
        ];
        let create2 = OpCode::Create2 as i32;
        // Someone else: only the "anyone" rule, once.
        assert_eq!(
            match_rules(&mut rules, "other", create2, Some("/h/lock/a")),
            Some(FaultVerdict::DropRequest)
        );
        assert_eq!(
            match_rules(&mut rules, "other", create2, Some("/h/lock/a")),
            None
        );
        // The named client: twice, then nothing left.
        assert_eq!(
            match_rules(&mut rules, "unlucky", create2, Some("/h/lock/a")),
            Some(FaultVerdict::LoseReply)
        );
        assert_eq!(
            match_rules(&mut rules, "unlucky", create2, Some("/h/lock/a")),
            Some(FaultVerdict::LoseReply)
        );
        assert_eq!(
            match_rules(&mut rules, "unlucky", create2, Some("/h/lock/a")),
            None
        );
        assert_eq!(
            rules.iter().map(|r| r.tally.fired).collect::<Vec<_>>(),
            vec![2, 1]
        );
        assert!(rules.iter().all(|r| Some(r.tally.fired) == r.when.times));
    }

    #[test]
    fn classify_reads_the_request_header_and_path() {
        let p = Proxies::new(vec!["127.0.0.1:1".parse().unwrap()]);
        p.request_fault(&fault("create", 1, true), Some("c"));
        p.request_fault(&fault("delete", 1, false), None);
        let mut fail = fault("setData", 1, true);
        fail.verdict = FaultVerdict::Fail(ErrorCode::NoNode);
        p.request_fault(&fail, None);
        let rules = &p.shared.rules;
        let get = request(
            5,
            OpCode::GetChildren2,
            &PathWatchRequest {
                path: "/h/lock".into(),
                watch: true,
            },
        );
        assert_eq!(classify(rules, "c", &get), None);
        let c = request(7, OpCode::Create2, &create("/h/lock/_c_x-lock-"));
        assert_eq!(classify(rules, "d", &c), None);
        assert_eq!(classify(rules, "c", &c), Some(FaultVerdict::LoseReply));
        assert_eq!(classify(rules, "c", &c), None);
        let d = request(
            9,
            OpCode::Delete,
            &DeleteRequest {
                path: "/h/lock/_c_x-lock-0000000001".into(),
                version: -1,
            },
        );
        assert_eq!(classify(rules, "d", &d), Some(FaultVerdict::DropRequest));
        assert_eq!(classify(rules, "d", &d), None);
        let set = request(
            11,
            OpCode::SetData,
            &SetDataRequest {
                path: "/h/lock/x".into(),
                data: None,
                version: -1,
            },
        );
        assert_eq!(
            classify(rules, "e", &set),
            Some(FaultVerdict::Fail(ErrorCode::NoNode))
        );
        // Garbage and pings go through.
        assert_eq!(classify(rules, "c", &[1, 2]), None);
        let ping = RequestHeader {
            xid: -2,
            op_type: OpCode::Ping as i32,
        }
        .to_bytes();
        assert_eq!(classify(rules, "c", &ping), None);
        assert_eq!(p.faults_fired(), 3);
    }

    #[test]
    fn what_the_observer_missed_comes_from_the_ledger_in_zxid_order() {
        let k = |kind, path: &str, zxid, session| Known {
            kind,
            path: path.into(),
            zxid,
            session,
        };
        // The observer was away from zxid 11 to 14: it missed /l/b's
        // creation and deletion and /l/c's creation, and saw /l/c go
        // without knowing who deleted it (a lifetime it never saw begin).
        let known = vec![
            k(OpKind::Create, "/l/a", 10, 1),
            k(OpKind::Create, "/l/b", 11, 2),
            k(OpKind::Delete, "/l/b", 12, 2),
            k(OpKind::Create, "/l/c", 13, 3),
            k(OpKind::Close, "", 14, 2),
            k(OpKind::Delete, "/l/c", 15, 3),
            k(OpKind::Delete, "/l/a", 16, 1),
            k(OpKind::Create, "/elsewhere", 17, 1),
        ];
        let seen: Vec<(ChangeKind, String)> = [
            (ChangeKind::Created, "/l/a"),
            (ChangeKind::Deleted, "/l/c"),
            (ChangeKind::Deleted, "/l/a"),
        ]
        .into_iter()
        .map(|(k, p)| (k, p.to_string()))
        .collect();
        let notes = vec!["observer session Disconnected after 1 changes".to_string()];
        let h = history_of(&seen, &notes, &["/l".to_string()], &known);
        let got: Vec<(Option<i64>, ChangeKind, &str, Option<i64>)> = h
            .changes
            .iter()
            .map(|c| (c.zxid, c.kind, c.path.as_str(), c.session))
            .collect();
        assert_eq!(
            got,
            vec![
                (Some(10), ChangeKind::Created, "/l/a", Some(1)),
                (Some(11), ChangeKind::Created, "/l/b", Some(2)),
                (Some(12), ChangeKind::Deleted, "/l/b", Some(2)),
                (Some(13), ChangeKind::Created, "/l/c", Some(3)),
                // Seen, but its deleter unknown to the observer: the
                // ledger's delete explains it (and is not added twice).
                (Some(15), ChangeKind::Deleted, "/l/c", Some(3)),
                (Some(16), ChangeKind::Deleted, "/l/a", Some(1)),
            ]
        );
        assert!(
            h.text.iter().any(|t| t.contains("the observer missed it")),
            "{:#?}",
            h.text
        );
        assert!(h.text.last().unwrap().contains("Disconnected"));
    }

    #[test]
    fn changes_are_attributed_to_sessions_and_session_ends() {
        let k = |kind, path: &str, zxid, session| Known {
            kind,
            path: path.into(),
            zxid,
            session,
        };
        let known = vec![
            k(OpKind::Create, "/l/a", 10, 1),
            k(OpKind::Create, "/l/b", 11, 2),
            k(OpKind::Delete, "/l/a", 12, 1),
            k(OpKind::Create, "/l/c", 13, 3),
            k(OpKind::Close, "", 15, 3),
            k(OpKind::Create, "/l/lock", 20, 1),
            k(OpKind::Delete, "/l/lock", 21, 4),
            k(OpKind::Create, "/l/lock", 22, 2),
        ];
        let seen: Vec<(ChangeKind, String)> = [
            (ChangeKind::Created, "/l"),
            (ChangeKind::Created, "/l/a"),
            (ChangeKind::Created, "/l/b"),
            (ChangeKind::Deleted, "/l/a"),
            (ChangeKind::Created, "/l/c"),
            (ChangeKind::Deleted, "/l/b"),
            (ChangeKind::Deleted, "/l/c"),
            (ChangeKind::Created, "/l/lock"),
            (ChangeKind::DataChanged, "/l/lock"),
            (ChangeKind::Deleted, "/l/lock"),
            (ChangeKind::Created, "/l/lock"),
            (ChangeKind::Deleted, "/l/lock"),
            (ChangeKind::Deleted, "/l/unknown"),
        ]
        .into_iter()
        .map(|(k, p)| (k, p.to_string()))
        .collect();
        let ended = |s| Who {
            session: Some(s),
            zxid: None,
            by_session_end: true,
        };
        assert_eq!(
            attribute(&seen, &known),
            vec![
                Who::default(),    // made by a session the proxies did not see
                Who::known(1, 10), // /l/a created by 1
                Who::known(2, 11),
                Who::known(1, 12), // /l/a deleted by 1 itself
                Who::known(3, 13),
                ended(2),          // /l/b went with its session
                Who::known(3, 15), // /l/c went with 3's own closeSession
                Who::known(1, 20),
                Who::default(),
                Who::known(4, 21), // 4 deleted 1's node
                Who::known(2, 22),
                ended(2), // the second /l/lock went with 2's session
                Who::default(),
            ]
        );
    }

    #[test]
    fn source_addresses_spread_only_on_the_loopback() {
        let lo: SocketAddr = "127.0.0.1:2181".parse().unwrap();
        assert_eq!(source_for(lo, 0), None);
        assert_eq!(source_for(lo, CLIENTS_PER_SOURCE - 1), None);
        assert_eq!(
            source_for(lo, CLIENTS_PER_SOURCE),
            Some("127.1.0.1".parse().unwrap())
        );
        assert_eq!(source_for(lo, 999), Some("127.1.0.49".parse().unwrap()));
        assert_eq!(source_for("10.0.0.1:2181".parse().unwrap(), 999), None);
        assert_eq!(source_for("[::1]:2181".parse().unwrap(), 999), None);
    }

    #[test]
    fn parent_of_paths() {
        assert_eq!(parent("/harness/x/lock"), "/harness/x");
        assert_eq!(parent("/lock"), "/");
        assert_eq!(parent("/"), "/");
    }

    // ---- through the proxy, against zk-mock ------------------------------

    fn addr(cs: &str) -> SocketAddr {
        cs.parse().unwrap()
    }

    async fn raw(p: &Proxies, client: &str) -> RawClient {
        let cs = p.connect_string(client, None).unwrap();
        let mut c = RawClient::connect(addr(&cs), 4000).await.unwrap();
        c.set_read_timeout(Duration::from_secs(3));
        c
    }

    async fn exists(zk: &zk_mock::ZkMock, path: &str) -> bool {
        let mut c = RawClient::connect(zk.addr(), 4000).await.unwrap();
        let r = c
            .request(
                OpCode::Exists,
                &PathWatchRequest {
                    path: path.into(),
                    watch: false,
                },
            )
            .await
            .unwrap();
        r.header.err == 0
    }

    async fn mkdir(c: &mut RawClient, path: &str) {
        let r = c
            .request(
                OpCode::Create,
                &CreateRequest {
                    flags: 0,
                    ..create(path)
                },
            )
            .await
            .unwrap();
        assert!(r.header.err == 0 || r.header.err == -110, "{r:?}");
    }

    /// A mock, the proxies in front of it, client "a" through its proxy,
    /// and the lock directory `/h/lock`.
    async fn lock_dir_through_a_proxy() -> (zk_mock::ZkMock, Proxies, RawClient) {
        let zk = zk_mock::ZkMock::start().await;
        let p = Proxies::new(vec![zk.addr()]);
        let mut c = raw(&p, "a").await;
        mkdir(&mut c, "/h").await;
        mkdir(&mut c, "/h/lock").await;
        (zk, p, c)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_proxy_forwards_and_remembers_the_session() {
        let zk = zk_mock::ZkMock::start().await;
        let p = Proxies::new(vec![zk.addr()]);
        let cs1 = p.connect_string("a", None).unwrap();
        assert_eq!(p.connect_string("a", None).unwrap(), cs1);
        assert_ne!(p.connect_string("b", None).unwrap(), cs1);
        let mut c = raw(&p, "a").await;
        assert_ne!(c.session_id, 0);
        assert_eq!(p.session("a"), Some((c.session_id, c.passwd.clone())));
        assert_eq!(p.session("b"), None);
        mkdir(&mut c, "/h").await;
        mkdir(&mut c, "/h/lock").await;
        // A large frame crosses intact in both directions.
        let big = vec![7u8; 300_000];
        let r = c
            .request(
                OpCode::Create,
                &CreateRequest {
                    data: Some(Bytes::from(big.clone())),
                    flags: 0,
                    ..create("/h/big")
                },
            )
            .await
            .unwrap();
        assert_eq!(r.header.err, 0);
        let r = c
            .request(
                OpCode::GetData,
                &PathWatchRequest {
                    path: "/h/big".into(),
                    watch: false,
                },
            )
            .await
            .unwrap();
        let data: zk_mock::proto::GetDataResponse = r.decode().unwrap();
        assert_eq!(data.data.as_deref(), Some(&big[..]));
        assert!(!p.disconnect("b"));
        assert!(p.disconnect("a"));
        assert!(
            c.next_reply().await.unwrap().is_none(),
            "closed by disconnect"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn lose_reply_applies_the_request_and_drop_request_does_not() {
        let (zk, p, mut c) = lock_dir_through_a_proxy().await;
        p.request_fault(&fault("create", 1, true), Some("a"));
        let req = CreateRequest {
            flags: 0,
            ..create("/h/lock/one")
        };
        let e = c.request(OpCode::Create2, &req).await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof, "{e}");
        assert!(exists(&zk, "/h/lock/one").await);
        assert_eq!(p.faults_fired(), 1);
        // The proxy saw the reply it lost: the creation is attributed.
        assert!(p
            .shared
            .ledger
            .lock()
            .iter()
            .any(|k| k.kind == OpKind::Create && k.path == "/h/lock/one"));
        // The budget is spent: the next create goes through.
        let mut c = raw(&p, "a").await;
        let req = CreateRequest {
            flags: 0,
            ..create("/h/lock/two")
        };
        assert_eq!(
            c.request(OpCode::Create2, &req).await.unwrap().header.err,
            0
        );
        p.request_fault(&fault("create", 1, false), None);
        let req = CreateRequest {
            flags: 0,
            ..create("/h/lock/three")
        };
        assert!(c.request(OpCode::Create2, &req).await.is_err());
        assert!(!exists(&zk, "/h/lock/three").await);
        assert_eq!(p.faults_fired(), 2);
    }

    fn with_verdict(op: &str, verdict: FaultVerdict) -> RequestFault {
        RequestFault {
            verdict,
            ..fault(op, 1, true)
        }
    }

    fn exists_request(xid: i32, path: &str) -> Bytes {
        request(
            xid,
            OpCode::Exists,
            &PathWatchRequest {
                path: path.into(),
                watch: false,
            },
        )
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn fail_answers_for_the_server_in_the_connections_order() {
        let (zk, p, mut c) = lock_dir_through_a_proxy().await;
        let seen = c.last_zxid;
        // Nothing outstanding: the proxy answers at once, with the newest
        // zxid the connection has seen, and the server never sees it.
        p.request_fault(
            &with_verdict("create", FaultVerdict::Fail(ErrorCode::NoAuth)),
            Some("a"),
        );
        let r = c
            .request(OpCode::Create2, &create("/h/lock/refused"))
            .await
            .unwrap();
        assert_eq!((r.header.err, r.header.zxid), (-102, seen));
        assert!(!exists(&zk, "/h/lock/refused").await);
        // Behind a request whose reply the server holds: the answer waits
        // for that reply, so the client sees its xids in order.
        p.request_fault(
            &with_verdict("exists", FaultVerdict::Delay(Duration::from_millis(300))),
            Some("a"),
        );
        p.request_fault(
            &with_verdict("create", FaultVerdict::Fail(ErrorCode::ConnectionLoss)),
            Some("a"),
        );
        c.send_frame(&exists_request(100, "/h/lock/x"))
            .await
            .unwrap();
        c.send_frame(&request(101, OpCode::Create2, &create("/h/lock/y")))
            .await
            .unwrap();
        c.send_frame(&exists_request(102, "/h")).await.unwrap();
        let mut order = Vec::new();
        for _ in 0..3 {
            let r = c.next_reply().await.unwrap().unwrap();
            order.push((r.header.xid, r.header.err));
        }
        assert_eq!(order, vec![(100, -101), (101, -4), (102, 0)]);
        assert!(!exists(&zk, "/h/lock/y").await);
        assert_eq!(p.faults_fired(), 3);
        // The connection goes on as before.
        mkdir(&mut c, "/h/lock/after").await;
        assert!(exists(&zk, "/h/lock/after").await);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn delay_applies_at_once_and_holds_the_reply_and_what_follows() {
        let (zk, p, mut c) = lock_dir_through_a_proxy().await;
        let hold = Duration::from_millis(600);
        p.request_fault(&with_verdict("create", FaultVerdict::Delay(hold)), None);
        let sent = std::time::Instant::now();
        c.send_frame(&request(
            50,
            OpCode::Create,
            &CreateRequest {
                flags: 0,
                ..create("/h/lock/slow")
            },
        ))
        .await
        .unwrap();
        c.send_frame(&exists_request(51, "/h")).await.unwrap();
        // The server applied the create while its reply is held.
        let applied = tokio::time::timeout(Duration::from_secs(5), async {
            while !exists(&zk, "/h/lock/slow").await {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
        assert!(applied.is_ok(), "the create reached the server");
        let first = c.next_reply().await.unwrap().unwrap();
        let second = c.next_reply().await.unwrap().unwrap();
        assert!(sent.elapsed() >= hold, "held for {:?}", sent.elapsed());
        assert_eq!(
            (first.header.xid, first.header.err, second.header.xid),
            (50, 0, 51)
        );
        // The ledger has the create (its reply was passed on).
        assert!(p
            .shared
            .ledger
            .lock()
            .iter()
            .any(|k| k.kind == OpKind::Create && k.path == "/h/lock/slow"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stall_holds_traffic_and_new_connections_until_resume() {
        let zk = zk_mock::ZkMock::start().await;
        let p = Proxies::new(vec![zk.addr()]);
        let mut c = raw(&p, "a").await;
        assert!(p.stall("a"));
        assert!(!p.stall("nobody"));
        c.set_read_timeout(Duration::from_millis(300));
        let get = PathWatchRequest {
            path: "/".into(),
            watch: false,
        };
        let e = c.request(OpCode::Exists, &get).await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut);
        // A new connection is held as well.
        let cs = p.connect_string("a", None).unwrap();
        let held = tokio::spawn(async move { RawClient::connect(addr(&cs), 4000).await });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!held.is_finished());
        assert!(p.resume("a"));
        // The request sent during the stall is delivered now.
        c.set_read_timeout(Duration::from_secs(3));
        let r = c.next_reply().await.unwrap().unwrap();
        assert_eq!((r.header.xid, r.header.err), (1, 0));
        let c2 = held.await.unwrap().unwrap();
        assert_ne!(c2.session_id, c.session_id);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn refusal_closes_new_connections_on_every_proxy() {
        let zk = zk_mock::ZkMock::start().await;
        let p = Proxies::new(vec![zk.addr()]);
        let mut before = raw(&p, "a").await;
        p.refuse(true);
        for client in ["a", "b"] {
            let cs = p.connect_string(client, None).unwrap();
            assert!(RawClient::connect(addr(&cs), 4000).await.is_err());
        }
        // An established connection is left alone.
        let get = PathWatchRequest {
            path: "/".into(),
            watch: false,
        };
        assert_eq!(
            before
                .request(OpCode::Exists, &get)
                .await
                .unwrap()
                .header
                .err,
            0
        );
        p.refuse(false);
        raw(&p, "b").await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn expiry_by_session_takeover() {
        let zk = zk_mock::ZkMock::start().await;
        let p = Proxies::new(vec![zk.addr()]);
        let mut c = raw(&p, "a").await;
        mkdir(&mut c, "/h").await;
        let eph = CreateRequest {
            flags: 1,
            ..create("/h/eph")
        };
        assert_eq!(c.request(OpCode::Create, &eph).await.unwrap().header.err, 0);
        let (session, passwd) = p.session("a").unwrap();
        assert!(p.expire("a").await);
        {
            let ledger = p.shared.ledger.lock();
            let mine: Vec<(OpKind, &str, i64)> = ledger
                .iter()
                .map(|k| (k.kind, k.path.as_str(), k.session))
                .collect();
            assert!(
                mine.contains(&(OpKind::Create, "/h/eph", session)),
                "{mine:?}"
            );
            assert!(!mine.iter().any(|k| k.0 != OpKind::Create), "{mine:?}");
        }
        // The server closed the client's connection when the session was taken over.
        assert!(c.next_reply().await.unwrap().is_none());
        assert!(!exists(&zk, "/h/eph").await);
        assert!(!zk.session_ids().contains(&session.into()));
        // Coming back through the proxy, the client learns its session expired.
        let cs = p.connect_string("a", None).unwrap();
        let req = ConnectRequest {
            time_out: 4000,
            session_id: session,
            passwd: Some(passwd),
            read_only: Some(false),
            ..Default::default()
        };
        let (_, resp) = RawClient::handshake(addr(&cs), &req).await.unwrap();
        assert_eq!(resp.map(|r| r.time_out), Some(0));
        // Nothing left to expire.
        assert!(!p.expire("a").await);
        assert!(!p.expire("nobody").await);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_observer_records_changes_in_order_and_cleans_up_first() {
        let zk = zk_mock::ZkMock::start().await;
        let mut c = RawClient::connect(zk.addr(), 4000).await.unwrap();
        for p in [
            "/h",
            "/h/x",
            "/h/x/lock",
            "/h/x/lock/old",
            "/h/x/lock.resource",
        ] {
            mkdir(&mut c, p).await;
        }
        let t = RealTarget::start(zk.addr(), "/h/x/lock", "/h/x/lock.resource")
            .await
            .unwrap();
        assert!(!exists(&zk, "/h/x/lock").await, "left-overs removed");
        for p in [
            "/h/x/lock",
            "/h/x/lock/n1",
            "/h/x/lock.resource",
            "/h/x/other",
        ] {
            mkdir(&mut c, p).await;
        }
        let set = zk_mock::proto::SetDataRequest {
            path: "/h/x/lock/n1".into(),
            data: Some(Bytes::from_static(b"v")),
            version: -1,
        };
        assert_eq!(
            c.request(OpCode::SetData, &set).await.unwrap().header.err,
            0
        );
        let del = DeleteRequest {
            path: "/h/x/lock/n1".into(),
            version: -1,
        };
        assert_eq!(c.request(OpCode::Delete, &del).await.unwrap().header.err, 0);
        let prefixes = ["/h/x/lock".to_string(), "/h/x/lock.resource".to_string()];
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        let h = loop {
            let h = t.history(&prefixes);
            if h.changes.len() >= 5 || tokio::time::Instant::now() > deadline {
                break h;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let got: Vec<(ChangeKind, &str)> = h
            .changes
            .iter()
            .map(|c| (c.kind, c.path.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (ChangeKind::Created, "/h/x/lock"),
                (ChangeKind::Created, "/h/x/lock/n1"),
                (ChangeKind::Created, "/h/x/lock.resource"),
                (ChangeKind::DataChanged, "/h/x/lock/n1"),
                (ChangeKind::Deleted, "/h/x/lock/n1"),
            ]
        );
        // No proxied session made these: no zxids, no sessions.
        assert!(h.changes.windows(2).all(|w| w[0].pos <= w[1].pos));
        assert!(h
            .changes
            .iter()
            .all(|c| c.zxid.is_none() && c.session.is_none()));
        assert!(h.notifications.is_none());
    }
}
