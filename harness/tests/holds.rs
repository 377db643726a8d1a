//! `hold` steps and an expiry's `cleanup_until` through real clients
//! (zk-lock on the embedded mock): each forces an order of events that
//! timing alone would leave to chance, with no sleep.

use std::path::Path;

use harness::journal::Event;
use harness::record::RunRecord;
use harness::report::{failure_details, Status};
use harness::runner::{run, RunOptions};

async fn play(text: &str) -> RunRecord {
    let loaded =
        harness::scenario::parse(Path::new("hold.yaml"), text).unwrap_or_else(|e| panic!("{e}"));
    let outcome = run(&loaded, &RunOptions::mock(Some(7))).await;
    assert_eq!(
        outcome.status,
        Status::Passed,
        "{}",
        failure_details(&outcome)
    );
    *outcome.record.expect("a record")
}

/// The run's release of what a step held, whose argument says `why`.
fn released_on<'a>(r: &'a RunRecord, why: &str) -> &'a harness::record::FaultRecord {
    let release = r
        .faults
        .iter()
        .find(|f| f.action == "release")
        .unwrap_or_else(|| panic!("no release in {:#?}", r.faults));
    assert!(release.argument.contains(why), "{}", release.argument);
    release
}

/// When `client` first logged an event matching `what`.
fn first(r: &RunRecord, client: &str, what: impl Fn(&Event) -> bool) -> f64 {
    r.journal
        .iter()
        .find(|e| e.client == client && what(&e.event))
        .unwrap_or_else(|| panic!("{client}: no such event in {:#?}", r.journal))
        .t
        .as_secs_f64()
}

/// The reply to the holder's release is held until the waiter holds: the
/// waiter takes the lock (the delete was applied) before the holder's
/// release returns. The hold and its release are in the run's faults.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_reply_returns_after_the_event_it_waits_for() {
    let r = play(
        "lock: {recipe: predecessor}
clients:
  - name: holder
    hold: 200ms               # the steps act meanwhile
  - name: waiter
    on_stampede: true
    hold: 20ms
timeline:
  - on: {holds: holder}
    hold: {op: delete, client: holder, until: {holds: waiter}}
  - on: {holds: holder}
    stampede: waiter
",
    )
    .await;
    let acquired = first(&r, "waiter", |e| matches!(e, Event::Acquired { .. }));
    let released = first(&r, "holder", |e| matches!(e, Event::Released { .. }));
    assert!(
        acquired < released,
        "the waiter held at {acquired}s, the holder's release returned at {released}s"
    );
    let actions: Vec<&str> = r.faults.iter().map(|f| f.action.as_str()).collect();
    assert!(
        actions.contains(&"hold") && actions.contains(&"release"),
        "{actions:?}"
    );
    released_on(&r, "holds waiter");
}

/// The holder's release request is held unapplied until the late client
/// waits: late's node is created before the holder's node is deleted,
/// whichever client is faster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_request_is_applied_after_the_event_it_waits_for() {
    let r = play(
        "lock: {recipe: predecessor}
clients:
  - name: holder
    hold: 200ms               # the steps act meanwhile
  - name: late
    on_stampede: true
    hold: 1ms
timeline:
  - on: {holds: holder}
    hold: {op: delete, client: holder, what: request, until: {waiting: late}}
  - on: {holds: holder}
    stampede: late
",
    )
    .await;
    let changes = &r.history.changes;
    let pos = |kind: zk_mock::record::ChangeKind, nth: usize| {
        changes
            .iter()
            .filter(|c| c.kind == kind && c.path.starts_with(&format!("{}/", r.dir)))
            .nth(nth)
            .map(|c| c.pos)
            .unwrap_or_else(|| panic!("{changes:#?}"))
    };
    let late_created = pos(zk_mock::record::ChangeKind::Created, 1);
    let holder_deleted = pos(zk_mock::record::ChangeKind::Deleted, 0);
    assert!(late_created < holder_deleted, "{changes:#?}");
}

/// The holder's session expires while the waiter waits; its node, owned
/// by the dead session, stays until the waiter has a watch on it, then goes
/// with the expiry's closeSession, and the waiter takes the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expirys_cleanup_waits_for_its_event() {
    let r = play(
        "server: {session_timeout: 1s}
lock: {recipe: predecessor}
clients:
  - name: holder
    hold: 5s
    on_expiry: stop
  - name: waiter
    on_stampede: true
    hold: 1ms
timeline:
  - on: {holds: holder}
    stampede: waiter
  - on: {waiting: waiter}
    expire: holder
    cleanup_until: {acquisitions: 1}
invariants:
  liveness: 8s
",
    )
    .await;
    let deleted: Vec<_> = r
        .history
        .changes
        .iter()
        .filter(|c| c.kind == zk_mock::record::ChangeKind::Deleted && c.by_session_end)
        .collect();
    assert_eq!(deleted.len(), 1, "{:#?}", r.history.changes);
    let release = released_on(&r, "expiry's deletions");
    let expire = r.faults.iter().find(|f| f.action == "expire").unwrap();
    assert!(release.t_ms >= expire.t_ms);
    assert!(
        expire.argument.contains("cleanup until acquisitions 1"),
        "{}",
        expire.argument
    );
}

