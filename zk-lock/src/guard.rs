//! [`LockGuard`]: a held lock, its fencing token, its state (held,
//! suspended, lost), and its release.

use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use zookeeper_client as zk;

use crate::error::{connection_lost, shed, LockError, Result};
use crate::node::{self, Owned};

/// What the holder of a [`LockGuard`] can know about its lock.
///
/// `Held` and `Suspended` alternate as the client loses and regains its
/// connection; `Lost` and `Released` are final, and only a
/// [`GuardMonitor`] sees `Released`. This is Curator's `ConnectionState`
/// advice (SUSPENDED: stop acting as the holder until RECONNECTED or
/// LOST; apache/curator#985, CURATOR-465) as a value the holder can watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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
    /// The guard was released (for a reentrant lock: every guard of the
    /// hold) and the release found the lock still held; or it was dropped
    /// without a release, while not known to be lost (its node is then
    /// deleted in the background, and nothing reports how that ends).
    Released,
}

/// A held lock.
///
/// # Notable behaviors
/// * [`fencing_token`](Self::fencing_token) is the lock node's czxid: it grows
///   with every acquisition of the lock, so a resource that remembers the
///   highest token it has seen can refuse a holder that lost the lock
///   without noticing (apache/curator#727).
/// * A background task keeps a getData watch on the lock node and follows
///   the client's session state. [`state`](Self::state) is a snapshot of
///   what it knows: [`GuardState::Held`]; [`GuardState::Suspended`] while
///   the client is disconnected, back to `Held` once it has reconnected to
///   the same session and read the node back (one getData, without a
///   watch); and finally [`GuardState::Lost`] when the node is deleted by
///   anyone but [`release`](Self::release), or the session expires or is
///   closed. [`lost`](Self::lost) completes at that moment. Another task
///   follows the same states through a [`GuardMonitor`]. This is one
///   server-side watch per holder; when the holder deletes its node, any
///   notification of it goes to the holder itself, never to a waiter.
/// * A reentrant lock ([`LockBuilder::reentrant`](crate::LockBuilder::reentrant))
///   hands every re-entry a guard of its own for the same node: the node is
///   deleted when the last of them is released or dropped.
/// * Dropping the guard without `release` deletes the node from a spawned
///   task (best effort: needs a Tokio runtime); call `release` to know when
///   the lock is free.
#[derive(Debug)]
#[must_use = "dropping the guard releases the lock in the background"]
pub struct LockGuard {
    hold: Arc<Hold>,
}

/// One node held: shared by the guards of a reentrant lock's entries.
#[derive(Debug)]
pub(crate) struct Hold {
    client: zk::Client,
    node: Owned,
    signals: Signals,
    state: watch::Receiver<GuardState>,
    task: JoinHandle<()>,
    released: bool,
}

impl Hold {
    pub(crate) fn new(client: zk::Client, node: Owned) -> Hold {
        let (state_tx, state) = watch::channel(GuardState::Held);
        let signals = Signals(Arc::new(state_tx));
        let task = tokio::spawn(watch_node(client.clone(), node.clone(), signals.clone()));
        Hold {
            client,
            node,
            signals,
            state,
            task,
            released: false,
        }
    }

    pub(crate) fn state(&self) -> GuardState {
        *self.state.borrow()
    }

    async fn release(mut self) -> Result<()> {
        // Whether the watching task has seen the loss already: it stops here.
        let lost = self.state() == GuardState::Lost;
        self.task.abort();
        let gone = node::delete_until_gone(&self.client, &self.node).await;
        // Cancelled before this point, the hold's drop deletes it in the background.
        self.released = true;
        let result = match gone {
            _ if lost => Err(LockError::Lost),
            Ok(node::Gone::Lost) => Err(LockError::Lost),
            Ok(node::Gone::Deleted) => Ok(()),
            Err(err) => {
                // Not gone: the session's end removes it.
                self.released = false;
                Err(err)
            }
        };
        // The monitors learn how it ended only now: a release can find the
        // lock lost (NoNode, or the session expired while suspended).
        let end = if result == Err(LockError::Lost) {
            GuardState::Lost
        } else {
            GuardState::Released
        };
        self.signals.finish(end);
        result
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.task.abort();
        if self.released {
            return;
        }
        // Dropped without a release (or with one cancelled): the delete runs
        // in the background, and nobody hears how it ends.
        self.signals.finish(GuardState::Released);
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let client = self.client.clone();
            let node = self.node.clone();
            rt.spawn(async move {
                let _ = node::delete_until_gone(&client, &node).await;
            });
        }
    }
}

impl LockGuard {
    pub(crate) fn new(hold: Arc<Hold>) -> LockGuard {
        LockGuard { hold }
    }

    /// The hold this guard shares (a reentrant lock keeps a weak reference).
    pub(crate) fn hold(&self) -> &Arc<Hold> {
        &self.hold
    }

    /// The lock node's path.
    pub fn path(&self) -> &str {
        &self.hold.node.path
    }

