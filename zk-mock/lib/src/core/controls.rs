//! What the API's controls and the server's tasks ask of the state beyond
//! requests: fault rules, refusing connections, the session clock,
//! disconnects, settings changed at run time, and the connection task's
//! share of the outbox.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Notify};

use crate::fault::{Rule, Tally};
use crate::outbox::Outgoing;

use super::{Settings, State};

impl State {
    /// The settings requests consult: fixed at start, but for the expiry
    /// cleanup delay ([`set_expiry_cleanup_delay`](Self::set_expiry_cleanup_delay))
    /// and the connect latency, which the API may change at run time (the
    /// request and commit latencies, also changeable, are `commit.rs`'s).
    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }

    /// How long an expired session's closeSession waits from now on.
    pub(crate) fn set_expiry_cleanup_delay(&mut self, delay: Duration) {
        self.settings.expiry_cleanup_delay_ms =
            u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
    }

    /// How long each handshake takes at least, from now on.
    pub(crate) fn set_connect_latency(&mut self, latency: Duration) {
        self.settings.connect_latency = latency;
    }

    // ---- fault rules ---------------------------------------------------------

    /// Installs a rule; its id. Refused if it names a gate that does not exist.
    pub(crate) fn install_rule(&mut self, rule: Rule) -> Result<u64, String> {
        if let crate::fault::Verdict::HoldReply(g) | crate::fault::Verdict::HoldRequest(g) =
            rule.verdict
        {
            if !self.gates.contains_key(&g.0) {
                return Err(format!("{g} is unknown: make one with ZkMock::gate"));
            }
        }
        if let Some(after) = rule.when.after {
            if !self.observers.rules.contains(after.rule) {
                return Err(format!(
                    "after: rule {} is not installed (a rule can follow only one installed before it)",
                    after.rule
                ));
            }
        }
        Ok(self.observers.rules.install(rule))
    }

    /// Removes a rule; false if there was none with that id.
    pub(crate) fn remove_rule(&mut self, id: u64) -> bool {
        self.observers.rules.remove(id)
    }

    /// The rules: id, rule, times fired.
    pub(crate) fn rules(&self) -> Vec<(u64, Rule, u64)> {
        self.observers.rules.list()
    }

    /// How many times rule `id` fired (`None`: no such rule).
    pub(crate) fn rule_fired(&self, id: u64) -> Option<u64> {
        self.observers.rules.fired(id)
    }

    /// Rule `id` and its tally.
    pub(crate) fn rule(&self, id: u64) -> Option<(&Rule, Tally)> {
        self.observers.rules.get(id)
    }

    // ---- connections ----------------------------------------------------------

    /// Refuse (or accept again) new connections.
    pub(crate) fn set_refusing(&mut self, refusing: bool) {
        self.refusing = refusing;
    }

    /// Whether server `i` closes a new connection at once (refusing, or down).
    pub(crate) fn refuses(&self, i: usize) -> bool {
        self.refusing || !self.ensemble.up(i)
    }

    /// Closes a session's connection; false if it has none.
    pub(crate) fn disconnect(&mut self, session: i64) -> bool {
        match self.sessions.get(session).and_then(|s| s.conn) {
            Some(conn) => {
                self.close_conn(conn);
                true
            }
            None => false,
        }
    }

    /// Closes every connection, oldest first; how many.
    pub(crate) fn disconnect_all(&mut self) -> usize {
        let conns = self.out.oldest_first(|_| true);
        for &c in &conns {
            self.close_conn(c);
        }
        conns.len()
    }

    /// Whether replies for the connection being served wait in the direct
    /// queue ([`serve`](Self::serve)).
    pub(crate) fn has_direct(&self) -> bool {
        self.out.has_direct()
    }

    /// Moves what was kept apart for the serving task into its own
    /// (see [`Outboxes::take_direct`](crate::outbox::Outboxes::take_direct)).
    pub(crate) fn take_direct(
        &mut self,
        ready: &mut bytes::BytesMut,
        taken: &mut VecDeque<Outgoing>,
    ) {
        self.out.take_direct(ready, taken);
    }

    // ---- the tree and the clock -----------------------------------------------

    /// Sets the next sequence number under `parent` on the leader, and on
    /// each follower once it has applied every txn committed before (a
    /// lagging follower then names the sequential nodes in its backlog as
    /// the leader did, and the ones after as the leader will); false, and
    /// nothing set, if the leader has no such node.
    pub(crate) fn set_sequence_counter(&mut self, parent: &str, next: i32) -> bool {
        let leader = self.ensemble.leader;
        if !self.ensemble.servers[leader]
            .tree
            .set_sequence_counter(parent, next)
        {
            return false;
        }
        for (_, r) in self
            .ensemble
            .servers
            .iter_mut()
            .enumerate()
            .filter(|&(i, _)| i != leader)
        {
            match r.backlog.back_mut() {
                Some(last) => last.then_counters.push((parent.into(), next)),
                None => {
                    r.tree.set_sequence_counter(parent, next);
                }
            }
        }
        true
    }

    /// Moves the session clock on, and does what falls due.
    pub(crate) fn advance_clock(&mut self, by: Duration) {
        self.clock.advance(by);
        self.expire_due();
        self.check_containers_due();
    }

    /// The session clock's time, in ms.
    pub(crate) fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// The session clock's mode.
    pub(crate) fn clock_mode(&self) -> crate::clock::ClockMode {
        self.clock.mode()
    }

    /// What wakes the task that applies time-lagged txns.
    pub(crate) fn lag_wake(&self) -> Arc<Notify> {
        self.lag_wake.clone()
    }

    /// A receiver that sees every change the observers signal (`wait_until`).
    pub(crate) fn subscribe_changes(&self) -> watch::Receiver<u64> {
        self.observers.changes.subscribe()
    }

    /// Forgets the recording and the counters.
    pub(crate) fn clear_recording(&mut self) {
        self.observers.clear();
    }
}
