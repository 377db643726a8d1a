//! [`LockError`], the one error type of every recipe.

use zookeeper_client as zk;

/// Why a lock operation failed.
///
/// `Clone + PartialEq` so that tests and callers can match and compare
/// errors; [`LockError::Zk`] carries the client error unchanged.
#[derive(thiserror::Error, Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LockError {
    /// A ZooKeeper call failed with an error the recipe does not handle
    /// itself (ConnectionLoss, and the client's error for a connection it
    /// dropped, are retried, never surfaced).
    #[error("zookeeper: {0}")]
    Zk(#[from] zk::Error),
    /// [`acquire_timeout`](crate::PredecessorLock::acquire_timeout) gave up;
    /// the contender's node has been deleted.
    #[error("lock not acquired within the timeout")]
    Timeout,
    /// The session expired while waiting: the contender's node is gone with it.
    #[error("session expired while waiting for the lock")]
    SessionExpired,
    /// The contender's own node disappeared while it waited (someone deleted
    /// it, or the session behind it expired).
    #[error("own lock node {0} vanished while waiting")]
    NodeVanished(String),
    /// [`ReentrantLock::release`](crate::ReentrantLock::release) without a matching acquire.
    #[error("the lock is not held through this handle")]
    NotHeld,
    /// The held lock has been lost (session expired or node deleted): a
    /// re-entry was refused (release it and acquire anew), or a release found
    /// the lock already gone (see [`LockGuard::release`](crate::LockGuard::release)).
    #[error("the held lock has been lost")]
    Lost,
    /// The lock directory is not a valid absolute path.
    #[error("invalid lock directory {0:?}")]
    InvalidDir(String),
}

/// Results of this crate.
pub type Result<T, E = LockError> = std::result::Result<T, E>;

impl LockError {
    /// Maps the client's SessionExpired onto [`LockError::SessionExpired`].
    pub(crate) fn from_zk(err: zk::Error) -> LockError {
        match err {
            zk::Error::SessionExpired => LockError::SessionExpired,
            err => LockError::Zk(err),
        }
    }
}
