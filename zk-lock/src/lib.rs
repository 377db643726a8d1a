//! # zk-lock
//!
//! The ZooKeeper lock recipes the literature teaches, on the
//! [`zookeeper_client`] crate, each correct under connection loss, shed
//! requests and session expiry, behind one API: a [`Lock`] (a mutex) and an
//! [`RwLock`], both made by one builder, both handing out one [`LockGuard`].
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use zk_lock::{GuardState, Lock, LockError};
//!
//! let zk = zk_mock::ZkMock::start().await;
//! let client = zookeeper_client::Client::connect(&zk.connect_string()).await?;
//! let lock = Lock::builder(client.clone(), "/locks/report").build()?;
//!
//! let guard = lock.acquire().await?;
//! let token = guard.fencing_token(); // hand it to the guarded resource
//! assert_eq!(guard.state(), GuardState::Held);
//! assert!(lock.try_acquire().await?.is_none(), "not reentrant: held already");
//! guard.release().await?;
//!
//! // Another contender, with a deadline.
//! let other = Lock::builder(client.clone(), "/locks/report").build()?;
//! let again = other.acquire_timeout(Duration::from_secs(5)).await?;
//! assert!(again.fencing_token() > token);
//!
//! // The holder learns of a loss: here its session is expired on the server.
//! zk.expire_session(client.session_id().0);
//! again.lost().await;
//! assert_eq!(again.state(), GuardState::Lost);
//! assert_eq!(again.release().await, Err(LockError::Lost));
//! # Ok(())
//! # }
//! ```
//!
//! ## Options
//! [`Lock::builder`] takes the client and the lock directory; the lock's
//! nodes are the directory's children. Its options:
//!
//! | option | values | default |
//! |---|---|---|
//! | [`strategy`](LockBuilder::strategy) | [`Strategy::Predecessor`], [`Strategy::Herd`], [`Strategy::Naive`] | predecessor |
//! | [`layout`](LockBuilder::layout) | [`Layout::Curator`], [`Layout::Kazoo`] (node names shared with those clients) | Curator |
//! | [`reentrant`](LockBuilder::reentrant) | `true`: the handle re-enters a lock it holds | `false` |
//!
//! [`build`](LockBuilder::build) makes the mutex,
//! [`read_write`](LockBuilder::read_write) the read/write lock, whose
//! [`reader`](RwLock::reader) and [`writer`](RwLock::writer) sides are
//! [`Lock`]s too. Every acquisition is `acquire()`, `try_acquire()` or
//! `acquire_timeout(d)` on a [`Lock`] ([`RwLock::read`] and
//! [`RwLock::write`] are short for the first), and every one hands out a
//! [`LockGuard`]:
//! * [`release`](LockGuard::release), async, retried until the node is
//!   provably gone, and the place where a loss the holder had not heard of
//!   is reported ([`LockError::Lost`]);
//! * [`state`](LockGuard::state), a snapshot ([`GuardState`]: held,
//!   suspended while the client is disconnected, lost);
//! * [`lost`](LockGuard::lost), a future that completes when the lock is
//!   lost, to `select!` against the work done under the lock;
//! * [`monitor`](LockGuard::monitor), for another task that follows the
//!   states;
//! * [`fencing_token`](LockGuard::fencing_token), the lock node's czxid.
//!
//! [`LockMetrics`] counts, per lock, the watch notifications received, the
//! children re-reads and the time spent waiting.
//!
//! | strategy | nodes | a waiter watches | one release wakes |
//! |---|---|---|---|
//! | predecessor | `<dir>/_c_<uuid>-lock-<seq>`, ephemeral-sequential | its predecessor (getData) | 1 waiter |
//! | herd | `<dir>/_c_<uuid>-lock-<seq>`, ephemeral-sequential | `<dir>`'s children | every waiter |
//! | naive | `<dir>/lock`, ephemeral | `<dir>/lock` (exists) | every waiter |
//! | predecessor, read/write | `<dir>/_c_<uuid>-read-<seq>` / `…-write-<seq>` | a reader: the last writer before it; a writer: its predecessor | the next writer, or the readers behind the writer |
//! | herd, read/write | as above | `<dir>`'s children | every waiter |
//!
//! ## Compared with the locks of other clients
//! | | zk-lock [`Lock`] | Curator `InterProcessMutex` | kazoo `Lock` | `zookeeper_client` [`Client::lock`](zookeeper_client::Client::lock) |
//! |---|---|---|---|---|
//! | entry point | `Lock::builder(client, dir)…build()` | `new InterProcessMutex(client, path)` | `client.Lock(path, identifier)` | `client.lock(LockPrefix, data, options)` |
//! | held as | a [`LockGuard`] value | the thread's hold count | the `Lock` object's `is_acquired` | a `LockClient` value |
//! | reentrant | per handle, opt-in; each entry a guard | per thread, always | no | no |
//! | release | `guard.release().await`, retried until the node is provably gone; drop releases in the background | `release()`, a guaranteed delete (retried in the background if it fails) | `release()`, one delete through `KazooRetry` | drop: one background delete |
//! | loss reported | [`state`](LockGuard::state), [`lost`](LockGuard::lost), and [`LockError::Lost`] from `release` | a `ConnectionStateListener` on the client | a `KazooState` listener on the client | not reported; its writes carry a check of the lock node and fail after a loss |
//! | suspended (disconnected) | [`GuardState::Suspended`] on the guard | `SUSPENDED` on the client's listener | `SUSPENDED` on the client's listener | not reported |
//! | strategies | predecessor, herd, naive | predecessor | predecessor | predecessor |
//! | read/write | [`RwLock`] (kazoo's names with [`Layout::Kazoo`]) | `InterProcessReadWriteLock` | `ReadLock`/`WriteLock` | no |
//! | shed request (THROTTLEDOP) | sent again after a backoff | thrown to the caller | raised to the caller | returned to the caller |
//! | sequence past `i32::MAX` | ordered across the wrap | sorted as text | sorted as text | eleven-character suffixes ignored |
//!
//! Why zk-lock differs:
//! * **One guard, owned.** Curator and kazoo keep the hold inside the lock
//!   object and report loss through a listener on the whole client, which
//!   callers must connect to the lock themselves (CURATOR-465,
//!   apache/curator#727). A guard value ties the loss to the hold it concerns, and a
//!   fencing token to hand to the resource. `zookeeper_client`'s
//!   `LockClient` is a value too, but it says nothing of a loss, and its
//!   background delete on drop is not retried.
//! * **Reentrancy per handle, not per thread.** Async tasks move between
//!   threads, so Curator's per-thread count has no meaning here; the owner
//!   is the handle (and its clones), and each entry is a guard, so the
//!   node goes with the last of them, as an `Arc` does. No mutex is held
//!   across an await: [`Lock::hold_count`] answers at once even while an
//!   acquisition queues.
//! * **Three strategies behind one type**, so that the herd effect can be
//!   measured against the recipe that avoids it with the same code.
//! * **Errors mapped one way.** Every path turns the client's
//!   SessionExpired into [`LockError::SessionExpired`] and a connection
//!   failure into [`LockError::ConnectionLoss`] (`From<zookeeper_client::Error>`).
//!
//! ## Cost
//! * Predecessor form: per release, one notification and one children read
//!   by the next waiter. It is the form that scales.
//! * Herd form: per release, N−1 notifications (N contenders); each woken
//!   waiter lists the children once more, setting its watch in the same
//!   call (N−1 reads of up to N names). For N contenders each acquiring
//!   once: N(N−1)/2 notifications and about N³/3 child names re-read
//!   ([`LockMetrics::children_listed`]).
//! * Naive: per release, N−1 notifications and N−1 create attempts, of
//!   which N−2 fail with NodeExists.
//! * Read/write lock, predecessor form: a writer's release wakes the next
//!   writer, or all the readers queued between it and the next writer (they
//!   then hold together, by design); a reader's release wakes the writer
//!   right behind it, if any. Herd form: every waiter, as above.
//! * Every holder keeps one getData watch on its own node (the lost
//!   signal), and reads the node once more after each reconnection.
//!
//! ## Failure handling
//! * **ConnectionLoss** on any call is retried after the client reconnects.
//!   So is the error zookeeper-client 0.11 gives every request in flight
//!   when it drops a connection itself (`Error::Custom`, "no response from
//!   connection in …ms" after replies stop for 2/5 of the session timeout,
//!   or an I/O error): like ConnectionLoss, the request may or may not have
//!   been applied.
//! * **THROTTLEDOP** (a shed request: ZooKeeper 3.7+ with
//!   `throttledOpWaitTime` answers it to a request that queued too long,
//!   ZOOKEEPER-3683, and keeps the connection) is definite, the request was
//!   not executed, so the same request is sent again after a pause (10 ms,
//!   doubling up to 1 s). A shed read of the holder's node is not a loss, and
//!   a shed delete at release is sent again until the node is gone. Curator
//!   5.4 and kazoo 2.11 hand it to the caller instead: a contender is out of
//!   the queue, and a holder whose release delete was shed leaves its node
//!   at the head of the queue for as long as its session lives
//!   (`scenarios/throttled-requests.yaml`).
//! * **Lost create reply**: sequential nodes carry a per-acquisition
//!   protected prefix (`_c_<uuid>-`, as Curator does); after ConnectionLoss
//!   the recipe lists the directory, and a child with its prefix *whose
//!   ephemeral owner is the current session* (Curator PR #303) is its node,
//!   so no orphan node and no second node. The naive lock stores a
//!   per-acquisition id as the node's data and, on NodeExists after a
//!   ConnectionLoss, reads the node back (id and owner both must match).
//! * **A node with our prefix that is not ours** (CURATOR-604,
//!   apache/curator#1121): Curator once found, after an expiry and a new
//!   session, the old session's node (its deletion still pending) by the
//!   protected prefix and took the lock on it. Here the lookup accepts a
//!   child only if its ephemeral owner is the current session; besides,
//!   every acquisition has a fresh prefix and runs on one
//!   [`zookeeper_client::Client`], which never changes session (after
//!   expiry every call fails with SessionExpired), so no acquisition can
//!   meet an earlier session's node with its prefix. A test plants a node
//!   with a contender's prefix from another session after a cut create;
//!   the contender creates its own node and queues behind it. (The exact
//!   Curator sequence, an expired session's ephemerals lingering after a
//!   new session starts, cannot be staged on zk-mock, which deletes them in
//!   the expiry transaction.)
//! * **Lost delete reply**: release retries until the node is provably
//!   gone: NoNode, or a node at that path with another czxid (never
//!   deleting another contender's node). The naive lock's node has one
//!   fixed path, which a later holder reuses once someone else has deleted
//!   ours: its release reads the node first and deletes it only if the
//!   czxid is its own. (A delete and a new create between that read and the
//!   delete can still slip through: one more reason the sequential
//!   strategies, whose paths are never reused, are the ones to use.)
//! * **Disconnection** (Curator's SUSPENDED, CURATOR-465): while the
//!   client is disconnected the holder cannot know whether its session, and
//!   the lock, still live. The guard's [`state`](LockGuard::state) is then
//!   [`GuardState::Suspended`]; it returns to `Held` once the client has
//!   reconnected to the same session and read the node back, or becomes
//!   `Lost`. A holder that must never overlap with the next one stops
//!   using the resource while suspended (and passes the fencing token).
//! * **Session expiry**: the guard's [`lost`](LockGuard::lost) future completes (the getData watch
//!   on its own node reports NodeDeleted or the Expired session state);
//!   waiters behind it are woken by the deletion of its ephemeral node.
//!   A session can expire on the server an instant before the holder's last
//!   act, too late for the signal: `release` then returns
//!   [`LockError::Lost`] (the node is gone all the same), so the holder
//!   hears of the loss on every path. `zookeeper-client`'s `Client::lock`
//!   releases on drop, in the background, and reports nothing (its guarded
//!   writes carry a check of the lock node instead, so a write after the
//!   loss fails); Curator and kazoo raise their session-expired errors from
//!   `release` in the same case. Found by the harness's chaos scenarios
//!   (`harness/chaos/`).
//! * **Timeout and cancellation**: [`Lock::acquire_timeout`] deletes its node
//!   before returning [`LockError::Timeout`]; a dropped `acquire` future
//!   deletes it from a spawned task.
//! * Only the sequence suffix of `…lock-<seq>` (or `…read-`/`…write-`,
//!   `…__lock__`, `…__rlock__`) orders contenders; other children of the
//!   directory are ignored (ZOOKEEPER-2931, kazoo#309).
//! * **Sequence wrap**: the suffix is Java's `%010d` of the directory's
//!   i32 child counter, so after `2147483647` come `-2147483648`,
//!   `-2147483647`, … (`-000000005` near the end), and after `-1` comes
//!   `0000000000` again. The suffix is parsed as an i32 and contenders are
//!   ordered by serial-number arithmetic (RFC 1982: `a` is ahead of `b` when
//!   `b - a`, wrapping, is positive), which keeps creation order across both
//!   wraps while the live nodes were created under 2^31 numbers apart
//!   (kazoo#606 and #730, go-zookeeper PR #65). The
//!   other implementations compare the suffix as text (Curator; kazoo 2.11,
//!   whose pattern also misses ten-character negative suffixes such as
//!   `-000000001`),
//!   and `zookeeper_client`'s `Client::lock` ignores eleven-character
//!   suffixes, so a lock shared with them is ordered consistently only
//!   until the counter wraps.
//!
//! ## Sharing a lock with other clients
//! [`Layout::Curator`] (the default) names nodes as Apache Curator's
//! `InterProcessMutex` and `zookeeper_client`'s own lock do
//! (`LockPrefix::new_curator(dir, "lock-")`, the predecessor recipe with the
//! same names, so the two can share a directory); [`Layout::Kazoo`] names
//! them `<uuid hex>__lock__<seq>` (exclusive and writers) and
//! `<uuid hex>__rlock__<seq>` (readers) as kazoo's `Lock`, `WriteLock` and
//! `ReadLock` do, so a Rust and a Python process can contend for one lock.
//! Both are tested against the other implementation (kazoo with
//! `--features kazoo`). The read/write lock's default names (`read-`,
//! `write-`) are this crate's own: Curator's `InterProcessReadWriteLock`
//! uses `__READ__`/`__WRIT__` and does not share a lock with it.
//!

#![warn(missing_docs)]

mod error;
mod guard;
mod lock;
mod metrics;
mod naive;
mod node;
mod sequential;

pub use error::{LockError, Result};
pub use guard::{GuardMonitor, GuardState, LockGuard};
pub use lock::{Lock, LockBuilder, RwLock, Strategy};
pub use metrics::LockMetrics;
pub use node::Layout;
