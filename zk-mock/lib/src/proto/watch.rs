//! Watch records: `WatcherEvent`, `SetWatches`, `SetWatches2`, `AddWatchRequest`,
//! `CheckWatchesRequest` / `RemoveWatchesRequest`.

use crate::codec::record;

/// `Watcher.Event.EventType` values the server sends.
pub mod event_type {
    /// A node was created.
    pub const NODE_CREATED: i32 = 1;
    /// A node was deleted.
    pub const NODE_DELETED: i32 = 2;
    /// A node's data changed.
    pub const NODE_DATA_CHANGED: i32 = 3;
    /// A node's children changed.
    pub const NODE_CHILDREN_CHANGED: i32 = 4;
}

/// `Watcher.Event.EventType`: what a notification says happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[repr(i32)]
#[non_exhaustive]
pub enum EventType {
    /// A session state change (no node).
    None = -1,
    /// A node was created.
    NodeCreated = 1,
    /// A node was deleted.
    NodeDeleted = 2,
    /// A node's data changed.
    NodeDataChanged = 3,
    /// A node's children changed.
    NodeChildrenChanged = 4,
    /// A data watch was removed (removeWatches).
    DataWatchRemoved = 5,
    /// A child watch was removed (removeWatches).
    ChildWatchRemoved = 6,
    /// A persistent watch was removed (removeWatches).
    PersistentWatchRemoved = 7,
}

impl EventType {
    /// The event type for a wire value.
    pub fn from_i32(v: i32) -> Option<EventType> {
        Some(match v {
            -1 => EventType::None,
            1 => EventType::NodeCreated,
            2 => EventType::NodeDeleted,
            3 => EventType::NodeDataChanged,
            4 => EventType::NodeChildrenChanged,
            5 => EventType::DataWatchRemoved,
            6 => EventType::ChildWatchRemoved,
            7 => EventType::PersistentWatchRemoved,
            _ => return None,
        })
    }

    /// ZooKeeper's name for it (`NodeDeleted`, …).
    pub fn name(self) -> &'static str {
        match self {
            EventType::None => "None",
            EventType::NodeCreated => "NodeCreated",
            EventType::NodeDeleted => "NodeDeleted",
            EventType::NodeDataChanged => "NodeDataChanged",
            EventType::NodeChildrenChanged => "NodeChildrenChanged",
            EventType::DataWatchRemoved => "DataWatchRemoved",
            EventType::ChildWatchRemoved => "ChildWatchRemoved",
            EventType::PersistentWatchRemoved => "PersistentWatchRemoved",
        }
    }
}

/// `KeeperState.SyncConnected`: the only state the server ever sends.
pub const STATE_SYNC_CONNECTED: i32 = 3;

record! {
    /// `WatcherEvent {int type; int state; ustring path}`, sent with xid −1.
    pub struct WatcherEvent {
        /// What happened, an [`EventType`] value.
        pub event_type: i32,
        /// The session state, always [`STATE_SYNC_CONNECTED`].
        pub state: i32,
        /// The node the event concerns.
        pub path: String,
    }
}

record! {
    /// `SetWatches` (101): re-registration after a reconnect.
    pub struct SetWatches {
        /// The last zxid the client has seen: a watch whose node changed after it
        /// fires at once.
        pub relative_zxid: i64,
        /// Paths with a data watch (getData).
        pub data_watches: Vec<String>,
        /// Paths with an exist watch (exists on a missing node).
        pub exist_watches: Vec<String>,
        /// Paths with a child watch (getChildren).
        pub child_watches: Vec<String>,
    }
}

record! {
    /// `SetWatches2` (105): SetWatches plus persistent and recursive watches.
    pub struct SetWatches2 {
        /// The last zxid the client has seen: a watch whose node changed after it
        /// fires at once.
        pub relative_zxid: i64,
        /// Paths with a data watch (getData).
        pub data_watches: Vec<String>,
        /// Paths with an exist watch (exists on a missing node).
        pub exist_watches: Vec<String>,
        /// Paths with a child watch (getChildren).
        pub child_watches: Vec<String>,
        /// Paths with a persistent watch.
        pub persistent_watches: Vec<String>,
        /// Paths with a persistent recursive watch.
        pub persistent_recursive_watches: Vec<String>,
    }
}

record! {
    /// `AddWatchRequest` (106): mode 0 persistent, 1 persistent recursive.
    pub struct AddWatchRequest {
        /// The path to watch.
        pub path: String,
        /// 0 persistent, 1 persistent recursive.
        pub mode: i32,
    }
}

record! {
    /// `CheckWatchesRequest` (17) and `RemoveWatchesRequest` (18): type 1 children,
    /// 2 data, 3 any.
    pub struct WatchesRequest {
        /// The watched path.
        pub path: String,
        /// 1 child watches, 2 data watches, 3 any.
        pub watcher_type: i32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::assert_round_trip;

    #[test]
    fn watch_records_round_trip() {
        assert_round_trip(&WatcherEvent {
            event_type: 4,
            state: 3,
            path: "/a".into(),
        });
        assert_round_trip(&SetWatches {
            relative_zxid: 9,
            data_watches: vec!["/a".into()],
            exist_watches: vec![],
            child_watches: vec!["/".into()],
        });
        assert_round_trip(&SetWatches2 {
            relative_zxid: 9,
            persistent_recursive_watches: vec!["/r".into()],
            ..Default::default()
        });
        assert_round_trip(&AddWatchRequest {
            path: "/a".into(),
            mode: 1,
        });
        assert_round_trip(&WatchesRequest {
            path: "/a".into(),
            watcher_type: 3,
        });
    }
}
