//! Read-only views of the state for the layers above: an owned snapshot,
//! the recorder's live view (through [`Live`]), and what the controls,
//! metrics and four-letter words report.

use crate::record::{Live, RecordView, WatchKind};
use crate::session::SessionId;
use crate::snapshot::{NodeSnapshot, SessionSnapshot, SessionWatch, Snapshot, WatchSnapshot};
use crate::watch::Table;

use super::State;

impl State {
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
    pub(crate) fn record_view(&self) -> RecordView<'_> {
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
