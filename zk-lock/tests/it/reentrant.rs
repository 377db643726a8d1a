//! Reentrant locks: each re-entry is a guard of the same node, the node
//! goes with the last guard, and no mutex is held across an acquire.

use std::time::Duration;

use zk_lock::{GuardState, Lock, LockError, Strategy};

use zk_mock::ZkMock;

use crate::support::*;

fn reentrant(c: zookeeper_client::Client, dir: &str, strategy: Strategy) -> Lock {
    Lock::builder(c, dir)
        .strategy(strategy)
        .reentrant(true)
        .build()
        .unwrap()
}

#[tokio::test]
async fn reentry_is_a_guard_of_the_same_node_and_the_last_release_deletes_it() {
    for strategy in [Strategy::Predecessor, Strategy::Herd, Strategy::Naive] {
        let what = format!("{strategy:?}");
        let zk = ZkMock::start().await;
        let dir = "/locks/reentrant";
        let (a, b) = (client(&zk).await, client(&zk).await);
        let mine = reentrant(a.clone(), dir, strategy);
        let theirs = reentrant(b, dir, strategy);
        assert_eq!(mine.hold_count(), 0);

        let first = mine.acquire().await.unwrap();
        let second = mine.try_acquire().await.unwrap().expect("re-entered");
        // A clone of the handle is the same owner.
        let third = mine
            .clone()
            .acquire_timeout(Duration::from_secs(1))
            .await
            .unwrap();
        assert_eq!(mine.hold_count(), 3, "{what}");
        assert_eq!(second.fencing_token(), first.fencing_token(), "{what}");
        assert_eq!(third.path(), first.path(), "{what}: same hold, same node");
        assert_eq!(children(&zk, dir).len(), 1, "{what}");
        let applied = zk.inspect(|log| {
            let creates = log.requests().op(OpFamily::Create).by_session(session(&a));
            creates
                .under(format!("{dir}/"))
                .error(ErrorCode::Ok)
                .count()
        });
        assert_eq!(applied, 1, "{what}: re-entry creates nothing");

        assert!(theirs.try_acquire().await.unwrap().is_none(), "{what}");
        let token = first.fencing_token();
        first.release().await.unwrap();
        drop(second);
        assert_eq!(mine.hold_count(), 1, "{what}");
        assert!(
            theirs.try_acquire().await.unwrap().is_none(),
            "{what}: one guard still holds"
        );
        third.release().await.unwrap();
        assert_eq!(mine.hold_count(), 0, "{what}");
        assert!(children(&zk, dir).is_empty(), "{what}");

        let next = theirs.try_acquire().await.unwrap().expect("free");
        assert!(next.fencing_token() > token, "{what}");
        next.release().await.unwrap();
        no_watches_left(&zk).await;
    }
}

#[tokio::test]
async fn hold_count_answers_while_an_acquire_queues_and_entries_wait_for_it() {
    let zk = ZkMock::start().await;
    let dir = "/locks/reentrant-queued";
    let (a, b) = (client(&zk).await, client(&zk).await);
    let other = Lock::builder(b.clone(), dir).build().unwrap();
    let held = other.acquire().await.unwrap();

    let mine = reentrant(a.clone(), dir, Strategy::Predecessor);
    let first = tokio::spawn({
        let mine = mine.clone();
        async move { mine.acquire().await }
    });
    watching(&zk, dir, &[session(&a)]).await;
    // The old ReentrantLock held a mutex across the queued acquire here.
    assert_eq!(mine.hold_count(), 0, "answers at once: nothing held yet");
    assert!(
        mine.try_acquire().await.unwrap().is_none(),
        "busy: an acquisition of this handle is queued, not held"
    );
    assert_eq!(
        mine.acquire_timeout(Duration::from_millis(50))
            .await
            .unwrap_err(),
        LockError::Timeout
    );
    // A second acquire through the handle waits for the first and re-enters.
    let second = tokio::spawn({
        let mine = mine.clone();
        async move { mine.acquire().await }
    });
    held.release().await.unwrap();
    let first = first.await.unwrap().unwrap();
    let second = tokio::time::timeout(PATIENCE, second)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(first.path(), second.path());
    assert_eq!(mine.hold_count(), 2);
    assert_eq!(children(&zk, dir).len(), 1, "one node for both entries");
    first.release().await.unwrap();
    second.release().await.unwrap();
    assert!(children(&zk, dir).is_empty());
    no_watches_left(&zk).await;
}

#[tokio::test]
async fn a_cancelled_first_acquire_lets_the_next_one_acquire() {
    let zk = ZkMock::start().await;
    let dir = "/locks/reentrant-cancel";
    let (a, b) = (client(&zk).await, client(&zk).await);
    let held = Lock::builder(b, dir)
        .build()
        .unwrap()
        .acquire()
        .await
        .unwrap();
    let mine = reentrant(a.clone(), dir, Strategy::Predecessor);
    let first = tokio::spawn({
        let mine = mine.clone();
        async move { mine.acquire().await }
    });
    watching(&zk, dir, &[session(&a)]).await;
    let second = tokio::spawn({
        let mine = mine.clone();
        async move { mine.acquire().await }
    });
    first.abort();
    held.release().await.unwrap();
    let second = tokio::time::timeout(PATIENCE, second)
        .await
        .expect("the waiting entry takes over the acquisition")
        .unwrap()
        .unwrap();
    assert_eq!(mine.hold_count(), 1);
    second.release().await.unwrap();
    let gone = zk
        .wait_until(PATIENCE, |log| children_in(&log.snapshot(), dir).is_empty())
        .await;
    assert!(gone.is_ok(), "the cancelled contender's node is deleted");
}

#[tokio::test]
async fn reentry_into_a_lost_lock_is_refused() {
    let zk = ZkMock::start().await;
    let (a, admin) = (client(&zk).await, client(&zk).await);
    let lock = reentrant(a, "/locks/reentrant-lost", Strategy::Predecessor);
    let first = lock.acquire().await.unwrap();
    let second = lock.acquire().await.unwrap();
    let path = children(&zk, "/locks/reentrant-lost").pop().unwrap();
    admin.delete(&path, None).await.unwrap();
    tokio::time::timeout(PATIENCE, first.lost()).await.unwrap();
    assert_eq!(second.state(), GuardState::Lost, "one hold, one state");
    assert_eq!(lock.acquire().await.unwrap_err(), LockError::Lost);
    assert_eq!(lock.hold_count(), 2);
    assert_eq!(first.release().await, Err(LockError::Lost));
    assert_eq!(second.release().await, Err(LockError::Lost));
    assert_eq!(lock.hold_count(), 0);
    // Released: the handle acquires anew.
    let again = lock.acquire().await.unwrap();
    again.release().await.unwrap();
    no_watches_left(&zk).await;
}
