//! The connections and their outboxes, apart from the data model: each
//! connection's channel to the task that serves it (`handler`), its gate (a stall holds both
//! directions), its byte count against the slow-reader limit, and the
//! per-connection facts `cons` and the fault rules need. The tree, the
//! sessions and the watches never see a channel; they name connections by
//! [`ConnId`].

use crate::hash::Map;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::sync::{mpsc, watch};

use crate::compact::Sparse;
use crate::proto::Id;
use crate::session::ConnId;

/// What a connection's task is asked to write (or not to).
#[derive(Debug)]
pub(crate) enum Outgoing {
    /// Write this whole frame (length prefix included).
    Frame(Bytes),
    /// Write nothing more for this long (a `delay` fault).
    Pause(Duration),
    /// Write nothing more until this gate is open (a `hold_reply` fault).
    Hold(watch::Receiver<bool>),
    /// Flush what came before, then close the socket.
    Close,
}

/// Whether a connection may move bytes (a `stall` holds both directions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Reading and writing.
    Open,
    /// Nothing is read and nothing written until resumed.
    Stalled,
    /// Closed while stalled: what was held is dropped.
    Closed,
}

/// A live connection as the state sees it.
#[derive(Debug)]
pub(crate) struct Conn {
    pub(crate) tx: mpsc::UnboundedSender<Outgoing>,
    /// Bytes queued for the writer and not yet written to the socket.
    pub(crate) queued: Arc<Queued>,
    pub(crate) gate: watch::Sender<Gate>,
    /// The server (of an ensemble) whose port the connection came in on.
    pub(crate) server: usize,
    pub(crate) session: Option<i64>,
    /// The session this connection is stalled for (bound or still handshaking).
    pub(crate) stalled_for: Option<i64>,
    /// While set, frames to this connection are dropped (a `lose reply` fault).
    pub(crate) muted: bool,
    /// The authInfo, shared with every request's caller and txn (a
    /// clone is a reference count).
    pub(crate) auth: Arc<[Id]>,
    pub(crate) peer: SocketAddr,
    pub(crate) received: u64,
    pub(crate) sent: u64,
    /// For `cons`: when the connection was accepted (wall ms), and the last
    /// request's op name, cxid, zxid and response time.
    pub(crate) established_ms: i64,
    pub(crate) last_op: &'static str,
    pub(crate) last_cxid: i64,
    pub(crate) last_zxid: i64,
    pub(crate) last_response_ms: u64,
    /// A four-letter-word connection (reads nothing more: interest ops 0).
    pub(crate) four_letter: bool,
}

impl Conn {
    /// Counts a packet sent to the connection (in its own count and the
    /// server's `packets_sent`).
    fn count_packet(&mut self, packets_sent: &mut u64) {
        self.sent += 1;
        *packets_sent += 1;
    }

    /// Adds `len` bytes to what is queued for the connection; the new
    /// total if that makes it a slow reader. A client that does not read
    /// what it asked for is cut off instead of buffered without limit (a
    /// stalled connection holds its frames on purpose and is exempt).
    fn add_queued(&self, len: usize, max_outbox: usize) -> Option<usize> {
        let queued = self.queued.add(len);
        (queued > max_outbox && *self.gate.borrow() == Gate::Open).then_some(queued)
    }
}

/// The bytes queued for a connection's writer and not yet written, as two
/// running totals with one writer each: what the state added (always under
/// its lock) and what the connection's task wrote. Neither needs a locked
/// read-modify-write (a shared count would take two a reply); a reader
/// sees the task's total at most a little behind, so the bytes queued at
/// most a little high.
#[derive(Debug, Default)]
pub(crate) struct Queued {
    added: AtomicUsize,
    written: AtomicUsize,
}

impl Queued {
    /// Adds `n` bytes (only under the state's lock); returns what is queued now.
    pub(crate) fn add(&self, n: usize) -> usize {
        let added = self.added.load(Ordering::Relaxed).wrapping_add(n);
        self.added.store(added, Ordering::Relaxed);
        added.wrapping_sub(self.written.load(Ordering::Relaxed))
    }

    /// `n` of them were written (only by the connection's own task, or
    /// whoever stands in for it).
    pub(crate) fn written(&self, n: usize) {
        let written = self.written.load(Ordering::Relaxed).wrapping_add(n);
        self.written.store(written, Ordering::Relaxed);
    }

    /// What is queued now.
    pub(crate) fn get(&self) -> usize {
        let written = self.written.load(Ordering::Relaxed);
        self.added.load(Ordering::Relaxed).wrapping_sub(written)
    }
}

/// Whether a frame went out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sent {
    /// Queued (or dropped: the connection is gone or muted).
    Ok,
    /// Queued, but the connection's outbox passed the limit: it is a slow
    /// reader, and the caller closes it.
    SlowReader,
}

