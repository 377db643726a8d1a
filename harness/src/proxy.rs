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
//! - expire: the session-takeover technique (`zk-protocol-facts.md` §7.5): a
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

use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinHandle};
use zk_mock::client::RawClient;
use zk_mock::codec::Record;
use zk_mock::proto::{
    decode_request, ConnectRequest, ConnectResponse, OpCode, ReplyHeader, RequestHeader,
};
use zk_mock::record::ChangeKind;
use zookeeper_client as zk;

use crate::fault::{FaultVerdict, RequestFault};
use crate::target::{Change, History};
use zk_mock::fault::OpFamily;

/// Frames larger than this close the connection (ZooKeeper's own limit is
/// `jute.maxbuffer`, 1 MiB by default; the proxy is more lenient).
const MAX_FRAME: usize = 64 << 20;

/// How long an expiry by takeover may take.
const TAKEOVER_TIMEOUT: Duration = Duration::from_secs(10);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The writes the proxies keep in their ledger (for the history).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpKind {
    /// create, create2, createContainer, createTTL.
    Create,
    /// delete.
    Delete,
    /// closeSession.
    Close,
}

impl OpKind {
    /// The kind of a request op code, if the ledger keeps it.
    fn of(op: i32) -> Option<OpKind> {
        match OpFamily::of(op)? {
            OpFamily::Create => Some(OpKind::Create),
            OpFamily::Delete => Some(OpKind::Delete),
            _ => None,
        }
    }
}

/// A request fault on the proxies: the shared [`RequestFault`], for one
/// client or anyone, with its counts.
#[derive(Debug, Clone)]
pub(crate) struct RequestRule {
    fault: RequestFault,
    client: Option<String>,
    remaining: u64,
    /// Matching requests seen (for `nth`).
    matched: u64,
    fired: u64,
}

/// What to do with one client frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Forward,
    /// Forward, then drop the reply with this xid and close.
    LoseReply(i32),
    /// Close the connection instead of forwarding.
    Drop,
}

/// Finds the first rule with budget left that matches and fires (its n-th
/// match, when it has `nth`), and spends one. True: apply the request and
/// lose its reply; false: drop it.
fn match_rules(
    rules: &mut [RequestRule],
    client: &str,
    op: i32,
    path: Option<&str>,
) -> Option<bool> {
    for r in rules.iter_mut() {
        if r.remaining == 0
            || !r.fault.matches(op, path)
            || r.client.as_deref().is_some_and(|c| c != client)
        {
            continue;
        }
        r.matched += 1;
        if r.fault.nth.is_some_and(|n| n != r.matched) {
            continue;
        }
        r.remaining -= 1;
        r.fired += 1;
        return Some(r.fault.verdict == FaultVerdict::LoseReply);
    }
    None
}

/// A request on its way to the server.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Write {
    xid: i32,
    op: i32,
    /// Kept in the ledger when confirmed.
    kind: Option<OpKind>,
    path: Option<String>,
}

/// The request in a frame (header and body), if it is one the proxies
/// look at: closeSession, or an op of a fault family.
fn inspect(frame: &[u8]) -> Option<Write> {
    let header = RequestHeader::decode(frame).ok()?;
    if header.op_type == OpCode::CloseSession as i32 {
        return Some(Write {
            xid: header.xid,
            op: header.op_type,
            kind: Some(OpKind::Close),
            path: None,
        });
    }
    OpFamily::of(header.op_type)?;
    let path = decode_request(header.op_type, frame.get(8..)?)
        .ok()
        .and_then(|r| r.path().map(str::to_string));
    Some(Write {
        xid: header.xid,
        op: header.op_type,
        kind: OpKind::of(header.op_type),
        path,
    })
}

/// What the request faults make of a request from `client`.
fn decide(rules: &Mutex<Vec<RequestRule>>, client: &str, w: &Write) -> Action {
    let mut rules = lock(rules);
    match match_rules(&mut rules, client, w.op, w.path.as_deref()) {
        Some(true) => Action::LoseReply(w.xid),
        Some(false) => Action::Drop,
        None => Action::Forward,
    }
}

/// Classifies a request frame (header and body) for `client`.
#[cfg(test)]
fn classify(rules: &Mutex<Vec<RequestRule>>, client: &str, frame: &[u8]) -> Action {
    inspect(frame).map_or(Action::Forward, |w| decide(rules, client, &w))
}

/// A create, delete or closeSession the server confirmed to a proxied
/// session: which session, and the zxid of the transaction (from the reply
/// header).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Known {
    kind: OpKind,
    /// The node (empty for closeSession).
    path: String,
    zxid: i64,
    session: i64,
}

/// Who made a change, and at which zxid, as far as the proxies know.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Who {
    session: Option<i64>,
    zxid: Option<i64>,
    by_session_end: bool,
}

impl Who {
    fn known(session: i64, zxid: i64) -> Who {
        Who {
            session: Some(session),
            zxid: Some(zxid),
            by_session_end: false,
        }
    }
}

