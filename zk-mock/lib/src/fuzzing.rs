//! The server's request path without sockets, for the cargo-fuzz targets
//! in `zk-mock/lib/fuzz` and their regression tests (`tests/fuzz_corpus.rs`);
//! hidden, not part of the API.
//!
//! [`Server`] holds the same state a running mock does and reads bytes for
//! its connections exactly as the socket reader would: frame splitting,
//! the handshake (or a four-letter word), every request decoder, multi, the
//! tree, watches, sessions. [`run_script`] turns arbitrary fuzzer bytes into
//! a sequence of connections, chunks of wire bytes and clock advances;
//! [`Server::check`] asserts what must hold after any input.
//! [`run_ensemble_script`] does the same against an ensemble, with kills,
//! partitions, lags and elections among its commands, and
//! [`Server::check_ensemble`] checks every replica. [`frames`] and
//! [`requests`] are the bodies of the two decoder targets.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use tokio::sync::mpsc;

use crate::clock::ClockMode;
use crate::codec::{split_frame, Record};
use crate::core::{lock, Outgoing, Shared};
use crate::handler::Reader;
use crate::proto::{decode_request, ConnectRequest, ConnectResponse, RequestHeader};
use crate::{Compat, ZkMock};

struct Conn {
    id: crate::session::ConnId,
    /// The session its handshake's answer gave (id, password), once read.
    session: Option<(i64, bytes::Bytes)>,
    /// What the server queued for it and the script has not read yet.
    unread: Vec<bytes::Bytes>,
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
    /// Frames the server queued for clients (answers and notifications).
    pub frames: usize,
    /// A hash of every byte the server queued, connection by connection in
    /// the order they were opened: two runs of one script must agree on it.
    pub digest: u64,
}

/// The body of the `server` and `ensemble` fuzz targets: runs `data`
/// through `run` (whose invariant checks panic on a violation). With
/// `ZK_MOCK_FUZZ_TWICE=1` it runs it twice, and the two runs must queue the
/// same bytes: each run's hash tables have a seed of their own, so a reply
/// that follows a table's order differs between them (a search for
/// nondeterminism, at half the speed).
pub fn fuzz(run: fn(&[u8]) -> Server, data: &[u8]) {
    static TWICE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let first = run(data);
    if *TWICE.get_or_init(|| std::env::var_os("ZK_MOCK_FUZZ_TWICE").is_some_and(|v| v == "1")) {
        let second = run(data);
        assert_eq!(
            (first.sent, first.frames, first.digest),
            (second.sent, second.frames, second.digest),
            "two runs of one input queued different bytes"
        );
    }
}