/// Every live connection's outbox.
#[derive(Debug)]
pub(crate) struct Outboxes {
    pub(crate) conns: Map<ConnId, Conn>,
    next_conn: ConnId,
    /// A connection with more than this many bytes queued is a slow
    /// reader and is closed rather than buffered without limit.
    max_outbox: usize,
    pub(crate) packets_received: u64,
    pub(crate) packets_sent: u64,
    /// Connections closed because their outbox passed `max_outbox`.
    pub(crate) slow_readers_closed: u64,
    /// The connection whose task holds the state's lock to apply its own
    /// requests ([`Outboxes::begin_serving`]): what is queued for it goes to
    /// `direct`, which that task takes before it lets the lock go, instead
    /// of through its channel, which would wake the task that is running.
    serving: Option<ConnId>,
    direct: Direct,
}

/// What is queued for the connection being served (see
/// [`Outboxes::begin_serving`]): its frames' bytes one after another, and
/// from the first message that is not a frame on, every message in order.
#[derive(Debug, Default)]
struct Direct {
    bytes: BytesMut,
    rest: Vec<Outgoing>,
}

impl Direct {
    fn push(&mut self, m: Outgoing) {
        match m {
            Outgoing::Frame(b) if self.rest.is_empty() => self.bytes.extend_from_slice(&b),
            m => self.rest.push(m),
        }
    }
}

/// [`Outboxes::post`]'s routing, for a connection `c` already looked up
/// (`None`: gone): straight to `direct` if `conn` is the one being served,
/// else through its channel.
fn route(
    serving: Option<ConnId>,
    direct: &mut Direct,
    conn: ConnId,
    c: Option<&Conn>,
    m: Outgoing,
) {
    if serving == Some(conn) {
        direct.push(m);
    } else if let Some(c) = c {
        if c.tx.send(m).is_err() {
            tracing::debug!(conn, "outbox closed");
        }
    }
}

