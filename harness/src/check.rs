//! The invariants, each a pure function of a [`RunRecord`]: the server's
//! history (ordered by zxid) and the clients' own observations. Nothing
//! here touches a running target; [`judge`] turns a record into verdicts.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use zk_mock::record::ChangeKind;

use crate::journal::Event;
use crate::record::RunRecord;
use crate::report::{Handoff, InvariantResult, Outcome, Stats, Status};
use crate::resource::ResourceViolation;
use crate::scenario::Role;
use crate::target::Change;

/// One invariant's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The invariant's name.
    pub name: &'static str,
    /// Whether it could be checked.
    pub checked: bool,
    /// Whether it held.
    pub held: bool,
    /// The evidence.
    pub details: Vec<String>,
}

impl Verdict {
    fn of(name: &'static str, checked: bool, details: Vec<String>) -> Verdict {
        Verdict {
            name,
            checked,
            held: details.is_empty(),
            details,
        }
    }
}

/// One acquisition, from the journal.
#[derive(Debug, Clone)]
struct Acq {
    client: String,
    round: usize,
    token: i64,
    path: Option<String>,
    /// Index in the journal of the Acquired event and of the round's end.
    from: usize,
    to: usize,
}

/// What every invariant reads, worked out once from the record.
struct Facts<'a> {
    r: &'a RunRecord,
    acqs: Vec<Acq>,
    /// Sessions per client (a client may have had several).
    session_client: BTreeMap<i64, String>,
    /// Lock nodes: creation zxid → path.
    created_at: BTreeMap<i64, String>,
    /// Lock nodes: their deletions.
    deleted: BTreeMap<String, Vec<&'a Change>>,
    /// Parents of lock nodes (a semaphore keeps its leases one level down).
    parents: BTreeSet<&'a str>,
}

impl<'a> Facts<'a> {
    fn of(r: &'a RunRecord) -> Facts<'a> {
        let journal = &r.journal;
        let mut session_client = BTreeMap::new();
        for e in journal {
            if let Event::Connected { session } = e.event {
                session_client.insert(session, e.client.clone());
            }
        }
        // Acquisitions, each up to the end of its round.
        let mut acqs = Vec::new();
        for (i, e) in journal.iter().enumerate() {
            if let Event::Acquired { token, path, round } = &e.event {
                let to = journal[i + 1..]
                    .iter()
                    .position(|x| {
                        x.client == e.client
                            && matches!(x.event, Event::Released { .. } | Event::Done)
                    })
                    .map(|p| i + 1 + p)
                    .unwrap_or(journal.len());
                acqs.push(Acq {
                    client: e.client.clone(),
                    round: *round,
                    token: *token,
                    path: path.clone(),
                    from: i,
                    to,
                });
            }
        }
        let mut f = Facts {
            r,
            acqs,
            session_client,
            created_at: BTreeMap::new(),
            deleted: BTreeMap::new(),
            parents: BTreeSet::new(),
        };
        f.parents = r
            .history
            .changes
            .iter()
            .filter(|c| f.under_dir(&c.path))
            .filter_map(|c| c.path.rfind('/').map(|i| &c.path[..i]))
            .collect();
        for c in &r.history.changes {
            if !f.is_lock_node(&c.path) {
                continue;
            }
            match c.kind {
                ChangeKind::Created => {
                    if let Some(z) = c.zxid {
                        f.created_at.insert(z, c.path.clone());
                    }
                }
                ChangeKind::Deleted => f.deleted.entry(c.path.clone()).or_default().push(c),
                _ => {}
            }
        }
        f
    }

    fn under_dir(&self, p: &str) -> bool {
        p.strip_prefix(&self.r.dir)
            .and_then(|r| r.strip_prefix('/'))
            .is_some_and(|r| !r.is_empty())
    }

    /// Any node under the lock directory that is not itself a directory of others.
    fn is_lock_node(&self, p: &str) -> bool {
        self.under_dir(p) && !self.parents.contains(p)
    }

    fn node_of(&self, a: &Acq) -> Option<String> {
        a.path
            .clone()
            .or_else(|| self.created_at.get(&a.token).cloned())
    }

    /// The deletion of the node an acquisition held (the first after it).
    fn deletion_of(&self, a: &Acq) -> Option<&'a Change> {
        let path = self.node_of(a)?;
        self.deleted
            .get(&path)?
            .iter()
            .copied()
            .find(|d| a.token == 0 || d.pos > a.token || d.zxid.is_none())
    }

