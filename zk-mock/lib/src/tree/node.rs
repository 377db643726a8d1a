//! A znode: data, ACL, persisted stat and children.

use std::sync::Arc;

use bytes::Bytes;

use super::java_order::JavaHashSet;
use crate::proto::{Acl, Stat};

/// What kind of node this is; decides the ephemeral owner ZooKeeper stores
/// and the one it reports (`DataNode.getClientEphemeralOwner`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// A persistent node.
    Persistent,
    /// An ephemeral node owned by a session.
    Ephemeral(i64),
    /// A container node (internal owner `Long.MIN_VALUE`, reported as 0).
    Container,
    /// A persistent node with a time-to-live in ms (reported owner 0).
    Ttl(i64),
}

/// One node of the data tree (`DataNode` with its `StatPersisted`).
#[derive(Debug, Clone)]
pub struct Node {
    /// `None` is null data (buffer length −1), distinct from empty.
    pub data: Option<Bytes>,
    /// The node's ACL, shared between nodes created with the same list.
    pub acl: Arc<[Acl]>,
    pub(crate) kind: NodeKind,
    pub(crate) czxid: i64,
    pub(crate) mzxid: i64,
    pub(crate) pzxid: i64,
    pub(crate) ctime: i64,
    pub(crate) mtime: i64,
    pub(crate) version: i32,
    /// The *stored* cversion: how many children were ever created here.
    /// It is also the next sequential suffix.
    pub(crate) cversion: i32,
    pub(crate) aversion: i32,
    /// Child names (not paths); [`Node::listing`] gives them in the order
    /// ZooKeeper sends them.
    pub children: Children,
}

/// A node's children: each name once, in a table that lists them as a real
/// ZooKeeper does (the iteration order of Java's `HashSet`, see
/// `java_order`). A leaf, as most nodes are, holds no table at all; a node
/// that had children keeps its table, as Java's keeps its capacity.
#[derive(Debug, Clone, Default)]
pub struct Children(Option<Box<ChildSet>>);

#[derive(Debug, Clone)]
struct ChildSet {
    set: JavaHashSet,
    /// The listing, computed once per change of the children.
    cache: std::sync::OnceLock<Arc<[String]>>,
}

impl Children {
    /// How many.
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |c| c.set.len())
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `name` is a child.
    pub fn contains(&self, name: &str) -> bool {
        let Some(c) = &self.0 else {
            return false;
        };
        // The set holds each child by its path: the parent's path (any
        // member's first `skip` bytes) and the name.
        c.set.any_key().is_some_and(|k| {
            let mut key = String::with_capacity(c.set.skip() + name.len());
            key.push_str(&k[..c.set.skip()]);
            key.push_str(name);
            c.set.contains(&key)
        })
    }

    /// The names, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        self.0.iter().flat_map(|c| c.set.names())
    }

    /// The names, sorted.
    pub fn sorted(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.iter().collect();
        v.sort_unstable();
        v
    }

    /// Adds the child whose path is `path`, its name starting at byte
    /// `name_at`; the set keeps the path as given (the node table's key),
    /// so adding one copies nothing. False if it was there.
    pub(crate) fn insert(&mut self, path: Arc<str>, name_at: usize) -> bool {
        let c = self.0.get_or_insert_with(|| {
            Box::new(ChildSet {
                set: JavaHashSet::of_names(8, name_at),
                cache: std::sync::OnceLock::new(),
            })
        });
        debug_assert_eq!(c.set.skip(), name_at, "{path}");
        let added = c.set.insert_shared(path);
        if added {
            c.cache = std::sync::OnceLock::new();
        }
        added
    }

    /// Removes the child whose path is `path`; false if it was not there.
    pub(crate) fn remove(&mut self, path: &str) -> bool {
        let Some(c) = self.0.as_mut() else {
            return false;
        };
        let removed = c.set.remove(path);
        if removed {
            c.cache = std::sync::OnceLock::new();
        }
        removed
    }

    /// The children in the order a real ZooKeeper lists them; computed
    /// once per change of the children.
    pub(crate) fn listing(&self) -> Arc<[String]> {
        match &self.0 {
            None => Arc::from([]),
            Some(c) => c
                .cache
                .get_or_init(|| c.set.order().into_iter().map(String::from).collect())
                .clone(),
        }
    }

    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.0.as_ref().map_or(0, |c| c.set.capacity())
    }
}

impl Node {
    /// Adds the child at `path`, its name starting at byte `name_at`
    /// (no-op if present).
    pub(crate) fn add_child(&mut self, path: Arc<str>, name_at: usize) {
        self.children.insert(path, name_at);
    }

    /// Removes the child at `path`.
    pub(crate) fn remove_child(&mut self, path: &str) {
        self.children.remove(path);
    }

    /// The children in the order a real ZooKeeper lists them.
    pub fn listing(&self) -> Arc<[String]> {
        self.children.listing()
    }

    /// A node as `DataTree`'s constructor makes the built-in ones: every stat field 0.
    pub(crate) fn special(acl: Arc<[Acl]>) -> Node {
        Node {
            data: Some(Bytes::new()),
            acl,
            kind: NodeKind::Persistent,
            czxid: 0,
            mzxid: 0,
            pzxid: 0,
            ctime: 0,
            mtime: 0,
            version: 0,
            cversion: 0,
            aversion: 0,
            children: Children::default(),
        }
    }

    /// The Stat clients see (`DataNode.copyStat`): cversion is reported as
    /// `stored * 2 - numChildren`, "for every create there is a delete except
    /// for the children still present".
    pub fn stat(&self) -> Stat {
        let num_children = self.children.len() as i32;
        Stat {
            czxid: self.czxid,
            mzxid: self.mzxid,
            ctime: self.ctime,
            mtime: self.mtime,
            version: self.version,
            cversion: self.cversion.wrapping_mul(2).wrapping_sub(num_children),
            aversion: self.aversion,
            ephemeral_owner: self.ephemeral_owner(),
            data_length: self.data.as_ref().map_or(0, |d| d.len() as i32),
            num_children,
            pzxid: self.pzxid,
        }
    }

    /// The ephemeral owner as reported to clients: containers and TTL nodes report 0.
    pub fn ephemeral_owner(&self) -> i64 {
        match self.kind {
            NodeKind::Ephemeral(s) => s,
            _ => 0,
        }
    }

    /// Whether the node belongs to a session (and so may not have children).
    pub fn is_ephemeral(&self) -> bool {
        matches!(self.kind, NodeKind::Ephemeral(_))
    }

    /// The node's kind.
    pub fn kind(&self) -> NodeKind {
        self.kind
    }
}
