//! The recipes a scenario can drive, behind one interface: zk-lock's, and a
//! few broken on purpose so that negative scenarios can show the harness
//! catching them.

use tokio::sync::watch;
use zk_lock::{
    GuardState, HerdLock, Layout, LockError, LockGuard, NaiveLock, PredecessorLock, ReadWriteLock,
    ReentrantLock,
};
use zookeeper_client as zk;

use crate::scenario::{LayoutName, Recipe, Role};

use crate::implementation::Mode;

/// A lock instance on one client (one per session: not worth boxing).
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum Lock {
    Naive(NaiveLock),
    Herd(HerdLock),
    Predecessor(PredecessorLock),
    Reentrant(ReentrantLock),
    ReadWrite(ReadWriteLock),
    Broken(crate::implementation::broken::BrokenLock),
}

/// A held lock.
#[derive(Debug)]
pub(crate) enum Held {
    Guard(LockGuard),
    /// One entry of the reentrant lock.
    Reentrant {
        state: Option<watch::Receiver<GuardState>>,
    },
    Broken(crate::implementation::broken::BrokenGuard),
}

impl Lock {
    pub(crate) fn new(
        recipe: Recipe,
        layout: LayoutName,
        client: zk::Client,
        dir: &str,
    ) -> Result<Lock, LockError> {
        let layout = match layout {
            LayoutName::Curator => Layout::Curator,
            LayoutName::Kazoo => Layout::Kazoo,
        };
        use crate::implementation::broken::{BrokenLock, Flaw};
        Ok(match recipe {
            Recipe::Naive => Lock::Naive(NaiveLock::new(client, dir)?),
            Recipe::Herd => Lock::Herd(HerdLock::with_layout(client, dir, layout)?),
            Recipe::Predecessor => {
                Lock::Predecessor(PredecessorLock::with_layout(client, dir, layout)?)
            }
            Recipe::Reentrant => Lock::Reentrant(ReentrantLock::new(client, dir)?),
            Recipe::RwHerd => Lock::ReadWrite(ReadWriteLock::new_herd(client, dir)?),
            Recipe::RwPredecessor => Lock::ReadWrite(ReadWriteLock::new(client, dir)?),
            Recipe::BrokenIgnoresConnectionLoss => {
                Lock::Broken(BrokenLock::new(client, dir, Flaw::IgnoresConnectionLoss))
            }
            Recipe::BrokenNoRecheck => Lock::Broken(BrokenLock::new(client, dir, Flaw::NoRecheck)),
            Recipe::BrokenNameSort => Lock::Broken(BrokenLock::new(client, dir, Flaw::NameSort)),
            Recipe::BrokenReleaseOnce => {
                Lock::Broken(BrokenLock::new(client, dir, Flaw::ReleaseOnce))
            }
            Recipe::BrokenTryCleanupOnce => {
                Lock::Broken(BrokenLock::new(client, dir, Flaw::TryCleanupOnce))
            }
        })
    }

    /// Acquires; `Ok(None)`: the lock was busy (`Mode::Try`).
    pub(crate) async fn acquire(&self, role: Role, mode: Mode) -> Result<Option<Held>, LockError> {
        fn wrap(r: Result<LockGuard, LockError>) -> Result<Option<Held>, LockError> {
            r.map(|g| Some(Held::Guard(g)))
        }
        fn wrap_try(r: Result<Option<LockGuard>, LockError>) -> Result<Option<Held>, LockError> {
            r.map(|g| g.map(Held::Guard))
        }
        match (self, mode) {
            (Lock::Naive(l), Mode::Block) => wrap(l.acquire().await),
            (Lock::Naive(l), Mode::Timeout(d)) => wrap(l.acquire_timeout(d).await),
            (Lock::Naive(l), Mode::Try) => wrap_try(l.try_acquire().await),
            (Lock::Herd(l), Mode::Block) => wrap(l.acquire().await),
            (Lock::Herd(l), Mode::Timeout(d)) => wrap(l.acquire_timeout(d).await),
            (Lock::Herd(l), Mode::Try) => wrap_try(l.try_acquire().await),
            (Lock::Predecessor(l), Mode::Block) => wrap(l.acquire().await),
            (Lock::Predecessor(l), Mode::Timeout(d)) => wrap(l.acquire_timeout(d).await),
            (Lock::Predecessor(l), Mode::Try) => wrap_try(l.try_acquire().await),
            (Lock::ReadWrite(l), mode) => match (role, mode) {
                (Role::Read, Mode::Block) => wrap(l.read().await),
                (Role::Read, Mode::Timeout(d)) => wrap(l.read_timeout(d).await),
                (Role::Read, Mode::Try) => wrap_try(l.try_read().await),
                (_, Mode::Block) => wrap(l.write().await),
                (_, Mode::Timeout(d)) => wrap(l.write_timeout(d).await),
                (_, Mode::Try) => wrap_try(l.try_write().await),
            },
            (Lock::Reentrant(l), mode) => {
                // One entry per call: a second acquire while held re-enters
                // (counted, no second node); the runner re-enters on purpose.
                let entered = match mode {
                    Mode::Block => l.acquire().await.map(|()| true),
                    Mode::Timeout(d) => l.acquire_timeout(d).await.map(|()| true),
                    Mode::Try => l.try_acquire().await,
                }?;
                if !entered {
                    return Ok(None);
                }
                Ok(Some(Held::Reentrant {
                    state: l.state().await,
                }))
            }
            (Lock::Broken(l), mode) => l.acquire(mode).await.map(|g| g.map(Held::Broken)),
        }
    }

    /// Releases what `held` holds.
    pub(crate) async fn release(&self, held: Held) -> Result<(), LockError> {
        match (self, held) {
            (_, Held::Guard(g)) => g.release().await,
            (Lock::Reentrant(l), Held::Reentrant { .. }) => l.release().await,
            (Lock::Broken(l), Held::Broken(g)) => l.release(g).await,
            (_, held) => unreachable!("released through the wrong lock: {held:?}"),
        }
    }

    /// The instance's client-side counters: (notifications, children reads).
    pub(crate) fn counters(&self) -> (u64, u64) {
        let m = match self {
            Lock::Naive(l) => l.metrics(),
            Lock::Herd(l) => l.metrics(),
            Lock::Predecessor(l) => l.metrics(),
            Lock::Reentrant(l) => l.metrics(),
            Lock::ReadWrite(l) => l.metrics(),
            Lock::Broken(l) => return l.counters(),
        };
        (m.notifications, m.children_reads)
    }
}

impl Held {
    /// The lock node's path, when the recipe tells it.
    pub(crate) fn path(&self) -> Option<String> {
        match self {
            Held::Guard(g) => Some(g.path().to_string()),
            Held::Reentrant { .. } => None,
            Held::Broken(g) => g.path.clone(),
        }
    }

    /// The guard's state signal (held, suspended, lost), if the recipe has one.
    pub(crate) fn state(&self) -> Option<watch::Receiver<GuardState>> {
        match self {
            Held::Guard(g) => Some(g.state()),
            Held::Reentrant { state, .. } => state.clone(),
            Held::Broken(_) => None,
        }
    }
}
