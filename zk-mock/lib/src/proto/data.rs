//! Request and response records of the data operations (create, delete,
//! exists, getData, setData, getChildren, sync, check, ACL reads/writes,
//! getEphemerals, getAllChildrenNumber).

use std::sync::Arc;

use bytes::Bytes;

use super::acl::Acl;
use super::stat::Stat;
use crate::codec::record;

record! {
    /// `CreateRequest`: ops create (1), create2 (15) and createContainer (19).
    pub struct CreateRequest {
        /// The node's path; a sequential node gets a suffix appended. The
        /// new node, its records and the reply share this string.
        pub path: Arc<str>,
        /// The node's data (`None`: null).
        pub data: Option<Bytes>,
        /// The node's ACL (`Acl::open_unsafe().into()`, or
        /// [`Acl::open_shared`], for `OPEN_ACL_UNSAFE`).
        pub acl: Arc<[Acl]>,
        /// The create mode: 0 persistent, 1 ephemeral, 2 persistent sequential,
        /// 3 ephemeral sequential, 4 container, 5 and 6 their TTL forms.
        pub flags: i32,
    }
}

record! {
    /// `CreateTTLRequest`: op createTTL (21).
    pub struct CreateTtlRequest {
        /// The node's path; a sequential node gets a suffix appended. The
        /// new node, its records and the reply share this string.
        pub path: Arc<str>,
        /// The node's data (`None`: null).
        pub data: Option<Bytes>,
        /// The node's ACL.
        pub acl: Arc<[Acl]>,
        /// The create mode: 5 persistent with TTL, 6 persistent sequential with TTL.
        pub flags: i32,
        /// The time to live in ms.
        pub ttl: i64,
    }
}

record! {
    /// `CreateResponse`: the actual path, with any sequential suffix.
    pub struct CreateResponse {
        /// The node's actual path.
        pub path: String,
    }
}

record! {
    /// `Create2Response`: path and Stat.
    pub struct Create2Response {
        /// The node's actual path, with any sequential suffix.
        pub path: String,
        /// The new node's Stat.
        pub stat: Stat,
    }
}

record! {
    /// `DeleteRequest`.
    pub struct DeleteRequest {
        /// The node to delete.
        pub path: String,
        /// The version the node must have, −1 for any.
        pub version: i32,
    }
}

record! {
    /// `ExistsRequest`, `GetDataRequest`, `GetChildrenRequest` and `GetChildren2Request`
    /// share this layout.
    pub struct PathWatchRequest {
        /// The node.
        pub path: String,
        /// Whether to leave a watch on it.
        pub watch: bool,
    }
}

record! {
    /// A body that is a single Stat: `ExistsResponse`, `SetDataResponse`, `SetACLResponse`.
    pub struct StatResponse {
        /// The node's Stat.
        pub stat: Stat,
    }
}

record! {
    /// `GetDataResponse`.
    pub struct GetDataResponse {
        /// The node's data (`None` when stored as null).
        pub data: Option<Bytes>,
        /// The node's Stat.
        pub stat: Stat,
    }
}

record! {
    /// `SetDataRequest`.
    pub struct SetDataRequest {
        /// The node.
        pub path: String,
        /// Its new data (`None`: null).
        pub data: Option<Bytes>,
        /// The version the node must have, −1 for any.
        pub version: i32,
    }
}

record! {
    /// `GetChildrenResponse`.
    pub struct GetChildrenResponse {
        /// The child names (not full paths).
        pub children: Vec<String>,
    }
}

record! {
    /// `GetChildren2Response`.
    pub struct GetChildren2Response {
        /// The child names (not full paths).
        pub children: Vec<String>,
        /// The node's Stat.
        pub stat: Stat,
    }
}

record! {
    /// A body that is a single path: `SyncRequest`, `SyncResponse`, `GetACLRequest`,
    /// `GetAllChildrenNumberRequest`, `GetEphemeralsRequest`.
    pub struct PathRequest {
        /// The path.
        pub path: String,
    }
}

record! {
    /// `CheckVersionRequest` (only valid inside multi).
    pub struct CheckVersionRequest {
        /// The node.
        pub path: String,
        /// The version the node must have, −1 for any.
        pub version: i32,
    }
}

