//! Plays the scenario library on the embedded mock: every positive
//! scenario passes and every negative one is caught. The 1000-contender
//! stampedes run in the main job (`harness run scenarios/`, release build),
//! not here.

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
    let opts = RunOptions {
        target: TargetSpec::Mock,
        seed: Some(7),
        implementation: harness::implementation::Implementation::ZkLock,
        progress: None,
    };
    let mut failures = String::new();
    for f in &files {
        let loaded = harness::scenario::load(f).unwrap_or_else(|e| panic!("{e}"));
        let outcome = run(&loaded, &opts).await;
        let want = if loaded.scenario.expect.violated.is_empty() {
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
    let outcome = run(
        &loaded,
        &RunOptions {
            target: TargetSpec::Mock,
            seed: Some(1),
            implementation: harness::implementation::Implementation::ZkLock,
            progress: None,
        },
    )
    .await;
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

/// A step whose trigger never comes is an error, not a pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_never_runs_is_an_error() {
    let text = "lock: {recipe: predecessor}\nclients:\n  - name: w\n    count: 2\ntimeline:\n  - on: {acquisitions: 50}\n    expire: ALL\n";
    let loaded = harness::scenario::parse(Path::new("never.yaml"), text).unwrap();
    let outcome = run(
        &loaded,
        &RunOptions {
            target: TargetSpec::Mock,
            seed: Some(1),
            implementation: harness::implementation::Implementation::ZkLock,
            progress: None,
        },
    )
    .await;
    assert_eq!(
        outcome.status,
        Status::Error,
        "{}",
        failure_details(&outcome)
    );
    assert!(
        outcome.errors.iter().any(|e| e.contains("never ran")),
        "{:?}",
        outcome.errors
    );
}

/// The server-side check alone catches two holders: the clients' resource
/// is bypassed by a broken lock that never had a node, and the failure
/// report names the seed, the replay command and the history's tail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_carry_seed_replay_and_history() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/negative/broken-ignores-connection-loss.yaml");
    let loaded = harness::scenario::load(&f).unwrap();
    let outcome = run(
        &loaded,
        &RunOptions {
            target: TargetSpec::Mock,
            seed: Some(99),
            implementation: harness::implementation::Implementation::ZkLock,
            progress: None,
        },
    )
    .await;
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
