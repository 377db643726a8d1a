//! [`LockGuard`]: a held lock, its fencing token, its state (held,
//! suspended, lost), and its release.

use tokio::sync::watch;
use tokio::task::JoinHandle;
use zookeeper_client as zk;

use crate::error::{LockError, Result};
use crate::node::{self, Owned};

/// What the holder of a [`LockGuard`] can know about its lock.
///
/// `Held` and `Suspended` alternate as the client loses and regains its
/// connection; `Lost` is final. This is Curator's `ConnectionState`
/// advice (SUSPENDED: stop acting as the holder until RECONNECTED or
/// LOST; apache/curator#985, CURATOR-465) as a value the holder can watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuardState {
    /// Connected, and the lock node is this guard's.
    Held,
    /// The client is disconnected: the session may be alive (the node and
    /// the lock with it) or expiring, and the holder cannot tell which.
    /// Back to `Held` once the client reconnects within the session and
    /// finds the node still there; `Lost` otherwise.
    Suspended,
    /// The lock is gone: the session expired or was closed, or the node was
    /// deleted by someone else.
    Lost,
}

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
/// * The same task follows the client's session state: [`state`](Self::state)
///   turns [`GuardState::Suspended`] when the client is disconnected and
///   back to [`GuardState::Held`] when it has reconnected to the same session
///   and read the node back (one getData, without a watch).
/// * Dropping the guard without `release` deletes the node from a spawned
///   task (best effort: needs a Tokio runtime); call `release` to know when
///   the lock is free.
#[derive(Debug)]
pub struct LockGuard {
    client: zk::Client,
    node: Owned,
    lost: watch::Receiver<bool>,
    state: watch::Receiver<GuardState>,
    task: JoinHandle<()>,
    released: bool,
}

