//! The shipped Python drivers under the harness (needs python3 with kazoo
//! 2.11: `cargo test -p harness --features kazoo --test real_drivers`):
//! a test driver with one planted bug (a release that ignores connection
//! loss) is caught, kazoo's own Lock is caught by the kazoo-732 scenario,
//! and zk-lock passes it; minilock, a lock on kazoo's raw calls written from
//! the protocol's documentation, passes the library as written and is
//! caught with each planted bug.
#![cfg(feature = "kazoo")]

use std::path::{Path, PathBuf};

use harness::implementation::{drivers_dir, Implementation};
use harness::report::{failure_details, Outcome, Status};
use harness::runner::{run, RunOptions};
use harness::scenario::Loaded;
use harness::target::TargetSpec;

fn scenario(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(rel)
}

async fn play(file: &str, implementation: Implementation) -> Outcome {
    let loaded = harness::scenario::load(&scenario(file)).unwrap();
    play_loaded(&loaded, implementation).await
}

async fn play_loaded(loaded: &Loaded, implementation: Implementation) -> Outcome {
    run(
        loaded,
        &RunOptions {
            target: TargetSpec::Mock,
            seed: Some(21),
            implementation,
            progress: None,
            pool: None,
        },
    )
    .await
}

fn violated(o: &Outcome) -> Vec<&str> {
    let mut v = o.violated();
    v.sort_unstable();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_that_ignores_connection_loss_is_caught() {
    let planted = Implementation::Driver {
        name: "planted".into(),
        command: vec![
            "python3".into(),
            drivers_dir()
                .join("testing/release_ignores_connection_loss.py")
                .display()
                .to_string(),
        ],
    };
    // Without the fault, the planted driver is an ordinary lock.
    let o = play("predecessor-basic.yaml", planted.clone()).await;
    assert_eq!(o.status, Status::Passed, "{}", failure_details(&o));
    let o = play("field/curator-678-release-connection-loss.yaml", planted).await;
    assert_eq!(o.status, Status::Failed, "{}", failure_details(&o));
    assert_eq!(
        violated(&o),
        vec!["liveness", "no_orphans"],
        "{}",
        failure_details(&o)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoo_732_is_found_in_kazoo_and_not_in_zk_lock() {
    let o = play(
        "field/kazoo-732-lost-cleanup-delete.yaml",
        Implementation::parse("kazoo").unwrap(),
    )
    .await;
    assert_eq!(o.status, Status::Failed, "{}", failure_details(&o));
    assert_eq!(violated(&o), vec!["liveness", "no_orphans"]);
    assert!(
        o.implementation_version.starts_with("kazoo 2.11"),
        "{}",
        o.implementation_version
    );
    let o = play(
        "field/kazoo-732-lost-cleanup-delete.yaml",
        Implementation::ZkLock,
    )
    .await;
    assert_eq!(o.status, Status::Passed, "{}", failure_details(&o));
}

/// minilock (harness/drivers/testing/minilock), with one of its planted
/// bugs, or none.
fn minilock(bug: Option<&str>) -> Implementation {
    let mut command = vec![
        "python3".to_string(),
        drivers_dir()
            .join("testing/minilock/driver.py")
            .display()
            .to_string(),
    ];
    if let Some(b) = bug {
        command.extend(["--bug".to_string(), b.to_string()]);
    }
    Implementation::Driver {
        name: format!("minilock-{}", bug.unwrap_or("correct")),
        command,
    }
}

/// A correct lock that ends a waiter's acquisition when its session
/// expires passes the CURATOR-604 scenario: the expiry's held deletions go
/// once that waiter is done, instead of stalling everyone behind its node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn minilock_passes_what_a_correct_lock_passes() {
    for file in [
        "field/curator-604-waiter-expires.yaml",
        "waiter-expires.yaml",
        "crash-everyone.yaml",
    ] {
        let o = play(file, minilock(None)).await;
        assert_eq!(o.status, Status::Passed, "{file}: {}", failure_details(&o));
    }
}

/// Lock nodes created persistent outlive their crashed clients: orphans,
/// though no session owns them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn minilock_with_persistent_nodes_leaves_orphans() {
    let o = play("crash-everyone.yaml", minilock(Some("persistent"))).await;
    assert_eq!(o.status, Status::Failed, "{}", failure_details(&o));
    assert!(
        violated(&o).contains(&"no_orphans"),
        "{}",
        failure_details(&o)
    );
}

/// A waiter that takes the lock when its predecessor goes, without listing
/// again, enters beside the holder when the predecessor was a waiter that
/// expired. The queue's order is forced: `first` queues behind the holder,
/// `second` behind `first`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn minilock_without_relisting_breaks_mutual_exclusion() {
    let text = "server: {session_timeout: 1s}
lock: {kind: exclusive}
clients:
  - name: holder
    hold: 500ms
  - name: first
    on_stampede: true
    hold: 20ms
  - name: second
    on_stampede: true
    hold: 20ms
timeline:
  - on: {holds: holder}
    stampede: first
  - on: {waiting: first}
    stampede: second
  - on: {waiting: second}
    expire: first
";
    let loaded = harness::scenario::parse(Path::new("no-relist.yaml"), text).unwrap();
    let o = play_loaded(&loaded, minilock(Some("no-relist"))).await;
    assert_eq!(o.status, Status::Failed, "{}", failure_details(&o));
    assert!(
        violated(&o).contains(&"mutual_exclusion"),
        "{}",
        failure_details(&o)
    );
}
