//! Reentrant exclusive lock: Curator's `InterProcessMutex` counting on the
//! predecessor form.

use std::time::Duration;

use tokio::sync::{watch, Mutex};
use zookeeper_client as zk;

use crate::error::{LockError, Result};
use crate::guard::{GuardState, LockGuard};
use crate::metrics::LockMetrics;
use crate::predecessor::PredecessorLock;

/// A [`PredecessorLock`] whose handle is the owner: acquiring again through
/// the same handle only increments a count, and the node is deleted when
/// [`release`](Self::release) has been called as many times.
///
/// # Notable behaviors
/// * Ownership is per handle, not per task: every task using one handle
///   (e.g. through an `Arc`) shares the hold. Use one handle per owner.
/// * Re-entry into a lock whose loss has been observed fails with
///   [`LockError::Lost`] instead of counting.
#[derive(Debug)]
pub struct ReentrantLock {
    lock: PredecessorLock,
    held: Mutex<Option<Held>>,
}

#[derive(Debug)]
struct Held {
    guard: LockGuard,
    count: usize,
}

impl ReentrantLock {
    /// A reentrant lock on `dir` (same nodes as [`PredecessorLock`]).
    ///
    /// # Notable errors
    /// * [`LockError::InvalidDir`] if `dir` is not an absolute path.
    pub fn new(client: zk::Client, dir: &str) -> Result<Self> {
        Ok(ReentrantLock {
            lock: PredecessorLock::new(client, dir)?,
            held: Mutex::new(None),
        })
    }

    /// This handle's counters.
    pub fn metrics(&self) -> LockMetrics {
        self.lock.metrics()
    }

    /// Acquires, or re-enters if this handle holds the lock already.
    ///
    /// # Notable errors
    /// * [`LockError::Lost`] on re-entry into a lost lock.
    /// * Those of [`PredecessorLock::acquire`].
    ///
    /// # Cancellation safety
    /// Cancellation safe, as [`PredecessorLock::acquire`].
    pub async fn acquire(&self) -> Result<()> {
        self.enter(None, false).await.map(|_| ())
    }

    /// Acquires or re-enters if possible now; `false` if another owner holds it.
    pub async fn try_acquire(&self) -> Result<bool> {
        self.enter(None, true).await
    }

    /// [`acquire`](Self::acquire) with a deadline ([`LockError::Timeout`] after it).
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<()> {
        self.enter(Some(timeout), false).await.map(|_| ())
    }

    async fn enter(&self, timeout: Option<Duration>, try_only: bool) -> Result<bool> {
        let mut held = self.held.lock().await;
        if let Some(h) = held.as_mut() {
            if h.guard.is_lost() {
                return Err(LockError::Lost);
            }
            h.count += 1;
            return Ok(true);
        }
        let guard = match (timeout, try_only) {
            (_, true) => match self.lock.try_acquire().await? {
                Some(g) => g,
                None => return Ok(false),
            },
            (Some(d), false) => self.lock.acquire_timeout(d).await?,
            (None, false) => self.lock.acquire().await?,
        };
        *held = Some(Held { guard, count: 1 });
        Ok(true)
    }

    /// Counts one release down; at zero, deletes the node as
    /// [`LockGuard::release`] does.
    ///
    /// # Notable errors
    /// * [`LockError::NotHeld`] if this handle does not hold the lock.
    pub async fn release(&self) -> Result<()> {
        let mut held = self.held.lock().await;
        let Some(h) = held.as_mut() else {
            return Err(LockError::NotHeld);
        };
        h.count -= 1;
        if h.count > 0 {
            return Ok(());
        }
        match held.take() {
            Some(h) => h.guard.release().await,
            None => Err(LockError::NotHeld),
        }
    }

    /// How many releases are still owed (0 when not held).
    pub async fn hold_count(&self) -> usize {
        self.held.lock().await.as_ref().map_or(0, |h| h.count)
    }

    /// The fencing token of the current hold, if held.
    pub async fn fencing_token(&self) -> Option<i64> {
        self.held
            .lock()
            .await
            .as_ref()
            .map(|h| h.guard.fencing_token())
    }

    /// The lost signal of the current hold, if held (see [`LockGuard::lost`]).
    pub async fn lost(&self) -> Option<watch::Receiver<bool>> {
        self.held.lock().await.as_ref().map(|h| h.guard.lost())
    }

    /// The state of the current hold, if held (see [`LockGuard::state`]).
    pub async fn state(&self) -> Option<watch::Receiver<GuardState>> {
        self.held.lock().await.as_ref().map(|h| h.guard.state())
    }
}