/// `builder` with everything that would make two runs' bytes differ fixed:
/// the wall time the clock starts at (ctime, mtime) and `mntr`'s count of
/// the process's open files. (The seed and the manual clock are set by
/// the callers.)
fn replayable(builder: crate::ZkMockBuilder) -> crate::ZkMockBuilder {
    builder
        .start_time(std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000))
        .count_open_files(false)
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
        Server::with_builder(&replayable(builder))
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
            frames: 0,
            digest: 0,
        }
    }

    /// How many connections were opened.
    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    /// Opens a connection; returns its index.
    pub fn open(&mut self) -> usize {
        self.open_on(0)
    }

    /// Opens a connection to server `server` of an ensemble; returns its index.
    fn open_on(&mut self, server: usize) -> usize {
        let (tx, rx) = mpsc::unbounded_channel();
        let peer = SocketAddr::from((Ipv4Addr::LOCALHOST, 40_000 + self.conns.len() as u16));
        let (id, gate, queued) = lock(&self.shared).register(tx, peer, server);
        let reader = Reader::detached(self.shared.clone(), id, gate);
        self.conns.push(Conn {
            id,
            session: None,
            unread: Vec::new(),
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
        use std::hash::{Hash, Hasher};
        // SipHash with fixed keys: the same in every run of one build.
        let mut h = std::hash::DefaultHasher::new();
        self.digest.hash(&mut h);
        for (i, c) in self.conns.iter_mut().enumerate() {
            let queued = c.unread.drain(..).chain(std::iter::from_fn(|| loop {
                match c.rx.try_recv().ok()? {
                    Outgoing::Frame(b) => return Some(b),
                    _ => continue,
                }
            }));
            for b in queued {
                self.sent += b.len();
                self.frames += 1;
                c.queued.written(b.len());
                (i, &b[..]).hash(&mut h);
            }
        }
        self.digest = h.finish();
    }

    /// What the recorder kept (its last 256 records of each kind): what a
    /// script reached, for the tests that hold each seed to its behaviour.
    pub fn recorded(&self) -> crate::record::Recording {
        lock(&self.shared).recording()
    }

    /// What must hold after any input: every node's parent lists it and
    /// every listed child exists; numChildren is the children's count;
    /// every ephemeral node belongs to a live session and is indexed under
    /// it; zxids never run ahead of the server's.
    pub fn check(&self) {
        let st = lock(&self.shared);
        let live: std::collections::BTreeSet<i64> =
            st.live_session_ids().into_iter().map(|s| s.0).collect();
        check_tree(st.tree(), Some(&live));
    }
}

/// What must hold of any replica: every node's parent lists it and every
/// listed child exists; numChildren is the children's count; every
/// ephemeral node is indexed under its owner; a node's zxids never run
/// ahead of the replica's. On the leader's replica (`live`: the live sessions) every
/// ephemeral node's owner is live; a follower keeps an ended session's
/// nodes until it applies the closeSession.
fn check_tree(tree: &crate::tree::DataTree, live: Option<&std::collections::BTreeSet<i64>>) {
    let last = tree.last_zxid();
    for (path, node) in tree.iter() {
        let stat = node.stat();
        assert_eq!(stat.num_children as usize, node.children.len(), "{path}");
        assert_eq!(node.listing().len(), node.children.len(), "{path}");
        // An ensemble's `/zookeeper/config` has the config's version for
        // its mzxid from the start (`DataTree::init_config`), ahead of a
        // follower that has applied nothing yet.
        let config = path == "/zookeeper/config";
        assert!(
            stat.czxid <= last && (stat.mzxid <= last || config) && stat.pzxid <= last,
            "{path}"
        );
        for c in node.children.iter() {
            let child = crate::tree::path::child(path, c);
            assert!(tree.get(&child).is_some(), "{path} lists missing {c}");
        }
        if path != "/" {
            let parent = crate::tree::path::parent_for_event(path);
            let name = crate::tree::path::split(path).map_or("", |(_, n)| n);
            let p = tree
                .get(parent)
                .unwrap_or_else(|| panic!("{path}: no parent"));
            assert!(p.children.contains(name), "{path} not listed by {parent}");
        }
        if node.is_ephemeral() {
            let owner = node.ephemeral_owner();
            assert!(
                live.is_none_or(|l| l.contains(&owner)),
                "{path} owned by dead session {owner:#x}"
            );
            assert!(
                tree.is_ephemeral_of(owner, path),
                "{path} not indexed under {owner:#x}"
            );
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

/// The paths an ensemble script's requests name: a small tree, so that
/// creates, deletes and watches meet.
const PATHS: [&str; 8] = [
    "/a",
    "/a/b",
    "/b",
    "/a/c",
    "/",
    "/a/b/c",
    "/zookeeper/config",
    "/c",
];

impl Server {
    /// An ensemble of `n` servers as `ZkMock::builder().servers(n)` makes
    /// it (its membership on loopback addresses no socket is bound to),
    /// with [`new`](Self::new)'s settings; read-only mode brings local
    /// sessions with it.
    fn ensemble(compat: Compat, n: usize, read_only: bool, reconfig: bool) -> Server {
        let builder = ZkMock::builder()
            .servers(n)
            .compat(compat)
            .clock(ClockMode::Manual)
            .seed(1)
            .extended_types(true)
            .container_check_interval(Duration::from_secs(1))
            .recorder_capacity(256)
            .read_only_mode(read_only)
            .local_sessions(read_only)
            .reconfig_enabled(reconfig)
            .super_digest("super:D/InIHSb7yEEbrWz8b9l71RjZJU=");
        let s = Server::with_builder(&replayable(builder));
        let addrs: Vec<SocketAddr> = (0..n)
            .map(|i| SocketAddr::from((Ipv4Addr::LOCALHOST, 2181 + i as u16)))
            .collect();
        lock(&s.shared)
            .init_quorum(&addrs, &[])
            .expect("a membership of distinct addresses");
        s
    }

    /// Lets every connection's reader go on with what the last command
    /// released (a handshake or a request that waited for its server to
    /// apply a txn), as the socket's task does when its gate opens.
    /// A reader with nothing buffered, nothing held and no sync to wait
    /// for would find nothing to do, and is passed over.
    fn pump(&mut self) {
        for i in 0..self.conns.len() {
            if self.conns[i].open && !self.conns[i].reader.is_idle() {
                self.feed(i, &[]);
            }
        }
    }

    /// The session connection `i`'s handshake was answered with (id and
    /// password), read from the first frame the server queued for it.
    fn session_of(&mut self, i: usize) -> Option<(i64, bytes::Bytes)> {
        let c = self.conns.get_mut(i)?;
        while c.session.is_none() {
            let Ok(m) = c.rx.try_recv() else { break };
            if let Outgoing::Frame(b) = m {
                if c.unread.is_empty() {
                    if let Some(r) = b.get(4..).and_then(|f| ConnectResponse::decode(f).ok()) {
                        if r.session_id != 0 {
                            c.session = Some((r.session_id, r.passwd.unwrap_or_default()));
                        }
                    }
                }
                c.unread.push(b);
            }
        }
        c.session.clone()
    }

    /// What must hold after any input, on every server: [`check`](Self::check)'s
    /// invariants on each replica, and once a server that is up has
    /// applied every committed txn, its replica is the leader's, node for
    /// node (stat, data and ACL).
    pub fn check_ensemble(&self) {
        self.check();
        let mut st = lock(&self.shared);
        let leader = st.leader();
        for i in 0..st.server_count() {
            let Some((tree, status)) = st.replica(i) else {
                continue;
            };
            if i == leader {
                continue; // checked by `check`, with the live sessions
            }
            check_tree(tree, None);
            if status != crate::ServerStatus::Serving {
                continue;
            }
            st.catch_up(i);
            let (tree, _) = st.replica(i).expect("server i exists");
            let (lead, _) = st.replica(leader).expect("the leader exists");
            assert_eq!(
                tree.node_count(),
                lead.node_count(),
                "server {i}'s node count"
            );
            for (path, node) in lead.iter() {
                let theirs = tree
                    .get(path)
                    .unwrap_or_else(|| panic!("server {i} lacks {path} after catching up"));
                assert_eq!(theirs.stat(), node.stat(), "server {i}'s stat of {path}");
                assert_eq!(theirs.data, node.data, "server {i}'s data of {path}");
                assert_eq!(theirs.acl, node.acl, "server {i}'s ACL of {path}");
            }
        }
    }
}

/// A well-formed request to an ensemble script's paths: its op code and
/// body, from an op byte `o` and a path byte `p` (the path is
/// `PATHS[p % 8]`, a version `p / 8 − 1`; an addWatch is recursive if
/// `p & 8`). `o % 16` picks the op: creates of each mode, delete, setData,
/// the reads with a watch, sync, addWatch, closeSession (or, by `o & 16`,
/// setWatches2), check (or, by `o`'s bits 4 and 5, the super user's auth
/// or a reconfig) and a multi.
fn request(o: u8, p: u8) -> (i32, Vec<u8>) {
    use crate::proto::{
        AddWatchRequest, CheckVersionRequest, CreateRequest, CreateTtlRequest, DeleteRequest,
        MultiOp, MultiRequest, OpCode, PathRequest, PathWatchRequest, SetDataRequest,
    };
    let path = PATHS[usize::from(p % 8)];
    let version = i32::from(p / 8) - 1;
    let acl: Arc<[crate::proto::Acl]> = crate::proto::Acl::open_unsafe().into();
    let create = |flags: i32| CreateRequest {
        path: path.into(),
        data: Some(bytes::Bytes::from_static(b"d")),
        acl: acl.clone(),
        flags,
    };
    let watch = |watch: bool| PathWatchRequest {
        path: path.into(),
        watch,
    };
    let (op, body) = match o % 16 {
        0..=3 => (OpCode::Create, create(i32::from(o % 4)).to_bytes()),
        4 => (OpCode::CreateContainer, create(4).to_bytes()),
        5 => {
            let r = CreateTtlRequest {
                path: path.into(),
                data: None,
                acl,
                flags: 5,
                ttl: 500,
            };
            (OpCode::CreateTtl, r.to_bytes())
        }
        6 => {
            let r = DeleteRequest {
                path: path.into(),
                version,
            };
            (OpCode::Delete, r.to_bytes())
        }
        7 => {
            let r = SetDataRequest {
                path: path.into(),
                data: Some(bytes::Bytes::from_static(b"e")),
                version,
            };
            (OpCode::SetData, r.to_bytes())
        }
        8 => (OpCode::GetData, watch(true).to_bytes()),
        9 => (OpCode::Exists, watch(true).to_bytes()),
        10 => (OpCode::GetChildren2, watch(o & 16 != 0).to_bytes()),
        11 => (OpCode::Sync, PathRequest { path: path.into() }.to_bytes()),
        12 => {
            let r = AddWatchRequest {
                path: path.into(),
                mode: i32::from((p >> 3) & 1),
            };
            (OpCode::AddWatch, r.to_bytes())
        }
        13 if o & 16 == 0 => (OpCode::CloseSession, bytes::Bytes::new()),
        13 => {
            // A reconnected client's watches, relative to a zxid of the
            // first epoch (or to none): a watch whose node changed since
            // fires at once, on the replica of the server it reaches.
            let at = |i: u8| String::from(PATHS[(usize::from(p) + usize::from(i)) % 8]);
            let persistent = o & 32 != 0;
            let r = crate::proto::SetWatches2 {
                relative_zxid: if p & 8 == 0 {
                    0
                } else {
                    (1 << 32) + i64::from(p / 16)
                },
                data_watches: vec![at(0)],
                exist_watches: vec![at(1)],
                child_watches: vec![at(4)],
                persistent_watches: if persistent { vec![at(3)] } else { Vec::new() },
                persistent_recursive_watches: if persistent { vec![at(2)] } else { Vec::new() },
            };
            (OpCode::SetWatches2, r.to_bytes())
        }
        14 if o & 16 == 0 => {
            let r = CheckVersionRequest {
                path: path.into(),
                version,
            };
            (OpCode::Check, r.to_bytes())
        }
        14 if o & 32 == 0 => {
            // The super user (`Server::ensemble`'s super digest), whom
            // `/zookeeper/config`'s ACL lets reconfig.
            let r = crate::proto::AuthPacket {
                auth_type: 0,
                scheme: "digest".into(),
                auth: Some(bytes::Bytes::from_static(b"super:test")),
            };
            (OpCode::Auth, r.to_bytes())
        }
        14 => {
            // Server `p % 5 + 1` leaves, or joins back as a participant.
            let id = p % 5 + 1;
            let (joining, leaving) = if p & 8 == 0 {
                (None, Some(id.to_string()))
            } else {
                let port = 2180 + u16::from(id);
                let line = format!(
                    "server.{id}=127.0.0.1:{}:{}:participant;127.0.0.1:{port}",
                    port + 1000,
                    port + 2000
                );
                (Some(line), None)
            };
            // `ReconfigRequest {ustring joiningServers; ustring
            // leavingServers; ustring newMembers; long curConfigId}`.
            let mut b = BytesMut::new();
            for field in [joining, leaving, None] {
                match field {
                    Some(f) => {
                        b.put_i32(f.len() as i32);
                        b.put_slice(f.as_bytes());
                    }
                    None => b.put_i32(-1),
                }
            }
            b.put_i64(-1);
            (OpCode::Reconfig, b.freeze())
        }
        _ => {
            let r = MultiRequest {
                ops: vec![
                    MultiOp::Create(OpCode::Create, create(i32::from((o >> 4) & 3))),
                    MultiOp::SetData(SetDataRequest {
                        path: path.into(),
                        data: None,
                        version,
                    }),
                ],
            };
            (OpCode::Multi, r.to_bytes())
        }
    };
    (op as i32, body.to_vec())
}

/// The `ensemble` target: fuzzer bytes as a script against an ensemble
/// (a fresh [`Server`] of 3 or 5 servers), its invariants checked on every
/// replica at the end ([`Server::check_ensemble`]). The first byte picks
/// the setting: bit 0 the compat mode (3.9), bit 1 five servers, bit 2
/// read-only mode (with local sessions), bit 3 reconfig. Each command is a
/// byte `c` followed by its operands; `k` is `c / 16`:
///
/// - `c % 16 < 4`: raw bytes to connection `k`: a length byte `n`, then
///   `n` bytes;
/// - `4`: a handshake on a new connection to server `k` (none while it is
///   killed: its port is closed): a byte `t` (timeout `t / 2 × 200` ms,
///   able to be read-only if `t` is odd), a byte `s` (0: a new session;
///   else the session connection `(s & 63) − 1` was given, and its
///   password but for `s & 128`), and, if `s & 64`, the last zxid seen is
///   the leader's;
/// - `5`: a request to connection `k` (see `request`): an op byte, a path
///   byte;
/// - `6`: close connection `k`;
/// - `7`: advance the clock by the next byte × 50 ms, and apply what each
///   lag lets through then;
/// - `8`, `9`, `10`: kill, partition, restart server `k`;
/// - `11`: set server `k`'s lag from the next byte `b`: none (`b % 4` 0),
///   `b / 4 % 4` txns (1), or `b / 4 × 50` ms (2, 3);
/// - `12`, `13`: end an election (if a quorum is up), begin one;
/// - `14`: server `k` catches up;
/// - `15`: servers cut off from the quorum go read-only.
///
/// Connections and servers are counted modulo how many there are; after
/// each command that is not raw bytes, every connection's reader goes on
/// with what the command released.
pub fn run_ensemble_script(data: &[u8]) -> Server {
    let Some((&mode, mut rest)) = data.split_first() else {
        return Server::ensemble(Compat::V3_8, 3, false, false);
    };
    let compat = if mode & 1 == 0 {
        Compat::V3_8
    } else {
        Compat::V3_9
    };
    let n = if mode & 2 == 0 { 3 } else { 5 };
    let mut s = Server::ensemble(compat, n, mode & 4 != 0, mode & 8 != 0);
    let mut xid = 1i32;
    let byte = |rest: &mut &[u8]| -> u8 {
        let (&b, r) = rest.split_first().unwrap_or((&0, &[]));
        *rest = r;
        b
    };
    while let Some((&c, r)) = rest.split_first() {
        rest = r;
        let k = usize::from(c / 16);
        let conn = k % s.conns.len().max(1);
        let server = k % n;
        match c % 16 {
            0..=3 => {
                let len = usize::from(byte(&mut rest)).min(rest.len());
                let (bytes, r) = rest.split_at(len);
                rest = r;
                s.feed(conn, bytes);
                continue;
            }
            4 => {
                let t = byte(&mut rest);
                let b = byte(&mut rest);
                if lock(&s.shared).refuses(server) {
                    continue;
                }
                let (session_id, passwd) = match b & 63 {
                    0 => (0, bytes::Bytes::from_static(&[0; 16])),
                    j => match s.session_of(usize::from(j - 1) % s.conns.len().max(1)) {
                        Some((id, _)) if b & 128 != 0 => (id, bytes::Bytes::from_static(&[1; 16])),
                        Some(known) => known,
                        None => (0, bytes::Bytes::from_static(&[0; 16])),
                    },
                };
                let last_zxid_seen = if b & 64 != 0 {
                    lock(&s.shared).tree().last_zxid()
                } else {
                    0
                };
                let req = ConnectRequest {
                    time_out: i32::from(t / 2) * 200,
                    last_zxid_seen,
                    session_id,
                    passwd: Some(passwd),
                    read_only: Some(t & 1 == 1),
                    ..Default::default()
                };
                let i = s.open_on(server);
                s.feed(i, &crate::codec::frame(&req.to_bytes()));
            }
            5 => {
                let (op, body) = request(byte(&mut rest), byte(&mut rest));
                // An auth packet's xid is −4 and setWatches' −8, as every
                // client sends them.
                let this = match crate::proto::OpCode::from_i32(op) {
                    Some(crate::proto::OpCode::Auth) => -4,
                    Some(crate::proto::OpCode::SetWatches2) => -8,
                    _ => {
                        let next = xid;
                        xid = xid.wrapping_add(1);
                        next
                    }
                };
                let mut frame = RequestHeader {
                    xid: this,
                    op_type: op,
                }
                .to_bytes()
                .to_vec();
                frame.extend_from_slice(&body);
                s.feed(conn, &crate::codec::frame(&frame));
            }
            6 => s.close(conn),
            7 => {
                let t = byte(&mut rest);
                let mut st = lock(&s.shared);
                st.advance_clock(Duration::from_millis(u64::from(t) * 50));
                st.settle_all();
            }
            8 => {
                lock(&s.shared).take_down(server, crate::ServerStatus::Killed);
            }
            9 => {
                lock(&s.shared).take_down(server, crate::ServerStatus::Partitioned);
            }
            10 => {
                lock(&s.shared).bring_up(server);
            }
            11 => {
                let b = byte(&mut rest);
                let lag = match b % 4 {
                    0 => crate::Lag::None,
                    1 => crate::Lag::Txns(usize::from(b / 4 % 4)),
                    _ => crate::Lag::Time(Duration::from_millis(u64::from(b / 4) * 50)),
                };
                let _ = lock(&s.shared).set_lag(server, lag);
            }
            12 => {
                lock(&s.shared).end_election();
            }
            13 => lock(&s.shared).begin_election(),
            14 => lock(&s.shared).catch_up(server),
            _ => lock(&s.shared).start_read_only(),
        }
        s.pump();
    }
    s.drain();
    s.check_ensemble();
    s
}
