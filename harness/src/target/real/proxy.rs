//! The per-client TCP proxies: framing, request faults, stalls, refusals.

use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::AbortHandle;
use zk_mock::codec::Record;
use zk_mock::proto::{decode_request, ConnectResponse, OpCode, ReplyHeader, RequestHeader};

use super::observer::{Known, OpKind};
use super::takeover::{connect_from, source_for, takeover};
use crate::error::RunError;
use crate::fault::{FaultVerdict, RequestFault};
use zk_mock::fault::{Match, OpFamily, Tally};

/// Frames larger than this close the connection (ZooKeeper's own limit is
/// `jute.maxbuffer`, 1 MiB by default; the proxy is more lenient).
pub(super) const MAX_FRAME: usize = 64 << 20;

/// How long an expiry by takeover may take.
pub(super) const TAKEOVER_TIMEOUT: Duration = Duration::from_secs(10);

/// A request fault on the proxies: the shared [`RequestFault`]'s criteria
/// and verdict, for one client or anyone, with its tally.
#[derive(Debug, Clone)]
pub(crate) struct RequestRule {
    pub(super) when: Match,
    pub(super) verdict: FaultVerdict,
    pub(super) client: Option<String>,
    pub(super) tally: Tally,
}

impl RequestRule {
    pub(super) fn new(fault: &RequestFault, client: Option<&str>) -> RequestRule {
        RequestRule {
            when: fault.when(None),
            verdict: fault.verdict,
            client: client.map(str::to_string),
            tally: Tally::default(),
        }
    }
}

/// Finds the first rule that fires on the request (the mock's criteria and
/// counting: `Match::matches`, then `Tally::fires`) and returns its verdict.
pub(super) fn match_rules(
    rules: &mut [RequestRule],
    client: &str,
    op: i32,
    path: Option<&str>,
) -> Option<FaultVerdict> {
    for r in rules.iter_mut() {
        if r.client.as_deref().is_none_or(|c| c == client)
            && r.when.matches(op, path, None)
            && r.tally.fires(&r.when, |_| true)
        {
            return Some(r.verdict);
        }
    }
    None
}

/// A request on its way to the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Write {
    pub(super) xid: i32,
    pub(super) op: i32,
    /// Kept in the ledger when confirmed.
    pub(super) kind: Option<OpKind>,
    pub(super) path: Option<String>,
}

/// The request in a frame (header and body), if it is one the proxies
/// look at: closeSession, or an op of a fault family.
pub(super) fn inspect(frame: &[u8]) -> Option<Write> {
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

/// What the request faults make of a request from `client` (`None`: pass
/// it on untouched).
pub(super) fn decide(
    rules: &Mutex<Vec<RequestRule>>,
    client: &str,
    w: &Write,
) -> Option<FaultVerdict> {
    match_rules(&mut rules.lock(), client, w.op, w.path.as_deref())
}

/// Classifies a request frame (header and body) for `client`.
#[cfg(test)]
pub(super) fn classify(
    rules: &Mutex<Vec<RequestRule>>,
    client: &str,
    frame: &[u8],
) -> Option<FaultVerdict> {
    inspect(frame).and_then(|w| decide(rules, client, &w))
}

/// State shared by every proxy of one target.
#[derive(Debug)]
pub(super) struct Shared {
    /// The servers (one for a standalone ZooKeeper; an ensemble's in order).
    pub(super) servers: Vec<SocketAddr>,
    pub(super) refusing: AtomicBool,
    pub(super) rules: Mutex<Vec<RequestRule>>,
    pub(super) next_conn: AtomicU64,
    /// Creates and deletes confirmed to the clients.
    pub(super) ledger: Mutex<Vec<Known>>,
    /// The gates of `hold` faults, by id: true once open.
    pub(super) gates: Mutex<BTreeMap<u64, watch::Sender<bool>>>,
}

/// Whether a client's traffic may flow.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Gate {
    /// Nothing is forwarded, no new connection goes through.
    pub(super) stalled: bool,
    /// New connections wait (a takeover is under way).
    pub(super) holds: u32,
}

