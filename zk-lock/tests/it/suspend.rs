//! The guard's connection state (Curator's SUSPENDED, apache/curator#985,
//! CURATOR-465): `Held` → `Suspended` while the client is disconnected →
//! `Held` again when it reconnects to its session, `Lost` at the end.

use std::time::Duration;

use zk_lock::{GuardMonitor, GuardState};
use zk_mock::proto::OpCode;
use zk_mock::record::SessionEvent;
use zk_mock::ZkMock;
use zookeeper_client::Client;

use crate::support::*;

async fn reaches(monitor: &mut GuardMonitor, want: GuardState, what: &str) {
    let reached = tokio::time::timeout(PATIENCE, async {
        while monitor.state() != want {
            monitor.changed().await;
        }
    })
    .await;
    if reached.is_err() {
        panic!("{what}: never {want:?}, still {:?}", monitor.state());
    }
}

#[tokio::test]
async fn a_disconnected_holder_is_suspended_then_held_again_then_lost_on_expiry() {
    for kind in ALL {
        let what = format!("{kind:?}");
        let zk = ZkMock::start().await;
        let dir = "/locks/suspend";
        let a = client(&zk).await;
        let lock = kind.lock(a.clone(), dir);
        let guard = lock.acquire().await.unwrap();
        let mut state = guard.monitor();
        assert_eq!(state.state(), GuardState::Held, "{what}");

        // Cut the connection and keep the client out: it cannot know
        // whether it still holds the lock.
        let refusal = zk.refuse_connections();
        assert!(zk.disconnect(session(&a)), "{what}");
        reaches(&mut state, GuardState::Suspended, &what).await;
        assert!(
            guard.state() != GuardState::Lost,
            "{what}: suspended is not lost"
        );

        // Back within the session: the node is still its own.
        drop(refusal);
        reaches(&mut state, GuardState::Held, &what).await;
        assert!(zk.session_ids().contains(&session(&a)), "{what}");
        let node = &zk.snapshot().tree[guard.path()];
        assert_eq!(node.stat.czxid, guard.fencing_token(), "{what}");
        // Held again only after the session was re-attached and the guard
        // read its node back on it.
        let recording = zk.recorded();
        let reattached = recording
            .sessions
            .iter()
            .filter(|s| s.session == session(&a) && s.event == SessionEvent::Reattached)
            .map(|s| s.seq)
            .max()
            .unwrap_or_else(|| panic!("{what}: never re-attached\n{recording}"));
        let read_back = zk.inspect(|log| {
            let reads = log.requests().op(OpCode::GetData).by_path(guard.path());
            let mut ok = reads.by_session(session(&a)).error(ErrorCode::Ok);
            ok.any(|r| r.seq > reattached)
        });
        assert!(read_back, "{what}\n{recording}");
        assert!(guard.state() != GuardState::Lost, "{what}");

        assert!(zk.expire_session(session(&a)));
        reaches(&mut state, GuardState::Lost, &what).await;
        assert!(
            guard.state() == GuardState::Lost,
            "{what}: the monitor agrees with state()"
        );
        assert_eq!(
            guard.release().await,
            Err(zk_lock::LockError::Lost),
            "{what}"
        );
        assert!(children(&zk, dir).is_empty(), "{what}");
        no_watches_left(&zk).await;
    }
}

/// The node is deleted while the holder is disconnected: on reconnect the
/// guard goes from `Suspended` to `Lost`, never back to `Held`.
#[tokio::test]
async fn a_node_deleted_while_suspended_is_lost_on_reconnect() {
    for kind in ALL {
        let what = format!("{kind:?}");
        let zk = ZkMock::start().await;
        let dir = "/locks/suspend-deleted";
        let (a, admin) = (client(&zk).await, client(&zk).await);
        let lock = kind.lock(a.clone(), dir);
        let guard = lock.acquire().await.unwrap();
        let mut state = guard.monitor();
        let refusal = zk.refuse_connections();
        assert!(zk.disconnect(session(&a)));
        reaches(&mut state, GuardState::Suspended, &what).await;
        admin.delete(guard.path(), None).await.unwrap();
        let mut seen = Vec::new();
        let mut follow = guard.monitor();
        let log = tokio::spawn(async move {
            loop {
                let s = follow.changed().await;
                seen.push(s);
                if s == GuardState::Lost {
                    break seen;
                }
            }
        });
        drop(refusal);
        reaches(&mut state, GuardState::Lost, &what).await;
        let seen = tokio::time::timeout(PATIENCE, log).await.unwrap().unwrap();
        assert_eq!(seen, vec![GuardState::Lost], "{what}: never Held again");
        assert!(guard.state() == GuardState::Lost, "{what}");
        assert!(
            zk.session_ids().contains(&session(&a)),
            "{what}: same session"
        );
        assert_eq!(
            guard.release().await,
            Err(zk_lock::LockError::Lost),
            "{what}"
        );
        no_watches_left(&zk).await;
    }
}

/// A stalled session: the client gives up on the silent connection after
/// 2/5 of its session timeout (Suspended) and, once the server resumes it
/// well within the timeout, reconnects to the same session (Held).
#[tokio::test]
async fn a_stalled_holder_is_suspended_and_held_again_after_resume() {
    // Session timeout 6 s (ticks of 500 ms allow up to 10 s): the client
    // gives up on the stalled connection after 2.4 s, and the resume comes
    // long before the server would expire the session.
    let zk = ZkMock::builder().tick_time(500).start().await.unwrap();
    let a = Client::connector()
        .with_session_timeout(Duration::from_secs(6))
        .connect(&zk.connect_string())
        .await
        .unwrap();
    let lock = Kind::Predecessor.lock(a.clone(), "/locks/stall");
    let guard = lock.acquire().await.unwrap();
    let mut state = guard.monitor();
    let stall = zk.stall(session(&a)).expect("a's session");
    reaches(&mut state, GuardState::Suspended, "stalled").await;
    drop(stall);
    reaches(&mut state, GuardState::Held, "resumed").await;
    assert_eq!(zk.session_ids(), vec![session(&a)], "the session survived");
    assert!(guard.state() != GuardState::Lost);
    guard.release().await.unwrap();
    no_watches_left(&zk).await;
}
