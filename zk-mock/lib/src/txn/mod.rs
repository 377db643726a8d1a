//! The transaction and how a replica applies it.
//!
//! [`execute`] is the one place a txn changes a tree: a write, a session's
//! end (its ephemerals), the container check's deletes, a reconfig, a
//! reset (a createSession only moves the zxid). It runs on the leader's
//! replica when the txn is committed, and on each follower's when that
//! follower applies it; it takes nothing but the tree, the txn layer's own
//! settings ([`TxnSettings`]), the txn, the txn's data when a single server
//! has moved it out (`Txn::take_data`: the same bytes, without a count taken
//! of them) and a buffer for the [`TreeEvent`]s it causes, so every replica
//! reaches the same result.

use std::sync::Arc;

use bytes::Bytes;

use crate::proto::*;
use crate::session::ConnId;
use crate::tree::{Caller, CreateArgs, CreateMode, DataTree, TreeEvent};
use crate::Compat;

mod reply;
pub(crate) use reply::Reply;

/// `EphemeralType.TTL`'s largest ttl (40 bits of ms).
const MAX_TTL: i64 = 0xFF_FFFF_FFFF;

/// `CreateMode.CONTAINER`'s flag value.
const CONTAINER_FLAGS: i32 = 4;

/// A committed transaction: everything a replica needs to apply it.
#[derive(Debug)]
pub(crate) struct Txn {
    pub(crate) zxid: i64,
    /// The txn's time (wall ms): ctime and mtime of what it writes.
    pub(crate) time: i64,
    pub(crate) session: i64,
    /// The caller's authInfo, for the ACL checks the replay repeats.
    pub(crate) auth: std::sync::Arc<[Id]>,
    pub(crate) op: TxnOp,
    /// The connection and xid to answer, by the server that connection is
    /// on, when that server applies the txn.
    pub(crate) origin: Option<(ConnId, i32)>,
}

/// What a txn does.
#[derive(Debug)]
pub(crate) enum TxnOp {
    /// A client's write (create, delete, setData, setACL, check, multi).
    Write(Request),
    /// A write that prep failed before the tree (a malformed body, reconfig,
    /// a server-internal op, a multi of reads, a request of a session that
    /// moved or is expiring): it only takes its zxid.
    Error(ErrorCode),
    /// createSession: only the zxid (sessions are global), and the
    /// handshake's answer (an encoded `ConnectResponse`), which the
    /// connection's server sends when it applies the txn.
    CreateSession(Bytes),
    /// closeSession: the session's ephemerals are deleted.
    CloseSession,
    /// The container manager's delete of an empty container or expired TTL node.
    DeleteContainer(String),
    /// A reconfig: `/zookeeper/config`'s new data.
    SetConfig(Bytes),
    /// A reset ([`ZkMock::reset`](crate::ZkMock::reset)): every node but the
    /// root and the system nodes deleted.
    Wipe,
}

/// What applying a txn gives its origin connection.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Header err 0 and this body.
    Reply(Reply),
    /// A multi's results (header err 0 even when an op failed) and the
    /// failing op's code for the recorder.
    Multi(MultiResponse, i32),
    /// Nothing at all: 3.8.0 never answers a successful standalone check.
    Silent,
    /// A new session's handshake answer (a `ConnectResponse`, no header).
    Handshake(Bytes),
    /// A header with this error.
    Failed(ErrorCode),
}

impl Outcome {
    /// The code the recorder keeps.
    pub(crate) fn err(&self) -> i32 {
        match self {
            Outcome::Reply(_) | Outcome::Silent | Outcome::Handshake(_) => 0,
            Outcome::Multi(_, err) => *err,
            Outcome::Failed(e) => e.code(),
        }
    }
}

impl From<Result<Reply, ErrorCode>> for Outcome {
    fn from(r: Result<Reply, ErrorCode>) -> Outcome {
        match r {
            Ok(reply) => Outcome::Reply(reply),
            Err(e) => Outcome::Failed(e),
        }
    }
}

/// What applying a txn needs of the server's settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TxnSettings {
    /// Which release's behaviour to follow where 3.8 and 3.9 differ.
    pub(crate) compat: Compat,
    /// `zookeeper.extendedTypesEnabled`: TTL nodes allowed.
    pub(crate) extended_types: bool,
}

impl Txn {
    /// Moves the data out of a create or a setData, for the one replica
    /// that applies the txn and then drops it (a single server's): that
    /// replica's node keeps the request's own buffer instead of a shared
    /// clone of it, which `Bytes` would allocate a count for. The data
    /// goes to [`execute`] as its `data`; the txn is not to be applied again.
    pub(crate) fn take_data(&mut self) -> Option<Option<Bytes>> {
        match &mut self.op {
            TxnOp::Write(
                Request::Create(_, CreateRequest { data, .. })
                | Request::CreateTtl(CreateTtlRequest { data, .. })
                | Request::SetData(SetDataRequest { data, .. }),
            ) => Some(data.take()),
            _ => None,
        }
    }
}