    /// The resource's own judgement, given the markers the server applied.
    fn resource_violations(&self) -> Vec<ResourceViolation> {
        let r = self.r;
        let applied: BTreeSet<&str> = r
            .history
            .changes
            .iter()
            .filter(|c| c.kind == ChangeKind::Created && r.markers.contains_key(&c.path))
            .map(|c| c.path.as_str())
            .collect();
        crate::resource::judge(&r.journal, |c| r.role(c), |p| applied.contains(p))
    }
}

/// The resource's own judgement (see [`crate::resource`]).
pub fn resource_violations(r: &RunRecord) -> Vec<ResourceViolation> {
    Facts::of(r).resource_violations()
}

/// No two incompatible holders at once: from the clients (the resource) and
/// from the server's history of the markers.
pub fn mutual_exclusion(r: &RunRecord) -> Verdict {
    let f = Facts::of(r);
    mutual_exclusion_of(&f, &f.resource_violations())
}

fn mutual_exclusion_of(f: &Facts<'_>, violations: &[ResourceViolation]) -> Verdict {
    let r = f.r;
    let mut details: Vec<String> = violations
        .iter()
        .filter(|v| v.invariant == "mutual_exclusion")
        .map(|v| {
            format!(
                "clients: at {:.1}ms {}",
                v.t.as_secs_f64() * 1000.0,
                v.detail
            )
        })
        .collect();
    // Server side: critical sections from the enter/exit markers, cut short
    // where the holder's lock node went.
    let mut created_marker: BTreeMap<&str, i64> = BTreeMap::new();
    for c in &r.history.changes {
        if c.kind == ChangeKind::Created && r.markers.contains_key(&c.path) {
            created_marker.insert(&c.path, c.pos);
        }
    }
    let token_deletion: BTreeMap<(String, i64), i64> = f
        .acqs
        .iter()
        .filter_map(|a| {
            f.deletion_of(a)
                .map(|d| ((a.client.clone(), a.token), d.pos))
        })
        .collect();
    let mut sections: Vec<(i64, i64, String, i64)> = Vec::new(); // start, end, client, token
    for (path, m) in &r.markers {
        if !m.enter {
            continue;
        }
        let Some(start) = created_marker.get(path.as_str()).copied() else {
            continue;
        };
        // The runner numbers the exit marker after the entry counter moved
        // on: the exit of `.r{R}.{E}.enter` is `.r{R}.{E+1}.exit`.
        let exit_path = format!(
            "{}/{}.r{}.{}.exit",
            r.res_dir,
            m.client,
            m.round,
            m.entry + 1
        );
        let exit = r
            .markers
            .get(&exit_path)
            .and_then(|_| created_marker.get(exit_path.as_str()).copied());
        // A later re-entry of the same round ends this section too.
        let next = format!(
            "{}/{}.r{}.{}.enter",
            r.res_dir,
            m.client,
            m.round,
            m.entry + 1
        );
        let reentry = created_marker.get(next.as_str()).copied();
        let gone = token_deletion.get(&(m.client.clone(), m.token)).copied();
        let end = [exit, reentry, gone]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(i64::MAX);
        sections.push((start, end, m.client.clone(), m.token));
    }
    sections.sort();
    for (i, a) in sections.iter().enumerate() {
        for b in &sections[i + 1..] {
            if b.0 >= a.1 {
                break;
            }
            let (ra, rb) = (r.role(&a.2), r.role(&b.2));
            if a.2 != b.2 && (ra != Role::Read || rb != Role::Read) {
                details.push(format!(
                    "server: {} (token {:#x}) entered at zxid {:#x} while {} (token {:#x}) had held since zxid {:#x}",
                    b.2, b.3, b.0, a.2, a.3, a.0
                ));
            }
        }
    }
    let mut v = Verdict::of("mutual_exclusion", true, details);
    if v.held {
        v.details.push(format!(
            "{} critical sections checked against the server's history",
            sections.len()
        ));
    }
    v
}

