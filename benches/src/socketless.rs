//! The request path without sockets: a [`zk_mock::fuzzing::Server`] fed
//! request frames as the socket reader hands them over. The `core/<op>`
//! benches time it; the `allocs` example counts its allocations.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use zk_mock::codec::Record;
use zk_mock::fuzzing::Server;
use zk_mock::proto::{
    Acl, ConnectRequest, CreateRequest, DeleteRequest, OpCode, PathWatchRequest, RequestHeader,
    SetDataRequest,
};

/// A request frame: length prefix, header, body.
pub fn request_frame(xid: i32, op: OpCode, body: &dyn Fn(&mut BytesMut)) -> Bytes {
    zk_mock::codec::framed(64, |b| {
        RequestHeader {
            xid,
            op_type: op as i32,
        }
        .encode(b);
        body(b);
    })
}

/// A create of `path` with 100 bytes of data and the open ACL.
pub fn create_frame(xid: i32, path: &str) -> Bytes {
    request_frame(xid, OpCode::Create, &|b| {
        CreateRequest {
            path: path.into(),
            data: Some(Bytes::from_static(&[7; 100])),
            acl: Acl::open_shared(),
            flags: 0,
        }
        .encode(b)
    })
}

/// A delete of `path`, any version.
pub fn delete_frame(xid: i32, path: &str) -> Bytes {
    request_frame(xid, OpCode::Delete, &|b| {
        DeleteRequest {
            path: path.to_string(),
            version: -1,
        }
        .encode(b)
    })
}

/// A getData or exists of `path`, without a watch.
pub fn read_frame(xid: i32, op: OpCode, path: &str) -> Bytes {
    request_frame(xid, op, &|b| {
        PathWatchRequest {
            path: path.to_string(),
            watch: false,
        }
        .encode(b)
    })
}

/// A setData of 100 bytes on `path`, any version.
pub fn set_data_frame(xid: i32, path: &str) -> Bytes {
    request_frame(xid, OpCode::SetData, &|b| {
        SetDataRequest {
            path: path.to_string(),
            data: Some(Bytes::from_static(&[7; 100])),
            version: -1,
        }
        .encode(b)
    })
}

/// A socketless server with `builder`'s settings, one connection (0)
/// handshaken, and `/b` created.
pub fn server(builder: &zk_mock::ZkMockBuilder) -> Server {
    let mut s = Server::with_builder(builder);
    let c = s.open();
    let connect = zk_mock::codec::framed(64, |b| {
        ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            time_out: 30_000,
            session_id: 0,
            passwd: Some(Bytes::from_static(&[0; 16])),
            read_only: Some(false),
        }
        .encode(b)
    });
    s.feed(c, &connect);
    s.feed(c, &create_frame(1, "/b"));
    s.drain();
    s
}

/// Feeds frames to connection 0, draining the replies every 64 requests as
/// the socket writer would take them; returns the time it took.
pub fn feed_all(s: &mut Server, frames: &[Bytes]) -> Duration {
    let start = Instant::now();
    for (i, f) in frames.iter().enumerate() {
        s.feed(0, f);
        if i % 64 == 63 {
            s.drain();
        }
    }
    s.drain();
    start.elapsed()
}
