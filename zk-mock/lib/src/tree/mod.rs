//! The data tree: nodes by path, the zxid counter, and every write and read
//! rule of `PrepRequestProcessor` / `DataTree`, in ZooKeeper's check order.
//!
//! Pure and synchronous: no sockets, no sessions' connections, no clocks (the
//! caller passes the zxid and time of each transaction). Writes return the
//! [`TreeEvent`]s the watch manager turns into notifications.

pub(crate) mod java_order;
pub mod node;
pub mod path;
mod quota;
mod table;

use crate::hash::{Map, StrMap};
use std::collections::BTreeSet;
use std::sync::Arc;

use bytes::Bytes;

use java_order::JavaHashSet;
pub use node::{Children, Node, NodeKind};
use table::NodeTable;

use crate::acl;
use crate::compact::Sparse;
use crate::proto::{perms, Acl, ErrorCode, Id, Stat};

/// A change to the tree, for the watch manager. Each carries the ACLs that
/// decide who may hear of it (3.8's notification filter, CVE-2024-23944):
/// the node's for its own event, the parent's for NodeChildrenChanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TreeEvent {
    /// A node was created.
    Created {
        /// The node's path (shared with the tree's table and the recorder).
        path: Arc<str>,
        /// The node's ACL.
        acl: Arc<[Acl]>,
        /// The parent's ACL.
        parent_acl: Arc<[Acl]>,
    },
    /// A node was deleted.
    Deleted {
        /// The node's path (shared with the tree's table and the recorder).
        path: Arc<str>,
        /// The node's ACL.
        acl: Arc<[Acl]>,
        /// The parent's ACL.
        parent_acl: Arc<[Acl]>,
    },
    /// A node's data was set.
    DataChanged {
        /// The node's path (shared with the tree's table and the recorder).
        path: Arc<str>,
        /// The node's ACL.
        acl: Arc<[Acl]>,
    },
}

impl TreeEvent {
    /// The changed node's path.
    pub fn path(&self) -> &str {
        self.shared_path()
    }

    /// The changed node's path, as the tree keeps it.
    pub fn shared_path(&self) -> &Arc<str> {
        match self {
            TreeEvent::Created { path, .. }
            | TreeEvent::Deleted { path, .. }
            | TreeEvent::DataChanged { path, .. } => path,
        }
    }
}

/// `CreateMode`, decoded from the request flags (`CreateMode.fromFlag`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateMode {
    /// Ephemeral (flags 1 and 3).
    pub ephemeral: bool,
    /// Sequential (flags 2, 3 and 6).
    pub sequential: bool,
    /// Container (flag 4).
    pub container: bool,
    /// TTL (flags 5 and 6).
    pub ttl: bool,
}

impl CreateMode {
    /// Flags 0–6; anything else is BADARGUMENTS.
    pub fn from_flags(flags: i32) -> Result<CreateMode, ErrorCode> {
        let m = |ephemeral, sequential, container, ttl| CreateMode {
            ephemeral,
            sequential,
            container,
            ttl,
        };
        Ok(match flags {
            0 => m(false, false, false, false),
            1 => m(true, false, false, false),
            2 => m(false, true, false, false),
            3 => m(true, true, false, false),
            4 => m(false, false, true, false),
            5 => m(false, false, false, true),
            6 => m(false, true, false, true),
            _ => return Err(ErrorCode::BadArguments),
        })
    }
}

/// Everything a create needs beyond the tree itself.
#[derive(Debug, Clone)]
pub struct CreateArgs<'a> {
    /// Requested path (before any sequential suffix). A node created at
    /// exactly this path keeps this string as its path, shared, not copied.
    pub path: Arc<str>,
    /// Data; `None` is null.
    pub data: Option<Bytes>,
    /// Requested ACL (before fixup).
    pub acl: &'a [Acl],
    /// Decoded flags.
    pub mode: CreateMode,
    /// TTL in ms for TTL modes.
    pub ttl: i64,
}

/// Who is asking: the session (for ephemeral ownership) and the connection's auth ids.
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    /// The session id.
    pub session: i64,
    /// The connection's authInfo (always starts with `ip:<address>`).
    pub auth: &'a [Id],
}

/// The data tree (`DataTree` plus the ephemerals index).
#[derive(Debug)]
pub struct DataTree {
    /// Every node by path (see `table.rs`).
    nodes: NodeTable,
    /// Each session's ephemeral paths, as ZooKeeper's `HashSet` orders them.
    ephemerals: Map<i64, JavaHashSet>,
    /// The paths of every container and TTL node (`DataTree.containers` and
    /// `DataTree.ttls`): what the container check looks at, instead of the
    /// whole tree.
    reapable: StrMap<()>,
    last_zxid: i64,
    open_acl: Arc<[Acl]>,
    /// Undo journal while a multi is being prepared: the first saved version of
    /// every node the multi touches (`None` = did not exist).
    journal: Option<Vec<(String, Option<Node>)>>,
    /// Paths under quota (`pTrie`), see `quota.rs`.
    quotas: BTreeSet<String>,
    /// While journaling: each touched session's ephemerals as they were.
    session_journal: Map<i64, Option<JavaHashSet>>,
}

