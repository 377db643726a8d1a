//! Error codes (`org.apache.zookeeper.KeeperException.Code`).
//!
//! Only values in this list may go on the wire: the Java client's
//! `Code.get(int)` throws for anything else.

/// A ZooKeeper error code, as carried in `ReplyHeader.err` and multi results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
#[non_exhaustive]
pub enum ErrorCode {
    /// No error.
    Ok = 0,
    /// The start of the system error range; not sent itself by a server.
    SystemError = -1,
    /// A runtime inconsistency was found.
    RuntimeInconsistency = -2,
    /// A data inconsistency was found.
    DataInconsistency = -3,
    /// The connection to the server was lost (client side).
    ConnectionLoss = -4,
    /// A request or reply did not (de)serialize.
    MarshallingError = -5,
    /// The operation is not implemented.
    Unimplemented = -6,
    /// The operation timed out (client side).
    OperationTimeout = -7,
    /// Invalid arguments.
    BadArguments = -8,
    /// The session is unknown to the server.
    UnknownSession = -12,
    /// A reconfig's new configuration has no quorum connected and in sync.
    NewConfigNoQuorum = -13,
    /// Another reconfig is in progress.
    ReconfigInProgress = -14,
    /// The start of the API error range; not sent itself by a server.
    ApiError = -100,
    /// The node does not exist.
    NoNode = -101,
    /// The session lacks the permission the node's ACL requires.
    NoAuth = -102,
    /// The expected version does not match the node's (or the config's).
    BadVersion = -103,
    /// Ephemeral nodes may not have children.
    NoChildrenForEphemerals = -108,
    /// The node already exists.
    NodeExists = -110,
    /// The node has children.
    NotEmpty = -111,
    /// The session has expired.
    SessionExpired = -112,
    /// An invalid callback was given (client side).
    InvalidCallback = -113,
    /// The ACL is invalid: empty, an unknown scheme, a malformed id, or `auth`
    /// with no authenticated id.
    InvalidAcl = -114,
    /// Authentication failed.
    AuthFailed = -115,
    /// The session moved to another server; the request is ignored.
    SessionMoved = -118,
    /// A state-changing request reached a read-only server.
    NotReadOnly = -119,
    /// An ephemeral node was requested on a local session.
    EphemeralOnLocalSession = -120,
    /// The watch to check or remove does not exist.
    NoWatcher = -121,
    /// The request did not complete within the allowed time.
    RequestTimeout = -122,
    /// Reconfig is disabled on the server.
    ReconfigDisabled = -123,
    /// The session was closed because the server requires SASL authentication.
    SessionClosedRequireSaslAuth = -124,
    /// A hard quota set on the path was exceeded.
    QuotaExceeded = -125,
    /// The request was shed under load and not executed; it may be sent again.
    ThrottledOp = -127,
}

impl ErrorCode {
    /// Every defined code, for lookups and tests.
    pub const ALL: [ErrorCode; 32] = {
        use ErrorCode::*;
        [
            Ok,
            SystemError,
            RuntimeInconsistency,
            DataInconsistency,
            ConnectionLoss,
            MarshallingError,
            Unimplemented,
            OperationTimeout,
            BadArguments,
            UnknownSession,
            NewConfigNoQuorum,
            ReconfigInProgress,
            ApiError,
            NoNode,
            NoAuth,
            BadVersion,
            NoChildrenForEphemerals,
            NodeExists,
            NotEmpty,
            SessionExpired,
            InvalidCallback,
            InvalidAcl,
            AuthFailed,
            SessionMoved,
            NotReadOnly,
            EphemeralOnLocalSession,
            NoWatcher,
            RequestTimeout,
            ReconfigDisabled,
            SessionClosedRequireSaslAuth,
            QuotaExceeded,
            ThrottledOp,
        ]
    };

    /// Maps a wire value to a defined code.
    pub fn from_i32(v: i32) -> Option<ErrorCode> {
        Self::ALL.iter().copied().find(|c| *c as i32 == v)
    }

    /// The code as sent on the wire.
    pub fn code(self) -> i32 {
        self as i32
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} ({})", self, *self as i32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_unknown_values_are_none() {
        for c in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_i32(c.code()), Some(c));
        }
        assert_eq!(ErrorCode::from_i32(-9), None);
        assert_eq!(ErrorCode::from_i32(-126), None);
    }
}
