//! Watches, owned by connections as in ZooKeeper (`WatchManager`): a data table
//! (getData, exists — even on a missing node) and a child table (getChildren),
//! at most one entry per (connection, path, table), one-shot; and the
//! persistent and persistent-recursive watches of `addWatch`, which stay
//! until removed.

use serde::Serialize;

use crate::hash::Map;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::compact::Sparse;
use crate::proto::event_type::*;
use crate::proto::Acl;
use crate::session::ConnId;
use crate::tree::{path, DataTree, TreeEvent};
use crate::Compat;

/// Which watch fired or was registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum WatchKind {
    /// getData's one-shot watch (or exists' on an existing node).
    Data,
    /// exists' one-shot watch on a node that did not exist.
    Exist,
    /// getChildren's one-shot watch.
    Child,
    /// addWatch mode 0.
    Persistent,
    /// addWatch mode 1.
    PersistentRecursive,
}

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
    /// The node's path, shared by every watcher one event notifies.
    pub(crate) path: Arc<str>,
}

/// The watch modes one connection holds on one path in one table: on 3.8 at
/// most one (`WatcherModeManager`: a new registration replaces the old
/// mode), on 3.9 any combination (`WatchStats`, ZOOKEEPER-4466).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Modes {
    /// A one-shot watch, and the request that set it (getData, exists on a
    /// missing node, getChildren).
    standard: Option<WatchKind>,
    /// addWatch mode 0: stays; fires for the path itself only.
    persistent: bool,
    /// addWatch mode 1: stays; fires for the path and every descendant,
    /// never with NodeChildrenChanged.
    recursive: bool,
}

impl Modes {
    fn of(kind: WatchKind) -> Modes {
        let mut m = Modes::default();
        m.set(kind);
        m
    }

    fn set(&mut self, kind: WatchKind) {
        match kind {
            WatchKind::Persistent => self.persistent = true,
            WatchKind::PersistentRecursive => self.recursive = true,
            k => self.standard = Some(k),
        }
    }

    fn unset(&mut self, kind: WatchKind) {
        match kind {
            WatchKind::Persistent => self.persistent = false,
            WatchKind::PersistentRecursive => self.recursive = false,
            _ => self.standard = None,
        }
    }

    fn is_empty(&self) -> bool {
        *self == Modes::default()
    }

    /// Each mode held, as the kind the recorder and snapshots name.
    fn kinds(&self) -> impl Iterator<Item = WatchKind> {
        let standard = self.standard;
        let persistent = self.persistent.then_some(WatchKind::Persistent);
        let recursive = self.recursive.then_some(WatchKind::PersistentRecursive);
        standard.into_iter().chain(persistent).chain(recursive)
    }

    /// The kind to name when the entry fires: the one-shot watch if there is one.
    fn first(&self) -> WatchKind {
        self.kinds().next().unwrap_or(WatchKind::Data)
    }
}

/// Every watch of every connection.
#[derive(Debug, Default)]
pub(crate) struct WatchManager {
    data: Map<String, BTreeMap<ConnId, Modes>>,
    child: Map<String, BTreeMap<ConnId, Modes>>,
    by_conn: Map<ConnId, BTreeSet<(Table, String)>>,
    /// Entries holding a recursive mode, per table; when 0, triggers skip the ancestor walk.
    recursive: [usize; 2],
    /// Registrations since the last [`take_registered`](Self::take_registered), for the recorder.
    registered: Vec<(String, WatchKind)>,
    /// 3.9's watch semantics instead of 3.8's.
    v39: bool,
}

impl WatchManager {
    /// An empty manager with the watch semantics of `compat`.
    pub(crate) fn new(compat: Compat) -> WatchManager {
        WatchManager {
            v39: compat == Compat::V3_9,
            ..WatchManager::default()
        }
    }

    fn table(&mut self, t: Table) -> &mut Map<String, BTreeMap<ConnId, Modes>> {
        match t {
            Table::Data => &mut self.data,
            Table::Child => &mut self.child,
        }
    }

