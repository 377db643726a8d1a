//! The public lock types: [`Lock`] (a mutex), [`RwLock`] (its read and
//! write sides are [`Lock`]s too), and the [`LockBuilder`] that makes both.

use parking_lot::Mutex;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use zookeeper_client as zk;

use crate::error::{LockError, Result};
use crate::guard::{GuardState, Hold, LockGuard};
use crate::metrics::{Counters, LockMetrics};
use crate::naive::Naive;
use crate::node::{Layout, Owned, Wait};
use crate::sequential::{Family, Form, Role, Sequential};

/// How contenders wait for the lock, and so how many of them one release
/// wakes. See the [crate docs](crate#cost) for the costs measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Strategy {
    /// Ephemeral-sequential nodes; a waiter watches (getData) only the node
    /// that keeps it waiting, so a release wakes one waiter (or, in a
    /// read/write lock, the readers queued behind the releasing writer).
    /// Curator's `InterProcessMutex`, kazoo's `Lock`, ZooKeeper's recipe.
    #[default]
    Predecessor,
    /// Ephemeral-sequential nodes; every waiter watches the directory's
    /// children, so every release wakes every waiter: the herd effect.
    Herd,
    /// One ephemeral node, `<dir>/lock`; every waiter watches it (exists)
    /// and tries to create it again when it goes. No queue, no fairness,
    /// and no read/write form.
    Naive,
}

/// Options for a [`Lock`] or an [`RwLock`] on one directory; from
/// [`Lock::builder`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use zk_lock::{Layout, Lock, Strategy};
/// # let zk = zk_mock::ZkMock::start().await;
/// # let client = zookeeper_client::Client::connect(&zk.connect_string()).await?;
/// // Shares /locks/jobs with Python processes using kazoo's Lock.
/// let lock = Lock::builder(client.clone(), "/locks/jobs")
///     .layout(Layout::Kazoo)
///     .build()?;
/// // Every waiter wakes at every release: for measuring the herd effect.
/// let herd = Lock::builder(client, "/locks/herd")
///     .strategy(Strategy::Herd)
///     .read_write()?;
/// # drop((lock, herd));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until build() or read_write()"]
pub struct LockBuilder {
    client: zk::Client,
    dir: String,
    strategy: Strategy,
    layout: Option<Layout>,
    reentrant: bool,
}

impl LockBuilder {
    /// How contenders wait ([`Strategy::Predecessor`] unless set).
    pub fn strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Whose node names to use ([`Layout::Curator`] unless set). The naive
    /// strategy has one fixed node and takes no layout.
    pub fn layout(mut self, layout: Layout) -> Self {
        self.layout = Some(layout);
        self
    }

    /// Whether the handle re-enters a lock it holds (`false` unless set).
    ///
    /// A reentrant handle is the owner, as a thread is for Curator's
    /// `InterProcessMutex`: `acquire` through a handle (or one of its
    /// clones) that holds the lock returns at once with another guard of the
    /// same node, and the node is deleted when the last of those guards is
    /// released. Acquisitions through one handle that start while it does
    /// not hold the lock yet wait for the first of them, then re-enter
    /// (`try_acquire` answers `None` meanwhile: the lock is not held yet). A
    /// handle that is not reentrant queues behind itself: `try_acquire`
    /// answers `None`, and `acquire` waits for its own release.
    ///
    /// In a read/write lock each side re-enters only itself: a reader that
    /// asks for the write lock waits for its own read lock to go.
    pub fn reentrant(mut self, reentrant: bool) -> Self {
        self.reentrant = reentrant;
        self
    }

    /// The mutex.
    ///
    /// # Notable errors
    /// * [`LockError::InvalidDir`] if the directory is not an absolute path.
    /// * [`LockError::Unsupported`] for a layout with the naive strategy.
    pub fn build(self) -> Result<Lock> {
        let dir = validate_dir(&self.dir)?;
        let counters = Counters::new();
        let engine = match (self.strategy, self.layout) {
            (Strategy::Naive, Some(_)) => {
                return Err(LockError::Unsupported(
                    "the naive strategy has one node, <dir>/lock, and no layout",
                ))
            }
            (Strategy::Naive, None) => Engine::Naive(Arc::new(Naive::new(
                self.client,
                dir.clone(),
                counters.clone(),
            ))),
            (strategy, layout) => Engine::Sequential {
                lock: Arc::new(Sequential::new(
                    self.client,
                    dir.clone(),
                    form(strategy),
                    Family::Exclusive,
                    layout.unwrap_or_default(),
                    counters.clone(),
                )),
                role: Role::Exclusive,
            },
        };
        Ok(Lock::new(engine, dir, counters, self.reentrant))
    }

