//! Driver processes reused across runs (`RunOptions::pool`, `reset` in
//! `harness/DRIVERS.md`): a pooled driver plays scenarios in a row and each
//! is judged as on a fresh process; a driver whose `init` does not say
//! `reuse` is never sent `reset` and serves one run; a driver that died is
//! not reused; an earlier run's late lines never reach the next run.
//!
//! The kazoo and Curator drivers are pooled in the tests at the end (kazoo:
//! `--features kazoo`; Curator: when Java and Debian's Curator jars are there).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use harness::implementation::{HostPool, Implementation};
use harness::report::{failure_details, Outcome, Status};
use harness::runner::{run, RunOptions};
use harness::scenario::Loaded;

fn scenario(rel: &str) -> Loaded {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(rel);
    harness::scenario::load(&p).unwrap()
}

async fn play(
    loaded: &Loaded,
    implementation: &Implementation,
    pool: Option<&Arc<HostPool>>,
) -> Outcome {
    run(
        loaded,
        &RunOptions {
            seed: Some(5),
            implementation: implementation.clone(),
            pool: pool.cloned(),
            ..RunOptions::mock(None)
        },
    )
    .await
}

fn verdict(o: &Outcome) -> (Status, Vec<String>) {
    let mut v: Vec<String> = o.violated().iter().map(|s| s.to_string()).collect();
    v.sort();
    (o.status, v)
}

/// Two clients, one round each; a short deadline, so that a run whose driver
/// failed ends soon after.
fn two_clients() -> Loaded {
    harness::scenario::parse(
        Path::new("two.yaml"),
        "lock: {kind: exclusive}\nclients:\n  - name: holder\n  - name: waiter\ndeadline: 5s\n",
    )
    .unwrap()
}

fn zk_lock_driver() -> Implementation {
    Implementation::Driver {
        name: "zk-lock-driver".into(),
        command: vec![env!("CARGO_BIN_EXE_zk-lock-driver").into()],
    }
}

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

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

/// Scenarios whose verdicts differ (a pass, negative ones caught, a
/// liveness failure that leaves a node and its session behind), played in
/// a row by one pooled process: each gets the verdict it gets in process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooled_driver_plays_scenarios_in_a_row_with_their_own_verdicts() {
    let files = [
        "holder-expires.yaml",
        "negative/broken-release-once.yaml",
        "reentrant-basic.yaml",
        "field/kazoo-732-lost-cleanup-delete.yaml",
        "negative/broken-no-recheck.yaml",
        "rw-predecessor-mixed.yaml",
    ];
    let pool = HostPool::new(1).unwrap();
    let driver = zk_lock_driver();
    let mut failures = String::new();
    for f in files {
        let loaded = scenario(f);
        let alone = play(&loaded, &Implementation::ZkLock, None).await;
        let pooled = play(&loaded, &driver, Some(&pool)).await;
        if verdict(&alone) != verdict(&pooled) || !pooled.status.ok() {
            failures.push_str(&format!(
                "{f}: in process {:?}, pooled driver {:?}\n{}",
                verdict(&alone),
                verdict(&pooled),
                failure_details(&pooled)
            ));
        }
    }
    assert!(failures.is_empty(), "{failures}");
    let stats = pool.stats();
    assert_eq!(stats.started, 1, "{stats:?}");
    assert_eq!(stats.reused, files.len() as u64 - 1, "{stats:?}");
    pool.close().await;
}