/// Applies `txn` to a replica, collecting the watch events it causes.
/// `data`: what [`Txn::take_data`] moved out of it, if that was called.
pub(crate) fn execute(
    tree: &mut DataTree,
    settings: TxnSettings,
    txn: &Txn,
    data: Option<Option<Bytes>>,
    events: &mut Vec<TreeEvent>,
) -> Outcome {
    tree.advance_to(txn.zxid);
    let caller = Caller {
        session: txn.session,
        auth: &txn.auth,
    };
    let mut w = Writer {
        tree,
        settings,
        zxid: txn.zxid,
        time: txn.time,
        caller,
        events,
        data,
    };
    match &txn.op {
        TxnOp::Write(req) => w.write(req),
        TxnOp::Error(e) => Outcome::Failed(*e),
        TxnOp::CreateSession(answer) => Outcome::Handshake(answer.clone()),
        TxnOp::CloseSession => {
            w.tree.kill_session(txn.zxid, txn.session, w.events);
            Outcome::Reply(Reply::None)
        }
        TxnOp::SetConfig(data) => {
            let stat = w
                .tree
                .set_config(txn.zxid, txn.time, data.clone(), w.events);
            Outcome::Reply(Reply::Data(Some(data.clone()), stat))
        }
        TxnOp::Wipe => {
            w.tree.wipe(txn.zxid, w.events);
            Outcome::Silent
        }
        TxnOp::DeleteContainer(path) => match w.tree.delete_container(txn.zxid, path, w.events) {
            Ok(()) => Outcome::Reply(Reply::None),
            Err(e) => Outcome::Failed(e),
        },
    }
}

/// One txn being applied to one replica.
struct Writer<'a> {
    tree: &'a mut DataTree,
    settings: TxnSettings,
    zxid: i64,
    time: i64,
    caller: Caller<'a>,
    events: &'a mut Vec<TreeEvent>,
    /// The data taken out of the txn's create or setData, used in place of
    /// a clone of the request's (see [`Txn::take_data`]).
    data: Option<Option<Bytes>>,
}

