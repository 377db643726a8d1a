//! The recipes a scenario can drive, behind one interface: zk-lock's, and a
//! few broken on purpose so that negative scenarios can show the harness
//! catching them.

use zk_lock::{GuardMonitor, Layout, LockError, LockGuard, Strategy};
use zookeeper_client as zk;

use crate::implementation::broken::{BrokenGuard, BrokenLock, Flaw};
use crate::implementation::Mode;
use crate::scenario::{LayoutName, Recipe, Role};

/// A lock instance on one client.
#[derive(Debug)]
pub(crate) enum Lock {
    /// zk-lock's: the side each role acquires (a mutex's two are one lock).
    Zk {
        read: zk_lock::Lock,
        write: zk_lock::Lock,
    },
    Broken(BrokenLock),
}

/// A held lock.
#[derive(Debug)]
pub(crate) enum Held {
    /// zk-lock's guard (a reentrant lock's entry has one too).
    Guard(LockGuard),
    Broken(BrokenGuard),
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
        let broken = |flaw| Lock::Broken(BrokenLock::new(client.clone(), dir, flaw));
        let builder = zk_lock::Lock::builder(client.clone(), dir);
        let mutex = |lock: zk_lock::Lock| Lock::Zk {
            read: lock.clone(),
            write: lock,
        };
        let rw = |rw: zk_lock::RwLock| Lock::Zk {
            read: rw.reader().clone(),
            write: rw.writer().clone(),
        };
        Ok(match recipe {
            // One node, `<dir>/lock`, whatever the layout.
            Recipe::Naive => mutex(builder.strategy(Strategy::Naive).build()?),
            Recipe::Herd => mutex(builder.strategy(Strategy::Herd).layout(layout).build()?),
            Recipe::Predecessor => mutex(builder.layout(layout).build()?),
            Recipe::Reentrant => mutex(builder.reentrant(true).layout(layout).build()?),
            Recipe::RwHerd => rw(builder
                .strategy(Strategy::Herd)
                .layout(layout)
                .read_write()?),
            Recipe::RwPredecessor => rw(builder.layout(layout).read_write()?),
            Recipe::BrokenIgnoresConnectionLoss => broken(Flaw::IgnoresConnectionLoss),
            Recipe::BrokenNoRecheck => broken(Flaw::NoRecheck),
            Recipe::BrokenNameSort => broken(Flaw::NameSort),
            Recipe::BrokenReleaseOnce => broken(Flaw::ReleaseOnce),
            Recipe::BrokenTryCleanupOnce => broken(Flaw::TryCleanupOnce),
        })
    }

    /// Acquires; `Ok(None)`: the lock was busy (`Mode::Try`). A reentrant
    /// lock's second acquire while held re-enters (another guard, no
    /// second node); the runner re-enters on purpose.
    pub(crate) async fn acquire(&self, role: Role, mode: Mode) -> Result<Option<Held>, LockError> {
        let lock = match self {
            Lock::Zk { read, .. } if role == Role::Read => read,
            Lock::Zk { write, .. } => write,
            Lock::Broken(l) => return l.acquire(mode).await.map(|g| g.map(Held::Broken)),
        };
        let guard = match mode {
            Mode::Block => Some(lock.acquire().await?),
            Mode::Timeout(d) => Some(lock.acquire_timeout(d).await?),
            Mode::Try => lock.try_acquire().await?,
        };
        Ok(guard.map(Held::Guard))
    }

    /// Releases what `held` holds.
    pub(crate) async fn release(&self, held: Held) -> Result<(), LockError> {
        match (self, held) {
            (_, Held::Guard(g)) => g.release().await,
            (Lock::Broken(l), Held::Broken(g)) => l.release(g).await,
            (_, held) => unreachable!("released through the wrong lock: {held:?}"),
        }
    }

    /// The instance's client-side counters: (notifications, children reads).
    pub(crate) fn counters(&self) -> (u64, u64) {
        match self {
            Lock::Zk { write, .. } => {
                let m = write.metrics();
                (m.notifications, m.children_reads)
            }
            Lock::Broken(l) => l.counters(),
        }
    }
}

impl Held {
    /// The lock node's path, when the recipe tells it.
    pub(crate) fn path(&self) -> Option<String> {
        match self {
            Held::Guard(g) => Some(g.path().to_string()),
            Held::Broken(g) => g.path.clone(),
        }
    }

    /// The guard's state (held, suspended, lost), if the recipe has one.
    pub(crate) fn monitor(&self) -> Option<GuardMonitor> {
        match self {
            Held::Guard(g) => Some(g.monitor()),
            Held::Broken(_) => None,
        }
    }
}