/// A driver whose `init` reply has no `reuse` (zk-lock-driver behind a
/// filter that takes it out) serves one run per process, with a pool too:
/// it is never sent `reset`, and gets `shutdown` as without a pool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_driver_without_reuse_serves_one_run_per_process() {
    let dir = tempfile::tempdir().unwrap();
    let (starts, requests) = (dir.path().join("starts"), dir.path().join("requests"));
    let d = script(
        dir.path(),
        "no-reuse-driver",
        &format!(
            "echo start >> {}\ntee -a {} | {} | sed -u 's/,\"reuse\":true//'",
            starts.display(),
            requests.display(),
            env!("CARGO_BIN_EXE_zk-lock-driver")
        ),
    );
    let imp = Implementation::parse(&d.display().to_string()).unwrap();
    let pool = HostPool::new(1).unwrap();
    let loaded = scenario("holder-expires.yaml");
    for _ in 0..3 {
        let o = play(&loaded, &imp, Some(&pool)).await;
        assert_eq!(o.status, Status::Passed, "{}", failure_details(&o));
    }
    pool.close().await;
    let stats = pool.stats();
    assert_eq!(stats.reused, 0, "{stats:?}");
    let requests = lines(&requests);
    assert!(
        !requests.iter().any(|l| l.contains("\"reset\"")),
        "a driver without reuse got reset: {requests:?}"
    );
    // One process per run (a pre-started one or two may never have served).
    let shutdowns = requests
        .iter()
        .filter(|l| l.contains("\"shutdown\""))
        .count();
    assert!(lines(&starts).len() >= 3, "{:?}", lines(&starts));
    assert!(shutdowns >= 3, "{requests:?}");
}

/// A driver that says `reuse` but died during its first run (its stdin is
/// cut after three requests, so it exits): that run is an error, and the next run gets a
/// fresh process, which passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_driver_that_died_is_not_reused() {
    let dir = tempfile::tempdir().unwrap();
    let starts = dir.path().join("starts");
    let d = script(
        dir.path(),
        "dies-once-driver",
        &format!(
            "n=$(cat {s} 2>/dev/null | wc -l)\necho start >> {s}\n\
             if [ \"$n\" = 0 ]; then\n\
               i=0; while [ $i -lt 3 ] && IFS= read -r l; do printf '%s\\n' \"$l\"; i=$((i+1)); done | {z}\n\
             else exec {z}; fi",
            s = starts.display(),
            z = env!("CARGO_BIN_EXE_zk-lock-driver")
        ),
    );
    let imp = Implementation::parse(&d.display().to_string()).unwrap();
    let pool = HostPool::new(1).unwrap();
    let loaded = two_clients();
    let first = play(&loaded, &imp, Some(&pool)).await;
    assert_eq!(first.status, Status::Error, "{}", failure_details(&first));
    assert!(
        first.errors.join("\n").contains("dies-once-driver"),
        "{:?}",
        first.errors
    );
    let second = play(&loaded, &imp, Some(&pool)).await;
    assert_eq!(
        second.status,
        Status::Passed,
        "{}",
        failure_details(&second)
    );
    let third = play(&loaded, &imp, Some(&pool)).await;
    assert_eq!(third.status, Status::Passed, "{}", failure_details(&third));
    let stats = pool.stats();
    assert_eq!(
        stats.reused, 1,
        "the second process serves the third run: {stats:?}"
    );
    assert!(stats.retired >= 1, "{stats:?}");
    assert_eq!(lines(&starts).len(), 2, "{:?}", lines(&starts));
    pool.close().await;
}

const INIT_REUSE: &str =
    r#"{"id":1,"ok":true,"implementation":"fake 1.0","kinds":{"exclusive":"Fake"},"reuse":true}"#;

/// A fake driver that says `reuse` and, after each `reset`, first writes
/// `after_reset` (lines of the run that ended), then serves the next run
/// with zk-lock-driver. Returns the outcome of the run after the reset.
async fn after_reset(after_reset: &str) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    // A Python relay: requests go to zk-lock-driver, its lines come back,
    // except that `reset` is answered here after `after_reset`'s lines.
    let relay = dir.path().join("relay.py");
    std::fs::write(
        &relay,
        format!(
            r#"import json, subprocess, sys, threading
z = subprocess.Popen([{z:?}], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
lock = threading.Lock()
def out(line):
    with lock:
        sys.stdout.write(line if line.endswith("\n") else line + "\n"); sys.stdout.flush()
def pump():
    for l in z.stdout:
        out(l.decode())
threading.Thread(target=pump, daemon=True).start()
for line in sys.stdin:
    msg = json.loads(line)
    if msg["op"] == "init":
        out({init:?}); continue
    if msg["op"] == "reset":
        z.stdin.write(line.encode()); z.stdin.flush()
        import time; time.sleep(0.3)
        for l in {after:?}.splitlines():
            out(l)
        continue
    z.stdin.write(line.encode()); z.stdin.flush()
"#,
            z = env!("CARGO_BIN_EXE_zk-lock-driver"),
            init = INIT_REUSE,
            after = after_reset,
        ),
    )
    .unwrap();
    let imp = Implementation::Driver {
        name: "relay".into(),
        command: vec!["python3".into(), relay.display().to_string()],
    };
    let pool = HostPool::new(1).unwrap();
    let loaded = two_clients();
    let first = play(&loaded, &imp, Some(&pool)).await;
    assert_eq!(first.status, Status::Passed, "{}", failure_details(&first));
    let second = play(&loaded, &imp, Some(&pool)).await;
    assert_eq!(pool.stats().reused, 1, "{:?}", pool.stats());
    pool.close().await;
    second
}

