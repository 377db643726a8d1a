//! ZooKeeper's Jute records, one file per family, field names and order from
//! `zookeeper.jute`, and [`Request`]: a request body decoded by its op code.

pub mod acl;
pub mod auth;
pub mod connect;
pub mod data;
pub mod error_code;
pub mod header;
pub mod multi;
pub mod op_code;
pub mod stat;
pub mod watch;

pub use acl::{perms, Acl, Id};
pub use auth::{AuthPacket, ClientInfo, SaslResponse, WhoAmIResponse};
pub use connect::{ConnectRequest, ConnectResponse};
pub use data::*;
pub use error_code::ErrorCode;
pub use header::{
    ReplyHeader, RequestHeader, XID_AUTH, XID_NOTIFICATION, XID_PING, XID_SET_WATCHES,
};
pub use multi::{MultiHeader, MultiOp, MultiRequest, MultiResponse, MultiResult};
pub use op_code::OpCode;
pub use stat::{Stat, STAT_LEN};
pub use watch::{
    event_type, AddWatchRequest, EventType, SetWatches, SetWatches2, WatcherEvent, WatchesRequest,
    STATE_SYNC_CONNECTED,
};

use crate::codec::{DecodeError, Record};

/// A request body decoded according to its op code.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Request {
    /// create (1), create2 (15) and createContainer (19).
    Create(OpCode, CreateRequest),
    /// createTTL (21).
    CreateTtl(CreateTtlRequest),
    /// delete (2).
    Delete(DeleteRequest),
    /// exists (3).
    Exists(PathWatchRequest),
    /// getData (4).
    GetData(PathWatchRequest),
    /// setData (5).
    SetData(SetDataRequest),
    /// getACL (6).
    GetAcl(PathRequest),
    /// setACL (7).
    SetAcl(SetAclRequest),
    /// getChildren (8).
    GetChildren(PathWatchRequest),
    /// getChildren2 (12): the children and the node's Stat.
    GetChildren2(PathWatchRequest),
    /// sync (9).
    Sync(PathRequest),
    /// check (13) outside multi: a transaction on 3.8.0, which answers a
    /// failure and leaves a success unanswered.
    Check(CheckVersionRequest),
    /// ping (11), no body.
    Ping,
    /// multi (14): write ops in one transaction.
    Multi(MultiRequest),
    /// multiRead (22): read ops, each answered on its own.
    MultiRead(MultiRequest),
    /// closeSession (−11), no body.
    CloseSession,
    /// setWatches2 (105); setWatches (101) is decoded into the same shape, with
    /// no persistent watches.
    SetWatches(SetWatches2),
    /// getEphemerals (103): the path is a prefix.
    GetEphemerals(PathRequest),
    /// getAllChildrenNumber (104).
    GetAllChildrenNumber(PathRequest),
    /// checkWatches (17).
    CheckWatches(WatchesRequest),
    /// removeWatches (18).
    RemoveWatches(WatchesRequest),
    /// whoAmI (107), no body.
    WhoAmI,
    /// auth (100).
    Auth(AuthPacket),
    /// addWatch (106).
    AddWatch(AddWatchRequest),
    /// reconfig (16): its `ReconfigRequest` (a standalone server refuses it;
    /// an ensemble's leader applies it).
    Reconfig(ReconfigRequest),
    /// sasl (102), with its token.
    Sasl(Option<bytes::Bytes>),
    /// deleteContainer (20) or createSession (−10) sent by a client: valid op
    /// codes that a standalone server fails as transactions.
    InternalOp(OpCode),
}

impl Request {
    /// The path the request names, if any (for logs and the recorder).
    pub fn path(&self) -> Option<&str> {
        Some(match self {
            Request::Create(_, r) => &r.path,
            Request::CreateTtl(r) => &r.path,
            Request::Delete(r) => &r.path,
            Request::Exists(r)
            | Request::GetData(r)
            | Request::GetChildren(r)
            | Request::GetChildren2(r) => &r.path,
            Request::SetData(r) => &r.path,
            Request::GetAcl(r)
            | Request::Sync(r)
            | Request::GetEphemerals(r)
            | Request::GetAllChildrenNumber(r) => &r.path,
            Request::SetAcl(r) => &r.path,
            Request::Check(r) => &r.path,
            Request::CheckWatches(r) | Request::RemoveWatches(r) => &r.path,
            Request::AddWatch(r) => &r.path,
            Request::Ping
            | Request::Multi(_)
            | Request::MultiRead(_)
            | Request::CloseSession
            | Request::SetWatches(_)
            | Request::WhoAmI
            | Request::Auth(_)
            | Request::Reconfig(_)
            | Request::Sasl(_)
            | Request::InternalOp(_) => return None,
        })
    }
}

/// Why a request could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// Not a valid request op for a standalone server (`Request.isValid` is
    /// false), or one this mock does not serve: the server answers
    /// UNIMPLEMENTED and closes the connection.
    #[error("unimplemented op code {0}")]
    Unimplemented(i32),
    /// A valid op whose body does not decode: MARSHALLINGERROR.
    #[error("malformed {0:?} body: {1}")]
    Malformed(OpCode, DecodeError),
}

