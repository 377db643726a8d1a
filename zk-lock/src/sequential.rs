//! The engine shared by the two sequential exclusive locks: protected
//! ephemeral-sequential nodes, ordering by sequence suffix, and the two
//! ways of waiting (predecessor and herd).

use std::sync::Arc;

use tokio::time::Instant;
use zookeeper_client as zk;

use crate::error::{LockError, Result};
use crate::guard::LockGuard;
use crate::metrics::{Counters, LockMetrics};
use crate::node::{connection_lost, find_protected, retry, shed, Backoff, Owned, Pending, Target};

/// What a contender asks for; its name goes into its node's name:
/// `_c_<uuid>-lock-0000000042` (Curator's `InterProcessMutex` and
/// `LockPrefix::new_curator(dir, "lock-")` names), `…-read-…`, `…-write-…`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// The exclusive lock.
    Exclusive,
    /// A reader of the read/write lock.
    Read,
    /// A writer of the read/write lock.
    Write,
}

/// Which ecosystem's node names a sequential lock uses, so that processes
/// using other clients can share one lock directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Layout {
    /// `_c_<uuid>-lock-<seq>`: Apache Curator's `InterProcessMutex` and
    /// `zookeeper_client`'s `LockPrefix::new_curator(dir, "lock-")`.
    #[default]
    Curator,
    /// `<uuid hex>__lock__<seq>`: kazoo's `Lock` (and `WriteLock`).
    Kazoo,
}

impl Role {
    fn name(self, layout: Layout) -> &'static str {
        match (self, layout) {
            (Role::Exclusive, Layout::Curator) => "lock-",
            (Role::Read, Layout::Curator) => "read-",
            (Role::Write, Layout::Curator) => "write-",
            (Role::Exclusive | Role::Write, Layout::Kazoo) => "__lock__",
            (Role::Read, Layout::Kazoo) => "__rlock__",
        }
    }

    /// The per-acquisition protected prefix of a node name.
    fn prefix(self, layout: Layout) -> String {
        match layout {
            Layout::Curator => format!("_c_{}-{}", contender_id(), self.name(layout)),
            Layout::Kazoo => format!("{}{}", uuid::Uuid::new_v4().simple(), self.name(layout)),
        }
    }
}

/// How a waiter waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// getData watch on the node just before its own.
    Predecessor,
    /// getChildren watch on the directory.
    Herd,
}

/// A fresh per-acquisition id: a random (v4) UUID, hyphenated.
pub(crate) fn contender_id() -> String {
    uuid::Uuid::new_v4().hyphenated().to_string()
}

/// The sequence number of a node name ending in `name` and a sequence
/// suffix as ZooKeeper writes it: Java's `%010d` of the parent's i32
/// cversion, so `0000000042`, and past `2147483647` the counter wraps to
/// `-2147483648`, `-2147483647`, …, `-000000005`, … (kazoo#606 and #730,
/// go-zookeeper PR #65). The i32 is returned reinterpreted as a u32, which
/// keeps increasing across the wrap. Only the suffix orders contenders
/// (ZOOKEEPER-2931: sorting whole names gave two holders), and only its
/// canonical form counts (`lock-12` or `lock-+000000012` are foreign).
fn sequence_of(node: &str, name: &str) -> Option<u32> {
    // Ten characters, or eleven for -1000000000 ..= -2147483648.
    [10, 11].into_iter().find_map(|width| {
        let split = node.len().checked_sub(width)?;
        let (head, suffix) = node.split_at_checked(split)?;
        let n: i32 = suffix.parse().ok()?;
        (head.ends_with(name) && format!("{n:010}") == suffix).then_some(n as u32)
    })
}

/// A lock node of the directory.
#[derive(Debug)]
struct Node {
    /// The sequence suffix as a u32 (see [`sequence_of`]).
    seq: u32,
    name: String,
    /// Whether it excludes readers (exclusive and write nodes).
    excludes_readers: bool,
}

pub(crate) fn validate_dir(dir: &str) -> Result<String> {
    if !dir.starts_with('/') || dir.len() < 2 || dir.ends_with('/') || dir.contains("//") {
        return Err(LockError::InvalidDir(dir.to_string()));
    }
    Ok(dir.to_string())
}

