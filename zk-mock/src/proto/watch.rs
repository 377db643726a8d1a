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

/// `KeeperState.SyncConnected`: the only state the server ever sends.
pub const STATE_SYNC_CONNECTED: i32 = 3;

record! {
    /// `WatcherEvent {int type; int state; ustring path}`, sent with xid −1.
    pub struct WatcherEvent {
        pub event_type: i32,
        pub state: i32,
        pub path: String,
    }
}

record! {
    /// `SetWatches` (101): re-registration after a reconnect.
    pub struct SetWatches {
        pub relative_zxid: i64,
        pub data_watches: Vec<String>,
        pub exist_watches: Vec<String>,
        pub child_watches: Vec<String>,
    }
}

record! {
    /// `SetWatches2` (105): SetWatches plus persistent and recursive watches.
    pub struct SetWatches2 {
        pub relative_zxid: i64,
        pub data_watches: Vec<String>,
        pub exist_watches: Vec<String>,
        pub child_watches: Vec<String>,
        pub persistent_watches: Vec<String>,
        pub persistent_recursive_watches: Vec<String>,
    }
}

record! {
    /// `AddWatchRequest` (106): mode 0 persistent, 1 persistent recursive.
    pub struct AddWatchRequest {
        pub path: String,
        pub mode: i32,
    }
}

record! {
    /// `CheckWatchesRequest` (17) and `RemoveWatchesRequest` (18): type 1 children,
    /// 2 data, 3 any.
    pub struct WatchesRequest {
        pub path: String,
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