impl Outboxes {
    /// The connections `which` picks, oldest first: what is done to several
    /// of them happens in the same order every run (the table's own order
    /// follows its hasher's random seed).
    pub(crate) fn oldest_first(&self, which: impl Fn(&Conn) -> bool) -> Vec<ConnId> {
        let mut ids: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, c)| which(c))
            .map(|(&id, _)| id)
            .collect();
        ids.sort_unstable();
        ids
    }

    pub(crate) fn new(max_outbox: usize) -> Outboxes {
        Outboxes {
            conns: Map::default(),
            next_conn: 1,
            max_outbox,
            packets_received: 0,
            packets_sent: 0,
            slow_readers_closed: 0,
            serving: None,
            direct: Direct::default(),
        }
    }

    /// Keeps what is queued for `conn` apart, for [`Outboxes::take_direct`],
    /// while that connection's task applies its requests (the state's
    /// `serve`): the task writes it after whatever its channel already
    /// held, which came before (every send happens under the state's lock).
    /// Returns the connection served before, for [`Outboxes::end_serving`].
    pub(crate) fn begin_serving(&mut self, conn: ConnId) -> Option<ConnId> {
        self.serving.replace(conn)
    }

    /// Ends [`Outboxes::begin_serving`].
    pub(crate) fn end_serving(&mut self, before: Option<ConnId>) {
        self.serving = before;
    }

    /// Whether [`Outboxes::begin_serving`] kept anything apart.
    pub(crate) fn has_direct(&self) -> bool {
        !self.direct.bytes.is_empty() || !self.direct.rest.is_empty()
    }

    /// Moves what [`Outboxes::begin_serving`] kept apart to the end of what
    /// the task has still to write: `ready`, bytes to write before
    /// anything in `taken`, then `taken`. Its frames' bytes join `ready`
    /// when `taken` is empty (the usual case: one buffer handed over, or
    /// one copy), else they follow `taken` as one frame.
    pub(crate) fn take_direct(
        &mut self,
        ready: &mut BytesMut,
        taken: &mut std::collections::VecDeque<Outgoing>,
    ) {
        let d = &mut self.direct;
        if !d.bytes.is_empty() {
            if !taken.is_empty() {
                taken.push_back(Outgoing::Frame(d.bytes.split().freeze()));
                crate::codec::let_go_if_large(&mut d.bytes);
            } else if ready.is_empty() {
                std::mem::swap(ready, &mut d.bytes);
            } else {
                ready.extend_from_slice(&d.bytes);
                d.bytes.clear();
                crate::codec::let_go_if_large(&mut d.bytes);
            }
        }
        if !d.rest.is_empty() {
            taken.extend(d.rest.drain(..));
        }
    }

    /// Whether a frame for `conn` now would be kept apart as bytes (see
    /// [`Outboxes::send_encoded`]).
    pub(crate) fn takes_encoded(&self, conn: ConnId) -> bool {
        self.serving == Some(conn) && self.direct.rest.is_empty()
    }

    /// Encodes a frame for the connection being served straight into what
    /// its task takes, with no buffer of its own (only when
    /// [`Outboxes::takes_encoded`]); counted as [`Outboxes::send_framed`]
    /// counts a frame.
    pub(crate) fn send_encoded(
        &mut self,
        conn: ConnId,
        encode: impl FnOnce(&mut BytesMut),
    ) -> Sent {
        debug_assert!(self.takes_encoded(conn));
        let Some(c) = self.conns.get_mut(&conn) else {
            return Sent::Ok;
        };
        if c.muted {
            return Sent::Ok;
        }
        c.count_packet(&mut self.packets_sent);
        let len = crate::codec::frame_onto(&mut self.direct.bytes, encode);
        if let Some(queued) = c.add_queued(len, self.max_outbox) {
            return self.slow_reader(conn, queued);
        }
        Sent::Ok
    }

    /// Hands a message to a connection's task: directly, if that task is
    /// the one applying (see [`Outboxes::begin_serving`]), else through its channel.
    fn post(&mut self, conn: ConnId, m: Outgoing) {
        let c = self.conns.get(&conn);
        route(self.serving, &mut self.direct, conn, c, m);
    }

    /// Registers a new connection accepted at `now_wall_ms`; its first `ip`
    /// auth id is the peer address.
    pub(crate) fn register(
        &mut self,
        tx: mpsc::UnboundedSender<Outgoing>,
        peer: SocketAddr,
        now_wall_ms: i64,
        server: usize,
    ) -> (ConnId, watch::Receiver<Gate>, Arc<Queued>) {
        let id = self.next_conn;
        self.next_conn += 1;
        let auth: Arc<[Id]> = Arc::new([Id {
            scheme: "ip".into(),
            id: peer.ip().to_string().into(),
        }]);
        let (gate, gate_rx) = watch::channel(Gate::Open);
        let queued = Arc::new(Queued::default());
        self.conns.insert(
            id,
            Conn {
                tx,
                queued: queued.clone(),
                gate,
                server,
                session: None,
                stalled_for: None,
                muted: false,
                auth,
                peer,
                received: 0,
                sent: 0,
                established_ms: now_wall_ms,
                last_op: "NA",
                last_cxid: -1,
                last_zxid: -1,
                last_response_ms: 0,
                four_letter: false,
            },
        );
        (id, gate_rx, queued)
    }

    /// Queues a frame that has its length prefix (no-op if the connection is
    /// gone or muted), counting it as a packet sent.
    pub(crate) fn send_framed(&mut self, conn: ConnId, framed: Bytes) -> Sent {
        self.queue(conn, framed, true)
    }

    /// Hands bytes to a connection's writer, counting them against its
    /// outbox limit. Every byte a writer writes comes through here (its
    /// count goes down as it writes).
    pub(crate) fn enqueue(&mut self, conn: ConnId, bytes: Bytes) -> Sent {
        self.queue(conn, bytes, false)
    }

    /// [`Outboxes::enqueue`], and with `packet` a packet sent (then a muted
    /// connection gets nothing): the connection looked up once.
    fn queue(&mut self, conn: ConnId, bytes: Bytes, packet: bool) -> Sent {
        let Some(c) = self.conns.get_mut(&conn) else {
            return Sent::Ok;
        };
        if packet {
            if c.muted {
                return Sent::Ok;
            }
            c.count_packet(&mut self.packets_sent);
        }
        let slow = c.add_queued(bytes.len(), self.max_outbox);
        route(
            self.serving,
            &mut self.direct,
            conn,
            Some(c),
            Outgoing::Frame(bytes),
        );
        if let Some(queued) = slow {
            return self.slow_reader(conn, queued);
        }
        Sent::Ok
    }

    /// Closes the gate of `conn`, whose outbox passed the limit.
    fn slow_reader(&mut self, conn: ConnId, queued: usize) -> Sent {
        tracing::warn!(
            conn,
            queued,
            limit = self.max_outbox,
            "slow reader: closing its connection"
        );
        if let Some(c) = self.conns.get(&conn) {
            let _ = c.gate.send(Gate::Closed);
        }
        self.slow_readers_closed += 1;
        Sent::SlowReader
    }

    /// Queues a pause before whatever is queued next on `conn`.
    pub(crate) fn pause(&mut self, conn: ConnId, d: Duration) {
        self.post(conn, Outgoing::Pause(d));
    }

    /// Queues a hold, until `open` sees the gate open, before whatever is
    /// queued next on `conn`.
    pub(crate) fn hold(&mut self, conn: ConnId, open: watch::Receiver<bool>) {
        self.post(conn, Outgoing::Hold(open));
    }

    /// Removes a connection: its writer flushes what is queued and closes
    /// (a stalled connection drops what it held).
    pub(crate) fn remove(&mut self, conn: ConnId) -> Option<Conn> {
        let c = self.conns.get(&conn)?;
        if *c.gate.borrow() == Gate::Stalled {
            let _ = c.gate.send(Gate::Closed);
        }
        self.post(conn, Outgoing::Close);
        let c = self.conns.remove(&conn)?;
        self.conns.shrink_if_sparse();
        Some(c)
    }
}