/// Who made each change the observer saw, as far as the proxies know:
/// the creator of a node (from the create's reply), and for a deletion the
/// session whose delete succeeded during that node's lifetime — or, when no
/// proxied session deleted it, its creator: by its own closeSession, or
/// with `by_session_end` (the server removed an ephemeral when the session
/// expired or was taken over and closed). The zxid comes with it where a
/// reply told it.
fn attribute(seen: &[(ChangeKind, String)], known: &[Known]) -> Vec<Who> {
    let mut creates: BTreeMap<&str, Vec<&Known>> = BTreeMap::new();
    let mut deletes: BTreeMap<&str, Vec<&Known>> = BTreeMap::new();
    let mut closes: BTreeMap<i64, i64> = BTreeMap::new();
    for k in known {
        match k.kind {
            OpKind::Create => creates.entry(k.path.as_str()).or_default().push(k),
            OpKind::Delete => deletes.entry(k.path.as_str()).or_default().push(k),
            OpKind::Close => {
                closes.insert(k.session, k.zxid);
            }
        }
    }
    for v in creates.values_mut() {
        v.sort_by_key(|k| k.zxid);
    }
    // Per path: how many creations seen so far.
    let mut lifetimes: BTreeMap<&str, usize> = BTreeMap::new();
    seen.iter()
        .map(|(kind, path)| {
            let path = path.as_str();
            let made = creates.get(path);
            match kind {
                ChangeKind::Created => {
                    let n = lifetimes.entry(path).or_default();
                    *n += 1;
                    match made.and_then(|c| c.get(*n - 1)) {
                        Some(k) => Who::known(k.session, k.zxid),
                        None => Who::default(),
                    }
                }
                ChangeKind::Deleted => {
                    let n = lifetimes.get(path).copied().unwrap_or(0);
                    let Some(this) = made.and_then(|c| c.get(n.wrapping_sub(1))) else {
                        return Who::default();
                    };
                    let next = made.and_then(|c| c.get(n)).map_or(i64::MAX, |k| k.zxid);
                    let by = deletes
                        .get(path)
                        .and_then(|d| d.iter().find(|k| k.zxid > this.zxid && k.zxid < next));
                    let closed = closes
                        .get(&this.session)
                        .filter(|z| **z > this.zxid && **z < next);
                    match (by, closed) {
                        (Some(k), _) => Who::known(k.session, k.zxid),
                        (None, Some(z)) => Who::known(this.session, *z),
                        (None, None) => Who {
                            session: Some(this.session),
                            zxid: None,
                            by_session_end: true,
                        },
                    }
                }
                _ => Who::default(),
            }
        })
        .collect()
}

/// State shared by every proxy of one target.
#[derive(Debug)]
struct Shared {
    server: SocketAddr,
    refusing: AtomicBool,
    rules: Mutex<Vec<RequestRule>>,
    next_conn: AtomicU64,
    /// Creates and deletes confirmed to the clients.
    ledger: Mutex<Vec<Known>>,
}

/// Whether a client's traffic may flow.
#[derive(Debug, Clone, Copy, Default)]
struct Gate {
    /// Nothing is forwarded, no new connection goes through.
    stalled: bool,
    /// New connections wait (a takeover is under way).
    holds: u32,
}

/// One client's proxy.
#[derive(Debug)]
struct ClientProxy {
    name: String,
    addr: SocketAddr,
    /// The local address its connections to the server come from.
    source: Option<std::net::IpAddr>,
    /// The session and password of the last accepted ConnectResponse.
    session: Mutex<Option<(i64, Bytes)>>,
    gate: watch::Sender<Gate>,
    conns: Mutex<BTreeMap<u64, AbortHandle>>,
    accept: Mutex<Option<AbortHandle>>,
}

impl ClientProxy {
    fn close_all(&self) -> usize {
        let conns = std::mem::take(&mut *lock(&self.conns));
        conns
            .into_values()
            .filter(|h| !h.is_finished())
            .map(|h| h.abort())
            .count()
    }
}

/// The proxies of one target, by client name.
#[derive(Debug)]
pub(crate) struct Proxies {
    shared: Arc<Shared>,
    clients: Mutex<BTreeMap<String, Arc<ClientProxy>>>,
}

impl Proxies {
    pub(crate) fn new(server: SocketAddr) -> Proxies {
        Proxies {
            shared: Arc::new(Shared {
                server,
                refusing: AtomicBool::new(false),
                rules: Mutex::default(),
                next_conn: AtomicU64::new(0),
                ledger: Mutex::default(),
            }),
            clients: Mutex::default(),
        }
    }

    fn get(&self, client: &str) -> Option<Arc<ClientProxy>> {
        lock(&self.clients).get(client).cloned()
    }

