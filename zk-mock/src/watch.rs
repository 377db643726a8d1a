//! Watches, owned by connections as in ZooKeeper (`WatchManager`): a data table
//! (getData, exists — even on a missing node) and a child table (getChildren),
//! at most one entry per (connection, path, table), one-shot.

use std::collections::{BTreeSet, HashMap};

use crate::proto::event_type::*;
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
    /// `EventType` (1–4).
    pub(crate) event_type: i32,
    /// The node's path.
    pub(crate) path: String,
}

/// Every watch of every connection.
#[derive(Debug, Default)]
pub(crate) struct WatchManager {
    data: HashMap<String, BTreeSet<ConnId>>,
    child: HashMap<String, BTreeSet<ConnId>>,
    by_conn: HashMap<ConnId, BTreeSet<(Table, String)>>,
}

impl WatchManager {
    fn table(&mut self, t: Table) -> &mut HashMap<String, BTreeSet<ConnId>> {
        match t {
            Table::Data => &mut self.data,
            Table::Child => &mut self.child,
        }
    }

    /// Registers a watch; registering it twice is the same as once.
    pub(crate) fn add(&mut self, table: Table, path: &str, conn: ConnId) {
        self.table(table)
            .entry(path.to_string())
            .or_default()
            .insert(conn);
        self.by_conn
            .entry(conn)
            .or_default()
            .insert((table, path.to_string()));
    }

    /// Drops every watch of a closed connection (`DataTree.removeCnxn`).
    pub(crate) fn remove_conn(&mut self, conn: ConnId) {
        for (table, path) in self.by_conn.remove(&conn).into_iter().flatten() {
            let t = self.table(table);
            if let Some(set) = t.get_mut(&path) {
                set.remove(&conn);
                if set.is_empty() {
                    t.remove(&path);
                }
            }
        }
    }

    /// `WatchManager.triggerWatch`: takes the watchers of one table and path,
    /// skipping `suppress`, and returns them (deduplicated, one-shot).
    fn trigger(
        &mut self,
        table: Table,
        path: &str,
        suppress: &BTreeSet<ConnId>,
    ) -> BTreeSet<ConnId> {
        let Some(conns) = self.table(table).remove(path) else {
            return BTreeSet::new();
        };
        for c in &conns {
            if let Some(set) = self.by_conn.get_mut(c) {
                set.remove(&(table, path.to_string()));
            }
        }
        conns
            .into_iter()
            .filter(|c| !suppress.contains(c))
            .collect()
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
                TreeEvent::Created(p) => {
                    self.emit(Table::Data, p, NODE_CREATED, p, &none, out);
                    self.emit(
                        Table::Child,
                        path::parent_for_event(p),
                        NODE_CHILDREN_CHANGED,
                        path::parent_for_event(p),
                        &none,
                        out,
                    );
                }
                TreeEvent::Deleted(p) => {
                    let told = self.emit(Table::Data, p, NODE_DELETED, p, &none, out);
                    self.emit(Table::Child, p, NODE_DELETED, p, &told, out);
                    self.emit(
                        Table::Child,
                        path::parent_for_event(p),
                        NODE_CHILDREN_CHANGED,
                        path::parent_for_event(p),
                        &none,
                        out,
                    );
                }
                TreeEvent::DataChanged(p) => {
                    self.emit(Table::Data, p, NODE_DATA_CHANGED, p, &none, out);
                }
            }
        }
    }

    fn emit(
        &mut self,
        table: Table,
        key: &str,
        event_type: i32,
        path: &str,
        suppress: &BTreeSet<ConnId>,
        out: &mut Vec<Notification>,
    ) -> BTreeSet<ConnId> {
        let conns = self.trigger(table, key, suppress);
        for &conn in &conns {
            out.push(Notification {
                conn,
                event_type,
                path: path.to_string(),
            });
        }
        conns
    }

    /// `DataTree.setWatches`: re-registers a reconnected client's watches,
    /// firing at once the events it missed since `relative_zxid`.
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
        let mut note = |event_type, path: &str| {
            out.push(Notification {
                conn,
                event_type,
                path: path.to_string(),
            })
        };
        for p in data {
            match tree.get(p) {
                None => note(NODE_DELETED, p),
                Some(n) if n.mzxid > relative_zxid => note(NODE_DATA_CHANGED, p),
                Some(_) => self.add(Table::Data, p, conn),
            }
        }
        for p in exist {
            match tree.get(p) {
                Some(_) => note(NODE_CREATED, p),
                None => self.add(Table::Data, p, conn),
            }
        }
        for p in child {
            match tree.get(p) {
                None => note(NODE_DELETED, p),
                Some(n) if n.pzxid > relative_zxid => note(NODE_CHILDREN_CHANGED, p),
                Some(_) => self.add(Table::Child, p, conn),
            }
        }
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
            let table = self.table(t);
            if let Some(set) = table.get_mut(path) {
                if set.remove(&conn) {
                    removed = true;
                    if set.is_empty() {
                        table.remove(path);
                    }
                }
            }
            if let Some(set) = self.by_conn.get_mut(&conn) {
                set.remove(&(t, path.to_string()));
            }
        }
        removed
    }

    /// Total number of (connection, path, table) watches.
    pub(crate) fn count(&self) -> usize {
        self.by_conn.values().map(BTreeSet::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delete_sends_one_node_deleted_per_connection_then_parent_children_changed() {
        let mut w = WatchManager::default();
        w.add(Table::Data, "/a/b", 1);
        w.add(Table::Child, "/a/b", 1);
        w.add(Table::Child, "/a/b", 2);
        w.add(Table::Child, "/a", 2);
        let mut out = Vec::new();
        w.fire(&[TreeEvent::Deleted("/a/b".into())], &mut out);
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
        w.add(Table::Child, "/", 3);
        w.add(Table::Data, "/x", 3);
        let mut out = Vec::new();
        w.fire(&[TreeEvent::Created("/x".into())], &mut out);
        assert_eq!(
            out[0],
            Notification {
                conn: 3,
                event_type: NODE_CREATED,
                path: "/x".into()
            }
        );
        assert_eq!(
            out[1],
            Notification {
                conn: 3,
                event_type: NODE_CHILDREN_CHANGED,
                path: "/".into()
            }
        );
    }

    #[test]
    fn closing_a_connection_drops_its_watches() {
        let mut w = WatchManager::default();
        w.add(Table::Data, "/x", 3);
        w.add(Table::Data, "/x", 3);
        w.add(Table::Data, "/x", 4);
        assert_eq!(w.count(), 2);
        w.remove_conn(3);
        let mut out = Vec::new();
        w.fire(&[TreeEvent::DataChanged("/x".into())], &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].conn, 4);
    }
}
