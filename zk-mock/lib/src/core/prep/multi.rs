//! multiRead (22): each op read on the connection's server, on its own.
//! (A multi (14) is a write: see `write.rs` and `txn/mod.rs`.)

use crate::codec::Record;
use crate::core::{Flow, State};
use crate::ensemble::Replica;
use crate::proto::*;
use crate::tree::Caller;

use super::{Applied, Ctx};

impl State {
    /// Answers a multiRead.
    pub(super) fn handle_multi_read(&mut self, cx: Ctx<'_>, req: Request) -> (Flow, Applied) {
        let Ctx {
            conn,
            server,
            xid,
            caller,
            ..
        } = cx;
        let zxid = self.ensemble.servers[server].last_zxid();
        let applied = match req {
            Request::MultiRead(m) if m.ops.iter().any(|op| !op.is_read()) => {
                // A multiRead (22) of write ops: 3.8.0 answers MARSHALLINGERROR
                // in the header and still sends an empty MultiResponse body.
                let err = ErrorCode::MarshallingError.code();
                let mut b = bytes::BytesMut::new();
                ReplyHeader { xid, zxid, err }.encode(&mut b);
                MultiResponse::default().encode(&mut b);
                self.send(conn, b.freeze());
                Applied { err, zxid }
            }
            Request::MultiRead(m) => {
                let replica = &self.ensemble.servers[server];
                let results = m
                    .ops
                    .iter()
                    .map(|op| multi_read_op(replica, op, caller))
                    .collect();
                self.reply(conn, xid, zxid, &MultiResponse { results });
                Applied { err: 0, zxid }
            }
            // The router sends only this family here.
            _ => return self.unimplemented(conn, xid),
        };
        (Flow::Continue, applied)
    }
}

/// One op of a multiRead: evaluated on its own, failures do not cascade.
fn multi_read_op(replica: &Replica, op: &MultiOp, caller: Caller<'_>) -> MultiResult {
    let tree = &replica.tree;
    let result = match op {
        MultiOp::GetData(r) => {
            tree.read(&r.path, perms::READ, caller)
                .map(|n| MultiResult::GetData {
                    data: n.data.clone(),
                    stat: n.stat(),
                })
        }
        MultiOp::GetChildren(r) => {
            tree.read(&r.path, perms::READ, caller)
                .map(|n| MultiResult::GetChildren {
                    children: n.listing().to_vec(),
                })
        }
        _ => Err(ErrorCode::MarshallingError),
    };
    result.unwrap_or_else(|e| MultiResult::Error { err: e.code() })
}