    /// The client's proxy, started on first use.
    fn proxy(&self, client: &str) -> Result<Arc<ClientProxy>, String> {
        let mut clients = lock(&self.clients);
        if let Some(p) = clients.get(client) {
            return Ok(p.clone());
        }
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|e| format!("proxy for {client}: binding 127.0.0.1:0: {e}"))?;
        let addr = std_listener
            .local_addr()
            .map_err(|e| format!("proxy for {client}: {e}"))?;
        let listener =
            TcpListener::from_std(std_listener).map_err(|e| format!("proxy for {client}: {e}"))?;
        let proxy = Arc::new(ClientProxy {
            name: client.to_string(),
            addr,
            source: source_for(self.shared.server, clients.len()),
            session: Mutex::default(),
            gate: watch::Sender::new(Gate::default()),
            conns: Mutex::default(),
            accept: Mutex::default(),
        });
        let task = tokio::spawn(accept_loop(listener, proxy.clone(), self.shared.clone()));
        *lock(&proxy.accept) = Some(task.abort_handle());
        clients.insert(client.to_string(), proxy.clone());
        Ok(proxy)
    }

    pub(crate) fn connect_string(&self, client: &str) -> Result<String, String> {
        Ok(self.proxy(client)?.addr.to_string())
    }

    /// The session the client's last connection was given.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn session(&self, client: &str) -> Option<(i64, Bytes)> {
        self.get(client).and_then(|p| lock(&p.session).clone())
    }

    pub(crate) fn disconnect(&self, client: &str) -> bool {
        self.get(client).is_some_and(|p| p.close_all() > 0)
    }

    pub(crate) fn stall(&self, client: &str) -> bool {
        self.get(client)
            .map(|p| p.gate.send_modify(|g| g.stalled = true))
            .is_some()
    }

    pub(crate) fn resume(&self, client: &str) -> bool {
        self.get(client)
            .map(|p| p.gate.send_modify(|g| g.stalled = false))
            .is_some()
    }

    pub(crate) fn refuse(&self, on: bool) {
        self.shared.refusing.store(on, Ordering::SeqCst);
    }

    pub(crate) fn request_fault(
        &self,
        fault: &RequestFault,
        client: Option<&str>,
    ) -> Result<(), String> {
        if !matches!(
            fault.verdict,
            FaultVerdict::LoseReply | FaultVerdict::DropRequest
        ) {
            return Err(format!(
                "the real-ZooKeeper proxy cannot inject `{}` (only lose_reply and drop_request)",
                fault.verdict.name()
            ));
        }
        lock(&self.shared.rules).push(RequestRule {
            fault: fault.clone(),
            client: client.map(str::to_string),
            remaining: fault.times,
            matched: 0,
            fired: 0,
        });
        Ok(())
    }

    pub(crate) fn faults_fired(&self) -> u64 {
        lock(&self.shared.rules).iter().map(|r| r.fired).sum()
    }

    /// Ends the client's session by takeover; true once the server
    /// acknowledged the closeSession.
    pub(crate) async fn expire(&self, client: &str) -> bool {
        let Some(proxy) = self.get(client) else {
            return false;
        };
        let Some((session, passwd)) = lock(&proxy.session).clone() else {
            return false;
        };
        proxy.gate.send_modify(|g| g.holds += 1);
        let r = tokio::time::timeout(
            TAKEOVER_TIMEOUT,
            takeover(self.shared.server, session, passwd),
        )
        .await;
        proxy.gate.send_modify(|g| g.holds -= 1);
        match r {
            Ok(Ok(done)) => done,
            Ok(Err(e)) => {
                tracing::warn!("expiring {client}'s session {session:#x} by takeover: {e}");
                false
            }
            Err(_) => {
                tracing::warn!("expiring {client}'s session {session:#x} by takeover timed out");
                false
            }
        }
    }

    fn shutdown(&self) {
        for p in std::mem::take(&mut *lock(&self.clients)).into_values() {
            if let Some(a) = lock(&p.accept).take() {
                a.abort();
            }
            p.close_all();
        }
    }
}

