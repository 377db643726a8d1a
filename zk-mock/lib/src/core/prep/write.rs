//! Prep for writes: create (every create op), delete, setData, setACL,
//! check, multi, and the ops a client may send that are failed transactions
//! (reconfig, the server-internal ones, a multi of reads). Each becomes a
//! `Txn` with its own zxid, as `PrepRequestProcessor` makes them, and is
//! committed: applied by every replica, answered by the connection's server.

use crate::core::{Flow, State};
use crate::proto::*;
use crate::Compat;

use super::{Applied, Ctx};
use crate::txn::TxnOp;

impl State {
    /// Prepares and commits one request of this family.
    pub(super) fn handle_write(&mut self, cx: Ctx<'_>, req: Request) -> (Flow, Applied) {
        let op = match req {
            Request::Check(_) if self.settings.compat == Compat::V3_9 => {
                // 3.9: `Request.isValid` is false for check outside multi.
                return self.unimplemented(cx.conn, cx.xid);
            }
            // A failed transaction (a zxid is consumed), the connection
            // stays open: RECONFIGDISABLED while reconfigEnabled is false
            // (the default), else UNIMPLEMENTED, as a standalone server
            // is no LeaderZooKeeperServer (PrepRequestProcessor).
            Request::Reconfig(_) if !self.settings.reconfig_enabled => {
                TxnOp::Error(ErrorCode::ReconfigDisabled)
            }
            // An ensemble's leader applies it (`PrepRequestProcessor`).
            Request::Reconfig(r) if self.ensemble.quorum.is_some() => {
                let zxid = self.next_zxid();
                let op = match self.prep_reconfig(&r, cx.caller.auth, zxid) {
                    Ok(data) => TxnOp::SetConfig(data),
                    Err(e) => TxnOp::Error(e),
                };
                let applied = self.prep_at(
                    zxid,
                    cx.session,
                    cx.auth.clone(),
                    op,
                    Some((cx.conn, cx.xid)),
                );
                if applied.err == 0 {
                    self.after_reconfig();
                }
                return (Flow::Continue, applied);
            }
            Request::Reconfig(_) => TxnOp::Error(ErrorCode::Unimplemented),
            // What 3.8.0 answers a client that sends these server-internal
            // ops: deleteContainer is BADARGUMENTS, createSession (no body
            // a client could send) MARSHALLINGERROR; both consume a zxid.
            Request::InternalOp(OpCode::DeleteContainer) => TxnOp::Error(ErrorCode::BadArguments),
            Request::InternalOp(_) => TxnOp::Error(ErrorCode::MarshallingError),
            // A multi (14) of read ops: MultiOperationRecord marks it a read
            // and PrepRequestProcessor fails it as a txn (zxid consumed).
            Request::Multi(m) if m.ops.iter().any(MultiOp::is_read) => {
                TxnOp::Error(ErrorCode::MarshallingError)
            }
            req => TxnOp::Write(req),
        };
        let applied = self.submit(cx, op);
        (Flow::Continue, applied)
    }

    /// Prep's last step for a client's request: a zxid, then commit.
    pub(super) fn submit(&mut self, cx: Ctx<'_>, op: TxnOp) -> Applied {
        self.prep(cx.session, cx.auth.clone(), op, Some((cx.conn, cx.xid)))
    }
}