/// One client's proxy: a listener per server, each forwarding to its
/// server, so the client's connect string names as many servers as the
/// target has and a fault follows the client whichever server it is on.
#[derive(Debug)]
pub(super) struct ClientProxy {
    pub(super) name: String,
    /// The listening address for each server, in the servers' order.
    pub(super) addrs: Vec<SocketAddr>,
    /// The server the last accepted ConnectResponse came from.
    pub(super) server: Mutex<Option<usize>>,
    /// The local address its connections to the server come from.
    pub(super) source: Option<std::net::IpAddr>,
    /// The session and password of the last accepted ConnectResponse.
    pub(super) session: Mutex<Option<(i64, Bytes)>>,
    pub(super) gate: watch::Sender<Gate>,
    pub(super) conns: Mutex<BTreeMap<u64, AbortHandle>>,
    pub(super) accept: Mutex<Vec<AbortHandle>>,
}

impl ClientProxy {
    pub(super) fn close_all(&self) -> usize {
        let conns = std::mem::take(&mut *self.conns.lock());
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
    pub(super) shared: Arc<Shared>,
    pub(super) clients: Mutex<BTreeMap<String, Arc<ClientProxy>>>,
}

impl Proxies {
    /// Proxies to `servers` (one, or an ensemble's).
    pub(crate) fn new(servers: Vec<SocketAddr>) -> Proxies {
        Proxies {
            shared: Arc::new(Shared {
                servers,
                refusing: AtomicBool::new(false),
                rules: Mutex::default(),
                next_conn: AtomicU64::new(0),
                ledger: Mutex::default(),
                gates: Mutex::default(),
            }),
            clients: Mutex::default(),
        }
    }

    pub(super) fn get(&self, client: &str) -> Option<Arc<ClientProxy>> {
        self.clients.lock().get(client).cloned()
    }

    /// The client's proxy, started on first use.
    pub(super) fn proxy(&self, client: &str) -> Result<Arc<ClientProxy>, RunError> {
        let mut clients = self.clients.lock();
        if let Some(p) = clients.get(client) {
            return Ok(p.clone());
        }
        let mut listeners = Vec::new();
        let mut addrs = Vec::new();
        for _ in &self.shared.servers {
            let std_listener = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.set_nonblocking(true).map(|()| l))
                .map_err(|e| RunError::io(format!("proxy for {client}: binding 127.0.0.1:0"), e))?;
            addrs.push(
                std_listener
                    .local_addr()
                    .map_err(|e| RunError::io(format!("proxy for {client}"), e))?,
            );
            listeners.push(
                TcpListener::from_std(std_listener)
                    .map_err(|e| RunError::io(format!("proxy for {client}"), e))?,
            );
        }
        let proxy = Arc::new(ClientProxy {
            name: client.to_string(),
            addrs,
            server: Mutex::default(),
            source: source_for(self.shared.servers[0], clients.len()),
            session: Mutex::default(),
            gate: watch::Sender::new(Gate::default()),
            conns: Mutex::default(),
            accept: Mutex::default(),
        });
        for (i, listener) in listeners.into_iter().enumerate() {
            let task = tokio::spawn(accept_loop(listener, proxy.clone(), self.shared.clone(), i));
            proxy.accept.lock().push(task.abort_handle());
        }
        clients.insert(client.to_string(), proxy.clone());
        Ok(proxy)
    }

    /// The client's connect string: its proxy's address for every server,
    /// or for `only` these.
    pub(crate) fn connect_string(
        &self,
        client: &str,
        only: Option<&[usize]>,
    ) -> Result<String, RunError> {
        let p = self.proxy(client)?;
        let mut picked = Vec::new();
        for (i, a) in p.addrs.iter().enumerate() {
            if only.is_none_or(|o| o.contains(&i)) {
                picked.push(a.to_string());
            }
        }
        if picked.is_empty() {
            return Err(RunError::NoSuchServer(only.unwrap_or_default().to_vec()));
        }
        Ok(picked.join(","))
    }

