//! Lock recipes broken on purpose, each with one mistake seen in the field,
//! so that negative scenarios can show the harness catching it. Never use
//! them for anything else.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use zk_lock::LockError;
use zookeeper_client as zk;

use crate::implementation::Mode;

/// The one mistake a [`BrokenLock`] makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flaw {
    /// Naive lock: a create that fails with ConnectionLoss is taken for
    /// success, although the server may never have applied it.
    IgnoresConnectionLoss,
    /// Predecessor lock: when the watched predecessor goes, holds at once,
    /// without listing the children again (an earlier node may remain).
    NoRecheck,
    /// Sequential lock ordered by the whole node name (ZOOKEEPER-2931),
    /// which with per-contender prefixes is not the creation order.
    NameSort,
    /// Sequential lock whose release deletes once and forgets the node on
    /// ConnectionLoss (Curator 1193): the node stays and blocks everyone.
    ReleaseOnce,
    /// Sequential lock whose non-blocking acquire, finding the lock busy,
    /// deletes its own node once and swallows the error (kazoo 732): a lost
    /// delete leaves the node, and the lock stuck, while the session lives.
    TryCleanupOnce,
}

#[derive(Debug)]
pub(crate) struct BrokenLock {
    client: zk::Client,
    dir: String,
    flaw: Flaw,
    notifications: AtomicU64,
    reads: AtomicU64,
}

#[derive(Debug)]
pub(crate) struct BrokenGuard {
    pub(crate) path: Option<String>,
}

fn zk_err(e: zk::Error) -> LockError {
    match e {
        zk::Error::SessionExpired => LockError::SessionExpired,
        e => LockError::Zk(e),
    }
}

impl BrokenLock {
    pub(crate) fn new(client: zk::Client, dir: &str, flaw: Flaw) -> BrokenLock {
        BrokenLock {
            client,
            dir: dir.to_string(),
            flaw,
            notifications: AtomicU64::new(0),
            reads: AtomicU64::new(0),
        }
    }

    pub(crate) fn counters(&self) -> (u64, u64) {
        (
            self.notifications.load(Ordering::Relaxed),
            self.reads.load(Ordering::Relaxed),
        )
    }

    async fn ensure_dir(&self) -> Result<(), LockError> {
        let opts = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
        loop {
            match self.client.mkdir(&self.dir, &opts).await {
                Ok(()) | Err(zk::Error::NodeExists) => return Ok(()),
                Err(zk::Error::ConnectionLoss) => {
                    tokio::time::sleep(Duration::from_millis(10)).await
                }
                Err(e) => return Err(zk_err(e)),
            }
        }
    }

    pub(crate) async fn acquire(&self, mode: Mode) -> Result<Option<BrokenGuard>, LockError> {
        let run = async {
            match self.flaw {
                Flaw::IgnoresConnectionLoss => self.acquire_naive(matches!(mode, Mode::Try)).await,
                _ => self.acquire_sequential(matches!(mode, Mode::Try)).await,
            }
        };
        match mode {
            Mode::Timeout(d) => tokio::time::timeout(d, run)
                .await
                .unwrap_or(Err(LockError::Timeout)),
            _ => run.await,
        }
    }

    async fn acquire_naive(&self, try_only: bool) -> Result<Option<BrokenGuard>, LockError> {
        self.ensure_dir().await?;
        let path = format!("{}/lock", self.dir);
        let opts = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());
        loop {
            match self.client.create(&path, b"", &opts).await {
                Ok(_) => return Ok(Some(BrokenGuard { path: Some(path) })),
                // THE FLAW: "the create probably went through".
                Err(zk::Error::ConnectionLoss) => return Ok(Some(BrokenGuard { path: None })),
                Err(zk::Error::NodeExists) if try_only => return Ok(None),
                Err(zk::Error::NodeExists) => match self.client.check_and_watch_stat(&path).await {
                    Ok((Some(_), w)) => {
                        w.changed().await;
                        self.notifications.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok((None, _)) => {}
                    Err(zk::Error::ConnectionLoss) => {
                        tokio::time::sleep(Duration::from_millis(10)).await
                    }
                    Err(e) => return Err(zk_err(e)),
                },
                Err(e) => return Err(zk_err(e)),
            }
        }
    }

