//! Lock recipes broken on purpose, each with one mistake seen in the field,
//! so that negative scenarios can show the harness catching it. Never use
//! them for anything else.
//!
//! Apart from its one mistake each recipe is careful, so that what
//! `harness explore` finds in it is that mistake: a request that fails for
//! the connection or the server's load is tried again (a create whose reply
//! may be lost looks for its own node first, by the unique prefix, as
//! Curator's protected mode does), and a release that finds the session gone
//! says so.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

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
    /// Sequential lock whose release deletes once and forgets the node when
    /// that delete fails, for ConnectionLoss or the server's load (Curator
    /// 1193): the node stays and blocks everyone.
    ReleaseOnce,
    /// Sequential lock whose non-blocking or timed acquire, giving up,
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

/// The server did not apply the request, and said so: it may be sent again.
fn refused(e: &zk::Error) -> bool {
    // OperationTimeout (-7) has no variant of its own in the client.
    matches!(e, zk::Error::Throttled | zk::Error::UnexpectedErrorCode(-7))
}

/// The request may or may not have been applied: the connection went, or
/// the client stopped waiting for the reply.
fn unknown(e: &zk::Error) -> bool {
    matches!(e, zk::Error::ConnectionLoss | zk::Error::Timeout)
}

/// Either: worth sending again after a pause.
fn transient(e: &zk::Error) -> bool {
    refused(e) || unknown(e)
}

/// `f`, or None if the deadline comes first.
async fn until<T>(deadline: Option<Instant>, f: impl std::future::Future<Output = T>) -> Option<T> {
    match deadline {
        Some(d) => tokio::time::timeout_at(d, f).await.ok(),
        None => Some(f.await),
    }
}