    /// The read/write lock.
    ///
    /// # Notable errors
    /// * [`LockError::InvalidDir`] if the directory is not an absolute path.
    /// * [`LockError::Unsupported`] for the naive strategy, which has no
    ///   read/write form.
    pub fn read_write(self) -> Result<RwLock> {
        let dir = validate_dir(&self.dir)?;
        if self.strategy == Strategy::Naive {
            return Err(LockError::Unsupported(
                "the naive strategy has no read/write form",
            ));
        }
        let counters = Counters::new();
        let lock = Arc::new(Sequential::new(
            self.client,
            dir.clone(),
            form(self.strategy),
            Family::ReadWrite,
            self.layout.unwrap_or_default(),
            counters.clone(),
        ));
        let side = |role| {
            let engine = Engine::Sequential {
                lock: lock.clone(),
                role,
            };
            Lock::new(engine, dir.clone(), counters.clone(), self.reentrant)
        };
        Ok(RwLock {
            read: side(Role::Read),
            write: side(Role::Write),
        })
    }
}

fn form(strategy: Strategy) -> Form {
    match strategy {
        Strategy::Herd => Form::Herd,
        _ => Form::Predecessor,
    }
}

fn validate_dir(dir: &str) -> Result<String> {
    if !dir.starts_with('/') || dir.len() < 2 || dir.ends_with('/') || dir.contains("//") {
        return Err(LockError::InvalidDir(dir.to_string()));
    }
    Ok(dir.to_string())
}

#[derive(Debug)]
enum Engine {
    Naive(Arc<Naive>),
    Sequential { lock: Arc<Sequential>, role: Role },
}

impl Engine {
    fn client(&self) -> &zk::Client {
        match self {
            Engine::Naive(naive) => naive.client(),
            Engine::Sequential { lock, .. } => lock.client(),
        }
    }

    async fn acquire(&self, wait: Wait) -> Result<Option<Owned>> {
        match self {
            Engine::Naive(naive) => naive.acquire(wait).await,
            Engine::Sequential { lock, role } => lock.acquire(*role, wait).await,
        }
    }
}

/// A ZooKeeper lock on a directory: a mutex shared by every process that
/// uses the same directory (and [`Layout`]).
///
/// Made by [`Lock::builder`]. Cloning gives another handle on the same lock
/// *and the same owner*: for a reentrant lock, the clones re-enter one
/// another's hold. For independent contenders in one process, build a lock
/// per contender.
///
/// # Notable behaviors
/// * The lock directory (and its ancestors) is created, as persistent
///   nodes with an open ACL, on first use.
/// * Not reentrant unless built with
///   [`reentrant(true)`](LockBuilder::reentrant): acquiring again through
///   a handle that holds the lock queues behind itself.
#[derive(Debug, Clone)]
pub struct Lock {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    engine: Engine,
    dir: String,
    counters: Arc<Counters>,
    /// `Some` for a reentrant lock: the handle's current hold.
    reentry: Option<Mutex<Slot>>,
}

/// A reentrant handle's hold, behind a mutex never held across an await.
#[derive(Debug, Default)]
enum Slot {
    #[default]
    Free,
    /// An acquisition through this handle is under way; the sender is
    /// dropped when it ends, one way or another.
    Acquiring(watch::Receiver<()>),
    /// Held: a weak reference, so that dropping the last guard frees it.
    Held(Weak<Hold>),
}