/// Lines of the run that ended, written after `reset` (here by the relay,
/// in a real driver by a client that was closing): a late reply to an
/// earlier run's request and a `lost` event of the earlier run for a client
/// the next run opens too. The next run ignores both, and passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_earlier_runs_late_lines_do_not_reach_the_next_run() {
    // zk-lock-driver answers the reset itself (its id is the reset's);
    // these come after that reply.
    let o = after_reset(
        "{\"id\":3,\"ok\":true}\n\
         {\"event\":\"state\",\"client\":\"holder\",\"state\":\"lost\",\"session\":1,\"run\":0}\n\
         {\"event\":\"lock\",\"client\":\"waiter\",\"state\":\"lost\",\"run\":0}",
    )
    .await;
    assert_eq!(o.status, Status::Passed, "{}", failure_details(&o));
}

/// After a reset, an event without `run` cannot be told from an earlier
/// run's: the run is an error that says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_without_run_after_a_reset_is_an_error() {
    let o = after_reset("{\"event\":\"state\",\"client\":\"holder\",\"state\":\"lost\"}").await;
    assert_eq!(o.status, Status::Error, "{}", failure_details(&o));
    assert!(
        o.errors.join("\n").contains("without `run` after a reset"),
        "{:?}",
        o.errors
    );
}

/// The real drivers pooled: scenarios with different verdicts in a row,
/// each as expected (`harness/expected-verdicts.yaml`).
async fn real_driver_in_a_row(name: &str, expected_732: (Status, Vec<String>)) {
    let imp = Implementation::parse(name).unwrap();
    let pool = HostPool::new(1).unwrap();
    let plan = [
        ("holder-expires.yaml", (Status::Passed, vec![])),
        ("field/kazoo-732-lost-cleanup-delete.yaml", expected_732),
        ("semaphore-basic.yaml", (Status::Passed, vec![])),
        ("holder-expires.yaml", (Status::Passed, vec![])),
    ];
    let mut failures = String::new();
    for (f, expected) in &plan {
        let o = play(&scenario(f), &imp, Some(&pool)).await;
        if &verdict(&o) != expected {
            failures.push_str(&format!(
                "{f}: {:?}, expected {expected:?}\n{}",
                verdict(&o),
                failure_details(&o)
            ));
        }
    }
    assert!(failures.is_empty(), "{failures}");
    let stats = pool.stats();
    assert_eq!(stats.started, 1, "{stats:?}");
    assert_eq!(stats.reused, plan.len() as u64 - 1, "{stats:?}");
    pool.close().await;
}

#[cfg(feature = "kazoo")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoo_pooled_plays_scenarios_in_a_row() {
    real_driver_in_a_row(
        "kazoo",
        (Status::Failed, vec!["liveness".into(), "no_orphans".into()]),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_pooled_plays_scenarios_in_a_row() {
    let jars = std::env::var("CURATOR_JARS").unwrap_or_else(|_| "/usr/share/java".into());
    let have_java = std::process::Command::new("java")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_java || !Path::new(&jars).join("curator-recipes.jar").exists() {
        eprintln!("skipped: no java or no Curator jars in {jars}");
        return;
    }
    real_driver_in_a_row("curator", (Status::Passed, vec![])).await;
}
