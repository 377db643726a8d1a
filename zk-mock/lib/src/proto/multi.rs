//! `multi` (14) and `multiRead` (22): `MultiOperationRecord` and `MultiResponse`.
//!
//! Both are a sequence of `MultiHeader {int type; boolean done; int err}` each
//! followed by its op's record, ended by the header `{-1, true, -1}`.

use bytes::{Bytes, BytesMut};

use super::data::{
    CheckVersionRequest, Create2Response, CreateRequest, CreateResponse, CreateTtlRequest,
    DeleteRequest, ErrorResponse, GetChildrenResponse, GetDataResponse, PathWatchRequest,
    SetDataRequest, StatResponse,
};
use super::op_code::OpCode;
use super::stat::Stat;
use crate::codec::{record, DecodeError, Field, Parse, Record};

record! {
    /// `MultiHeader {int type; boolean done; int err}`.
    pub struct MultiHeader {
        /// The op code of the record that follows (−1 for an error result and the end).
        pub op_type: i32,
        /// True only on the end marker.
        pub done: bool,
        /// −1 in requests and on the end marker; in a reply, an error result's
        /// code, else 0.
        pub err: i32,
    }
}

impl MultiHeader {
    /// The end marker `{-1, true, -1}`.
    pub const END: MultiHeader = MultiHeader {
        op_type: -1,
        done: true,
        err: -1,
    };
}

/// One operation of a multi request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiOp {
    /// create (1), create2 (15) or createContainer (19): the op code says which result type.
    Create(OpCode, CreateRequest),
    /// createTTL (21).
    CreateTtl(CreateTtlRequest),
    /// delete (2).
    Delete(DeleteRequest),
    /// setData (5).
    SetData(SetDataRequest),
    /// check (13): the node's version must match.
    Check(CheckVersionRequest),
    /// getData (4), in a multiRead (its watch flag is ignored).
    GetData(PathWatchRequest),
    /// getChildren (8), in a multiRead (its watch flag is ignored).
    GetChildren(PathWatchRequest),
}

impl MultiOp {
    /// The op code in this op's header.
    pub fn op_code(&self) -> OpCode {
        match self {
            MultiOp::Create(op, _) => *op,
            MultiOp::CreateTtl(_) => OpCode::CreateTtl,
            MultiOp::Delete(_) => OpCode::Delete,
            MultiOp::SetData(_) => OpCode::SetData,
            MultiOp::Check(_) => OpCode::Check,
            MultiOp::GetData(_) => OpCode::GetData,
            MultiOp::GetChildren(_) => OpCode::GetChildren,
        }
    }

    /// Whether the op reads (getData, getChildren) rather than writes.
    pub fn is_read(&self) -> bool {
        matches!(self, MultiOp::GetData(_) | MultiOp::GetChildren(_))
    }

    /// The path the op names.
    pub fn path(&self) -> &str {
        match self {
            MultiOp::Create(_, r) => &r.path,
            MultiOp::CreateTtl(r) => &r.path,
            MultiOp::Delete(r) => &r.path,
            MultiOp::SetData(r) => &r.path,
            MultiOp::Check(r) => &r.path,
            MultiOp::GetData(r) | MultiOp::GetChildren(r) => &r.path,
        }
    }
}

/// `MultiOperationRecord`: the ops of a multi or multiRead request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MultiRequest {
    /// The ops, in order.
    pub ops: Vec<MultiOp>,
}

impl Record for MultiRequest {
    fn encode(&self, buf: &mut BytesMut) {
        for op in &self.ops {
            MultiHeader {
                op_type: op.op_code() as i32,
                done: false,
                err: -1,
            }
            .encode(buf);
            match op {
                MultiOp::Create(_, r) => r.encode(buf),
                MultiOp::CreateTtl(r) => r.encode(buf),
                MultiOp::Delete(r) => r.encode(buf),
                MultiOp::SetData(r) => r.encode(buf),
                MultiOp::Check(r) => r.encode(buf),
                MultiOp::GetData(r) | MultiOp::GetChildren(r) => r.encode(buf),
            }
        }
        MultiHeader::END.encode(buf);
    }

