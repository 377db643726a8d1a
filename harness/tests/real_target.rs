//! Scenarios with faults against a real Apache ZooKeeper 3.8, through the
//! harness's own proxy (`--target HOST:PORT`): disconnect, expiry by session
//! takeover, a lost create reply, a stall past the session timeout.
//!
//! Needs Java and the ZooKeeper jars (Debian's `zookeeper` package:
//! `/usr/share/java/zookeeper.jar`), so it only builds with the feature:
//! `cargo test -p harness --features real-zk --test real_target`.
//! `ZK_CLASSPATH` and `ZK_JAVA` override where they are found.
//!
//! The server is zk-mock's [`RealZk`] launcher (it dies with the test
//! binary). Its tick is 200 ms so that the scenarios' 1–3 s session timeouts
//! are honoured (the minimum is two ticks).
#![cfg(feature = "real-zk")]

use std::path::Path;
use std::sync::OnceLock;

use zk_mock::real::RealZk;

use harness::report::{failure_details, Outcome, Status};
use harness::runner::{run, RunOptions};
use harness::target::TargetSpec;

fn server() -> &'static RealZk {
    static SHARED: OnceLock<RealZk> = OnceLock::new();
    SHARED.get_or_init(|| {
        RealZk::builder()
            .tick_time(200)
            .cfg("minSessionTimeout=400")
            .cfg("maxSessionTimeout=60000")
            .start()
            .unwrap_or_else(|e| panic!("{e}"))
    })
}

async fn play(name: &str, text: &str) -> Outcome {
    play_on(
        TargetSpec::Real(server().addr()),
        name,
        text,
        Status::Passed,
    )
    .await
}

/// Plays a scenario on `target` and checks its status.
async fn play_on(target: TargetSpec, name: &str, text: &str, status: Status) -> Outcome {
    let loaded = harness::scenario::parse(Path::new(&format!("{name}.yaml")), text)
        .unwrap_or_else(|e| panic!("{e}"));
    let opts = RunOptions {
        target,
        seed: Some(7),
        implementation: harness::implementation::Implementation::ZkLock,
        progress: None,
        pool: None,
    };
    let outcome = run(&loaded, &opts).await;
    assert_eq!(outcome.target, "real");
    assert_eq!(outcome.status, status, "{}", failure_details(&outcome));
    outcome
}

/// `--target real`: ensemble scenarios on a fresh real ensemble each.
fn started() -> TargetSpec {
    TargetSpec::RealStarted(server().addr())
}

fn library(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The clients a fault step reached.
fn reached<'a>(o: &'a Outcome, action: &str) -> Vec<&'a str> {
    o.faults
        .iter()
        .filter(|f| f.action == action)
        .flat_map(|f| f.clients.iter().map(String::as_str))
        .collect()
}

