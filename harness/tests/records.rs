//! The invariants judged on recorded runs: `harness/tests/records/*.jsonl`,
//! each written by `harness run SCENARIO --seed 7 --record FILE` on the
//! embedded mock. The checks are pure functions of a record, so a record
//! keeps its verdicts, and an edited record shows what each invariant reads.

use std::path::Path;

use harness::check;
use harness::journal::Event;
use harness::record::RunRecord;
use harness::report::Status;
use zk_mock::record::ChangeKind;

fn recorded(name: &str) -> RunRecord {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/records")
        .join(format!("{name}.jsonl"));
    let mut records = RunRecord::read_all(&file).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(records.len(), 1, "{name}");
    records.remove(0)
}

fn verdict(r: &RunRecord, name: &str) -> (bool, Vec<String>) {
    let j = check::judge(r);
    let i = j
        .invariants
        .iter()
        .find(|i| i.name == name)
        .unwrap_or_else(|| panic!("{name} not checked"));
    (i.held, i.details.clone())
}

fn violated(r: &RunRecord) -> Vec<String> {
    check::judge(r)
        .invariants
        .into_iter()
        .filter(|i| i.checked && !i.held)
        .map(|i| i.name)
        .collect()
}

#[test]
fn recorded_runs_keep_their_verdicts() {
    for (name, status, bad) in [
        ("holder-expires", Status::Passed, vec![]),
        (
            "broken-release-once",
            Status::Caught,
            vec!["liveness", "no_orphans"],
        ),
        (
            "app-ignores-lost-signal",
            Status::Caught,
            vec!["mutual_exclusion", "fencing"],
        ),
    ] {
        let r = recorded(name);
        let j = check::judge(&r);
        assert_eq!(j.status, status, "{name}: {:?}", j.invariants);
        let mut got = violated(&r);
        got.sort();
        let mut want: Vec<String> = bad.into_iter().map(String::from).collect();
        want.sort();
        assert_eq!(got, want, "{name}");
        // Judged twice, judged the same; and the same after a round trip.
        let mut text = Vec::new();
        r.write_line(&mut text).unwrap();
        let again: RunRecord = serde_json::from_slice(&text).unwrap();
        assert_eq!(check::judge(&again).invariants, j.invariants, "{name}");
    }
}

/// no_orphans reads the nodes left at the end: the orphan named, and its
/// owner found from the history; without it, the invariant holds.
#[test]
fn no_orphans_names_the_node_and_its_owner() {
    let mut r = recorded("broken-release-once");
    let (held, details) = verdict(&r, "no_orphans");
    assert!(!held);
    // The holder's forgotten node, and the waiters stuck behind it.
    assert!(
        details.iter().any(|d| d.ends_with("left by holder")),
        "{details:?}"
    );
    assert!(
        details.iter().all(|d| d.contains(" left by ")),
        "{details:?}"
    );
    r.end.orphans.clear();
    assert!(verdict(&r, "no_orphans").0);
}

/// lost_noticed reads the holder's report: the expired holder of
/// holder-expires heard of its loss; with that report removed from the
/// journal, the same history is a violation naming the node and the zxid.
#[test]
fn lost_noticed_needs_the_libraries_report() {
    let mut r = recorded("holder-expires");
    assert!(verdict(&r, "lost_noticed").0);
    r.journal.retain(|e| e.event != Event::Lost);
    let (held, details) = verdict(&r, "lost_noticed");
    assert!(!held);
    assert!(details[0].contains("(session expired)"), "{details:?}");
    assert!(
        details[0].contains("its guard never reported the loss"),
        "{details:?}"
    );
}

/// mutual_exclusion and fencing on the clients' side: the holder that ignores
/// its library carries on after being told (suspended or lost). Without that
/// word and with its last touch refused by the server (the marker absent from
/// the history), it is the hand-over every lease lock has, and no violation.
#[test]
fn a_refused_last_touch_without_warning_is_no_violation() {
    let mut r = recorded("app-ignores-lost-signal");
    assert!(!verdict(&r, "fencing").0);
    r.journal
        .retain(|e| !matches!(e.event, Event::Suspended | Event::Lost) || e.client != "holder");
    let exits: Vec<String> = r
        .markers
        .iter()
        .filter(|(_, m)| m.client == "holder" && !m.enter)
        .map(|(p, _)| p.clone())
        .collect();
    assert!(!exits.is_empty());
    // Still a violation while the server applied the exit marker (if it did).
    let applied = r
        .history
        .changes
        .iter()
        .any(|c| c.kind == ChangeKind::Created && exits.contains(&c.path));
    assert_eq!(!verdict(&r, "fencing").0, applied);
    r.history
        .changes
        .retain(|c| !(c.kind == ChangeKind::Created && exits.contains(&c.path)));
    assert!(verdict(&r, "fencing").0);
    let (_, details) = verdict(&r, "mutual_exclusion");
    assert!(
        details.iter().all(|d| !d.starts_with("clients:")),
        "{details:?}"
    );
}