impl Default for DataTree {
    fn default() -> Self {
        DataTree::new()
    }
}

impl DataTree {
    /// A fresh tree: `/`, `/zookeeper`, `/zookeeper/quota` and `/zookeeper/config`,
    /// every stat field 0, `/zookeeper/config` readable only and with aversion −1.
    pub fn new() -> DataTree {
        let open = Acl::open_shared();
        let mut nodes = NodeTable::default();
        let [zookeeper, quota, config_path]: [Arc<str>; 3] =
            ["/zookeeper", "/zookeeper/quota", "/zookeeper/config"].map(Arc::from);
        let mut root = Node::special(open.clone());
        root.add_child(zookeeper.clone(), 1);
        let mut zk = Node::special(open.clone());
        zk.add_child(quota.clone(), "/zookeeper/".len());
        zk.add_child(config_path.clone(), "/zookeeper/".len());
        let mut config = Node::special(Acl::read_unsafe().into());
        config.aversion = -1;
        nodes.insert("/", root);
        nodes.insert_shared(zookeeper, zk);
        nodes.insert_shared(quota, Node::special(open.clone()));
        nodes.insert_shared(config_path, config);
        DataTree {
            nodes,
            ephemerals: Map::default(),
            reapable: StrMap::default(),
            last_zxid: 0,
            open_acl: open,
            journal: None,
            quotas: BTreeSet::new(),
            session_journal: Map::default(),
        }
    }

    /// The last processed zxid (what reads and pings report).
    pub fn last_zxid(&self) -> i64 {
        self.last_zxid
    }

    /// Allocates the next zxid. Every transaction takes one, failed ones included.
    pub fn next_zxid(&mut self) -> i64 {
        self.last_zxid += 1;
        self.last_zxid
    }

    /// Sets `/zookeeper/config`'s data as a reconfig's txn does
    /// (`SetDataTxn` with version −1: the node's version becomes −1).
    pub fn set_config(
        &mut self,
        zxid: i64,
        time: i64,
        data: Bytes,
        events: &mut Vec<TreeEvent>,
    ) -> Stat {
        let path = "/zookeeper/config";
        let node = self
            .nodes
            .get_mut(path)
            .expect("the config node always exists");
        node.data = Some(data);
        node.version = -1;
        node.mzxid = zxid;
        node.mtime = time;
        let stat = node.stat();
        events.push(TreeEvent::DataChanged {
            path: path.into(),
            acl: node.acl.clone(),
        });
        stat
    }

    /// An ensemble's config, in place from the start, as a quorum peer
    /// writes its static config (`ZKDatabase.initConfigInZKDatabase`): its
    /// mzxid is the config's version and its version −1.
    pub fn init_config(&mut self, data: Bytes, config_version: i64) {
        if let Some(node) = self.nodes.get_mut("/zookeeper/config") {
            node.data = Some(data);
            node.mzxid = config_version;
            node.version = -1;
        }
    }

    /// Makes `zxid` the last processed one, as a replica applying a txn
    /// prepared elsewhere does (never moves backwards).
    pub fn advance_to(&mut self, zxid: i64) {
        self.last_zxid = self.last_zxid.max(zxid);
    }

    /// Looks a node up; `""` is the root's alias, as in `DataTree.nodes`.
    pub fn get(&self, path: &str) -> Option<&Node> {
        self.nodes.get(if path.is_empty() { "/" } else { path })
    }

    /// The node table's own copy of `path` (shared, not copied), if the node
    /// is there.
    pub(crate) fn shared_path(&self, path: &str) -> Option<Arc<str>> {
        self.nodes.get_key(path).cloned()
    }

    /// The number of nodes, counted as ZooKeeper does (`""` and `/` both count).
    pub fn node_count(&self) -> usize {
        self.nodes.len() + 1
    }

