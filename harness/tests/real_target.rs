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
    let zk = server();
    let loaded = harness::scenario::parse(Path::new(&format!("{name}.yaml")), text)
        .unwrap_or_else(|e| panic!("{e}"));
    let opts = RunOptions {
        target: TargetSpec::Real(zk.addr()),
        seed: Some(7),
        implementation: harness::implementation::Implementation::ZkLock,
        progress: None,
    };
    let outcome = run(&loaded, &opts).await;
    assert_eq!(outcome.target, "real");
    assert_eq!(
        outcome.status,
        Status::Passed,
        "{}",
        failure_details(&outcome)
    );
    outcome
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
