//! A scripted operation sequence over named sessions (slots `s0`, `s1`, …),
//! executed with [`RawClient`] against one server, producing a normalized
//! transcript that can be compared line by line between servers.
//!
//! Paths in scripts may start with `@`, which stands for the case's unique
//! prefix (`@/a` → `/c_create/a`); the transcript shows them with `@` again.
//!
//! Normalization:
//! - zxids are shown relative to a baseline `B` (`B+3`); 0 and negative values
//!   (−1 on notifications and UNIMPLEMENTED replies) are shown as they are;
//! - session ids (ConnectResponse, ephemeralOwner) are shown as the slot that
//!   created them (`s0`, `s0'1` for the slot's second session, `ctl`);
//! - ctime and mtime are dropped; lists (children, ephemerals, ACLs, whoAmI)
//!   and the notifications of a session's end keep the server's order: Java
//!   `HashSet` / `ConcurrentHashMap` order on ZooKeeper, which the mock
//!   copies (`CONFORMANCE_SORT=1` sorts ephemeral lists and session-end
//!   notifications, to tell an order difference from any other);
//! - everything else (err codes, data incl. null vs empty, every other Stat
//!   field, paths, body lengths, connection closes) is kept.
//!
//! Synchronisation: after every op the driver sends a ping on every open
//! connection (pipelined) and waits for the replies. ZooKeeper handles pings in
//! its single request pipeline and queues a write's notifications before any
//! later reply, so every notification an op caused has arrived by then. No
//! sleeps are used.

use std::fmt::{self, Write as _};
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use zk_mock::client::{Notification, RawClient, Reply};
use zk_mock::codec::{jute, Record};
use zk_mock::proto::*;

/// A session slot index.
pub(crate) type Slot = usize;

/// How a connect names its last seen zxid (or a SetWatches its relativeZxid).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(dead_code)]
pub(crate) enum Zx {
    /// 0.
    Zero,
    /// The highest zxid the slot has seen in a reply.
    Last,
    /// The baseline plus `n`.
    Base(i64),
    /// The highest zxid seen by any connection of this run (after the last
    /// barrier: the server's last processed zxid) plus `n`.
    Ahead(i64),
}

/// The password a reconnect sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(dead_code)]
pub(crate) enum Passwd {
    /// The session's password.
    Good,
    /// The session's password with one byte changed.
    Wrong,
    /// 16 zero bytes.
    Zeros,
}

/// One op of a multi or multiRead.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(dead_code)]
pub(crate) enum MOp {
    Create {
        op: i32,
        path: String,
        data: Option<Vec<u8>>,
        flags: i32,
    },
    Delete {
        path: String,
        version: i32,
    },
    SetData {
        path: String,
        data: Option<Vec<u8>>,
        version: i32,
    },
    Check {
        path: String,
        version: i32,
    },
    GetData {
        path: String,
    },
    GetChildren {
        path: String,
    },
}

/// A request sent on a slot's current connection.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(dead_code)]
pub(crate) enum Req {
    /// create (1), create2 (15) or createContainer (19).
    Create {
        op: i32,
        path: String,
        data: Option<Vec<u8>>,
        acl: Vec<Acl>,
        flags: i32,
    },
    CreateTtl {
        path: String,
        data: Option<Vec<u8>>,
        flags: i32,
        ttl: i64,
    },
    Delete {
        path: String,
        version: i32,
    },
    Exists {
        path: String,
        watch: bool,
    },
    GetData {
        path: String,
        watch: bool,
    },
    SetData {
        path: String,
        data: Option<Vec<u8>>,
        version: i32,
    },
    GetAcl {
        path: String,
    },
    SetAcl {
        path: String,
        acl: Vec<Acl>,
        version: i32,
    },
    GetChildren {
        path: String,
        watch: bool,
    },
    GetChildren2 {
        path: String,
        watch: bool,
    },
    Sync {
        path: String,
    },
    Ping,
    Multi(Vec<MOp>),
    MultiRead(Vec<MOp>),
    /// setWatches (101), or setWatches2 (105) when `v2` (only setWatches2
    /// carries the persistent lists).
    SetWatches {
        v2: bool,
        rel: Zx,
        data: Vec<String>,
        exist: Vec<String>,
        child: Vec<String>,
        persistent: Vec<String>,
        recursive: Vec<String>,
    },
    /// auth (100), sent with a ping behind it (an AUTHFAILED closes the connection).
    Auth {
        scheme: String,
        auth: Vec<u8>,
    },
    /// addWatch (106): mode 0 persistent, 1 persistent recursive.
    AddWatch {
        path: String,
        mode: i32,
    },
    /// checkWatches (17): type 1 children, 2 data, 3 any.
    CheckWatches {
        path: String,
        ty: i32,
    },
    /// removeWatches (18).
    RemoveWatches {
        path: String,
        ty: i32,
    },
    WhoAmI,
    GetEphemerals {
        prefix: String,
    },
    GetAllChildrenNumber {
        path: String,
    },
    CloseSession,
    /// check (13) outside a multi (sent with a ping behind it: a successful
    /// one gets no reply on 3.8.0).
    Check {
        path: String,
        version: i32,
    },
    /// Any op code with any body (`@` is not expanded in raw bodies).
    Raw {
        op: i32,
        body: Vec<u8>,
    },
}

/// One step of a script.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(dead_code)]
pub(crate) enum Op {
    /// A new session in `s` (a live session already in the slot is kept
    /// alive and closed at the end).
    Connect {
        s: Slot,
        timeout: i32,
        read_only_byte: bool,
        last_zxid: Zx,
    },
    /// A new socket for the session of slot `s` (or a made-up id when
    /// `unknown`). The slot's old connection is checked for being closed.
    Reconnect {
        s: Slot,
        passwd: Passwd,
        last_zxid: Zx,
        timeout: i32,
        read_only_byte: bool,
        unknown: bool,
    },
    /// A request on the slot's current connection.
    Req(Slot, Req),
    /// Requests written back to back before any reply is read: checks reply
    /// order and where notifications fall between the replies.
    Pipeline(Slot, Vec<Req>),
    /// A new session in `s` whose ConnectRequest and `reqs` go out in one
    /// write, before the ConnectResponse is read (as the Rust client does):
    /// the requests must be served after the session is set up. Auth uses xid
    /// −4, setWatches −8, ping −2, the rest 1, 2, …; the socket is closed
    /// afterwards (the session stays alive; reconnect to use it).
    PipelinedConnect { s: Slot, reqs: Vec<Req> },
    /// A four-letter word on a new connection; the answer's lines that start
    /// with one of `keep` (all lines when empty), session ids replaced by slots.
    FourLetter { word: String, keep: Vec<String> },
    /// Reads slot `s`'s connection (sending nothing anywhere) until `count`
    /// notifications have arrived or `max_ms` passed: for server-side events
    /// no request triggers, such as session expiry. The only bounded wait.
    AwaitEvents { s: Slot, count: usize, max_ms: u64 },
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Connect {
                s,
                timeout,
                read_only_byte,
                last_zxid,
            } => write!(
                f,
                "s{s} connect timeout={timeout}{}{}",
                if *read_only_byte {
                    ""
                } else {
                    " (no readOnly byte)"
                },
                if *last_zxid == Zx::Zero {
                    String::new()
                } else {
                    format!(" lastZxidSeen={last_zxid:?}")
                }
            ),
            Op::Reconnect {
                s,
                passwd,
                last_zxid,
                timeout,
                read_only_byte,
                unknown,
            } => {
                write!(
                f,
                "s{s} reconnect{} passwd={passwd:?} lastZxidSeen={last_zxid:?} timeout={timeout}{}",
                if *unknown { " UNKNOWN-SESSION" } else { "" },
                if *read_only_byte { "" } else { " (no readOnly byte)" }
            )
            }
            Op::Req(s, r) => write!(f, "s{s} {}", req_text(r)),
            Op::FourLetter { word, keep } => write!(f, "4lw {word} (lines {keep:?})"),
            Op::PipelinedConnect { s, reqs } => write!(
                f,
                "s{s} connect with pipelined [{}]",
                reqs.iter().map(req_text).collect::<Vec<_>>().join("; ")
            ),
            Op::AwaitEvents { s, count, max_ms } => {
                write!(
                    f,
                    "s{s} await {count} notification(s) (at most {max_ms} ms)"
                )
            }
            Op::Pipeline(s, rs) => write!(
                f,
                "s{s} pipelined [{}]",
                rs.iter().map(req_text).collect::<Vec<_>>().join("; ")
            ),
        }
    }
}

