//! try_acquire, foreign children, directory validation, metrics.

use zk_lock::{LockError, PredecessorLock};
use zk_mock::ZkMock;
use zookeeper_client::{Acls, CreateMode};

use crate::support::*;

#[tokio::test]
async fn try_acquire_takes_a_free_lock_and_leaves_nothing_when_busy() {
    for kind in ALL {
        let zk = ZkMock::start().await;
        let dir = "/a/b/try";
        let (a, b) = (client(&zk).await, client(&zk).await);
        let first = AnyLock::new(kind, a, dir);
        let second = AnyLock::new(kind, b, dir);
        let g = first.try_acquire().await.unwrap().expect("free lock");
        assert!(second.try_acquire().await.unwrap().is_none(), "{kind:?}");
        assert_eq!(children(&zk, dir).len(), 1, "{kind:?}");
        g.release().await.unwrap();
        let g = second.try_acquire().await.unwrap().expect("free again");
        g.release().await.unwrap();
        assert!(children(&zk, dir).is_empty());
        assert_eq!(first.metrics().acquisitions, 1);
        no_watches_left(&zk).await;
    }
}

#[tokio::test]
async fn foreign_children_are_ignored() {
    for kind in SEQUENTIAL {
        let zk = ZkMock::start().await;
        let dir = "/locks/mixed";
        let c = client(&zk).await;
        let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
        c.mkdir(dir, &persistent).await.unwrap();
        // Not lock nodes: no `lock-` before the digits, or no ten digits.
        for name in ["readme", "x-0000000000", "lock-12"] {
            c.create(&format!("{dir}/{name}"), &[], &persistent)
                .await
                .unwrap();
        }
        let lock = AnyLock::new(kind, c.clone(), dir);
        let g = lock
            .try_acquire()
            .await
            .unwrap()
            .expect("foreign children block nothing");
        g.release().await.unwrap();
        assert_eq!(children(&zk, dir).len(), 3);
        no_watches_left(&zk).await;
    }
}

#[tokio::test]
async fn bad_directories_are_refused() {
    let zk = ZkMock::start().await;
    let c = client(&zk).await;
    for dir in ["", "/", "relative", "/trailing/", "/a//b"] {
        assert_eq!(
            PredecessorLock::new(c.clone(), dir).unwrap_err(),
            LockError::InvalidDir(dir.to_string())
        );
    }
}

#[tokio::test]
async fn node_names_follow_curator() {
    let zk = ZkMock::start().await;
    let c = client(&zk).await;
    let lock = PredecessorLock::new(c, "/locks/names").unwrap();
    let g = lock.acquire().await.unwrap();
    let name = g.path().strip_prefix("/locks/names/").unwrap();
    // _c_ + 36-char uuid + "-lock-" + 10 digits
    assert!(name.starts_with("_c_"), "{name}");
    assert_eq!(name.len(), 3 + 36 + 6 + 10, "{name}");
    assert!(name[3 + 36..].starts_with("-lock-"), "{name}");
    g.release().await.unwrap();
    no_watches_left(&zk).await;
}