    /// Mirrors `MultiOperationRecord.deserialize`: an unknown op type, or read
    /// and write ops mixed in one request, is an error (MARSHALLINGERROR).
    fn parse(mut input: &[u8]) -> Parse<'_, Self> {
        let mut ops = Vec::new();
        let mut kind: Option<bool> = None;
        loop {
            let (rest, h) = MultiHeader::parse(input)?;
            input = rest;
            if h.done {
                break;
            }
            let (rest, op) = match OpCode::from_i32(h.op_type) {
                Some(code @ (OpCode::Create | OpCode::Create2 | OpCode::CreateContainer)) => {
                    let (r, c) = CreateRequest::parse(input)?;
                    (r, MultiOp::Create(code, c))
                }
                Some(OpCode::CreateTtl) => {
                    let (r, c) = CreateTtlRequest::parse(input)?;
                    (r, MultiOp::CreateTtl(c))
                }
                Some(OpCode::Delete) => {
                    let (r, c) = DeleteRequest::parse(input)?;
                    (r, MultiOp::Delete(c))
                }
                Some(OpCode::SetData) => {
                    let (r, c) = SetDataRequest::parse(input)?;
                    (r, MultiOp::SetData(c))
                }
                Some(OpCode::Check) => {
                    let (r, c) = CheckVersionRequest::parse(input)?;
                    (r, MultiOp::Check(c))
                }
                Some(OpCode::GetData) => {
                    let (r, c) = PathWatchRequest::parse(input)?;
                    (r, MultiOp::GetData(c))
                }
                Some(OpCode::GetChildren) => {
                    let (r, c) = PathWatchRequest::parse(input)?;
                    (r, MultiOp::GetChildren(c))
                }
                _ => {
                    return Err(nom::Err::Failure(DecodeError::Invalid(
                        "invalid type of op in multi",
                    )))
                }
            };
            match kind {
                None => kind = Some(op.is_read()),
                Some(k) if k != op.is_read() => {
                    return Err(nom::Err::Failure(DecodeError::Invalid(
                        "read and write ops mixed in multi",
                    )))
                }
                Some(_) => {}
            }
            ops.push(op);
            input = rest;
        }
        Ok((input, MultiRequest { ops }))
    }
}

/// One result of a multi or multiRead reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiResult {
    /// A created node, type 1 with the path only: what 3.8.0 answers for
    /// create and create2.
    Create {
        /// The node's actual path, with any sequential suffix.
        path: String,
    },
    /// A created node, type 15 with path and Stat: createContainer and
    /// createTTL, and create2 from 3.8.2 on.
    Create2 {
        /// The node's actual path, with any sequential suffix.
        path: String,
        /// The new node's Stat.
        stat: Stat,
    },
    /// A delete succeeded (type 2, no body).
    Delete,
    /// A setData succeeded (type 5).
    SetData {
        /// The node's Stat after the write.
        stat: Stat,
    },
    /// A check succeeded (type 13, no body).
    Check,
    /// A multiRead's getData (type 4).
    GetData {
        /// The node's data (`None` when stored as null).
        data: Option<Bytes>,
        /// The node's Stat.
        stat: Stat,
    },
    /// A multiRead's getChildren (type 8).
    GetChildren {
        /// The child names.
        children: Vec<String>,
    },
    /// A failed op, type −1 with `ErrorResponse{err}`. In a failed multi every
    /// op has one: the failing op its code, those before it 0 (OK), those
    /// after it RUNTIMEINCONSISTENCY.
    Error {
        /// The error code ([`ErrorCode`](super::ErrorCode) as an `i32`).
        err: i32,
    },
}

/// `MultiResponse`: one result per op.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MultiResponse {
    /// The results, in op order.
    pub results: Vec<MultiResult>,
}

impl Record for MultiResponse {
    fn encode(&self, buf: &mut BytesMut) {
        for r in &self.results {
            let (op_type, err) = match r {
                MultiResult::Create { .. } => (OpCode::Create as i32, 0),
                MultiResult::Create2 { .. } => (OpCode::Create2 as i32, 0),
                MultiResult::Delete => (OpCode::Delete as i32, 0),
                MultiResult::SetData { .. } => (OpCode::SetData as i32, 0),
                MultiResult::Check => (OpCode::Check as i32, 0),
                MultiResult::GetData { .. } => (OpCode::GetData as i32, 0),
                MultiResult::GetChildren { .. } => (OpCode::GetChildren as i32, 0),
                MultiResult::Error { err } => (-1, *err),
            };
            MultiHeader {
                op_type,
                done: false,
                err,
            }
            .encode(buf);
            match r {
                MultiResult::Create { path } => path.put(buf),
                MultiResult::Create2 { path, stat } => {
                    path.put(buf);
                    stat.put(buf);
                }
                MultiResult::Delete | MultiResult::Check => {}
                MultiResult::SetData { stat } => stat.put(buf),
                MultiResult::GetData { data, stat } => {
                    data.put(buf);
                    stat.put(buf);
                }
                MultiResult::GetChildren { children } => children.put(buf),
                MultiResult::Error { err } => err.put(buf),
            }
        }
        MultiHeader::END.encode(buf);
    }

