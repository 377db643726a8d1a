//! [`LockGuard`]: a held lock, its fencing token, its "lost" signal, and its release.

use tokio::sync::watch;
use tokio::task::JoinHandle;
use zookeeper_client as zk;

use crate::error::Result;
use crate::node::{self, Owned};

/// A held lock.
///
/// # Notable behaviors
/// * [`fencing_token`](Self::fencing_token) is the lock node's czxid: it grows
///   with every acquisition of the lock, so a resource that remembers the
///   highest token it has seen can refuse a holder that lost the lock
///   without noticing (Curator issue 727).
/// * A background task keeps a getData watch on the lock node; the
///   [`lost`](Self::lost) signal fires when the node is deleted by anyone
///   but [`release`](Self::release), or the session expires or is closed.
///   This is one server-side watch per holder; when the holder deletes its
///   node, any notification of it goes to the holder itself, never to a waiter.
/// * Dropping the guard without `release` deletes the node from a spawned
///   task (best effort: needs a Tokio runtime); call `release` to know when
///   the lock is free.
#[derive(Debug)]
pub struct LockGuard {
    client: zk::Client,
    node: Owned,
    lost: watch::Receiver<bool>,
    task: JoinHandle<()>,
    released: bool,
}

impl LockGuard {
    pub(crate) fn new(client: zk::Client, node: Owned) -> LockGuard {
        let (tx, lost) = watch::channel(false);
        let task = tokio::spawn(watch_node(client.clone(), node.clone(), tx));
        LockGuard {
            client,
            node,
            lost,
            task,
            released: false,
        }
    }

    /// The lock node's path.
    pub fn path(&self) -> &str {
        &self.node.path
    }

    /// The fencing token: the lock node's czxid, unique and increasing per acquisition.
    pub fn fencing_token(&self) -> i64 {
        self.node.czxid
    }

    /// A receiver whose value turns `true` once the lock is lost; select on
    /// `changed()` or use [`LockGuard::lost_signal`].
    pub fn lost(&self) -> watch::Receiver<bool> {
        self.lost.clone()
    }

    /// Whether the loss of the lock has been observed.
    pub fn is_lost(&self) -> bool {
        *self.lost.borrow()
    }

    /// Completes when the lock is lost (session expired or closed, node
    /// deleted by someone else). Never completes while the lock is held.
    ///
    /// # Cancellation safety
    /// Cancellation safe: it only reads a watch channel.
    pub async fn lost_signal(&self) {
        let mut rx = self.lost.clone();
        // The sender lives as long as the watching task; if it ended without
        // sending (it cannot), treat the lock as lost.
        let _ = rx.wait_for(|lost| *lost).await;
    }

    /// Releases the lock: deletes the node and retries through
    /// ConnectionLoss until the node is provably gone. A node whose session
    /// has expired is already gone, which counts as released.
    ///
    /// # Notable errors
    /// * [`LockError::Zk`](crate::LockError::Zk) for errors other than
    ///   ConnectionLoss, NoNode and SessionExpired (e.g. NoAuth).
    ///
    /// # Cancellation safety
    /// Not cancellation safe: a cancelled release may leave the node in
    /// place while the guard is gone; it is then deleted when the session ends.
    pub async fn release(mut self) -> Result<()> {
        self.released = true;
        self.task.abort();
        node::delete_until_gone(&self.client, &self.node).await
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        self.task.abort();
        if self.released {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let client = self.client.clone();
            let node = self.node.clone();
            rt.spawn(async move {
                let _ = node::delete_until_gone(&client, &node).await;
            });
        }
    }
}

async fn watch_node(client: zk::Client, node: Owned, tx: watch::Sender<bool>) {
    loop {
        match client.get_and_watch_data(&node.path).await {
            Ok((_, stat, _)) if stat.czxid != node.czxid => break,
            Ok((_, _, watcher)) => {
                let event = watcher.changed().await;
                match event.event_type {
                    zk::EventType::NodeDeleted => break,
                    zk::EventType::Session if event.session_state.is_terminated() => break,
                    _ => {}
                }
            }
            Err(zk::Error::ConnectionLoss) if !client.state().is_terminated() => {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            Err(_) => break,
        }
    }
    let _ = tx.send(true);
}
