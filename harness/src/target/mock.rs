//! The embedded zk-mock as a target: one fresh server per scenario, faults
//! through its own controls, history from its recorder.

use parking_lot::Mutex;
use std::collections::BTreeMap;

use zk_mock::record::SessionEvent;
use zk_mock::{RuleGuard, ZkMock};

use super::{Change, History, Notified, ADMIN_TIMEOUT_MS};
use crate::error::RunError;
use crate::scenario::Loaded;

/// A running zk-mock and the faults installed on it.
#[derive(Debug)]
pub(crate) struct MockTarget {
    pub(super) zk: ZkMock,
    rules: Mutex<Vec<RuleGuard>>,
    refusal: Mutex<Option<zk_mock::Refusal>>,
    /// The gates of `hold` steps and held expiry cleanups, by id.
    gates: Mutex<BTreeMap<u64, zk_mock::HoldGate>>,
}

impl MockTarget {
    /// Starts a server with the scenario's settings.
    pub(super) async fn start(scenario: &Loaded, seed: u64) -> Result<MockTarget, RunError> {
        let server = &scenario.scenario.server;
        let compat: zk_mock::Compat =
            server
                .compat
                .parse()
                .map_err(|e: zk_mock::UnknownCompat| RunError::Setting {
                    field: "server.compat",
                    message: e.to_string(),
                })?;
        let tick = server.tick_time.0.as_millis().max(1) as u64;
        let timeout = server.session_timeout.0.as_millis() as i32;
        let zk = ZkMock::builder()
            .compat(compat)
            .tick_time(tick)
            .min_session_timeout((2 * tick as i32).min(timeout))
            // Clients ask for exactly the scenario's timeout; the harness's
            // own session asks for more, so that a loaded run (a 1000-client
            // stampede) cannot expire it.
            .max_session_timeout((20 * tick as i32).max(timeout).max(ADMIN_TIMEOUT_MS))
            .seed(seed)
            .expiry_cleanup_delay(server.expiry_cleanup_delay.map(|d| d.0).unwrap_or_default())
            .recorder_capacity(2_000_000)
            .servers(server.servers)
            .start()
            .await?;
        Ok(MockTarget {
            zk,
            rules: Mutex::default(),
            refusal: Mutex::default(),
            gates: Mutex::default(),
        })
    }

    /// Installs a request fault (for `session`'s requests, or anyone's).
    pub(super) fn request_fault(
        &self,
        fault: &crate::fault::RequestFault,
        session: Option<i64>,
    ) -> Result<(), RunError> {
        let guard = self
            .zk
            .try_rule(fault.to_rule(session))
            .map_err(RunError::Rule)?;
        self.rules.lock().push(guard);
        Ok(())
    }

    /// A new, closed gate: its id is the mock's `GateId`.
    pub(super) fn new_gate(&self) -> u64 {
        let gate = self.zk.gate();
        let id = gate.id().0;
        self.gates.lock().insert(id, gate);
        id
    }

    /// Opens a gate.
    pub(super) fn open_gate(&self, gate: u64) {
        if let Some(g) = self.gates.lock().remove(&gate) {
            g.open();
        }
    }

    /// Opens every gate.
    pub(super) fn open_all_gates(&self) {
        for (_, g) in std::mem::take(&mut *self.gates.lock()) {
            g.open();
        }
    }

    /// The lock node `session` owns under `dir`: its ephemeral with the largest czxid.
    pub(super) fn lock_node(&self, session: i64, dir: &str) -> Option<(String, i64)> {
        let prefix = format!("{dir}/");
        self.zk
            .ephemerals(session)
            .into_iter()
            .filter(|(p, _)| p.starts_with(&prefix))
            .max_by_key(|(_, z)| *z)
    }

    /// How many times the request faults fired.
    pub(super) fn faults_fired(&self) -> u64 {
        self.rules.lock().iter().map(RuleGuard::fired).sum()
    }

    /// Refuses new connections while `on`.
    pub(super) fn refuse(&self, on: bool) {
        *self.refusal.lock() = if on {
            Some(self.zk.refuse_connections())
        } else {
            None
        };
    }

    /// How many of `sessions` have a watch set under `dir`.
    pub(super) fn watching(&self, dir: &str, sessions: &[i64]) -> usize {
        let snap = self.zk.snapshot();
        sessions
            .iter()
            .filter(|s| {
                snap.sessions
                    .get(&(**s).into())
                    .is_some_and(|ss| ss.watches.iter().any(|w| w.path.starts_with(dir)))
            })
            .count()
    }

    /// The recorder's history of changes and notifications under `under`.
    pub(super) fn history(&self, under: impl Fn(&str) -> bool) -> History {
        let rec = self.zk.recorded();
        let ends: BTreeMap<i64, SessionEvent> = rec
            .sessions
            .iter()
            .filter(|s| s.event == SessionEvent::Expired)
            .map(|s| (s.zxid, s.event))
            .collect();
        let changes = rec
            .changes
            .iter()
            .filter(|c| under(&c.path))
            .map(|c| Change {
                pos: c.zxid,
                zxid: Some(c.zxid),
                session: Some(c.session.0),
                path: c.path.to_string(),
                kind: c.kind,
                by_session_end: ends.contains_key(&c.zxid),
            })
            .collect();
        let notifications = rec
            .notifications
            .iter()
            .filter(|n| under(&n.path))
            .map(|n| Notified {
                zxid: n.zxid,
                session: n.session.0,
                path: n.path.clone(),
            })
            .collect();
        let text = rec.to_string().lines().map(str::to_string).collect();
        History {
            changes,
            notifications: Some(notifications),
            text,
        }
    }
}