    /// The fencing token: the lock node's czxid, unique and increasing per acquisition.
    pub fn fencing_token(&self) -> i64 {
        self.hold.node.czxid
    }

    /// What is known of the lock now: `Held`, `Suspended` while the client
    /// is disconnected, or `Lost` (final).
    pub fn state(&self) -> GuardState {
        self.hold.state()
    }

    /// Completes when the lock is lost (session expired or closed, node
    /// deleted by someone else): at once if it is lost already. Never
    /// completes while the lock is held or suspended.
    ///
    /// # Cancellation safety
    /// Cancellation safe: it only reads the state.
    pub async fn lost(&self) {
        lost(self.hold.state.clone()).await
    }

    /// A handle on this guard's state for another task: it follows `Held`,
    /// `Suspended` and `Lost` without owning the guard, and sees the end of
    /// the hold, `Released` or `Lost`, as the release found it. Its
    /// [`changed`](GuardMonitor::changed) reports the changes after this call.
    pub fn monitor(&self) -> GuardMonitor {
        let mut state = self.hold.state.clone();
        state.borrow_and_update();
        GuardMonitor { state }
    }

    /// Releases the lock: deletes the node and retries through
    /// ConnectionLoss until the node is provably gone. For a reentrant
    /// lock, only the release of the last guard of a hold deletes the node;
    /// the others return at once.
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
    ///   errors in the same case. A reentrant entry's release answers `Lost`
    ///   too once the hold is lost.
    /// * [`LockError::Zk`](crate::LockError::Zk) for errors other than
    ///   ConnectionLoss, NoNode and SessionExpired (e.g. NoAuth).
    ///
    /// # Cancellation safety
    /// Not cancellation safe: a cancelled release may leave the node in
    /// place while the guard is gone; it is then deleted when the session ends.
    pub async fn release(self) -> Result<()> {
        let lost = self.state() == GuardState::Lost;
        // Exactly one of the hold's guards gets it, even when several
        // release at once.
        match Arc::into_inner(self.hold) {
            Some(hold) => hold.release().await,
            None if lost => Err(LockError::Lost),
            None => Ok(()),
        }
    }
}

/// Follows a [`LockGuard`]'s state from another task ([`LockGuard::monitor`]).
///
/// Besides the guard's own states it sees the end of the hold:
/// [`GuardState::Released`] once the guard is released or dropped.
#[derive(Debug, Clone)]
pub struct GuardMonitor {
    state: watch::Receiver<GuardState>,
}

impl GuardMonitor {
    /// The guard's state now.
    pub fn state(&self) -> GuardState {
        *self.state.borrow()
    }

    /// Completes when the lock is lost. Never completes while the lock is
    /// held or suspended, nor after a release that came first.
    ///
    /// # Cancellation safety
    /// Cancellation safe.
    pub async fn lost(&self) {
        lost(self.state.clone()).await
    }

    /// Waits for the next change of state this monitor has not reported
    /// yet, and returns the new state. Once the state is final (`Lost` or
    /// `Released`) and reported, it never completes again.
    ///
    /// # Cancellation safety
    /// Cancellation safe: a change is reported by the call that completes.
    pub async fn changed(&mut self) -> GuardState {
        match self.state.changed().await {
            Ok(()) => *self.state.borrow_and_update(),
            // The hold is gone, its final state reported already.
            Err(_) => std::future::pending().await,
        }
    }
}

/// Completes when `state` is `Lost`; never after `Released`.
async fn lost(mut state: watch::Receiver<GuardState>) {
    match state
        .wait_for(|s| matches!(s, GuardState::Lost | GuardState::Released))
        .await
    {
        Ok(s) if *s == GuardState::Lost => {}
        _ => std::future::pending().await,
    }
}

/// The guard task's output; `Lost` is sent when it ends.
#[derive(Debug, Clone)]
struct Signals(Arc<watch::Sender<GuardState>>);

impl Signals {
    /// Moves to `to`, unless the state is final already (a task aborted
    /// at its release may still be running a step on another thread).
    fn set(&self, to: GuardState) {
        self.0.send_if_modified(|s| match s {
            GuardState::Lost | GuardState::Released => false,
            s => std::mem::replace(s, to) != to,
        });
    }

    /// The end of the hold: `to` (`Lost` or `Released`), unless it ended
    /// already.
    fn finish(&self, to: GuardState) {
        self.set(to);
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
    let mut backoff = node::Backoff::new();
    'watch: loop {
        let arm = client.get_and_watch_data(&node.path);
        let Some(reply) = following(arm, &mut states, &signals).await else {
            break;
        };
        let watcher = match reply {
            Ok((_, stat, _)) if stat.czxid != node.czxid => break,
            Ok((_, _, watcher)) => watcher,
            Err(err) if connection_lost(&err) && !client.state().is_terminated() => {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
            // A shed read says nothing about the node: read again.
            Err(err) if shed(&err) => {
                backoff.wait().await;
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
                            Some(Err(err)) if connection_lost(&err) || shed(&err) => {
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
}
