//! Plays the scenario library on the embedded mock: every positive
//! scenario passes and every negative one is caught. The 1000-contender
//! stampedes run in the main job (`harness run scenarios/`, release build),
//! not here. And two whole paths through the harness: a run drawn in the
//! HTML report, and the real-target path with zk-mock standing in for
//! ZooKeeper.

use std::path::{Path, PathBuf};

use harness::report::{failure_details, Status};
use harness::runner::{run, RunOptions};
use harness::target::TargetSpec;

fn library() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    harness::find_scenarios(&[root])
        .expect("scenarios/")
        .into_iter()
        .filter(|p| !p.to_string_lossy().contains("-1000-"))
        .collect()
}

async fn play(filter: impl Fn(&Path) -> bool) {
    let files: Vec<PathBuf> = library().into_iter().filter(|p| filter(p)).collect();
    assert!(!files.is_empty());
    let opts = on_mock(7);
    let mut failures = String::new();
    for f in &files {
        let loaded = harness::scenario::load(f).unwrap_or_else(|e| panic!("{e}"));
        let outcome = run(&loaded, &opts).await;
        let want = if loaded.scenario.expect.violated_by("zk-lock").is_empty() {
            Status::Passed
        } else {
            Status::Caught
        };
        // zk-lock has no semaphore: those scenarios are skipped, with the reason.
        let skippable = loaded.scenario.lock.value.kind() == harness::scenario::Kind::Semaphore;
        if outcome.status != want && !(skippable && outcome.status == Status::Skipped) {
            failures.push_str(&failure_details(&outcome));
        }
    }
    assert!(failures.is_empty(), "{failures}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn positive_scenarios_pass() {
    play(|p| {
        !p.to_string_lossy().contains("negative") && !p.to_string_lossy().contains("stampede")
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn negative_scenarios_are_caught() {
    play(|p| p.to_string_lossy().contains("negative")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stampedes_of_100_pass() {
    play(|p| p.to_string_lossy().contains("stampede")).await;
}

/// A negative scenario whose flaw is not exercised (no fault) is reported
/// as failed: "expected to be violated, but held".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_uncaught_negative_scenario_fails() {
    let text = "lock: {recipe: broken-no-recheck}\nclients:\n  - name: w\n    count: 3\nexpect:\n  violated: [mutual_exclusion]\n";
    let loaded = harness::scenario::parse(Path::new("uncaught.yaml"), text).unwrap();
    let outcome = run(&loaded, &on_mock(1)).await;
    assert_eq!(
        outcome.status,
        Status::Failed,
        "{}",
        failure_details(&outcome)
    );
    let me = outcome
        .invariants
        .iter()
        .find(|i| i.name == "mutual_exclusion")
        .unwrap();
    assert!(me
        .details
        .iter()
        .any(|d| d.contains("expected to be violated")));
}

fn on_mock(seed: u64) -> RunOptions {
    on(TargetSpec::Mock, seed)
}

/// zk-lock in process on `target`, with `seed`.
fn on(target: TargetSpec, seed: u64) -> RunOptions {
    RunOptions {
        target,
        seed: Some(seed),
        implementation: harness::implementation::Implementation::ZkLock,
        progress: None,
        pool: None,
    }
}

/// A step anchored to more acquisitions than the clients can make could
/// never run: the file is refused before anything runs, naming the field.
#[test]
fn an_anchor_no_run_can_reach_is_invalid() {
    let text = "lock: {recipe: predecessor}\nclients:\n  - name: w\n    count: 2\ntimeline:\n  - on: {acquisitions: 50}\n    expire: ALL\n";
    let e = harness::scenario::parse(Path::new("never.yaml"), text).unwrap_err();
    assert!(e.to_string().starts_with("never.yaml:6:"), "{e}");
    assert!(
        e.message
            .contains("timeline.on.acquisitions: 50, but the clients make at most 2"),
        "{e}"
    );
}

/// A step whose trigger never comes while every client finished is the
/// scenario's fault, not the lock's: an error, not a pass nor a failure.
/// Two non-blocking clients could make the two acquisitions, but the one
/// that finds the lock busy gives its round up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_whose_trigger_never_comes_while_everyone_finished_is_an_error() {
    let text = "lock: {recipe: predecessor}\nclients:\n  - name: w\n    count: 2\n    try: true\n    hold: 1s\ntimeline:\n  - on: {acquisitions: 2}\n    expire: ALL\n";
    let loaded = harness::scenario::parse(Path::new("never.yaml"), text).unwrap();
    let outcome = run(&loaded, &on_mock(1)).await;
    assert_eq!(
        outcome.status,
        Status::Error,
        "{}",
        failure_details(&outcome)
    );
    assert_eq!(outcome.stats.acquisitions, 1, "{:#?}", outcome.journal);
    assert_eq!(
        outcome.errors,
        vec!["step 1 (on acquisitions 2: expire ALL) never ran".to_string()]
    );
    let liveness = outcome
        .invariants
        .iter()
        .find(|i| i.name == "liveness")
        .unwrap();
    assert!(liveness.held, "{:?}", liveness.details);
    let end = &outcome.record.as_ref().unwrap().end;
    assert!(end.unfinished.is_empty(), "{end:?}");
    assert_eq!(end.untriggered, end.steps_not_run);
}

/// A lock that stalls before a step's trigger fails liveness: the release
/// that forgets its node blocks everyone behind it, the fourth acquisition
/// never comes, and the step anchored to it never runs. The evidence comes
/// first in liveness's details; the run is no error. With liveness expected
/// violated, the same run is caught.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_that_stalls_before_a_steps_trigger_fails_liveness() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/negative/broken-release-once.yaml"),
    )
    .unwrap();
    let step = "timeline:\n  - on: {acquisitions: 4}\n    expire: ALL\n";
    let text = text.replace("timeline:\n", step);
    assert!(text.contains(step));
    let failing = text.replace("expect:\n  violated: [liveness, no_orphans]\n", "");
    assert!(!failing.contains("expect:"));

    let loaded = harness::scenario::parse(Path::new("stalls.yaml"), &failing).unwrap();
    let outcome = run(&loaded, &on_mock(7)).await;
    assert_eq!(
        outcome.status,
        Status::Failed,
        "{}",
        failure_details(&outcome)
    );
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    let mut violated = outcome.violated();
    violated.sort();
    assert_eq!(violated, vec!["liveness", "no_orphans"]);
    let liveness = outcome
        .invariants
        .iter()
        .find(|i| i.name == "liveness")
        .unwrap();
    let first = &liveness.details[0];
    assert!(
        first.starts_with(
            "step 1 (on acquisitions 4: expire ALL) never ran: its trigger had not come at the deadline; 1 acquisition, the last at "
        ),
        "{first}"
    );
    // Everyone is stuck acquiring: the holder in its second round behind
    // its own forgotten node, the waiters in their first.
    for who in [
        "holder acquiring round 2 since ",
        "waiter.0 acquiring round 1 since ",
        "waiter.1 acquiring round 1 since ",
    ] {
        assert!(first.contains(who), "{who}: {first}");
    }
    let end = &outcome.record.as_ref().unwrap().end;
    assert_eq!(
        end.untriggered,
        vec!["step 1 (on acquisitions 4: expire ALL)".to_string()]
    );
    // The clients still acquiring at the end are closed in the order of
    // their names, every run: their closeSessions, and the deletes that
    // come with them, are the history's last lines.
    let client_of: std::collections::BTreeMap<String, &str> = outcome
        .journal
        .iter()
        .filter_map(|e| match e.event {
            harness::journal::Event::Connected { session } => {
                Some((format!("{session:#x}"), e.client.as_str()))
            }
            _ => None,
        })
        .collect();
    let closed: Vec<&str> = outcome
        .history_tail
        .iter()
        .filter(|l| l.contains(" sess ") && l.contains(" Closed "))
        .filter_map(|l| l.split_whitespace().nth(2).and_then(|s| client_of.get(s)))
        .copied()
        .collect();
    assert_eq!(
        closed,
        ["holder", "waiter.0", "waiter.1"],
        "{:#?}",
        outcome.history_tail
    );
    let details = failure_details(&outcome);
    assert!(details.contains("liveness: VIOLATED"), "{details}");
    assert!(!details.contains("error:"), "{details}");

    let loaded =
        harness::scenario::parse(Path::new("stalls.yaml"), &text_with_expect(&failing)).unwrap();
    let outcome = run(&loaded, &on_mock(7)).await;
    assert_eq!(
        outcome.status,
        Status::Caught,
        "{}",
        failure_details(&outcome)
    );
}

fn text_with_expect(text: &str) -> String {
    format!("{text}expect:\n  violated: [liveness, no_orphans]\n")
}

/// The server-side check alone catches two holders: the clients' resource
/// is bypassed by a broken lock that never had a node, and the failure
/// report names the seed, the replay command and the history's tail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_carry_seed_replay_and_history() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/negative/broken-ignores-connection-loss.yaml");
    let loaded = harness::scenario::load(&f).unwrap();
    let outcome = run(&loaded, &on_mock(99)).await;
    assert_eq!(outcome.status, Status::Caught);
    let me = outcome
        .invariants
        .iter()
        .find(|i| i.name == "mutual_exclusion")
        .unwrap();
    assert!(
        me.details.iter().any(|d| d.starts_with("server:")),
        "{:?}",
        me.details
    );
    assert!(
        me.details.iter().any(|d| d.starts_with("clients:")),
        "{:?}",
        me.details
    );
    let text = failure_details(&outcome);
    assert!(text.contains("seed: 99"), "{text}");
    assert!(text.contains("--seed 99"), "{text}");
    assert!(!outcome.history_tail.is_empty());
}

/// A real run on the embedded mock: one lane per client, the fault drawn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_renders_as_html_with_a_lane_per_client() {
    let text = "description: a <disconnect> of the holder\nlock: {recipe: predecessor}\nclients:\n  - name: holder\n    hold: 300ms\n  - name: waiter\n    count: 2\n    start: 50ms\n    hold: 20ms\ntimeline:\n  - on: {waiting: waiter}\n    disconnect: holder\n";
    let loaded = harness::scenario::parse(Path::new("html-demo.yaml"), text).unwrap();
    let outcome = run(&loaded, &on_mock(3)).await;
    let html = harness::report::html(std::slice::from_ref(&outcome));
    assert_eq!(html.matches("<svg").count(), 1);
    assert_eq!(html.matches("<g class=\"lane\"").count(), 3);
    for c in ["holder", "waiter.0", "waiter.1"] {
        assert!(html.contains(&format!("data-client=\"{c}\"")));
    }
    assert!(html.contains("class=\"fault-label\""), "{html}");
    assert!(html.contains(">disconnect holder</text>"));
    assert!(html.contains("a &lt;disconnect&gt; of the holder"));
    assert!(html.contains("class=\"seg holding\""));
    assert!(html.matches("<g class=\"handoff\"").count() >= 2);
}