impl Writer<'_> {
    fn write(&mut self, req: &Request) -> Outcome {
        let caller = self.caller;
        let zxid = self.zxid;
        match req {
            Request::Create(code, r) => self
                .create(NewNode::create(*code, r))
                .map(|(path, stat)| create_reply(*code, path, stat))
                .into(),
            Request::CreateTtl(r) => self
                .create(NewNode::ttl(r))
                .map(|(path, stat)| create_reply(OpCode::CreateTtl, path, stat))
                .into(),
            Request::Delete(r) => self
                .tree
                .delete(zxid, &r.path, r.version, caller, self.events)
                .map(|()| Reply::None)
                .into(),
            Request::SetData(r) => self.set_data(r).map(Reply::Stat).into(),
            Request::SetAcl(r) => self
                .tree
                .set_acl(&r.path, &r.acl, r.version, caller)
                .map(Reply::Stat)
                .into(),
            // ZooKeeper 3.8.0 treats a standalone check as a transaction: it
            // consumes a zxid and failures are answered, but a *successful*
            // check is never answered (3.8.6 answers UNIMPLEMENTED and closes
            // instead). zk-mock answers as ZooKeeper 3.8.0 does.
            Request::Check(r) => match self.tree.check(&r.path, r.version, caller) {
                Ok(()) => Outcome::Silent,
                Err(e) => Outcome::Failed(e),
            },
            Request::Multi(m) => self.multi(m),
            // Prep turns every other request into an error txn or no txn.
            _ => Outcome::Failed(ErrorCode::MarshallingError),
        }
    }

    /// create in `pRequest2TxnCreate` order: flags, TTL rules, then the tree's checks.
    fn create(&mut self, new: NewNode<'_>) -> Result<(Arc<str>, Stat), ErrorCode> {
        let mode = CreateMode::from_flags(new.flags)?;
        if mode.ttl && !self.settings.extended_types {
            // zookeeper.extendedTypesEnabled is false by default.
            return Err(ErrorCode::Unimplemented);
        }
        // EphemeralType.validateTTL: a TTL mode needs a ttl in
        // 1..=0xFF_FFFF_FFFF (a plain create carries none); other modes
        // take none. A createTTL with a non-TTL mode and ttl −1 passes that
        // check on 3.8.0 and then kills the real server's process; the mock
        // answers BADARGUMENTS instead of dying.
        let ttl = match (mode.ttl, new.ttl) {
            (true, Some(ttl)) if (1..=MAX_TTL).contains(&ttl) => ttl,
            (false, None) => 0,
            _ => return Err(ErrorCode::BadArguments),
        };
        let args = CreateArgs {
            path: new.path.clone(),
            data: self.data.take().unwrap_or_else(|| new.data.clone()),
            acl: new.acl,
            mode,
            ttl,
        };
        self.tree
            .create(self.zxid, self.time, args, self.caller, self.events)
    }

    /// setData, alone or inside multi: the transaction's time is the mtime.
    fn set_data(&mut self, r: &SetDataRequest) -> Result<Stat, ErrorCode> {
        self.tree.set_data(
            self.zxid,
            self.time,
            &r.path,
            self.data.take().unwrap_or_else(|| r.data.clone()),
            r.version,
            self.caller,
            self.events,
        )
    }

    /// multi: every op shares one zxid; ops see earlier ops' changes; on the
    /// first failure nothing is applied, earlier ops report 0, the failing op
    /// its code and later ops RUNTIMEINCONSISTENCY. The header err stays 0.
    fn multi(&mut self, m: &MultiRequest) -> Outcome {
        let mut results = Vec::with_capacity(m.ops.len());
        let mut failed = None;
        let mark = self.events.len();
        self.tree.begin();
        for (i, op) in m.ops.iter().enumerate() {
            match self.multi_op(op) {
                Ok(r) => results.push(r),
                Err(e) => {
                    failed = Some((i, e));
                    break;
                }
            }
        }
        if let Some((at, err)) = failed {
            self.tree.rollback();
            self.events.truncate(mark);
            results = (0..m.ops.len())
                .map(|i| MultiResult::Error {
                    err: match i.cmp(&at) {
                        std::cmp::Ordering::Less => 0,
                        std::cmp::Ordering::Equal => err.code(),
                        std::cmp::Ordering::Greater => ErrorCode::RuntimeInconsistency.code(),
                    },
                })
                .collect();
        } else {
            self.tree.commit();
        }
        Outcome::Multi(
            MultiResponse { results },
            failed.map_or(0, |(_, e)| e.code()),
        )
    }

    fn multi_op(&mut self, op: &MultiOp) -> Result<MultiResult, ErrorCode> {
        Ok(match op {
            // ZooKeeper 3.8.0 answers create and create2 inside multi with a
            // CreateResult of type 1 (path only) — create2 getting its Stat
            // (type 15) came with 3.8.2 and 3.9 (ZOOKEEPER-4026) — while
            // createContainer and createTTL already answer type 15 with a Stat.
            MultiOp::Create(code, r) => {
                let (path, stat) = self.create(NewNode::create(*code, r))?;
                let path = path.to_string();
                match code {
                    OpCode::CreateContainer => MultiResult::Create2 { path, stat },
                    OpCode::Create2 if self.settings.compat == Compat::V3_9 => {
                        MultiResult::Create2 { path, stat }
                    }
                    _ => MultiResult::Create { path },
                }
            }
            MultiOp::CreateTtl(r) => {
                let (path, stat) = self.create(NewNode::ttl(r))?;
                MultiResult::Create2 {
                    path: path.to_string(),
                    stat,
                }
            }
            MultiOp::Delete(r) => {
                self.tree
                    .delete(self.zxid, &r.path, r.version, self.caller, self.events)?;
                MultiResult::Delete
            }
            MultiOp::SetData(r) => MultiResult::SetData {
                stat: self.set_data(r)?,
            },
            MultiOp::Check(r) => {
                self.tree.check(&r.path, r.version, self.caller)?;
                MultiResult::Check
            }
            MultiOp::GetData(_) | MultiOp::GetChildren(_) => {
                return Err(ErrorCode::MarshallingError)
            }
        })
    }
}

/// The create-family request fields, whichever op carried them.
struct NewNode<'a> {
    path: &'a Arc<str>,
    data: &'a Option<Bytes>,
    acl: &'a [Acl],
    flags: i32,
    /// `Some` only for createTTL (21).
    ttl: Option<i64>,
}

impl<'a> NewNode<'a> {
    fn create(code: OpCode, r: &'a CreateRequest) -> NewNode<'a> {
        // createContainer (19) makes a container whatever the flags say.
        let flags = if code == OpCode::CreateContainer {
            CONTAINER_FLAGS
        } else {
            r.flags
        };
        NewNode {
            path: &r.path,
            data: &r.data,
            acl: &r.acl,
            flags,
            ttl: None,
        }
    }

    fn ttl(r: &'a CreateTtlRequest) -> NewNode<'a> {
        NewNode {
            path: &r.path,
            data: &r.data,
            acl: &r.acl,
            flags: r.flags,
            ttl: Some(r.ttl),
        }
    }
}

fn create_reply(code: OpCode, path: Arc<str>, stat: Stat) -> Reply {
    match code {
        OpCode::Create => Reply::Path(path),
        _ => Reply::PathStat(path, stat),
    }
}