/// A cleanup held until the expired waiter holds or waits again, and the
/// waiter's library ends its acquisition with the session (as a correct
/// lock may) and it has no round left: the event can never come, so the
/// deletions go once the waiter is done, and the client queued behind its
/// dead node gets the lock. Holding on would stall everyone for the
/// scenario's sake and blame the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_whose_clients_are_done_lets_go() {
    let r = play(
        "server: {session_timeout: 1s}
lock: {recipe: predecessor}
clients:
  - name: holder
    hold: 300ms
  - name: waiter
    on_stampede: true
    on_expiry: stop
  - name: later
    on_stampede: true
    hold: 1ms
timeline:
  - on: {holds: holder}
    stampede: waiter
  - on: {waiting: waiter}
    stampede: later
  - on: {waiting: later}
    expire: waiter
    cleanup_until: [{holds: waiter}, {waiting: waiter}]
invariants:
  liveness: 5s
deadline: 10s
",
    )
    .await;
    assert!(
        !r.journal
            .iter()
            .any(|e| e.client == "waiter" && matches!(e.event, Event::Acquired { .. })),
        "the expired waiter must not hold: {:#?}",
        r.journal
    );
    first(&r, "later", |e| matches!(e, Event::Acquired { .. }));
    released_on(&r, "the clients it names were done");
}

/// The new fields are checked like the rest, with the file's line.
#[test]
fn hold_and_cleanup_until_errors_name_the_field_and_line() {
    let base = "lock: {recipe: predecessor}\nclients:\n  - name: a\n  - name: b\ntimeline:\n";
    let err = |step: &str| {
        harness::scenario::parse(Path::new("t.yaml"), &format!("{base}{step}"))
            .unwrap_err()
            .to_string()
    };
    let e = err("  - at: 0ms\n    hold: {op: delete, client: a, until: {holds: nobody}}\n");
    assert!(
        e.starts_with("t.yaml:6:")
            && e.contains("timeline.hold.until: unknown client or group \"nobody\""),
        "{e}"
    );
    let e = err("  - at: 0ms\n    hold: {op: delet, until: {holds: a}}\n");
    assert!(e.contains("timeline.hold.op: unknown operation"), "{e}");
    let e = err("  - at: 0ms\n    hold: {op: delete, until: {holds: a, waiting: b}}\n");
    assert!(
        e.contains("timeline.hold.until: needs exactly one of"),
        "{e}"
    );
    let e = err("  - at: 0ms\n    hold: {op: delete, until: {acquisitions: 9}}\n");
    assert!(
        e.contains("timeline.hold.until.acquisitions: 9, but the clients make at most 2"),
        "{e}"
    );
    let e = err("  - at: 0ms\n    hold: {op: delete, until: []}\n");
    assert!(e.contains("timeline.hold.until: needs"), "{e}");
    let e = err("  - at: 0ms\n    hold: {op: delete, what: answer, until: {holds: a}}\n");
    assert!(
        e.starts_with("t.yaml:7:") || e.starts_with("t.yaml:6:"),
        "{e}"
    );
    let e = err("  - at: 0ms\n    disconnect: a\n    cleanup_until: {holds: b}\n");
    assert!(
        e.contains("timeline.cleanup_until: only with `expire`"),
        "{e}"
    );
    let e = err("  - at: 0ms\n    expire: a\n    cleanup_until: [{holds: b}, {waiting: c}]\n");
    assert!(
        e.contains("timeline.cleanup_until: unknown client or group \"c\""),
        "{e}"
    );
    // A list is whichever comes first; both forms parse.
    for ok in [
        "  - at: 0ms\n    expire: a\n    cleanup_until: [{holds: b}, {waiting: b}]\n",
        "  - at: 0ms\n    hold: {op: getChildren, client: a, what: request, nth: 2, until: {acquisitions: 1}}\n",
    ] {
        harness::scenario::parse(Path::new("t.yaml"), &format!("{base}{ok}")).unwrap();
    }
}

/// A real server applies an expiry at once: `cleanup_until` is refused
/// there, with the reason, before anything runs.
#[tokio::test]
async fn cleanup_until_is_mock_only() {
    let loaded = harness::scenario::parse(
        Path::new("t.yaml"),
        "lock: {kind: exclusive}\nclients:\n  - name: a\ntimeline:\n  - at: 0ms\n    expire: a\n    cleanup_until: {holds: a}\n",
    )
    .unwrap();
    let mut opts = RunOptions::mock(Some(1));
    opts.target = harness::target::TargetSpec::Real("127.0.0.1:1".parse().unwrap());
    let o = run(&loaded, &opts).await;
    assert_eq!(o.status, Status::Skipped);
    assert!(o.errors[0].contains("cleanup_until"), "{:?}", o.errors);
}