fn journal_has(o: &Outcome, client: &str, kind: &str) -> bool {
    o.journal.iter().any(|e| {
        e.client == client
            && serde_json::to_value(e)
                .ok()
                .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(|k| k == kind))
                .unwrap_or(false)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnects_within_the_session_timeout() {
    let o = play(
        "real-disconnect",
        "server: {session_timeout: 3s}
lock: {recipe: predecessor}
clients:
  - name: holder
    hold: 600ms
  - name: waiter
    count: 3
    start: 50ms
    hold: 20ms
timeline:
  - on: {waiting: waiter}
    disconnect: holder
  - on: {waiting: waiter}
    after: 100ms
    disconnect: WAITERS
invariants:
  liveness: 5s
",
    )
    .await;
    assert_eq!(reached(&o, "disconnect").first(), Some(&"holder"));
    assert_eq!(o.stats.acquisitions, 4);
    // The holder kept its session: one session per client.
    assert_eq!(o.stats.sessions, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holder_expired_by_session_takeover() {
    let o = play(
        "real-expire",
        "server: {session_timeout: 1s}
lock: {recipe: predecessor}
clients:
  - name: holder
    hold: 2s
    on_expiry: stop
  - name: waiter
    count: 3
    start: 100ms
    hold: 20ms
timeline:
  - on: {waiting: waiter}
    expire: holder
invariants:
  liveness: 5s
",
    )
    .await;
    assert_eq!(reached(&o, "expire"), vec!["holder"]);
    assert!(journal_has(&o, "holder", "lost"), "{:#?}", o.journal);
    assert!(journal_has(&o, "holder", "expired"), "{:#?}", o.journal);
    assert_eq!(o.stats.acquisitions, 4);
    // The proxies attribute the holder's node to its session's end, so the
    // loss is checked against the holder's own journal.
    let lost = o
        .invariants
        .iter()
        .find(|i| i.name == "lost_noticed")
        .unwrap();
    assert!(lost.checked && lost.held, "{lost:?}");
    assert!(
        o.handoffs
            .iter()
            .any(|h| h.by_session_end && h.from.as_deref() == Some("holder")),
        "{:#?}",
        o.handoffs
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_create_reply() {
    let o = play(
        "real-lose-reply",
        "lock: {recipe: predecessor}
clients:
  - name: holder
    hold: 200ms
  - name: unlucky
    start: 50ms
    hold: 20ms
  - name: other
    count: 3
    start: 100ms
    hold: 20ms
timeline:
  - at: 0ms
    lose_reply: {op: create, client: unlucky}
invariants:
  liveness: 5s
",
    )
    .await;
    assert_eq!(reached(&o, "lose_reply"), vec!["unlucky"]);
    assert_eq!(o.stats.acquisitions, 5);
    // The server's history saw every lock node come and go.
    let lock_nodes = o.handoffs.len();
    assert_eq!(lock_nodes, 5, "{:#?}", o.handoffs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stall_past_the_session_timeout() {
    let o = play(
        "real-stall",
        "server: {session_timeout: 1s}
lock: {recipe: predecessor}
clients:
  - name: holder
    hold: 1500ms
  - name: waiter
    count: 2
    start: 50ms
    hold: 50ms
timeline:
  - on: {waiting: waiter}
    stall: {client: holder, for: 2500ms}
invariants:
  liveness: 6s
",
    )
    .await;
    assert_eq!(reached(&o, "stall"), vec!["holder"]);
    assert!(journal_has(&o, "holder", "lost"), "{:#?}", o.journal);
    // The real server expired the stalled session on its own.
    assert!(journal_has(&o, "holder", "expired"), "{:#?}", o.journal);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_and_delay_through_the_proxy() {
    let o = play(
        "real-fail-delay",
        "lock: {recipe: predecessor}
clients:
  - name: holder
    hold: 200ms
  - name: waiter
    count: 2
    start: 50ms
    hold: 20ms
timeline:
  - at: 0ms
    fail: {op: create, client: waiter, code: ThrottledOp}
  - at: 0ms
    fail: {op: delete, client: holder, code: ThrottledOp}
  - at: 0ms
    delay: {op: getData, client: waiter, for: 300ms}
invariants:
  liveness: 5s
",
    )
    .await;
    let mut failed = reached(&o, "fail");
    failed.sort_unstable();
    assert_eq!(failed, vec!["holder", "waiter.0", "waiter.1"]);
    assert_eq!(reached(&o, "delay").len(), 2);
    // Each fired on the real server's traffic: the holder's delete and each
    // waiter's first create shed, each waiter's first getData held.
    let fired = o.record.as_ref().and_then(|r| r.request_faults_fired);
    assert_eq!(fired, Some(5), "faults fired");
    // Every shed request was sent again: all three got the lock in turn.
    assert_eq!(o.stats.acquisitions, 3);
    assert_eq!(o.handoffs.len(), 3, "{:#?}", o.handoffs);
}

// Ensembles: `--target real` starts a real 3-server ensemble for each
// scenario with `servers: 3`; each client's proxy listens once per server.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_holders_server_killed_on_a_real_ensemble() {
    let o = play_on(
        started(),
        "holder-server-killed",
        &library("ensemble/holder-server-killed.yaml"),
        Status::Passed,
    )
    .await;
    let killed = reached(&o, "kill_server");
    assert_eq!(killed.len(), 1, "{:#?}", o.faults);
    assert!(killed[0].starts_with("server "), "{killed:?}");
    assert_eq!(o.stats.acquisitions, 4);
    // The holder failed over and kept its session: one session per client.
    assert_eq!(o.stats.sessions, 4, "{:#?}", o.journal);
    // It noticed the connection drop while holding, and got it back.
    assert!(journal_has(&o, "holder", "suspended"), "{:#?}", o.journal);
    assert!(journal_has(&o, "holder", "resumed"), "{:#?}", o.journal);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_restart_on_a_real_ensemble() {
    let o = play_on(
        started(),
        "rolling-restart",
        &library("ensemble/rolling-restart.yaml"),
        Status::Passed,
    )
    .await;
    assert_eq!(
        reached(&o, "kill_server"),
        vec!["server 0", "server 1", "server 2"]
    );
    assert_eq!(o.stats.acquisitions, 50);
    assert_eq!(o.stats.sessions, 5, "{:#?}", o.journal);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiry_and_pinned_groups_on_a_real_ensemble() {
    let o = play_on(
        started(),
        "real-ensemble-expire",
        "server: {servers: 3, session_timeout: 2s}
lock: {recipe: predecessor}
clients:
  - name: holder
    hold: 2s
    on_expiry: stop
  - name: waiter
    count: 2
    server: [1, 2]
    start: 100ms
    hold: 300ms
timeline:
  - on: {waiting: waiter}
    expire: holder
  - on: {acquisitions: 2}
    kill_server: waiter.0
invariants:
  liveness: 8s
",
        Status::Passed,
    )
    .await;
    assert_eq!(reached(&o, "expire"), vec!["holder"]);
    assert!(journal_has(&o, "holder", "expired"), "{:#?}", o.journal);
    // The waiters connect only to servers 1 and 2: the server killed under
    // waiter.0 is one of those, and it fails over to the other.
    let killed = reached(&o, "kill_server");
    assert!(
        killed == ["server 1"] || killed == ["server 2"],
        "{killed:?}"
    );
    assert_eq!(o.stats.acquisitions, 3);
    assert_eq!(o.stats.sessions, 3, "{:#?}", o.journal);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lag_and_partitions_need_the_mock_and_a_running_server_has_no_ensemble() {
    let o = play_on(
        started(),
        "curator-498-lagging-follower",
        &library("ensemble/curator-498-lagging-follower.yaml"),
        Status::Skipped,
    )
    .await;
    assert!(
        o.errors[0].contains("needs the mock's lag"),
        "{:?}",
        o.errors
    );
    let o = play_on(
        TargetSpec::Real(server().addr()),
        "holder-server-killed",
        &library("ensemble/holder-server-killed.yaml"),
        Status::Skipped,
    )
    .await;
    assert!(o.errors[0].contains("--target real"), "{:?}", o.errors);
}
