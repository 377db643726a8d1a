//! The shipped Python drivers under the harness (needs python3 with kazoo
//! 2.11: `cargo test -p harness --features kazoo --test real_drivers`):
//! a test driver with one planted bug (a release that ignores connection
//! loss) is caught, kazoo's own Lock is caught by the kazoo-732 scenario,
//! and zk-lock passes it.
#![cfg(feature = "kazoo")]

use std::path::{Path, PathBuf};

use harness::implementation::{drivers_dir, Implementation};
use harness::report::{failure_details, Outcome, Status};
use harness::runner::{run, RunOptions};
use harness::target::TargetSpec;

fn scenario(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(rel)
}

async fn play(file: &str, implementation: Implementation) -> Outcome {
    let loaded = harness::scenario::load(&scenario(file)).unwrap();
    run(
        &loaded,
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