    fn parse(mut input: &[u8]) -> Parse<'_, Self> {
        let mut results = Vec::new();
        loop {
            let (rest, h) = MultiHeader::parse(input)?;
            input = rest;
            if h.done {
                break;
            }
            let (rest, r) = match h.op_type {
                1 => {
                    let (r, c) = CreateResponse::parse(input)?;
                    (r, MultiResult::Create { path: c.path })
                }
                15 => {
                    let (r, c) = Create2Response::parse(input)?;
                    (
                        r,
                        MultiResult::Create2 {
                            path: c.path,
                            stat: c.stat,
                        },
                    )
                }
                2 => (input, MultiResult::Delete),
                13 => (input, MultiResult::Check),
                5 => {
                    let (r, c) = StatResponse::parse(input)?;
                    (r, MultiResult::SetData { stat: c.stat })
                }
                4 => {
                    let (r, c) = GetDataResponse::parse(input)?;
                    (
                        r,
                        MultiResult::GetData {
                            data: c.data,
                            stat: c.stat,
                        },
                    )
                }
                8 => {
                    let (r, c) = GetChildrenResponse::parse(input)?;
                    (
                        r,
                        MultiResult::GetChildren {
                            children: c.children,
                        },
                    )
                }
                -1 => {
                    let (r, c) = ErrorResponse::parse(input)?;
                    (r, MultiResult::Error { err: c.err })
                }
                _ => {
                    return Err(nom::Err::Failure(DecodeError::Invalid(
                        "unknown multi result type",
                    )))
                }
            };
            results.push(r);
            input = rest;
        }
        Ok((input, MultiResponse { results }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::assert_round_trip;
    use crate::proto::acl::Acl;

    #[test]
    fn multi_request_round_trips() {
        let ops = vec![
            MultiOp::Create(
                OpCode::Create2,
                CreateRequest {
                    path: "/a".into(),
                    data: None,
                    acl: Acl::open_shared(),
                    flags: 0,
                },
            ),
            MultiOp::Check(CheckVersionRequest {
                path: "/a".into(),
                version: 0,
            }),
            MultiOp::SetData(SetDataRequest {
                path: "/a".into(),
                data: Some(Bytes::from_static(b"d")),
                version: -1,
            }),
            MultiOp::Delete(DeleteRequest {
                path: "/a".into(),
                version: -1,
            }),
        ];
        assert_round_trip(&MultiRequest { ops });
        assert_round_trip(&MultiRequest::default());
        let reads = vec![
            MultiOp::GetData(PathWatchRequest {
                path: "/a".into(),
                watch: false,
            }),
            MultiOp::GetChildren(PathWatchRequest {
                path: "/".into(),
                watch: false,
            }),
        ];
        assert_round_trip(&MultiRequest { ops: reads });
    }

    #[test]
    fn mixed_or_unknown_ops_are_invalid() {
        let mixed = MultiRequest {
            ops: vec![
                MultiOp::GetData(PathWatchRequest {
                    path: "/a".into(),
                    watch: false,
                }),
                MultiOp::Delete(DeleteRequest {
                    path: "/a".into(),
                    version: -1,
                }),
            ],
        };
        assert!(matches!(
            MultiRequest::decode(&mixed.to_bytes()),
            Err(DecodeError::Invalid(_))
        ));
        let mut b = BytesMut::new();
        MultiHeader {
            op_type: 3,
            done: false,
            err: -1,
        }
        .encode(&mut b);
        PathWatchRequest {
            path: "/a".into(),
            watch: false,
        }
        .encode(&mut b);
        MultiHeader::END.encode(&mut b);
        assert!(MultiRequest::decode(&b).is_err());
    }

    #[test]
    fn multi_response_round_trips_and_matches_the_documented_failure_bytes() {
        let results = vec![
            MultiResult::Create { path: "/a".into() },
            MultiResult::Create2 {
                path: "/b".into(),
                stat: Stat::default(),
            },
            MultiResult::Delete,
            MultiResult::SetData {
                stat: Stat::default(),
            },
            MultiResult::Check,
            MultiResult::GetData {
                data: None,
                stat: Stat::default(),
            },
            MultiResult::GetChildren {
                children: vec!["x".into()],
            },
            MultiResult::Error { err: -101 },
        ];
        assert_round_trip(&MultiResponse { results });
        let failed = MultiResponse {
            results: vec![
                MultiResult::Error { err: 0 },
                MultiResult::Error { err: -103 },
                MultiResult::Error { err: -2 },
            ],
        };
        let expect: Vec<u8> = [
            &[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0][..],
            &[0, 0, 0, 0],
            &[0xff, 0xff, 0xff, 0xff, 0, 0xff, 0xff, 0xff, 0x99],
            &[0xff, 0xff, 0xff, 0x99],
            &[0xff, 0xff, 0xff, 0xff, 0, 0xff, 0xff, 0xff, 0xfe],
            &[0xff, 0xff, 0xff, 0xfe],
            &[0xff, 0xff, 0xff, 0xff, 1, 0xff, 0xff, 0xff, 0xff],
        ]
        .concat();
        assert_eq!(&failed.to_bytes()[..], &expect[..]);
    }
}
