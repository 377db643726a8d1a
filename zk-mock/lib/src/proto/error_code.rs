//! Error codes (`org.apache.zookeeper.KeeperException.Code`).
//!
//! Only values in this list may go on the wire: the Java client's
//! `Code.get(int)` throws for anything else.

/// A ZooKeeper error code, as carried in `ReplyHeader.err` and multi results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
#[non_exhaustive]
#[allow(missing_docs)]
pub enum ErrorCode {
    Ok = 0,
    SystemError = -1,
    RuntimeInconsistency = -2,
    DataInconsistency = -3,
    ConnectionLoss = -4,
    MarshallingError = -5,
    Unimplemented = -6,
    OperationTimeout = -7,
    BadArguments = -8,
    UnknownSession = -12,
    NewConfigNoQuorum = -13,
    ReconfigInProgress = -14,
    ApiError = -100,
    NoNode = -101,
    NoAuth = -102,
    BadVersion = -103,
    NoChildrenForEphemerals = -108,
    NodeExists = -110,
    NotEmpty = -111,
    SessionExpired = -112,
    InvalidCallback = -113,
    InvalidAcl = -114,
    AuthFailed = -115,
    SessionMoved = -118,
    NotReadOnly = -119,
    EphemeralOnLocalSession = -120,
    NoWatcher = -121,
    RequestTimeout = -122,
    ReconfigDisabled = -123,
    SessionClosedRequireSaslAuth = -124,
    QuotaExceeded = -125,
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
