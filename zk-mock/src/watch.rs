//! Watches, owned by connections as in ZooKeeper (`WatchManager`): a data table
//! (getData, exists — even on a missing node) and a child table (getChildren),
//! at most one entry per (connection, path, table), one-shot.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use crate::proto::event_type::*;
use crate::proto::Acl;
use crate::record::WatchKind;
use crate::session::ConnId;
use crate::tree::{path, DataTree, TreeEvent};

/// Which server-side table a watch lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Table {
    /// getData and exists watches.
    Data,
    /// getChildren watches.
    Child,
}

/// A notification due to one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Notification {
    /// The connection to notify.
    pub(crate) conn: ConnId,
    /// The kind of watch that fired (the registration's, for SetWatches replays).
    pub(crate) kind: WatchKind,
    /// Who may hear of it: the connection needs READ on this ACL. `None` for
    /// SetWatches replays, which ZooKeeper does not filter.
    pub(crate) acl: Option<Arc<[Acl]>>,
    /// `EventType` (1–4).
    pub(crate) event_type: i32,
    /// The node's path.
    pub(crate) path: String,
}

/// How a watch fires (`WatcherMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// One-shot: removed when it fires.
    Standard,
    /// addWatch mode 0: stays; fires for the path itself only.
    Persistent,
    /// addWatch mode 1: stays; fires for the path and every descendant,
    /// never with NodeChildrenChanged.
    PersistentRecursive,
}

fn mode(kind: WatchKind) -> Mode {
    match kind {
        WatchKind::Persistent => Mode::Persistent,
        WatchKind::PersistentRecursive => Mode::PersistentRecursive,
        _ => Mode::Standard,
    }
}

/// Every watch of every connection.
#[derive(Debug, Default)]
pub(crate) struct WatchManager {
    data: HashMap<String, BTreeMap<ConnId, WatchKind>>,
    child: HashMap<String, BTreeMap<ConnId, WatchKind>>,
    by_conn: HashMap<ConnId, BTreeSet<(Table, String)>>,
    /// Recursive entries per table; when 0, triggers skip the ancestor walk.
    recursive: [usize; 2],
    /// Registrations since the last [`take_registered`](Self::take_registered), for the recorder.
    registered: Vec<(String, WatchKind)>,
}

impl WatchManager {
    fn table(&mut self, t: Table) -> &mut HashMap<String, BTreeMap<ConnId, WatchKind>> {
        match t {
            Table::Data => &mut self.data,
            Table::Child => &mut self.child,
        }
    }

    fn count_mode(&mut self, t: Table, old: Option<WatchKind>, new: Option<WatchKind>) {
        let i = t as usize;
        if old == Some(WatchKind::PersistentRecursive) {
            self.recursive[i] -= 1;
        }
        if new == Some(WatchKind::PersistentRecursive) {
            self.recursive[i] += 1;
        }
    }

    /// Registers a watch; registering the same one twice is the same as once.
    /// As in 3.8's `WatcherModeManager`, a registration replaces the mode a
    /// connection had on that path and table: a standard getData/getChildren
    /// watch downgrades a persistent one to one-shot (fixed in 3.9).
    pub(crate) fn add(&mut self, table: Table, path: &str, conn: ConnId, kind: WatchKind) {
        let old = self
            .table(table)
            .entry(path.to_string())
            .or_default()
            .insert(conn, kind);
        self.count_mode(table, old, Some(kind));
        self.by_conn
            .entry(conn)
            .or_default()
            .insert((table, path.to_string()));
        // Persistent watches go into both tables; record them once.
        if table == Table::Data || kind == WatchKind::Child {
            self.registered.push((path.to_string(), kind));
        }
    }

    /// The registrations made since the last call.
    pub(crate) fn take_registered(&mut self) -> Vec<(String, WatchKind)> {
        std::mem::take(&mut self.registered)
    }

    fn remove_entry(&mut self, table: Table, path: &str, conn: ConnId) -> bool {
        let t = self.table(table);
        let Some(map) = t.get_mut(path) else {
            return false;
        };
        let old = map.remove(&conn);
        if map.is_empty() {
            t.remove(path);
        }
        self.count_mode(table, old, None);
        if let Some(set) = self.by_conn.get_mut(&conn) {
            set.remove(&(table, path.to_string()));
        }
        old.is_some()
    }