/// No holder touched the resource with a token older than one already used.
pub fn fencing(r: &RunRecord) -> Verdict {
    fencing_of(&resource_violations(r))
}

fn fencing_of(violations: &[ResourceViolation]) -> Verdict {
    let details = violations
        .iter()
        .filter(|v| v.invariant == "fencing")
        .map(|v| format!("at {:.1}ms {}", v.t.as_secs_f64() * 1000.0, v.detail))
        .collect();
    Verdict::of("fencing", true, details)
}

/// A client its lock library still kept busy at the deadline: acquiring,
/// releasing, suspended (a holder waiting to hear whether it still holds)
/// or connecting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stalled {
    /// The client.
    pub client: String,
    /// What it was doing: `acquiring round N` (counted from 1),
    /// `releasing`, `suspended` or `connecting`.
    pub doing: String,
    /// Since when (the journal's time).
    pub since: Duration,
}

impl std::fmt::Display for Stalled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} since {:.0}ms",
            self.client,
            self.doing,
            self.since.as_secs_f64() * 1000.0
        )
    }
}

/// The last event of `client` that says what it was doing (faults and the
/// resource's touches say nothing of it).
fn last_state<'a>(r: &'a RunRecord, client: &str) -> Option<&'a crate::journal::Entry> {
    r.journal
        .iter()
        .rev()
        .filter(|e| e.client == client)
        .find(|e| {
            !matches!(
                e.event,
                Event::Fault { .. } | Event::Enter { .. } | Event::Exit { .. }
            )
        })
}

/// Clients the scenario closed (`close` steps): the application ended
/// them, and they owe nothing after that.
fn closed_clients(r: &RunRecord) -> BTreeSet<&str> {
    r.faults
        .iter()
        .filter(|f| f.action == "close")
        .flat_map(|f| f.clients.iter().map(String::as_str))
        .collect()
}

/// The clients that did not finish before the deadline, did not crash, were
/// not closed by the scenario, and were still inside their library:
/// acquiring, releasing, suspended or connecting. A client still holding at
/// the deadline is not among them: its hold outlasted the run, which is the
/// scenario's doing. Nor is a closed one: a library may say nothing more of
/// a client once it is closed (Curator's driver reports no state after
/// `close`), and the scenario ended it.
pub fn stalled(r: &RunRecord) -> Vec<Stalled> {
    let closed = closed_clients(r);
    r.end
        .unfinished
        .iter()
        .filter(|c| !r.crashed.contains(*c) && !closed.contains(c.as_str()))
        .filter_map(|c| {
            let last = last_state(r, c)?;
            let doing = match &last.event {
                Event::Waiting { round } => format!("acquiring round {}", round + 1),
                Event::Releasing => "releasing".into(),
                Event::Suspended => "suspended".into(),
                Event::Connecting => "connecting".into(),
                _ => return None,
            };
            Some(Stalled {
                client: c.clone(),
                doing,
                since: last.t,
            })
        })
        .collect()
}

/// Whether some client that did not finish still held the lock at the
/// deadline (acquired, and neither released nor lost it since). A client
/// the scenario closed holds nothing: its session went with it.
fn held_at_deadline(r: &RunRecord) -> bool {
    let closed = closed_clients(r);
    r.end
        .unfinished
        .iter()
        .filter(|c| !r.crashed.contains(*c) && !closed.contains(c.as_str()))
        .any(|c| {
            last_state(r, c)
                .is_some_and(|e| matches!(e.event, Event::Acquired { .. } | Event::Resumed))
        })
}