fn data_text(d: &Option<Vec<u8>>) -> String {
    match d {
        None => "null".into(),
        Some(b) if b.len() > 40 => format!("<{} bytes>", b.len()),
        Some(b) => format!("{:?}", String::from_utf8_lossy(b)),
    }
}

fn mop_text(m: &MOp) -> String {
    match m {
        MOp::Create {
            op,
            path,
            data,
            flags,
        } => format!("create(op={op}) {path:?} {} flags={flags}", data_text(data)),
        MOp::Delete { path, version } => format!("delete {path:?} v={version}"),
        MOp::SetData {
            path,
            data,
            version,
        } => format!("setData {path:?} {} v={version}", data_text(data)),
        MOp::Check { path, version } => format!("check {path:?} v={version}"),
        MOp::GetData { path } => format!("getData {path:?}"),
        MOp::GetChildren { path } => format!("getChildren {path:?}"),
    }
}

fn req_text(r: &Req) -> String {
    match r {
        Req::Create {
            op,
            path,
            data,
            acl,
            flags,
        } => {
            let name = match op {
                1 => "create",
                15 => "create2",
                19 => "createContainer",
                _ => "create?",
            };
            let acl = if *acl == Acl::open_unsafe() {
                String::new()
            } else {
                format!(" acl={}", acl_text(acl))
            };
            format!("{name} {path:?} {} flags={flags}{acl}", data_text(data))
        }
        Req::CreateTtl {
            path,
            data,
            flags,
            ttl,
        } => format!(
            "createTTL {path:?} {} flags={flags} ttl={ttl}",
            data_text(data)
        ),
        Req::Delete { path, version } => format!("delete {path:?} v={version}"),
        Req::Exists { path, watch } => format!("exists {path:?} watch={watch}"),
        Req::GetData { path, watch } => format!("getData {path:?} watch={watch}"),
        Req::SetData {
            path,
            data,
            version,
        } => format!("setData {path:?} {} v={version}", data_text(data)),
        Req::GetAcl { path } => format!("getACL {path:?}"),
        Req::SetAcl { path, acl, version } => {
            format!("setACL {path:?} {} v={version}", acl_text(acl))
        }
        Req::GetChildren { path, watch } => format!("getChildren {path:?} watch={watch}"),
        Req::GetChildren2 { path, watch } => format!("getChildren2 {path:?} watch={watch}"),
        Req::Sync { path } => format!("sync {path:?}"),
        Req::Ping => "ping".into(),
        Req::Multi(ops) => format!(
            "multi [{}]",
            ops.iter().map(mop_text).collect::<Vec<_>>().join("; ")
        ),
        Req::MultiRead(ops) => format!(
            "multiRead [{}]",
            ops.iter().map(mop_text).collect::<Vec<_>>().join("; ")
        ),
        Req::SetWatches {
            v2,
            rel,
            data,
            exist,
            child,
            persistent,
            recursive,
        } => {
            let mut t = format!(
                "setWatches{} rel={rel:?} data={data:?} exist={exist:?} child={child:?}",
                if *v2 { "2" } else { "" }
            );
            if *v2 {
                t.push_str(&format!(
                    " persistent={persistent:?} recursive={recursive:?}"
                ));
            }
            t
        }
        Req::Auth { scheme, auth } => {
            format!("auth {scheme:?} {:?}", String::from_utf8_lossy(auth))
        }
        Req::AddWatch { path, mode } => format!("addWatch {path:?} mode={mode}"),
        Req::CheckWatches { path, ty } => format!("checkWatches {path:?} type={ty}"),
        Req::RemoveWatches { path, ty } => format!("removeWatches {path:?} type={ty}"),
        Req::WhoAmI => "whoAmI".into(),
        Req::GetEphemerals { prefix } => format!("getEphemerals {prefix:?}"),
        Req::GetAllChildrenNumber { path } => format!("getAllChildrenNumber {path:?}"),
        Req::CloseSession => "closeSession".into(),
        Req::Check { path, version } => format!("check(standalone) {path:?} v={version}"),
        Req::Raw { op, body } if body.len() > 32 => format!(
            "raw op={op} body={}... ({} bytes)",
            hex(&body[..32]),
            body.len()
        ),
        Req::Raw { op, body } => format!("raw op={op} body={}", hex(body)),
    }
}

/// An ACL list in the server's order. Real 3.8.0 expands an `auth` ACL into
/// one entry per authenticated id of the connection in Java hash order
/// (digest `u0` before `u1` whatever order they were added in); so does the mock.
fn acl_set_text(acl: &[Acl]) -> String {
    let v: Vec<String> = acl
        .iter()
        .map(|a| format!("{}:{}:{}", a.id.scheme, a.id.id, a.perms))
        .collect();
    format!("{{{}}}", v.join(","))
}

fn acl_text(acl: &[Acl]) -> String {
    let v: Vec<String> = acl
        .iter()
        .map(|a| format!("{}:{}:{}", a.id.scheme, a.id.id, a.perms))
        .collect();
    format!("[{}]", v.join(","))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// How zxids are normalized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A control session creates the prefix node and syncs; the sync's reply
    /// zxid is the baseline `B` (for cases sharing one server).
    Shared,
    /// No control session, no prefix node, baseline 0 (for fresh servers).
    Fresh,
}

/// A transcript: one group of lines per op (group 0 is the setup).
pub(crate) type Transcript = Vec<Vec<String>>;