/// liveness reads the journal's waits against the faults' ends.
#[test]
fn liveness_counts_from_the_last_fault() {
    let mut r = recorded("broken-release-once");
    let (held, details) = verdict(&r, "liveness");
    assert!(!held);
    assert!(details.iter().any(|d| d.contains("waiter")), "{details:?}");
    r.invariants.liveness = None;
    assert!(!violated(&r).contains(&"liveness".to_string()));
}

/// A hand-made record: `holder` acquired once and was releasing at the
/// deadline, `waiter` was waiting for its first round; the step anchored to
/// the second acquisition never ran.
fn stalled_release() -> RunRecord {
    use harness::journal::Entry;
    use harness::record::{ClientInfo, End};
    use std::time::Duration;
    let e = |ms: u64, client: &str, event: Event| Entry {
        t: Duration::from_millis(ms),
        client: client.into(),
        event,
    };
    let step = "step 1 (on acquisitions 2: expire ALL)".to_string();
    RunRecord {
        format: harness::record::FORMAT,
        scenario: "hand-made".into(),
        file: "hand-made.yaml".into(),
        recipe: "exclusive".into(),
        replay: String::new(),
        seed: 1,
        target: "mock".into(),
        implementation: "a lock".into(),
        dir: "/l".into(),
        res_dir: "/l.resource".into(),
        clients: ["holder", "waiter"]
            .map(|name| ClientInfo {
                name: name.into(),
                role: Default::default(),
            })
            .to_vec(),
        invariants: Default::default(),
        expect_violated: Vec::new(),
        journal: vec![
            e(1, "holder", Event::Connected { session: 1 }),
            e(1, "waiter", Event::Connected { session: 2 }),
            e(2, "holder", Event::Waiting { round: 0 }),
            e(
                3,
                "holder",
                Event::Acquired {
                    round: 0,
                    token: 5,
                    path: None,
                },
            ),
            e(4, "waiter", Event::Waiting { round: 0 }),
            e(60, "holder", Event::Releasing),
            e(
                61,
                "holder",
                Event::Fault {
                    what: "disconnect".into(),
                },
            ),
        ],
        history: Default::default(),
        faults: Vec::new(),
        markers: Default::default(),
        crashed: Default::default(),
        end: End {
            unfinished: vec!["holder".into(), "waiter".into()],
            steps_not_run: vec![step.clone()],
            untriggered: vec![step],
            ..End::default()
        },
        request_faults: false,
        request_faults_fired: None,
        counters: Default::default(),
    }
}

/// Records a `close` step that ended `holder` at `t_ms`.
fn close_holder(r: &mut RunRecord, t_ms: f64) {
    r.faults.push(harness::record::FaultRecord {
        step: 2,
        t_ms,
        until_ms: t_ms,
        action: "close".into(),
        argument: "holder".into(),
        clients: vec!["holder".into()],
    });
}