    /// The server the client is connected to (its last accepted handshake),
    /// by the session it was given there.
    pub(crate) fn server_of(&self, session: i64) -> Option<usize> {
        self.clients
            .lock()
            .values()
            .find(|p| {
                p.session
                    .lock()
                    .as_ref()
                    .is_some_and(|(s, _)| *s == session)
            })
            .and_then(|p| *p.server.lock())
    }

    /// The session the client's last connection was given.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn session(&self, client: &str) -> Option<(i64, Bytes)> {
        self.get(client).and_then(|p| p.session.lock().clone())
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

    /// Installs a request fault: every verdict the mock has, with the
    /// mock's meaning (see [`FaultVerdict`]).
    pub(crate) fn request_fault(&self, fault: &RequestFault, client: Option<&str>) {
        self.shared
            .rules
            .lock()
            .push(RequestRule::new(fault, client));
    }

    /// A new, closed gate for `hold` faults.
    pub(crate) fn new_gate(&self) -> u64 {
        let mut gates = self.shared.gates.lock();
        let id = gates.keys().next_back().map_or(1, |last| last + 1);
        gates.insert(id, watch::Sender::new(false));
        id
    }

    /// Opens a gate: the frames it held go on.
    pub(crate) fn open_gate(&self, gate: u64) {
        if let Some(g) = self.shared.gates.lock().get(&gate) {
            g.send_replace(true);
        }
    }

    /// Opens every gate.
    pub(crate) fn open_all_gates(&self) {
        for g in self.shared.gates.lock().values() {
            g.send_replace(true);
        }
    }

    pub(crate) fn faults_fired(&self) -> u64 {
        self.shared.rules.lock().iter().map(|r| r.tally.fired).sum()
    }