    /// Iterates over every node by path.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Node)> {
        self.nodes.iter()
    }

    /// The ephemeral paths a session owns.
    /// In the order ZooKeeper hands them out (a clone of its `HashSet`):
    /// getEphemerals lists them so, and a closed session's go in this order.
    pub fn ephemerals_of(
        &self,
        session: impl Into<crate::SessionId>,
    ) -> impl Iterator<Item = &str> {
        self.ephemerals
            .get(&session.into().0)
            .map(JavaHashSet::clone_order)
            .unwrap_or_default()
            .into_iter()
    }

    /// Whether `path` is indexed among `session`'s ephemerals: a lookup,
    /// where [`ephemerals_of`](Self::ephemerals_of) puts the whole set in
    /// ZooKeeper's order.
    pub(crate) fn is_ephemeral_of(&self, session: i64, path: &str) -> bool {
        self.ephemerals
            .get(&session)
            .is_some_and(|set| set.contains(path))
    }

    /// Saves a session's ephemerals index into the multi journal, once.
    fn save_session(&mut self, session: i64) {
        if self.journal.is_some() && !self.session_journal.contains_key(&session) {
            let saved = self.ephemerals.get(&session).cloned();
            self.session_journal.insert(session, saved);
        }
    }

    fn key(path: &str) -> &str {
        if path.is_empty() {
            "/"
        } else {
            path
        }
    }

    /// Saves a node's current version into the multi journal, once.
    #[inline]
    fn save(&mut self, path: &str) {
        if self.journal.is_some() {
            self.save_in_journal(path);
        }
    }

    fn save_in_journal(&mut self, path: &str) {
        let key = Self::key(path);
        if let Some(j) = &mut self.journal {
            if !j.iter().any(|(p, _)| p == key) {
                j.push((key.to_string(), self.nodes.get(key).cloned()));
            }
        }
    }

    fn insert(&mut self, path: &str, node: Node) {
        self.insert_shared(path.into(), node);
    }

    /// [`insert`](Self::insert) with the path as the table is to keep it.
    fn insert_shared(&mut self, path: Arc<str>, node: Node) {
        let hash = self.nodes.hash(&path);
        self.insert_shared_hashed(hash, path, node);
    }

    /// [`insert_shared`](Self::insert_shared) with the path's hash (from
    /// `NodeTable::hash`) given.
    fn insert_shared_hashed(&mut self, hash: u64, path: Arc<str>, node: Node) {
        let kind = node.kind;
        // A plain node's path moves into the table (no count taken and
        // dropped: each is a locked instruction); one that an index beside
        // the table also holds is shared with it.
        let indexed =
            (is_reapable(kind) || matches!(kind, NodeKind::Ephemeral(_))).then(|| path.clone());
        if let Some((path, old)) = self.nodes.insert_shared_hashed(hash, path, node) {
            self.forget_ephemeral(&path, &old);
            if is_reapable(old.kind) && !is_reapable(kind) {
                self.reapable.remove(&path);
            }
        }
        let Some(path) = indexed else {
            return;
        };
        if is_reapable(kind) {
            self.reapable.insert_new_shared(path.clone(), ());
        }
        // After forgetting the old version: restoring a saved ephemeral over
        // itself (a rolled-back multi) must leave it indexed.
        if let NodeKind::Ephemeral(s) = kind {
            self.save_session(s);
            self.ephemerals
                .entry(s)
                .or_insert_with(|| JavaHashSet::with_capacity(16))
                .insert_shared(path);
        }
    }

    fn forget_ephemeral(&mut self, path: &str, node: &Node) {
        if let NodeKind::Ephemeral(s) = node.kind {
            self.save_session(s);
            if let Some(set) = self.ephemerals.get_mut(&s) {
                set.remove(path);
                if set.is_empty() {
                    self.ephemerals.remove(&s);
                    self.ephemerals.shrink_if_sparse();
                }
            }
        }
    }

    /// Removes a node; returns it, and its path as the table kept it.
    fn remove(&mut self, path: &str) -> Option<(Arc<str>, Node)> {
        let hash = self.nodes.hash(path);
        self.remove_hashed(hash, path)
    }

    /// [`remove`](Self::remove) with the path's hash (`NodeTable::hash`) given.
    fn remove_hashed(&mut self, hash: u64, path: &str) -> Option<(Arc<str>, Node)> {
        let (key, node) = self.nodes.remove_entry_hashed(hash, path)?;
        self.forget_ephemeral(path, &node);
        if is_reapable(node.kind) {
            self.reapable.remove(path);
            self.reapable.shrink_if_sparse();
        }
        Some((key, node))
    }

    /// Starts journaling for a multi: later writes can be rolled back.
    pub fn begin(&mut self) {
        self.journal = Some(Vec::new());
    }

    /// Keeps every write since [`begin`](Self::begin).
    pub fn commit(&mut self) {
        self.journal = None;
        self.session_journal.clear();
        self.session_journal.shrink_if_sparse();
    }

    /// Undoes every write since [`begin`](Self::begin).
    pub fn rollback(&mut self) {
        let Some(journal) = self.journal.take() else {
            return;
        };
        for (path, saved) in journal.into_iter().rev() {
            match saved {
                Some(node) => self.insert(&path, node),
                None => {
                    self.remove(&path);
                }
            }
        }
        // Restoring nodes re-indexed their ephemerals; put each session's
        // set back as it was, insertion order included.
        for (session, saved) in std::mem::take(&mut self.session_journal) {
            match saved {
                Some(set) => self.ephemerals.insert(session, set),
                None => self.ephemerals.remove(&session),
            };
        }
        self.rebuild_quotas();
    }

    /// create / create2 / createContainer / createTTL, in `pRequest2TxnCreate`'s
    /// check order. Returns the actual path and its Stat.
    pub fn create(
        &mut self,
        zxid: i64,
        time: i64,
        args: CreateArgs<'_>,
        caller: Caller<'_>,
        events: &mut Vec<TreeEvent>,
    ) -> Result<(Arc<str>, Stat), ErrorCode> {
        let path: &str = &args.path;
        // validatePathForCreate
        let Some((parent_path, _)) = path::split(path) else {
            return Err(ErrorCode::BadArguments);
        };
        // A path without a sequence suffix is checked once, here: one that
        // passes has no NUL and needs no second look where ZooKeeper checks
        // it (after the parent's checks). Any other is checked in ZooKeeper's
        // order: a NUL now, the rest below.
        let valid_as_is = !args.mode.sequential && path::is_valid(path);
        if !valid_as_is && path.contains('\0') {
            return Err(ErrorCode::BadArguments);
        }
        // The open ACL, as nearly every create asks, is the tree's one
        // shared copy (fixupACL keeps it as it is); any other is fixed up.
        let open = &self.open_acl;
        // A request's `OPEN_ACL_UNSAFE` decodes to the very list the tree
        // keeps ([`Acl::open_shared`]); a list built another way is compared.
        let only_open = std::ptr::eq(args.acl.as_ptr(), open.as_ptr())
            || match &open[..] {
                [o] => !args.acl.is_empty() && args.acl.iter().all(|a| a == o),
                _ => false,
            };
        let acl: Arc<[Acl]> = if only_open {
            open.clone()
        } else {
            let acl = acl::fixup(args.acl, caller.auth)?;
            if acl[..] == open[..] {
                open.clone()
            } else {
                acl.into()
            }
        };
        // The parent is found once, by its place; the new path is hashed
        // once, for the check that it is free and for the insert.
        let parent_key = Self::key(parent_path);
        let parent_at = self.nodes.place(parent_key).ok_or(ErrorCode::NoNode)?;
        let parent = self.nodes.at(parent_at);
        acl::check(&parent.acl, perms::CREATE, caller.auth)?;
        // The new node's path: the one copy of it that the table, the
        // event, the recorder and the reply share (the request's own, unless
        // a sequence suffix makes a new one).
        let parent_len = parent_path.len();
        let full: Arc<str> = if args.mode.sequential {
            format!("{path}{}", path::sequence_suffix(parent.cversion)).into()
        } else {
            args.path
        };
        // The parent's path is the same bytes at the front of `full` (the
        // request's path is moved into it, not counted and dropped).
        let parent_path = &full[..parent_len];
        let parent_key = Self::key(parent_path);
        if !valid_as_is && !path::is_valid(&full) {
            return Err(ErrorCode::BadArguments);
        }
        let hash = self.nodes.hash(&full);
        if self.nodes.contains_hashed(hash, &full) {
            return Err(ErrorCode::NodeExists);
        }
        if parent.is_ephemeral() {
            return Err(ErrorCode::NoChildrenForEphemerals);
        }
        let kind = if args.mode.ephemeral {
            NodeKind::Ephemeral(caller.session)
        } else if args.mode.container {
            NodeKind::Container
        } else if args.mode.ttl {
            NodeKind::Ttl(args.ttl)
        } else {
            NodeKind::Persistent
        };
        let node = Node {
            data: args.data,
            acl,
            kind,
            czxid: zxid,
            mzxid: zxid,
            pzxid: zxid,
            ctime: time,
            mtime: time,
            version: 0,
            cversion: 0,
            aversion: 0,
            children: Default::default(),
        };
        let stat = node.stat();
        let node_acl = node.acl.clone();
        self.save(parent_key);
        self.save(&full);
        let parent = self.nodes.at_mut(parent_at);
        parent.add_child(full.clone(), parent_path.len() + 1);
        parent.cversion = parent.cversion.wrapping_add(1);
        parent.pzxid = zxid;
        let parent_acl = parent.acl.clone();
        let bytes = node.data.as_ref().map_or(0, |d| d.len() as i64);
        self.insert_shared_hashed(hash, full.clone(), node);
        let child = &full[parent_path.len() + 1..];
        self.quota_created(parent_key, child, &full, bytes);
        events.push(TreeEvent::Created {
            path: full.clone(),
            acl: node_acl,
            parent_acl,
        });
        Ok((full, stat))
    }

    /// delete, in `pRequest2Txn case delete` check order: BADARGUMENTS, parent
    /// NONODE, NOAUTH on the parent, NONODE, BADVERSION, NOTEMPTY.
    pub fn delete(
        &mut self,
        zxid: i64,
        path: &str,
        version: i32,
        caller: Caller<'_>,
        events: &mut Vec<TreeEvent>,
    ) -> Result<(), ErrorCode> {
        let Some((parent_path, _)) = path::split(path) else {
            return Err(ErrorCode::BadArguments);
        };
        if path.contains('\0') || path::is_special(path) {
            return Err(ErrorCode::BadArguments);
        }
        // Each node is found once: the parent by its place, the node by its
        // path's hash, kept for the removal.
        let parent_at = self
            .nodes
            .place(Self::key(parent_path))
            .ok_or(ErrorCode::NoNode)?;
        acl::check(&self.nodes.at(parent_at).acl, perms::DELETE, caller.auth)?;
        let hash = self.nodes.hash(path);
        let node = self.nodes.get_hashed(hash, path).ok_or(ErrorCode::NoNode)?;
        if version != -1 && version != node.version {
            return Err(ErrorCode::BadVersion);
        }
        if !node.children.is_empty() {
            return Err(ErrorCode::NotEmpty);
        }
        self.delete_found(zxid, path, Some(parent_at), hash, events);
        Ok(())
    }

    /// The containers and TTL nodes a container check deletes now
    /// (`ContainerManager.getCandidates`), in path order: childless
    /// containers that once had a child (stored cversion > 0), and childless
    /// TTL nodes unmodified for longer than their TTL.
    pub fn reap_candidates(&self, now_wall_ms: i64) -> Vec<String> {
        let mut out: Vec<String> = self
            .reapable
            .keys()
            .filter_map(|p| Some((p, self.nodes.get(p)?)))
            .filter(|(_, n)| n.children.is_empty())
            .filter(|(_, n)| match n.kind {
                NodeKind::Container => n.cversion > 0,
                NodeKind::Ttl(ttl) => ttl != 0 && now_wall_ms - n.mtime > ttl,
                _ => false,
            })
            .map(|(p, _)| p.to_string())
            .collect();
        out.sort_unstable();
        out
    }

    /// The container check's `deleteContainer` transaction: NOTEMPTY if the
    /// node has children, BADVERSION if it is neither a container nor a TTL
    /// node (`PrepRequestProcessor case deleteContainer`). No ACL applies.
    pub fn delete_container(
        &mut self,
        zxid: i64,
        path: &str,
        events: &mut Vec<TreeEvent>,
    ) -> Result<(), ErrorCode> {
        if path::split(path).is_none() || path::is_special(path) {
            return Err(ErrorCode::BadArguments);
        }
        let node = self.get(path).ok_or(ErrorCode::NoNode)?;
        if !node.children.is_empty() {
            return Err(ErrorCode::NotEmpty);
        }
        if !matches!(node.kind, NodeKind::Container | NodeKind::Ttl(_)) {
            return Err(ErrorCode::BadVersion);
        }
        self.delete_node(zxid, path, events);
        Ok(())
    }

    /// A reset's wipe: deletes every node but `/` and the system nodes a new
    /// server starts with (`/zookeeper`, `/zookeeper/quota`,
    /// `/zookeeper/config`), children before their parents, as `deleteNode`
    /// does, all at `zxid`.
    pub fn wipe(&mut self, zxid: i64, events: &mut Vec<TreeEvent>) {
        let kept = |p: &str| {
            matches!(
                p,
                "/" | "/zookeeper" | "/zookeeper/quota" | "/zookeeper/config"
            )
        };
        let mut paths: Vec<String> = self
            .nodes
            .keys()
            .filter(|p| !kept(p))
            .map(String::from)
            .collect();
        // The deepest first, each depth in path order: the same deletes, in
        // the same order, every run.
        paths.sort_unstable_by(|a, b| {
            (b.matches('/').count(), a.as_str()).cmp(&(a.matches('/').count(), b.as_str()))
        });
        for p in paths {
            self.delete_node(zxid, &p, events);
        }
        self.rebuild_quotas();
    }

    /// `DataTree.deleteNode`: removes a node known to exist and to have no children.
    fn delete_node(&mut self, zxid: i64, path: &str, events: &mut Vec<TreeEvent>) {
        let parent_path = path::split(path).expect("deleted paths have a parent").0;
        let parent_at = self.nodes.place(Self::key(parent_path));
        let hash = self.nodes.hash(path);
        self.delete_found(zxid, path, parent_at, hash, events);
    }

    /// [`delete_node`](Self::delete_node) with the parent's place (from
    /// `NodeTable::place`) and the path's hash (`NodeTable::hash`) found.
    fn delete_found(
        &mut self,
        zxid: i64,
        path: &str,
        parent_at: Option<u32>,
        hash: u64,
        events: &mut Vec<TreeEvent>,
    ) {
        let (parent_path, child) = path::split(path).expect("deleted paths have a parent");
        let parent_key = Self::key(parent_path);
        self.save(parent_key);
        self.save(path);
        let parent_acl = match parent_at.map(|at| self.nodes.at_mut(at)) {
            Some(parent) => {
                parent.remove_child(path);
                if zxid > parent.pzxid {
                    parent.pzxid = zxid;
                }
                parent.acl.clone()
            }
            None => self.open_acl.clone(),
        };
        let removed = self.remove_hashed(hash, path);
        let bytes = removed
            .as_ref()
            .and_then(|(_, n)| n.data.as_ref())
            .map_or(0, |d| d.len() as i64);
        let (key, acl) = match removed {
            Some((key, n)) => (key, n.acl),
            None => (path.into(), self.open_acl.clone()),
        };
        self.quota_deleted(parent_key, child, path, bytes);
        events.push(TreeEvent::Deleted {
            path: key,
            acl,
            parent_acl,
        });
    }

    /// setData: BADARGUMENTS, NONODE, NOAUTH (WRITE), BADVERSION.
    #[allow(clippy::too_many_arguments)]
    pub fn set_data(
        &mut self,
        zxid: i64,
        time: i64,
        path: &str,
        data: Option<Bytes>,
        version: i32,
        caller: Caller<'_>,
        events: &mut Vec<TreeEvent>,
    ) -> Result<Stat, ErrorCode> {
        if !path::is_valid(path) {
            return Err(ErrorCode::BadArguments);
        }
        // The node is found once, by its place, for the checks and the change.
        let at = self.nodes.place(Self::key(path)).ok_or(ErrorCode::NoNode)?;
        let node = self.nodes.at(at);
        acl::check(&node.acl, perms::WRITE, caller.auth)?;
        if version != -1 && version != node.version {
            return Err(ErrorCode::BadVersion);
        }
        self.save(path);
        let (key, node) = self.nodes.at_key_mut(at);
        let key = key.clone();
        let len = |d: &Option<Bytes>| d.as_ref().map_or(0, |d| d.len() as i64);
        let bytes_diff = len(&data) - len(&node.data);
        node.data = data;
        node.version = node.version.wrapping_add(1);
        node.mzxid = zxid;
        node.mtime = time;
        let stat = node.stat();
        let acl = node.acl.clone();
        self.quota_data_changed(path, bytes_diff);
        events.push(TreeEvent::DataChanged { path: key, acl });
        Ok(stat)
    }

    /// setACL: BADARGUMENTS, INVALIDACL, NONODE, NOAUTH (ADMIN), BADVERSION on aversion.
    pub fn set_acl(
        &mut self,
        path: &str,
        acl: &[Acl],
        version: i32,
        caller: Caller<'_>,
    ) -> Result<Stat, ErrorCode> {
        if !path::is_valid(path) {
            return Err(ErrorCode::BadArguments);
        }
        let acl = acl::fixup(acl, caller.auth)?;
        let node = self.get(path).ok_or(ErrorCode::NoNode)?;
        acl::check(&node.acl, perms::ADMIN, caller.auth)?;
        if version != -1 && version != node.aversion {
            return Err(ErrorCode::BadVersion);
        }
        self.save(path);
        let open = self.open_acl.clone();
        let node = self.nodes.get_mut(Self::key(path)).expect("checked above");
        node.acl = if acl[..] == open[..] {
            open
        } else {
            acl.into()
        };
        // `checkAndIncVersion` stores `version + 1` of the *current* aversion.
        node.aversion = node.aversion.wrapping_add(1);
        Ok(node.stat())
    }

    /// check (multi only): BADARGUMENTS, NONODE, NOAUTH (READ), BADVERSION.
    pub fn check(&self, path: &str, version: i32, caller: Caller<'_>) -> Result<(), ErrorCode> {
        if !path::is_valid(path) {
            return Err(ErrorCode::BadArguments);
        }
        let node = self.get(path).ok_or(ErrorCode::NoNode)?;
        acl::check(&node.acl, perms::READ, caller.auth)?;
        if version != -1 && version != node.version {
            return Err(ErrorCode::BadVersion);
        }
        Ok(())
    }

    /// getData / getChildren / getACL read check: NONODE, then the permission.
    pub fn read(&self, path: &str, perm: i32, caller: Caller<'_>) -> Result<&Node, ErrorCode> {
        let node = self.get(path).ok_or(ErrorCode::NoNode)?;
        acl::check(&node.acl, perm, caller.auth)?;
        Ok(node)
    }

    /// Sets a node's stored cversion — its count of child creations, which is
    /// also the next sequential suffix. False if there is no such node.
    pub fn set_sequence_counter(&mut self, path: &str, next: i32) -> bool {
        match self.nodes.get_mut(Self::key(path)) {
            Some(n) => {
                n.cversion = next;
                true
            }
            None => false,
        }
    }

    /// Deletes a session's ephemerals in one transaction (`DataTree.killSession`).
    pub fn kill_session(&mut self, zxid: i64, session: i64, events: &mut Vec<TreeEvent>) {
        // `PrepRequestProcessor` lists them from a clone of the set.
        let paths: Vec<String> = self.ephemerals_of(session).map(String::from).collect();
        self.ephemerals.remove(&session);
        self.ephemerals.shrink_if_sparse();
        for path in paths {
            if self.nodes.contains_key(&path) {
                self.delete_node(zxid, &path, events);
            }
        }
    }
}

