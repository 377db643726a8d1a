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

use crate::hash::Map;
use std::collections::{BTreeMap, VecDeque};
use std::hash::Hash;
use std::sync::Arc;

use rand::rngs::SmallRng;
use tokio::sync::watch;

use crate::compact::Sparse;
use crate::fault::{RequestView, RuleSet, Verdict};
use crate::record::{
    ChangeKind, Counters, Recorder, Recording, SessionEvent, WatchKind, RETAINED_ENDED,
};
use crate::SessionId;

/// A request as the core answered it (or dropped, or faulted).
#[derive(Debug)]
pub(crate) struct RequestSeen {
    pub(crate) at_ms: u64,
    pub(crate) session: i64,
    pub(crate) xid: i32,
    pub(crate) op: i32,
    pub(crate) path: Option<String>,
    pub(crate) err: i32,
    pub(crate) zxid: i64,
    /// The fault verdict played, if a rule matched.
    pub(crate) verdict: Option<String>,
    /// The server it came through.
    pub(crate) server: usize,
}

/// A notification as a server queued it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NotificationSeen<'a> {
    pub(crate) at_ms: u64,
    pub(crate) session: i64,
    pub(crate) path: &'a str,
    pub(crate) kind: WatchKind,
    pub(crate) event_type: i32,
    pub(crate) zxid: i64,
    pub(crate) server: usize,
}

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
        let mut r = self.log.snapshot(seed);
        r.per_session = self
            .tally
            .per_session
            .iter()
            .map(|(id, c)| (SessionId(*id), *c))
            .collect();
        r.per_path = self.tally.per_path_sorted();
        r.total = self.tally.total;
        r
    }
}

/// The counters: totals, per session and per path. Unbounded for what is
/// live; of what ended (sessions closed or expired, paths deleted) only the
/// last [`RETAINED_ENDED`] keep theirs.
///
/// Every request, watch and notification counts against its path, so the
/// path table is a hash map (one hash and one comparison per count, where
/// an ordered map compared the path against a dozen others); it is sorted
/// only when a [`Recording`] is taken.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub(crate) total: Counters,
    pub(crate) per_session: BTreeMap<i64, Counters>,
    pub(crate) per_path: Map<Box<str>, Counters>,
    ended_sessions: Ended<i64>,
    deleted_paths: Ended<Arc<str>>,
}

impl Tally {
    fn count(&mut self, session: i64, path: Option<&str>, f: impl Fn(&mut Counters)) {
        f(&mut self.total);
        f(self.per_session.entry(session).or_default());
        if let Some(p) = path {
            match self.per_path.get_mut(p) {
                Some(c) => f(c),
                None => f(self.per_path.entry(p.into()).or_default()),
            }
        }
    }

    fn session_ended(&mut self, session: i64) {
        let per_session = &mut self.per_session;
        self.ended_sessions.end(session, |old| {
            per_session.remove(old);
        });
    }

    fn path_changed(&mut self, path: &str, kind: ChangeKind) {
        match kind {
            ChangeKind::Deleted => {
                let per_path = &mut self.per_path;
                self.deleted_paths.end(path.into(), |old| {
                    per_path.remove(&**old);
                    per_path.shrink_if_sparse();
                });
            }
            ChangeKind::Created => self.deleted_paths.revive(path),
            ChangeKind::DataChanged => {}
        }
    }

    /// The path counters, in path order.
    pub(crate) fn per_path_sorted(&self) -> BTreeMap<String, Counters> {
        self.per_path
            .iter()
            .map(|(p, c)| (p.to_string(), *c))
            .collect()
    }
}

/// Keys (sessions, paths) that ended, oldest first: their counters are kept
/// for the last [`RETAINED_ENDED`] of them, so a long-running server's
/// counters stay bounded by what is live. A key that comes back (a path
/// created again) is live again and keeps its counters.
#[derive(Debug)]
struct Ended<K> {
    order: VecDeque<(K, u64)>,
    /// Each key's latest end, by its number in `order`, while it has ended.
    latest: Map<K, u64>,
    next: u64,
}

impl<K> Default for Ended<K> {
    fn default() -> Self {
        Ended {
            order: VecDeque::new(),
            latest: Map::default(),
            next: 0,
        }
    }
}

impl<K: Hash + Eq + Clone> Ended<K> {
    /// `key` ended; the key that ended [`RETAINED_ENDED`] ends ago is
    /// `forget`ten (its counters go), unless it ended again since or came
    /// back.
    fn end(&mut self, key: K, forget: impl FnOnce(&K)) {
        self.next += 1;
        self.latest.insert(key.clone(), self.next);
        self.order.push_back((key, self.next));
        if self.order.len() > RETAINED_ENDED {
            if let Some((old, n)) = self.order.pop_front() {
                if self.latest.get(&old) == Some(&n) {
                    self.latest.remove(&old);
                    self.latest.shrink_if_sparse();
                    forget(&old);
                }
            }
        }
    }

    /// `key` is live again: its counters stay.
    fn revive<Q: Hash + Eq + ?Sized>(&mut self, key: &Q)
    where
        K: std::borrow::Borrow<Q>,
    {
        if self.latest.remove(key).is_some() {
            self.latest.shrink_if_sparse();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::tests::req;

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