const UNKNOWN_SESSION: i64 = 0x0123_4567_89ab_cdef;
const READ_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, Default)]
struct SlotState {
    conn: Option<RawClient>,
    session_id: i64,
    passwd: Bytes,
    alive: bool,
    last_zxid: i64,
    generation: u32,
}

struct Run {
    addr: SocketAddr,
    prefix: String,
    base: i64,
    labels: Vec<(i64, String)>,
    slots: Vec<SlotState>,
    /// Live sessions no slot refers to any more (closed at the end).
    orphans: Vec<(i64, Bytes)>,
    max_zxid: i64,
}

impl Run {
    fn path(&self, p: &str) -> String {
        match p.strip_prefix('@') {
            Some(rest) => format!("{}{rest}", self.prefix),
            None => p.to_string(),
        }
    }

    fn np(&self, p: &str) -> String {
        if self.prefix.is_empty() {
            return p.to_string();
        }
        if p == self.prefix {
            return "@".into();
        }
        match p.strip_prefix(&self.prefix) {
            Some(rest) if rest.starts_with('/') => format!("@{rest}"),
            _ => p.to_string(),
        }
    }

    fn z(&self, z: i64) -> String {
        if z <= 0 {
            format!("{z}")
        } else {
            format!("B{:+}", z - self.base)
        }
    }

    fn owner(&self, id: i64) -> String {
        if id == 0 {
            return "0".into();
        }
        self.labels
            .iter()
            .find(|(i, _)| *i == id)
            .map(|(_, l)| l.clone())
            .unwrap_or_else(|| "?unknown-session".into())
    }

    fn stat(&self, s: &Stat) -> String {
        format!(
            "{{cz={} mz={} pz={} v={} cv={} av={} own={} dl={} nc={}}}",
            self.z(s.czxid),
            self.z(s.mzxid),
            self.z(s.pzxid),
            s.version,
            s.cversion,
            s.aversion,
            self.owner(s.ephemeral_owner),
            s.data_length,
            s.num_children
        )
    }

    fn data(&self, d: &Option<Bytes>) -> String {
        match d {
            None => "null".into(),
            Some(b) if b.len() > 40 => format!("<{} bytes>", b.len()),
            Some(b) => format!("{:?}", String::from_utf8_lossy(b)),
        }
    }

    fn zx(&self, s: Slot, z: Zx) -> i64 {
        match z {
            Zx::Zero => 0,
            Zx::Last => self.slots.get(s).map_or(0, |st| st.last_zxid),
            Zx::Base(n) => self.base + n,
            Zx::Ahead(n) => self.max_zxid + n,
        }
    }

    fn note_zxid(&mut self, s: Option<Slot>, z: i64) {
        if z > self.max_zxid {
            self.max_zxid = z;
        }
        if let Some(s) = s {
            if z > self.slots[s].last_zxid {
                self.slots[s].last_zxid = z;
            }
        }
    }

    fn event_line(&self, s: Slot, tag: &str, n: &Notification) -> String {
        let ty = match n.event.event_type {
            1 => "NodeCreated",
            2 => "NodeDeleted",
            3 => "NodeDataChanged",
            4 => "NodeChildrenChanged",
            _ => "?",
        };
        format!(
            "  s{s} event{tag} {ty}({}) state={} path={} zxid={}",
            n.event.event_type,
            n.event.state,
            self.np(&n.event.path),
            self.z(n.zxid)
        )
    }

    fn slot(&mut self, s: Slot) -> &mut SlotState {
        if self.slots.len() <= s {
            self.slots.resize_with(s + 1, SlotState::default);
        }
        &mut self.slots[s]
    }

    fn connect_line(&mut self, s: Slot, resp: &Option<ConnectResponse>, fresh: bool) -> String {
        match resp {
            None => "  -> connection closed, no ConnectResponse".into(),
            Some(r) => {
                if r.time_out > 0 && r.session_id != 0 && fresh {
                    let st = self.slot(s);
                    st.generation += 1;
                    let label = if st.generation == 1 {
                        format!("s{s}")
                    } else {
                        format!("s{s}'{}", st.generation - 1)
                    };
                    self.labels.push((r.session_id, label));
                }
                let pw = match &r.passwd {
                    None => "null".to_string(),
                    Some(p) if p.iter().all(|b| *b == 0) => format!("{}x00", p.len()),
                    Some(p) => format!("{}B", p.len()),
                };
                format!(
                    "  -> proto={} timeout={} session={} passwd={} readOnly={:?} len={}",
                    r.protocol_version,
                    r.time_out,
                    self.owner(r.session_id),
                    pw,
                    r.read_only,
                    r.to_bytes().len()
                )
            }
        }
    }

    async fn handshake(
        &mut self,
        req: &ConnectRequest,
    ) -> io::Result<(RawClient, Option<ConnectResponse>)> {
        let (mut c, resp) = RawClient::handshake(self.addr, req).await?;
        c.set_read_timeout(READ_TIMEOUT);
        Ok((c, resp))
    }