/// The whole real-target path (proxies, takeover, observer, attribution)
/// with zk-mock standing in for ZooKeeper; `tests/real_target.rs` does
/// the same against a real server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scenario_through_the_real_target_path() {
    let zk = zk_mock::ZkMock::builder()
        .tick_time(100)
        .min_session_timeout(200)
        .start()
        .await
        .unwrap();
    let text = "server: {session_timeout: 1s}
lock: {recipe: predecessor}
clients:
  - name: holder
    hold: 2s
    on_expiry: stop
  - name: waiter
    count: 2
    start: 100ms
    hold: 20ms
timeline:
  - on: {waiting: waiter}
    expire: holder
invariants:
  liveness: 5s
";
    let loaded = harness::scenario::parse(Path::new("through-proxy.yaml"), text).unwrap();
    let o = run(&loaded, &on(TargetSpec::Real(zk.addr()), 1)).await;
    assert_eq!(o.status, Status::Passed, "{}", failure_details(&o));
    let lost = o
        .invariants
        .iter()
        .find(|i| i.name == "lost_noticed")
        .unwrap();
    assert!(lost.checked && lost.held, "{lost:?}");
    assert!(
        o.handoffs.iter().any(|h| h.by_session_end),
        "{:#?}",
        o.handoffs
    );
    assert!(o
        .faults
        .iter()
        .any(|f| f.action == "expire" && f.clients == ["holder"]));
}
