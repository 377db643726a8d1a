//! `RequestHeader`, `ReplyHeader` and the special xids.

use crate::codec::record;

/// xid of a watch notification (server to client).
pub const XID_NOTIFICATION: i32 = -1;
/// xid of a ping and of its reply (the server always answers −2).
pub const XID_PING: i32 = -2;
/// xid clients use for auth packets.
pub const XID_AUTH: i32 = -4;
/// xid the C, Rust and kazoo clients use for SetWatches (the server just echoes it).
pub const XID_SET_WATCHES: i32 = -8;

record! {
    /// `RequestHeader {int xid; int type}`: 8 bytes before every request body.
    pub struct RequestHeader {
        /// The client's request id, echoed in the reply (or a special xid).
        pub xid: i32,
        /// The op code.
        pub op_type: i32,
    }
}

record! {
    /// `ReplyHeader {int xid; long zxid; int err}`: 16 bytes before every reply body.
    pub struct ReplyHeader (16) {
        /// The request's xid, or a special xid (−1 notification, −2 ping).
        pub xid: i32,
        /// The last zxid the server has applied; −1 on a notification (3.9 sends
        /// the change's zxid there).
        pub zxid: i64,
        /// The error code, 0 for success.
        pub err: i32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{assert_round_trip, Record};

    #[test]
    fn headers_round_trip() {
        assert_round_trip(&RequestHeader { xid: 7, op_type: 4 });
        let r = ReplyHeader {
            xid: -1,
            zxid: -1,
            err: 0,
        };
        assert_round_trip(&r);
        assert_eq!(r.to_bytes().len(), 16);
    }
}