    /// Ends the client's session by takeover; true once the server
    /// acknowledged the closeSession.
    pub(crate) async fn expire(&self, client: &str) -> bool {
        let Some(proxy) = self.get(client) else {
            return false;
        };
        let Some((session, passwd)) = proxy.session.lock().clone() else {
            return false;
        };
        proxy.gate.send_modify(|g| g.holds += 1);
        // Through the client's own server first (on an ensemble, any
        // server will do: sessions are global; one that is down is skipped).
        let mut order: Vec<usize> = (0..self.shared.servers.len()).collect();
        if let Some(i) = *proxy.server.lock() {
            order.retain(|&j| j != i);
            order.insert(0, i);
        }
        let servers: Vec<SocketAddr> = order.iter().map(|&i| self.shared.servers[i]).collect();
        let r = tokio::time::timeout(TAKEOVER_TIMEOUT, async move {
            let mut last = Err(std::io::Error::other("no server"));
            for server in servers {
                last = takeover(server, session, passwd.clone()).await;
                if last.is_ok() {
                    break;
                }
            }
            last
        })
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

    pub(super) fn shutdown(&self) {
        for p in std::mem::take(&mut *self.clients.lock()).into_values() {
            for a in std::mem::take(&mut *p.accept.lock()) {
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

pub(super) async fn accept_loop(
    listener: TcpListener,
    proxy: Arc<ClientProxy>,
    shared: Arc<Shared>,
    server: usize,
) {
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
        let task = tokio::spawn(serve(sock, proxy.clone(), shared.clone(), id, server));
        let mut conns = proxy.conns.lock();
        conns.retain(|_, h| !h.is_finished());
        conns.insert(id, task.abort_handle());
    }
}

/// One proxied connection, until either side closes or a fault ends it.
pub(super) async fn serve(
    client: TcpStream,
    proxy: Arc<ClientProxy>,
    shared: Arc<Shared>,
    id: u64,
    server_index: usize,
) {
    let mut gate = proxy.gate.subscribe();
    if gate.wait_for(|g| !g.stalled && g.holds == 0).await.is_err() {
        return;
    }
    let Ok(server) = connect_from(proxy.source, shared.servers[server_index]).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    let conn = Conn {
        proxy: &proxy,
        shared: &shared,
        server: server_index,
        replies: Mutex::default(),
        pending: Mutex::default(),
        injector: Injector::default(),
    };
    tokio::select! {
        _ = client_to_server(cr, sw, &conn) => {}
        _ = server_to_client(sr, cw, &conn) => {}
    }
    proxy.conns.lock().remove(&id);
}

pub(super) async fn open(gate: &mut watch::Receiver<Gate>) -> bool {
    gate.wait_for(|g| !g.stalled).await.is_ok()
}

/// What to do with a frame in transit.
#[derive(Debug, Clone)]
pub(super) enum Verdict {
    /// Pass it on.
    Forward,
    /// Swallow it and go on (a request answered by the proxy itself).
    Skip,
    /// Pass on what came before it, wait this long, then pass it on.
    Delay(Duration),
    /// Pass on what came before it, not this frame, and close.
    Cut,
    /// Pass on what came before it, wait until the gate is open (or gone),
    /// then pass it on (a `hold` fault).
    Hold(watch::Receiver<bool>),
}

/// The frame at the front of `buf`: `Ok(Some(len))` when its `len` body
/// bytes are all there (after the 4-byte length prefix), `Ok(None)` while
/// it is partial, `Err(())` for a length outside `0..=MAX_FRAME` (the
/// connection closes).
pub(super) fn next_frame(buf: &[u8]) -> Result<Option<usize>, ()> {
    let Some(prefix) = buf.first_chunk::<4>() else {
        return Ok(None);
    };
    let len = usize::try_from(i32::from_be_bytes(*prefix)).map_err(|_| ())?;
    if len > MAX_FRAME {
        return Err(());
    }
    Ok((buf.len() - 4 >= len).then_some(len))
}

/// Replies the proxy makes itself (a `fail` fault), each after the server's
/// replies to every request the client sent before it: ZooKeeper answers a
/// connection's requests in order, and so does the proxy.
#[derive(Debug, Default)]
pub(super) struct Injector {
    state: Mutex<Injections>,
    wake: tokio::sync::Notify,
}

#[derive(Debug, Default)]
struct Injections {
    /// Requests passed on to the server (the ConnectRequest aside).
    forwarded: u64,
    /// Replies passed on to the client (notifications aside).
    replied: u64,
    /// The newest zxid a reply carried (what an error reply carries).
    zxid: i64,
    /// (requests forwarded before it, xid, error code), in order.
    queue: VecDeque<(u64, i32, i32)>,
}

impl Injector {
    /// A request passed on to the server.
    fn forwarded(&self) {
        self.state.lock().forwarded += 1;
    }

    /// Answers request `xid` with error `err` instead of the server.
    fn fail(&self, xid: i32, err: i32) {
        {
            let mut s = self.state.lock();
            let after = s.forwarded;
            s.queue.push_back((after, xid, err));
        }
        self.wake.notify_one();
    }

    /// A reply from the server, carrying `zxid`, passed on to the client.
    fn replied(&self, zxid: i64) {
        let mut s = self.state.lock();
        s.replied += 1;
        s.zxid = s.zxid.max(zxid);
    }

    /// Appends to `out` the replies now due.
    fn due(&self, out: &mut BytesMut) {
        let mut s = self.state.lock();
        while s
            .queue
            .front()
            .is_some_and(|(after, ..)| *after <= s.replied)
        {
            let Some((_, xid, err)) = s.queue.pop_front() else {
                break;
            };
            let zxid = s.zxid;
            let body = ReplyHeader { xid, zxid, err }.to_bytes();
            out.extend_from_slice(&(body.len() as i32).to_be_bytes());
            out.extend_from_slice(&body);
        }
    }
}

/// Writes `out` (when the gate is open) and empties it; false if the
/// connection is gone.
async fn flush(
    wr: &mut OwnedWriteHalf,
    out: &mut BytesMut,
    gate: &mut watch::Receiver<Gate>,
) -> bool {
    if out.is_empty() {
        return true;
    }
    let ok = open(gate).await && wr.write_all(out).await.is_ok();
    out.clear();
    ok
}

/// Moves frames from `rd` to `wr`, whole, while the client's gate is open,
/// until either side closes or `on_frame` cuts. With an `injector`, its
/// replies join the stream as they fall due.
pub(super) async fn pump(
    mut rd: OwnedReadHalf,
    mut wr: OwnedWriteHalf,
    mut gate: watch::Receiver<Gate>,
    mut on_frame: impl FnMut(&[u8]) -> Verdict,
    injector: Option<&Injector>,
) {
    let mut buf = BytesMut::with_capacity(16 * 1024);
    let mut out = BytesMut::with_capacity(16 * 1024);
    loop {
        if !open(&mut gate).await {
            return;
        }
        // `read_buf` is cancel safe: a wake-up loses no bytes.
        let read = match injector {
            Some(inj) => tokio::select! {
                r = rd.read_buf(&mut buf) => Some(r),
                () = inj.wake.notified() => None,
            },
            None => Some(rd.read_buf(&mut buf).await),
        };
        if matches!(read, Some(Ok(0) | Err(_))) {
            return;
        }
        let mut cut = false;
        loop {
            let len = match next_frame(&buf) {
                Ok(Some(len)) => len,
                Ok(None) => break,
                Err(()) => {
                    cut = true;
                    break;
                }
            };
            match on_frame(&buf[4..4 + len]) {
                Verdict::Forward => {}
                Verdict::Skip => {
                    buf.advance(4 + len);
                    continue;
                }
                Verdict::Cut => {
                    cut = true;
                    break;
                }
                Verdict::Delay(d) => {
                    if !flush(&mut wr, &mut out, &mut gate).await {
                        return;
                    }
                    tokio::time::sleep(d).await;
                }
                Verdict::Hold(mut open) => {
                    if !flush(&mut wr, &mut out, &mut gate).await {
                        return;
                    }
                    let _ = open.wait_for(|o| *o).await;
                }
            }
            out.extend_from_slice(&buf[..4 + len]);
            buf.advance(4 + len);
            if let Some(inj) = injector {
                inj.due(&mut out);
            }
        }
        if let Some(inj) = injector {
            inj.due(&mut out);
        }
        if !flush(&mut wr, &mut out, &mut gate).await || cut {
            return;
        }
        // Room for the rest of a large partial frame.
        if let Some(prefix) = buf.first_chunk::<4>() {
            if let Ok(len) = usize::try_from(i32::from_be_bytes(*prefix)) {
                buf.reserve((4 + len.min(MAX_FRAME)).saturating_sub(buf.len()));
            }
        }
    }
}

/// What a fault does to the reply of a request that was passed on.
#[derive(Debug, Clone)]
pub(super) enum ReplyFault {
    /// Drop it and close (`lose_reply`).
    Lose,
    /// Hold it, and what follows, this long (`delay`).
    Delay(Duration),
    /// Hold it, and what follows, until the gate opens (`hold`).
    Hold(watch::Receiver<bool>),
}

/// What both directions of one connection share.
pub(super) struct Conn<'a> {
    pub(super) proxy: &'a ClientProxy,
    pub(super) shared: &'a Shared,
    /// Which of the target's servers this connection goes to.
    pub(super) server: usize,
    /// Requests passed on whose reply a fault changes, by xid.
    pub(super) replies: Mutex<HashMap<i32, ReplyFault>>,
    /// Creates and deletes awaiting their reply, by xid.
    pub(super) pending: Mutex<BTreeMap<i32, Write>>,
    pub(super) injector: Injector,
}

pub(super) async fn client_to_server(rd: OwnedReadHalf, wr: OwnedWriteHalf, c: &Conn<'_>) {
    let mut first = true;
    let on_frame = |frame: &[u8]| {
        if std::mem::take(&mut first) {
            // The ConnectRequest.
            return Verdict::Forward;
        }
        let w = inspect(frame);
        let fault = w
            .as_ref()
            .and_then(|w| decide(&c.shared.rules, &c.proxy.name, w));
        let reply = match (fault, &w) {
            (None, _) | (_, None) => None,
            (Some(FaultVerdict::DropRequest), _) => {
                tracing::debug!(
                    "proxy {}: dropping a request and the connection",
                    c.proxy.name
                );
                return Verdict::Cut;
            }
            (Some(FaultVerdict::Fail(code)), Some(w)) => {
                tracing::debug!(
                    "proxy {}: answering xid {} with {code:?}",
                    c.proxy.name,
                    w.xid
                );
                c.injector.fail(w.xid, code.code());
                return Verdict::Skip;
            }
            (Some(FaultVerdict::LoseReply), _) => Some(ReplyFault::Lose),
            (Some(FaultVerdict::Delay(d)), _) => Some(ReplyFault::Delay(d)),
            (Some(FaultVerdict::Hold { request, gate }), Some(w)) => {
                // A gate that is gone holds nothing.
                let Some(open) = c
                    .shared
                    .gates
                    .lock()
                    .get(&gate)
                    .map(watch::Sender::subscribe)
                else {
                    return Verdict::Forward;
                };
                if request {
                    tracing::debug!(
                        "proxy {}: holding request xid {} until gate {gate} opens",
                        c.proxy.name,
                        w.xid
                    );
                    if w.kind.is_some() {
                        c.pending.lock().insert(w.xid, w.clone());
                    }
                    c.injector.forwarded();
                    return Verdict::Hold(open);
                }
                Some(ReplyFault::Hold(open))
            }
        };
        if let Some(w) = w {
            if let Some(r) = reply {
                c.replies.lock().insert(w.xid, r);
            }
            if w.kind.is_some() {
                c.pending.lock().insert(w.xid, w);
            }
        }
        c.injector.forwarded();
        Verdict::Forward
    };
    pump(rd, wr, c.proxy.gate.subscribe(), on_frame, None).await
}

pub(super) async fn server_to_client(rd: OwnedReadHalf, wr: OwnedWriteHalf, c: &Conn<'_>) {
    let mut first = true;
    let mut session = None;
    let on_frame = |frame: &[u8]| {
        if std::mem::take(&mut first) {
            if let Ok(resp) = ConnectResponse::decode(frame) {
                if resp.session_id != 0 && resp.time_out > 0 {
                    session = Some(resp.session_id);
                    *c.proxy.session.lock() =
                        Some((resp.session_id, resp.passwd.clone().unwrap_or_default()));
                    *c.proxy.server.lock() = Some(c.server);
                }
            }
            return Verdict::Forward;
        }
        let Ok((body, h)) = ReplyHeader::parse(frame) else {
            return Verdict::Forward;
        };
        if h.xid == XID_NOTIFICATION {
            return Verdict::Forward;
        }
        c.injector.replied(h.zxid);
        if h.xid < 0 {
            return Verdict::Forward;
        }
        let write = c.pending.lock().remove(&h.xid);
        if let (Some(w), Some(session), 0) = (write, session, h.err) {
            // A create's reply starts with the path it created.
            let path = match w.kind {
                Some(OpKind::Create) => zk_mock::codec::jute::ustring(body).ok().map(|(_, p)| p),
                Some(OpKind::Delete) => w.path,
                Some(OpKind::Close) => Some(String::new()),
                None => None,
            };
            if let (Some(path), Some(kind)) = (path, w.kind) {
                c.shared.ledger.lock().push(Known {
                    kind,
                    path,
                    zxid: h.zxid,
                    session,
                });
            }
        }
        match c.replies.lock().remove(&h.xid) {
            Some(ReplyFault::Lose) => {
                tracing::debug!("proxy {}: losing the reply to xid {}", c.proxy.name, h.xid);
                Verdict::Cut
            }
            Some(ReplyFault::Delay(d)) => {
                tracing::debug!(
                    "proxy {}: holding the reply to xid {} for {d:?}",
                    c.proxy.name,
                    h.xid
                );
                Verdict::Delay(d)
            }
            Some(ReplyFault::Hold(open)) => {
                tracing::debug!(
                    "proxy {}: holding the reply to xid {} until its gate opens",
                    c.proxy.name,
                    h.xid
                );
                Verdict::Hold(open)
            }
            None => Verdict::Forward,
        }
    };
    pump(
        rd,
        wr,
        c.proxy.gate.subscribe(),
        on_frame,
        Some(&c.injector),
    )
    .await
}

/// The xid of a watch notification.
const XID_NOTIFICATION: i32 = -1;