impl Drop for Proxies {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// How many clients' connections share one source address: ZooKeeper
/// refuses more than `maxClientCnxns` (60 by default) connections from one
/// address, and a client may briefly have two (the old one closing).
const CLIENTS_PER_SOURCE: usize = 20;

/// The source address of the `index`th proxy's connections to a server on
/// the loopback: 127.0.0.1 for the first clients, then other loopback
/// addresses (all of 127/8 is local on Linux), so a scenario with
/// a thousand clients does not need `maxClientCnxns=0` on the server.
fn source_for(server: SocketAddr, index: usize) -> Option<std::net::IpAddr> {
    let SocketAddr::V4(v4) = server else {
        return None;
    };
    if !v4.ip().is_loopback() {
        return None;
    }
    let group = index / CLIENTS_PER_SOURCE;
    if group == 0 {
        return None;
    }
    let [hi, lo] = (group as u16).to_be_bytes();
    Some(std::net::Ipv4Addr::new(127, 1, hi, lo.max(1)).into())
}

/// Connects to `server`, from `source` if it can bind there.
async fn connect_from(
    source: Option<std::net::IpAddr>,
    server: SocketAddr,
) -> std::io::Result<TcpStream> {
    if let Some(ip) = source {
        let bound = tokio::net::TcpSocket::new_v4()
            .and_then(|s| s.bind(SocketAddr::new(ip, 0)).map(|()| s));
        if let Ok(sock) = bound {
            if let Ok(s) = sock.connect(server).await {
                return Ok(s);
            }
        }
    }
    TcpStream::connect(server).await
}

/// Re-attaches `session` on a connection of our own and closes it there.
/// `Ok(false)` if the server no longer knows the session.
async fn takeover(server: SocketAddr, session: i64, passwd: Bytes) -> std::io::Result<bool> {
    let req = ConnectRequest {
        protocol_version: 0,
        last_zxid_seen: 0,
        time_out: 10_000,
        session_id: session,
        passwd: Some(passwd),
        read_only: Some(false),
    };
    let (raw, resp) = RawClient::handshake(server, &req).await?;
    match resp {
        Some(r) if r.time_out > 0 && r.session_id == session => {}
        _ => return Ok(false),
    }
    let reply = raw.close().await?;
    Ok(reply.header.err == 0)
}

async fn accept_loop(listener: TcpListener, proxy: Arc<ClientProxy>, shared: Arc<Shared>) {
    loop {
        let Ok((sock, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        if shared.refusing.load(Ordering::SeqCst) {
            drop(sock);
            continue;
        }
        let id = shared.next_conn.fetch_add(1, Ordering::SeqCst);
        let task = tokio::spawn(serve(sock, proxy.clone(), shared.clone(), id));
        let mut conns = lock(&proxy.conns);
        conns.retain(|_, h| !h.is_finished());
        conns.insert(id, task.abort_handle());
    }
}

/// One proxied connection, until either side closes or a fault ends it.
async fn serve(client: TcpStream, proxy: Arc<ClientProxy>, shared: Arc<Shared>, id: u64) {
    let mut gate = proxy.gate.subscribe();
    if gate.wait_for(|g| !g.stalled && g.holds == 0).await.is_err() {
        return;
    }
    let Ok(server) = connect_from(proxy.source, shared.server).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    let lost: Mutex<HashSet<i32>> = Mutex::default();
    let pending: Mutex<BTreeMap<i32, Write>> = Mutex::default();
    let conn = Conn {
        proxy: &proxy,
        shared: &shared,
        lost: &lost,
        pending: &pending,
    };
    tokio::select! {
        _ = client_to_server(cr, sw, &conn) => {}
        _ = server_to_client(sr, cw, &conn) => {}
    }
    lock(&proxy.conns).remove(&id);
}

async fn open(gate: &mut watch::Receiver<Gate>) -> bool {
    gate.wait_for(|g| !g.stalled).await.is_ok()
}

/// What to do with a frame in transit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Forward,
    /// Forward what came before it, not this frame, and close the connection.
    Cut,
}

/// Scans the whole frames at the front of `buf` (length prefix included),
/// asking `on_frame` about each body. Returns how many bytes may go on and
/// whether the connection must close after them; a length outside
/// `0..=MAX_FRAME` closes it too. The bytes of a partial frame stay.
fn scan(buf: &[u8], on_frame: &mut impl FnMut(&[u8]) -> Verdict) -> (usize, bool) {
    let mut end = 0;
    while buf.len() - end >= 4 {
        let len = i32::from_be_bytes([buf[end], buf[end + 1], buf[end + 2], buf[end + 3]]);
        let Ok(len) = usize::try_from(len) else {
            return (end, true);
        };
        if len > MAX_FRAME {
            return (end, true);
        }
        if buf.len() - end - 4 < len {
            break;
        }
        if on_frame(&buf[end + 4..end + 4 + len]) == Verdict::Cut {
            return (end, true);
        }
        end += 4 + len;
    }
    (end, false)
}

/// Moves frames from `rd` to `wr`, unchanged and whole, while the client's
/// gate is open, until either side closes or `on_frame` cuts.
async fn pump(
    mut rd: OwnedReadHalf,
    mut wr: OwnedWriteHalf,
    mut gate: watch::Receiver<Gate>,
    mut on_frame: impl FnMut(&[u8]) -> Verdict,
) {
    let mut buf = BytesMut::with_capacity(16 * 1024);
    loop {
        if !open(&mut gate).await {
            return;
        }
        match rd.read_buf(&mut buf).await {
            Ok(n) if n > 0 => {}
            _ => return,
        }
        let (end, cut) = scan(&buf, &mut on_frame);
        if end > 0 {
            if !open(&mut gate).await || wr.write_all(&buf[..end]).await.is_err() {
                return;
            }
            buf.advance(end);
        }
        if cut {
            return;
        }
        // Room for the rest of a large partial frame.
        if buf.len() >= 4 {
            let len = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
            if let Ok(len) = usize::try_from(len) {
                buf.reserve((4 + len.min(MAX_FRAME)).saturating_sub(buf.len()));
            }
        }
    }
}

/// What both directions of one connection share.
struct Conn<'a> {
    proxy: &'a ClientProxy,
    shared: &'a Shared,
    /// Requests whose reply is to be lost.
    lost: &'a Mutex<HashSet<i32>>,
    /// Creates and deletes awaiting their reply, by xid.
    pending: &'a Mutex<BTreeMap<i32, Write>>,
}

async fn client_to_server(rd: OwnedReadHalf, wr: OwnedWriteHalf, c: &Conn<'_>) {
    let mut first = true;
    pump(rd, wr, c.proxy.gate.subscribe(), |frame| {
        if std::mem::take(&mut first) {
            // The ConnectRequest.
            return Verdict::Forward;
        }
        let Some(w) = inspect(frame) else {
            return Verdict::Forward;
        };
        let action = decide(&c.shared.rules, &c.proxy.name, &w);
        if action == Action::Drop {
            tracing::debug!(
                "proxy {}: dropping a request and the connection",
                c.proxy.name
            );
            return Verdict::Cut;
        }
        if let Action::LoseReply(xid) = action {
            lock(c.lost).insert(xid);
        }
        if w.kind.is_some() {
            lock(c.pending).insert(w.xid, w);
        }
        Verdict::Forward
    })
    .await
}

async fn server_to_client(rd: OwnedReadHalf, wr: OwnedWriteHalf, c: &Conn<'_>) {
    let mut first = true;
    let mut session = None;
    pump(rd, wr, c.proxy.gate.subscribe(), |frame| {
        if std::mem::take(&mut first) {
            if let Ok(resp) = ConnectResponse::decode(frame) {
                if resp.session_id != 0 && resp.time_out > 0 {
                    session = Some(resp.session_id);
                    *lock(&c.proxy.session) =
                        Some((resp.session_id, resp.passwd.clone().unwrap_or_default()));
                }
            }
            return Verdict::Forward;
        }
        let Ok((body, h)) = ReplyHeader::parse(frame) else {
            return Verdict::Forward;
        };
        if h.xid < 0 {
            return Verdict::Forward;
        }
        let write = lock(c.pending).remove(&h.xid);
        if let (Some(w), Some(session), 0) = (write, session, h.err) {
            // A create's reply starts with the path it created.
            let path = match w.kind {
                Some(OpKind::Create) => zk_mock::codec::jute::ustring(body).ok().map(|(_, p)| p),
                Some(OpKind::Delete) => w.path,
                Some(OpKind::Close) => Some(String::new()),
                None => None,
            };
            if let (Some(path), Some(kind)) = (path, w.kind) {
                lock(&c.shared.ledger).push(Known {
                    kind,
                    path,
                    zxid: h.zxid,
                    session,
                });
            }
        }
        if lock(c.lost).remove(&h.xid) {
            tracing::debug!("proxy {}: losing the reply to xid {}", c.proxy.name, h.xid);
            return Verdict::Cut;
        }
        Verdict::Forward
    })
    .await
}

/// The observer session and what it saw.
struct Observer {
    client: zk::Client,
    seen: Arc<Mutex<Vec<(ChangeKind, String)>>>,
    notes: Arc<Mutex<Vec<String>>>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observer")
            .field("session", &self.client.session_id())
            .field("seen", &lock(&self.seen).len())
            .finish()
    }
}

