//! [`Reply`]: a successful reply body, as data, and its encoding.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use crate::codec::jute::put_ustring;
use crate::codec::{put_vector, Record};
use crate::proto::*;

/// A successful reply body.
#[derive(Debug)]
pub(crate) enum Reply {
    None,
    /// A path: a create's is the tree's own copy of it, not another (a
    /// sync's is its request's).
    Path(Arc<str>),
    PathStat(Arc<str>, Stat),
    Stat(Stat),
    Data(Option<Bytes>, Stat),
    /// A node's listing: the tree's cached copy of it, not another.
    Children(Arc<[String]>),
    Children2(Arc<[String]>, Stat),
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
            // GetChildrenResponse and GetChildren2Response, field by field.
            Reply::Children(children) => put_vector(b, &children),
            Reply::Children2(children, stat) => {
                put_vector(b, &children);
                stat.encode(b);
            }
            Reply::Acl(acl, stat) => GetAclResponse { acl, stat }.encode(b),
            Reply::Ephemerals(ephemerals) => GetEphemeralsResponse { ephemerals }.encode(b),
            Reply::AddWatch => ErrorResponse { err: 0 }.encode(b),
            Reply::WhoAmI(client_info) => WhoAmIResponse { client_info }.encode(b),
            Reply::Count(total_number) => GetAllChildrenNumberResponse { total_number }.encode(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The create replies are written field by field from the tree's
    /// shared path: the same bytes as the records they stand for.
    #[test]
    fn a_create_reply_encodes_as_create_response_and_create2_response() {
        let stat = Stat {
            czxid: 7,
            mzxid: 7,
            pzxid: 7,
            ctime: 1,
            mtime: 1,
            version: 0,
            cversion: 0,
            aversion: 0,
            ephemeral_owner: 0x100,
            data_length: 3,
            num_children: 0,
        };
        let path: Arc<str> = "/locks/lock-0000000001".into();
        let encoded = |reply: Reply| {
            let mut b = BytesMut::new();
            reply.encode(4, 7, &mut b);
            b
        };
        let mut want = BytesMut::new();
        ReplyHeader {
            xid: 4,
            zxid: 7,
            err: 0,
        }
        .encode(&mut want);
        let header = want.clone();
        CreateResponse {
            path: path.to_string(),
        }
        .encode(&mut want);
        assert_eq!(encoded(Reply::Path(path.clone())), want);
        let mut want = header;
        Create2Response {
            path: path.to_string(),
            stat: stat.clone(),
        }
        .encode(&mut want);
        assert_eq!(encoded(Reply::PathStat(path, stat)), want);
    }

    /// The listings are written field by field from the tree's cached
    /// listing: the same bytes as the records they stand for.
    #[test]
    fn a_listing_encodes_as_get_children_response_and_get_children2_response() {
        let stat = Stat {
            czxid: 3,
            num_children: 2,
            ..Default::default()
        };
        let names: Arc<[String]> = vec!["b".to_string(), "a".to_string()].into();
        let encoded = |reply: Reply| {
            let mut b = BytesMut::new();
            reply.encode(5, 9, &mut b);
            b
        };
        let mut header = BytesMut::new();
        ReplyHeader {
            xid: 5,
            zxid: 9,
            err: 0,
        }
        .encode(&mut header);
        let mut want = header.clone();
        GetChildrenResponse {
            children: names.to_vec(),
        }
        .encode(&mut want);
        assert_eq!(encoded(Reply::Children(names.clone())), want);
        let mut want = header.clone();
        GetChildren2Response {
            children: names.to_vec(),
            stat: stat.clone(),
        }
        .encode(&mut want);
        assert_eq!(encoded(Reply::Children2(names.clone(), stat)), want);
        let mut want = header;
        GetChildrenResponse { children: vec![] }.encode(&mut want);
        assert_eq!(encoded(Reply::Children(Arc::from([]))), want);
    }
}
