//! Writes: create (every create op), delete, setData, setACL, check, and
//! the ops a client may send that are failed transactions (reconfig, the
//! server-internal ones). Each allocates its zxid first, as
//! `PrepRequestProcessor` does.

use crate::proto::*;
use crate::state::{Flow, State};

use bytes::Bytes;

use crate::tree::{Caller, CreateArgs, CreateMode, TreeEvent};
use crate::Compat;

use super::{Applied, Ctx, Reply};

/// `EphemeralType.TTL`'s largest ttl (40 bits of ms).
const MAX_TTL: i64 = 0xFF_FFFF_FFFF;

/// `CreateMode.CONTAINER`'s flag value.
const CONTAINER_FLAGS: i32 = 4;

impl State {
    /// Applies one request of this family.
    pub(super) fn apply_write(&mut self, cx: Ctx<'_>, req: Request) -> (Flow, Applied) {
        let Ctx {
            conn, xid, caller, ..
        } = cx;
        let applied = match req {
            Request::Create(code, r) => self.write(conn, xid, |st, zxid, events| {
                let (path, stat) = st.create(zxid, NewNode::create(code, &r), caller, events)?;
                Ok(create_reply(code, path, stat))
            }),
            Request::CreateTtl(r) => self.write(conn, xid, |st, zxid, events| {
                let (path, stat) = st.create(zxid, NewNode::ttl(&r), caller, events)?;
                Ok(create_reply(OpCode::CreateTtl, path, stat))
            }),
            Request::Delete(r) => self.write(conn, xid, |st, zxid, events| {
                st.tree.delete(zxid, &r.path, r.version, caller, events)?;
                Ok(Reply::None)
            }),
            Request::SetData(r) => self.write(conn, xid, |st, zxid, events| {
                Ok(Reply::Stat(st.set_data(zxid, &r, caller, events)?))
            }),
            Request::SetAcl(r) => self.write(conn, xid, |st, _zxid, _events| {
                let stat = st.tree.set_acl(&r.path, &r.acl, r.version, caller)?;
                Ok(Reply::Stat(stat))
            }),
            Request::Check(_) if self.settings.compat == Compat::V3_9 => {
                // 3.9: `Request.isValid` is false for check outside multi.
                return self.unimplemented(conn, xid);
            }
            Request::Check(r) => {
                // ZooKeeper 3.8.0 treats a standalone check as a transaction: it
                // consumes a zxid and failures are answered, but a *successful*
                // check is never answered (3.8.6 answers UNIMPLEMENTED and closes
                // instead). We follow the 3.8.0 server the conformance suite runs.
                let zxid = self.tree.next_zxid();
                match self.tree.check(&r.path, r.version, caller) {
                    Ok(()) => Applied { err: 0, zxid },
                    Err(e) => {
                        self.reply_header(conn, xid, zxid, e.code());
                        Applied {
                            err: e.code(),
                            zxid,
                        }
                    }
                }
            }
            Request::Reconfig => {
                // A failed transaction (a zxid is consumed), the connection
                // stays open: RECONFIGDISABLED while reconfigEnabled is false
                // (the default), else UNIMPLEMENTED, as a standalone server
                // is no LeaderZooKeeperServer (PrepRequestProcessor).
                let zxid = self.tree.next_zxid();
                let err = if self.settings.reconfig_enabled {
                    ErrorCode::Unimplemented.code()
                } else {
                    ErrorCode::ReconfigDisabled.code()
                };
                self.reply_header(conn, xid, zxid, err);
                Applied { err, zxid }
            }
            Request::InternalOp(code) => {
                // What 3.8.0 answers a client that sends these server-internal
                // ops: deleteContainer is BADARGUMENTS, createSession (no body
                // a client could send) MARSHALLINGERROR; both consume a zxid.
                let zxid = self.tree.next_zxid();
                let err = if code == OpCode::DeleteContainer {
                    ErrorCode::BadArguments
                } else {
                    ErrorCode::MarshallingError
                }
                .code();
                self.reply_header(conn, xid, zxid, err);
                Applied { err, zxid }
            }
            // The router sends only this family here.
            _ => return self.unimplemented(conn, xid),
        };
        (Flow::Continue, applied)
    }

    /// create in `pRequest2TxnCreate` order: flags, TTL rules, then the tree's checks.
    pub(super) fn create(
        &mut self,
        zxid: i64,
        new: NewNode<'_>,
        caller: Caller<'_>,
        events: &mut Vec<TreeEvent>,
    ) -> Result<(String, Stat), ErrorCode> {
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
        let time = self.clock.wall_ms();
        let args = CreateArgs {
            path: new.path,
            data: new.data.clone(),
            acl: new.acl,
            mode,
            ttl,
        };
        self.tree.create(zxid, time, args, caller, events)
    }

    /// setData, alone or inside multi: the transaction's time is now.
    pub(super) fn set_data(
        &mut self,
        zxid: i64,
        r: &SetDataRequest,
        caller: Caller<'_>,
        events: &mut Vec<TreeEvent>,
    ) -> Result<Stat, ErrorCode> {
        let time = self.clock.wall_ms();
        self.tree.set_data(
            zxid,
            time,
            &r.path,
            r.data.clone(),
            r.version,
            caller,
            events,
        )
    }
}

/// The create-family request fields, whichever op carried them.
pub(super) struct NewNode<'a> {
    path: &'a str,
    data: &'a Option<Bytes>,
    acl: &'a [Acl],
    flags: i32,
    /// `Some` only for createTTL (21).
    ttl: Option<i64>,
}

impl<'a> NewNode<'a> {
    pub(super) fn create(code: OpCode, r: &'a CreateRequest) -> NewNode<'a> {
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

    pub(super) fn ttl(r: &'a CreateTtlRequest) -> NewNode<'a> {
        NewNode {
            path: &r.path,
            data: &r.data,
            acl: &r.acl,
            flags: r.flags,
            ttl: Some(r.ttl),
        }
    }
}

fn create_reply(code: OpCode, path: String, stat: Stat) -> Reply {
    match code {
        OpCode::Create => Reply::Path(path),
        _ => Reply::PathStat(path, stat),
    }
}
