//! Driver processes that break the protocol (`harness/DRIVERS.md`): each
//! run ends as an error that names the driver and the line, promptly, and
//! never as a pass. The fake drivers are small shell scripts; the real ones
//! (kazoo, Curator) are judged by `harness matrix` in CI.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use harness::implementation::Implementation;
use harness::report::{failure_details, Outcome, Status};
use harness::runner::{run, RunOptions};
use harness::target::TargetSpec;

const INIT: &str = r#"{"id":1,"ok":true,"implementation":"fake 1.0","kinds":{"exclusive":"Fake"}}"#;

/// Writes an executable shell script and returns it.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    p
}

async fn play(driver: &Path, scenario: &str) -> Outcome {
    let loaded = harness::scenario::parse(Path::new("fake.yaml"), scenario).unwrap();
    let opts = RunOptions {
        target: TargetSpec::Mock,
        seed: Some(3),
        implementation: Implementation::parse(&driver.display().to_string()).unwrap(),
        progress: None,
        pool: None,
    };
    run(&loaded, &opts).await
}

const SIMPLE: &str = "lock: {kind: exclusive}\nclients:\n  - name: a\ndeadline: 5s\n";

async fn broken(body: &str) -> (Outcome, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let d = script(dir.path(), "fake-driver", body);
    let t = Instant::now();
    let o = play(&d, SIMPLE).await;
    (o, t.elapsed())
}

fn assert_error(o: &Outcome, took: Duration, needles: &[&str]) {
    assert_eq!(o.status, Status::Error, "{}", failure_details(o));
    let all = o.errors.join("\n");
    assert!(all.contains("driver "), "names the driver: {all}");
    assert!(all.contains("fake-driver"), "names the driver: {all}");
    for n in needles {
        assert!(all.contains(n), "{n:?} in {all}");
    }
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_that_is_not_json_is_an_error_naming_the_line() {
    let (o, took) = broken(&format!(
        "read l\necho '{INIT}'\nread l\necho 'this is not json'\nsleep 8"
    ))
    .await;
    assert_error(
        &o,
        took,
        &[
            "stdout line 2",
            "not a protocol message",
            "this is not json",
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_to_an_unknown_request_is_an_error() {
    let (o, took) = broken(&format!(
        "read l\necho '{INIT}'\nread l\necho '{{\"id\":999,\"ok\":true}}'\nsleep 8"
    ))
    .await;
    assert_error(
        &o,
        took,
        &["stdout line 2", "id 999", "not an outstanding request"],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_for_a_client_never_opened_is_an_error() {
    let (o, took) = broken(&format!(
        "read l\necho '{INIT}'\nread l\necho '{{\"event\":\"state\",\"client\":\"nobody\",\"state\":\"lost\"}}'\nsleep 8"
    ))
    .await;
    assert_error(&o, took, &["stdout line 2", "\"nobody\"", "never opened"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_driver_that_exits_mid_run_is_an_error_with_its_stderr() {
    let (o, took) = broken(&format!(
        "read l\necho '{INIT}'\nread l\necho 'giving up now' >&2\nexit 3"
    ))
    .await;
    assert_error(&o, took, &["exited", "giving up now"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_missing_its_fields_is_an_error() {
    // `open` must say which session it got.
    let (o, took) = broken(&format!(
        "read l\necho '{INIT}'\nread l\necho '{{\"id\":2,\"ok\":true}}'\nsleep 8"
    ))
    .await;
    assert_error(&o, took, &["stdout line 2", "no `session`"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_driver_that_cannot_start_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = script(dir.path(), "fake-driver", "echo 'no protocol here'\nexit 0");
    let o = play(&d, SIMPLE).await;
    assert_eq!(o.status, Status::Error, "{}", failure_details(&o));
    assert!(
        o.errors.join("\n").contains("fake-driver"),
        "{:?}",
        o.errors
    );
}

/// A driver that never answers `open` does not hang the harness past the
/// scenario's deadline, and the run is not a pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_driver_ends_at_the_deadline_and_does_not_pass() {
    let dir = tempfile::tempdir().unwrap();
    let d = script(
        dir.path(),
        "fake-driver",
        &format!("read l\necho '{INIT}'\nsleep 8"),
    );
    let t = Instant::now();
    let o = play(
        &d,
        "lock: {kind: exclusive}\nclients:\n  - name: a\ndeadline: 2s\n",
    )
    .await;
    assert!(!o.status.ok(), "{}", failure_details(&o));
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
}

/// A scenario whose kind the driver does not offer is skipped, with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kind_the_driver_lacks_is_skipped_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let d = script(
        dir.path(),
        "fake-driver",
        &format!("read l\necho '{INIT}'\nread l\necho '{{\"id\":2,\"ok\":true}}'"),
    );
    let o = play(&d, "lock: {kind: semaphore}\nclients:\n  - name: a\n").await;
    assert_eq!(o.status, Status::Skipped, "{}", failure_details(&o));
    assert!(
        o.errors[0].contains("needs a semaphore lock; fake 1.0 offers exclusive (Fake)"),
        "{:?}",
        o.errors
    );
    let o = play(&d, "lock: {recipe: herd}\nclients:\n  - name: a\n").await;
    assert_eq!(o.status, Status::Skipped);
    assert!(
        o.errors[0].contains("names zk-lock's `herd` recipe"),
        "{:?}",
        o.errors
    );
}

/// zk-lock's own recipes through the protocol (the `zk-lock-driver`
/// binary) reach the verdicts they reach in process, including the
/// negative scenarios' catches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zk_lock_through_the_protocol_gets_the_in_process_verdicts() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let files = [
        "holder-expires.yaml",
        "rw-predecessor-mixed.yaml",
        "reentrant-basic.yaml",
        "field/kazoo-732-lost-cleanup-delete.yaml",
        "field/curator-727-partition-outlives-session.yaml",
        "negative/broken-release-once.yaml",
        "negative/broken-no-recheck.yaml",
    ];
    let driver = Implementation::Driver {
        name: "zk-lock-driver".into(),
        command: vec![env!("CARGO_BIN_EXE_zk-lock-driver").into()],
    };
    let mut failures = String::new();
    for f in files {
        let loaded = harness::scenario::load(&root.join(f)).unwrap();
        let mut statuses = Vec::new();
        for imp in [Implementation::ZkLock, driver.clone()] {
            let o = run(
                &loaded,
                &RunOptions {
                    target: TargetSpec::Mock,
                    seed: Some(11),
                    implementation: imp,
                    progress: None,
                    pool: None,
                },
            )
            .await;
            if !o.status.ok() {
                failures.push_str(&failure_details(&o));
            }
            statuses.push((o.status, o.violated().join(",")));
        }
        if statuses[0] != statuses[1] {
            failures.push_str(&format!(
                "{f}: in process {:?}, driver {:?}\n",
                statuses[0], statuses[1]
            ));
        }
    }
    assert!(failures.is_empty(), "{failures}");
}
