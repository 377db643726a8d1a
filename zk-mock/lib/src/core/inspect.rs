//! Read-only views of the state for the layers above: an owned snapshot,
//! the recorder's live view (through [`Live`]), and what the controls,
//! metrics and four-letter words report.

use serde::Serialize;

use crate::ensemble::ServerStatus;
use crate::record::Counters;
use crate::record::{
    ChangeRecord, Live, Notifications, RecordView, Recording, Requests, WatchKind,
};
use crate::session::SessionId;
use crate::snapshot::{NodeSnapshot, SessionSnapshot, SessionWatch, Snapshot, WatchSnapshot};
use crate::watch::Table;

use super::State;

impl State {
    /// The live sessions' ids, in order.
    pub(crate) fn live_session_ids(&self) -> Vec<SessionId> {
        let mut ids: Vec<SessionId> = self.sessions.iter().map(|s| SessionId(s.id)).collect();
        ids.sort_unstable();
        ids
    }

    /// The server of the connection a session is bound to.
    pub(crate) fn server_of_session(&self, session: i64) -> Option<usize> {
        let conn = self.sessions.get(session)?.conn?;
        self.out.conns.get(&conn).map(|c| c.server)
    }

    /// How many connections are open.
    pub(crate) fn connection_count(&self) -> usize {
        self.out.conns.len()
    }

    /// The leader's index.
    pub(crate) fn leader(&self) -> usize {
        self.ensemble.leader
    }

    /// The last zxid server `i` has applied (`None`: no such server).
    pub(crate) fn server_zxid(&self, i: usize) -> Option<i64> {
        self.ensemble.servers.get(i).map(|r| r.last_zxid())
    }

    /// How many servers there are (1 for a single server).
    pub(crate) fn server_count(&self) -> usize {
        self.ensemble.servers.len()
    }

    /// Server `i`'s replica and status (`None`: no such server).
    pub(crate) fn replica(&self, i: usize) -> Option<(&crate::tree::DataTree, ServerStatus)> {
        self.ensemble.servers.get(i).map(|r| (&r.tree, r.status))
    }

    /// An owned copy of the recording and the counters.
    pub(crate) fn recording(&mut self) -> Recording {
        self.observers.recording(self.seed)
    }

    /// The recorded requests.
    pub(crate) fn recorded_requests(&self) -> Requests {
        self.observers.log.requests()
    }

    /// The recorded notifications.
    pub(crate) fn recorded_notifications(&self) -> Notifications {
        self.observers.log.notifications()
    }

    /// The recorded changes.
    pub(crate) fn recorded_changes(&self) -> Vec<ChangeRecord> {
        self.observers.log.changes()
    }

    /// The counters [`ZkMock::metrics`](crate::ZkMock::metrics) reports.
    pub(crate) fn metrics(&self) -> Metrics {
        Metrics {
            sessions: self.sessions.iter().count(),
            connections: self.out.conns.len(),
            stalled_connections: self
                .out
                .conns
                .values()
                .filter(|c| c.stalled_for.is_some())
                .count(),
            znodes: self.tree().node_count(),
            watches: self
                .ensemble
                .servers
                .iter()
                .map(|r| r.watches.count())
                .sum(),
            ephemerals: self
                .sessions
                .iter()
                .map(|s| self.tree().ephemerals_of(s.id).count())
                .sum(),
            last_zxid: self.tree().last_zxid(),
            packets_received: self.out.packets_received,
            packets_sent: self.out.packets_sent,
            totals: self.observers.tally.total,
            rules: self.observers.rules.list().len(),
            outbox_bytes: self.out.conns.values().map(|c| c.queued.get()).sum(),
            slow_readers_closed: self.out.slow_readers_closed,
        }
    }

    /// An owned copy of the tree, the sessions and the watches.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let st = self;
        let tree = st
            .tree()
            .iter()
            .map(|(p, n)| {
                (
                    p.to_string(),
                    NodeSnapshot {
                        data: n.data.as_ref().map(|d| d.to_vec()),
                        stat: n.stat(),
                        acl: n.acl.to_vec(),
                    },
                )
            })
            .collect();
        let mut watches: std::collections::BTreeMap<String, Vec<WatchSnapshot>> =
            std::collections::BTreeMap::new();
        for (table, path, conn, kind) in st.all_watches() {
            // Persistent watches sit in both tables; list them once.
            if table == Table::Child
                && matches!(kind, WatchKind::Persistent | WatchKind::PersistentRecursive)
            {
                continue;
            }
            let session = SessionId(st.out.conns.get(&conn).and_then(|c| c.session).unwrap_or(0));
            watches
                .entry(path.to_string())
                .or_default()
                .push(WatchSnapshot { session, kind });
        }
        let sessions = st
            .sessions
            .iter()
            .map(|s| {
                let mut w: Vec<SessionWatch> = watches
                    .iter()
                    .flat_map(|(p, ws)| {
                        ws.iter()
                            .filter(|w| w.session == s.id)
                            .map(move |w| SessionWatch {
                                path: p.clone(),
                                kind: w.kind,
                            })
                    })
                    .collect();
                w.sort();
                (
                    SessionId(s.id),
                    SessionSnapshot {
                        id: SessionId(s.id),
                        timeout: s.timeout,
                        last_active_ms: s.last_active,
                        expires_at_ms: s.deadline,
                        connected: s.conn.is_some(),
                        stalled: st.stalled.contains(&s.id),
                        ephemerals: st.tree().ephemerals_of(s.id).map(str::to_string).collect(),
                        watches: w,
                    },
                )
            })
            .collect();
        Snapshot {
            seed: st.seed,
            last_zxid: st.tree().last_zxid(),
            tree,
            sessions,
            watches,
        }
    }

    /// The recorder's live view, for `inspect` and `wait_until`.
    pub(crate) fn record_view(&mut self) -> RecordView<'_> {
        self.observers.settle();
        RecordView::new(self, &self.observers.log, &self.observers.tally, self.seed)
    }
}

impl Live for State {
    fn snapshot(&self) -> Snapshot {
        State::snapshot(self)
    }

    fn session_ids(&self) -> Vec<SessionId> {
        let mut ids: Vec<SessionId> = self.sessions.iter().map(|s| SessionId(s.id)).collect();
        ids.sort_unstable();
        ids
    }
}

/// Counters and gauges of a running server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Metrics {
    /// Live sessions.
    pub sessions: usize,
    /// Open client connections.
    pub connections: usize,
    /// Connections a stall holds ([`ZkMock::stall`](crate::ZkMock::stall)):
    /// a stalled session's own, and each handshake that re-attaches it and
    /// waits for the resume. A test waits for this to know a client's
    /// reconnect reached the stall.
    pub stalled_connections: usize,
    /// Nodes, counted as ZooKeeper does (5 on a fresh server).
    pub znodes: usize,
    /// Watches held, (connection, path, table) entries.
    pub watches: usize,
    /// Ephemeral nodes.
    pub ephemerals: usize,
    /// The last processed zxid.
    pub last_zxid: i64,
    /// Frames received, each connection's ConnectRequest included.
    pub packets_received: u64,
    /// Frames queued to clients.
    pub packets_sent: u64,
    /// Request, error, watch and notification totals.
    pub totals: Counters,
    /// Fault rules installed.
    pub rules: usize,
    /// Bytes queued for clients and not yet written, all connections.
    pub outbox_bytes: usize,
    /// Connections closed as slow readers (see
    /// [`ZkMockBuilder::max_outbox_bytes`](crate::ZkMockBuilder::max_outbox_bytes)).
    pub slow_readers_closed: u64,
}
