//! Sequential exclusive lock, herd form.
//!
//! Each contender creates `<dir>/_c_<uuid>-lock-<seq>` (ephemeral,
//! sequential) and holds when its sequence number is the lowest. Otherwise
//! it watches the children of `<dir>` (one atomic getChildren with a watch)
//! and re-checks on every change: each release wakes every waiter, the
//! herd effect this recipe exists to show.

use std::time::Duration;

use zookeeper_client as zk;

use crate::error::Result;
use crate::guard::LockGuard;
use crate::metrics::LockMetrics;
use crate::sequential::{Form, Layout, Role, Sequential};

/// See the [crate docs](crate) for costs and failure handling.
#[derive(Debug)]
pub struct HerdLock {
    inner: Sequential,
}

impl HerdLock {
    /// A lock on the directory `dir` (created as persistent nodes on first use).
    ///
    /// # Notable errors
    /// * [`LockError::InvalidDir`](crate::LockError::InvalidDir) if `dir` is not an absolute path.
    pub fn new(client: zk::Client, dir: &str) -> Result<Self> {
        Ok(HerdLock {
            inner: Sequential::new(client, dir, Form::Herd, false, Layout::Curator)?,
        })
    }

    /// A lock on `dir` whose nodes follow another ecosystem's names
    /// ([`Layout::Kazoo`] to share the lock with kazoo's `Lock`).
    ///
    /// # Notable errors
    /// * [`LockError::InvalidDir`](crate::LockError::InvalidDir) if `dir` is not an absolute path.
    pub fn with_layout(client: zk::Client, dir: &str, layout: Layout) -> Result<Self> {
        Ok(HerdLock {
            inner: Sequential::new(client, dir, Form::Herd, false, layout)?,
        })
    }

    /// The lock directory.
    pub fn dir(&self) -> &str {
        self.inner.dir()
    }

    /// This instance's counters.
    pub fn metrics(&self) -> LockMetrics {
        self.inner.metrics()
    }

    /// Waits until the lock is held.
    ///
    /// # Notable errors
    /// * [`LockError::SessionExpired`](crate::LockError::SessionExpired) if the session expired while waiting.
    /// * [`LockError::NodeVanished`](crate::LockError::NodeVanished) if the contender's node was deleted by someone else.
    ///
    /// # Cancellation safety
    /// Cancellation safe: a dropped future deletes its node (found by its
    /// protected prefix if the create was in flight) from a spawned task.
    pub async fn acquire(&self) -> Result<LockGuard> {
        self.inner.acquire(Role::Exclusive, None).await
    }

    /// Takes the lock if it is free now; otherwise deletes the node it
    /// created and returns `None`.
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        self.inner.try_acquire(Role::Exclusive).await
    }

    /// [`acquire`](Self::acquire) with a deadline.
    ///
    /// # Notable errors
    /// * [`LockError::Timeout`](crate::LockError::Timeout) after `timeout`; the node is deleted before it returns.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        let deadline = tokio::time::Instant::now() + timeout;
        self.inner.acquire(Role::Exclusive, Some(deadline)).await
    }
}