async fn pause() {
    tokio::time::sleep(Duration::from_millis(10)).await
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
                Err(e) if transient(&e) => pause().await,
                Err(e) => return Err(zk_err(e)),
            }
        }
    }

    pub(crate) async fn acquire(&self, mode: Mode) -> Result<Option<BrokenGuard>, LockError> {
        let try_only = matches!(mode, Mode::Try);
        // A timed acquisition gives up only while it waits, so that it
        // never leaves a node it created behind (save by its flaw).
        let deadline = match mode {
            Mode::Timeout(d) => Some(Instant::now() + d),
            _ => None,
        };
        match self.flaw {
            Flaw::IgnoresConnectionLoss => self.acquire_naive(try_only, deadline).await,
            _ => self.acquire_sequential(try_only, deadline).await,
        }
    }

    async fn acquire_naive(
        &self,
        try_only: bool,
        deadline: Option<Instant>,
    ) -> Result<Option<BrokenGuard>, LockError> {
        self.ensure_dir().await?;
        let path = format!("{}/lock", self.dir);
        let opts = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());
        loop {
            match self.client.create(&path, b"", &opts).await {
                Ok(_) => return Ok(Some(BrokenGuard { path: Some(path) })),
                // THE FLAW: "the create probably went through".
                Err(zk::Error::ConnectionLoss) => return Ok(Some(BrokenGuard { path: None })),
                Err(e) if refused(&e) => pause().await,
                Err(zk::Error::NodeExists) if try_only => return Ok(None),
                Err(zk::Error::NodeExists) => match self.client.check_and_watch_stat(&path).await {
                    Ok((Some(_), w)) => {
                        if until(deadline, w.changed()).await.is_none() {
                            return Ok(None);
                        }
                        self.notifications.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok((None, _)) => {}
                    Err(e) if transient(&e) => pause().await,
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
                Err(e) if transient(&e) => pause().await,
                Err(e) => return Err(zk_err(e)),
            }
        }
    }

    /// This contender's node, if the server has it (after a create whose
    /// reply was lost).
    async fn find_own(&self, prefix: &str) -> Result<Option<String>, LockError> {
        let unique = &prefix[self.dir.len() + 1..];
        Ok(self
            .children()
            .await?
            .into_iter()
            .find(|c| c.starts_with(unique))
            .map(|c| format!("{}/{c}", self.dir)))
    }

    fn order(&self, mut children: Vec<String>) -> Vec<String> {
        children.retain(|c| c.contains("lock-"));
        if self.flaw == Flaw::NameSort {
            // THE FLAW: whole names, prefixes and all.
            children.sort();
        } else {
            // The sequence suffix, an i32 that wraps, in creation order
            // (serial-number arithmetic from the first listed), so that a
            // run across the counter's wrap finds this recipe's one flaw and
            // not another. A suffix that is not a number sorts last.
            let seq = |c: &String| {
                c.rsplit_once("lock-")
                    .and_then(|(_, n)| n.parse::<i32>().ok())
            };
            let anchor = children.iter().find_map(seq).unwrap_or(0);
            children.sort_by_cached_key(|c| match seq(c) {
                Some(n) => (false, n.wrapping_sub(anchor), c.clone()),
                None => (true, 0, c.clone()),
            });
        }
        children
    }

    /// Deletes a node of this contender's, trying again while the connection
    /// or the server's load fails the delete.
    async fn delete_until_gone(&self, path: &str) -> Result<(), LockError> {
        loop {
            match self.client.delete(path, None).await {
                Ok(()) | Err(zk::Error::NoNode) => return Ok(()),
                Err(e) if transient(&e) => pause().await,
                Err(e) => return Err(zk_err(e)),
            }
        }
    }

    /// Gives up an acquisition: its node goes.
    async fn give_up(&self, own: String) -> Result<Option<BrokenGuard>, LockError> {
        if self.flaw == Flaw::TryCleanupOnce {
            // THE FLAW (TryCleanupOnce): delete once and swallow the error
            // (kazoo 732's `_best_effort_cleanup`).
            let _ = self.client.delete(&own, None).await;
        } else {
            self.release(BrokenGuard { path: Some(own) }).await?;
        }
        Ok(None)
    }

    async fn acquire_sequential(
        &self,
        try_only: bool,
        deadline: Option<Instant>,
    ) -> Result<Option<BrokenGuard>, LockError> {
        self.ensure_dir().await?;
        let prefix = format!("{}/_c_{}-lock-", self.dir, uuid::Uuid::new_v4());
        let opts = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
        let own = loop {
            match self.client.create(&prefix, b"", &opts).await {
                Ok((_, seq)) => break format!("{prefix}{seq}"),
                Err(e) if unknown(&e) => {
                    pause().await;
                    if let Some(own) = self.find_own(&prefix).await? {
                        break own;
                    }
                }
                Err(e) if refused(&e) => pause().await,
                Err(e) => return Err(zk_err(e)),
            }
        };
        let name = own[self.dir.len() + 1..].to_string();
        let guard = BrokenGuard {
            path: Some(own.clone()),
        };
        loop {
            let mut children = self.children().await?;
            // This contender's other nodes, from a create whose reply was
            // lost and which the server applied after it looked: its own, not
            // a predecessor to wait for.
            let unique = &prefix[self.dir.len() + 1..];
            for c in children
                .iter()
                .filter(|c| c.starts_with(unique) && **c != name)
            {
                self.delete_until_gone(&format!("{}/{c}", self.dir)).await?;
            }
            children.retain(|c| !c.starts_with(unique) || *c == name);
            let ordered = self.order(children);
            let Some(pos) = ordered.iter().position(|c| *c == name) else {
                return Err(LockError::NodeVanished(own));
            };
            if pos == 0 {
                return Ok(Some(guard));
            }
            if try_only || deadline.is_some_and(|d| Instant::now() >= d) {
                return self.give_up(own).await;
            }
            let pred = format!("{}/{}", self.dir, ordered[pos - 1]);
            match self.client.get_and_watch_data(&pred).await {
                Ok((_, _, w)) => {
                    let Some(ev) = until(deadline, w.changed()).await else {
                        return self.give_up(own).await;
                    };
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
                Err(zk::Error::NoNode) => {}
                Err(e) if transient(&e) => pause().await,
                Err(e) => return Err(zk_err(e)),
            }
        }
    }

    pub(crate) async fn release(&self, guard: BrokenGuard) -> Result<(), LockError> {
        let Some(path) = guard.path else {
            return Ok(());
        };
        if self.flaw != Flaw::ReleaseOnce {
            return self.delete_until_gone(&path).await;
        }
        match self.client.delete(&path, None).await {
            Ok(()) | Err(zk::Error::NoNode) => Ok(()),
            // THE FLAW (ReleaseOnce): forget it.
            Err(e) if transient(&e) => Ok(()),
            Err(e) => Err(zk_err(e)),
        }
    }
}
