//! [`Reply`]: a successful reply body, as data, and its encoding.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use crate::codec::jute::put_ustring;
use crate::codec::Record;
use crate::proto::*;

/// A successful reply body.
#[derive(Debug)]
pub(crate) enum Reply {
    None,
    /// A create's path: the tree's own copy of it, not another.
    Path(Arc<str>),
    PathStat(Arc<str>, Stat),
    Stat(Stat),
    Data(Option<Bytes>, Stat),
    Children(Vec<String>),
    Children2(Vec<String>, Stat),
    Acl(Vec<Acl>, Stat),
    Ephemerals(Vec<String>),
    Count(i32),
    WhoAmI(Vec<ClientInfo>),
    /// addWatch answers `ErrorResponse{0}`: four zero bytes.
    AddWatch,
}

impl Reply {
    /// Appends the reply, its header and its body, to a frame's contents.
    pub(crate) fn encode(self, xid: i32, zxid: i64, b: &mut BytesMut) {
        ReplyHeader { xid, zxid, err: 0 }.encode(b);
        match self {
            Reply::None => {}
            // CreateResponse and Create2Response, field by field.
            Reply::Path(path) => put_ustring(b, &path),
            Reply::PathStat(path, stat) => {
                put_ustring(b, &path);
                stat.encode(b);
            }
            Reply::Stat(stat) => StatResponse { stat }.encode(b),
            Reply::Data(data, stat) => GetDataResponse { data, stat }.encode(b),
            Reply::Children(children) => GetChildrenResponse { children }.encode(b),
            Reply::Children2(children, stat) => GetChildren2Response { children, stat }.encode(b),
            Reply::Acl(acl, stat) => GetAclResponse { acl, stat }.encode(b),
            Reply::Ephemerals(ephemerals) => GetEphemeralsResponse { ephemerals }.encode(b),
            Reply::AddWatch => ErrorResponse { err: 0 }.encode(b),
            Reply::WhoAmI(client_info) => WhoAmIResponse { client_info }.encode(b),
            Reply::Count(total_number) => GetAllChildrenNumberResponse { total_number }.encode(b),
        }
    }
}
