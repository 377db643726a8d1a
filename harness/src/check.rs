//! The invariants, checked from the server's history (ordered by zxid) and
//! from the clients' own observations.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use zk_mock::record::ChangeKind;

use crate::journal::Event;
use crate::report::{Handoff, InvariantResult, Outcome, Status};
use crate::runner::{Ctx, End};
use crate::scenario::Role;

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
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

pub(crate) fn check(ctx: &Ctx, end: End, o: &mut Outcome) {
    let inv = &ctx.loaded.scenario.invariants;
    let journal = ctx.journal.entries();
    let history = ctx.target.history(&[ctx.dir.clone(), ctx.res_dir.clone()]);
    let crashed = lock(&ctx.crashed).clone();
    let faults = lock(&ctx.faults).clone();
    let markers = lock(&ctx.markers).clone();
    let roles: BTreeMap<String, Role> = ctx
        .loaded
        .scenario
        .clients
        .iter()
        .flat_map(|g| {
            ctx.loaded
                .members(&g.value)
                .into_iter()
                .map(move |m| (m, g.value.role))
        })
        .collect();
    // The resource's own judgement, from the journal and the markers the
    // server applied.
    let applied: BTreeSet<&str> = history
        .changes
        .iter()
        .filter(|c| c.kind == ChangeKind::Created && markers.contains_key(&c.path))
        .map(|c| c.path.as_str())
        .collect();
    let violations = crate::resource::judge(
        &journal,
        |c| roles.get(c).copied().unwrap_or_default(),
        |p| applied.contains(p),
    );
    // Sessions per client (a client may have had several).
    let mut session_client: BTreeMap<i64, String> = BTreeMap::new();
    for e in &journal {
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
                    x.client == e.client && matches!(x.event, Event::Released { .. } | Event::Done)
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
    // Lock nodes from the history: created and deleted positions.
    // A lock node is any node under the lock directory that is not itself a
    // directory of others (a semaphore keeps its leases one level down).
    let under_dir = |p: &str| {
        p.strip_prefix(&ctx.dir)
            .and_then(|r| r.strip_prefix('/'))
            .is_some_and(|r| !r.is_empty())
    };
    let parents: BTreeSet<&str> = history
        .changes
        .iter()
        .filter(|c| under_dir(&c.path))
        .filter_map(|c| c.path.rfind('/').map(|i| &c.path[..i]))
        .collect();
    let is_lock_node = |p: &str| under_dir(p) && !parents.contains(p);
    let mut created_at: BTreeMap<i64, String> = BTreeMap::new(); // zxid -> path
    let mut deleted: BTreeMap<String, Vec<&crate::target::Change>> = BTreeMap::new();
    for c in &history.changes {
        if !is_lock_node(&c.path) {
            continue;
        }
        match c.kind {
            ChangeKind::Created => {
                if let Some(z) = c.zxid {
                    created_at.insert(z, c.path.clone());
                }
            }
            ChangeKind::Deleted => deleted.entry(c.path.clone()).or_default().push(c),
            _ => {}
        }
    }
    let node_of = |a: &Acq| -> Option<String> {
        a.path.clone().or_else(|| created_at.get(&a.token).cloned())
    };
    // The deletion of a node created at `token` (first deletion after it).
    let deletion_of = |a: &Acq| -> Option<&crate::target::Change> {
        let path = node_of(a)?;
        deleted
            .get(&path)?
            .iter()
            .copied()
            .find(|d| a.token == 0 || d.pos > a.token || d.zxid.is_none())
    };
    let mut results = Vec::new();

    // ---- mutual exclusion -------------------------------------------------
    if inv.mutual_exclusion {
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
        // Server side: critical sections from the enter/exit markers,
        // cut short where the holder's lock node went.
        let mut created_marker: BTreeMap<&str, i64> = BTreeMap::new();
        for c in &history.changes {
            if c.kind == ChangeKind::Created && markers.contains_key(&c.path) {
                created_marker.insert(&c.path, c.pos);
            }
        }
        let token_deletion: BTreeMap<(String, i64), i64> = acqs
            .iter()
            .filter_map(|a| deletion_of(a).map(|d| ((a.client.clone(), a.token), d.pos)))
            .collect();
        let mut sections: Vec<(i64, i64, String, i64)> = Vec::new(); // start, end, client, token
        for (path, m) in &markers {
            if !m.enter {
                continue;
            }
            let Some(start) = created_marker.get(path.as_str()).copied() else {
                continue;
            };
            // The runner numbers the exit marker after the entry counter
            // moved on: the exit of `.r{R}.{E}.enter` is `.r{R}.{E+1}.exit`.
            let exit_path = format!(
                "{}/{}.r{}.{}.exit",
                ctx.res_dir,
                m.client,
                m.round,
                m.entry + 1
            );
            let exit = markers
                .get(&exit_path)
                .and_then(|_| created_marker.get(exit_path.as_str()).copied());
            // A later re-entry of the same round ends this section too.
            let next = format!(
                "{}/{}.r{}.{}.enter",
                ctx.res_dir,
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
                let (ra, rb) = (
                    roles.get(&a.2).copied().unwrap_or_default(),
                    roles.get(&b.2).copied().unwrap_or_default(),
                );
                if a.2 != b.2 && (ra != Role::Read || rb != Role::Read) {
                    details.push(format!(
                        "server: {} (token {:#x}) entered at zxid {:#x} while {} (token {:#x}) had held since zxid {:#x}",
                        b.2, b.3, b.0, a.2, a.3, a.0
                    ));
                }
            }
        }
        let held = details.is_empty();
        if held {
            details.push(format!(
                "{} critical sections checked against the server's history",
                sections.len()
            ));
        }
        results.push(("mutual_exclusion", true, held, details));
    }

    // ---- fencing ----------------------------------------------------------
    if inv.fencing {
        let details: Vec<String> = violations
            .iter()
            .filter(|v| v.invariant == "fencing")
            .map(|v| format!("at {:.1}ms {}", v.t.as_secs_f64() * 1000.0, v.detail))
            .collect();
        results.push(("fencing", true, details.is_empty(), details));
    }

    // ---- liveness ---------------------------------------------------------
    if let Some(bound) = inv.liveness {
        let mut details = Vec::new();
        let fault_end_before = |t: Duration| -> Duration {
            faults
                .iter()
                .filter(|f| Duration::from_secs_f64(f.t_ms / 1000.0) <= t)
                .map(|f| Duration::from_secs_f64(f.until_ms / 1000.0))
                .max()
                .unwrap_or_default()
        };
        let mut open: BTreeMap<&str, Duration> = BTreeMap::new();
        for e in &journal {
            if crashed.contains(&e.client) {
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
                        if waited > bound.0 {
                            details.push(format!(
                                "{} waited {:.0}ms (bound {}) from {:.0}ms",
                                e.client,
                                waited.as_secs_f64() * 1000.0,
                                bound,
                                from.as_secs_f64() * 1000.0
                            ));
                        }
                    }
                }
                _ => {}
            }
        }
        for (c, start) in open {
            details.push(format!(
                "{c} started waiting at {:.0}ms and never acquired",
                start.as_secs_f64() * 1000.0
            ));
        }
        for c in &end.unfinished {
            if !crashed.contains(c) {
                details.push(format!("{c} did not finish before the deadline"));
            }
        }
        details.dedup();
        results.push(("liveness", true, details.is_empty(), details));
    }

    // ---- orphans ----------------------------------------------------------
    if inv.no_orphans {
        let details: Vec<String> = end
            .orphans
            .iter()
            .map(|n| {
                let path = format!("{}/{n}", ctx.dir);
                let owner = history
                    .changes
                    .iter()
                    .rev()
                    .find(|c| c.path == path && c.kind == ChangeKind::Created)
                    .and_then(|c| c.session)
                    .and_then(|s| session_client.get(&s).cloned());
                match owner {
                    Some(c) => format!("{path} left by {c}"),
                    None => format!("{path} left behind"),
                }
            })
            .collect();
        results.push(("no_orphans", true, details.is_empty(), details));
    }

    // ---- the loss noticed -------------------------------------------------
    if inv.lost_noticed {
        let mut details = Vec::new();
        let mut checked = false;
        for a in &acqs {
            if crashed.contains(&a.client) {
                continue;
            }
            let Some(d) = deletion_of(a) else { continue };
            let Some(del_session) = d.session else {
                continue;
            };
            checked = true;
            let own = session_client.get(&del_session) == Some(&a.client);
            let taken = d.by_session_end || !own;
            if !taken {
                continue;
            }
            // A holder that left its critical section normally (its exit
            // marker reached the server before the node went) lost nothing
            // it held: the node went during or after its release.
            let exit_prefix = format!("{}/{}.r{}.", ctx.res_dir, a.client, a.round);
            let left_first = history.changes.iter().any(|c| {
                c.kind == ChangeKind::Created
                    && c.pos < d.pos
                    && c.path.starts_with(&exit_prefix)
                    && c.path.ends_with(".exit")
            });
            if left_first {
                continue;
            }
            let noticed = journal[a.from..a.to.min(journal.len())]
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
        results.push(("lost_noticed", checked, details.is_empty(), details));
    }

    // ---- the history against a fenced mutex -------------------------------
    let processes: BTreeMap<String, (usize, Role)> = ctx
        .loaded
        .all_members()
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let role = roles.get(&c).copied().unwrap_or_default();
            (c, (i, role))
        })
        .collect();
    let history_ops = crate::history::build(&journal, &processes);
    if inv.fenced_mutex {
        let (mut details, checked) = crate::history::check_fenced_mutex(&history_ops);
        let held = details.is_empty();
        if held {
            details.push(format!(
                "{checked} exclusive acquisitions in completion order, tokens strictly increasing"
            ));
        }
        results.push(("fenced_mutex", checked > 0, held, details));
    }

    // ---- hand-offs and notification budgets -------------------------------
    let owner_of: BTreeMap<String, String> = acqs
        .iter()
        .filter_map(|a| node_of(a).map(|p| (p, a.client.clone())))
        .collect();
    let mut handoffs = Vec::new();
    for c in &history.changes {
        if c.kind != ChangeKind::Deleted || !is_lock_node(&c.path) {
            continue;
        }
        let notifications = history.notifications.as_ref().map(|ns| {
            ns.iter()
                .filter(|n| {
                    Some(n.zxid) == c.zxid
                        && Some(n.session) != c.session
                        && n.session != end.admin_session
                })
                .count() as u64
        });
        handoffs.push(Handoff {
            zxid: c.pos,
            path: c.path.clone(),
            from: owner_of.get(&c.path).cloned(),
            by_session_end: c.by_session_end,
            notifications,
        });
    }
    let max_per = handoffs.iter().filter_map(|h| h.notifications).max();
    if inv.notifications_per_handoff.is_some() || inv.min_notifications_per_handoff.is_some() {
        let mut details = Vec::new();
        let checked = history.notifications.is_some();
        if let Some(k) = inv.notifications_per_handoff {
            for h in &handoffs {
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
        if let (Some(min), Some(max)) = (inv.min_notifications_per_handoff, max_per) {
            if max < min {
                details.push(format!(
                    "no hand-off sent {min} notifications or more (the most was {max})"
                ));
            }
        }
        if !checked {
            details.push("the target cannot count notifications per hand-off".into());
        }
        results.push((
            "notifications_per_handoff",
            checked,
            details.is_empty() || !checked,
            details,
        ));
    }

    // ---- the verdict ------------------------------------------------------
    let expected: BTreeSet<&str> = ctx
        .loaded
        .scenario
        .expect
        .violated
        .iter()
        .map(String::as_str)
        .collect();
    for (name, checked, held, details) in results {
        o.invariants.push(InvariantResult {
            name: name.to_string(),
            checked,
            held,
            expected_violation: expected.contains(name),
            details,
        });
    }
    // A client that never got a session did not play its part: the run
    // cannot be judged, and is not a pass.
    for e in &journal {
        if let Event::Error { message, .. } = &e.event {
            if message.starts_with("open: ") {
                o.errors
                    .push(format!("{} could not open a session: {message}", e.client));
            }
        }
    }
    for s in &end.steps_not_run {
        o.errors.push(format!("{s} never ran"));
    }
    let request_faults = ctx
        .loaded
        .scenario
        .timeline
        .iter()
        .any(|s| !s.value.request_faults().is_empty());
    if request_faults && ctx.target.faults_fired() == Some(0) {
        o.errors
            .push("the request faults (lose_reply, drop_request, fail, delay) never fired".into());
    }
    let violated: BTreeSet<String> = o.violated().into_iter().map(String::from).collect();
    let violated: BTreeSet<&str> = violated.iter().map(String::as_str).collect();
    o.status = if !o.errors.is_empty() {
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
        let missed: Vec<&str> = expected.difference(&violated).copied().collect();
        o.errors.clear();
        o.invariants
            .iter_mut()
            .filter(|i| missed.contains(&i.name.as_str()))
            .for_each(|i| i.details.push("expected to be violated, but held".into()));
        Status::Failed
    };
    let counters = ctx.host.counters();
    o.stats = crate::report::Stats {
        acquisitions: acqs.len(),
        handoffs: handoffs.len(),
        server_notifications: history
            .notifications
            .as_ref()
            .map(|n| n.iter().filter(|n| n.session != end.admin_session).count() as u64),
        max_notifications_per_handoff: max_per,
        client_notifications: counters.0,
        children_reads: counters.1,
        sessions: session_client.len(),
    };
    if o.status != Status::Passed {
        let keys = [ctx.dir.as_str(), ctx.res_dir.as_str(), " sess "];
        let relevant: Vec<&String> = history
            .text
            .iter()
            .filter(|l| keys.iter().any(|k| l.contains(k)))
            .collect();
        o.history_tail = relevant
            .iter()
            .skip(relevant.len().saturating_sub(40))
            .map(|s| s.to_string())
            .collect();
    }
    o.handoffs = handoffs;
    o.history = history_ops;
    o.journal = journal;
    o.resource_violations = violations;
    o.faults = faults;
}
