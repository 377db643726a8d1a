//! Naive exclusive lock: one ephemeral node `<dir>/lock`.
//!
//! Every contender tries to create `<dir>/lock` with a per-acquisition id as
//! its data; exactly one succeeds. The others set an exists watch on it and
//! try again when it is deleted, so each release wakes every waiter (the
//! herd effect). After a ConnectionLoss on create, a NodeExists is checked
//! by reading the node back: if it carries our id and our session owns it,
//! the lost reply was our success.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use zookeeper_client as zk;

use crate::error::{LockError, Result};
use crate::guard::LockGuard;
use crate::metrics::{Counters, LockMetrics};
use crate::node::{connection_lost, find_by_data, retry, shed, Backoff, Owned, Pending, Target};
use crate::sequential::{contender_id, ensure_dir, validate_dir};

/// See the [crate docs](crate) for costs and failure handling.
#[derive(Debug)]
pub struct NaiveLock {
    client: zk::Client,
    dir: String,
    path: String,
    counters: Arc<Counters>,
}

impl NaiveLock {
    /// A lock whose node is `<dir>/lock` (`dir` is created on first use).
    ///
    /// # Notable errors
    /// * [`LockError::InvalidDir`] if `dir` is not an absolute path.
    pub fn new(client: zk::Client, dir: &str) -> Result<Self> {
        let dir = validate_dir(dir)?;
        Ok(NaiveLock {
            client,
            path: format!("{dir}/lock"),
            dir,
            counters: Counters::new(),
        })
    }

    /// The lock node's path, `<dir>/lock`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// This instance's counters (`children_reads` stays 0: this recipe never lists children).
    pub fn metrics(&self) -> LockMetrics {
        self.counters.snapshot()
    }

    /// Waits until the lock is held.
    ///
    /// # Notable errors
    /// * [`LockError::SessionExpired`] if the session expired while waiting.
    ///
    /// # Notable behaviors
    /// When the exists call finds the node already gone, its watch stays
    /// registered until the node is next created (by this contender's own
    /// retry, which is then notified of its own create).
    ///
    /// # Cancellation safety
    /// Cancellation safe: a dropped future deletes the node if it turns out
    /// to be ours (our id as data, our session as owner).
    pub async fn acquire(&self) -> Result<LockGuard> {
        match self.run(None, false).await? {
            Some(guard) => Ok(guard),
            None => Err(LockError::Timeout),
        }
    }

    /// Takes the lock if `<dir>/lock` does not exist now.
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        self.run(None, true).await
    }

    /// [`acquire`](Self::acquire) with a deadline.
    ///
    /// # Notable errors
    /// * [`LockError::Timeout`] after `timeout`, with no node of ours left.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        match self.run(Some(Instant::now() + timeout), false).await? {
            Some(guard) => Ok(guard),
            None => Err(LockError::Timeout),
        }
    }

    async fn run(&self, deadline: Option<Instant>, try_only: bool) -> Result<Option<LockGuard>> {
        let start = std::time::Instant::now();
        let id = contender_id().into_bytes();
        let mut pending = Pending::new(
            self.client.clone(),
            Target::Tagged {
                path: self.path.clone(),
                id: id.clone(),
            },
        );
        let attempt = self.attempt(&mut pending, &id, try_only);
        let result = match deadline {
            None => attempt.await,
            Some(at) => tokio::time::timeout_at(at, attempt)
                .await
                .unwrap_or(Err(LockError::Timeout)),
        };
        self.counters.waited(start.elapsed());
        match result {
            Ok(true) => match pending.disarm() {
                Some(node) => {
                    self.counters.acquired();
                    Ok(Some(LockGuard::new(self.client.clone(), node)))
                }
                None => Err(LockError::NodeVanished(self.path.clone())),
            },
            Ok(false) => {
                pending.cleared();
                Ok(None)
            }
            Err(err) => {
                let _ = pending.remove().await;
                Err(err)
            }
        }
    }

    async fn attempt(&self, pending: &mut Pending, id: &[u8], try_only: bool) -> Result<bool> {
        let client = &self.client;
        let opts = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());
        let mut maybe_ours = false;
        let mut backoff = Backoff::new();
        loop {
            match client.create(&self.path, id, &opts).await {
                Ok((stat, _)) => {
                    pending.created(Owned {
                        path: self.path.clone(),
                        czxid: stat.czxid,
                    });
                    return Ok(true);
                }
                Err(zk::Error::NoNode) => ensure_dir(client, &self.dir).await?,
                // Not executed: create again.
                Err(err) if shed(&err) => backoff.wait().await,
                Err(err) if connection_lost(&err) => {
                    if client.state().is_terminated() {
                        return Err(LockError::SessionExpired);
                    }
                    maybe_ours = true;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Err(zk::Error::NodeExists) => {
                    if std::mem::take(&mut maybe_ours) {
                        if let Some(node) = find_by_data(client, &self.path, id).await? {
                            pending.created(node);
                            return Ok(true);
                        }
                    }
                    if try_only {
                        return Ok(false);
                    }
                    match retry(client, || client.check_and_watch_stat(&self.path)).await {
                        Ok((None, _)) => continue,
                        Ok((Some(_), watcher)) => {
                            let event = watcher.changed().await;
                            self.counters.notification();
                            if event.event_type == zk::EventType::Session
                                && event.session_state.is_terminated()
                            {
                                return Err(LockError::SessionExpired);
                            }
                        }
                        Err(err) => return Err(LockError::from_zk(err)),
                    }
                }
                Err(err) => return Err(LockError::from_zk(err)),
            }
        }
    }
}
