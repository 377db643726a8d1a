//! The read/write lock: sharing, exclusion, its notification profile, and
//! the reader's side of the faults (lost replies, expiry, timeout).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zk_lock::{GuardState, Lock, LockError, RwLock, Strategy};
use zk_mock::fault::{OpFamily, Rule};
use zk_mock::proto::OpCode;
use zk_mock::ZkMock;
use zookeeper_client::{Acls, Client, CreateMode};

use crate::support::*;

fn rw(herd: bool, c: Client, dir: &str) -> RwLock {
    let strategy = if herd {
        Strategy::Herd
    } else {
        Strategy::Predecessor
    };
    Lock::builder(c, dir)
        .strategy(strategy)
        .read_write()
        .unwrap()
}

#[tokio::test]
async fn readers_share_and_writers_exclude() {
    for herd in [false, true] {
        let zk = ZkMock::start().await;
        let dir = "/locks/rw";
        let (a, b, c) = (client(&zk).await, client(&zk).await, client(&zk).await);
        let (la, lb, lc) = (rw(herd, a, dir), rw(herd, b, dir), rw(herd, c, dir));
        let r1 = la.read().await.unwrap();
        let r2 = lb
            .reader()
            .try_acquire()
            .await
            .unwrap()
            .expect("readers share");
        assert!(
            lc.writer().try_acquire().await.unwrap().is_none(),
            "herd={herd}"
        );
        r1.release().await.unwrap();
        assert!(
            lc.writer().try_acquire().await.unwrap().is_none(),
            "herd={herd}"
        );
        r2.release().await.unwrap();
        let w = lc
            .writer()
            .try_acquire()
            .await
            .unwrap()
            .expect("free for a writer");
        assert!(
            la.reader().try_acquire().await.unwrap().is_none(),
            "herd={herd}"
        );
        assert!(
            lb.writer().try_acquire().await.unwrap().is_none(),
            "herd={herd}"
        );
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
    let requests = zk.requests();
    let writes: Vec<_> = requests
        .iter()
        .by_path("/w")
        .filter(|r| r.op_code != OpCode::Exists as i32)
        .collect();
    assert_eq!(writes.len(), 2 * 3 * 3);
    for pair in writes.chunks(2) {
        assert_eq!(pair[0].op_code, OpCode::Create2 as i32);
        assert_eq!(pair[0].err, 0, "two writers overlapped\n{}", zk.recorded());
        assert_eq!(pair[1].op_code, OpCode::Delete as i32);
        assert_eq!(pair[0].session, pair[1].session);
    }
    let reads = || requests.iter().by_path("/w").op(OpCode::Exists);
    assert_eq!(reads().count(), 5 * 3);
    assert!(
        reads().all(|r| r.error() == Some(ErrorCode::NoNode)),
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
        .inspect(|log| {
            let deletes = log.requests().op(OpCode::Delete).by_path(&path);
            deletes.error(ErrorCode::Ok).next().cloned()
        })
        .unwrap();
    let woken = zk.inspect(|log| {
        let caused = log.notifications().zxid(delete.zxid);
        caused.filter(|n| n.session != session(&h)).count()
    });
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

/// The reader's create is applied but its reply lost: the reader finds its
/// node by its protected prefix, so no orphan and no phantom reader.
#[tokio::test]
async fn a_readers_lost_create_reply_leaves_no_orphan_and_no_phantom() {
    for herd in [false, true] {
        let zk = ZkMock::start().await;
        let dir = "/locks/rw-lost-create";
        let (a, b) = (client(&zk).await, client(&zk).await);
        let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
        a.mkdir(dir, &persistent).await.unwrap();
        let (reader, writer) = (rw(herd, a.clone(), dir), rw(herd, b, dir));
        let rule = zk.rule(
            Rule::when()
                .op(OpFamily::Create)
                .path_prefix(&format!("{dir}/"))
                .nth(1)
                .lose_reply(),
        );
        let g = reader.read().await.expect("read through a lost reply");
        assert_eq!(rule.fired(), 1, "herd={herd}");
        drop(rule);
        assert_eq!(
            children(&zk, dir),
            vec![g.path().to_string()],
            "herd={herd}"
        );
        assert!(g.path().contains("-read-"), "{}", g.path());
        let created = zk.inspect(|log| {
            let creates = log.requests().op(OpFamily::Create).under(format!("{dir}/"));
            creates.error(ErrorCode::Ok).count()
        });
        assert_eq!(created, 1, "herd={herd}");
        let node = &zk.snapshot().tree[g.path()];
        assert_eq!(node.stat.ephemeral_owner, session(&a), "herd={herd}");
        assert_eq!(node.stat.czxid, g.fencing_token(), "herd={herd}");
        // No phantom: the read lock really is held.
        assert!(
            writer.writer().try_acquire().await.unwrap().is_none(),
            "herd={herd}"
        );
        // And its release, through a lost delete reply too, frees it.
        let lose_delete = zk.rule(
            Rule::when()
                .op(OpFamily::Delete)
                .path(g.path())
                .nth(1)
                .lose_reply(),
        );
        g.release().await.unwrap();
        assert_eq!(lose_delete.fired(), 1, "herd={herd}");
        assert!(children(&zk, dir).is_empty(), "herd={herd}: orphan left");
        let w = writer
            .writer()
            .try_acquire()
            .await
            .unwrap()
            .expect("free after release");
        w.release().await.unwrap();
        no_watches_left(&zk).await;
    }
}

/// A reader queued behind a writer loses its session: it returns
/// SessionExpired and leaves nothing behind; the writer holds on.
#[tokio::test]
async fn a_waiting_readers_expiry_returns_session_expired_and_leaves_no_node() {
    for herd in [false, true] {
        let zk = ZkMock::start().await;
        let dir = "/locks/rw-reader-expiry";
        let (a, b) = (client(&zk).await, client(&zk).await);
        let w = rw(herd, b.clone(), dir).write().await.unwrap();
        let a_session = session(&a);
        let reader = tokio::spawn(async move { rw(herd, a, dir).read().await.map(|_| ()) });
        watching(&zk, dir, &[a_session]).await;
        assert_eq!(children(&zk, dir).len(), 2, "herd={herd}");
        assert!(zk.expire_session(a_session));
        let result = tokio::time::timeout(PATIENCE, reader)
            .await
            .unwrap_or_else(|_| panic!("herd={herd}: the reader never returned"))
            .unwrap();
        assert_eq!(result, Err(LockError::SessionExpired), "herd={herd}");
        assert_eq!(
            children(&zk, dir),
            vec![w.path().to_string()],
            "herd={herd}"
        );
        assert!(w.state() != GuardState::Lost, "herd={herd}");
        w.release().await.unwrap();
        no_watches_left(&zk).await;
    }
}

/// A reader holds and a writer waits; the reader's session expires. The
/// writer takes over with a larger fencing token, and the reader's guard
/// reports the loss.
#[tokio::test]
async fn a_holding_readers_expiry_hands_the_lock_to_the_queued_writer() {
    for herd in [false, true] {
        let zk = ZkMock::start().await;
        let dir = "/locks/rw-reader-holder-expiry";
        let (a, b) = (client(&zk).await, client(&zk).await);
        let r = rw(herd, a.clone(), dir).read().await.unwrap();
        let monitor = r.monitor();
        let b_session = session(&b);
        let writer = tokio::spawn(async move {
            let lock = rw(herd, b, dir);
            let g = lock.write().await.unwrap();
            (lock, g)
        });
        watching(&zk, dir, &[b_session]).await;
        assert!(zk.expire_session(session(&a)));
        tokio::time::timeout(PATIENCE, r.lost())
            .await
            .unwrap_or_else(|_| panic!("herd={herd}: the reader never learned of the loss"));
        assert_eq!(monitor.state(), GuardState::Lost, "herd={herd}");
        let (_lock, w) = tokio::time::timeout(PATIENCE, writer)
            .await
            .unwrap_or_else(|_| panic!("herd={herd}: the writer was left behind"))
            .unwrap();
        assert!(w.fencing_token() > r.fencing_token(), "herd={herd}");
        assert_eq!(
            r.release().await,
            Err(zk_lock::LockError::Lost),
            "herd={herd}"
        );
        assert_eq!(
            children(&zk, dir),
            vec![w.path().to_string()],
            "herd={herd}"
        );
        w.release().await.unwrap();
        no_watches_left(&zk).await;
    }
}

#[tokio::test]
async fn read_timeout_deletes_the_readers_node() {
    for herd in [false, true] {
        let zk = ZkMock::start().await;
        let dir = "/locks/rw-read-timeout";
        let (a, b) = (client(&zk).await, client(&zk).await);
        let w = rw(herd, b, dir).write().await.unwrap();
        let reader = rw(herd, a, dir);
        let err = reader
            .reader()
            .acquire_timeout(Duration::from_millis(50))
            .await
            .unwrap_err();
        assert_eq!(err, LockError::Timeout, "herd={herd}");
        assert_eq!(
            children(&zk, dir),
            vec![w.path().to_string()],
            "herd={herd}"
        );
        assert!(
            reader.reader().try_acquire().await.unwrap().is_none(),
            "herd={herd}"
        );
        assert_eq!(
            children(&zk, dir),
            vec![w.path().to_string()],
            "herd={herd}"
        );
        // The reader's nodes were created and deleted, none left.
        let reads = zk.inspect(|log| {
            let creates = log.requests().op(OpFamily::Create).under(format!("{dir}/"));
            creates.error(ErrorCode::Ok).count()
        });
        assert_eq!(reads, 3, "herd={herd}: the writer's and two readers'");
        w.release().await.unwrap();
        let r = reader
            .reader()
            .try_acquire()
            .await
            .unwrap()
            .expect("free after the writer");
        r.release().await.unwrap();
        no_watches_left(&zk).await;
    }
}