/// The steps anchored to an event whose trigger never came because the
/// lock stalled before it, each with the evidence: a liveness failure of
/// the lock, not a fault of the scenario. None unless liveness is checked,
/// some client stalled (see [`stalled`]) and nobody still held the lock at
/// the deadline; records that do not say which steps were untriggered
/// have none.
pub fn stalled_steps(r: &RunRecord) -> Vec<String> {
    stalled_steps_of(r).into_iter().map(|(_, e)| e).collect()
}

/// [`stalled_steps`], each with the step's label.
fn stalled_steps_of(r: &RunRecord) -> Vec<(&str, String)> {
    if r.invariants.liveness.is_none() || r.end.untriggered.is_empty() || held_at_deadline(r) {
        return Vec::new();
    }
    let stalled = stalled(r);
    if stalled.is_empty() {
        return Vec::new();
    }
    let acquired: Vec<Duration> = r
        .journal
        .iter()
        .filter(|e| matches!(e.event, Event::Acquired { .. }))
        .map(|e| e.t)
        .collect();
    let acquisitions = match acquired.last() {
        None => "no acquisitions".to_string(),
        Some(t) => format!(
            "{} acquisition{}, the last at {:.0}ms",
            acquired.len(),
            if acquired.len() == 1 { "" } else { "s" },
            t.as_secs_f64() * 1000.0
        ),
    };
    let stalled = stalled
        .iter()
        .map(Stalled::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    r.end
        .steps_not_run
        .iter()
        .filter(|s| r.end.untriggered.contains(s))
        .map(|s| {
            (
                s.as_str(),
                format!(
                    "{s} never ran: its trigger had not come at the deadline; {acquisitions}; stalled: {stalled}"
                ),
            )
        })
        .collect()
}

/// Every acquisition finished within `bound`, counted from when it started
/// or from the end of the last fault applied before it finished; every
/// client finished before the deadline. The steps whose trigger the
/// stalled lock kept from coming ([`stalled_steps`]) come first.
pub fn liveness(r: &RunRecord, bound: Duration) -> Verdict {
    let mut details = stalled_steps(r);
    let fault_end_before = |t: Duration| -> Duration {
        r.faults
            .iter()
            .filter(|f| Duration::from_secs_f64(f.t_ms / 1000.0) <= t)
            .map(|f| Duration::from_secs_f64(f.until_ms / 1000.0))
            .max()
            .unwrap_or_default()
    };
    let closed = closed_clients(r);
    let mut open: BTreeMap<&str, Duration> = BTreeMap::new();
    for e in &r.journal {
        if r.crashed.contains(&e.client) {
            continue;
        }
        match &e.event {
            Event::Waiting { .. } => {
                open.insert(&e.client, e.t);
            }
            Event::Acquired { .. }
            | Event::GaveUp { .. }
            | Event::Error { .. }
            | Event::Expired
            | Event::Done => {
                if let Some(start) = open.remove(e.client.as_str()) {
                    let from = start.max(fault_end_before(e.t).min(e.t));
                    let waited = e.t.saturating_sub(from);
                    if waited > bound {
                        details.push(format!(
                            "{} waited {:.0}ms (bound {}) from {:.0}ms",
                            e.client,
                            waited.as_secs_f64() * 1000.0,
                            humantime::format_duration(bound),
                            from.as_secs_f64() * 1000.0
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    for (c, start) in open {
        if closed.contains(c) {
            continue;
        }
        details.push(format!(
            "{c} started waiting at {:.0}ms and never acquired",
            start.as_secs_f64() * 1000.0
        ));
    }
    for c in &r.end.unfinished {
        if !r.crashed.contains(c) && !closed.contains(c.as_str()) {
            details.push(format!("{c} did not finish before the deadline"));
        }
    }
    details.dedup();
    Verdict::of("liveness", true, details)
}

/// No lock node was left once every client was done.
pub fn no_orphans(r: &RunRecord) -> Verdict {
    no_orphans_of(&Facts::of(r))
}

fn no_orphans_of(f: &Facts<'_>) -> Verdict {
    let r = f.r;
    let details = r
        .end
        .orphans
        .iter()
        .map(|n| {
            let path = format!("{}/{n}", r.dir);
            let owner = r
                .history
                .changes
                .iter()
                .rev()
                .find(|c| c.path == path && c.kind == ChangeKind::Created)
                .and_then(|c| c.session)
                .and_then(|s| f.session_client.get(&s).cloned());
            match owner {
                Some(c) => format!("{path} left by {c}"),
                None => format!("{path} left behind"),
            }
        })
        .collect();
    Verdict::of("no_orphans", true, details)
}

/// Every lock node that went while its holder held it had its holder's
/// library report the loss within that round.
pub fn lost_noticed(r: &RunRecord) -> Verdict {
    lost_noticed_of(&Facts::of(r))
}

fn lost_noticed_of(f: &Facts<'_>) -> Verdict {
    let r = f.r;
    let mut details = Vec::new();
    let mut checked = false;
    for a in &f.acqs {
        if r.crashed.contains(&a.client) {
            continue;
        }
        // The application closed the client (a `close` step) before or
        // while it held: the guard went with the client, and its session's
        // end is the application's own doing.
        let held_until = r
            .journal
            .get(a.to.min(r.journal.len().saturating_sub(1)))
            .map_or(f64::MAX, |e| e.t.as_secs_f64() * 1000.0);
        let closed = r
            .faults
            .iter()
            .any(|x| x.action == "close" && x.clients.contains(&a.client) && x.t_ms <= held_until);
        if closed {
            continue;
        }
        let Some(d) = f.deletion_of(a) else { continue };
        let Some(del_session) = d.session else {
            continue;
        };
        checked = true;
        let own = f.session_client.get(&del_session) == Some(&a.client);
        if !d.by_session_end && own {
            continue;
        }
        // A holder that left its critical section normally (its exit marker
        // reached the server before the node went) lost nothing it held:
        // the node went during or after its release.
        let exit_prefix = format!("{}/{}.r{}.", r.res_dir, a.client, a.round);
        let left_first = r.history.changes.iter().any(|c| {
            c.kind == ChangeKind::Created
                && c.pos < d.pos
                && c.path.starts_with(&exit_prefix)
                && c.path.ends_with(".exit")
        });
        if left_first {
            continue;
        }
        let noticed = r.journal[a.from..a.to.min(r.journal.len())]
            .iter()
            .any(|e| e.client == a.client && matches!(e.event, Event::Lost));
        if !noticed {
            details.push(format!(
                "{} held token {:#x}; its node {} went at zxid {:#x} ({}) and its guard never reported the loss",
                a.client,
                a.token,
                d.path,
                d.pos,
                if d.by_session_end { "session expired" } else { "deleted by another session" }
            ));
        }
    }
    Verdict::of("lost_noticed", checked, details)
}

/// The clients' operations, Jepsen-style.
pub fn operations(r: &RunRecord) -> Vec<crate::history::Op> {
    let processes: BTreeMap<String, (usize, Role)> = r
        .clients
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.clone(), (i, c.role)))
        .collect();
    crate::history::build(&r.journal, &processes)
}

/// The clients' history fits a fenced mutex.
pub fn fenced_mutex(ops: &[crate::history::Op]) -> Verdict {
    let (mut details, checked) = crate::history::check_fenced_mutex(ops);
    let held = details.is_empty();
    if held {
        details.push(format!(
            "{checked} exclusive acquisitions in completion order, tokens strictly increasing"
        ));
    }
    Verdict {
        name: "fenced_mutex",
        checked: checked > 0,
        held,
        details,
    }
}

/// Each deletion of a lock node, with the notifications it caused.
pub fn handoffs(r: &RunRecord) -> Vec<Handoff> {
    handoffs_of(&Facts::of(r))
}

fn handoffs_of(f: &Facts<'_>) -> Vec<Handoff> {
    let r = f.r;
    let owner_of: BTreeMap<String, String> = f
        .acqs
        .iter()
        .filter_map(|a| f.node_of(a).map(|p| (p, a.client.clone())))
        .collect();
    r.history
        .changes
        .iter()
        .filter(|c| c.kind == ChangeKind::Deleted && f.is_lock_node(&c.path))
        .map(|c| Handoff {
            zxid: c.pos,
            path: c.path.clone(),
            from: owner_of.get(&c.path).cloned(),
            by_session_end: c.by_session_end,
            notifications: r.history.notifications.as_ref().map(|ns| {
                ns.iter()
                    .filter(|n| {
                        Some(n.zxid) == c.zxid
                            && Some(n.session) != c.session
                            && n.session != r.end.admin_session
                    })
                    .count() as u64
            }),
        })
        .collect()
}

/// The notification budget per hand-off (and the herd's minimum).
pub fn notifications_per_handoff(
    r: &RunRecord,
    handoffs: &[Handoff],
    at_most: Option<u64>,
    at_least: Option<u64>,
) -> Verdict {
    let mut details = Vec::new();
    let checked = r.history.notifications.is_some();
    if let Some(k) = at_most {
        for h in handoffs {
            if let Some(n) = h.notifications {
                if n > k {
                    details.push(format!(
                        "deleting {} (zxid {:#x}) sent {n} notifications; budget {k}",
                        h.path, h.zxid
                    ));
                }
            }
        }
    }
    let max_per = handoffs.iter().filter_map(|h| h.notifications).max();
    if let (Some(min), Some(max)) = (at_least, max_per) {
        if max < min {
            details.push(format!(
                "no hand-off sent {min} notifications or more (the most was {max})"
            ));
        }
    }
    if !checked {
        details.push("the target cannot count notifications per hand-off".into());
    }
    Verdict {
        name: "notifications_per_handoff",
        checked,
        held: details.is_empty() || !checked,
        details,
    }
}

/// Why a record cannot be judged as a pass, whatever its invariants say.
pub fn run_errors(r: &RunRecord) -> Vec<String> {
    let mut errors = Vec::new();
    // A client that never got a session did not play its part.
    for e in &r.journal {
        if let Event::Error { message, .. } = &e.event {
            if message.starts_with("open: ") {
                errors.push(format!("{} could not open a session: {message}", e.client));
            }
        }
    }
    // A step whose trigger a stalled lock kept from coming is liveness's
    // evidence instead (see `stalled_steps`).
    let stalled = stalled_steps_of(r);
    for s in &r.end.steps_not_run {
        if !stalled.iter().any(|(label, _)| label == s) {
            errors.push(format!("{s} never ran"));
        }
    }
    if r.request_faults && r.request_faults_fired == Some(0) {
        errors
            .push("the request faults (lose_reply, drop_request, fail, delay) never fired".into());
    }
    errors
}

/// Everything the checks make of a record.
#[derive(Debug, Clone)]
pub struct Judgement {
    /// The invariants' results, in the scenario's terms.
    pub invariants: Vec<InvariantResult>,
    /// Why the run is an error (or, for a negative scenario that was not
    /// caught, nothing: its missed invariants say so).
    pub errors: Vec<String>,
    /// The verdict.
    pub status: Status,
    /// Counts.
    pub stats: Stats,
    /// The hand-offs.
    pub handoffs: Vec<Handoff>,
    /// The clients' operations.
    pub operations: Vec<crate::history::Op>,
    /// The resource's violations.
    pub violations: Vec<ResourceViolation>,
    /// The end of the server's text history, for a run that did not pass.
    pub history_tail: Vec<String>,
}

/// Judges a record: every invariant the scenario asks for, then the verdict.
pub fn judge(r: &RunRecord) -> Judgement {
    let f = Facts::of(r);
    let inv = &r.invariants;
    let violations = f.resource_violations();
    let operations = operations(r);
    let handoffs = handoffs_of(&f);
    let mut verdicts = Vec::new();
    if inv.mutual_exclusion {
        verdicts.push(mutual_exclusion_of(&f, &violations));
    }
    if inv.fencing {
        verdicts.push(fencing_of(&violations));
    }
    if let Some(bound) = inv.liveness {
        verdicts.push(liveness(r, bound.0));
    }
    if inv.no_orphans {
        verdicts.push(no_orphans_of(&f));
    }
    if inv.lost_noticed {
        verdicts.push(lost_noticed_of(&f));
    }
    if inv.fenced_mutex {
        verdicts.push(fenced_mutex(&operations));
    }
    if inv.notifications_per_handoff.is_some() || inv.min_notifications_per_handoff.is_some() {
        verdicts.push(notifications_per_handoff(
            r,
            &handoffs,
            inv.notifications_per_handoff,
            inv.min_notifications_per_handoff,
        ));
    }
    let expected: BTreeSet<&str> = r.expect_violated.iter().map(String::as_str).collect();
    let mut invariants: Vec<InvariantResult> = verdicts
        .into_iter()
        .map(|v| InvariantResult {
            name: v.name.to_string(),
            checked: v.checked,
            held: v.held,
            expected_violation: expected.contains(v.name),
            details: v.details,
        })
        .collect();
    let mut errors = run_errors(r);
    let violated: BTreeSet<&str> = invariants
        .iter()
        .filter(|i| i.checked && !i.held)
        .map(|i| i.name.as_str())
        .collect();
    let status = if !errors.is_empty() {
        Status::Error
    } else if expected.is_empty() {
        if violated.is_empty() {
            Status::Passed
        } else {
            Status::Failed
        }
    } else if expected.is_subset(&violated) {
        Status::Caught
    } else {
        let missed: BTreeSet<String> = expected
            .difference(&violated)
            .map(|s| s.to_string())
            .collect();
        errors.clear();
        invariants
            .iter_mut()
            .filter(|i| missed.contains(&i.name))
            .for_each(|i| i.details.push("expected to be violated, but held".into()));
        Status::Failed
    };
    let stats = Stats {
        acquisitions: f.acqs.len(),
        handoffs: handoffs.len(),
        server_notifications: r.history.notifications.as_ref().map(|n| {
            n.iter()
                .filter(|n| n.session != r.end.admin_session)
                .count() as u64
        }),
        max_notifications_per_handoff: handoffs.iter().filter_map(|h| h.notifications).max(),
        client_notifications: r.counters.notifications,
        children_reads: r.counters.children_reads,
        sessions: f.session_client.len(),
    };
    let history_tail = if status != Status::Passed {
        let keys = [r.dir.as_str(), r.res_dir.as_str(), " sess "];
        let relevant: Vec<&String> = r
            .history
            .text
            .iter()
            .filter(|l| keys.iter().any(|k| l.contains(k)))
            .collect();
        relevant
            .iter()
            .skip(relevant.len().saturating_sub(40))
            .map(|s| s.to_string())
            .collect()
    } else {
        Vec::new()
    };
    Judgement {
        invariants,
        errors,
        status,
        stats,
        handoffs,
        operations,
        violations,
        history_tail,
    }
}

impl Judgement {
    /// Writes the judgement and the record's own data into an outcome.
    pub fn apply(self, r: &RunRecord, o: &mut Outcome) {
        o.invariants = self.invariants;
        o.errors.extend(self.errors);
        o.status = self.status;
        o.stats = self.stats;
        o.handoffs = self.handoffs;
        o.history = self.operations;
        o.resource_violations = self.violations;
        o.history_tail = self.history_tail;
        o.journal = r.journal.clone();
        o.faults = r.faults.clone();
    }
}

/// The outcome of a recorded run, judged again.
pub fn outcome(r: &RunRecord) -> Outcome {
    let mut o = Outcome {
        name: r.scenario.clone(),
        file: r.file.clone(),
        description: String::new(),
        recipe: r.recipe.clone(),
        implementation: r.implementation.clone(),
        implementation_version: r.implementation.clone(),
        target: if r.target == "mock" { "mock" } else { "real" },
        seed: r.seed,
        clients: r.clients.iter().map(|c| c.name.clone()).collect(),
        replay: r.replay.clone(),
        ..Outcome::default()
    };
    judge(r).apply(r, &mut o);
    o
}
