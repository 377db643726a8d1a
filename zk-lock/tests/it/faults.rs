//! Lost replies on the lock's create and on the release's delete.

use std::time::Duration;

use zk_lock::GuardState;
use zk_mock::fault::{OpFamily, Rule};
use zk_mock::proto::OpCode;
use zk_mock::ZkMock;
use zookeeper_client::{Acls, Client, CreateMode};

use crate::support::*;

#[tokio::test]
async fn lost_create_reply_leaves_no_orphan_and_no_phantom() {
    for kind in ALL {
        let zk = ZkMock::start().await;
        let dir = "/locks/lost-create";
        let (a, b) = (client(&zk).await, client(&zk).await);
        let holder = kind.lock(a.clone(), dir);
        let other = kind.lock(b.clone(), dir);
        let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
        a.mkdir(dir, &persistent).await.unwrap();
        let rule = zk.rule(
            Rule::when()
                .op(OpFamily::Create)
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
        let applied = zk.inspect(|log| {
            let creates = log.requests().op(OpFamily::Create).under(format!("{dir}/"));
            creates.error(ErrorCode::Ok).count()
        });
        assert_eq!(
            applied,
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
        let lock = kind.lock(a, dir);
        let rule = zk.rule(
            Rule::when()
                .op(OpFamily::Create)
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
        let holder = kind.lock(a.clone(), dir);
        let other = kind.lock(b.clone(), dir);
        let guard = holder.acquire().await.unwrap();
        let rule = zk.rule(
            Rule::when()
                .op(OpFamily::Delete)
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
        let holder = kind.lock(a, dir);
        let waiter = kind.lock(b.clone(), dir);
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

/// The naive lock's dangerous case: the release's delete is applied but its
/// reply lost, and the next contender takes `<dir>/lock` before the old
/// holder reconnects. The retrying release must not delete the new holder's node.
#[tokio::test]
async fn retried_release_never_deletes_the_next_holders_node() {
    let zk = ZkMock::start().await;
    let dir = "/locks/naive-handover";
    let (a, b) = (client(&zk).await, client(&zk).await);
    let holder = Kind::Naive.lock(a.clone(), dir);
    let guard = holder.acquire().await.unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let waiter = tokio::spawn(async move {
        let lock = Kind::Naive.lock(b, dir);
        let g = lock.acquire().await.unwrap();
        tx.send((g.fencing_token(), g.path().to_string())).unwrap();
        done_rx.await.unwrap();
        assert!(
            g.state() != GuardState::Lost,
            "the old holder's retry deleted the new holder's node"
        );
        g.release().await.unwrap();
    });
    let waiter_session = zk
        .session_ids()
        .into_iter()
        .find(|s| *s != session(&a))
        .unwrap();
    watching(&zk, dir, &[waiter_session]).await;

    let rule = zk.rule(
        Rule::when()
            .op(OpFamily::Delete)
            .path(guard.path())
            .nth(1)
            .lose_reply(),
    );
    let refusal = zk.refuse_connections();
    let old_token = guard.fencing_token();
    let release = tokio::spawn(guard.release());
    let (new_token, path) = tokio::time::timeout(PATIENCE, rx).await.unwrap().unwrap();
    assert!(new_token > old_token);
    assert_eq!(rule.fired(), 1);
    drop(refusal);
    tokio::time::timeout(PATIENCE, release)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let node = &zk.snapshot().tree[&path];
    assert_eq!(
        node.stat.czxid, new_token,
        "the new holder's node is intact"
    );
    let deletes = zk.inspect(|log| {
        let deletes = log.requests().op(OpCode::Delete).by_path(&path);
        deletes.by_session(session(&a)).count()
    });
    assert_eq!(deletes, 1, "only the lost delete: {}", zk.recorded());
    done_tx.send(()).unwrap();
    waiter.await.unwrap();
    no_watches_left(&zk).await;
}

#[tokio::test]
async fn a_cancelled_acquire_deletes_its_node() {
    for kind in ALL {
        let zk = ZkMock::start().await;
        let dir = "/locks/cancel";
        let (a, b) = (client(&zk).await, client(&zk).await);
        let holder = kind.lock(a.clone(), dir);
        let guard = holder.acquire().await.unwrap();
        let waiter = tokio::spawn(async move {
            let lock = kind.lock(b, dir);
            let _ = lock.acquire().await;
        });
        let waiter_session = zk
            .session_ids()
            .into_iter()
            .find(|s| *s != session(&a))
            .unwrap();
        watching(&zk, dir, &[waiter_session]).await;
        waiter.abort();
        assert!(waiter.await.unwrap_err().is_cancelled());
        let holder_path = guard.path().to_string();
        let d = dir.to_string();
        zk.wait_until(PATIENCE, |log| {
            let prefix = format!("{d}/");
            log.snapshot()
                .tree
                .keys()
                .filter(|p| p.starts_with(&prefix))
                .all(|p| *p == holder_path)
        })
        .await
        .unwrap_or_else(|e| panic!("{kind:?}: cancelled contender's node left\n{e}"));
        guard.release().await.unwrap();
        no_watches_left(&zk).await;
    }
}

/// A create whose reply is held past 2/5 of the session timeout: the
/// client gives up on the connection and fails the create with its own
/// "no response from connection" error (not ConnectionLoss), then
/// reconnects to the same session. The node was created; the recipe must
/// find it as after a lost reply, not fail or leave it behind.
#[tokio::test]
async fn a_create_reply_held_past_the_client_timeout_is_treated_as_lost() {
    for kind in ALL {
        let zk = ZkMock::builder().tick_time(100).start().await.unwrap();
        let dir = "/locks/slow-create";
        let a = Client::connector()
            .with_session_timeout(Duration::from_secs(2))
            .connect(&zk.connect_string())
            .await
            .unwrap();
        let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
        a.mkdir(dir, &persistent).await.unwrap();
        let rule = zk.rule(
            Rule::when()
                .op(OpFamily::Create)
                .path_prefix(&format!("{dir}/"))
                .nth(1)
                .delay(Duration::from_millis(1500)),
        );
        let lock = kind.lock(a.clone(), dir);
        let guard = lock.acquire().await.expect("acquire through a held reply");
        assert_eq!(rule.fired(), 1, "{kind:?}");
        drop(rule);
        assert_eq!(
            children(&zk, dir),
            vec![guard.path().to_string()],
            "{kind:?}"
        );
        let created = zk.inspect(|log| {
            let creates = log.requests().op(OpFamily::Create).under(format!("{dir}/"));
            creates.error(ErrorCode::Ok).count()
        });
        assert_eq!(created, 1, "{kind:?}: a second node\n{}", zk.recorded());
        assert_eq!(
            zk.session_ids(),
            vec![session(&a)],
            "{kind:?}: same session"
        );
        guard.release().await.unwrap();
        assert!(children(&zk, dir).is_empty(), "{kind:?}");
        no_watches_left(&zk).await;
    }
}

/// CURATOR-604 / apache/curator#1121, Curator PR #303: after a lost create,
/// a child with the contender's protected prefix that another session owns
/// (in Curator's case, the old session's node not yet deleted after its
/// expiry) must not be taken for the contender's own node. Here the create
/// is cut before it is applied, the client is kept out, and another session
/// creates a node with the very same prefix (read from the server's
/// record). The contender creates its own node and queues behind that one.
#[tokio::test]
async fn a_node_with_our_prefix_owned_by_another_session_is_not_ours() {
    for kind in [Kind::Predecessor, Kind::Herd, Kind::Writer] {
        let zk = ZkMock::start().await;
        let dir = "/locks/impostor";
        let (a, b) = (client(&zk).await, client(&zk).await);
        let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
        a.mkdir(dir, &persistent).await.unwrap();
        let a_session = session(&a);
        let rule = zk.rule(
            Rule::when()
                .op(OpFamily::Create)
                .path_prefix(&format!("{dir}/"))
                .session(a_session)
                .nth(1)
                .disconnect(),
        );
        let refusal = zk.refuse_connections();
        let contender = tokio::spawn(async move {
            let lock = kind.lock(a, dir);
            let g = lock.acquire().await.unwrap();
            (lock, g)
        });
        zk.wait_until(PATIENCE, |log| log.requests().faulted().count() == 1)
            .await
            .unwrap_or_else(|e| panic!("{kind:?}: the create was never cut\n{e}"));
        let cut = zk.inspect(|log| log.requests().faulted().next().cloned());
        let prefix = cut.unwrap().path.unwrap().to_string();
        assert_eq!(rule.fired(), 1, "{kind:?}");
        drop(rule);
        // Another session's node with the contender's protected prefix.
        let opts = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        let (_, seq) = b.create(&prefix, &[], &opts).await.unwrap();
        let impostor = format!("{prefix}{seq}");
        drop(refusal);

        // The contender creates its own node and waits behind the impostor.
        watching(&zk, dir, &[a_session]).await;
        let tree = zk.snapshot().tree;
        let owners: Vec<_> = children(&zk, dir)
            .iter()
            .map(|p| (p.clone(), tree[p].stat.ephemeral_owner))
            .collect();
        assert_eq!(owners.len(), 2, "{kind:?}: {owners:?}");
        assert!(
            owners.iter().all(|(p, _)| p.starts_with(&prefix)),
            "{kind:?}"
        );
        assert!(
            owners.contains(&(impostor.clone(), session(&b).0)),
            "{kind:?}"
        );
        assert!(
            owners.iter().any(|(_, s)| *s == a_session),
            "{kind:?}: {owners:?}"
        );
        assert!(
            !contender.is_finished(),
            "{kind:?}: took the impostor's node"
        );

        b.delete(&impostor, None).await.unwrap();
        let (_lock, g) = tokio::time::timeout(PATIENCE, contender)
            .await
            .unwrap_or_else(|_| panic!("{kind:?}: left behind"))
            .unwrap();
        assert_ne!(g.path(), impostor, "{kind:?}");
        assert_eq!(
            zk.snapshot().tree[g.path()].stat.ephemeral_owner,
            a_session,
            "{kind:?}"
        );
        g.release().await.unwrap();
        assert!(children(&zk, dir).is_empty(), "{kind:?}");
        no_watches_left(&zk).await;
    }
}

/// A loaded server sheds requests with THROTTLEDOP (not executed at all,
/// ZOOKEEPER-3683): the contender's first two creates, its first reads of
/// the directory and of its node, and the holder's first two deletes at
/// release. Each is sent again; nothing is left behind and nothing is taken
/// for a lost lock.
#[tokio::test]
async fn shed_requests_are_sent_again() {
    use zk_mock::proto::ErrorCode;
    for kind in ALL {
        let zk = ZkMock::start().await;
        let dir = "/locks/shed";
        let (a, b) = (client(&zk).await, client(&zk).await);
        let holder = kind.lock(a.clone(), dir);
        let other = kind.lock(b.clone(), dir);
        let under = format!("{dir}/**");
        let shed = |family| {
            zk.rule(
                Rule::when()
                    .op(family)
                    .session(session(&a))
                    .path_glob(&under)
                    .times(2)
                    .fail(ErrorCode::ThrottledOp),
            )
        };
        let creates = shed(OpFamily::Create);
        let reads = shed(OpFamily::GetData);
        let guard = holder
            .acquire()
            .await
            .expect("acquire through shed creates");
        assert_eq!(creates.fired(), 2, "{kind:?}: the creates were not shed");
        assert_eq!(
            children(&zk, dir),
            vec![guard.path().to_string()],
            "{kind:?}"
        );
        // The holder's own watch read was shed too, and it still holds.
        // The guard's watch read runs on its own task: wait for it to be shed
        // (and sent again after the pause).
        let shed_read = async {
            while reads.fired() < 2 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        tokio::time::timeout(PATIENCE, shed_read)
            .await
            .unwrap_or_else(|_| panic!("{kind:?}: the guard's reads were not shed"));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            guard.state() != GuardState::Lost,
            "{kind:?}: a shed read was taken for a loss"
        );
        assert!(other.try_acquire().await.unwrap().is_none(), "{kind:?}");
        let deletes = shed(OpFamily::Delete);
        guard.release().await.expect("release through shed deletes");
        assert_eq!(deletes.fired(), 2, "{kind:?}: the deletes were not shed");
        assert!(children(&zk, dir).is_empty(), "{kind:?}: orphan left");
        let next = other
            .try_acquire()
            .await
            .unwrap()
            .expect("free after release");
        next.release().await.unwrap();
    }
}

/// The naive lock's node has one fixed path: after someone else deleted the
/// holder's node and another contender created its own there, the old
/// holder's release must not delete the new holder's node.
#[tokio::test]
async fn a_naive_release_never_deletes_the_next_holders_node() {
    let zk = ZkMock::start().await;
    let dir = "/locks/naive-replaced";
    let (a, b, admin) = (client(&zk).await, client(&zk).await, client(&zk).await);
    let guard = Kind::Naive.lock(a.clone(), dir).acquire().await.unwrap();
    let path = guard.path().to_string();
    admin.delete(&path, None).await.unwrap();
    tokio::time::timeout(PATIENCE, guard.lost())
        .await
        .expect("the holder hears of the deletion");
    let next = Kind::Naive.lock(b, dir).acquire().await.unwrap();
    assert_eq!(guard.release().await, Err(zk_lock::LockError::Lost));
    let node = &zk.snapshot().tree[&path];
    assert_eq!(
        node.stat.czxid,
        next.fencing_token(),
        "the new holder's node is intact"
    );
    let deletes = zk.inspect(|log| {
        let mine = log.requests().by_session(session(&a));
        mine.op(OpCode::Delete).count()
    });
    assert_eq!(
        deletes,
        0,
        "the old holder sent no delete\n{}",
        zk.recorded()
    );
    next.release().await.unwrap();
}

/// A `try_acquire` cancelled while it removes the node it created (its
/// delete cut, the client kept from reconnecting) leaves no node behind:
/// the dropped future finishes the removal in the background.
#[tokio::test]
async fn a_try_acquire_cancelled_while_removing_its_node_leaves_none() {
    for kind in SEQUENTIAL {
        let zk = ZkMock::start().await;
        let dir = "/locks/cancel-cleanup";
        let (a, b) = (client(&zk).await, client(&zk).await);
        let held = kind.lock(b, dir).acquire().await.unwrap();
        let lock = kind.lock(a.clone(), dir);
        let cut = Rule::when()
            .op(OpFamily::Delete)
            .session(session(&a))
            .nth(1)
            .disconnect();
        let cut = zk.rule(cut).expect(1);
        let refusal = zk.refuse_connections();
        let attempt = tokio::time::timeout(Duration::from_millis(300), lock.try_acquire()).await;
        assert!(
            attempt.is_err(),
            "{kind:?}: cancelled while removing its node"
        );
        assert_eq!(
            children(&zk, dir).len(),
            2,
            "{kind:?}: its node is still there"
        );
        drop(refusal);
        let cleaned = zk
            .wait_until(PATIENCE, |log| children_in(&log.snapshot(), dir).len() == 1)
            .await;
        assert!(
            cleaned.is_ok(),
            "{kind:?}: the cancelled contender's node stays"
        );
        assert_eq!(
            children(&zk, dir),
            vec![held.path().to_string()],
            "{kind:?}"
        );
        drop(cut);
        held.release().await.unwrap();
    }
}
