//! Read/write lock: `read-` and `write-` ephemeral-sequential nodes.
//!
//! A reader holds when no write node precedes its own; a writer holds when
//! its node is first. In the predecessor form a reader watches the last
//! write node before its own and a writer the node just before its own, so
//! the readers queued behind one writer wake together when it goes (by
//! design) and nobody else is woken; in the herd form every waiter watches
//! the directory's children. Node names are `_c_<uuid>-read-<seq>` and
//! `_c_<uuid>-write-<seq>`; only the sequence suffix orders them (across
//! the counter's wrap too, see the [crate docs](crate)).

use std::time::Duration;

use tokio::time::Instant;
use zookeeper_client as zk;

use crate::error::Result;
use crate::guard::LockGuard;
use crate::metrics::LockMetrics;
use crate::sequential::{Form, Layout, Role, Sequential};

/// A read/write lock on a directory. See the [crate docs](crate) for the
/// failure handling it shares with the exclusive locks.
///
/// # Notable behaviors
/// * Node names: [`Layout::Curator`] (the default) gives
///   `_c_<uuid>-read-<seq>` / `_c_<uuid>-write-<seq>`. This is **not**
///   wire-compatible with Apache Curator's `InterProcessReadWriteLock`,
///   which names its nodes `_c_<uuid>-__READ__<seq>` /
///   `_c_<uuid>-__WRIT__<seq>`: this lock ignores those nodes, so a Rust
///   and a Java process on one directory do not exclude each other. Share
///   a read/write lock with kazoo's `ReadLock`/`WriteLock` (and `Lock`)
///   through [`Layout::Kazoo`] instead.
/// * Not reentrant, and a read lock is not upgraded: a holder of the read
///   lock that asks for the write lock waits for itself forever (use
///   `write_timeout`).
#[derive(Debug)]
pub struct ReadWriteLock {
    inner: Sequential,
}

impl ReadWriteLock {
    /// The predecessor form: one release wakes the next writer, or the
    /// readers queued behind the releasing writer.
    ///
    /// # Notable errors
    /// * [`LockError::InvalidDir`](crate::LockError::InvalidDir) if `dir` is not an absolute path.
    pub fn new(client: zk::Client, dir: &str) -> Result<Self> {
        Ok(ReadWriteLock {
            inner: Sequential::new(client, dir, Form::Predecessor, true, Layout::Curator)?,
        })
    }

    /// The herd form: every waiter watches the directory's children.
    ///
    /// # Notable errors
    /// * [`LockError::InvalidDir`](crate::LockError::InvalidDir) if `dir` is not an absolute path.
    pub fn new_herd(client: zk::Client, dir: &str) -> Result<Self> {
        Ok(ReadWriteLock {
            inner: Sequential::new(client, dir, Form::Herd, true, Layout::Curator)?,
        })
    }

    /// The predecessor form with another ecosystem's node names:
    /// [`Layout::Kazoo`] names readers `<uuid hex>__rlock__<seq>` and
    /// writers `<uuid hex>__lock__<seq>`, as kazoo's `ReadLock` and
    /// `WriteLock` do, so Rust and Python readers and writers share one lock
    /// (kazoo's rules are the same: a reader waits for the last `__lock__`
    /// node before its own, a writer for the node just before its own; a
    /// kazoo `Lock` on the directory counts as a writer).
    ///
    /// # Notable errors
    /// * [`LockError::InvalidDir`](crate::LockError::InvalidDir) if `dir` is not an absolute path.
    pub fn with_layout(client: zk::Client, dir: &str, layout: Layout) -> Result<Self> {
        Ok(ReadWriteLock {
            inner: Sequential::new(client, dir, Form::Predecessor, true, layout)?,
        })
    }

    /// The herd form with another ecosystem's node names (see
    /// [`with_layout`](Self::with_layout)).
    ///
    /// # Notable errors
    /// * [`LockError::InvalidDir`](crate::LockError::InvalidDir) if `dir` is not an absolute path.
    pub fn herd_with_layout(client: zk::Client, dir: &str, layout: Layout) -> Result<Self> {
        Ok(ReadWriteLock {
            inner: Sequential::new(client, dir, Form::Herd, true, layout)?,
        })
    }

    /// The lock directory.
    pub fn dir(&self) -> &str {
        self.inner.dir()
    }

    /// This instance's counters (readers and writers together).
    pub fn metrics(&self) -> LockMetrics {
        self.inner.metrics()
    }

    /// Waits until no writer is ahead. Errors and cancellation as
    /// [`PredecessorLock::acquire`](crate::PredecessorLock::acquire).
    pub async fn read(&self) -> Result<LockGuard> {
        self.inner.acquire(Role::Read, None).await
    }

    /// Takes a read lock if no writer is ahead now.
    pub async fn try_read(&self) -> Result<Option<LockGuard>> {
        self.inner.try_acquire(Role::Read).await
    }

    /// [`read`](Self::read) with a deadline; [`LockError::Timeout`](crate::LockError::Timeout)
    /// after it, with the node deleted.
    pub async fn read_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        self.inner
            .acquire(Role::Read, Some(Instant::now() + timeout))
            .await
    }

    /// Waits until this writer's node is first.
    pub async fn write(&self) -> Result<LockGuard> {
        self.inner.acquire(Role::Write, None).await
    }

    /// Takes the write lock if nobody is ahead now.
    pub async fn try_write(&self) -> Result<Option<LockGuard>> {
        self.inner.try_acquire(Role::Write).await
    }

    /// [`write`](Self::write) with a deadline; [`LockError::Timeout`](crate::LockError::Timeout)
    /// after it, with the node deleted.
    pub async fn write_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        self.inner
            .acquire(Role::Write, Some(Instant::now() + timeout))
            .await
    }
}
