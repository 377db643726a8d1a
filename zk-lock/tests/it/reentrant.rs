//! ReentrantLock: counted re-entry, one node per owner.

use zk_lock::{LockError, ReentrantLock};
use zk_mock::proto::OpCode;
use zk_mock::ZkMock;

use crate::support::*;

#[tokio::test]
async fn reentry_is_counted_and_needs_as_many_releases() {
    let zk = ZkMock::start().await;
    let dir = "/locks/reentrant";
    let (a, b) = (client(&zk).await, client(&zk).await);
    let mine = ReentrantLock::new(a.clone(), dir).unwrap();
    let theirs = ReentrantLock::new(b, dir).unwrap();
    assert_eq!(mine.release().await.unwrap_err(), LockError::NotHeld);

    mine.acquire().await.unwrap();
    let token = mine.fencing_token().await.unwrap();
    assert!(mine.try_acquire().await.unwrap());
    mine.acquire_timeout(std::time::Duration::from_secs(1))
        .await
        .unwrap();
    assert_eq!(mine.hold_count().await, 3);
    assert_eq!(
        mine.fencing_token().await,
        Some(token),
        "same hold, same node"
    );
    assert_eq!(children(&zk, dir).len(), 1);
    let creates = zk
        .requests()
        .op(OpCode::Create2)
        .by_session(session(&a))
        .under(&format!("{dir}/"));
    let applied = creates.iter().filter(|r| r.err == 0).count();
    assert_eq!(applied, 1, "re-entry creates nothing");

    assert!(!theirs.try_acquire().await.unwrap());
    mine.release().await.unwrap();
    mine.release().await.unwrap();
    assert!(
        !theirs.try_acquire().await.unwrap(),
        "still one release owed"
    );
    mine.release().await.unwrap();
    assert_eq!(mine.hold_count().await, 0);
    assert!(children(&zk, dir).is_empty());
    assert_eq!(mine.release().await.unwrap_err(), LockError::NotHeld);

    assert!(theirs.try_acquire().await.unwrap());
    assert!(theirs.fencing_token().await.unwrap() > token);
    theirs.release().await.unwrap();
    no_watches_left(&zk).await;
}

#[tokio::test]
async fn reentry_into_a_lost_lock_is_refused() {
    let zk = ZkMock::start().await;
    let (a, admin) = (client(&zk).await, client(&zk).await);
    let lock = ReentrantLock::new(a, "/locks/reentrant-lost").unwrap();
    lock.acquire().await.unwrap();
    let mut lost = lock.lost().await.unwrap();
    let path = children(&zk, "/locks/reentrant-lost").pop().unwrap();
    admin.delete(&path, None).await.unwrap();
    tokio::time::timeout(PATIENCE, lost.wait_for(|l| *l))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(lock.acquire().await.unwrap_err(), LockError::Lost);
    let state = lock.state().await.expect("still held through the handle");
    assert_eq!(*state.borrow(), zk_lock::GuardState::Lost);
    assert_eq!(lock.release().await, Err(LockError::Lost));
    assert!(lock.state().await.is_none());
    assert_eq!(lock.hold_count().await, 0);
    no_watches_left(&zk).await;
}