/// The same record judged both ways: while clients stalled inside the lock
/// the untriggered step is liveness's evidence and the run failed (caught
/// when liveness is expected violated); once nobody stalled, or without
/// liveness to judge it, or from a record that does not say the step was
/// untriggered, it is an error of the scenario.
#[test]
fn an_untriggered_step_is_the_lock_stalling_or_the_scenarios_fault() {
    let r = stalled_release();
    let stalled: Vec<String> = check::stalled(&r).iter().map(|s| s.to_string()).collect();
    assert_eq!(
        stalled,
        vec![
            "holder releasing since 60ms",
            "waiter acquiring round 1 since 4ms"
        ]
    );
    let j = check::judge(&r);
    assert_eq!(
        j.status,
        Status::Failed,
        "{:?} {:?}",
        j.errors,
        j.invariants
    );
    assert!(j.errors.is_empty(), "{:?}", j.errors);
    assert_eq!(violated(&r), vec!["liveness"]);
    let (_, details) = verdict(&r, "liveness");
    assert_eq!(
        details[0],
        "step 1 (on acquisitions 2: expire ALL) never ran: its trigger had not come at the deadline; 1 acquisition, the last at 3ms; stalled: holder releasing since 60ms, waiter acquiring round 1 since 4ms"
    );
    assert!(
        details.contains(&"holder did not finish before the deadline".to_string()),
        "{details:?}"
    );

    let mut caught = r.clone();
    caught.expect_violated = vec!["liveness".into()];
    assert_eq!(check::judge(&caught).status, Status::Caught);

    let never_ran = vec!["step 1 (on acquisitions 2: expire ALL) never ran".to_string()];
    // Nobody stalled: both finished, one giving its round up.
    let mut finished = r.clone();
    finished.journal.truncate(5);
    for (client, event) in [
        ("holder", Event::Releasing),
        ("holder", Event::Released { ok: true }),
        ("holder", Event::Done),
        (
            "waiter",
            Event::GaveUp {
                round: 0,
                reason: "timeout".into(),
            },
        ),
        ("waiter", Event::Done),
    ] {
        finished.journal.push(harness::journal::Entry {
            t: std::time::Duration::from_millis(70),
            client: client.into(),
            event,
        });
    }
    finished.end.unfinished.clear();
    assert!(check::stalled(&finished).is_empty());
    let j = check::judge(&finished);
    assert_eq!(j.status, Status::Error, "{:?}", j.invariants);
    assert_eq!(j.errors, never_ran);
    assert!(violated(&finished).is_empty());

    // The holder still held at the deadline: its hold outlasted the run,
    // and the waiter behind it proves nothing about the lock.
    let mut holding = r.clone();
    holding.journal.truncate(5);
    let j = check::judge(&holding);
    assert_eq!(j.status, Status::Error);
    assert_eq!(j.errors, never_ran);
    assert_eq!(
        check::stalled(&holding)
            .iter()
            .map(|s| s.client.as_str())
            .collect::<Vec<_>>(),
        vec!["waiter"]
    );
    // Closed by the scenario while it held, the holder holds nothing at
    // the deadline: the waiter's stall is the lock's again.
    let mut closed_holder = holding.clone();
    close_holder(&mut closed_holder, 10.0);
    assert_eq!(check::judge(&closed_holder).status, Status::Failed);
    assert_eq!(violated(&closed_holder), vec!["liveness"]);

    // The scenario closed the holder while it released: a closed client
    // owes nothing, and a library may say nothing more of it (Curator's
    // driver reports no state after a close); only the waiter stalled.
    let mut closed = r.clone();
    close_holder(&mut closed, 62.0);
    assert_eq!(
        check::stalled(&closed)
            .iter()
            .map(|s| s.client.as_str())
            .collect::<Vec<_>>(),
        vec!["waiter"]
    );
    // With the waiter done too, nobody stalled: the step is the scenario's.
    closed.journal.push(harness::journal::Entry {
        t: std::time::Duration::from_millis(70),
        client: "waiter".into(),
        event: Event::GaveUp {
            round: 0,
            reason: "timeout".into(),
        },
    });
    closed.journal.push(harness::journal::Entry {
        t: std::time::Duration::from_millis(70),
        client: "waiter".into(),
        event: Event::Done,
    });
    closed.end.unfinished = vec!["holder".into()];
    assert!(check::stalled(&closed).is_empty());
    let j = check::judge(&closed);
    assert_eq!(j.status, Status::Error, "{:?}", j.invariants);
    assert_eq!(j.errors, never_ran);

    // Liveness not judged: nothing to blame the stall on.
    let mut unjudged = r.clone();
    unjudged.invariants.liveness = None;
    let j = check::judge(&unjudged);
    assert_eq!(j.status, Status::Error);
    assert_eq!(j.errors, never_ran);

    // A record written before runs told untriggered steps apart.
    let mut text = Vec::new();
    r.write_line(&mut text).unwrap();
    let mut old: serde_json::Value = serde_json::from_slice(&text).unwrap();
    old["end"].as_object_mut().unwrap().remove("untriggered");
    let old: RunRecord = serde_json::from_value(old).unwrap();
    assert!(old.end.untriggered.is_empty());
    let j = check::judge(&old);
    assert_eq!(j.status, Status::Error);
    assert_eq!(j.errors, never_ran);
}

/// `harness explore` on Curator 5.4 (seed 1126, run 2307, 2026-11-26): the
/// holder's session expires, it carries on with a new one, and the
/// scenario then closes it in its second round. The application ended the
/// client: it owes no acquisition after that, and no loss report.
#[test]
fn a_client_the_scenario_closed_owes_nothing_after() {
    let r = recorded("curator-closed-holder");
    assert!(r.faults.iter().any(|f| f.action == "close"));
    assert!(
        !r.end.unfinished.is_empty()
            || r.journal
                .iter()
                .any(|e| matches!(e.event, Event::Waiting { .. }))
    );
    assert_eq!(violated(&r), Vec::<String>::new());
    // Without the close step in the record, the same run is a liveness failure.
    let mut unclosed = r.clone();
    unclosed.faults.retain(|f| f.action != "close");
    assert!(
        violated(&unclosed).contains(&"liveness".to_string()),
        "{:?}",
        violated(&unclosed)
    );
}