impl LockGuard {
    pub(crate) fn new(client: zk::Client, node: Owned) -> LockGuard {
        let (lost_tx, lost) = watch::channel(false);
        let (state_tx, state) = watch::channel(GuardState::Held);
        let signals = Signals {
            lost: lost_tx,
            state: state_tx,
        };
        let task = tokio::spawn(watch_node(client.clone(), node.clone(), signals));
        LockGuard {
            client,
            node,
            lost,
            state,
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

    /// A receiver of the lock's [`GuardState`]: `Held`, `Suspended` while
    /// the client is disconnected, and finally `Lost`. Select on
    /// `changed()`, or `wait_for` a state. [`lost`](Self::lost) turns `true`
    /// exactly when this turns `Lost`.
    pub fn state(&self) -> watch::Receiver<GuardState> {
        self.state.clone()
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
    /// ConnectionLoss until the node is provably gone.
    ///
    /// # Notable errors
    /// * [`LockError::Lost`](crate::LockError::Lost): the lock had been lost
    ///   before the release, or may have been: the guard had seen it lost,
    ///   the node was gone when the delete reached the server (someone else
    ///   deleted it), or the session expired before the release could prove
    ///   its delete came first. The node is gone all the same, but
    ///   whatever the holder did since the loss was not under the lock, and
    ///   the holder may not have heard of it any other way: a session can
    ///   expire on the server an instant before the holder's last act, and
    ///   the loss then reaches the holder only through this error. Curator's
    ///   `release()` and kazoo's `Lock.release()` raise their session-expired
    ///   errors in the same case.
    /// * [`LockError::Zk`](crate::LockError::Zk) for errors other than
    ///   ConnectionLoss, NoNode and SessionExpired (e.g. NoAuth).
    ///
    /// # Cancellation safety
    /// Not cancellation safe: a cancelled release may leave the node in
    /// place while the guard is gone; it is then deleted when the session ends.
    pub async fn release(mut self) -> Result<()> {
        self.released = true;
        // Whether the watching task has seen the loss already: it stops here.
        let lost = *self.lost.borrow();
        self.task.abort();
        match node::delete_until_gone(&self.client, &self.node).await? {
            _ if lost => Err(LockError::Lost),
            node::Gone::Lost => Err(LockError::Lost),
            node::Gone::Deleted => Ok(()),
        }
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

/// The guard task's two outputs; `Lost` is sent on both when it ends.
struct Signals {
    lost: watch::Sender<bool>,
    state: watch::Sender<GuardState>,
}

impl Signals {
    fn set(&self, to: GuardState) {
        self.state
            .send_if_modified(|s| std::mem::replace(s, to) != to);
    }
}

/// What a session state means for a held lock.
enum Session {
    Connected,
    Disconnected,
    Ended,
}

fn session(state: zk::SessionState) -> Session {
    match state {
        zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly => Session::Connected,
        zk::SessionState::Disconnected => Session::Disconnected,
        _ => Session::Ended,
    }
}

/// Runs `op` (a request) while following the session state: `Suspended`
/// on disconnection. `None` if the session ended first.
async fn following<T>(
    op: impl std::future::Future<Output = T>,
    states: &mut zk::StateWatcher,
    signals: &Signals,
) -> Option<T> {
    tokio::pin!(op);
    loop {
        tokio::select! {
            // A reply received before a disconnection wins over it.
            biased;
            out = &mut op => return Some(out),
            state = states.changed() => match session(state) {
                Session::Ended => return None,
                Session::Disconnected => signals.set(GuardState::Suspended),
                // The request's reply will tell.
                Session::Connected => {}
            },
        }
    }
}

/// After a reply that shows the node is still ours: `Held`, unless the
/// client has been disconnected since.
fn confirmed(client: &zk::Client, signals: &Signals) {
    if matches!(session(client.state()), Session::Connected) {
        signals.set(GuardState::Held);
    }
}

/// Follows the node (a getData watch) and the session state until the
/// lock is lost or the guard is released (the task is aborted then).
async fn watch_node(client: zk::Client, node: Owned, signals: Signals) {
    let mut states = client.state_watcher();
    if !matches!(session(states.state()), Session::Connected) {
        signals.set(GuardState::Suspended);
    }
    let mut shed = node::Backoff::new();
    'watch: loop {
        let arm = client.get_and_watch_data(&node.path);
        let Some(reply) = following(arm, &mut states, &signals).await else {
            break;
        };
        let watcher = match reply {
            Ok((_, stat, _)) if stat.czxid != node.czxid => break,
            Ok((_, _, watcher)) => watcher,
            Err(err) if node::connection_lost(&err) && !client.state().is_terminated() => {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
            // A shed read says nothing about the node: read again.
            Err(err) if node::shed(&err) => {
                shed.wait().await;
                continue;
            }
            Err(_) => break,
        };
        confirmed(&client, &signals);
        let event = watcher.changed();
        tokio::pin!(event);
        loop {
            tokio::select! {
                biased;
                event = &mut event => match event.event_type {
                    zk::EventType::NodeDeleted => break 'watch,
                    zk::EventType::Session if event.session_state.is_terminated() => break 'watch,
                    // Data changed: re-arm.
                    _ => continue 'watch,
                },
                state = states.changed() => match session(state) {
                    Session::Ended => break 'watch,
                    Session::Disconnected => signals.set(GuardState::Suspended),
                    Session::Connected => {
                        // Same session, but was the node deleted meanwhile?
                        let check = client.get_data(&node.path);
                        match following(check, &mut states, &signals).await {
                            Some(Ok((_, stat))) if stat.czxid == node.czxid => {
                                confirmed(&client, &signals);
                            }
                            // Cut again or shed: a later state change or the
                            // re-armed watch tells.
                            Some(Err(err)) if node::connection_lost(&err) || node::shed(&err) => {
                                continue 'watch
                            }
                            _ => break 'watch,
                        }
                    }
                },
            }
        }
    }
    signals.set(GuardState::Lost);
    let _ = signals.lost.send(true);
}
