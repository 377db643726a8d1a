//! The sequence counter's wraps (kazoo#606 and #730, go-zookeeper PR #65):
//! past `i32::MAX` ZooKeeper names the next node `…-2147483648`, and past
//! `-1` (2^32 creates later, or at once after a test set the counter) it
//! names it `…0000000000`. The queue must be served in creation order
//! across both.

use std::sync::{Arc, Mutex};

use zk_lock::{Lock, LockGuard, RwLock, Strategy};
use zk_mock::ZkMock;
use zookeeper_client::{Acls, Client, CreateMode};

use crate::support::*;

/// The counters the tests start from: three before each wrap.
const STARTS: [i32; 2] = [i32::MAX - 2, -3];

/// Starts a mock whose lock directory hands out `start` next.
async fn near_the_wrap(dir: &str, start: i32) -> (ZkMock, Client) {
    let zk = ZkMock::start().await;
    let c = client(&zk).await;
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    c.mkdir(dir, &persistent).await.unwrap();
    assert!(zk.set_sequence_counter(dir, start));
    (zk, c)
}

/// The names the contenders got, in creation order, must be the counter's
/// six values from `start`, across the wrap, in Java's `%010d`.
fn assert_crossed(names: &[String], start: i32) {
    let expected: Vec<String> = (0..6)
        .map(|k| format!("-{:010}", start.wrapping_add(k)))
        .collect();
    assert_eq!(names.len(), expected.len(), "{names:?}");
    for (name, suffix) in names.iter().zip(&expected) {
        assert!(name.ends_with(suffix), "{name} after {start}: {names:?}");
    }
}

/// A holder and five waiters queued one at a time, so that their creation
/// order is known; the waiters must acquire in that order, one at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exclusive_locks_serve_the_queue_in_order_across_the_wrap() {
    for (kind, start) in [Kind::Predecessor, Kind::Herd, Kind::Writer]
        .into_iter()
        .flat_map(|k| STARTS.map(|s| (k, s)))
    {
        let dir = "/locks/wrap";
        let (zk, c) = near_the_wrap(dir, start).await;
        let holder = kind.lock(c, dir);
        let guard = holder.acquire().await.unwrap();
        let mut created = vec![guard.path().to_string()];
        let order = Arc::new(Mutex::new(Vec::new()));
        let inside = Arc::new(Mutex::new(0));
        let mut tasks = Vec::new();
        for i in 0..5 {
            let w = client(&zk).await;
            let s = session(&w);
            let (order, inside) = (order.clone(), inside.clone());
            tasks.push(tokio::spawn(async move {
                let lock = kind.lock(w, dir);
                let g = lock.acquire().await.expect("acquire across the wrap");
                {
                    let mut n = inside.lock().unwrap();
                    *n += 1;
                    assert_eq!(*n, 1, "{kind:?}: two holders");
                }
                order.lock().unwrap().push((i, g.path().to_string()));
                tokio::task::yield_now().await;
                *inside.lock().unwrap() -= 1;
                g.release().await.unwrap();
            }));
            // Its node exists once it watches: the next one queues behind it.
            watching(&zk, dir, &[s]).await;
            let mine = zk
                .snapshot()
                .tree
                .iter()
                .filter(|(p, n)| p.starts_with(dir) && n.stat.ephemeral_owner == s)
                .map(|(p, _)| p.clone())
                .collect::<Vec<_>>();
            assert_eq!(mine.len(), 1, "{kind:?}");
            created.push(mine[0].clone());
        }
        assert_crossed(&created, start);
        guard.release().await.unwrap();
        for t in tasks {
            tokio::time::timeout(PATIENCE, t)
                .await
                .unwrap_or_else(|_| panic!("{kind:?} from {start}: a waiter was left behind"))
                .unwrap();
        }
        let order = order.lock().unwrap().clone();
        let expected: Vec<_> = created[1..]
            .iter()
            .enumerate()
            .map(|(i, p)| (i, p.clone()))
            .collect();
        assert_eq!(
            order, expected,
            "{kind:?} from {start}: not served in creation order"
        );
        assert!(children(&zk, dir).is_empty(), "{kind:?}: orphan left");
        no_watches_left(&zk).await;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Read,
    Write,
}

async fn take(lock: &RwLock, side: Side) -> LockGuard {
    match side {
        Side::Read => lock.read().await,
        Side::Write => lock.write().await,
    }
    .expect("acquire across the wrap")
}

/// Behind a writer: reader, writer, reader, reader, writer. The two readers
/// past the wrap must wait for the writer before the wrap, and the last
/// writer for them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_write_locks_keep_their_order_across_the_wrap() {
    let sides = [Side::Read, Side::Write, Side::Read, Side::Read, Side::Write];
    // Consecutive readers form one group; the groups are served in order.
    let groups = [0, 1, 2, 2, 3];
    for (herd, start) in [false, true]
        .into_iter()
        .flat_map(|h| STARTS.map(|s| (h, s)))
    {
        let dir = "/locks/wrap-rw";
        let (zk, c) = near_the_wrap(dir, start).await;
        let strategy = if herd {
            Strategy::Herd
        } else {
            Strategy::Predecessor
        };
        let rw = |c| {
            Lock::builder(c, dir)
                .strategy(strategy)
                .read_write()
                .unwrap()
        };
        let guard = rw(c).write().await.unwrap();
        let mut created = vec![guard.path().to_string()];
        let order = Arc::new(Mutex::new(Vec::new()));
        // (readers, writers) inside.
        let inside = Arc::new(Mutex::new((0, 0)));
        let mut tasks = Vec::new();
        for (i, side) in sides.into_iter().enumerate() {
            let w = client(&zk).await;
            let s = session(&w);
            let (order, inside) = (order.clone(), inside.clone());
            let lock = rw(w);
            tasks.push(tokio::spawn(async move {
                let g = take(&lock, side).await;
                {
                    let mut n = inside.lock().unwrap();
                    match side {
                        Side::Read => n.0 += 1,
                        Side::Write => n.1 += 1,
                    }
                    assert!(
                        n.1 == 0 || *n == (0, 1),
                        "herd={herd}: {n:?} inside at once"
                    );
                }
                order.lock().unwrap().push(i);
                tokio::task::yield_now().await;
                {
                    let mut n = inside.lock().unwrap();
                    match side {
                        Side::Read => n.0 -= 1,
                        Side::Write => n.1 -= 1,
                    }
                }
                g.release().await.unwrap();
            }));
            watching(&zk, dir, &[s]).await;
            let mine = zk
                .snapshot()
                .tree
                .iter()
                .filter(|(p, n)| p.starts_with(dir) && n.stat.ephemeral_owner == s)
                .map(|(p, _)| p.clone())
                .collect::<Vec<_>>();
            assert_eq!(mine.len(), 1, "herd={herd}");
            created.push(mine[0].clone());
        }
        assert_crossed(&created, start);
        guard.release().await.unwrap();
        for t in tasks {
            tokio::time::timeout(PATIENCE, t)
                .await
                .unwrap_or_else(|_| panic!("herd={herd} from {start}: a waiter was left behind"))
                .unwrap();
        }
        let order = order.lock().unwrap().clone();
        let served: Vec<_> = order.iter().map(|&i| groups[i]).collect();
        assert!(
            served.windows(2).all(|w| w[0] <= w[1]) && served.len() == sides.len(),
            "herd={herd} from {start}: served out of order: {order:?} (created {created:?})"
        );
        assert!(children(&zk, dir).is_empty(), "herd={herd}: orphan left");
        no_watches_left(&zk).await;
    }
}
