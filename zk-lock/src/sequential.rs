//! The engine of the sequential locks (exclusive, and both sides of the
//! read/write lock): protected ephemeral-sequential nodes, ordering by
//! sequence suffix, and the two ways of waiting (predecessor and herd).

use std::sync::Arc;

use zookeeper_client as zk;

use crate::error::{connection_lost, shed, LockError, Result};
use crate::metrics::Counters;
use crate::node::{
    contender_id, ensure_dir, find_protected, retry, Backoff, Layout, Owned, Pending, Target, Wait,
};

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

/// Which nodes of the directory take part in the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// The exclusive lock's nodes (`lock-`, or kazoo's `__lock__`).
    Exclusive,
    /// The read/write lock's readers and writers.
    ReadWrite,
}

impl Family {
    /// The roles whose nodes order this family's contenders.
    fn roles(self) -> &'static [Role] {
        match self {
            Family::Exclusive => &[Role::Exclusive],
            Family::ReadWrite => &[Role::Write, Role::Read],
        }
    }
}

/// The sequence number of a node name ending in `name` and a sequence
/// suffix as ZooKeeper writes it: Java's `%010d` of the parent's i32
/// cversion, so `0000000042`, and past `2147483647` the counter wraps to
/// `-2147483648`, `-2147483647`, …, `-000000005`, … (kazoo#606 and #730,
/// go-zookeeper PR #65), and past `-1` back to `0`. [`in_creation_order`]
/// orders them across both wraps. Only the suffix orders contenders
/// (ZOOKEEPER-2931: sorting whole names gave two holders), and only its
/// canonical form counts (`lock-12` or `lock-+000000012` are foreign).
fn sequence_of(node: &str, name: &str) -> Option<i32> {
    // Ten characters, or eleven for -1000000000 ..= -2147483648.
    [10, 11].into_iter().find_map(|width| {
        let split = node.len().checked_sub(width)?;
        let (head, suffix) = node.split_at_checked(split)?;
        let n: i32 = suffix.parse().ok()?;
        (head.ends_with(name) && format!("{n:010}") == suffix).then_some(n)
    })
}

/// Sorts `nodes` in the order their sequence numbers were handed out, by
/// serial-number arithmetic (RFC 1982): `a` came before `b` when
/// `b - a`, wrapping, is positive as an i32. That holds across the wrap
/// from `2147483647` to `-2147483648` and across the one from `-1` to `0`,
/// as long as the directory's live nodes were created fewer than 2^31
/// sequence numbers apart. Every node is measured from the same one (the
/// first listed), so the sort sees a total order, and any choice of that
/// node gives the same order: every contender agrees, whatever its listing.
fn in_creation_order(nodes: &mut [Node]) {
    let Some(anchor) = nodes.first().map(|n| n.seq) else {
        return;
    };
    nodes.sort_unstable_by(|a, b| {
        let (a_off, b_off) = (a.seq.wrapping_sub(anchor), b.seq.wrapping_sub(anchor));
        (a_off, &a.name).cmp(&(b_off, &b.name))
    });
}

/// A lock node of the directory.
#[derive(Debug)]
struct Node {
    /// The sequence suffix (see [`sequence_of`]).
    seq: i32,
    name: String,
    /// Whether it excludes readers (exclusive and write nodes).
    excludes_readers: bool,
}

#[derive(Debug)]
pub(crate) struct Sequential {
    client: zk::Client,
    dir: String,
    form: Form,
    family: Family,
    layout: Layout,
    counters: Arc<Counters>,
}

impl Sequential {
    pub(crate) fn new(
        client: zk::Client,
        dir: String,
        form: Form,
        family: Family,
        layout: Layout,
        counters: Arc<Counters>,
    ) -> Sequential {
        Sequential {
            client,
            dir,
            form,
            family,
            layout,
            counters,
        }
    }

    pub(crate) fn client(&self) -> &zk::Client {
        &self.client
    }

    /// Acquires as `role`: `Ok(None)` when `wait` is [`Wait::Never`] and
    /// the lock is busy, [`LockError::Timeout`] when a deadline passed.
    pub(crate) async fn acquire(&self, role: Role, wait: Wait) -> Result<Option<Owned>> {
        let prefix = role.prefix(self.layout);
        let mut pending = Pending::new(
            self.client.clone(),
            Target::Protected {
                dir: self.dir.clone(),
                prefix: prefix.clone(),
            },
        );
        let attempt = self.attempt(&mut pending, &prefix, role, wait == Wait::Never);
        let result = match wait {
            Wait::Until(at) => tokio::time::timeout_at(at, attempt)
                .await
                .unwrap_or(Err(LockError::Timeout)),
            Wait::Forever | Wait::Never => attempt.await,
        };
        match result {
            Ok(true) => match pending.disarm() {
                Some(node) => Ok(Some(node)),
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
                        shared_path: false,
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
                Err(err) => return Err(err.into()),
            }
        }
    }

    /// The lock nodes among `children`, in sequence order; other children are ignored.
    fn ordered(&self, children: Vec<String>) -> Vec<Node> {
        let mut nodes: Vec<Node> = children
            .into_iter()
            .filter_map(|name| {
                self.family
                    .roles()
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
        in_creation_order(&mut nodes);
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
                        retry(client, || client.list_and_watch_children(&self.dir)).await?;
                    self.counters.children_read(&children);
                    if self.blocker(children, own, role)?.is_none() {
                        return Ok(true);
                    }
                    watcher
                }
                _ => {
                    let children = retry(client, || client.list_children(&self.dir)).await?;
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
                        Err(err) => return Err(err.into()),
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
        assert_eq!(seq("_c_x-lock-2147483647"), Some(i32::MAX));
        assert_eq!(seq("_c_x-lock--2147483648"), Some(i32::MIN));
        assert_eq!(seq("_c_x-lock--2147483647"), Some(i32::MIN + 1));
        assert_eq!(seq("_c_x-lock--000000005"), Some(-5));
        assert_eq!(seq("_c_x-lock--000000001"), Some(-1));
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
            Some(i32::MIN)
        );
        assert_eq!(sequence_of("ab12__rlock__-2147483648", "__lock__"), None);
    }

    /// Sorts `created` (in creation order) from every rotation of it, as
    /// listings come in any order, and expects creation order back.
    fn assert_sorts_back(created: &[i32]) {
        for shift in 0..created.len() {
            let mut listed = created.to_vec();
            listed.rotate_left(shift);
            listed.reverse();
            let mut nodes: Vec<Node> = listed
                .into_iter()
                .map(|seq| Node {
                    seq,
                    name: format!("lock-{seq:010}"),
                    excludes_readers: true,
                })
                .collect();
            in_creation_order(&mut nodes);
            let sorted: Vec<i32> = nodes.iter().map(|n| n.seq).collect();
            assert_eq!(sorted, created, "listed from rotation {shift}");
        }
    }

    #[test]
    fn contenders_are_ordered_as_created_across_both_wraps() {
        assert_sorts_back(&[0, 1, 2, 41]);
        assert_sorts_back(&[i32::MAX - 1, i32::MAX, i32::MIN, i32::MIN + 1]);
        assert_sorts_back(&[-3, -2, -1, 0, 1]);
        // A queue that spans just under 2^31 numbers across a wrap.
        assert_sorts_back(&[-1000, 0, i32::MAX - 1001]);
        assert_sorts_back(&[]);
    }
}