    async fn exec(&mut self, op: &Op) -> Vec<String> {
        let mut out = vec![format!("{op}")];
        let issuer = match op {
            Op::Connect {
                s,
                timeout,
                read_only_byte,
                last_zxid,
            } => {
                let s = *s;
                let last_zxid_seen = self.zx(s, *last_zxid);
                let st = self.slot(s);
                if st.alive {
                    let (id, pw) = (st.session_id, st.passwd.clone());
                    self.orphans.push((id, pw));
                }
                let st = self.slot(s);
                st.conn = None;
                st.alive = false;
                st.last_zxid = 0;
                let req = ConnectRequest {
                    protocol_version: 0,
                    last_zxid_seen,
                    time_out: *timeout,
                    session_id: 0,
                    passwd: Some(Bytes::from_static(&[0; 16])),
                    read_only: read_only_byte.then_some(false),
                };
                match self.handshake(&req).await {
                    Ok((c, resp)) => {
                        let line = self.connect_line(s, &resp, true);
                        out.push(line);
                        if let Some(r) = &resp {
                            if r.time_out > 0 {
                                let st = self.slot(s);
                                st.session_id = r.session_id;
                                st.passwd = r.passwd.clone().unwrap_or_default();
                                st.alive = true;
                            }
                        }
                        self.slot(s).conn = Some(c);
                    }
                    Err(e) => out.push(format!("  -> connect error {:?}", e.kind())),
                }
                s
            }
            Op::Reconnect {
                s,
                passwd,
                last_zxid,
                timeout,
                read_only_byte,
                unknown,
            } => {
                let s = *s;
                self.slot(s);
                let old = self.slots[s].conn.take();
                let id = if *unknown {
                    UNKNOWN_SESSION
                } else {
                    self.slots[s].session_id
                };
                let mut pw = match passwd {
                    Passwd::Good | Passwd::Wrong => self.slots[s].passwd.to_vec(),
                    Passwd::Zeros => vec![0; 16],
                };
                if *passwd == Passwd::Wrong {
                    if pw.is_empty() {
                        pw.push(0);
                    }
                    pw[0] ^= 0x5a;
                }
                let req = ConnectRequest {
                    protocol_version: 0,
                    last_zxid_seen: self.zx(s, *last_zxid),
                    time_out: *timeout,
                    session_id: id,
                    passwd: Some(Bytes::from(pw)),
                    read_only: read_only_byte.then_some(false),
                };
                match self.handshake(&req).await {
                    Ok((c, resp)) => {
                        let line = self.connect_line(s, &resp, false);
                        out.push(line);
                        if let Some(r) = &resp {
                            if r.time_out > 0 && !*unknown {
                                let st = self.slot(s);
                                st.session_id = r.session_id;
                                st.passwd = r.passwd.clone().unwrap_or_default();
                                st.alive = true;
                            }
                        }
                        self.slot(s).conn = Some(c);
                    }
                    Err(e) => out.push(format!("  -> connect error {:?}", e.kind())),
                }
                if let Some(mut old) = old {
                    // Was the old socket closed? A ping is answered only if it is open.
                    let r = old.request_raw(OpCode::Ping as i32, &[]).await;
                    let evs = old.take_events();
                    for n in &evs {
                        out.push(self.event_line(s, "[old conn]", n));
                    }
                    out.push(format!("  old connection: {}", conn_state(&r)));
                }
                s
            }
            Op::Req(s, req) => {
                let s = *s;
                self.slot(s);
                if self.slots[s].conn.is_none() {
                    out.push("  -> (no open connection: not sent)".into());
                    return out;
                }
                let (opcode, body) = self.encode(s, req);
                let mut conn = self.slots[s].conn.take().unwrap();
                let r = if let Req::Raw { .. } | Req::Check { .. } | Req::Auth { .. } = req {
                    match raw_request(&mut conn, opcode, &body).await {
                        Ok(RawOutcome::Reply(r)) => Ok(r),
                        Ok(RawOutcome::NoReply) => {
                            out.push(
                                "  -> no reply (a ping sent after it was answered first)".into(),
                            );
                            let evs = conn.take_events();
                            for n in &evs {
                                out.push(self.event_line(s, "[before ping reply]", n));
                            }
                            self.slots[s].conn = Some(conn);
                            self.barrier(s, &mut out).await;
                            return out;
                        }
                        Err(e) => Err(e),
                    }
                } else {
                    conn.request_raw(opcode, &body).await
                };
                let evs = conn.take_events();
                self.slots[s].conn = Some(conn);
                for n in &evs {
                    out.push(self.event_line(s, "[before reply]", n));
                }
                match r {
                    Ok(reply) => {
                        self.note_zxid(Some(s), reply.header.zxid);
                        let line = self.reply_line(req, &reply);
                        out.push(line);
                        if matches!(req, Req::CloseSession) && reply.header.err == 0 {
                            self.slots[s].alive = false;
                            let conn = self.slots[s].conn.take().unwrap();
                            self.await_close(s, conn, &mut out).await;
                        }
                    }
                    Err(e) => {
                        out.push(format!("  -> {}", conn_state::<()>(&Err(e))));
                        self.slots[s].conn = None;
                    }
                }
                s
            }
            Op::PipelinedConnect { s, reqs } => {
                let s = *s;
                self.pipelined_connect(s, reqs, &mut out).await;
                s
            }
            Op::FourLetter { word, keep } => {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut text = String::new();
                // ZooKeeper counts a request in process only after handing it
                // to its first processor (`ZooKeeperServer.submitRequestNow`),
                // so a request that completes before its submitter runs again
                // leaves the count at -1 for a moment; on a loaded machine
                // a word can see that. A negative count is never a server's
                // state at rest: the word is asked again until it is not.
                for _ in 0..50 {
                    match tokio::net::TcpStream::connect(self.addr).await {
                        Ok(mut c) => {
                            let _ = c.write_all(word.as_bytes()).await;
                            let mut b = Vec::new();
                            let _ = tokio::time::timeout(READ_TIMEOUT, c.read_to_end(&mut b)).await;
                            text = String::from_utf8_lossy(&b).into_owned();
                        }
                        Err(e) => {
                            out.push(format!("  -> connect error {:?}", e.kind()));
                            break;
                        }
                    }
                    let in_flux = text.contains("Outstanding: -")
                        || text.contains("zk_outstanding_requests\t-");
                    if !in_flux {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                for (id, label) in &self.labels {
                    text = text.replace(&format!("0x{id:x}"), label);
                }
                let mut lines: Vec<String> = text
                    .split_inclusive('\n')
                    .filter(|l| keep.is_empty() || keep.iter().any(|k| l.starts_with(k.as_str())))
                    .map(|l| format!("  | {l:?}"))
                    .collect();
                if word == "mntr" {
                    // Key order comes from a Java map; monitors parse key/value pairs.
                    lines.sort();
                }
                if word == "wchc" || word == "wchp" {
                    // Blocks (a line, then its tab-indented lines) in Java hash
                    // order: sort the blocks and the lines within each.
                    let mut blocks: Vec<Vec<String>> = Vec::new();
                    for l in lines.drain(..) {
                        if l.starts_with("  | \"\\t") && !blocks.is_empty() {
                            blocks.last_mut().unwrap().push(l);
                        } else {
                            blocks.push(vec![l]);
                        }
                    }
                    for b in &mut blocks {
                        b[1..].sort();
                    }
                    blocks.sort();
                    lines = blocks.concat();
                }
                out.extend(lines);
                // The barrier needs a slot: any will do.
                0
            }
            Op::AwaitEvents { s, count, max_ms } => {
                let s = *s;
                self.slot(s);
                let Some(mut conn) = self.slots[s].conn.take() else {
                    out.push("  -> (no open connection)".into());
                    return out;
                };
                let deadline = tokio::time::Instant::now() + Duration::from_millis(*max_ms);
                let mut got = conn.take_events();
                let mut open = true;
                // The client's own read timeout must not end the wait early.
                conn.set_read_timeout(Duration::from_millis(*max_ms + 1000));
                while got.len() < *count {
                    let Ok(r) = tokio::time::timeout_at(deadline, conn.read_frame()).await else {
                        break;
                    };
                    match r {
                        Ok(Some(f)) => match ReplyHeader::parse(&f) {
                            Ok((body, h)) if h.xid == XID_NOTIFICATION => {
                                if let Ok(event) = WatcherEvent::decode(body) {
                                    got.push(Notification {
                                        zxid: h.zxid,
                                        event,
                                    });
                                }
                            }
                            Ok((_, h)) => out.push(format!(
                                "  s{s} unexpected reply xid={} err={}",
                                h.xid, h.err
                            )),
                            Err(_) => out.push(format!("  s{s} undecodable frame")),
                        },
                        _ => {
                            open = false;
                            break;
                        }
                    }
                }
                conn.set_read_timeout(READ_TIMEOUT);
                for n in &got {
                    out.push(self.event_line(s, "", n));
                }
                if got.len() < *count {
                    out.push(format!("  s{s} only {} notification(s) arrived", got.len()));
                }
                if open {
                    self.slots[s].conn = Some(conn);
                } else {
                    out.push(format!("  s{s} connection closed by server"));
                }
                s
            }
            Op::Pipeline(s, reqs) => {
                let s = *s;
                self.slot(s);
                let Some(mut conn) = self.slots[s].conn.take() else {
                    out.push("  -> (no open connection: not sent)".into());
                    return out;
                };
                let mut all = BytesMut::new();
                for (i, req) in reqs.iter().enumerate() {
                    let (opcode, body) = self.encode(s, req);
                    let mut b = BytesMut::new();
                    RequestHeader {
                        xid: PIPELINE_XID + i as i32,
                        op_type: opcode,
                    }
                    .encode(&mut b);
                    b.extend_from_slice(&body);
                    all.extend_from_slice(&zk_mock::codec::frame(&b));
                }
                // One write: the server sees every request before answering any.
                let sent = conn.send_raw(&all).await;
                let mut ok = sent.is_ok();
                for _ in 0..reqs.len() {
                    if !ok {
                        break;
                    }
                    let r = conn.next_reply().await;
                    for n in conn.take_events() {
                        out.push(self.event_line(s, "", &n));
                    }
                    match r {
                        Ok(Some(reply)) => {
                            let i = (reply.header.xid - PIPELINE_XID) as usize;
                            self.note_zxid(Some(s), reply.header.zxid);
                            let line = match reqs.get(i) {
                                Some(req) => self.reply_line(req, &reply),
                                None => format!("  -> unexpected reply xid={}", reply.header.xid),
                            };
                            out.push(format!("  [{i}]{}", line.trim_start_matches(' ')));
                        }
                        Ok(None) => {
                            out.push("  -> closed".into());
                            ok = false;
                        }
                        Err(e) => {
                            out.push(format!("  -> {}", conn_state::<()>(&Err(e))));
                            ok = false;
                        }
                    }
                }
                if ok && matches!(reqs.last(), Some(Req::CloseSession)) {
                    self.slots[s].alive = false;
                    self.await_close(s, conn, &mut out).await;
                } else if ok {
                    self.slots[s].conn = Some(conn);
                }
                s
            }
        };
        self.barrier(issuer, &mut out).await;
        if unordered_events(op) && std::env::var_os("CONFORMANCE_SORT").is_some() {
            sort_event_runs(&mut out);
        }
        out
    }

    async fn pipelined_connect(&mut self, s: Slot, reqs: &[Req], out: &mut Vec<String>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let st = self.slot(s);
        if st.alive {
            let (id, pw) = (st.session_id, st.passwd.clone());
            self.orphans.push((id, pw));
        }
        let st = self.slot(s);
        st.conn = None;
        st.alive = false;
        let mut all = BytesMut::new();
        let req = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            time_out: 30000,
            session_id: 0,
            passwd: Some(Bytes::from_static(&[0; 16])),
            read_only: Some(false),
        };
        all.extend_from_slice(&zk_mock::codec::frame(&req.to_bytes()));
        let mut xids = Vec::new();
        let mut next = 1;
        for r in reqs {
            let (op, body) = self.encode(s, r);
            let xid = match r {
                Req::Auth { .. } => XID_AUTH,
                Req::SetWatches { .. } => XID_SET_WATCHES,
                Req::Ping => XID_PING,
                _ => {
                    next += 1;
                    next - 1
                }
            };
            xids.push(xid);
            let mut b = BytesMut::new();
            RequestHeader { xid, op_type: op }.encode(&mut b);
            b.extend_from_slice(&body);
            all.extend_from_slice(&zk_mock::codec::frame(&b));
        }
        let mut stream = match tokio::net::TcpStream::connect(self.addr).await {
            Ok(x) => x,
            Err(e) => {
                out.push(format!("  -> connect error {:?}", e.kind()));
                return;
            }
        };
        let _ = stream.set_nodelay(true);
        if let Err(e) = stream.write_all(&all).await {
            out.push(format!("  -> write error {:?}", e.kind()));
            return;
        }
        let mut buf = BytesMut::new();
        let mut frames = Vec::new();
        // The ConnectResponse, then one reply per request (notifications counted apart).
        let mut replies = 0;
        while frames.is_empty() || replies < reqs.len() {
            match zk_mock::codec::split_frame(&mut buf, usize::MAX >> 1) {
                Ok(Some(f)) => {
                    if !frames.is_empty() {
                        let is_event = ReplyHeader::parse(&f)
                            .map(|(_, h)| h.xid == XID_NOTIFICATION)
                            .unwrap_or(false);
                        if !is_event {
                            replies += 1;
                        }
                    }
                    frames.push(f);
                    continue;
                }
                Ok(None) => {}
                Err(_) => break,
            }
            match tokio::time::timeout(READ_TIMEOUT, stream.read_buf(&mut buf)).await {
                Ok(Ok(n)) if n > 0 => {}
                Ok(_) => {
                    out.push("  -> connection closed".into());
                    break;
                }
                Err(_) => {
                    out.push("  -> timed out waiting for replies".into());
                    break;
                }
            }
        }
        let mut it = frames.into_iter();
        match it.next().map(|f| ConnectResponse::decode(&f)) {
            Some(Ok(r)) => {
                let line = self.connect_line(s, &Some(r.clone()), true);
                out.push(line);
                if r.time_out > 0 {
                    let st = self.slot(s);
                    st.session_id = r.session_id;
                    st.passwd = r.passwd.clone().unwrap_or_default();
                    st.alive = true;
                }
            }
            Some(Err(e)) => out.push(format!("  -> undecodable ConnectResponse: {e}")),
            None => out.push("  -> no ConnectResponse".into()),
        }
        for f in it {
            let Ok((body, h)) = ReplyHeader::parse(&f) else {
                out.push("  -> short frame".into());
                continue;
            };
            if h.xid == XID_NOTIFICATION {
                if let Ok(event) = WatcherEvent::decode(body) {
                    out.push(self.event_line(
                        s,
                        "",
                        &Notification {
                            zxid: h.zxid,
                            event,
                        },
                    ));
                }
                continue;
            }
            self.note_zxid(Some(s), h.zxid);
            let reply = Reply {
                header: h.clone(),
                body: Bytes::copy_from_slice(body),
            };
            let line = match xids.iter().position(|x| *x == h.xid) {
                Some(i) => format!(
                    "  [{i}]{}",
                    self.reply_line(&reqs[i], &reply).trim_start_matches(' ')
                ),
                None => format!("  -> unexpected reply xid={}", h.xid),
            };
            out.push(line);
        }
    }

    /// After a closeSession reply the server closes the socket. Waits for that
    /// instead of pinging a closed session (what a request there gets is
    /// timing-dependent on 3.8.0: dropped or answered −112).
    async fn await_close(&mut self, s: Slot, mut conn: RawClient, out: &mut Vec<String>) {
        let r = conn.next_reply().await;
        for n in conn.take_events() {
            out.push(self.event_line(s, "[after reply]", &n));
        }
        match r {
            Ok(None) => out.push(format!("  s{s} connection closed by server")),
            Err(e) if is_closed(&e) => out.push(format!("  s{s} connection closed by server")),
            Ok(Some(r)) => {
                out.push(format!(
                    "  s{s} unexpected frame after closeSession: xid={} err={}",
                    r.header.xid, r.header.err
                ));
                self.slots[s].conn = Some(conn);
            }
            Err(e) => {
                out.push(format!(
                    "  s{s} still open after closeSession ({:?})",
                    e.kind()
                ));
                self.slots[s].conn = Some(conn);
            }
        }
    }

    /// Pings every open connection (pipelined) and collects the notifications
    /// that arrived before each ping's reply.
    async fn barrier(&mut self, issuer: Slot, out: &mut Vec<String>) {
        let mut sent = Vec::new();
        for (i, st) in self.slots.iter_mut().enumerate() {
            if let Some(c) = st.conn.as_mut() {
                let mut b = BytesMut::new();
                RequestHeader {
                    xid: XID_PING,
                    op_type: OpCode::Ping as i32,
                }
                .encode(&mut b);
                let r = c.send_frame(&b).await;
                sent.push((i, r));
            }
        }
        for (i, sr) in sent {
            let mut c = self.slots[i].conn.take().unwrap();
            let r = match sr {
                Ok(()) => c.next_reply().await,
                Err(e) => Err(e),
            };
            let tag = if i == issuer { "[after reply]" } else { "" };
            for n in c.take_events() {
                out.push(self.event_line(i, tag, &n));
            }
            match r {
                Ok(Some(reply)) if reply.header.xid == XID_PING && reply.header.err == 0 => {
                    self.note_zxid(None, reply.header.zxid);
                    self.slots[i].conn = Some(c);
                }
                Ok(Some(reply)) => {
                    out.push(format!(
                        "  s{i} unexpected reply to barrier ping: xid={} zxid={} err={}",
                        reply.header.xid,
                        self.z(reply.header.zxid),
                        reply.header.err
                    ));
                    self.slots[i].conn = Some(c);
                }
                Ok(None) => out.push(format!("  s{i} connection closed by server")),
                Err(e) if is_closed(&e) => out.push(format!("  s{i} connection closed by server")),
                Err(e) => {
                    out.push(format!("  s{i} barrier ping failed: {:?}", e.kind()));
                }
            }
        }
    }

    fn encode(&self, s: Slot, req: &Req) -> (i32, Vec<u8>) {
        let p = |x: &str| self.path(x);
        let d = |x: &Option<Vec<u8>>| x.as_ref().map(|v| Bytes::from(v.clone()));
        let (op, body): (OpCode, Bytes) = match req {
            Req::Create {
                op,
                path,
                data,
                acl,
                flags,
            } => {
                let b = CreateRequest {
                    path: p(path).into(),
                    data: d(data),
                    acl: acl.clone().into(),
                    flags: *flags,
                }
                .to_bytes();
                return (*op, b.to_vec());
            }
            Req::CreateTtl {
                path,
                data,
                flags,
                ttl,
            } => (
                OpCode::CreateTtl,
                CreateTtlRequest {
                    path: p(path).into(),
                    data: d(data),
                    acl: Acl::open_shared(),
                    flags: *flags,
                    ttl: *ttl,
                }
                .to_bytes(),
            ),
            Req::Delete { path, version } => (
                OpCode::Delete,
                DeleteRequest {
                    path: p(path),
                    version: *version,
                }
                .to_bytes(),
            ),
            Req::Exists { path, watch } => (OpCode::Exists, pw(p(path), *watch)),
            Req::GetData { path, watch } => (OpCode::GetData, pw(p(path), *watch)),
            Req::GetChildren { path, watch } => (OpCode::GetChildren, pw(p(path), *watch)),
            Req::GetChildren2 { path, watch } => (OpCode::GetChildren2, pw(p(path), *watch)),
            Req::SetData {
                path,
                data,
                version,
            } => (
                OpCode::SetData,
                SetDataRequest {
                    path: p(path),
                    data: d(data),
                    version: *version,
                }
                .to_bytes(),
            ),
            Req::GetAcl { path } => (OpCode::GetAcl, PathRequest { path: p(path) }.to_bytes()),
            Req::SetAcl { path, acl, version } => (
                OpCode::SetAcl,
                SetAclRequest {
                    path: p(path),
                    acl: acl.clone(),
                    version: *version,
                }
                .to_bytes(),
            ),
            Req::Sync { path } => (OpCode::Sync, PathRequest { path: p(path) }.to_bytes()),
            Req::Ping => (OpCode::Ping, Bytes::new()),
            Req::Multi(ops) => (OpCode::Multi, self.multi(ops).to_bytes()),
            Req::MultiRead(ops) => (OpCode::MultiRead, self.multi(ops).to_bytes()),
            Req::SetWatches {
                v2,
                rel,
                data,
                exist,
                child,
                persistent,
                recursive,
            } => {
                let v = |l: &Vec<String>| l.iter().map(|x| p(x)).collect::<Vec<_>>();
                let rel = self.zx(s, *rel);
                if *v2 {
                    (
                        OpCode::SetWatches2,
                        SetWatches2 {
                            relative_zxid: rel,
                            data_watches: v(data),
                            exist_watches: v(exist),
                            child_watches: v(child),
                            persistent_watches: v(persistent),
                            persistent_recursive_watches: v(recursive),
                        }
                        .to_bytes(),
                    )
                } else {
                    (
                        OpCode::SetWatches,
                        SetWatches {
                            relative_zxid: rel,
                            data_watches: v(data),
                            exist_watches: v(exist),
                            child_watches: v(child),
                        }
                        .to_bytes(),
                    )
                }
            }
            Req::GetEphemerals { prefix } => (
                OpCode::GetEphemerals,
                PathRequest { path: p(prefix) }.to_bytes(),
            ),
            Req::GetAllChildrenNumber { path } => (
                OpCode::GetAllChildrenNumber,
                PathRequest { path: p(path) }.to_bytes(),
            ),
            Req::CloseSession => (OpCode::CloseSession, Bytes::new()),
            Req::Auth { scheme, auth } => (
                OpCode::Auth,
                AuthPacket {
                    auth_type: 0,
                    scheme: scheme.clone(),
                    auth: Some(Bytes::from(auth.clone())),
                }
                .to_bytes(),
            ),
            Req::AddWatch { path, mode } => (
                OpCode::AddWatch,
                AddWatchRequest {
                    path: p(path),
                    mode: *mode,
                }
                .to_bytes(),
            ),
            Req::CheckWatches { path, ty } => (
                OpCode::CheckWatches,
                WatchesRequest {
                    path: p(path),
                    watcher_type: *ty,
                }
                .to_bytes(),
            ),
            Req::RemoveWatches { path, ty } => (
                OpCode::RemoveWatches,
                WatchesRequest {
                    path: p(path),
                    watcher_type: *ty,
                }
                .to_bytes(),
            ),
            Req::WhoAmI => (OpCode::WhoAmI, Bytes::new()),
            Req::Check { path, version } => (
                OpCode::Check,
                CheckVersionRequest {
                    path: p(path),
                    version: *version,
                }
                .to_bytes(),
            ),
            Req::Raw { op, body } => return (*op, body.clone()),
        };
        (op as i32, body.to_vec())
    }

    fn multi(&self, ops: &[MOp]) -> MultiRequest {
        let p = |x: &str| self.path(x);
        let d = |x: &Option<Vec<u8>>| x.as_ref().map(|v| Bytes::from(v.clone()));
        MultiRequest {
            ops: ops
                .iter()
                .map(|m| match m {
                    MOp::Create {
                        op,
                        path,
                        data,
                        flags,
                    } => MultiOp::Create(
                        OpCode::from_i32(*op).unwrap_or(OpCode::Create),
                        CreateRequest {
                            path: p(path).into(),
                            data: d(data),
                            acl: Acl::open_shared(),
                            flags: *flags,
                        },
                    ),
                    MOp::Delete { path, version } => MultiOp::Delete(DeleteRequest {
                        path: p(path),
                        version: *version,
                    }),
                    MOp::SetData {
                        path,
                        data,
                        version,
                    } => MultiOp::SetData(SetDataRequest {
                        path: p(path),
                        data: d(data),
                        version: *version,
                    }),
                    MOp::Check { path, version } => MultiOp::Check(CheckVersionRequest {
                        path: p(path),
                        version: *version,
                    }),
                    MOp::GetData { path } => MultiOp::GetData(PathWatchRequest {
                        path: p(path),
                        watch: false,
                    }),
                    MOp::GetChildren { path } => MultiOp::GetChildren(PathWatchRequest {
                        path: p(path),
                        watch: false,
                    }),
                })
                .collect(),
        }
    }

    fn reply_line(&self, req: &Req, r: &Reply) -> String {
        let h = &r.header;
        let mut line = format!("  -> xid={} zxid={} err={}", h.xid, self.z(h.zxid), h.err);
        let b = &r.body[..];
        if h.err != 0 || b.is_empty() {
            if !b.is_empty() {
                let _ = write!(line, " body={}", hex(b));
            }
            if h.err == 0 && expects_body(req) {
                line.push_str(" (no body)");
            }
            return line;
        }
        let body = match self.body_text(req, b) {
            Ok(t) => t,
            Err(e) => format!("undecodable ({e}): {}", hex(b)),
        };
        let _ = write!(line, " blen={} {body}", b.len());
        line
    }

    fn body_text(&self, req: &Req, b: &[u8]) -> Result<String, String> {
        let e = |e: zk_mock::codec::DecodeError| e.to_string();
        Ok(match req {
            Req::Create { op: 1, .. } => {
                format!(
                    "path={}",
                    self.np(&CreateResponse::decode(b).map_err(e)?.path)
                )
            }
            Req::Create { .. } | Req::CreateTtl { .. } => {
                let c = Create2Response::decode(b).map_err(e)?;
                format!("path={} stat={}", self.np(&c.path), self.stat(&c.stat))
            }
            Req::Exists { .. } | Req::SetData { .. } | Req::SetAcl { .. } => {
                format!(
                    "stat={}",
                    self.stat(&StatResponse::decode(b).map_err(e)?.stat)
                )
            }
            Req::GetData { .. } => {
                let g = GetDataResponse::decode(b).map_err(e)?;
                format!("data={} stat={}", self.data(&g.data), self.stat(&g.stat))
            }
            Req::GetAcl { .. } => {
                let g = GetAclResponse::decode(b).map_err(e)?;
                // Sorted: an `auth` ACL expands to the connection's ids in
                // Java hash order (see `acl_set_text`).
                format!("acl={} stat={}", acl_set_text(&g.acl), self.stat(&g.stat))
            }
            Req::GetChildren { .. } => {
                // In the server's order: Java HashSet order on the real one.
                let c = GetChildrenResponse::decode(b).map_err(e)?.children;
                format!("children={c:?}")
            }
            Req::GetChildren2 { .. } => {
                let g = GetChildren2Response::decode(b).map_err(e)?;
                let c = g.children;
                format!("children={c:?} stat={}", self.stat(&g.stat))
            }
            Req::Sync { .. } => {
                format!("path={}", self.np(&PathRequest::decode(b).map_err(e)?.path))
            }
            Req::GetEphemerals { .. } => {
                let mut v: Vec<String> = GetEphemeralsResponse::decode(b)
                    .map_err(e)?
                    .ephemerals
                    .iter()
                    .map(|p| self.np(p))
                    .collect();
                if std::env::var_os("CONFORMANCE_SORT").is_some() {
                    v.sort();
                }
                format!("ephemerals={v:?}")
            }
            Req::GetAllChildrenNumber { .. } => format!(
                "number={}",
                GetAllChildrenNumberResponse::decode(b)
                    .map_err(e)?
                    .total_number
            ),
            Req::Multi(_) | Req::MultiRead(_) => self.multi_text(b)?,
            Req::AddWatch { .. } => format!("errbody={}", ErrorResponse::decode(b).map_err(e)?.err),
            Req::WhoAmI => {
                // In the server's order (Java hash order of the auth ids).
                let v: Vec<String> = WhoAmIResponse::decode(b)
                    .map_err(e)?
                    .client_info
                    .iter()
                    .map(|c| format!("{}:{}", c.auth_scheme, c.user))
                    .collect();
                format!("clientInfo={v:?}")
            }
            _ => format!("body={}", hex(b)),
        })
    }

    /// Every MultiHeader (type, done, err) and body, as sent.
    fn multi_text(&self, mut b: &[u8]) -> Result<String, String> {
        let e = |e: nom::Err<zk_mock::codec::DecodeError>| format!("{e:?}");
        let mut parts = Vec::new();
        loop {
            let (rest, h) = MultiHeader::parse(b).map_err(e)?;
            b = rest;
            if h.done {
                parts.push(format!("end{{{},{},{}}}", h.op_type, h.done, h.err));
                break;
            }
            let head = format!("{{type={} err={}", h.op_type, h.err);
            let (rest, text) = match h.op_type {
                1 => {
                    let (r, c) = CreateResponse::parse(b).map_err(e)?;
                    (r, format!(" path={}", self.np(&c.path)))
                }
                15 => {
                    let (r, c) = Create2Response::parse(b).map_err(e)?;
                    (
                        r,
                        format!(" path={} stat={}", self.np(&c.path), self.stat(&c.stat)),
                    )
                }
                2 | 13 => (b, String::new()),
                5 => {
                    let (r, c) = StatResponse::parse(b).map_err(e)?;
                    (r, format!(" stat={}", self.stat(&c.stat)))
                }
                4 => {
                    let (r, c) = GetDataResponse::parse(b).map_err(e)?;
                    (
                        r,
                        format!(" data={} stat={}", self.data(&c.data), self.stat(&c.stat)),
                    )
                }
                8 => {
                    let (r, c) = GetChildrenResponse::parse(b).map_err(e)?;
                    let mut ch = c.children;
                    ch.sort();
                    (r, format!(" children={ch:?}"))
                }
                -1 => {
                    let (r, c) = jute::int(b).map_err(e)?;
                    (r, format!(" errbody={c}"))
                }
                _ => return Err(format!("unknown multi result type {}", h.op_type)),
            };
            b = rest;
            parts.push(format!("{head}{text}}}"));
        }
        if !b.is_empty() {
            parts.push(format!("trailing={}", hex(b)));
        }
        Ok(format!("results=[{}]", parts.join(", ")))
    }

    async fn teardown(&mut self) {
        let mut todo: Vec<(Option<RawClient>, i64, Bytes)> = Vec::new();
        for st in &mut self.slots {
            let conn = st.conn.take();
            if st.alive {
                todo.push((conn, st.session_id, st.passwd.clone()));
            }
        }
        for (id, pw) in self.orphans.drain(..) {
            todo.push((None, id, pw));
        }
        for (conn, id, pw) in todo {
            let conn = match conn {
                Some(c) => Some(c),
                None => {
                    let req = ConnectRequest {
                        protocol_version: 0,
                        last_zxid_seen: 0,
                        time_out: 30000,
                        session_id: id,
                        passwd: Some(pw),
                        read_only: Some(false),
                    };
                    match self.handshake(&req).await {
                        Ok((c, Some(r))) if r.time_out > 0 => Some(c),
                        _ => None,
                    }
                }
            };
            if let Some(c) = conn {
                let _ = c.close().await;
            }
        }
    }
}

/// xid of raw requests (sent by hand, not through `RawClient::request`).
const RAW_XID: i32 = 7777;
/// First xid of a pipeline (one more per request).
const PIPELINE_XID: i32 = 9000;

enum RawOutcome {
    Reply(Reply),
    NoReply,
}

/// Sends a raw request and a ping right behind it. Replies come in request
/// order, so if the ping's reply comes first the request got none (real
/// 3.8.0 never answers a successful standalone check, for example).
async fn raw_request(c: &mut RawClient, op: i32, body: &[u8]) -> io::Result<RawOutcome> {
    let mut b = BytesMut::new();
    RequestHeader {
        // Auth packets carry −4 and SetWatches −8, as the C and Rust clients
        // send them (the server just echoes the xid).
        xid: if op == OpCode::Auth as i32 {
            XID_AUTH
        } else if op == OpCode::SetWatches as i32 || op == OpCode::SetWatches2 as i32 {
            XID_SET_WATCHES
        } else {
            RAW_XID
        },
        op_type: op,
    }
    .encode(&mut b);
    b.extend_from_slice(body);
    c.send_frame(&b).await?;
    let mut p = BytesMut::new();
    RequestHeader {
        xid: XID_PING,
        op_type: OpCode::Ping as i32,
    }
    .encode(&mut p);
    let ping_sent = c.send_frame(&p).await.is_ok();
    let first = c.next_reply().await?.ok_or_else(|| {
        io::Error::new(io::ErrorKind::UnexpectedEof, "server closed the connection")
    })?;
    if first.header.xid == XID_PING && op != OpCode::Ping as i32 {
        return Ok(RawOutcome::NoReply);
    }
    if ping_sent {
        // Consume the ping's reply (or notice the close) without losing events;
        // a close shows up in the barrier that follows.
        let _ = c.next_reply().await;
    }
    Ok(RawOutcome::Reply(first))
}

/// Ops whose notifications come in no specified order: a session's end
/// deletes its ephemerals in Java `HashSet` order, which depends on the
/// paths' hashes (and so on the case prefix).
fn unordered_events(op: &Op) -> bool {
    match op {
        Op::Req(_, Req::CloseSession) | Op::AwaitEvents { .. } => true,
        Op::Pipeline(_, reqs) => reqs.iter().any(|r| matches!(r, Req::CloseSession)),
        _ => false,
    }
}

/// Sorts each run of consecutive notification lines (a session's events for
/// one op stay together: lines start with the session).
fn sort_event_runs(lines: &mut [String]) {
    let is_event = |l: &String| l.starts_with("  s") && l.contains(" event");
    let mut i = 0;
    while i < lines.len() {
        if is_event(&lines[i]) {
            let start = i;
            while i < lines.len() && is_event(&lines[i]) {
                i += 1;
            }
            lines[start..i].sort();
        } else {
            i += 1;
        }
    }
}

fn pw(path: String, watch: bool) -> Bytes {
    PathWatchRequest { path, watch }.to_bytes()
}

fn expects_body(req: &Req) -> bool {
    !matches!(
        req,
        Req::Delete { .. }
            | Req::Ping
            | Req::CloseSession
            | Req::SetWatches { .. }
            | Req::Check { .. }
            | Req::Auth { .. }
            | Req::CheckWatches { .. }
            | Req::RemoveWatches { .. }
            | Req::Raw { .. }
    )
}

fn is_closed(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::UnexpectedEof
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
    )
}