record! {
    /// `GetACLResponse`.
    pub struct GetAclResponse {
        /// The node's ACL.
        pub acl: Vec<Acl>,
        /// The node's Stat.
        pub stat: Stat,
    }
}

record! {
    /// `SetACLRequest`.
    pub struct SetAclRequest {
        /// The node.
        pub path: String,
        /// Its new ACL.
        pub acl: Vec<Acl>,
        /// The ACL version (`aversion`) the node must have, −1 for any.
        pub version: i32,
    }
}

record! {
    /// `GetEphemeralsResponse`.
    pub struct GetEphemeralsResponse {
        /// The full paths of the session's ephemeral nodes.
        pub ephemerals: Vec<String>,
    }
}

record! {
    /// `GetAllChildrenNumberResponse`.
    pub struct GetAllChildrenNumberResponse {
        /// The number of the node's descendants, at every depth.
        pub total_number: i32,
    }
}

record! {
    /// `ErrorResponse {int err}`: the body of a multi ErrorResult and of addWatch.
    pub struct ErrorResponse {
        /// The error code.
        pub err: i32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::assert_round_trip;

    fn stat() -> Stat {
        Stat {
            czxid: 2,
            mzxid: 3,
            pzxid: 4,
            version: 1,
            cversion: -1,
            num_children: 1,
            ..Default::default()
        }
    }

    #[test]
    fn create_records_round_trip() {
        let c = CreateRequest {
            path: "/a".into(),
            data: Some(Bytes::from_static(b"x")),
            acl: Acl::open_shared(),
            flags: 3,
        };
        assert_round_trip(&c);
        assert_round_trip(&CreateRequest {
            data: None,
            acl: Vec::new().into(),
            ..c.clone()
        });
        for acl in [
            Acl::read_unsafe(),
            vec![
                Acl::new(31, "world", "anyone"),
                Acl::new(1, "ip", "127.0.0.1"),
            ],
            vec![Acl::new(31, "digest", "u:x")],
        ] {
            assert_round_trip(&CreateRequest {
                acl: acl.into(),
                ..c.clone()
            });
        }
        assert_round_trip(&CreateTtlRequest {
            path: "/t".into(),
            data: None,
            acl: Acl::open_shared(),
            flags: 5,
            ttl: 100,
        });
        assert_round_trip(&CreateResponse {
            path: "/a0000000001".into(),
        });
        assert_round_trip(&Create2Response {
            path: "/a".into(),
            stat: stat(),
        });
    }

    #[test]
    fn read_and_write_records_round_trip() {
        assert_round_trip(&DeleteRequest {
            path: "/a".into(),
            version: -1,
        });
        assert_round_trip(&PathWatchRequest {
            path: "/a".into(),
            watch: true,
        });
        assert_round_trip(&StatResponse { stat: stat() });
        assert_round_trip(&GetDataResponse {
            data: Some(Bytes::new()),
            stat: stat(),
        });
        assert_round_trip(&GetDataResponse {
            data: None,
            stat: stat(),
        });
        assert_round_trip(&SetDataRequest {
            path: "/a".into(),
            data: Some(Bytes::from_static(b"v")),
            version: 3,
        });
        assert_round_trip(&GetChildrenResponse {
            children: vec!["a".into(), "b".into()],
        });
        assert_round_trip(&GetChildren2Response {
            children: vec![],
            stat: stat(),
        });
        assert_round_trip(&PathRequest { path: "/".into() });
        assert_round_trip(&CheckVersionRequest {
            path: "/a".into(),
            version: 0,
        });
        assert_round_trip(&GetAclResponse {
            acl: Acl::read_unsafe(),
            stat: stat(),
        });
        assert_round_trip(&SetAclRequest {
            path: "/a".into(),
            acl: Acl::open_unsafe(),
            version: -1,
        });
        assert_round_trip(&GetEphemeralsResponse {
            ephemerals: vec!["/e".into()],
        });
        assert_round_trip(&GetAllChildrenNumberResponse { total_number: 3 });
        assert_round_trip(&ErrorResponse { err: -101 });
    }
}