    fn count_mode(&mut self, t: Table, old: Option<Modes>, new: Option<Modes>) {
        let i = t as usize;
        if old.is_some_and(|m| m.recursive) {
            self.recursive[i] -= 1;
        }
        if new.is_some_and(|m| m.recursive) {
            self.recursive[i] += 1;
        }
    }

    /// Registers a watch; registering the same one twice is the same as once.
    /// On 3.8 a registration replaces the mode a connection had on that path
    /// and table (`WatcherModeManager`: a standard getData/getChildren watch
    /// downgrades a persistent one to one-shot); on 3.9 modes add up.
    pub(crate) fn add(&mut self, table: Table, path: &str, conn: ConnId, kind: WatchKind) {
        let v39 = self.v39;
        let entry = self
            .table(table)
            .entry(path.to_string())
            .or_default()
            .entry(conn)
            .or_default();
        let old = *entry;
        if v39 {
            entry.set(kind);
        } else {
            *entry = Modes::of(kind);
        }
        let new = *entry;
        self.count_mode(table, (!old.is_empty()).then_some(old), Some(new));
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

    /// Removes `only` this mode of this connection's entry (every mode if
    /// `None`); whether the entry changed.
    fn remove_entry(
        &mut self,
        table: Table,
        path: &str,
        conn: ConnId,
        only: Option<WatchKind>,
    ) -> bool {
        let t = self.table(table);
        let Some(map) = t.get_mut(path) else {
            return false;
        };
        let Some(old) = map.get(&conn).copied() else {
            return false;
        };
        let mut new = old;
        match only {
            Some(kind) => new.unset(kind),
            None => new = Modes::default(),
        }
        if new == old {
            return false;
        }
        if new.is_empty() {
            map.remove(&conn);
            if map.is_empty() {
                t.remove(path);
                t.shrink_if_sparse();
            }
            if let Some(set) = self.by_conn.get_mut(&conn) {
                set.remove(&(table, path.to_string()));
            }
            self.count_mode(table, Some(old), None);
        } else {
            map.insert(conn, new);
            self.count_mode(table, Some(old), Some(new));
        }
        true
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
                    t.shrink_if_sparse();
                }
            }
            self.count_mode(table, old, None);
        }
        self.by_conn.shrink_if_sparse();
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
                for (&conn, modes) in map {
                    if at_parent {
                        if modes.recursive && event_type != NODE_CHILDREN_CHANGED {
                            found.entry(conn).or_insert(WatchKind::PersistentRecursive);
                        }
                        continue;
                    }
                    // 3.8 keeps recursive watches in the child table too, where
                    // NodeChildrenChanged must not fire them (3.9 keeps them in
                    // the data table only).
                    if modes.recursive
                        && !modes.persistent
                        && modes.standard.is_none()
                        && event_type == NODE_CHILDREN_CHANGED
                    {
                        continue;
                    }
                    found.entry(conn).or_insert(modes.first());
                    if modes.standard.is_some() {
                        fired_standard.push(conn);
                    }
                }
            }
            for conn in fired_standard {
                // Only the one-shot mode goes; persistent modes held beside it (3.9) stay.
                self.remove_entry(table, lp, conn, Some(WatchKind::Data));
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
        if self.data.is_empty() && self.child.is_empty() {
            // Nobody watches anything: no event can fire.
            return;
        }
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
        if conns.is_empty() {
            return BTreeSet::new();
        }
        let shared: Arc<str> = path.into();
        for (&conn, &kind) in &conns {
            out.push(Notification {
                conn,
                kind,
                event_type,
                path: shared.clone(),
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
                path: path.into(),
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

    /// addWatch, and SetWatches2's persistent lists: 3.8 registers either mode
    /// in both tables, 3.9 a recursive one in the data table only. Missed
    /// events are not replayed.
    pub(crate) fn add_persistent(&mut self, path: &str, conn: ConnId, recursive: bool) {
        let kind = if recursive {
            WatchKind::PersistentRecursive
        } else {
            WatchKind::Persistent
        };
        self.add(Table::Data, path, conn, kind);
        if !(recursive && self.v39) {
            self.add(Table::Child, path, conn, kind);
        }
    }

    /// Every (table, path, connection, kind) entry, for snapshots: one per mode held.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (Table, &str, ConnId, WatchKind)> + '_ {
        let data = self.data.iter().flat_map(|(p, m)| {
            m.iter()
                .flat_map(move |(c, k)| k.kinds().map(move |k| (Table::Data, p.as_str(), *c, k)))
        });
        let child = self.child.iter().flat_map(|(p, m)| {
            m.iter()
                .flat_map(move |(c, k)| k.kinds().map(move |k| (Table::Child, p.as_str(), *c, k)))
        });
        data.chain(child)
    }

    /// Which (table, mode) pairs a `WatcherType` names: 1 children, 2 data,
    /// 3 any (every mode); on 3.9 also 4 persistent and 5 persistent
    /// recursive (ZOOKEEPER-4471). On 3.8 the one-shot types name a table
    /// whatever mode its entry has.
    fn selection(&self, watcher_type: i32) -> Option<&'static [(Table, Option<WatchKind>)]> {
        const STD: Option<WatchKind> = Some(WatchKind::Data);
        Some(match (watcher_type, self.v39) {
            (1, false) => &[(Table::Child, None)],
            (2, false) => &[(Table::Data, None)],
            (1, true) => &[(Table::Child, STD)],
            (2, true) => &[(Table::Data, STD)],
            (3, _) => &[(Table::Child, None), (Table::Data, None)],
            (4, true) => &[
                (Table::Child, Some(WatchKind::Persistent)),
                (Table::Data, Some(WatchKind::Persistent)),
            ],
            (5, true) => &[(Table::Data, Some(WatchKind::PersistentRecursive))],
            _ => return None,
        })
    }

    /// checkWatches: `None` for an unknown watcher type. On 3.8 whether *any*
    /// connection watches exactly `path` in the table(s) (3.8's
    /// `WatchManager.containsWatcher` looks at the path's watcher set, not at
    /// the asking connection); on 3.9 whether this connection holds the mode.
    pub(crate) fn check(&self, watcher_type: i32, path: &str, conn: ConnId) -> Option<bool> {
        let sel = self.selection(watcher_type)?;
        let table = |t: Table| match t {
            Table::Data => &self.data,
            Table::Child => &self.child,
        };
        if !self.v39 {
            return Some(sel.iter().any(|(t, _)| table(*t).contains_key(path)));
        }
        // 4 (persistent) is looked up in the data table only (`DataTree.containsWatcher`).
        let sel: &[(Table, Option<WatchKind>)] = if watcher_type == 4 { &sel[1..] } else { sel };
        Some(sel.iter().any(|(t, only)| {
            table(*t)
                .get(path)
                .and_then(|m| m.get(&conn))
                .is_some_and(|m| match only {
                    None => !m.is_empty(),
                    Some(WatchKind::Persistent) => m.persistent,
                    Some(WatchKind::PersistentRecursive) => m.recursive,
                    Some(_) => m.standard.is_some(),
                })
        }))
    }

    /// removeWatches: drops this connection's watch on exactly `path` as the
    /// watcher type selects; `None` for an unknown type, else whether anything
    /// was removed.
    pub(crate) fn remove(&mut self, watcher_type: i32, path: &str, conn: ConnId) -> Option<bool> {
        let sel = self.selection(watcher_type)?;
        let mut removed = false;
        for &(t, only) in sel {
            removed |= self.remove_entry(t, path, conn, only);
        }
        Some(removed)
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
            .map(|n| (n.conn, n.event_type, &*n.path))
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
            .map(|n| (n.conn, n.event_type, &*n.path))
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