/// Whether the container check looks at a node of this kind.
fn is_reapable(kind: NodeKind) -> bool {
    matches!(kind, NodeKind::Container | NodeKind::Ttl(_))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: Caller<'static> = Caller {
        session: 7,
        auth: &[],
    };

    fn create(t: &mut DataTree, path: &str, flags: i32) -> Result<String, ErrorCode> {
        create_ttl(t, path, flags, 0)
    }

    /// [`create`] with a TTL (for the TTL modes), at time 0.
    fn create_ttl(t: &mut DataTree, path: &str, flags: i32, ttl: i64) -> Result<String, ErrorCode> {
        let zxid = t.next_zxid();
        let open = Acl::open_unsafe();
        let args = CreateArgs {
            path: path.into(),
            data: None,
            acl: &open,
            mode: CreateMode::from_flags(flags)?,
            ttl,
        };
        t.create(zxid, 0, args, ME, &mut Vec::new())
            .map(|(p, _)| p.to_string())
    }

    /// The container check looks at the containers and TTL nodes alone, as
    /// `ContainerManager.getCandidates` does, and what it looks at follows
    /// every create, delete and rolled-back multi.
    #[test]
    fn the_container_check_sees_every_container_and_ttl_node_and_nothing_else() {
        let mut t = DataTree::new();
        let delete = |t: &mut DataTree, path: &str| {
            let zxid = t.next_zxid();
            t.delete(zxid, path, -1, ME, &mut Vec::new())
        };
        // A container and a persistent node that each had a child, and a TTL node.
        for (path, flags) in [("/c", 4), ("/p", 0)] {
            create(&mut t, path, flags).unwrap();
            create(&mut t, &format!("{path}/x"), 0).unwrap();
            delete(&mut t, &format!("{path}/x")).unwrap();
        }
        create_ttl(&mut t, "/t", 5, 10).unwrap();
        assert_eq!(t.reap_candidates(100), ["/c", "/t"]);
        assert_eq!(t.reap_candidates(5), ["/c"], "the TTL has not run out");
        assert_eq!(t.reapable.len(), 2);

        // A multi that deletes the container, makes a persistent node in its
        // place and fails: the container is back, and still looked at.
        t.begin();
        delete(&mut t, "/c").unwrap();
        create(&mut t, "/c", 0).unwrap();
        assert_eq!(t.reap_candidates(100), ["/t"]);
        t.rollback();
        assert_eq!(t.reap_candidates(100), ["/c", "/t"]);

        // A multi that deletes a persistent node, makes a container in its
        // place and fails: the persistent node is back, and not looked at.
        t.begin();
        delete(&mut t, "/p").unwrap();
        create(&mut t, "/p", 4).unwrap();
        assert_eq!(t.reapable.len(), 3);
        t.rollback();
        assert_eq!(t.get("/p").unwrap().kind, NodeKind::Persistent);
        assert_eq!(t.reapable.len(), 2);

        // A multi that makes a container and fails leaves nothing behind.
        t.begin();
        create(&mut t, "/d", 4).unwrap();
        t.rollback();
        assert!(t.get("/d").is_none());
        assert_eq!(t.reapable.len(), 2);

        // Deleted nodes are gone from it.
        delete(&mut t, "/c").unwrap();
        delete(&mut t, "/t").unwrap();
        assert!(t.reap_candidates(100).is_empty());
        assert!(t.reapable.is_empty());
    }

    #[test]
    fn tables_give_their_memory_back_after_a_peak() {
        let mut t = DataTree::new();
        create(&mut t, "/a", 0).unwrap();
        for i in 0..10_000 {
            create(&mut t, &format!("/a/e{i}"), 1).unwrap();
        }
        assert!(t.nodes.capacity() > 10_000);
        let parent_seq = |t: &DataTree| t.nodes["/a"].children.capacity();
        assert!(parent_seq(&t) > 10_000);
        for i in 0..10_000 {
            let zxid = t.next_zxid();
            t.delete(zxid, &format!("/a/e{i}"), -1, ME, &mut Vec::new())
                .unwrap();
        }
        assert!(t.nodes.capacity() <= crate::compact::MIN_CAPACITY);
        assert!(t.nodes.places() <= 2 * crate::compact::MIN_CAPACITY);
        assert!(parent_seq(&t) <= crate::compact::MIN_CAPACITY);
        assert!(t.ephemerals.is_empty());
        assert!(t.ephemerals.capacity() <= crate::compact::MIN_CAPACITY);
    }

    #[test]
    fn children_are_listed_and_tested_by_name_under_any_parent() {
        let mut t = DataTree::new();
        create(&mut t, "/a", 0).unwrap();
        create(&mut t, "/a/b", 0).unwrap();
        create(&mut t, "/a/b/c", 0).unwrap();
        create(&mut t, "/x", 0).unwrap();
        let names = |p: &str| t.get(p).unwrap().children.sorted().join(",");
        assert_eq!(names("/"), "a,x,zookeeper");
        assert_eq!(names("/a"), "b");
        assert_eq!(names("/zookeeper"), "config,quota");
        assert_eq!(&*t.get("/a/b").unwrap().listing(), ["c".to_string()]);
        let root = &t.get("/").unwrap().children;
        assert!(root.contains("a") && root.contains("zookeeper"));
        assert!(!root.contains("b") && !root.contains("/a") && !root.contains(""));
        let a = &t.get("/a").unwrap().children;
        assert!(a.contains("b") && !a.contains("c") && !a.contains("a"));
        let z = t.next_zxid();
        t.delete(z, "/a/b/c", -1, ME, &mut Vec::new()).unwrap();
        let b = &t.get("/a/b").unwrap().children;
        assert!(!b.contains("c") && b.is_empty());
        assert!(!t.get("/x").unwrap().children.contains("x"));
    }

    #[test]
    fn fresh_tree_matches_zookeeper() {
        let t = DataTree::new();
        assert_eq!(t.node_count(), 5);
        let root = t.get("/").unwrap().stat();
        assert_eq!((root.cversion, root.num_children), (-1, 1));
        assert_eq!(t.get("/zookeeper").unwrap().stat().cversion, -2);
        assert_eq!(t.get("/zookeeper/config").unwrap().stat().aversion, -1);
        assert!(t.get("").is_some(), "\"\" is the root's alias");
    }

    #[test]
    fn reported_cversion_counts_creates_and_deletes_but_suffix_counts_creates() {
        let mut t = DataTree::new();
        create(&mut t, "/p", 0).unwrap();
        for _ in 0..3 {
            create(&mut t, "/p/s", 2).unwrap();
        }
        for n in ["/p/s0000000000", "/p/s0000000001"] {
            let z = t.next_zxid();
            t.delete(z, n, -1, ME, &mut Vec::new()).unwrap();
        }
        let s = t.get("/p").unwrap().stat();
        assert_eq!((s.cversion, s.num_children), (5, 1));
        assert_eq!(create(&mut t, "/p/s", 2).unwrap(), "/p/s0000000003");
        assert_eq!(
            t.get("/").unwrap().stat().cversion,
            0,
            "one create under a fresh root"
        );
    }

    #[test]
    fn create_checks_run_in_zookeeper_order() {
        let mut t = DataTree::new();
        assert_eq!(create(&mut t, "/", 0), Err(ErrorCode::NodeExists));
        assert_eq!(create(&mut t, "", 0), Err(ErrorCode::BadArguments));
        assert_eq!(create(&mut t, "/a//b", 0), Err(ErrorCode::NoNode));
        create(&mut t, "/foo", 0).unwrap();
        assert_eq!(create(&mut t, "/foo/", 0), Err(ErrorCode::BadArguments));
        assert_eq!(create(&mut t, "/foo/", 2).unwrap(), "/foo/0000000000");
        assert_eq!(
            create(&mut t, "/zookeeper/config/x", 0),
            Err(ErrorCode::NoAuth)
        );
        assert_eq!(create(&mut t, "/e", 1).unwrap(), "/e");
        assert_eq!(
            create(&mut t, "/e", 1),
            Err(ErrorCode::NodeExists),
            "NodeExists before NoChildrenForEphemerals"
        );
        assert_eq!(
            create(&mut t, "/e/c", 0),
            Err(ErrorCode::NoChildrenForEphemerals)
        );
        assert_eq!(create(&mut t, "/x", 7), Err(ErrorCode::BadArguments));
    }

    #[test]
    fn delete_checks_run_in_zookeeper_order() {
        let mut t = DataTree::new();
        create(&mut t, "/a", 0).unwrap();
        create(&mut t, "/a/b", 0).unwrap();
        let mut ev = Vec::new();
        assert_eq!(
            t.delete(9, "/zookeeper", -1, ME, &mut ev),
            Err(ErrorCode::BadArguments)
        );
        assert_eq!(t.delete(9, "/x/y", -1, ME, &mut ev), Err(ErrorCode::NoNode));
        assert_eq!(
            t.delete(9, "/a", 5, ME, &mut ev),
            Err(ErrorCode::BadVersion),
            "BadVersion wins over NotEmpty"
        );
        assert_eq!(t.delete(9, "/a", 0, ME, &mut ev), Err(ErrorCode::NotEmpty));
        assert!(ev.is_empty());
    }

    #[test]
    fn rollback_restores_nodes_counters_and_ephemerals() {
        let mut t = DataTree::new();
        create(&mut t, "/a", 0).unwrap();
        let before = t.get("/a").unwrap().stat();
        t.begin();
        create(&mut t, "/a/s", 3).unwrap();
        let z = t.next_zxid();
        t.set_data(
            z,
            0,
            "/a",
            Some(Bytes::from_static(b"x")),
            -1,
            ME,
            &mut Vec::new(),
        )
        .unwrap();
        t.rollback();
        assert_eq!(t.get("/a").unwrap().stat(), before);
        assert!(t.get("/a/s0000000000").is_none());
        assert_eq!(t.ephemerals_of(7).count(), 0);
        assert_eq!(
            create(&mut t, "/a/s", 2).unwrap(),
            "/a/s0000000000",
            "the counter was rolled back too"
        );
    }

    /// Regression (conformance D7): a rolled-back multi that touched an
    /// ephemeral dropped it from its session's index, so closeSession leaked it.
    #[test]
    fn rollback_over_an_ephemeral_keeps_it_owned() {
        let mut t = DataTree::new();
        create(&mut t, "/e", 1).unwrap();
        t.begin();
        let z = t.next_zxid();
        t.set_data(z, 0, "/e", None, -1, ME, &mut Vec::new())
            .unwrap();
        t.delete(z, "/e", -1, ME, &mut Vec::new()).unwrap();
        t.rollback();
        assert_eq!(t.ephemerals_of(7).collect::<Vec<_>>(), vec!["/e"]);
        let mut ev = Vec::new();
        t.kill_session(t.last_zxid() + 1, 7, &mut ev);
        assert!(t.get("/e").is_none());
    }

    #[test]
    fn kill_session_deletes_only_that_sessions_ephemerals() {
        let mut t = DataTree::new();
        create(&mut t, "/e1", 1).unwrap();
        create(&mut t, "/p", 0).unwrap();
        let mut ev = Vec::new();
        let z = t.next_zxid();
        t.kill_session(z, 7, &mut ev);
        assert_eq!(
            ev.iter().map(TreeEvent::path).collect::<Vec<_>>(),
            vec!["/e1"]
        );
        assert!(t.get("/p").is_some());
        assert_eq!(t.get("/").unwrap().pzxid, z);
    }
}