    async fn children(&self) -> Result<Vec<String>, LockError> {
        loop {
            match self.client.list_children(&self.dir).await {
                Ok(c) => {
                    self.reads.fetch_add(1, Ordering::Relaxed);
                    return Ok(c);
                }
                Err(zk::Error::ConnectionLoss) => {
                    tokio::time::sleep(Duration::from_millis(10)).await
                }
                Err(e) => return Err(zk_err(e)),
            }
        }
    }

    fn order(&self, mut children: Vec<String>) -> Vec<String> {
        children.retain(|c| c.contains("lock-"));
        if self.flaw == Flaw::NameSort {
            // THE FLAW: whole names, prefixes and all.
            children.sort();
        } else {
            children.sort_by_key(|c| c.rsplit('-').next().unwrap_or("").to_string());
        }
        children
    }

    async fn acquire_sequential(&self, try_only: bool) -> Result<Option<BrokenGuard>, LockError> {
        self.ensure_dir().await?;
        let prefix = format!("{}/_c_{}-lock-", self.dir, uuid::Uuid::new_v4());
        let opts = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
        let (_, seq) = loop {
            match self.client.create(&prefix, b"", &opts).await {
                Ok(v) => break v,
                Err(zk::Error::ConnectionLoss) => {
                    tokio::time::sleep(Duration::from_millis(10)).await
                }
                Err(e) => return Err(zk_err(e)),
            }
        };
        let own = format!("{prefix}{seq}");
        let name = own[self.dir.len() + 1..].to_string();
        let guard = BrokenGuard {
            path: Some(own.clone()),
        };
        loop {
            let ordered = self.order(self.children().await?);
            let Some(pos) = ordered.iter().position(|c| *c == name) else {
                return Err(LockError::NodeVanished(own));
            };
            if pos == 0 {
                return Ok(Some(guard));
            }
            if try_only {
                // THE FLAW (TryCleanupOnce): delete once and swallow the error
                // (kazoo 732's `_best_effort_cleanup`).
                if self.flaw == Flaw::TryCleanupOnce {
                    let _ = self.client.delete(&own, None).await;
                    return Ok(None);
                }
                self.release(BrokenGuard { path: Some(own) }).await?;
                return Ok(None);
            }
            let pred = format!("{}/{}", self.dir, ordered[pos - 1]);
            match self.client.get_and_watch_data(&pred).await {
                Ok((_, _, w)) => {
                    let ev = w.changed().await;
                    self.notifications.fetch_add(1, Ordering::Relaxed);
                    if ev.event_type == zk::EventType::Session {
                        if ev.session_state.is_terminated() {
                            return Err(LockError::SessionExpired);
                        }
                        continue;
                    }
                    // THE FLAW (NoRecheck): the predecessor went, so we hold.
                    if self.flaw == Flaw::NoRecheck && ev.event_type == zk::EventType::NodeDeleted {
                        return Ok(Some(guard));
                    }
                }
                Err(zk::Error::NoNode) | Err(zk::Error::ConnectionLoss) => {}
                Err(e) => return Err(zk_err(e)),
            }
        }
    }

    pub(crate) async fn release(&self, guard: BrokenGuard) -> Result<(), LockError> {
        let Some(path) = guard.path else {
            return Ok(());
        };
        loop {
            match self.client.delete(&path, None).await {
                Ok(()) | Err(zk::Error::NoNode) | Err(zk::Error::SessionExpired) => return Ok(()),
                // THE FLAW (ReleaseOnce): forget it.
                Err(zk::Error::ConnectionLoss) if self.flaw == Flaw::ReleaseOnce => return Ok(()),
                Err(zk::Error::ConnectionLoss) => {
                    tokio::time::sleep(Duration::from_millis(10)).await
                }
                Err(e) => return Err(zk_err(e)),
            }
        }
    }
}
