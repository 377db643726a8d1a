//! [`LockError`], the one error type of every lock.

use zookeeper_client as zk;

/// Why a lock operation failed.
///
/// `Clone + PartialEq` so that tests and callers can match and compare
/// errors. Every path converts a client error the same way, through
/// `From<zookeeper_client::Error>`: the session's end is always
/// [`SessionExpired`](Self::SessionExpired), a connection failure always
/// [`ConnectionLoss`](Self::ConnectionLoss), anything else
/// [`Zk`](Self::Zk), unchanged.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LockError {
    /// A ZooKeeper call failed with an error the lock does not handle
    /// itself (NoAuth, for example).
    #[error("zookeeper: {0}")]
    Zk(zk::Error),
    /// The session expired (or the client was closed) while waiting: the
    /// contender's node is gone with it. `zk::Error::SessionExpired` and
    /// `zk::Error::ClientClosed` from any call become this.
    #[error("session expired while waiting for the lock")]
    SessionExpired,
    /// The connection failed under a request and the lock could not retry
    /// it. The locks retry ConnectionLoss, and the error
    /// `zookeeper-client` 0.11 gives requests in flight when it drops a
    /// connection itself, until the session ends; this only surfaces
    /// from a client error that bypasses those retries.
    #[error("connection lost: {0}")]
    ConnectionLoss(zk::Error),
    /// [`acquire_timeout`](crate::Lock::acquire_timeout) gave up; the
    /// contender's node has been deleted.
    #[error("lock not acquired within the timeout")]
    Timeout,
    /// The contender's own node disappeared while it waited (someone deleted
    /// it, or the session behind it expired).
    #[error("own lock node {0} vanished while waiting")]
    NodeVanished(String),
    /// The held lock has been lost (session expired or node deleted): a
    /// re-entry was refused (release every guard and acquire anew), or a
    /// release found the lock already gone (see
    /// [`LockGuard::release`](crate::LockGuard::release)).
    #[error("the held lock has been lost")]
    Lost,
    /// The lock directory is not a valid absolute path.
    #[error("invalid lock directory {0:?}")]
    InvalidDir(String),
    /// The builder's options do not describe a lock this crate has, such as
    /// a naive read/write lock.
    #[error("unsupported lock options: {0}")]
    Unsupported(&'static str),
}

/// Results of this crate.
pub type Result<T, E = LockError> = std::result::Result<T, E>;

impl From<zk::Error> for LockError {
    fn from(err: zk::Error) -> LockError {
        match err {
            // The session is over either way: expired, or the client closed it.
            zk::Error::SessionExpired | zk::Error::ClientClosed => LockError::SessionExpired,
            err if connection_lost(&err) => LockError::ConnectionLoss(err),
            err => LockError::Zk(err),
        }
    }
}

/// Whether `err` says the connection failed under a request, which may or
/// may not have been applied: ConnectionLoss, or the error that ended the
/// connection, which zookeeper-client 0.11 hands to every request in flight
/// as `Error::Custom` ("no response from connection in …ms" when replies
/// stop for 2/5 of the session timeout, or an I/O error). The client
/// reconnects to the same session afterwards, as after ConnectionLoss.
/// OPERATIONTIMEOUT (-7), which the Java and C clients report for a request
/// whose reply did not come in time, is as indefinite, and is retried the
/// same way (as Curator's `RetryLoop` does); zookeeper-client 0.11 has no
/// variant for it and reports `UnexpectedErrorCode(-7)`.
pub(crate) fn connection_lost(err: &zk::Error) -> bool {
    matches!(
        err,
        zk::Error::ConnectionLoss
            | zk::Error::Custom(_)
            | zk::Error::Timeout
            | zk::Error::UnexpectedErrorCode(-7)
    )
}

/// Whether the server shed the request without executing it: THROTTLEDOP
/// (-127), which ZooKeeper 3.7+ answers to a request that waited in its queue
/// longer than `throttledOpWaitTime` (ZOOKEEPER-3683: "Operation was
/// throttled and not executed at all. please, retry!"). Unlike
/// ConnectionLoss this is definite: the same request is sent again, after a
/// backoff pause, as the server is overloaded.
pub(crate) fn shed(err: &zk::Error) -> bool {
    matches!(err, zk::Error::Throttled)
}
