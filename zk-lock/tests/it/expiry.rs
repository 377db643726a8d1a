//! Holder session expiry: the guard's lost future completes and the next waiter acquires.

use zk_lock::{GuardState, LockError};
use zk_mock::ZkMock;

use crate::support::*;

#[tokio::test]
async fn expiry_is_observed_and_the_waiter_takes_over() {
    for kind in ALL {
        let zk = ZkMock::start().await;
        let dir = "/locks/expiry";
        let a = client(&zk).await;
        let holder = kind.lock(a.clone(), dir);
        let guard = holder.acquire().await.unwrap();
        let monitor = guard.monitor();
        assert_eq!(monitor.state(), GuardState::Held);
        // Three waiters queue behind the holder; none may be left behind.
        let mut waiters = Vec::new();
        let mut sessions = Vec::new();
        for _ in 0..3 {
            let b = client(&zk).await;
            sessions.push(session(&b));
            waiters.push(tokio::spawn(async move {
                let lock = kind.lock(b, dir);
                let g = lock.acquire().await.expect("waiter acquires");
                let token = g.fencing_token();
                g.release().await.unwrap();
                token
            }));
        }
        watching(&zk, dir, &sessions).await;

        assert!(zk.expire_session(session(&a)));
        tokio::time::timeout(PATIENCE, guard.lost())
            .await
            .unwrap_or_else(|_| panic!("{kind:?}: loss not observed"));
        assert_eq!(guard.state(), GuardState::Lost, "{kind:?}");
        assert_eq!(
            monitor.state(),
            GuardState::Lost,
            "{kind:?}: the monitor agrees"
        );
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
        // Releasing a lost lock says so; the node went with the session.
        assert_eq!(guard.release().await, Err(LockError::Lost), "{kind:?}");
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
        let lock = kind.lock(a, dir);
        let guard = lock.acquire().await.unwrap();
        assert!(guard.state() != GuardState::Lost);
        admin.delete(guard.path(), None).await.unwrap();
        tokio::time::timeout(PATIENCE, guard.lost())
            .await
            .unwrap_or_else(|_| panic!("{kind:?}: loss not observed"));
        assert_eq!(guard.release().await, Err(LockError::Lost), "{kind:?}");
        no_watches_left(&zk).await;
    }
}

/// apache/curator#727: a partition outlives the holder's session. The waiter
/// takes over while the old holder cannot hear anything; its fencing token
/// is larger, and the old holder's guard reports the loss once it can.
#[tokio::test]
async fn a_partitioned_holder_learns_of_its_loss_and_is_fenced() {
    for kind in ALL {
        let zk = ZkMock::start().await;
        let dir = "/locks/partition";
        let (a, b) = (client(&zk).await, client(&zk).await);
        let holder = kind.lock(a.clone(), dir);
        let guard = holder.acquire().await.unwrap();
        let b_session = session(&b);
        let waiter = tokio::spawn(async move {
            let lock = kind.lock(b, dir);
            let g = lock.acquire().await.unwrap();
            (lock, g)
        });
        watching(&zk, dir, &[b_session]).await;

        let stall = zk.stall(session(&a)).expect("a's session");
        assert!(zk.expire_session(session(&a)));
        let (_lock, g) = tokio::time::timeout(PATIENCE, waiter)
            .await
            .unwrap_or_else(|_| panic!("{kind:?}: the waiter was left behind"))
            .unwrap();
        assert!(g.fencing_token() > guard.fencing_token(), "{kind:?}");
        drop(stall);
        tokio::time::timeout(PATIENCE, guard.lost())
            .await
            .unwrap_or_else(|_| panic!("{kind:?}: the old holder never learned of the loss"));
        assert!(g.state() != GuardState::Lost, "{kind:?}");
        assert_eq!(guard.release().await, Err(LockError::Lost), "{kind:?}");
        assert_eq!(children(&zk, dir), vec![g.path().to_string()], "{kind:?}");
        g.release().await.unwrap();
        no_watches_left(&zk).await;
    }
}

/// The loss happens an instant before the holder's last act, and the holder
/// has not heard of it when it releases: the release is the only place left
/// to tell it, and it does. The holder's session is stalled (the server
/// neither reads from nor writes to it) while its node is deleted, so the
/// notification is still held back when the release starts.
#[tokio::test]
async fn a_release_reports_a_loss_the_holder_had_not_heard_of() {
    for kind in ALL {
        let zk = ZkMock::start().await;
        let dir = "/locks/unheard";
        let (a, admin) = (client(&zk).await, client(&zk).await);
        let lock = kind.lock(a.clone(), dir);
        let guard = lock.acquire().await.unwrap();
        let stall = zk.stall(session(&a)).expect("a's session");
        admin.delete(guard.path(), None).await.unwrap();
        assert!(
            guard.state() != GuardState::Lost,
            "{kind:?}: the notification is held back"
        );
        let monitor = guard.monitor();
        let release = tokio::spawn(guard.release());
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        drop(stall);
        let released = tokio::time::timeout(PATIENCE, release)
            .await
            .unwrap_or_else(|_| panic!("{kind:?}: release hangs"))
            .unwrap();
        assert_eq!(released, Err(LockError::Lost), "{kind:?}");
        assert_eq!(
            monitor.state(),
            GuardState::Lost,
            "{kind:?}: the monitor hears the loss the release found, not Released"
        );
        assert!(children(&zk, dir).is_empty(), "{kind:?}");
    }
}

/// The same with the session expired on the server before the holder hears
/// of it: a release that cannot prove its delete came first reports the loss.
#[tokio::test]
async fn a_release_after_an_unheard_expiry_reports_the_loss() {
    for kind in ALL {
        let zk = ZkMock::start().await;
        let dir = "/locks/unheard-expiry";
        let a = client(&zk).await;
        let lock = kind.lock(a.clone(), dir);
        let guard = lock.acquire().await.unwrap();
        let _stall = zk.stall(session(&a)).expect("a's session");
        assert!(zk.expire_session(session(&a)));
        assert!(
            guard.state() != GuardState::Lost,
            "{kind:?}: the holder cannot have heard"
        );
        let released = tokio::time::timeout(PATIENCE, guard.release())
            .await
            .unwrap_or_else(|_| panic!("{kind:?}: release hangs"));
        assert_eq!(released, Err(LockError::Lost), "{kind:?}");
        assert!(children(&zk, dir).is_empty(), "{kind:?}");
    }
}