/// Creates `dir` (and its ancestors) as persistent nodes if missing.
pub(crate) async fn ensure_dir(client: &zk::Client, dir: &str) -> Result<()> {
    let opts = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    match retry(client, || client.mkdir(dir, &opts)).await {
        Ok(()) | Err(zk::Error::NodeExists) => Ok(()),
        Err(err) => Err(LockError::from_zk(err)),
    }
}

#[derive(Debug)]
pub(crate) struct Sequential {
    client: zk::Client,
    dir: String,
    form: Form,
    /// The read/write family (`read-`, `write-`) instead of `lock-`.
    read_write: bool,
    layout: Layout,
    counters: Arc<Counters>,
}

impl Sequential {
    pub(crate) fn new(
        client: zk::Client,
        dir: &str,
        form: Form,
        read_write: bool,
        layout: Layout,
    ) -> Result<Sequential> {
        Ok(Sequential {
            client,
            dir: validate_dir(dir)?,
            form,
            read_write,
            layout,
            counters: Counters::new(),
        })
    }

    pub(crate) fn dir(&self) -> &str {
        &self.dir
    }

    pub(crate) fn metrics(&self) -> LockMetrics {
        self.counters.snapshot()
    }

    pub(crate) async fn acquire(&self, role: Role, deadline: Option<Instant>) -> Result<LockGuard> {
        match self.run(role, deadline, false).await? {
            Some(guard) => Ok(guard),
            None => Err(LockError::Timeout),
        }
    }

    pub(crate) async fn try_acquire(&self, role: Role) -> Result<Option<LockGuard>> {
        self.run(role, None, true).await
    }

    async fn run(
        &self,
        role: Role,
        deadline: Option<Instant>,
        try_only: bool,
    ) -> Result<Option<LockGuard>> {
        let start = std::time::Instant::now();
        let prefix = role.prefix(self.layout);
        let mut pending = Pending::new(
            self.client.clone(),
            Target::Protected {
                dir: self.dir.clone(),
                prefix: prefix.clone(),
            },
        );
        let attempt = self.attempt(&mut pending, &prefix, role, try_only);
        let result = match deadline {
            None => attempt.await,
            Some(at) => tokio::time::timeout_at(at, attempt)
                .await
                .unwrap_or(Err(LockError::Timeout)),
        };
        self.counters.waited(start.elapsed());
        match result {
            Ok(true) => match pending.disarm() {
                Some(node) => {
                    self.counters.acquired();
                    Ok(Some(LockGuard::new(self.client.clone(), node)))
                }
                None => Err(LockError::NodeVanished(prefix)),
            },
            Ok(false) => {
                pending.remove().await?;
                Ok(None)
            }
            Err(err) => {
                // Best effort: after SessionExpired there is nothing to remove.
                let _ = pending.remove().await;
                Err(err)
            }
        }
    }

    /// Creates the node (finding it by its protected prefix after a lost
    /// reply), then waits until it is first. `Ok(false)`: not first and `try_only`.
    async fn attempt(
        &self,
        pending: &mut Pending,
        prefix: &str,
        role: Role,
        try_only: bool,
    ) -> Result<bool> {
        let own = self.create(pending, prefix).await?;
        self.wait(&own, role, try_only).await
    }

    async fn create(&self, pending: &mut Pending, prefix: &str) -> Result<Owned> {
        let path = format!("{}/{prefix}", self.dir);
        let opts = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
        let mut backoff = Backoff::new();
        loop {
            match self.client.create(&path, &[], &opts).await {
                Ok((stat, sequence)) => {
                    let node = Owned {
                        path: format!("{path}{sequence}"),
                        czxid: stat.czxid,
                    };
                    pending.created(node.clone());
                    return Ok(node);
                }
                Err(zk::Error::NoNode) => ensure_dir(&self.client, &self.dir).await?,
                // Not executed: create again.
                Err(err) if shed(&err) => backoff.wait().await,
                Err(err) if connection_lost(&err) => {
                    if self.client.state().is_terminated() {
                        return Err(LockError::SessionExpired);
                    }
                    // Applied or not? The protected prefix tells.
                    if let Some(node) = find_protected(&self.client, &self.dir, prefix).await? {
                        pending.created(node.clone());
                        return Ok(node);
                    }
                }
                Err(err) => return Err(LockError::from_zk(err)),
            }
        }
    }

