//! The read/write lock: sharing, exclusion, and its notification profile.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use zk_lock::ReadWriteLock;
use zk_mock::proto::OpCode;
use zk_mock::ZkMock;
use zookeeper_client::{Acls, Client, CreateMode};

use crate::support::*;

fn rw(herd: bool, c: Client, dir: &str) -> ReadWriteLock {
    if herd {
        ReadWriteLock::new_herd(c, dir).unwrap()
    } else {
        ReadWriteLock::new(c, dir).unwrap()
    }
}

#[tokio::test]
async fn readers_share_and_writers_exclude() {
    for herd in [false, true] {
        let zk = ZkMock::start().await;
        let dir = "/locks/rw";
        let (a, b, c) = (client(&zk).await, client(&zk).await, client(&zk).await);
        let (la, lb, lc) = (rw(herd, a, dir), rw(herd, b, dir), rw(herd, c, dir));
        let r1 = la.read().await.unwrap();
        let r2 = lb.try_read().await.unwrap().expect("readers share");
        assert!(lc.try_write().await.unwrap().is_none(), "herd={herd}");
        r1.release().await.unwrap();
        assert!(lc.try_write().await.unwrap().is_none(), "herd={herd}");
        r2.release().await.unwrap();
        let w = lc.try_write().await.unwrap().expect("free for a writer");
        assert!(la.try_read().await.unwrap().is_none(), "herd={herd}");
        assert!(lb.try_write().await.unwrap().is_none(), "herd={herd}");
        assert_eq!(children(&zk, dir).len(), 1, "herd={herd}");
        w.release().await.unwrap();
        assert!(children(&zk, dir).is_empty(), "herd={herd}");
        no_watches_left(&zk).await;
    }
}

async fn mixed(herd: bool) {
    let zk = ZkMock::start().await;
    let dir = "/locks/rw-mixed";
    let readers = Arc::new(AtomicUsize::new(0));
    let writers = Arc::new(AtomicUsize::new(0));
    let max_readers = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for i in 0..8 {
        let c = client(&zk).await;
        let (readers, writers, max_readers) =
            (readers.clone(), writers.clone(), max_readers.clone());
        tasks.push(tokio::spawn(async move {
            let lock = rw(herd, c.clone(), dir);
            let writer = i % 3 == 0;
            for _ in 0..3 {
                if writer {
                    let g = lock.write().await.unwrap();
                    assert_eq!(writers.fetch_add(1, Ordering::SeqCst), 0);
                    assert_eq!(readers.load(Ordering::SeqCst), 0);
                    let opts = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
                    c.create("/w", &[], &opts).await.unwrap();
                    tokio::task::yield_now().await;
                    c.delete("/w", None).await.unwrap();
                    writers.fetch_sub(1, Ordering::SeqCst);
                    g.release().await.unwrap();
                } else {
                    let g = lock.read().await.unwrap();
                    let now = readers.fetch_add(1, Ordering::SeqCst) + 1;
                    max_readers.fetch_max(now, Ordering::SeqCst);
                    assert_eq!(writers.load(Ordering::SeqCst), 0);
                    assert!(c.check_stat("/w").await.unwrap().is_none());
                    tokio::task::yield_now().await;
                    readers.fetch_sub(1, Ordering::SeqCst);
                    g.release().await.unwrap();
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    // From the server's history: writer markers alternate create/delete from
    // one session, and no reader ever saw one.
    let marker = zk.requests().by_path("/w");
    let writes: Vec<_> = marker
        .iter()
        .filter(|r| r.op_code != OpCode::Exists as i32)
        .collect();
    assert_eq!(writes.len(), 2 * 3 * 3);
    for pair in writes.chunks(2) {
        assert_eq!(pair[0].op_code, OpCode::Create2 as i32);
        assert_eq!(pair[0].err, 0, "two writers overlapped\n{}", zk.recorded());
        assert_eq!(pair[1].op_code, OpCode::Delete as i32);
        assert_eq!(pair[0].session, pair[1].session);
    }
    let reads = marker.op(OpCode::Exists);
    assert_eq!(reads.count(), 5 * 3);
    assert!(
        reads.iter().all(|r| r.err != 0),
        "a reader saw a writer inside"
    );
    assert!(max_readers.load(Ordering::SeqCst) >= 1);
    assert!(children(&zk, dir).is_empty());
    no_watches_left(&zk).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn predecessor_read_write_lock_excludes() {
    mixed(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn herd_read_write_lock_excludes() {
    mixed(true).await;
}

/// A writer holds; three readers and then a second writer queue. The
/// release wakes the three readers together (predecessor form) or all four
/// waiters (herd form), and the readers then hold at the same time.
async fn writer_release(herd: bool) -> usize {
    let zk = ZkMock::start().await;
    let dir = "/locks/rw-profile";
    let h = client(&zk).await;
    let holder = rw(herd, h.clone(), dir);
    let w = holder.write().await.unwrap();
    let together = Arc::new(tokio::sync::Barrier::new(3));
    let mut sessions = Vec::new();
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let c = client(&zk).await;
        sessions.push(session(&c));
        let together = together.clone();
        tasks.push(tokio::spawn(async move {
            let lock = rw(herd, c, dir);
            let g = lock.read().await.unwrap();
            // All three readers must be inside at once to pass.
            tokio::time::timeout(PATIENCE, together.wait())
                .await
                .expect("readers did not hold together");
            g.release().await.unwrap();
        }));
    }
    watching(&zk, dir, &sessions).await;
    let c = client(&zk).await;
    sessions.push(session(&c));
    tasks.push(tokio::spawn(async move {
        let lock = rw(herd, c, dir);
        lock.write().await.unwrap().release().await.unwrap();
    }));
    watching(&zk, dir, &sessions).await;
    let path = w.path().to_string();
    w.release().await.unwrap();
    let delete = zk
        .requests()
        .op(OpCode::Delete)
        .by_path(&path)
        .iter()
        .find(|r| r.err == 0)
        .cloned()
        .unwrap();
    let woken = zk
        .notifications()
        .zxid(delete.zxid)
        .iter()
        .filter(|n| n.session != session(&h))
        .count();
    for t in tasks {
        t.await.unwrap();
    }
    assert!(children(&zk, dir).is_empty());
    no_watches_left(&zk).await;
    woken
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn predecessor_writer_release_wakes_only_the_readers() {
    assert_eq!(writer_release(false).await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn herd_writer_release_wakes_every_waiter() {
    assert_eq!(writer_release(true).await, 4);
}