impl Lock {
    /// The options of a lock on `dir`, an absolute path (the lock's nodes
    /// are its children): the predecessor strategy, Curator's node
    /// names and no reentrancy unless set otherwise.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let zk = zk_mock::ZkMock::start().await;
    /// # let client = zookeeper_client::Client::connect(&zk.connect_string()).await?;
    /// let lock = zk_lock::Lock::builder(client, "/locks/report").build()?;
    /// let guard = lock.acquire().await?;
    /// guard.release().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn builder(client: zk::Client, dir: impl Into<String>) -> LockBuilder {
        LockBuilder {
            client,
            dir: dir.into(),
            strategy: Strategy::default(),
            layout: None,
            reentrant: false,
        }
    }

    fn new(engine: Engine, dir: String, counters: Arc<Counters>, reentrant: bool) -> Lock {
        Lock {
            inner: Arc::new(Inner {
                engine,
                dir,
                counters,
                reentry: reentrant.then(Mutex::default),
            }),
        }
    }

    /// The lock directory.
    pub fn dir(&self) -> &str {
        &self.inner.dir
    }

    /// This lock's counters; a read/write lock's two sides share theirs.
    pub fn metrics(&self) -> LockMetrics {
        self.inner.counters.snapshot()
    }

    /// How many guards of this handle's current hold are alive: 0 when the
    /// handle does not hold the lock. Only a reentrant lock counts its
    /// holds (a lock that is not reentrant answers 0).
    pub fn hold_count(&self) -> usize {
        match self.slot().map(|slot| slot.lock()) {
            Some(slot) => match &*slot {
                Slot::Held(hold) => hold.strong_count(),
                _ => 0,
            },
            None => 0,
        }
    }

    /// Waits until the lock is held.
    ///
    /// # Notable errors
    /// * [`LockError::SessionExpired`] if the session expired while waiting.
    /// * [`LockError::NodeVanished`] if the contender's node was deleted by
    ///   someone else.
    /// * [`LockError::Lost`] on re-entry into a lost hold (reentrant lock).
    ///
    /// # Cancellation safety
    /// Cancellation safe: a dropped future deletes its node (found by its
    /// protected prefix, or by its data for the naive lock, if the create
    /// was in flight) from a spawned task.
    pub async fn acquire(&self) -> Result<LockGuard> {
        match self.enter(Wait::Forever).await? {
            Some(guard) => Ok(guard),
            None => Err(LockError::Timeout),
        }
    }

    /// Takes the lock if it is free now (or re-enters it); otherwise deletes
    /// the node it created and returns `None`.
    pub async fn try_acquire(&self) -> Result<Option<LockGuard>> {
        self.enter(Wait::Never).await
    }

    /// [`acquire`](Self::acquire) with a deadline.
    ///
    /// # Notable errors
    /// * [`LockError::Timeout`] after `timeout`; the node is deleted before
    ///   it returns.
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        match self.enter(Wait::Until(Instant::now() + timeout)).await? {
            Some(guard) => Ok(guard),
            None => Err(LockError::Timeout),
        }
    }

    fn slot(&self) -> Option<&Mutex<Slot>> {
        self.inner.reentry.as_ref()
    }

    async fn enter(&self, wait: Wait) -> Result<Option<LockGuard>> {
        let Some(slot) = self.slot() else {
            return self.contend(wait).await;
        };
        // Re-enter, wait for this handle's acquisition under way, or start one.
        let acquiring = loop {
            let mut under_way = {
                let mut slot = slot.lock();
                match &*slot {
                    Slot::Held(hold) => match hold.upgrade() {
                        Some(hold) if hold.state() == GuardState::Lost => {
                            return Err(LockError::Lost)
                        }
                        Some(hold) => return Ok(Some(LockGuard::new(hold))),
                        None => {
                            let (done, under_way) = watch::channel(());
                            *slot = Slot::Acquiring(under_way);
                            break done;
                        }
                    },
                    // Busy through this handle, and not held: as busy as can be.
                    Slot::Acquiring(_) if wait == Wait::Never => return Ok(None),
                    Slot::Acquiring(under_way) => under_way.clone(),
                    Slot::Free => {
                        let (done, under_way) = watch::channel(());
                        *slot = Slot::Acquiring(under_way);
                        break done;
                    }
                }
            };
            // The sender is dropped when that acquisition ends.
            let ended = under_way.changed();
            match wait {
                Wait::Until(at) => {
                    if tokio::time::timeout_at(at, ended).await.is_err() {
                        return Err(LockError::Timeout);
                    }
                }
                _ => {
                    let _ = ended.await;
                }
            }
        };
        // This task acquires for the handle; whatever happens (an error, a
        // cancellation), the slot is settled and the waiters woken.
        let mut settle = Settle {
            slot,
            held: None,
            _done: acquiring,
        };
        let guard = self.contend(wait).await?;
        settle.held = guard.as_ref().map(|g| Arc::downgrade(g.hold()));
        Ok(guard)
    }

    /// One acquisition: a node of this handle's own.
    async fn contend(&self, wait: Wait) -> Result<Option<LockGuard>> {
        let start = std::time::Instant::now();
        let result = self.inner.engine.acquire(wait).await;
        let counters = &self.inner.counters;
        counters.waited(start.elapsed());
        let Some(node) = result? else {
            return Ok(None);
        };
        counters.acquired();
        let hold = Hold::new(self.inner.engine.client().clone(), node);
        Ok(Some(LockGuard::new(Arc::new(hold))))
    }
}

