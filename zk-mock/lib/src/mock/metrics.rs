//! [`Metrics`]: the counters and gauges of a running server.

use serde::Serialize;

use crate::record::Counters;

use super::Control;

/// Counters and gauges of a running server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Metrics {
    /// Live sessions.
    pub sessions: usize,
    /// Open client connections.
    pub connections: usize,
    /// Nodes, counted as ZooKeeper does (5 on a fresh server).
    pub znodes: usize,
    /// Watches held, (connection, path, table) entries.
    pub watches: usize,
    /// Ephemeral nodes.
    pub ephemerals: usize,
    /// The last processed zxid.
    pub last_zxid: i64,
    /// Frames received after the handshake.
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

impl Control {
    /// As [`ZkMock::metrics`](crate::ZkMock::metrics).
    pub fn metrics(&self) -> Metrics {
        let st = self.state();
        Metrics {
            sessions: st.sessions.iter().count(),
            connections: st.out.conns.len(),
            znodes: st.tree().node_count(),
            watches: st.servers.iter().map(|r| r.watches.count()).sum(),
            ephemerals: st
                .sessions
                .iter()
                .map(|s| st.tree().ephemerals_of(s.id).count())
                .sum(),
            last_zxid: st.tree().last_zxid(),
            packets_received: st.out.packets_received,
            packets_sent: st.out.packets_sent,
            totals: st.observers.tally.total,
            rules: st.observers.rules.list().len(),
            outbox_bytes: st
                .out
                .conns
                .values()
                .map(|c| c.queued.load(std::sync::atomic::Ordering::Relaxed))
                .sum(),
            slow_readers_closed: st.out.slow_readers_closed,
        }
    }
}
