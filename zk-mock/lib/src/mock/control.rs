//! [`Control`]: the same controls as [`ZkMock`](crate::ZkMock)'s, for other tasks and threads.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::ClockMode;
use crate::core::{lock, Shared, State};
use crate::fault::Rule;
use crate::record::{Notifications, Recording, Requests};
use crate::snapshot::Snapshot;
use crate::Compat;

use crate::record::RecordView;
use crate::{SessionId, WaitTimeout};

thread_local! {
    /// Whether this thread is inside `inspect`, with the state locked.
    static INSPECTING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks this thread as inside `inspect` until dropped (unwinding too).
struct Inspecting;

impl Inspecting {
    fn enter() -> Inspecting {
        INSPECTING.set(true);
        Inspecting
    }
}

impl Drop for Inspecting {
    fn drop(&mut self) {
        INSPECTING.set(false);
    }
}

use super::{HoldGate, Refusal, RuleGuard, Stall};

/// The controls of a running server: fault rules and verbs, the session
/// clock, the recorder, snapshots and metrics. Cheap to clone; every clone
/// controls the same server, and does nothing once the server has stopped.
#[derive(Debug, Clone)]
pub struct Control {
    /// Each server's client address (one, for a single server).
    pub(super) addrs: Arc<[SocketAddr]>,
    /// Each server's client port, which a kill closes.
    pub(super) ports: Arc<[Arc<crate::listen::Port>]>,
    pub(super) secure_addr: Option<SocketAddr>,
    /// Server 0's secure port, if TLS is on.
    pub(super) secure_port: Option<Arc<crate::listen::Port>>,
    pub(super) seed: u64,
    pub(super) shared: Shared,
    /// The server's runtime, for the election timer.
    pub(super) runtime: tokio::runtime::Handle,
}

impl Control {
    /// As [`ZkMock::addr`](crate::ZkMock::addr).
    pub fn addr(&self) -> SocketAddr {
        self.addrs[0]
    }

    /// As [`ZkMock::addrs`](crate::ZkMock::addrs).
    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.addrs.to_vec()
    }

    /// As [`ZkMock::connect_string`](crate::ZkMock::connect_string).
    pub fn connect_string(&self) -> String {
        self.addrs
            .iter()
            .map(SocketAddr::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// As [`ZkMock::secure_addr`](crate::ZkMock::secure_addr).
    pub fn secure_addr(&self) -> Option<SocketAddr> {
        self.secure_addr
    }

    /// As [`ZkMock::secure_connect_string`](crate::ZkMock::secure_connect_string).
    pub fn secure_connect_string(&self) -> Option<String> {
        self.secure_addr.map(|a| a.to_string())
    }

    /// As [`ZkMock::seed`](crate::ZkMock::seed).
    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub(super) fn state(&self) -> std::sync::MutexGuard<'_, State> {
        if INSPECTING.get() {
            panic!(
                "zk-mock: a ZkMock or Control method was called inside inspect() or \
                 wait_until()'s condition, while the server is paused for it; use the \
                 RecordView the closure is given (snapshot(), session_ids(), requests(), …)"
            );
        }
        lock(&self.shared)
    }

    /// Runs `f` over the live log with the server paused.
    fn with_view<T>(&self, f: impl FnOnce(RecordView<'_>) -> T) -> T {
        let mut st = self.state();
        let _inside = Inspecting::enter();
        f(st.record_view())
    }

    /// As [`ZkMock::last_zxid`](crate::ZkMock::last_zxid).
    pub fn last_zxid(&self) -> i64 {
        self.state().tree().last_zxid()
    }

    /// As [`ZkMock::session_ids`](crate::ZkMock::session_ids).
    pub fn session_ids(&self) -> Vec<SessionId> {
        self.state().live_session_ids()
    }

    /// As [`ZkMock::ephemerals`](crate::ZkMock::ephemerals).
    pub fn ephemerals(&self, session: impl Into<SessionId>) -> Vec<(String, i64)> {
        let st = self.state();
        let mut v: Vec<(String, i64)> = st
            .tree()
            .ephemerals_of(session.into().0)
            .filter_map(|p| st.tree().get(p).map(|n| (p.to_string(), n.czxid)))
            .collect();
        v.sort_by_key(|(_, z)| *z);
        v
    }

    /// As [`ZkMock::set_expiry_cleanup_delay`](crate::ZkMock::set_expiry_cleanup_delay).
    pub fn set_expiry_cleanup_delay(&self, delay: Duration) {
        self.state().set_expiry_cleanup_delay(delay);
    }

    /// As [`ZkMock::set_commit_latency`](crate::ZkMock::set_commit_latency).
    pub fn set_commit_latency(&self, latency: Duration) {
        self.state().set_commit_latency(latency);
    }

    /// As [`ZkMock::set_connect_latency`](crate::ZkMock::set_connect_latency).
    pub fn set_connect_latency(&self, latency: Duration) {
        self.state().set_connect_latency(latency);
    }

    /// As [`ZkMock::set_request_latency`](crate::ZkMock::set_request_latency).
    pub fn set_request_latency(&self, latency: Duration) {
        self.state().set_request_latency(latency);
    }

    /// As [`ZkMock::connection_count`](crate::ZkMock::connection_count).
    pub fn connection_count(&self) -> usize {
        self.state().connection_count()
    }

    // ---- faults -------------------------------------------------------------

    /// As [`ZkMock::rule`](crate::ZkMock::rule).
    pub fn rule(&self, rule: Rule) -> RuleGuard {
        match self.try_rule(rule) {
            Ok(g) => g,
            Err(e) => panic!("zk-mock (seed {}): invalid rule: {e}", self.seed),
        }
    }

    /// As [`ZkMock::try_rule`](crate::ZkMock::try_rule).
    pub fn try_rule(&self, rule: Rule) -> Result<RuleGuard, String> {
        rule.validate()?;
        let id = self.state().install_rule(rule)?;
        Ok(RuleGuard {
            shared: Arc::downgrade(&self.shared),
            id,
            seed: self.seed,
            keep: false,
            expect: None,
        })
    }

    /// As [`ZkMock::remove_rule`](crate::ZkMock::remove_rule).
    pub fn remove_rule(&self, id: u64) -> bool {
        self.state().remove_rule(id)
    }

    /// As [`ZkMock::rules`](crate::ZkMock::rules).
    pub fn rules(&self) -> Vec<(u64, Rule, u64)> {
        self.state().rules()
    }

    /// As [`ZkMock::expire_session`](crate::ZkMock::expire_session).
    pub fn expire_session(&self, id: impl Into<SessionId>) -> bool {
        self.state().expire(id.into().0)
    }

    /// As [`ZkMock::gate`](crate::ZkMock::gate).
    #[must_use = "dropping the gate opens it at once; HoldGate::forget keeps it closed"]
    pub fn gate(&self) -> HoldGate {
        let id = self.state().new_gate();
        HoldGate {
            shared: Arc::downgrade(&self.shared),
            id: crate::fault::GateId(id),
            keep: false,
        }
    }

    /// As [`ZkMock::open_gate`](crate::ZkMock::open_gate).
    pub fn open_gate(&self, gate: crate::fault::GateId) -> bool {
        self.state().open_gate(gate.0)
    }

    /// As [`ZkMock::expire_session_until`](crate::ZkMock::expire_session_until).
    pub fn expire_session_until(
        &self,
        id: impl Into<SessionId>,
        gate: crate::fault::GateId,
    ) -> bool {
        self.state().expire_until(id.into().0, gate.0)
    }

    /// As [`ZkMock::expire_all`](crate::ZkMock::expire_all).
    pub fn expire_all(&self) -> usize {
        self.state().expire_all()
    }

    /// As [`ZkMock::disconnect`](crate::ZkMock::disconnect).
    pub fn disconnect(&self, id: impl Into<SessionId>) -> bool {
        self.state().disconnect(id.into().0)
    }

    /// As [`ZkMock::disconnect_all`](crate::ZkMock::disconnect_all).
    pub fn disconnect_all(&self) -> usize {
        self.state().disconnect_all()
    }

    /// As [`ZkMock::stall`](crate::ZkMock::stall).
    #[must_use = "dropping the guard resumes the session at once; Stall::forget keeps it stalled"]
    pub fn stall(&self, id: impl Into<SessionId>) -> Option<Stall> {
        let id = id.into();
        self.state().stall(id.0).then(|| Stall {
            shared: Arc::downgrade(&self.shared),
            session: id,
            keep: false,
        })
    }

    /// As [`ZkMock::resume`](crate::ZkMock::resume).
    pub fn resume(&self, id: impl Into<SessionId>) -> bool {
        self.state().resume(id.into().0)
    }

    /// As [`ZkMock::refuse_connections`](crate::ZkMock::refuse_connections).
    pub fn refuse_connections(&self) -> Refusal {
        self.state().set_refusing(true);
        Refusal {
            shared: Arc::downgrade(&self.shared),
        }
    }

    /// As [`ZkMock::reset`](crate::ZkMock::reset).
    pub fn reset(&self) {
        self.state().reset();
    }

    /// As [`ZkMock::accept_connections`](crate::ZkMock::accept_connections).
    pub fn accept_connections(&self) {
        self.state().set_refusing(false);
    }

    /// As [`ZkMock::set_sequence_counter`](crate::ZkMock::set_sequence_counter).
    pub fn set_sequence_counter(&self, parent: &str, next: i32) -> bool {
        self.state().set_sequence_counter(parent, next)
    }

    // ---- clock --------------------------------------------------------------

    /// As [`ZkMock::advance`](crate::ZkMock::advance).
    pub fn advance(&self, by: Duration) {
        self.state().advance_clock(by);
    }

    /// As [`ZkMock::clock_ms`](crate::ZkMock::clock_ms).
    pub fn clock_ms(&self) -> u64 {
        self.state().now_ms()
    }

    /// As [`ZkMock::check_containers`](crate::ZkMock::check_containers).
    pub fn check_containers(&self) -> usize {
        self.state().check_containers()
    }

    /// As [`ZkMock::compat`](crate::ZkMock::compat).
    pub fn compat(&self) -> Compat {
        self.state().settings().compat
    }

    /// As [`ZkMock::clock_mode`](crate::ZkMock::clock_mode).
    pub fn clock_mode(&self) -> ClockMode {
        self.state().clock_mode()
    }

    // ---- introspection ------------------------------------------------------

    /// As [`ZkMock::recorded`](crate::ZkMock::recorded).
    pub fn recorded(&self) -> Recording {
        self.state().recording()
    }

    /// As [`ZkMock::requests`](crate::ZkMock::requests).
    pub fn requests(&self) -> Requests {
        self.state().recorded_requests()
    }

    /// As [`ZkMock::notifications`](crate::ZkMock::notifications).
    pub fn notifications(&self) -> Notifications {
        self.state().recorded_notifications()
    }

    /// As [`ZkMock::changes`](crate::ZkMock::changes).
    pub fn changes(&self) -> Vec<crate::record::ChangeRecord> {
        self.state().recorded_changes()
    }

    /// As [`ZkMock::clear_recording`](crate::ZkMock::clear_recording).
    pub fn clear_recording(&self) {
        self.state().clear_recording();
    }

    /// As [`ZkMock::snapshot`](crate::ZkMock::snapshot).
    pub fn snapshot(&self) -> Snapshot {
        self.state().snapshot()
    }

    /// As [`ZkMock::inspect`](crate::ZkMock::inspect).
    pub fn inspect<T>(&self, f: impl FnOnce(RecordView<'_>) -> T) -> T {
        self.with_view(f)
    }

    /// As [`ZkMock::wait_until`](crate::ZkMock::wait_until).
    pub async fn wait_until(
        &self,
        timeout: Duration,
        mut done: impl FnMut(RecordView<'_>) -> bool,
    ) -> Result<(), WaitTimeout> {
        let mut changes = self.state().subscribe_changes();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if self.with_view(&mut done) {
                return Ok(());
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                _ => {
                    if self.with_view(&mut done) {
                        return Ok(());
                    }
                    return Err(WaitTimeout {
                        seed: self.seed,
                        timeout,
                        recording: Box::new(self.recorded()),
                    });
                }
            }
        }
    }
}
