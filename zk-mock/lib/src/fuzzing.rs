//! The server's request path without sockets, for the cargo-fuzz targets
//! in `zk-mock/lib/fuzz` and their regression tests (`tests/fuzz_corpus.rs`);
//! hidden, not part of the API.
//!
//! [`Server`] holds the same state a running mock does and reads bytes for
//! its connections exactly as the socket reader would: frame splitting,
//! the handshake (or a four-letter word), every request decoder, multi, the
//! tree, watches, sessions. [`run_script`] turns arbitrary fuzzer bytes into
//! a sequence of connections, chunks of wire bytes and clock advances;
//! [`Server::check`] asserts what must hold after any input. [`frames`] and
//! [`requests`] are the bodies of the two decoder targets.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::BytesMut;
use tokio::sync::mpsc;

use crate::clock::ClockMode;
use crate::codec::{split_frame, Record};
use crate::core::{lock, Outgoing, Shared};
use crate::handler::Reader;
use crate::proto::{decode_request, ConnectRequest, RequestHeader};
use crate::{Compat, ZkMock};

struct Conn {
    id: crate::session::ConnId,
    reader: Reader,
    rx: mpsc::UnboundedReceiver<Outgoing>,
    /// The bytes queued and not yet taken, as the socket writer keeps it
    /// (a connection that lets it grow past the outbox limit is closed).
    queued: Arc<crate::outbox::Queued>,
    open: bool,
}

/// A mock's state with connections fed by hand. The session clock is manual.
#[allow(missing_debug_implementations)]
pub struct Server {
    shared: Shared,
    conns: Vec<Conn>,
    /// Bytes the server queued for clients, all connections together.
    pub sent: usize,
}

impl Server {
    /// A server as `ZkMock::builder()` makes it, with a manual clock, TTL
    /// nodes allowed and a container check every second.
    pub fn new(compat: Compat) -> Server {
        let builder = ZkMock::builder()
            .compat(compat)
            .clock(ClockMode::Manual)
            .seed(1)
            .extended_types(true)
            .container_check_interval(Duration::from_secs(1))
            .recorder_capacity(256);
        Server::with_builder(&builder)
    }

    /// A server with these settings (the session clock is the builder's):
    /// the benches' `core` group measures the request path through it.
    pub fn with_builder(builder: &crate::ZkMockBuilder) -> Server {
        let (state, _) = builder
            .state_for(2181)
            .expect("the default settings are valid");
        Server {
            shared: Arc::new(Mutex::new(state)),
            conns: Vec::new(),
            sent: 0,
        }
    }

    /// Opens a connection; returns its index.
    pub fn open(&mut self) -> usize {
        let (tx, rx) = mpsc::unbounded_channel();
        let peer = SocketAddr::from((Ipv4Addr::LOCALHOST, 40_000 + self.conns.len() as u16));
        let (id, gate, queued) = lock(&self.shared).register(tx, peer, 0);
        let reader = Reader::detached(self.shared.clone(), id, gate);
        self.conns.push(Conn {
            id,
            reader,
            rx,
            queued,
            open: true,
        });
        self.conns.len() - 1
    }

    /// Bytes from the client of connection `i` (ignored once it is closed).
    pub fn feed(&mut self, i: usize, bytes: &[u8]) {
        let Some(c) = self.conns.get_mut(i) else {
            return;
        };
        if c.open && !c.reader.feed(bytes) {
            c.open = false;
            lock(&self.shared).disconnected(c.id);
        }
    }

    /// The client of connection `i` goes away.
    pub fn close(&mut self, i: usize) {
        if let Some(c) = self.conns.get_mut(i) {
            if c.open {
                c.open = false;
                lock(&self.shared).disconnected(c.id);
            }
        }
    }

    /// Moves the session clock: sessions expire, containers are reaped.
    pub fn advance(&mut self, ms: u64) {
        lock(&self.shared).advance_clock(Duration::from_millis(ms));
    }

    /// Takes what the server queued for clients (counted in `sent`). A
    /// script's output is bounded by its length, so this runs once at its
    /// end: draining every connection after every command cost more than
    /// the server's own work.
    pub fn drain(&mut self) {
        for c in &mut self.conns {
            while let Ok(m) = c.rx.try_recv() {
                if let Outgoing::Frame(b) = m {
                    self.sent += b.len();
                    c.queued.written(b.len());
                }
            }
        }
    }