    /// Drops every watch of a closed connection (`DataTree.removeCnxn`).
    pub(crate) fn remove_conn(&mut self, conn: ConnId) {
        for (table, path) in self.by_conn.remove(&conn).into_iter().flatten() {
            let t = self.table(table);
            let mut old = None;
            if let Some(map) = t.get_mut(&path) {
                old = map.remove(&conn);
                if map.is_empty() {
                    t.remove(&path);
                }
            }
            self.count_mode(table, old, None);
        }
    }

    /// `WatchManager.triggerWatch`: the connections to tell about `event_type`
    /// on `path`, skipping `suppress`, one each. Standard watches on the path
    /// fire and are removed; persistent ones fire and stay; recursive ones on
    /// the path or any ancestor fire for everything but NodeChildrenChanged.
    fn trigger(
        &mut self,
        table: Table,
        path: &str,
        event_type: i32,
        suppress: &BTreeSet<ConnId>,
    ) -> BTreeMap<ConnId, WatchKind> {
        let mut found = BTreeMap::new();
        let walk_up = self.recursive[table as usize] > 0;
        let mut local = Some(path);
        while let Some(lp) = local {
            let at_parent = lp != path;
            let mut fired_standard = Vec::new();
            if let Some(map) = self.table(table).get(lp) {
                for (&conn, &kind) in map {
                    match mode(kind) {
                        Mode::PersistentRecursive => {
                            if event_type != NODE_CHILDREN_CHANGED {
                                found.entry(conn).or_insert(kind);
                            }
                        }
                        _ if at_parent => {}
                        Mode::Persistent => {
                            found.entry(conn).or_insert(kind);
                        }
                        Mode::Standard => {
                            found.entry(conn).or_insert(kind);
                            fired_standard.push(conn);
                        }
                    }
                }
            }
            for conn in fired_standard {
                self.remove_entry(table, lp, conn);
            }
            local = if walk_up { parent(lp) } else { None };
        }
        found.retain(|c, _| !suppress.contains(c));
        found
    }

    /// Turns tree events into notifications, in ZooKeeper's order:
    /// create → NodeCreated (data table) then the parent's NodeChildrenChanged;
    /// delete → NodeDeleted (data table), NodeDeleted (child table, skipping
    /// connections already told), then the parent's NodeChildrenChanged;
    /// setData → NodeDataChanged.
    pub(crate) fn fire(&mut self, events: &[TreeEvent], out: &mut Vec<Notification>) {
        let none = BTreeSet::new();
        for ev in events {
            match ev {
                TreeEvent::Created {
                    path: p,
                    acl,
                    parent_acl,
                } => {
                    self.emit(Table::Data, p, NODE_CREATED, &none, acl, out);
                    let parent = path::parent_for_event(p);
                    self.emit(
                        Table::Child,
                        parent,
                        NODE_CHILDREN_CHANGED,
                        &none,
                        parent_acl,
                        out,
                    );
                }
                TreeEvent::Deleted {
                    path: p,
                    acl,
                    parent_acl,
                } => {
                    let told = self.emit(Table::Data, p, NODE_DELETED, &none, acl, out);
                    self.emit(Table::Child, p, NODE_DELETED, &told, acl, out);
                    let parent = path::parent_for_event(p);
                    self.emit(
                        Table::Child,
                        parent,
                        NODE_CHILDREN_CHANGED,
                        &none,
                        parent_acl,
                        out,
                    );
                }
                TreeEvent::DataChanged { path: p, acl } => {
                    self.emit(Table::Data, p, NODE_DATA_CHANGED, &none, acl, out);
                }
            }
        }
    }

    fn emit(
        &mut self,
        table: Table,
        path: &str,
        event_type: i32,
        suppress: &BTreeSet<ConnId>,
        acl: &Arc<[Acl]>,
        out: &mut Vec<Notification>,
    ) -> BTreeSet<ConnId> {
        let conns = self.trigger(table, path, event_type, suppress);
        for (&conn, &kind) in &conns {
            out.push(Notification {
                conn,
                kind,
                event_type,
                path: path.to_string(),
                acl: Some(acl.clone()),
            });
        }
        conns.into_keys().collect()
    }

