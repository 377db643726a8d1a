//! try_acquire, foreign children, directory validation, metrics.

use zk_lock::{Layout, Lock, LockError, Strategy};
use zk_mock::ZkMock;
use zookeeper_client::{Acls, CreateMode};

use crate::support::*;

#[tokio::test]
async fn try_acquire_takes_a_free_lock_and_leaves_nothing_when_busy() {
    for kind in ALL {
        let zk = ZkMock::start().await;
        let dir = "/a/b/try";
        let (a, b) = (client(&zk).await, client(&zk).await);
        let first = kind.lock(a, dir);
        let second = kind.lock(b, dir);
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
        let lock = kind.lock(c.clone(), dir);
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
        let invalid = LockError::InvalidDir(dir.to_string());
        assert_eq!(Lock::builder(c.clone(), dir).build().unwrap_err(), invalid);
        assert_eq!(
            Lock::builder(c.clone(), dir).read_write().unwrap_err(),
            invalid
        );
    }
}

#[tokio::test]
async fn options_without_a_lock_are_refused() {
    let zk = ZkMock::start().await;
    let c = client(&zk).await;
    let naive = || Lock::builder(c.clone(), "/locks/naive").strategy(Strategy::Naive);
    assert!(matches!(
        naive().read_write().unwrap_err(),
        LockError::Unsupported(_)
    ));
    assert!(matches!(
        naive().layout(Layout::Kazoo).build().unwrap_err(),
        LockError::Unsupported(_)
    ));
    assert!(naive().build().is_ok());
}

#[tokio::test]
async fn expiry_and_connection_loss_map_one_way() {
    use zookeeper_client::Error;
    assert_eq!(
        LockError::from(Error::SessionExpired),
        LockError::SessionExpired
    );
    assert_eq!(
        LockError::from(Error::ClientClosed),
        LockError::SessionExpired
    );
    assert_eq!(
        LockError::from(Error::ConnectionLoss),
        LockError::ConnectionLoss(Error::ConnectionLoss)
    );
    assert_eq!(LockError::from(Error::NoAuth), LockError::Zk(Error::NoAuth));

    // A waiter whose session expires hears SessionExpired, whatever the
    // strategy and whichever call the expiry reached.
    for kind in ALL {
        let zk = ZkMock::start().await;
        let dir = "/locks/mapped";
        let (a, b) = (client(&zk).await, client(&zk).await);
        let held = kind.lock(a, dir).acquire().await.unwrap();
        let waiter = kind.lock(b.clone(), dir);
        let waiting = tokio::spawn(async move { waiter.acquire().await });
        watching(&zk, dir, &[session(&b)]).await;
        zk.expire_session(session(&b));
        let err = tokio::time::timeout(PATIENCE, waiting)
            .await
            .expect("the waiter gives up")
            .unwrap()
            .unwrap_err();
        assert_eq!(err, LockError::SessionExpired, "{kind:?}");
        // And a call made after the expiry, on the same client.
        let late = kind.lock(b, dir).acquire().await.unwrap_err();
        assert_eq!(late, LockError::SessionExpired, "{kind:?}: after expiry");
        held.release().await.unwrap();
    }
}

#[tokio::test]
async fn node_names_follow_curator() {
    let zk = ZkMock::start().await;
    let c = client(&zk).await;
    let lock = Lock::builder(c, "/locks/names").build().unwrap();
    let g = lock.acquire().await.unwrap();
    let name = g.path().strip_prefix("/locks/names/").unwrap();
    // _c_ + 36-char uuid + "-lock-" + 10 digits
    assert!(name.starts_with("_c_"), "{name}");
    assert_eq!(name.len(), 3 + 36 + 6 + 10, "{name}");
    assert!(name[3 + 36..].starts_with("-lock-"), "{name}");
    g.release().await.unwrap();
    no_watches_left(&zk).await;
}
