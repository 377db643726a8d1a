//! multi (14) and multiRead (22).

use crate::proto::*;
use crate::session::ConnId;
use crate::state::{Flow, State};

use crate::codec::Record;
use crate::tree::{Caller, TreeEvent};
use crate::Compat;

use super::write::NewNode;
use super::{Applied, Ctx};

impl State {
    /// Applies one request of this family.
    pub(super) fn apply_multi(&mut self, cx: Ctx<'_>, req: Request) -> (Flow, Applied) {
        let Ctx {
            conn, xid, caller, ..
        } = cx;
        let applied = match req {
            Request::Multi(m) if !m.ops.iter().any(MultiOp::is_read) => {
                self.multi(conn, xid, &m, caller)
            }
            Request::Multi(_) => {
                // A multi (14) of read ops: MultiOperationRecord marks it a read
                // and PrepRequestProcessor fails it as a txn (zxid consumed).
                let zxid = self.tree.next_zxid();
                let err = ErrorCode::MarshallingError.code();
                self.reply_header(conn, xid, zxid, err);
                Applied { err, zxid }
            }
            Request::MultiRead(m) if m.ops.iter().any(|op| !op.is_read()) => {
                // A multiRead (22) of write ops: 3.8.0 answers MARSHALLINGERROR
                // in the header and still sends an empty MultiResponse body.
                let zxid = self.tree.last_zxid();
                let err = ErrorCode::MarshallingError.code();
                let mut b = bytes::BytesMut::new();
                ReplyHeader { xid, zxid, err }.encode(&mut b);
                MultiResponse::default().encode(&mut b);
                self.send(conn, b.freeze());
                Applied { err, zxid }
            }
            Request::MultiRead(m) => {
                let results = m
                    .ops
                    .iter()
                    .map(|op| self.multi_read_op(op, caller))
                    .collect();
                let zxid = self.tree.last_zxid();
                self.reply(conn, xid, zxid, &MultiResponse { results });
                Applied { err: 0, zxid }
            }
            // The router sends only this family here.
            _ => return self.unimplemented(conn, xid),
        };
        (Flow::Continue, applied)
    }

    /// multi: every op shares one zxid; ops see earlier ops' changes; on the
    /// first failure nothing is applied, earlier ops report 0, the failing op
    /// its code and later ops RUNTIMEINCONSISTENCY. The header err stays 0.
    fn multi(&mut self, conn: ConnId, xid: i32, m: &MultiRequest, caller: Caller<'_>) -> Applied {
        let zxid = self.tree.next_zxid();
        let mut events = Vec::new();
        let mut results = Vec::with_capacity(m.ops.len());
        let mut failed = None;
        self.tree.begin();
        for (i, op) in m.ops.iter().enumerate() {
            match self.multi_write_op(zxid, op, caller, &mut events) {
                Ok(r) => results.push(r),
                Err(e) => {
                    failed = Some((i, e));
                    break;
                }
            }
        }
        if let Some((at, err)) = failed {
            self.tree.rollback();
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
            let session = self.session_of(conn);
            self.fire(&events, zxid, session);
        }
        self.reply(conn, xid, zxid, &MultiResponse { results });
        Applied {
            err: failed.map_or(0, |(_, e)| e.code()),
            zxid,
        }
    }

    fn multi_write_op(
        &mut self,
        zxid: i64,
        op: &MultiOp,
        caller: Caller<'_>,
        events: &mut Vec<TreeEvent>,
    ) -> Result<MultiResult, ErrorCode> {
        Ok(match op {
            // ZooKeeper 3.8.0 answers create and create2 inside multi with a
            // CreateResult of type 1 (path only) — create2 getting its Stat
            // (type 15) came with 3.8.2 and 3.9 (ZOOKEEPER-4026) — while
            // createContainer and createTTL already answer type 15 with a Stat.
            MultiOp::Create(code, r) => {
                let (path, stat) = self.create(zxid, NewNode::create(*code, r), caller, events)?;
                match code {
                    OpCode::CreateContainer => MultiResult::Create2 { path, stat },
                    OpCode::Create2 if self.settings.compat == Compat::V3_9 => {
                        MultiResult::Create2 { path, stat }
                    }
                    _ => MultiResult::Create { path },
                }
            }
            MultiOp::CreateTtl(r) => {
                let (path, stat) = self.create(zxid, NewNode::ttl(r), caller, events)?;
                MultiResult::Create2 { path, stat }
            }
            MultiOp::Delete(r) => {
                self.tree.delete(zxid, &r.path, r.version, caller, events)?;
                MultiResult::Delete
            }
            MultiOp::SetData(r) => MultiResult::SetData {
                stat: self.set_data(zxid, r, caller, events)?,
            },
            MultiOp::Check(r) => {
                self.tree.check(&r.path, r.version, caller)?;
                MultiResult::Check
            }
            MultiOp::GetData(_) | MultiOp::GetChildren(_) => {
                return Err(ErrorCode::MarshallingError)
            }
        })
    }

    /// One op of a multiRead: evaluated on its own, failures do not cascade.
    fn multi_read_op(&self, op: &MultiOp, caller: Caller<'_>) -> MultiResult {
        let result = match op {
            MultiOp::GetData(r) => {
                self.tree
                    .read(&r.path, perms::READ, caller)
                    .map(|n| MultiResult::GetData {
                        data: n.data.clone(),
                        stat: n.stat(),
                    })
            }
            MultiOp::GetChildren(r) => {
                self.tree
                    .read(&r.path, perms::READ, caller)
                    .map(|n| MultiResult::GetChildren {
                        children: n.listing().to_vec(),
                    })
            }
            _ => Err(ErrorCode::MarshallingError),
        };
        result.unwrap_or_else(|e| MultiResult::Error { err: e.code() })
    }
}
