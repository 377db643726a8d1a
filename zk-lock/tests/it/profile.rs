//! Notification profile of one release, from the server's recorder and the
//! clients' metrics: N contenders, one holder and N-1 waiters.

use zk_mock::proto::OpCode;
use zk_mock::ZkMock;

use crate::support::*;

const N: usize = 6;

/// Returns notifications of the first release to sessions other than the
/// holder's, and the waiters' client-side notification total at the end.
async fn first_release(kind: Kind) -> (usize, u64, u64) {
    let zk = ZkMock::start().await;
    let dir = "/locks/profile";
    let h = client(&zk).await;
    let holder = kind.lock(h.clone(), dir);
    let guard = holder.acquire().await.unwrap();
    let mut sessions = Vec::new();
    let mut tasks = Vec::new();
    for _ in 1..N {
        let c = client(&zk).await;
        sessions.push(session(&c));
        tasks.push(tokio::spawn(async move {
            let lock = kind.lock(c, dir);
            lock.acquire().await.unwrap().release().await.unwrap();
            lock.metrics()
        }));
    }
    watching(&zk, dir, &sessions).await;
    if kind == Kind::Predecessor {
        // Each waiter watches exactly one node, with getData.
        let rec = zk.recorded();
        for s in &sessions {
            let w: Vec<_> = rec.watches.iter().filter(|w| w.session == *s).collect();
            assert_eq!(w.len(), 1, "{w:?}");
            assert_eq!(w[0].kind, zk_mock::record::WatchKind::Data);
        }
    }
    let path = guard.path().to_string();
    guard.release().await.unwrap();
    let delete = zk
        .inspect(|log| {
            let deletes = log.requests().op(OpCode::Delete).by_path(&path);
            deletes.error(ErrorCode::Ok).next().cloned()
        })
        .expect("release delete recorded");
    let woken = zk.inspect(|log| {
        let caused = log.notifications().zxid(delete.zxid);
        caused.filter(|n| n.session != session(&h)).count()
    });
    let (mut total, mut reads) = (0, 0);
    for t in tasks {
        let m = t.await.unwrap();
        assert_eq!(m.acquisitions, 1);
        assert!(!m.wait_time.is_zero());
        total += m.notifications;
        reads += m.children_reads;
    }
    assert!(children(&zk, dir).is_empty());
    no_watches_left(&zk).await;
    (woken, total, reads)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn predecessor_release_wakes_one() {
    let (woken, total, reads) = first_release(Kind::Predecessor).await;
    assert_eq!(woken, 1);
    // Each waiter lists the children twice: on arrival, and once woken.
    assert_eq!(reads, 2 * (N - 1) as u64);
    // Every waiter is woken exactly once, by its predecessor's deletion.
    assert_eq!(total, (N - 1) as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn herd_release_wakes_every_waiter() {
    let (woken, total, reads) = first_release(Kind::Herd).await;
    assert!(reads > 2 * (N - 1) as u64, "{reads}");
    assert_eq!(woken, N - 1);
    assert!(total >= (N - 1) as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn naive_release_wakes_every_waiter() {
    let (woken, total, reads) = first_release(Kind::Naive).await;
    assert_eq!(reads, 0, "the naive lock never lists children");
    assert_eq!(woken, N - 1);
    assert!(total >= (N - 1) as u64);
}
