//! Lost replies on the lock's create and on the release's delete.

use zk_mock::fault::Rule;
use zk_mock::proto::OpCode;
use zk_mock::ZkMock;
use zookeeper_client::{Acls, CreateMode};

use crate::support::*;

#[tokio::test]
async fn lost_create_reply_leaves_no_orphan_and_no_phantom() {
    for kind in ALL {
        let zk = ZkMock::start().await;
        let dir = "/locks/lost-create";
        let (a, b) = (client(&zk).await, client(&zk).await);
        let holder = AnyLock::new(kind, a.clone(), dir);
        let other = AnyLock::new(kind, b.clone(), dir);
        let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
        a.mkdir(dir, &persistent).await.unwrap();
        let rule = zk.rule(
            Rule::new()
                .op(OpCode::Create2)
                .path_prefix(&format!("{dir}/"))
                .nth(1)
                .lose_reply(),
        );
        let guard = holder
            .acquire()
            .await
            .expect("acquire through a lost reply");
        assert_eq!(rule.fired(), 1, "{kind:?}: the fault never fired");
        drop(rule);
        // One node: the one the lost reply created, and the holder knows it is its own.
        assert_eq!(
            children(&zk, dir),
            vec![guard.path().to_string()],
            "{kind:?}"
        );
        let applied = zk.requests().op(OpCode::Create2).under(&format!("{dir}/"));
        assert_eq!(
            applied.iter().filter(|r| r.err == 0).count(),
            1,
            "{kind:?}: a second node was created\n{}",
            zk.recorded()
        );
        let node = &zk.snapshot().tree[guard.path()];
        assert_eq!(node.stat.ephemeral_owner, session(&a), "{kind:?}");
        assert_eq!(node.stat.czxid, guard.fencing_token(), "{kind:?}");
        // No phantom: the lock really is held.
        assert!(other.try_acquire().await.unwrap().is_none(), "{kind:?}");
        guard.release().await.unwrap();
        assert!(children(&zk, dir).is_empty(), "{kind:?}: orphan left");
        let next = other.acquire().await.unwrap();
        next.release().await.unwrap();
        assert!(children(&zk, dir).is_empty(), "{kind:?}");
        no_watches_left(&zk).await;
    }
}

/// The lost reply hits a create that failed (the directory did not exist yet).
#[tokio::test]
async fn lost_reply_on_a_failed_create_is_survived() {
    for kind in ALL {
        let zk = ZkMock::start().await;
        let dir = "/locks/no-dir-yet";
        let a = client(&zk).await;
        let lock = AnyLock::new(kind, a, dir);
        let rule = zk.rule(
            Rule::new()
                .op(OpCode::Create2)
                .path_prefix(&format!("{dir}/"))
                .nth(1)
                .lose_reply(),
        );
        let guard = lock.acquire().await.expect("acquire");
        assert_eq!(rule.fired(), 1, "{kind:?}");
        assert_eq!(
            children(&zk, dir),
            vec![guard.path().to_string()],
            "{kind:?}"
        );
        guard.release().await.unwrap();
        assert!(children(&zk, dir).is_empty(), "{kind:?}");
        no_watches_left(&zk).await;
    }
}

#[tokio::test]
async fn lost_delete_reply_still_releases() {
    for kind in ALL {
        let zk = ZkMock::start().await;
        let dir = "/locks/lost-delete";
        let (a, b) = (client(&zk).await, client(&zk).await);
        let holder = AnyLock::new(kind, a.clone(), dir);
        let other = AnyLock::new(kind, b.clone(), dir);
        let guard = holder.acquire().await.unwrap();
        let rule = zk.rule(
            Rule::new()
                .op(OpCode::Delete)
                .path(guard.path())
                .nth(1)
                .lose_reply(),
        );
        guard.release().await.expect("release through a lost reply");
        assert_eq!(rule.fired(), 1, "{kind:?}: the fault never fired");
        assert!(children(&zk, dir).is_empty(), "{kind:?}: orphan left");
        let next = other
            .try_acquire()
            .await
            .unwrap()
            .expect("lock free after release");
        next.release().await.unwrap();
        no_watches_left(&zk).await;
    }
}

#[tokio::test]
async fn timeout_and_cancel_clean_up_their_nodes() {
    for kind in ALL {
        let zk = ZkMock::start().await;
        let dir = "/locks/timeout";
        let (a, b) = (client(&zk).await, client(&zk).await);
        let holder = AnyLock::new(kind, a, dir);
        let waiter = AnyLock::new(kind, b.clone(), dir);
        let guard = holder.acquire().await.unwrap();
        let err = waiter
            .acquire_timeout(std::time::Duration::from_millis(50))
            .await
            .unwrap_err();
        assert_eq!(err, zk_lock::LockError::Timeout, "{kind:?}");
        assert_eq!(
            children(&zk, dir),
            vec![guard.path().to_string()],
            "{kind:?}"
        );
        assert!(waiter.try_acquire().await.unwrap().is_none(), "{kind:?}");
        assert_eq!(
            children(&zk, dir),
            vec![guard.path().to_string()],
            "{kind:?}"
        );
        guard.release().await.unwrap();
        no_watches_left(&zk).await;
    }
}