    /// `DataTree.setWatches`: re-registers a reconnected client's watches,
    /// firing at once the events it missed since `relative_zxid`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn set_watches(
        &mut self,
        tree: &DataTree,
        conn: ConnId,
        relative_zxid: i64,
        data: &[String],
        exist: &[String],
        child: &[String],
        out: &mut Vec<Notification>,
    ) {
        let mut note = |event_type, path: &str, kind| {
            // SetWatches events carry no ACL: ZooKeeper does not filter them.
            out.push(Notification {
                conn,
                kind,
                event_type,
                path: path.to_string(),
                acl: None,
            })
        };
        for p in data {
            match tree.get(p) {
                None => note(NODE_DELETED, p, WatchKind::Data),
                Some(n) if n.mzxid > relative_zxid => note(NODE_DATA_CHANGED, p, WatchKind::Data),
                Some(_) => self.add(Table::Data, p, conn, WatchKind::Data),
            }
        }
        for p in exist {
            match tree.get(p) {
                Some(_) => note(NODE_CREATED, p, WatchKind::Exist),
                None => self.add(Table::Data, p, conn, WatchKind::Exist),
            }
        }
        for p in child {
            match tree.get(p) {
                None => note(NODE_DELETED, p, WatchKind::Child),
                Some(n) if n.pzxid > relative_zxid => {
                    note(NODE_CHILDREN_CHANGED, p, WatchKind::Child)
                }
                Some(_) => self.add(Table::Child, p, conn, WatchKind::Child),
            }
        }
    }

    /// addWatch, and SetWatches2's persistent lists: 3.8 registers the mode in
    /// both tables. Missed events are not replayed.
    pub(crate) fn add_persistent(&mut self, path: &str, conn: ConnId, recursive: bool) {
        let kind = if recursive {
            WatchKind::PersistentRecursive
        } else {
            WatchKind::Persistent
        };
        self.add(Table::Data, path, conn, kind);
        self.add(Table::Child, path, conn, kind);
    }

    /// Every (table, path, connection, kind) entry, for snapshots.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (Table, &str, ConnId, WatchKind)> + '_ {
        let data = self.data.iter().flat_map(|(p, m)| {
            m.iter()
                .map(move |(c, k)| (Table::Data, p.as_str(), *c, *k))
        });
        let child = self.child.iter().flat_map(|(p, m)| {
            m.iter()
                .map(move |(c, k)| (Table::Child, p.as_str(), *c, *k))
        });
        data.chain(child)
    }

    /// The tables a `WatcherType` names: 1 children, 2 data, 3 any.
    pub(crate) fn tables(watcher_type: i32) -> Option<&'static [Table]> {
        match watcher_type {
            1 => Some(&[Table::Child]),
            2 => Some(&[Table::Data]),
            3 => Some(&[Table::Child, Table::Data]),
            _ => None,
        }
    }

    /// checkWatches: whether *any* connection watches exactly `path` in one of
    /// `tables` (3.8's `WatchManager.containsWatcher` looks at the path's
    /// watcher set, not at the asking connection).
    pub(crate) fn contains(&self, tables: &[Table], path: &str) -> bool {
        tables.iter().any(|t| match t {
            Table::Data => self.data.contains_key(path),
            Table::Child => self.child.contains_key(path),
        })
    }

    /// removeWatches: drops this connection's watch on exactly `path` in each of
    /// `tables`; false if there was none.
    pub(crate) fn remove(&mut self, tables: &[Table], path: &str, conn: ConnId) -> bool {
        let mut removed = false;
        for &t in tables {
            removed |= self.remove_entry(t, path, conn);
        }
        removed
    }

    /// Total number of (connection, path, table) watches.
    pub(crate) fn count(&self) -> usize {
        self.by_conn.values().map(BTreeSet::len).sum()
    }
}

