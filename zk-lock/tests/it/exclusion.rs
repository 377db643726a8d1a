//! Mutual exclusion with many contenders, from the clients and from the server's history.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use zk_mock::proto::OpCode;
use zk_mock::ZkMock;
use zookeeper_client::{Acls, CreateMode};

use crate::support::*;

const CONTENDERS: usize = 12;
const ROUNDS: usize = 3;

async fn contend(kind: Kind) {
    let zk = ZkMock::start().await;
    let dir = "/locks/exclusion";
    let inside = Arc::new(AtomicUsize::new(0));
    let max_inside = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..CONTENDERS {
        let c = client(&zk).await;
        let (inside, max_inside) = (inside.clone(), max_inside.clone());
        tasks.push(tokio::spawn(async move {
            let lock = kind.lock(c.clone(), dir);
            let mut tokens = Vec::new();
            for _ in 0..ROUNDS {
                let guard = lock.acquire().await.expect("acquire");
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                max_inside.fetch_max(now, Ordering::SeqCst);
                // Server-side evidence: a marker only one holder can create.
                let opts = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
                c.create("/cs", &[], &opts).await.expect("marker create");
                tokio::task::yield_now().await;
                c.delete("/cs", None).await.expect("marker delete");
                inside.fetch_sub(1, Ordering::SeqCst);
                tokens.push(guard.fencing_token());
                guard.release().await.expect("release");
            }
            (lock.metrics(), tokens)
        }));
    }
    let mut tokens = Vec::new();
    for t in tasks {
        let (m, mut tk) = t.await.unwrap();
        assert_eq!(m.acquisitions, ROUNDS as u64);
        tokens.append(&mut tk);
    }
    assert_eq!(
        max_inside.load(Ordering::SeqCst),
        1,
        "{kind:?}: clients saw overlap"
    );

    // The server's history: marker creates and deletes strictly alternate,
    // each pair from one session, none failed.
    let requests = zk.requests();
    let marker = || requests.iter().by_path("/cs");
    assert_eq!(marker().errors().count(), 0, "{kind:?}: {}", zk.recorded());
    let ops: Vec<_> = marker().map(|r| (r.op_code, r.session)).collect();
    assert_eq!(ops.len(), 2 * CONTENDERS * ROUNDS);
    for pair in ops.chunks(2) {
        assert_eq!(pair[0].0, OpCode::Create2 as i32, "{kind:?}");
        assert_eq!(pair[1].0, OpCode::Delete as i32, "{kind:?}");
        assert_eq!(
            pair[0].1, pair[1].1,
            "{kind:?}: marker deleted by another session"
        );
    }
    // Fencing tokens are unique per acquisition.
    tokens.sort_unstable();
    tokens.dedup();
    assert_eq!(tokens.len(), CONTENDERS * ROUNDS, "{kind:?}");
    assert!(
        children(&zk, dir).is_empty(),
        "{kind:?}: orphans {:?}",
        children(&zk, dir)
    );
    no_watches_left(&zk).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn predecessor_lock_excludes() {
    contend(Kind::Predecessor).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn herd_lock_excludes() {
    contend(Kind::Herd).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn naive_lock_excludes() {
    contend(Kind::Naive).await;
}