fn conn_state<T>(r: &io::Result<T>) -> String {
    match r {
        Ok(_) => "open (answered a ping)".into(),
        Err(e) if is_closed(e) => "closed without reply".into(),
        Err(e) if e.kind() == io::ErrorKind::TimedOut => "no reply (timed out)".into(),
        Err(e) => format!("error {:?}: {e}", e.kind()),
    }
}

/// Runs `ops` against the server at `addr` and returns the transcript.
///
/// # Panics
/// If the setup (control session, prefix node) fails.
pub(crate) async fn run(addr: SocketAddr, prefix: &str, mode: Mode, ops: &[Op]) -> Transcript {
    let mut run = Run {
        addr,
        prefix: prefix.to_string(),
        base: 0,
        labels: Vec::new(),
        slots: Vec::new(),
        orphans: Vec::new(),
        max_zxid: 0,
    };
    let mut transcript = Vec::new();
    let mut ctl = None;
    if mode == Mode::Shared {
        let mut c = RawClient::connect(addr, 40000)
            .await
            .unwrap_or_else(|e| panic!("control session on {addr}: {e}"));
        c.set_read_timeout(READ_TIMEOUT);
        run.labels.push((c.session_id, "ctl".into()));
        let r = c
            .request(
                OpCode::Create,
                &CreateRequest {
                    path: prefix.into(),
                    data: None,
                    acl: Acl::open_shared(),
                    flags: 0,
                },
            )
            .await
            .expect("create the case prefix");
        assert_eq!(r.header.err, 0, "creating {prefix} on {addr}");
        let r = c
            .request(OpCode::Sync, &PathRequest { path: "/".into() })
            .await
            .expect("baseline sync");
        run.base = r.header.zxid;
        run.max_zxid = r.header.zxid;
        transcript.push(vec![
            "setup: ctl session, create @, sync -> baseline B = @'s czxid".to_string(),
        ]);
        ctl = Some(c);
    } else {
        transcript.push(vec!["setup: fresh server, absolute zxids (B=0)".to_string()]);
    }
    for op in ops {
        let lines = run.exec(op).await;
        transcript.push(lines);
    }
    run.teardown().await;
    if let Some(c) = ctl {
        let _ = c.close().await;
    }
    transcript
}
