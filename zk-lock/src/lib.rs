//! # zk-lock
//!
//! The ZooKeeper lock recipes the literature teaches (exclusive locks in
//! naive, herd and predecessor form, a reentrant lock, and a read/write
//! lock in herd and predecessor form) on the [`zookeeper_client`] crate,
//! each correct under connection loss and session expiry, side by side so
//! their costs can be compared.
//!
//! | recipe | nodes | a waiter watches | one release wakes |
//! |---|---|---|---|
//! | [`PredecessorLock`] | `<dir>/_c_<uuid>-lock-<seq>`, ephemeral-sequential | its predecessor (getData) | 1 waiter |
//! | [`HerdLock`] | `<dir>/_c_<uuid>-lock-<seq>`, ephemeral-sequential | `<dir>`'s children | every waiter |
//! | [`NaiveLock`] | `<dir>/lock`, ephemeral | `<dir>/lock` (exists) | every waiter |
//! | [`ReentrantLock`] | as [`PredecessorLock`], one node per owner | as [`PredecessorLock`] | 1 waiter |
//! | [`ReadWriteLock::new`] | `<dir>/_c_<uuid>-read-<seq>` / `…-write-<seq>` | a reader: the last writer before it; a writer: its predecessor | the next writer, or the readers behind the writer |
//! | [`ReadWriteLock::new_herd`] | as above | `<dir>`'s children | every waiter |
//!
//! Every exclusive recipe offers `acquire()`, `try_acquire()` and
//! `acquire_timeout(d)` (the read/write lock: `read`/`try_read`/`read_timeout`
//! and `write`/`try_write`/`write_timeout`), and each hands out a
//! [`LockGuard`] with an explicit async [`release`](LockGuard::release), a
//! [`state`](LockGuard::state) ([`GuardState`]: held, suspended while the
//! client is disconnected, lost), a [`lost`](LockGuard::lost) signal and a
//! [`fencing_token`](LockGuard::fencing_token) (the lock node's czxid).
//! [`LockMetrics`] counts, per recipe instance, the watch notifications
//! received, the children re-reads and the time spent waiting.
//!
//! The guard-based locks are not reentrant: acquiring again through the
//! same handle queues behind oneself ([`PredecessorLock::try_acquire`]
//! answers `None`). [`ReentrantLock`] counts re-entries per handle, as
//! Curator's `InterProcessMutex` does, and deletes its node at the last release.
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
//!   deleting another contender's node).
//! * **Disconnection** (Curator's SUSPENDED, CURATOR-465): while the
//!   client is disconnected the holder cannot know whether its session, and
//!   the lock, still live. The guard's [`state`](LockGuard::state) is then
//!   [`GuardState::Suspended`]; it returns to `Held` once the client has
//!   reconnected to the same session and read the node back, or becomes
//!   `Lost`. A holder that must never overlap with the next one stops
//!   using the resource while suspended (and passes the fencing token).
//! * **Session expiry**: the guard's lost signal fires (the getData watch
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
//! * **Timeout and cancellation**: `acquire_timeout` deletes its node
//!   before returning [`LockError::Timeout`]; a dropped `acquire` future
//!   deletes it from a spawned task.
//! * Only the sequence suffix of `…lock-<seq>` (or `…read-`/`…write-`,
//!   `…__lock__`, `…__rlock__`) orders contenders; other children of the
//!   directory are ignored (ZOOKEEPER-2931, kazoo#309).
//! * **Sequence wrap**: the suffix is Java's `%010d` of the directory's
//!   i32 child counter, so after `2147483647` come `-2147483648`,
//!   `-2147483647`, … (`-000000005` near the end). The suffix is parsed as
//!   an i32 and ordered by its u32 reinterpretation, which keeps creation
//!   order across the wrap (kazoo#606 and #730, go-zookeeper PR #65). The
//!   other implementations sort the suffix as text (kazoo 2.11, Curator),
//!   and `zookeeper_client`'s `Client::lock` ignores eleven-character
//!   suffixes, so a lock shared with them is ordered consistently only
//!   until the counter wraps.
//!
//! ## Sharing a lock with other clients
//! [`Layout::Curator`] (the default) names nodes as Apache Curator's
//! `InterProcessMutex` and `zookeeper_client`'s own lock do; [`Layout::Kazoo`]
//! (`PredecessorLock::with_layout`, `HerdLock::with_layout`,
//! `ReadWriteLock::with_layout`, `ReadWriteLock::herd_with_layout`) names
//! them `<uuid hex>__lock__<seq>` (exclusive and writers) and
//! `<uuid hex>__rlock__<seq>` (readers) as kazoo's `Lock`, `WriteLock` and
//! `ReadLock` do, so a Rust and a Python process can contend for one lock.
//! Both are tested against the other implementation (kazoo with
//! `--features kazoo`). The read/write lock's default names (`read-`,
//! `write-`) are this crate's own: Curator's `InterProcessReadWriteLock`
//! uses `__READ__`/`__WRIT__` and does not share a lock with it.
//!
//! ## Differences from `zookeeper_client::Client::lock`
//! The crate's own [`Client::lock`](zookeeper_client::Client::lock) with
//! [`LockPrefix::new_curator(dir, "lock-")`](zookeeper_client::LockPrefix::new_curator)
//! is the predecessor form with the same node names, so the two can share a
//! directory. zk-lock builds on the same ideas and differs in:
//! * the guard: `LockClient` only scopes writes to the lock path; it has
//!   no lost signal and no release that retries through ConnectionLoss
//!   (dropping it deletes the node once, best effort);
//! * the prefix lookup after a lost reply also checks the ephemeral owner
//!   for Curator-style prefixes (the crate checks it only for shared prefixes);
//! * the sequence suffix is ordered across the counter's wrap past
//!   `i32::MAX` (the crate's lock ignores `-2147483648`-style suffixes);
//! * the herd and naive forms, the read/write lock, `try_acquire`, a
//!   timeout that cleans up, and metrics, so the recipes can be compared.
//!
//! ## Example
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use zk_lock::{GuardState, PredecessorLock};
//!
//! let zk = zk_mock::ZkMock::start().await;
//! let client = zookeeper_client::Client::connect(&zk.connect_string()).await?;
//! let lock = PredecessorLock::new(client.clone(), "/locks/report")?;
//!
//! let guard = lock.acquire().await?;
//! let token = guard.fencing_token(); // hand it to the guarded resource
//! assert!(token > 0);
//! assert!(lock.try_acquire().await?.is_none(), "not reentrant: held already");
//! assert!(!guard.is_lost());
//! assert_eq!(*guard.state().borrow(), GuardState::Held);
//! guard.release().await?;
//!
//! let again = lock.acquire_timeout(Duration::from_secs(5)).await?;
//! assert!(again.fencing_token() > token);
//! again.release().await?;
//! # Ok(())
//! # }
//! ```

mod error;
mod guard;
mod herd;
mod metrics;
mod naive;
mod node;
mod predecessor;
mod reentrant;
mod rwlock;
mod sequential;

pub use error::{LockError, Result};
pub use guard::{GuardState, LockGuard};
pub use herd::HerdLock;
pub use metrics::LockMetrics;
pub use naive::NaiveLock;
pub use predecessor::PredecessorLock;
pub use reentrant::ReentrantLock;
pub use rwlock::ReadWriteLock;
pub use sequential::Layout;