/// The parent of a path for the ancestor walk: "/a/b" → "/a" → "/" → none.
fn parent(p: &str) -> Option<&str> {
    if p == "/" || p.is_empty() {
        return None;
    }
    match p.rfind('/') {
        Some(0) => Some("/"),
        Some(i) => Some(&p[..i]),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Events with open ACLs.
    mod ev {
        use super::*;
        fn open() -> Arc<[Acl]> {
            Acl::open_unsafe().into()
        }
        pub(super) fn created(p: &str) -> TreeEvent {
            TreeEvent::Created {
                path: p.into(),
                acl: open(),
                parent_acl: open(),
            }
        }
        pub(super) fn deleted(p: &str) -> TreeEvent {
            TreeEvent::Deleted {
                path: p.into(),
                acl: open(),
                parent_acl: open(),
            }
        }
        pub(super) fn changed(p: &str) -> TreeEvent {
            TreeEvent::DataChanged {
                path: p.into(),
                acl: open(),
            }
        }
    }

    #[test]
    fn delete_sends_one_node_deleted_per_connection_then_parent_children_changed() {
        let mut w = WatchManager::default();
        w.add(Table::Data, "/a/b", 1, WatchKind::Data);
        w.add(Table::Child, "/a/b", 1, WatchKind::Data);
        w.add(Table::Child, "/a/b", 2, WatchKind::Data);
        w.add(Table::Child, "/a", 2, WatchKind::Data);
        let mut out = Vec::new();
        w.fire(&[ev::deleted("/a/b")], &mut out);
        let got: Vec<_> = out
            .iter()
            .map(|n| (n.conn, n.event_type, n.path.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, NODE_DELETED, "/a/b"),
                (2, NODE_DELETED, "/a/b"),
                (2, NODE_CHILDREN_CHANGED, "/a")
            ]
        );
        assert_eq!(w.count(), 0, "one-shot");
    }

    #[test]
    fn create_under_root_reports_parent_as_slash() {
        let mut w = WatchManager::default();
        w.add(Table::Child, "/", 3, WatchKind::Child);
        w.add(Table::Data, "/x", 3, WatchKind::Data);
        let mut out = Vec::new();
        w.fire(&[ev::created("/x")], &mut out);
        assert_eq!(
            out[0],
            Notification {
                conn: 3,
                kind: WatchKind::Data,
                event_type: NODE_CREATED,
                path: "/x".into(),
                acl: Some(Acl::open_unsafe().into())
            }
        );
        assert_eq!(
            out[1],
            Notification {
                conn: 3,
                kind: WatchKind::Child,
                event_type: NODE_CHILDREN_CHANGED,
                path: "/".into(),
                acl: Some(Acl::open_unsafe().into())
            }
        );
    }

    #[test]
    fn persistent_watches_stay_and_recursive_ones_skip_children_changed() {
        let mut w = WatchManager::default();
        w.add_persistent("/a", 1, false);
        w.add_persistent("/a", 2, true);
        let mut out = Vec::new();
        w.fire(&[ev::created("/a/b"), ev::changed("/a")], &mut out);
        let got: Vec<_> = out
            .iter()
            .map(|n| (n.conn, n.event_type, n.path.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (2, NODE_CREATED, "/a/b"),
                (1, NODE_CHILDREN_CHANGED, "/a"),
                (1, NODE_DATA_CHANGED, "/a"),
                (2, NODE_DATA_CHANGED, "/a")
            ]
        );
        assert_eq!(w.count(), 4, "persistent watches are not consumed");
    }

    #[test]
    fn a_standard_watch_downgrades_a_persistent_one_as_in_3_8() {
        let mut w = WatchManager::default();
        w.add_persistent("/a", 1, false);
        w.add(Table::Data, "/a", 1, WatchKind::Data);
        let mut out = Vec::new();
        w.fire(&[ev::changed("/a")], &mut out);
        w.fire(&[ev::changed("/a")], &mut out);
        assert_eq!(out.len(), 1, "the data-table entry became one-shot");
    }

    #[test]
    fn parent_walks_up_to_the_root() {
        assert_eq!(parent("/a/b"), Some("/a"));
        assert_eq!(parent("/a"), Some("/"));
        assert_eq!(parent("/"), None);
    }

    #[test]
    fn closing_a_connection_drops_its_watches() {
        let mut w = WatchManager::default();
        w.add(Table::Data, "/x", 3, WatchKind::Data);
        w.add(Table::Data, "/x", 3, WatchKind::Data);
        w.add(Table::Data, "/x", 4, WatchKind::Data);
        assert_eq!(w.count(), 2);
        w.remove_conn(3);
        let mut out = Vec::new();
        w.fire(&[ev::changed("/x")], &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].conn, 4);
    }
}
