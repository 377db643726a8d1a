//! Holder session expiry: the guard's lost signal fires and the next waiter acquires.

use zk_mock::ZkMock;

use crate::support::*;

#[tokio::test]
async fn expiry_is_observed_and_the_waiter_takes_over() {
    for kind in ALL {
        let zk = ZkMock::start().await;
        let dir = "/locks/expiry";
        let a = client(&zk).await;
        let holder = AnyLock::new(kind, a.clone(), dir);
        let guard = holder.acquire().await.unwrap();
        let mut lost = guard.lost();
        assert!(!*lost.borrow_and_update());
        // Three waiters queue behind the holder; none may be left behind.
        let mut waiters = Vec::new();
        let mut sessions = Vec::new();
        for _ in 0..3 {
            let b = client(&zk).await;
            sessions.push(session(&b));
            waiters.push(tokio::spawn(async move {
                let lock = AnyLock::new(kind, b, dir);
                let g = lock.acquire().await.expect("waiter acquires");
                let token = g.fencing_token();
                g.release().await.unwrap();
                token
            }));
        }
        watching(&zk, dir, &sessions).await;

        assert!(zk.expire_session(session(&a)));
        tokio::time::timeout(PATIENCE, guard.lost_signal())
            .await
            .unwrap_or_else(|_| panic!("{kind:?}: loss not observed"));
        assert!(guard.is_lost() && *lost.borrow_and_update(), "{kind:?}");
        for waiter in waiters {
            let token = tokio::time::timeout(PATIENCE, waiter)
                .await
                .unwrap_or_else(|_| panic!("{kind:?}: a waiter was left behind"))
                .unwrap();
            assert!(
                token > guard.fencing_token(),
                "{kind:?}: fencing token must grow"
            );
        }
        // Releasing a lost lock is not an error: the node went with the session.
        guard.release().await.unwrap();
        assert!(children(&zk, dir).is_empty(), "{kind:?}");
        no_watches_left(&zk).await;
    }
}

#[tokio::test]
async fn deleting_the_holders_node_is_observed_as_loss() {
    for kind in ALL {
        let zk = ZkMock::start().await;
        let dir = "/locks/stolen";
        let (a, admin) = (client(&zk).await, client(&zk).await);
        let lock = AnyLock::new(kind, a, dir);
        let guard = lock.acquire().await.unwrap();
        assert!(!guard.is_lost());
        admin.delete(guard.path(), None).await.unwrap();
        tokio::time::timeout(PATIENCE, guard.lost_signal())
            .await
            .unwrap_or_else(|_| panic!("{kind:?}: loss not observed"));
        guard.release().await.unwrap();
        no_watches_left(&zk).await;
    }
}

/// Curator issue 727: a partition outlives the holder's session. The waiter
/// takes over while the old holder cannot hear anything; its fencing token
/// is larger, and the old holder's guard reports the loss once it can.
#[tokio::test]
async fn a_partitioned_holder_learns_of_its_loss_and_is_fenced() {
    for kind in ALL {
        let zk = ZkMock::start().await;
        let dir = "/locks/partition";
        let (a, b) = (client(&zk).await, client(&zk).await);
        let holder = AnyLock::new(kind, a.clone(), dir);
        let guard = holder.acquire().await.unwrap();
        let b_session = session(&b);
        let waiter = tokio::spawn(async move {
            let lock = AnyLock::new(kind, b, dir);
            let g = lock.acquire().await.unwrap();
            (lock, g)
        });
        watching(&zk, dir, &[b_session]).await;

        assert!(zk.stall(session(&a)));
        assert!(zk.expire_session(session(&a)));
        let (_lock, g) = tokio::time::timeout(PATIENCE, waiter)
            .await
            .unwrap_or_else(|_| panic!("{kind:?}: the waiter was left behind"))
            .unwrap();
        assert!(g.fencing_token() > guard.fencing_token(), "{kind:?}");
        zk.resume(session(&a));
        tokio::time::timeout(PATIENCE, guard.lost_signal())
            .await
            .unwrap_or_else(|_| panic!("{kind:?}: the old holder never learned of the loss"));
        assert!(!g.is_lost(), "{kind:?}");
        guard.release().await.unwrap();
        assert_eq!(children(&zk, dir), vec![g.path().to_string()], "{kind:?}");
        g.release().await.unwrap();
        no_watches_left(&zk).await;
    }
}