    /// The lock nodes among `children`, in sequence order; other children are ignored.
    fn ordered(&self, children: Vec<String>) -> Vec<Node> {
        let mut nodes: Vec<Node> = children
            .into_iter()
            .filter_map(|name| {
                let roles: &[Role] = if self.read_write {
                    &[Role::Write, Role::Read]
                } else {
                    &[Role::Exclusive]
                };
                roles
                    .iter()
                    .find_map(|r| {
                        sequence_of(&name, r.name(self.layout)).map(|seq| (seq, *r != Role::Read))
                    })
                    .map(|(seq, excludes_readers)| Node {
                        seq,
                        name,
                        excludes_readers,
                    })
            })
            .collect();
        nodes.sort_unstable_by(|a, b| (a.seq, &a.name).cmp(&(b.seq, &b.name)));
        nodes
    }

    /// The nearest node ahead of `own` that keeps `role` waiting (any node
    /// for exclusive and write, the last writer for a read), or `None`
    /// when `own` holds the lock.
    fn blocker(&self, children: Vec<String>, own: &Owned, role: Role) -> Result<Option<String>> {
        let own_name = &own.path[self.dir.len() + 1..];
        let nodes = self.ordered(children);
        let Some(pos) = nodes.iter().position(|n| n.name == own_name) else {
            return Err(if self.client.state().is_terminated() {
                LockError::SessionExpired
            } else {
                LockError::NodeVanished(own.path.clone())
            });
        };
        Ok(nodes[..pos]
            .iter()
            .rev()
            .find(|n| role != Role::Read || n.excludes_readers)
            .map(|n| n.name.clone()))
    }

    async fn wait(&self, own: &Owned, role: Role, try_only: bool) -> Result<bool> {
        let client = &self.client;
        loop {
            let watcher = match (self.form, try_only) {
                // The herd form lists the children and sets its watch in one
                // call, once per wake-up: no deletion can slip in between.
                // A holder drops the watcher, which removes its watch.
                (Form::Herd, false) => {
                    let (children, watcher) =
                        retry(client, || client.list_and_watch_children(&self.dir))
                            .await
                            .map_err(LockError::from_zk)?;
                    self.counters.children_read(&children);
                    if self.blocker(children, own, role)?.is_none() {
                        return Ok(true);
                    }
                    watcher
                }
                _ => {
                    let children = retry(client, || client.list_children(&self.dir))
                        .await
                        .map_err(LockError::from_zk)?;
                    self.counters.children_read(&children);
                    let Some(blocker) = self.blocker(children, own, role)? else {
                        return Ok(true);
                    };
                    if try_only {
                        return Ok(false);
                    }
                    let pred = format!("{}/{blocker}", self.dir);
                    // getData, not exists: a predecessor already gone leaves no watch.
                    match retry(client, || client.get_and_watch_data(&pred)).await {
                        Ok((_, _, watcher)) => watcher,
                        Err(zk::Error::NoNode) => continue,
                        Err(err) => return Err(LockError::from_zk(err)),
                    }
                }
            };
            let event = watcher.changed().await;
            self.counters.notification();
            if event.event_type == zk::EventType::Session && event.session_state.is_terminated() {
                return Err(LockError::SessionExpired);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_suffixes_parse_across_the_i32_wrap() {
        let seq = |n: &str| sequence_of(n, "lock-");
        assert_eq!(seq("_c_x-lock-0000000000"), Some(0));
        assert_eq!(seq("_c_x-lock-2147483647"), Some(i32::MAX as u32));
        assert_eq!(seq("_c_x-lock--2147483648"), Some(1 << 31));
        assert_eq!(seq("_c_x-lock--2147483647"), Some((1 << 31) + 1));
        assert_eq!(seq("_c_x-lock--000000005"), Some(u32::MAX - 4));
        assert_eq!(seq("_c_x-lock--000000001"), Some(u32::MAX));
        // Increasing in creation order across the wrap.
        let names = ["2147483646", "2147483647", "-2147483648", "-2147483647"];
        let seqs: Vec<_> = names.iter().map(|s| seq(&format!("lock-{s}"))).collect();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
        // Not ZooKeeper's form, or not after the role name.
        for foreign in [
            "lock-12",
            "lock-+000000012",
            "lock-2147483648",
            "lock--0000000005",
            "x-0000000000",
            "read-0000000001",
            "lock-00000000a1",
        ] {
            assert_eq!(seq(foreign), None, "{foreign}");
        }
        assert_eq!(
            sequence_of("ab12__rlock__-2147483648", "__rlock__"),
            Some(1 << 31)
        );
        assert_eq!(sequence_of("ab12__rlock__-2147483648", "__lock__"), None);
    }
}