    /// What must hold after any input: every node's parent lists it and
    /// every listed child exists; numChildren is the children's count;
    /// every ephemeral node belongs to a live session and is indexed under
    /// it; zxids never run ahead of the server's.
    pub fn check(&self) {
        let st = lock(&self.shared);
        let last = st.tree().last_zxid();
        let live: std::collections::BTreeSet<i64> =
            st.live_session_ids().into_iter().map(|s| s.0).collect();
        for (path, node) in st.tree().iter() {
            let stat = node.stat();
            assert_eq!(stat.num_children as usize, node.children.len(), "{path}");
            assert_eq!(node.listing().len(), node.children.len(), "{path}");
            assert!(
                stat.czxid <= last && stat.mzxid <= last && stat.pzxid <= last,
                "{path}"
            );
            for c in node.children.iter() {
                let child = crate::tree::path::child(path, c);
                assert!(st.tree().get(&child).is_some(), "{path} lists missing {c}");
            }
            if path != "/" {
                let parent = crate::tree::path::parent_for_event(path);
                let name = crate::tree::path::split(path).map_or("", |(_, n)| n);
                let p = st
                    .tree()
                    .get(parent)
                    .unwrap_or_else(|| panic!("{path}: no parent"));
                assert!(p.children.contains(name), "{path} not listed by {parent}");
            }
            if node.is_ephemeral() {
                let owner = node.ephemeral_owner();
                assert!(
                    live.contains(&owner),
                    "{path} owned by dead session {owner:#x}"
                );
                assert!(
                    st.tree().ephemerals_of(owner).any(|p| p == path),
                    "{path} not indexed under {owner:#x}"
                );
            }
        }
    }
}

/// The `frames` target: the first byte picks a frame size limit (16 bytes,
/// 1 KiB or ZooKeeper's default `jute.maxbuffer`); the rest is split into
/// frames, each decoded as a ConnectRequest, and decoded whole as one.
pub fn frames(data: &[u8]) {
    let Some((&limit, rest)) = data.split_first() else {
        return;
    };
    let max = [16usize, 1024, 0xfffff][usize::from(limit) % 3];
    let mut buf = BytesMut::from(rest);
    while let Ok(Some(frame)) = split_frame(&mut buf, max) {
        assert!(frame.len() <= max);
        let _ = ConnectRequest::decode(&frame);
    }
    let _ = ConnectRequest::decode(rest);
}

/// The `requests` target: the first byte is an op code (as a signed byte:
/// the op codes that exist are small or negative; ping, auth and
/// setWatches2 are 100 and more, so each body is also decoded as op + 100),
/// the rest a request body. True if the body decoded as the first op's
/// request.
pub fn requests(data: &[u8]) -> bool {
    let Some((&op, body)) = data.split_first() else {
        return false;
    };
    let op = i32::from(op as i8);
    let _ = decode_request(op + 100, body);
    decode_request(op, body).is_ok()
}

/// Interprets fuzzer bytes as a script and runs it against a fresh
/// [`Server`], checking its invariants at the end. The first byte picks
/// the compat mode; then each command is a byte `c` followed by its
/// operands:
///
/// - `c % 8 < 4`: raw bytes to connection `c / 8 % 4`: a length byte `n`,
///   then `n` bytes (as many as are left);
/// - `4`: a well-formed ConnectRequest to a new connection (so the rest
///   can reach past the handshake): timeout from the next byte;
/// - `5`: a well-formed request frame with the header filled in: op code
///   from the next byte (signed), then a length byte and that many body
///   bytes, to connection `c / 8 % 4`;
/// - `6`: close connection `c / 8 % 4`;
/// - `7`: advance the clock by the next byte × 100 ms.
pub fn run_script(data: &[u8]) -> Server {
    let Some((&mode, mut rest)) = data.split_first() else {
        return Server::new(Compat::V3_8);
    };
    let mut s = Server::new(if mode & 1 == 0 {
        Compat::V3_8
    } else {
        Compat::V3_9
    });
    for _ in 0..4 {
        s.open();
    }
    let mut xid = 1i32;
    let take = |rest: &mut &[u8], n: usize| -> Vec<u8> {
        let n = n.min(rest.len());
        let (a, b) = rest.split_at(n);
        *rest = b;
        a.to_vec()
    };
    while let Some((&c, r)) = rest.split_first() {
        rest = r;
        let conn = (c / 8 % 4) as usize;
        match c % 8 {
            0..=3 => {
                let n = take(&mut rest, 1).first().copied().unwrap_or(0) as usize;
                let bytes = take(&mut rest, n);
                s.feed(conn, &bytes);
            }
            4 => {
                let t = take(&mut rest, 1).first().copied().unwrap_or(0);
                let i = s.open();
                let req = ConnectRequest {
                    time_out: i32::from(t) * 100,
                    passwd: Some(bytes::Bytes::from_static(&[0; 16])),
                    read_only: Some(false),
                    ..Default::default()
                };
                s.feed(i, &crate::codec::frame(&req.to_bytes()));
            }
            5 => {
                let op = take(&mut rest, 1).first().copied().unwrap_or(0) as i8;
                let n = take(&mut rest, 1).first().copied().unwrap_or(0) as usize;
                let body = take(&mut rest, n);
                let mut frame = RequestHeader {
                    xid,
                    op_type: i32::from(op),
                }
                .to_bytes()
                .to_vec();
                xid = xid.wrapping_add(1);
                frame.extend_from_slice(&body);
                // The target connection may not have a session yet: the
                // last one opened by `4` is used when it does not.
                let target = if s.conns.len() > 4 {
                    s.conns.len() - 1
                } else {
                    conn
                };
                s.feed(target, &crate::codec::frame(&frame));
            }
            6 => s.close(conn),
            _ => {
                let t = take(&mut rest, 1).first().copied().unwrap_or(0);
                s.advance(u64::from(t) * 100);
            }
        }
    }
    s.drain();
    s.check();
    s
}
