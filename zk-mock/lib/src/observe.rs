//! The pipeline's observers: what sees every request, change, watch,
//! notification and session event without being part of the data model.
//!
//! The core (prep → commit → per-server apply, in `core/`) reports each
//! event once, where ZooKeeper's own pipeline has it: a request when it is
//! answered, or, for a write through a lagging follower, when the leader
//! commits it (`FinalRequestProcessor`), a change as the leader applies
//! its transaction, a notification as a server's watch manager sends it, a
//! watch when a read registers it, a session event when the session tracker
//! decides it. [`Observers`] hands each one to:
//!
//! - [`Tally`], the counters: totals, per session and per path (what
//!   [`Metrics::totals`](crate::Metrics::totals) and
//!   [`Recording::per_session`] / [`Recording::per_path`] show). Always on.
//!   The totals and the sessions' counters are counted as each event
//!   happens. With the log on, the paths' counters are tallied from it
//!   when they are read, or before the log drops a record
//!   ([`Tally::catch_up`]), with the same result: a request does not pay for
//!   a lookup in a table of every path ever named.
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

use std::sync::Arc;

use rand::rngs::SmallRng;
use tokio::sync::watch;

use crate::fault::{RequestView, RuleSet, Verdict};
use crate::record::{ChangeKind, LogKind, Recorder, Recording, SessionEvent, Tally, WatchKind};
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
    /// Bumped, while a [`ZkMock::wait_until`](crate::ZkMock::wait_until)
    /// waits on it, after every request and after each expiry, kill,
    /// restart, election, opened gate, container check and reset.
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
        let err = r.err != 0;
        let count = |c: &mut crate::record::Counters| {
            c.requests += 1;
            if err {
                c.errors += 1;
            }
        };
        self.tally.count(r.session, count);
        if self.keeps_paths(LogKind::Request) {
            self.log.request(r);
        } else if let Some(p) = r.path.as_deref() {
            self.tally.count_path(p, count);
        }
    }

    /// A read registered a watch.
    pub(crate) fn watch(&mut self, at_ms: u64, session: i64, path: &str, kind: WatchKind) {
        self.tally.count(session, |c| c.watches += 1);
        if self.keeps_paths(LogKind::Watch) {
            self.log.watch(at_ms, session, path, kind);
        } else {
            self.tally.count_path(path, |c| c.watches += 1);
        }
    }

    /// A server queued a notification.
    pub(crate) fn notification(&mut self, n: NotificationSeen<'_>) {
        self.tally.count(n.session, |c| c.notifications += 1);
        if self.keeps_paths(LogKind::Notification) {
            self.log.notification(n);
        } else {
            self.tally.count_path(n.path, |c| c.notifications += 1);
        }
    }

    /// Whether the log keeps the per-path counts of the next record of
    /// `kind` until they are tallied (see [`Tally::catch_up`]); with the log
    /// full, what it is about to drop is tallied first (with everything
    /// logged after it). False with the log off: the caller counts at once.
    fn keeps_paths(&mut self, kind: LogKind) -> bool {
        if !self.log.enabled() {
            return false;
        }
        let uncounted = self.log.next_dropped(kind);
        if uncounted.is_some_and(|seq| seq >= self.tally.paths_counted_to()) {
            // Everything logged so far, not only the record about to go:
            // the records that follow it are then dropped with nothing to
            // tally, until the log has turned over once. A full log costs
            // each record one count, not a search of the log per record.
            self.tally.catch_up(&self.log, self.log.end_seq());
        }
        true
    }

    /// Tallies whatever the log holds that the per-path counters have not
    /// counted yet: before they are read.
    pub(crate) fn settle(&mut self) {
        if self.log.enabled() {
            self.tally.catch_up(&self.log, self.log.end_seq());
        }
    }

    /// The session tracker decided something about a session.
    pub(crate) fn session(&mut self, at_ms: u64, session: i64, event: SessionEvent, zxid: i64) {
        if matches!(event, SessionEvent::Closed | SessionEvent::Expired) {
            self.tally.session_ended(session);
        }
        self.log.session(at_ms, session, event, zxid);
    }

    /// The leader applied a transaction that changed a node. `path` is
    /// the tree's own copy (the log keeps it, shared, not copied).
    pub(crate) fn change(
        &mut self,
        at_ms: u64,
        zxid: i64,
        session: i64,
        path: &Arc<str>,
        kind: ChangeKind,
    ) {
        if self.keeps_paths(LogKind::Change) {
            self.log.change(at_ms, zxid, session, path.clone(), kind);
        } else {
            self.tally.path_changed(path, kind);
        }
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
    pub(crate) fn recording(&mut self, seed: u64) -> Recording {
        self.settle();
        Recording::of(&self.log, &self.tally, seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::EventType;
    use crate::record::tests::{note, req};
    use crate::record::{NotificationQuery, RETAINED_ENDED};
    use crate::SessionId;

    #[test]
    fn counters_of_ended_sessions_and_deleted_paths_are_bounded() {
        // Even with the log off, as counters are kept either way.
        let mut r = Observers::new(Recorder::new(false, 10));
        let n = RETAINED_ENDED as i64 + 500;
        for id in 0..n {
            let path = format!("/e-{id}");
            r.request(req(id, 1, 1, Some(path.clone()), id));
            r.change(0, id, id, &path.as_str().into(), ChangeKind::Deleted);
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
        r.change(0, 2, 1, &"/lock".into(), ChangeKind::Deleted);
        r.change(0, 3, 1, &"/lock".into(), ChangeKind::Created);
        r.request(req(1, 2, 1, Some("/lock".into()), 3));
        for id in 0..RETAINED_ENDED as i64 + 10 {
            r.change(0, id, 1, &format!("/e-{id}").into(), ChangeKind::Deleted);
        }
        assert_eq!(r.tally.per_path["/lock"].requests, 2);
        // Deleted again: it ages out like any other.
        r.change(0, 9, 1, &"/lock".into(), ChangeKind::Deleted);
        for id in 0..RETAINED_ENDED as i64 {
            r.change(0, id, 1, &format!("/f-{id}").into(), ChangeKind::Deleted);
        }
        assert!(!r.tally.per_path.contains_key("/lock"));

        // After clear, deletions from before it no longer age out new counters.
        r.change(0, 1, 1, &"/x".into(), ChangeKind::Deleted);
        r.clear();
        r.request(req(1, 3, 1, Some("/x".into()), 1));
        for id in 0..RETAINED_ENDED as i64 {
            r.change(0, id, 1, &format!("/g-{id}").into(), ChangeKind::Deleted);
        }
        assert_eq!(r.tally.per_path["/x"].requests, 1);
    }

    #[test]
    fn per_path_counters_tallied_from_the_log_are_those_counted_at_once() {
        // The same history through an observer with the log off (counted
        // as it happens) and through ones with the log on (tallied lazily,
        // before reading and before the log drops a record), with logs small
        // enough to drop most of it and deletions enough to forget paths.
        let mut eager = Observers::new(Recorder::new(false, 10));
        let mut lazy: Vec<Observers> = [1, 7, 100, 100_000]
            .into_iter()
            .map(|cap| Observers::new(Recorder::new(true, cap)))
            .collect();
        let mut x = 12345u64;
        let mut rand = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let n = RETAINED_ENDED as u64 * 12;
        for i in 0..n {
            let path = format!("/p-{}", rand(RETAINED_ENDED as u64 + 500));
            let session = rand(5) as i64;
            let step = rand(6);
            for o in std::iter::once(&mut eager).chain(lazy.iter_mut()) {
                match step {
                    0 | 1 => {
                        let mut r = req(session, i as i32, 1, Some(path.clone()), i as i64);
                        r.err = if step == 1 { -101 } else { 0 };
                        o.request(r);
                    }
                    2 => o.watch(0, session, &path, WatchKind::Data),
                    3 => o.notification(NotificationSeen {
                        at_ms: 0,
                        session,
                        path: &path,
                        kind: WatchKind::Data,
                        event_type: 3,
                        zxid: i as i64,
                        server: 0,
                    }),
                    4 => o.change(
                        0,
                        i as i64,
                        session,
                        &path.as_str().into(),
                        ChangeKind::Deleted,
                    ),
                    _ => o.change(
                        0,
                        i as i64,
                        session,
                        &path.as_str().into(),
                        ChangeKind::Created,
                    ),
                }
            }
            if i % 20_000 == 0 {
                // Reading in the middle settles what is logged so far.
                let want = eager.recording(1).per_path;
                for o in &mut lazy {
                    assert_eq!(o.recording(1).per_path, want, "after {i} events");
                }
            }
        }
        let want = eager.recording(1);
        assert!(want.per_path.len() > 1000, "{}", want.per_path.len());
        for o in &mut lazy {
            let got = o.recording(1);
            assert_eq!(got.per_path, want.per_path);
            assert_eq!(got.per_session, want.per_session);
            assert_eq!(got.total, want.total);
        }
    }

    #[test]
    fn the_log_is_bounded_but_counters_are_not() {
        let mut r = Observers::new(Recorder::new(true, 2));
        for i in 0..5 {
            r.request(req(7, i, 4, Some("/a".into()), 1));
        }
        let s = r.recording(1);
        assert_eq!(s.requests.count(), 2);
        assert_eq!(s.dropped, 3);
        assert_eq!(s.per_session[&SessionId(7)].requests, 5);
        assert_eq!(s.per_path["/a"].requests, 5);
        assert_eq!(
            s.requests.iter().map(|r| r.xid).collect::<Vec<_>>(),
            vec![3, 4]
        );
    }

    #[test]
    fn json_lines_are_in_history_order() {
        let mut r = Observers::new(Recorder::new(true, 10));
        r.request(req(7, 1, 4, Some("/a".into()), 1));
        r.watch(0, 7, "/a", WatchKind::Data);
        r.notification(note(7, "/a", WatchKind::Data, 3, 2));
        let text = r.recording(9).to_json_lines();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(
            lines[0].contains("\"type\":\"request\"") && lines[0].contains("\"op\":\"getData\"")
        );
        assert!(lines[1].contains("\"type\":\"watch\""));
        assert!(
            lines[2].contains("\"type\":\"notification\"") && lines[2].contains("\"event_type\":3")
        );
    }

    #[test]
    fn queries_filter() {
        let mut r = Observers::new(Recorder::new(true, 10));
        r.notification(note(1, "/a", WatchKind::Data, 3, 2));
        r.notification(note(2, "/a", WatchKind::Child, 4, 2));
        r.notification(note(2, "/b", WatchKind::Data, 2, 3));
        let rec = r.recording(9);
        let notes = || rec.notifications.iter();
        assert_eq!(notes().to_session(2).count(), 2);
        let a_children = notes().by_path("/a").event(EventType::NodeChildrenChanged);
        assert_eq!(a_children.count(), 1);
        assert_eq!(notes().zxid(3).count(), 1);
        assert_eq!(notes().kind(WatchKind::Child).count(), 1);
    }
}
