//! A znode: data, ACL, persisted stat and children.

use std::collections::BTreeSet;
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
    /// Child names (not paths), sorted; [`Node::listing`] gives them in the
    /// order ZooKeeper sends them.
    pub children: BTreeSet<String>,
    /// How ZooKeeper would iterate `children`.
    pub(crate) order: ChildOrder,
}

/// ZooKeeper keeps a node's children in a Java `HashSet<String>` created
/// with capacity 8 (`DataNode.addChild`), and getChildren lists them in its
/// iteration order (see `java_order`).
#[derive(Debug, Clone)]
pub(crate) struct ChildOrder {
    pub(super) set: JavaHashSet,
    /// The listing, until the children change.
    cache: std::sync::OnceLock<Arc<[String]>>,
}

impl Default for ChildOrder {
    fn default() -> Self {
        ChildOrder {
            set: JavaHashSet::with_capacity(8),
            cache: std::sync::OnceLock::new(),
        }
    }
}

impl Node {
    /// Adds a child name (no-op if present).
    pub(crate) fn add_child(&mut self, name: String) {
        if self.order.set.insert(&name) {
            self.children.insert(name);
            self.order.cache = std::sync::OnceLock::new();
        }
    }

    /// Removes a child name.
    pub(crate) fn remove_child(&mut self, name: &str) {
        if self.order.set.remove(name) {
            self.children.remove(name);
            self.order.cache = std::sync::OnceLock::new();
        }
    }

    /// The children in the order a real ZooKeeper lists them (see
    /// `ChildOrder`); computed once per change of the children.
    pub fn listing(&self) -> Arc<[String]> {
        self.order
            .cache
            .get_or_init(|| {
                self.order
                    .set
                    .order()
                    .into_iter()
                    .map(String::from)
                    .collect()
            })
            .clone()
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
            children: BTreeSet::new(),
            order: ChildOrder::default(),
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
