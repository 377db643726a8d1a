//! [`Control`]: the same controls as [`ZkMock`]'s, for other tasks and threads.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::ClockMode;
use crate::fault::Rule;
use crate::record::{Notifications, Recording, Requests};
use crate::snapshot::Snapshot;
use crate::state::{lock, Shared, State};
use crate::Compat;

use super::{Refusal, RuleGuard, Stall};

/// The controls of a running server: fault rules and verbs, the session
/// clock, the recorder, snapshots and metrics. Cheap to clone; every clone
/// controls the same server, and does nothing once the server has stopped.
#[derive(Debug, Clone)]
pub struct Control {
    pub(super) addr: SocketAddr,
    pub(super) secure_addr: Option<SocketAddr>,
    pub(super) seed: u64,
    pub(super) shared: Shared,
}

impl Control {
    /// As [`ZkMock::addr`].
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// As [`ZkMock::connect_string`].
    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// As [`ZkMock::secure_addr`].
    pub fn secure_addr(&self) -> Option<SocketAddr> {
        self.secure_addr
    }

    /// As [`ZkMock::secure_connect_string`].
    pub fn secure_connect_string(&self) -> Option<String> {
        self.secure_addr.map(|a| a.to_string())
    }

    /// As [`ZkMock::seed`].
    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub(super) fn state(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.shared)
    }

    /// As [`ZkMock::last_zxid`].
    pub fn last_zxid(&self) -> i64 {
        self.state().tree.last_zxid()
    }

    /// As [`ZkMock::session_ids`].
    pub fn session_ids(&self) -> Vec<i64> {
        let st = self.state();
        let mut ids: Vec<i64> = st.sessions.iter().map(|s| s.id).collect();
        ids.sort_unstable();
        ids
    }

    /// As [`ZkMock::ephemerals`].
    pub fn ephemerals(&self, session: i64) -> Vec<(String, i64)> {
        let st = self.state();
        let mut v: Vec<(String, i64)> = st
            .tree
            .ephemerals_of(session)
            .filter_map(|p| st.tree.get(p).map(|n| (p.to_string(), n.czxid)))
            .collect();
        v.sort_by_key(|(_, z)| *z);
        v
    }

    /// As [`ZkMock::set_expiry_cleanup_delay`].
    pub fn set_expiry_cleanup_delay(&self, delay: Duration) {
        self.state().settings.expiry_cleanup_delay_ms = delay.as_millis() as u64;
    }

    /// As [`ZkMock::connection_count`].
    pub fn connection_count(&self) -> usize {
        self.state().conns.len()
    }

    // ---- faults -------------------------------------------------------------

    /// As [`ZkMock::rule`].
    pub fn rule(&self, rule: Rule) -> RuleGuard {
        match self.try_rule(rule) {
            Ok(g) => g,
            Err(e) => panic!("zk-mock (seed {}): invalid rule: {e}", self.seed),
        }
    }

    /// As [`ZkMock::try_rule`].
    pub fn try_rule(&self, rule: Rule) -> Result<RuleGuard, String> {
        rule.validate()?;
        let id = self.state().rules.install(rule);
        Ok(RuleGuard {
            shared: Arc::downgrade(&self.shared),
            id,
            seed: self.seed,
            keep: false,
            expect: None,
        })
    }

    /// As [`ZkMock::remove_rule`].
    pub fn remove_rule(&self, id: u64) -> bool {
        self.state().rules.remove(id)
    }

    /// As [`ZkMock::rules`].
    pub fn rules(&self) -> Vec<(u64, Rule, u64)> {
        self.state().rules.list()
    }

    /// As [`ZkMock::expire_session`].
    pub fn expire_session(&self, id: i64) -> bool {
        self.state().expire(id)
    }

    /// As [`ZkMock::expire_all`].
    pub fn expire_all(&self) -> usize {
        let mut st = self.state();
        let ids: Vec<i64> = st.sessions.iter().map(|s| s.id).collect();
        ids.into_iter().filter(|id| st.expire(*id)).count()
    }

    /// As [`ZkMock::disconnect`].
    pub fn disconnect(&self, id: i64) -> bool {
        let mut st = self.state();
        match st.sessions.get(id).and_then(|s| s.conn) {
            Some(conn) => {
                st.close_conn(conn);
                true
            }
            None => false,
        }
    }

    /// As [`ZkMock::disconnect_all`].
    pub fn disconnect_all(&self) -> usize {
        let mut st = self.state();
        let conns: Vec<_> = st.conns.keys().copied().collect();
        for c in &conns {
            st.close_conn(*c);
        }
        conns.len()
    }

    /// As [`ZkMock::stall`].
    #[must_use = "dropping the guard resumes the session at once; Stall::forget keeps it stalled"]
    pub fn stall(&self, id: i64) -> Option<Stall> {
        self.state().stall(id).then(|| Stall {
            shared: Arc::downgrade(&self.shared),
            session: id,
            keep: false,
        })
    }

    /// As [`ZkMock::resume`].
    pub fn resume(&self, id: i64) -> bool {
        self.state().resume(id)
    }

    /// As [`ZkMock::refuse_connections`].
    pub fn refuse_connections(&self) -> Refusal {
        self.state().refusing = true;
        Refusal {
            shared: Arc::downgrade(&self.shared),
        }
    }

    /// As [`ZkMock::accept_connections`].
    pub fn accept_connections(&self) {
        self.state().refusing = false;
    }

    /// As [`ZkMock::set_sequence_counter`].
    pub fn set_sequence_counter(&self, parent: &str, next: i32) -> bool {
        self.state().tree.set_sequence_counter(parent, next)
    }

    // ---- clock --------------------------------------------------------------

    /// As [`ZkMock::advance`].
    pub fn advance(&self, by: Duration) {
        let mut st = self.state();
        st.clock.advance(by);
        st.expire_due();
        st.check_containers_due();
    }

    /// As [`ZkMock::clock_ms`].
    pub fn clock_ms(&self) -> u64 {
        self.state().clock.now_ms()
    }

    /// As [`ZkMock::check_containers`].
    pub fn check_containers(&self) -> usize {
        self.state().check_containers()
    }

    /// As [`ZkMock::compat`].
    pub fn compat(&self) -> Compat {
        self.state().settings.compat
    }

    /// As [`ZkMock::clock_mode`].
    pub fn clock_mode(&self) -> ClockMode {
        self.state().clock.mode()
    }

    // ---- introspection ------------------------------------------------------

    /// As [`ZkMock::recorded`].
    pub fn recorded(&self) -> Recording {
        let st = self.state();
        st.recorder.snapshot(st.seed)
    }

    /// As [`ZkMock::requests`].
    pub fn requests(&self) -> Requests {
        self.state().recorder.requests()
    }

    /// As [`ZkMock::notifications`].
    pub fn notifications(&self) -> Notifications {
        self.state().recorder.notifications()
    }

    /// As [`ZkMock::changes`].
    pub fn changes(&self) -> Vec<crate::record::ChangeRecord> {
        self.state().recorder.changes()
    }

    /// As [`ZkMock::clear_recording`].
    pub fn clear_recording(&self) {
        self.state().recorder.clear();
    }

    /// As [`ZkMock::snapshot`].
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::of(&self.state())
    }

    /// As [`ZkMock::wait_until`].
    pub async fn wait_until(
        &self,
        timeout: Duration,
        mut done: impl FnMut(&Recording) -> bool,
    ) -> Result<Recording, String> {
        let mut changes = self.state().changes.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let rec = self.recorded();
            if done(&rec) {
                return Ok(rec);
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                _ => {
                    let rec = self.recorded();
                    if done(&rec) {
                        return Ok(rec);
                    }
                    return Err(format!(
                        "zk-mock (seed {}): condition not met within {timeout:?}\n{rec}",
                        self.seed
                    ));
                }
            }
        }
    }
}