/// Settles a reentrant handle's slot when its acquisition ends.
struct Settle<'a> {
    slot: &'a Mutex<Slot>,
    held: Option<Weak<Hold>>,
    /// Dropped after the slot is settled: wakes the waiters.
    _done: watch::Sender<()>,
}

impl Drop for Settle<'_> {
    fn drop(&mut self) {
        let mut slot = self.slot.lock();
        *slot = match self.held.take() {
            Some(hold) => Slot::Held(hold),
            None => Slot::Free,
        };
    }
}

/// A ZooKeeper read/write lock on a directory: readers share it, a writer
/// holds it alone. Made by [`LockBuilder::read_write`].
///
/// Its two sides are [`Lock`]s ([`reader`](Self::reader),
/// [`writer`](Self::writer)), as Curator's `InterProcessReadWriteLock`
/// hands out `readLock()` and `writeLock()`; [`read`](Self::read) and
/// [`write`](Self::write) acquire them.
///
/// # Notable behaviors
/// * A reader holds when no write node precedes its own; a writer when its
///   node is first. In the predecessor strategy a reader watches the last
///   write node before its own and a writer the node just before its own,
///   so the readers queued behind one writer wake together when it goes.
/// * Node names: [`Layout::Curator`] (the default) gives
///   `_c_<uuid>-read-<seq>` / `_c_<uuid>-write-<seq>`. This is **not**
///   wire-compatible with Apache Curator's `InterProcessReadWriteLock`,
///   which names its nodes `_c_<uuid>-__READ__<seq>` /
///   `_c_<uuid>-__WRIT__<seq>`: this lock ignores those nodes, so a Rust
///   and a Java process on one directory do not exclude each other. Share
///   a read/write lock with kazoo's `ReadLock`/`WriteLock` (and `Lock`,
///   which counts as a writer) through [`Layout::Kazoo`] instead.
/// * A read lock is not upgraded: a holder of the read lock that asks for
///   the write lock waits for itself forever (use a timeout).
#[derive(Debug, Clone)]
pub struct RwLock {
    read: Lock,
    write: Lock,
}

impl RwLock {
    /// The read side: [`Lock::acquire`] on it waits until no writer is ahead.
    pub fn reader(&self) -> &Lock {
        &self.read
    }

    /// The write side: [`Lock::acquire`] on it waits until its node is first.
    pub fn writer(&self) -> &Lock {
        &self.write
    }

    /// Acquires the read side (see [`Lock::acquire`]).
    pub async fn read(&self) -> Result<LockGuard> {
        self.read.acquire().await
    }

    /// Acquires the write side (see [`Lock::acquire`]).
    pub async fn write(&self) -> Result<LockGuard> {
        self.write.acquire().await
    }

    /// The lock directory.
    pub fn dir(&self) -> &str {
        self.read.dir()
    }

    /// The counters of both sides together.
    pub fn metrics(&self) -> LockMetrics {
        self.read.metrics()
    }
}