/// Decodes the body of a request of type `op`.
pub fn decode_request(op: i32, body: &[u8]) -> Result<Request, RequestError> {
    let code = OpCode::from_i32(op).ok_or(RequestError::Unimplemented(op))?;
    let bad = |e| RequestError::Malformed(code, e);
    Ok(match code {
        OpCode::Create | OpCode::Create2 | OpCode::CreateContainer => {
            Request::Create(code, CreateRequest::decode(body).map_err(bad)?)
        }
        OpCode::CreateTtl => Request::CreateTtl(CreateTtlRequest::decode(body).map_err(bad)?),
        OpCode::Delete => Request::Delete(DeleteRequest::decode(body).map_err(bad)?),
        OpCode::Exists => Request::Exists(PathWatchRequest::decode(body).map_err(bad)?),
        OpCode::GetData => Request::GetData(PathWatchRequest::decode(body).map_err(bad)?),
        OpCode::SetData => Request::SetData(SetDataRequest::decode(body).map_err(bad)?),
        OpCode::GetAcl => Request::GetAcl(PathRequest::decode(body).map_err(bad)?),
        OpCode::SetAcl => Request::SetAcl(SetAclRequest::decode(body).map_err(bad)?),
        OpCode::GetChildren => Request::GetChildren(PathWatchRequest::decode(body).map_err(bad)?),
        OpCode::GetChildren2 => Request::GetChildren2(PathWatchRequest::decode(body).map_err(bad)?),
        OpCode::Sync => Request::Sync(PathRequest::decode(body).map_err(bad)?),
        OpCode::Check => Request::Check(CheckVersionRequest::decode(body).map_err(bad)?),
        OpCode::Ping => Request::Ping,
        OpCode::Multi => Request::Multi(MultiRequest::decode(body).map_err(bad)?),
        OpCode::MultiRead => Request::MultiRead(MultiRequest::decode(body).map_err(bad)?),
        OpCode::CloseSession => Request::CloseSession,
        OpCode::SetWatches => {
            let w = SetWatches::decode(body).map_err(bad)?;
            Request::SetWatches(SetWatches2 {
                relative_zxid: w.relative_zxid,
                data_watches: w.data_watches,
                exist_watches: w.exist_watches,
                child_watches: w.child_watches,
                ..Default::default()
            })
        }
        OpCode::SetWatches2 => Request::SetWatches(SetWatches2::decode(body).map_err(bad)?),
        OpCode::GetEphemerals => Request::GetEphemerals(PathRequest::decode(body).map_err(bad)?),
        OpCode::GetAllChildrenNumber => {
            Request::GetAllChildrenNumber(PathRequest::decode(body).map_err(bad)?)
        }
        OpCode::CheckWatches => Request::CheckWatches(WatchesRequest::decode(body).map_err(bad)?),
        OpCode::RemoveWatches => Request::RemoveWatches(WatchesRequest::decode(body).map_err(bad)?),
        OpCode::WhoAmI => Request::WhoAmI,
        OpCode::Reconfig => {
            use crate::codec::jute;
            let parse = |i| -> crate::codec::Parse<'_, ReconfigRequest> {
                let (i, joining) = jute::ustring_opt(i)?;
                let (i, leaving) = jute::ustring_opt(i)?;
                let (i, new_members) = jute::ustring_opt(i)?;
                let (i, cur_config_id) = jute::long(i)?;
                Ok((
                    i,
                    ReconfigRequest {
                        joining,
                        leaving,
                        new_members,
                        cur_config_id,
                    },
                ))
            };
            let (_, r) = parse(body).map_err(|e| bad(jute::into_decode_error(e)))?;
            Request::Reconfig(r)
        }
        OpCode::Sasl => {
            let (_, token) = crate::codec::jute::buffer(body)
                .map_err(|e| bad(crate::codec::jute::into_decode_error(e)))?;
            Request::Sasl(token)
        }
        OpCode::DeleteContainer | OpCode::CreateSession => Request::InternalOp(code),
        OpCode::AddWatch => Request::AddWatch(AddWatchRequest::decode(body).map_err(bad)?),
        OpCode::Auth => Request::Auth(AuthPacket::decode(body).map_err(bad)?),
        _ => return Err(RequestError::Unimplemented(op)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_ops_are_unimplemented_but_check_decodes() {
        let body = CheckVersionRequest {
            path: "/a".into(),
            version: 0,
        }
        .to_bytes();
        assert!(matches!(decode_request(13, &body), Ok(Request::Check(_))));
        assert_eq!(
            decode_request(999, &[]),
            Err(RequestError::Unimplemented(999))
        );
        assert_eq!(
            decode_request(10, &[]),
            Err(RequestError::Unimplemented(10))
        );
    }

    #[test]
    fn short_bodies_are_malformed() {
        assert!(matches!(
            decode_request(4, &[0, 0, 0, 9, b'/']),
            Err(RequestError::Malformed(OpCode::GetData, _))
        ));
        assert_eq!(decode_request(11, &[]), Ok(Request::Ping));
    }
}

/// `ReconfigRequest`: joining servers (comma-separated `server.N=spec`
/// lines), leaving server ids, or the whole new membership, and the config
/// version it applies to (−1: any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReconfigRequest {
    /// `joiningServers`.
    pub joining: Option<String>,
    /// `leavingServers`.
    pub leaving: Option<String>,
    /// `newMembers` (a non-incremental change).
    pub new_members: Option<String>,
    /// `curConfigId`.
    pub cur_config_id: i64,
}
