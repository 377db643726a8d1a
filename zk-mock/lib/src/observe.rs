//! The pipeline's observers: what sees every request, change, watch,
//! notification and session event without being part of the data model.
//!
//! The core (prep → commit → per-server apply, in `dispatch`) reports each
//! event once, where ZooKeeper's own pipeline has it: a request when its
//! answer is queued (`FinalRequestProcessor`), a change as the leader applies
//! its transaction, a notification as a server's watch manager sends it, a
//! watch when a read registers it, a session event when the session tracker
//! decides it. [`Observers`] hands each one to:
//!
//! - [`Tally`], the counters: totals, per session and per path (what
//!   [`Metrics::totals`](crate::Metrics::totals) and
//!   [`Recording::per_session`] / [`Recording::per_path`] show). Always on.
//! - [`Recorder`], the bounded log behind [`ZkMock::inspect`](crate::ZkMock::inspect)
//!   and [`ZkMock::recorded`](crate::ZkMock::recorded). On unless the
//!   builder turns it off.
//! - the change signal that wakes [`ZkMock::wait_until`](crate::ZkMock::wait_until).
//!
//! The fault rules are the one observer with a say: they see each request
//! before it is applied ([`Observers::judge`]) and may return a verdict,
//! which the core then plays. None of them touches the tree, the sessions
//! or a connection: they cannot change what a client sees except through a
//! verdict.

use rand::rngs::SmallRng;
use tokio::sync::watch;

use crate::fault::{RequestView, RuleSet, Verdict};
use crate::record::{ChangeKind, Recorder, Recording, SessionEvent, Tally, WatchKind};
pub(crate) use crate::record::{NotificationSeen, RequestSeen};

/// Everything that watches the pipeline: the fault rules, the counters,
/// the log and the change signal.
#[derive(Debug)]
pub(crate) struct Observers {
    /// The installed fault rules, consulted before each request.
    pub(crate) rules: RuleSet,
    /// The counters.
    pub(crate) tally: Tally,
    /// The bounded log.
    pub(crate) log: Recorder,
    /// Bumped after every request and expiry, for [`ZkMock::wait_until`](crate::ZkMock::wait_until).
    pub(crate) changes: watch::Sender<u64>,
}

impl Observers {
    pub(crate) fn new(log: Recorder) -> Observers {
        Observers {
            rules: RuleSet::default(),
            tally: Tally::default(),
            log,
            changes: watch::channel(0).0,
        }
    }

    /// The fault rules' verdict on a request about to be applied, if one matches.
    pub(crate) fn judge(
        &mut self,
        request: &RequestView<'_>,
        rng: &mut SmallRng,
    ) -> Option<Verdict> {
        self.rules.evaluate(request, rng)
    }

    /// A request was answered (or dropped, or faulted).
    pub(crate) fn request(&mut self, r: RequestSeen) {
        self.tally.count(r.session, r.path.as_deref(), |c| {
            c.requests += 1;
            if r.err != 0 {
                c.errors += 1;
            }
        });
        self.log.request(r);
    }

    /// A read registered a watch.
    pub(crate) fn watch(&mut self, at_ms: u64, session: i64, path: &str, kind: WatchKind) {
        self.tally.count(session, Some(path), |c| c.watches += 1);
        self.log.watch(at_ms, session, path, kind);
    }

    /// A server queued a notification.
    pub(crate) fn notification(&mut self, n: NotificationSeen<'_>) {
        self.tally
            .count(n.session, Some(n.path), |c| c.notifications += 1);
        self.log.notification(n);
    }

    /// The session tracker decided something about a session.
    pub(crate) fn session(&mut self, at_ms: u64, session: i64, event: SessionEvent, zxid: i64) {
        if matches!(event, SessionEvent::Closed | SessionEvent::Expired) {
            self.tally.session_ended(session);
        }
        self.log.session(at_ms, session, event, zxid);
    }