/// The parent of `path` ("/" for a top-level node).
fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// Deletes `path` and everything below it; a missing node is fine.
async fn delete_tree(c: &zk::Client, path: &str) -> Result<(), zk::Error> {
    for _ in 0..10 {
        let children = match c.list_children(path).await {
            Ok(ch) => ch,
            Err(zk::Error::NoNode) => return Ok(()),
            Err(e) => return Err(e),
        };
        for child in children {
            let p = if path == "/" {
                format!("/{child}")
            } else {
                format!("{path}/{child}")
            };
            Box::pin(delete_tree(c, &p)).await?;
        }
        match c.delete(path, None).await {
            Ok(()) | Err(zk::Error::NoNode) => return Ok(()),
            // Someone (a session of an earlier run) added a child meanwhile.
            Err(zk::Error::NotEmpty) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(zk::Error::NotEmpty)
}

impl Observer {
    async fn start(server: SocketAddr, lock_dir: &str, res_dir: &str) -> Result<Observer, String> {
        let cs = server.to_string();
        let client = zk::Client::connector()
            .with_session_timeout(Duration::from_secs(10))
            .connect(&cs)
            .await
            .map_err(|e| format!("observer session to {cs}: {e}"))?;
        for dir in [lock_dir, res_dir] {
            delete_tree(&client, dir)
                .await
                .map_err(|e| format!("removing {dir} left by an earlier run: {e}"))?;
        }
        let root = parent(lock_dir).to_string();
        if root != "/" {
            let opts = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
            match client.mkdir(&root, &opts).await {
                Ok(()) | Err(zk::Error::NodeExists) => {}
                Err(e) => return Err(format!("creating {root}: {e}")),
            }
        }
        let mut watcher = client
            .watch(&root, zk::AddWatchMode::PersistentRecursive)
            .await
            .map_err(|e| format!("watching {root} (persistent, recursive): {e}"))?;
        let seen: Arc<Mutex<Vec<(ChangeKind, String)>>> = Arc::default();
        let notes: Arc<Mutex<Vec<String>>> = Arc::default();
        let (seen2, notes2) = (seen.clone(), notes.clone());
        let task = tokio::spawn(async move {
            loop {
                let ev = watcher.changed().await;
                let kind = match ev.event_type {
                    zk::EventType::NodeCreated => ChangeKind::Created,
                    zk::EventType::NodeDeleted => ChangeKind::Deleted,
                    zk::EventType::NodeDataChanged => ChangeKind::DataChanged,
                    zk::EventType::NodeChildrenChanged => continue,
                    zk::EventType::Session => {
                        let n = lock(&seen2).len();
                        lock(&notes2).push(format!(
                            "observer session {:?} after {n} changes (changes may be missing)",
                            ev.session_state
                        ));
                        if ev.session_state.is_terminated() {
                            return;
                        }
                        continue;
                    }
                };
                lock(&seen2).push((kind, ev.path));
            }
        });
        Ok(Observer {
            client,
            seen,
            notes,
            task,
        })
    }

    fn history(&self, prefixes: &[String], known: &[Known]) -> History {
        let under = |p: &str| {
            prefixes.iter().any(|x| {
                p == x
                    || p.strip_prefix(x.as_str())
                        .is_some_and(|r| r.starts_with('/'))
            })
        };
        let seen = lock(&self.seen);
        let who = attribute(&seen, known);
        let mut changes = Vec::new();
        let mut text = Vec::new();
        // The order: the zxid where a reply told it, else the last zxid
        // known before it (arrival order is zxid order).
        let mut last = 0;
        for ((kind, path), w) in seen.iter().zip(who) {
            last = w.zxid.unwrap_or(last).max(last);
            if !under(path) {
                continue;
            }
            let zxid = w
                .zxid
                .map_or_else(|| format!("~{last:#x}"), |z| format!("{z:#x}"));
            let by = match (w.session, w.by_session_end) {
                (Some(s), true) => format!(" (session {s:#x} ended)"),
                (Some(s), false) => format!(" by session {s:#x}"),
                (None, _) => String::new(),
            };
            text.push(format!("zxid {zxid} {kind:?} {path}{by}"));
            changes.push(Change {
                pos: last,
                zxid: w.zxid,
                session: w.session,
                path: path.clone(),
                kind: *kind,
                by_session_end: w.by_session_end,
            });
        }
        text.extend(lock(&self.notes).iter().map(|n| format!("{n} sess ")));
        History {
            changes,
            notifications: None,
            text,
        }
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A real ZooKeeper behind per-client proxies, with an observer session.
#[derive(Debug)]
pub(crate) struct RealTarget {
    server: SocketAddr,
    proxies: Proxies,
    observer: Observer,
}

impl RealTarget {
    /// Connects the observer, removes what an earlier run of the scenario
    /// left under its lock and resource directories, and starts watching.
    pub(crate) async fn start(
        server: SocketAddr,
        lock_dir: &str,
        res_dir: &str,
    ) -> Result<RealTarget, String> {
        let observer = Observer::start(server, lock_dir, res_dir).await?;
        Ok(RealTarget {
            server,
            proxies: Proxies::new(server),
            observer,
        })
    }
    pub(crate) fn server_connect_string(&self) -> String {
        self.server.to_string()
    }
    pub(crate) async fn connect_string(&self, client: &str) -> Result<String, String> {
        self.proxies.connect_string(client)
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
    pub(crate) fn request_fault(
        &self,
        fault: &RequestFault,
        client: Option<&str>,
    ) -> Result<(), String> {
        self.proxies.request_fault(fault, client)
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
    /// by the observer's `exists` (ephemeralOwner, czxid).
    pub(crate) async fn lock_node(
        &self,
        session: i64,
        dir: &str,
        hint: Option<&str>,
    ) -> Option<(String, i64)> {
        let prefix = format!("{dir}/");
        let c = &self.observer.client;
        let owned = |stat: &zk::Stat| stat.ephemeral_owner == session;
        if let Some(h) = hint.filter(|h| h.starts_with(&prefix)) {
            if let Ok(Some(stat)) = c.check_stat(h).await {
                if owned(&stat) {
                    return Some((h.to_string(), stat.czxid));
                }
            }
        }
        let mut made: Vec<Known> = lock(&self.proxies.shared.ledger)
            .iter()
            .filter(|k| {
                k.kind == OpKind::Create && k.session == session && k.path.starts_with(&prefix)
            })
            .cloned()
            .collect();
        made.sort_by_key(|k| std::cmp::Reverse(k.zxid));
        for k in made {
            if let Ok(Some(stat)) = c.check_stat(&k.path).await {
                if owned(&stat) {
                    return Some((k.path, stat.czxid));
                }
            }
        }
        // A walk of `dir`, for creates whose replies were lost.
        crate::target::ephemerals_under(c, dir)
            .await
            .ok()?
            .into_iter()
            .filter(|(_, st)| owned(st))
            .max_by_key(|(_, st)| st.czxid)
            .map(|(p, st)| (p, st.czxid))
    }

    pub(crate) fn history(&self, prefixes: &[String]) -> History {
        let known = lock(&self.proxies.shared.ledger).clone();
        self.observer.history(prefixes, &known)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zk_mock::codec::frame;
    use zk_mock::proto::{Acl, CreateRequest, DeleteRequest, PathWatchRequest};

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
            acl: Acl::open_unsafe(),
            flags: 3,
        }
    }

    fn fault(op: &str, times: u64, apply: bool) -> RequestFault {
        RequestFault {
            family: OpFamily::parse(op).unwrap(),
            path: zk_mock::fault::PathMatch::Glob("/h/lock/**".into()),
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
        RequestRule {
            fault: fault(op, times, apply),
            client: client.map(str::to_string),
            remaining: times,
            matched: 0,
            fired: 0,
        }
    }

    #[test]
    fn scan_passes_whole_frames_and_keeps_a_partial_one() {
        let mut bytes = BytesMut::new();
        bytes.extend_from_slice(&frame(b"one"));
        bytes.extend_from_slice(&frame(b""));
        bytes.extend_from_slice(&frame(b"three"));
        let whole = bytes.len();
        bytes.extend_from_slice(&frame(b"partial")[..6]);
        let mut seen = Vec::new();
        let (end, cut) = scan(&bytes, &mut |f: &[u8]| {
            seen.push(f.to_vec());
            Verdict::Forward
        });
        assert_eq!((end, cut), (whole, false));
        assert_eq!(seen, vec![b"one".to_vec(), vec![], b"three".to_vec()]);
        // Fewer than four bytes: nothing yet.
        assert_eq!(
            scan(&[0, 0, 0], &mut |_: &[u8]| Verdict::Forward),
            (0, false)
        );
    }

    #[test]
    fn scan_cuts_before_the_frame_it_is_told_to_and_on_bad_lengths() {
        let mut bytes = BytesMut::new();
        bytes.extend_from_slice(&frame(b"keep"));
        bytes.extend_from_slice(&frame(b"lose"));
        bytes.extend_from_slice(&frame(b"after"));
        let (end, cut) = scan(&bytes, &mut |f: &[u8]| {
            if f == b"lose" {
                Verdict::Cut
            } else {
                Verdict::Forward
            }
        });
        assert_eq!((end, cut), (8, true));
        let mut bad = frame(b"ok").to_vec();
        bad.extend_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(scan(&bad, &mut |_: &[u8]| Verdict::Forward), (6, true));
        let huge = ((MAX_FRAME + 1) as i32).to_be_bytes();
        assert_eq!(scan(&huge, &mut |_: &[u8]| Verdict::Forward), (0, true));
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
                Some(true)
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
        assert_eq!(rules[0].fired, 0);
        let mut rules = vec![rule(OpKind::Delete, None, 1, false)];
        assert_eq!(
            match_rules(&mut rules, "c", OpCode::Delete as i32, Some("/h/lock/x")),
            Some(false)
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
            Some(false)
        );
        assert_eq!(
            match_rules(&mut rules, "other", create2, Some("/h/lock/a")),
            None
        );
        // The named client: twice, then nothing left.
        assert_eq!(
            match_rules(&mut rules, "unlucky", create2, Some("/h/lock/a")),
            Some(true)
        );
        assert_eq!(
            match_rules(&mut rules, "unlucky", create2, Some("/h/lock/a")),
            Some(true)
        );
        assert_eq!(
            match_rules(&mut rules, "unlucky", create2, Some("/h/lock/a")),
            None
        );
        assert_eq!(
            rules.iter().map(|r| r.fired).collect::<Vec<_>>(),
            vec![2, 1]
        );
        assert_eq!(rules.iter().map(|r| r.remaining).sum::<u64>(), 0);
    }

    #[test]
    fn classify_reads_the_request_header_and_path() {
        let p = Proxies::new("127.0.0.1:1".parse().unwrap());
        p.request_fault(&fault("create", 1, true), Some("c"))
            .unwrap();
        p.request_fault(&fault("delete", 1, false), None).unwrap();
        let mut fail = fault("setData", 1, true);
        fail.verdict = FaultVerdict::Fail(zk_mock::proto::ErrorCode::NoNode);
        assert!(p.request_fault(&fail, None).is_err());
        let rules = &p.shared.rules;
        let get = request(
            5,
            OpCode::GetChildren2,
            &PathWatchRequest {
                path: "/h/lock".into(),
                watch: true,
            },
        );
        assert_eq!(classify(rules, "c", &get), Action::Forward);
        let c = request(7, OpCode::Create2, &create("/h/lock/_c_x-lock-"));
        assert_eq!(classify(rules, "d", &c), Action::Forward);
        assert_eq!(classify(rules, "c", &c), Action::LoseReply(7));
        assert_eq!(classify(rules, "c", &c), Action::Forward);
        let d = request(
            9,
            OpCode::Delete,
            &DeleteRequest {
                path: "/h/lock/_c_x-lock-0000000001".into(),
                version: -1,
            },
        );
        assert_eq!(classify(rules, "d", &d), Action::Drop);
        assert_eq!(classify(rules, "d", &d), Action::Forward);
        // Garbage and pings go through.
        assert_eq!(classify(rules, "c", &[1, 2]), Action::Forward);
        let ping = RequestHeader {
            xid: -2,
            op_type: OpCode::Ping as i32,
        }
        .to_bytes();
        assert_eq!(classify(rules, "c", &ping), Action::Forward);
        assert_eq!(p.faults_fired(), 2);
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
        let cs = p.connect_string(client).unwrap();
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

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_proxy_forwards_and_remembers_the_session() {
        let zk = zk_mock::ZkMock::start().await;
        let p = Proxies::new(zk.addr());
        let cs1 = p.connect_string("a").unwrap();
        assert_eq!(p.connect_string("a").unwrap(), cs1);
        assert_ne!(p.connect_string("b").unwrap(), cs1);
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
        let zk = zk_mock::ZkMock::start().await;
        let p = Proxies::new(zk.addr());
        let mut c = raw(&p, "a").await;
        mkdir(&mut c, "/h").await;
        mkdir(&mut c, "/h/lock").await;
        p.request_fault(&fault("create", 1, true), Some("a"))
            .unwrap();
        let req = CreateRequest {
            flags: 0,
            ..create("/h/lock/one")
        };
        let e = c.request(OpCode::Create2, &req).await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof, "{e}");
        assert!(exists(&zk, "/h/lock/one").await);
        assert_eq!(p.faults_fired(), 1);
        // The proxy saw the reply it lost: the creation is attributed.
        assert!(lock(&p.shared.ledger)
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
        p.request_fault(&fault("create", 1, false), None).unwrap();
        let req = CreateRequest {
            flags: 0,
            ..create("/h/lock/three")
        };
        assert!(c.request(OpCode::Create2, &req).await.is_err());
        assert!(!exists(&zk, "/h/lock/three").await);
        assert_eq!(p.faults_fired(), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stall_holds_traffic_and_new_connections_until_resume() {
        let zk = zk_mock::ZkMock::start().await;
        let p = Proxies::new(zk.addr());
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
        let cs = p.connect_string("a").unwrap();
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
        let p = Proxies::new(zk.addr());
        let mut before = raw(&p, "a").await;
        p.refuse(true);
        for client in ["a", "b"] {
            let cs = p.connect_string(client).unwrap();
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
        let p = Proxies::new(zk.addr());
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
            let ledger = lock(&p.shared.ledger);
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
        assert!(!zk.session_ids().contains(&session));
        // Coming back through the proxy, the client learns its session expired.
        let cs = p.connect_string("a").unwrap();
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

    /// The whole real-target path (proxies, takeover, observer, attribution)
    /// with zk-mock standing in for ZooKeeper; `tests/real_target.rs` does
    /// the same against a real server.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_scenario_through_the_real_target_path() {
        let zk = zk_mock::ZkMock::builder()
            .tick_time(100)
            .min_session_timeout(200)
            .start()
            .await
            .unwrap();
        let text = "server: {session_timeout: 1s}
lock: {recipe: predecessor}
clients:
  - name: holder
    hold: 2s
    on_expiry: stop
  - name: waiter
    count: 2
    start: 100ms
    hold: 20ms
timeline:
  - on: {waiting: waiter}
    expire: holder
invariants:
  liveness: 5s
";
        let loaded =
            crate::scenario::parse(std::path::Path::new("through-proxy.yaml"), text).unwrap();
        let opts = crate::runner::RunOptions {
            target: crate::target::TargetSpec::Real(zk.addr()),
            seed: Some(1),
            implementation: crate::implementation::Implementation::ZkLock,
            progress: None,
        };
        let o = crate::runner::run(&loaded, &opts).await;
        assert_eq!(
            o.status,
            crate::report::Status::Passed,
            "{}",
            crate::report::failure_details(&o)
        );
        let lost = o
            .invariants
            .iter()
            .find(|i| i.name == "lost_noticed")
            .unwrap();
        assert!(lost.checked && lost.held, "{lost:?}");
        assert!(
            o.handoffs.iter().any(|h| h.by_session_end),
            "{:#?}",
            o.handoffs
        );
        assert!(o
            .faults
            .iter()
            .any(|f| f.action == "expire" && f.clients == ["holder"]));
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