    /// The leader applied a transaction that changed a node.
    pub(crate) fn change(
        &mut self,
        at_ms: u64,
        zxid: i64,
        session: i64,
        path: &str,
        kind: ChangeKind,
    ) {
        self.tally.path_changed(path, kind);
        self.log.change(at_ms, zxid, session, path, kind);
    }

    /// Wakes whoever waits for the server to move on (`wait_until`). With
    /// nobody waiting it does nothing: a waiter subscribes under the state's
    /// lock, as this is called, before it first looks, so it misses nothing,
    /// and a request does not pay for waking an empty channel's eight
    /// notifiers.
    pub(crate) fn changed(&self) {
        if self.changes.receiver_count() > 0 {
            self.changes.send_modify(|n| *n += 1);
        }
    }

    /// Forgets the log and the counters (the rules stay).
    pub(crate) fn clear(&mut self) {
        self.log.clear();
        self.tally = Tally::default();
    }

    /// An owned copy of the log and the counters.
    pub(crate) fn recording(&self, seed: u64) -> Recording {
        Recording::of(&self.log, &self.tally, seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::tests::req;
    use crate::record::RETAINED_ENDED;

    #[test]
    fn counters_of_ended_sessions_and_deleted_paths_are_bounded() {
        // Even with the log off, as counters are kept either way.
        let mut r = Observers::new(Recorder::new(false, 10));
        let n = RETAINED_ENDED as i64 + 500;
        for id in 0..n {
            let path = format!("/e-{id}");
            r.request(req(id, 1, 1, Some(path.clone()), id));
            r.change(0, id, id, &path, ChangeKind::Deleted);
            r.session(0, id, SessionEvent::Expired, id);
        }
        assert_eq!(r.tally.per_session.len(), RETAINED_ENDED);
        assert_eq!(r.tally.per_path.len(), RETAINED_ENDED);
        // The most recent are the ones kept; a live session keeps its own.
        assert!(
            r.tally.per_session.contains_key(&(n - 1)) && !r.tally.per_session.contains_key(&0)
        );
        r.request(req(-7, 1, 1, None, 1));
        assert_eq!(r.tally.per_session[&-7].requests, 1);
        assert_eq!(r.tally.total.requests, n as u64 + 1);
    }

    #[test]
    fn a_path_created_again_keeps_its_counters_and_clear_starts_afresh() {
        let mut r = Observers::new(Recorder::new(false, 10));
        // "/lock" is deleted, created again (live), and many other paths
        // are deleted after it: the live path's counters stay.
        r.request(req(1, 1, 1, Some("/lock".into()), 1));
        r.change(0, 2, 1, "/lock", ChangeKind::Deleted);
        r.change(0, 3, 1, "/lock", ChangeKind::Created);
        r.request(req(1, 2, 1, Some("/lock".into()), 3));
        for id in 0..RETAINED_ENDED as i64 + 10 {
            r.change(0, id, 1, &format!("/e-{id}"), ChangeKind::Deleted);
        }
        assert_eq!(r.tally.per_path["/lock"].requests, 2);
        // Deleted again: it ages out like any other.
        r.change(0, 9, 1, "/lock", ChangeKind::Deleted);
        for id in 0..RETAINED_ENDED as i64 {
            r.change(0, id, 1, &format!("/f-{id}"), ChangeKind::Deleted);
        }
        assert!(!r.tally.per_path.contains_key("/lock"));

        // After clear, deletions from before it no longer age out new counters.
        r.change(0, 1, 1, "/x", ChangeKind::Deleted);
        r.clear();
        r.request(req(1, 3, 1, Some("/x".into()), 1));
        for id in 0..RETAINED_ENDED as i64 {
            r.change(0, id, 1, &format!("/g-{id}"), ChangeKind::Deleted);
        }
        assert_eq!(r.tally.per_path["/x"].requests, 1);
    }
}
