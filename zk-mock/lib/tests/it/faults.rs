//! Fault rules and verbs: each does to a real `zookeeper-client`
//! session what the matching real-world failure does.

use std::time::{Duration, Instant};

use zk_mock::clock::ClockMode;
use zk_mock::fault::{Match, OpFamily, Rule};
use zk_mock::proto::{ErrorCode, OpCode};
use zk_mock::record::{NotificationQuery, RequestQuery, SessionEvent};
use zk_mock::ZkMock;
use zookeeper_client::{Client, Error, EventType, SessionState};

use crate::support::*;

const QUICK: Duration = Duration::from_secs(10);

/// Waits until the client's state watcher reports `want`.
async fn wait_state(client: &Client, want: SessionState) {
    let mut w = client.state_watcher();
    with_timeout(QUICK, &format!("state {want:?}"), async {
        let mut s = w.state();
        while s != want {
            s = w.changed().await;
        }
    })
    .await
}

/// Retries a read until the client has reconnected (it answers ConnectionLoss meanwhile).
async fn get_after_reconnect(client: &Client, path: &str) -> Result<Vec<u8>, Error> {
    with_timeout(QUICK, "reconnect", async {
        loop {
            match client.get_data(path).await {
                Err(Error::ConnectionLoss) => tokio::time::sleep(Duration::from_millis(20)).await,
                other => return other.map(|(d, _)| d),
            }
        }
    })
    .await
}

fn creates() -> Match {
    Rule::when().op(OpFamily::Create)
}

#[tokio::test]
async fn a_lost_create_reply_is_connection_loss_but_the_node_exists_after_reconnect() {
    let mock = start_mock().await;
    let client = connect(&mock).await;
    let session = client.session_id().0;
    let guard = mock.rule(creates().path("/lost").nth(1).lose_reply());
    assert_eq!(
        client.create("/lost", b"x", &persistent()).await.err(),
        Some(Error::ConnectionLoss)
    );
    assert_eq!(get_after_reconnect(&client, "/lost").await.unwrap(), b"x");
    assert_eq!(
        client.session_id().0,
        session,
        "same session after the reconnect"
    );
    assert_eq!(guard.fired(), 1);
    let faulted: Vec<_> = mock.inspect(|log| log.requests().faulted().cloned().collect());
    assert_eq!(faulted.len(), 1);
    assert_eq!(faulted[0].verdict.as_deref(), Some("lose reply"));
    assert_eq!(
        faulted[0].error(),
        Some(ErrorCode::Ok),
        "the create was applied"
    );
    assert!(mock
        .recorded()
        .sessions
        .iter()
        .any(|s| s.session == session && s.event == SessionEvent::Reattached));
}

#[tokio::test]
async fn a_disconnect_before_applying_creates_nothing_and_watches_come_back_after_reconnect() {
    let mock = start_mock().await;
    let client = connect(&mock).await;
    let other = connect(&mock).await;
    client.create("/w", b"1", &persistent()).await.unwrap();
    let (_, _, watch) = client.get_and_watch_data("/w").await.unwrap();
    let _g = mock.rule(creates().path("/never").disconnect());
    assert_eq!(
        client.create("/never", b"", &persistent()).await.err(),
        Some(Error::ConnectionLoss)
    );
    assert_eq!(get_after_reconnect(&client, "/w").await.unwrap(), b"1");
    assert_eq!(
        other.check_stat("/never").await.unwrap(),
        None,
        "nothing was applied"
    );
    // The client re-registered its watch with SetWatches; a change now fires it.
    let session = client.session_id().0;
    assert!(
        mock.inspect(|log| log
            .requests()
            .by_session(session)
            .op(OpCode::SetWatches)
            .count())
            >= 1
    );
    other.set_data("/w", b"2", None).await.unwrap();
    let ev = with_timeout(QUICK, "NodeDataChanged after reconnect", watch.changed()).await;
    assert_eq!(ev.event_type, EventType::NodeDataChanged);
}

#[tokio::test]
async fn fail_answers_the_chosen_error_until_the_guard_is_dropped() {
    let mock = start_mock().await;
    let client = connect(&mock).await;
    client.create("/f", b"v", &persistent()).await.unwrap();
    let guard = mock.rule(
        Rule::when()
            .op(OpFamily::GetData)
            .path("/f")
            .fail(ErrorCode::NoAuth),
    );
    assert_eq!(client.get_data("/f").await.err(), Some(Error::NoAuth));
    assert_eq!(client.get_data("/f").await.err(), Some(Error::NoAuth));
    assert_eq!(guard.fired(), 2);
    drop(guard);
    assert_eq!(client.get_data("/f").await.unwrap().0, b"v");
    assert!(mock.rules().is_empty());
}

#[tokio::test]
async fn rules_fire_in_install_order_with_nth_times_session_and_glob() {
    let mock = start_mock().await;
    let a = connect(&mock).await;
    let b = connect(&mock).await;
    a.create("/g", b"", &persistent()).await.unwrap();
    a.create("/g/x", b"", &persistent()).await.unwrap();
    let _second = mock.rule(
        Rule::when()
            .op(OpFamily::GetData)
            .path_glob("/g/*")
            .nth(2)
            .fail(ErrorCode::NoNode),
    );
    let _first_b_only = mock.rule(
        Rule::when()
            .op(OpFamily::GetData)
            .session(b.session_id().0)
            .times(1)
            .fail(ErrorCode::BadVersion),
    );
    // a: 1st match of the glob rule passes, 2nd fires, 3rd passes.
    assert!(a.get_data("/g/x").await.is_ok());
    assert_eq!(a.get_data("/g/x").await.err(), Some(Error::NoNode));
    assert!(a.get_data("/g/x").await.is_ok());
    // b: the glob rule counts b's request too (4th match: passes), then the session rule fires once.
    assert_eq!(b.get_data("/g/x").await.err(), Some(Error::BadVersion));
    assert!(b.get_data("/g/x").await.is_ok());
    // The glob does not cross a segment.
    a.create("/g/x/y", b"", &persistent()).await.unwrap();
    assert!(a.get_data("/g/x/y").await.is_ok());
}

#[tokio::test]
async fn probabilistic_rules_replay_identically_from_the_same_seed() {
    async fn pattern(seed: u64) -> Vec<bool> {
        let mock = ZkMock::builder().seed(seed).start().await.unwrap();
        let c = connect(&mock).await;
        let _g = mock.rule(
            Rule::when()
                .op(OpFamily::Exists)
                .probability(0.5)
                .fail(ErrorCode::NoAuth),
        );
        let mut out = Vec::new();
        for _ in 0..40 {
            out.push(c.check_stat("/").await.is_err());
        }
        out
    }
    let (x, y, z) = (pattern(11).await, pattern(11).await, pattern(12).await);
    assert_eq!(x, y);
    assert_ne!(x, z);
    assert!(x.iter().any(|f| *f) && x.iter().any(|f| !*f));
}

#[tokio::test]
async fn a_delayed_reply_arrives_no_sooner_than_the_delay() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    let _g = mock.rule(
        Rule::when()
            .op(OpFamily::GetData)
            .delay(Duration::from_millis(300)),
    );
    let t = Instant::now();
    c.get_data("/").await.unwrap();
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "{:?}",
        t.elapsed()
    );
}

#[tokio::test]
async fn a_stall_past_the_timeout_on_the_manual_clock_expires_the_session_like_a_partition() {
    let mock = ZkMock::builder()
        .clock(ClockMode::Manual)
        .start()
        .await
        .unwrap();
    let victim = connect(&mock).await;
    victim.create("/stalled", b"", &ephemeral()).await.unwrap();
    let observer = connect(&mock).await;
    let (_, _, gone) = observer.get_and_watch_data("/stalled").await.unwrap();
    let id = victim.session_id().0;
    let _stall = mock.stall(id).expect("a live session");
    assert!(mock.snapshot().sessions[&id.into()].stalled);
    mock.advance(Duration::from_secs(60));
    assert!(
        !mock.session_ids().contains(&id.into()),
        "expired while stalled"
    );
    let ev = with_timeout(QUICK, "NodeDeleted", gone.changed()).await;
    assert_eq!(ev.event_type, EventType::NodeDeleted);
    wait_state(&victim, SessionState::Expired).await;
}

/// With a cleanup delay, an expired session is gone at once (its client is
/// told so, and cannot re-attach) while its ephemeral nodes stay, owned by
/// the dead session, until the delay is over: what a client sees through a
/// server that has not applied the expiry yet (CURATOR-604).
#[tokio::test]
async fn an_expiry_cleanup_delay_keeps_the_dead_sessions_nodes_for_a_while() {
    let mock = ZkMock::builder()
        .clock(ClockMode::Manual)
        .expiry_cleanup_delay(Duration::from_millis(1500))
        .start()
        .await
        .unwrap();
    let victim = connect(&mock).await;
    victim.create("/held", b"", &ephemeral()).await.unwrap();
    let id = victim.session_id().0;
    let observer = connect(&mock).await;
    let (_, _, gone) = observer.get_and_watch_data("/held").await.unwrap();
    assert!(mock.expire_session(id));
    wait_state(&victim, SessionState::Expired).await;
    assert!(!mock.session_ids().contains(&id.into()));
    // A new session still sees the node, owned by the expired one.
    let again = connect(&mock).await;
    let stat = again
        .check_stat("/held")
        .await
        .unwrap()
        .expect("still there");
    assert_eq!(stat.ephemeral_owner, id);
    mock.advance(Duration::from_millis(1000));
    assert!(again.check_stat("/held").await.unwrap().is_some());
    mock.advance(Duration::from_millis(600));
    let ev = with_timeout(QUICK, "NodeDeleted", gone.changed()).await;
    assert_eq!(ev.event_type, EventType::NodeDeleted);
    assert!(again.check_stat("/held").await.unwrap().is_none());
    let expired: Vec<_> = mock
        .recorded()
        .sessions
        .iter()
        .filter(|s| s.session == id && s.event == SessionEvent::Expired)
        .map(|s| s.zxid)
        .collect();
    assert_eq!(
        expired.len(),
        1,
        "one closeSession transaction, at the cleanup"
    );
    // Without the delay, the next expiry cleans up at once.
    mock.set_expiry_cleanup_delay(Duration::ZERO);
    again.create("/now", b"", &ephemeral()).await.unwrap();
    assert!(mock.expire_session(again.session_id().0));
    assert!(observer.check_stat("/now").await.unwrap().is_none());
}

/// Sends a request frame without waiting for its reply.
async fn send_request<R: zk_mock::codec::Record>(
    c: &mut zk_mock::client::RawClient,
    xid: i32,
    op: OpCode,
    body: &R,
) {
    let mut f = bytes::BytesMut::new();
    zk_mock::codec::Record::encode(
        &zk_mock::proto::RequestHeader {
            xid,
            op_type: op as i32,
        },
        &mut f,
    );
    body.encode(&mut f);
    c.send_frame(&f).await.unwrap();
}

#[tokio::test]
async fn a_notification_queued_before_a_request_is_applied_goes_out_before_its_reply() {
    // A connection's own replies come straight back to its task, other
    // connections' notifications through its channel: a notification
    // already in the channel when a request is applied must still go out
    // first. A `delay` pause keeps the channel from being taken meanwhile.
    let mock = start_mock().await;
    let mut a = raw(&mock).await;
    let mut b = raw(&mock).await;
    raw_create_ok(&mut a, "/n", 0).await;
    let watched = a
        .request(OpCode::GetData, &path_watch("/n", true))
        .await
        .unwrap();
    assert_eq!(watched.header.err, 0);
    let _slow = mock.rule(
        Rule::when()
            .session(a.session_id)
            .op(OpFamily::Exists)
            .delay(Duration::from_millis(800)),
    );
    send_request(&mut a, 300, OpCode::Exists, &path_watch("/n", false)).await;
    // The pause is running on a's connection; b's write queues a's
    // notification, then a's next request is read and applied.
    tokio::time::sleep(Duration::from_millis(150)).await;
    let set = b
        .request(
            OpCode::SetData,
            &zk_mock::proto::SetDataRequest {
                path: "/n".into(),
                data: Some(bytes::Bytes::from_static(b"v1")),
                version: -1,
            },
        )
        .await
        .unwrap();
    assert_eq!(set.header.err, 0);
    send_request(&mut a, 301, OpCode::GetData, &path_watch("/n", false)).await;
    a.set_read_timeout(QUICK);
    let first = a.next_reply().await.unwrap().unwrap();
    assert_eq!(first.header.xid, 300);
    assert!(
        a.take_events().is_empty(),
        "nothing came before the delayed reply"
    );
    let second = a.next_reply().await.unwrap().unwrap();
    assert_eq!(second.header.xid, 301);
    assert_eq!(second.header.zxid, set.header.zxid);
    let events = a.take_events();
    assert_eq!(
        kinds(&events),
        vec![(
            zk_mock::proto::event_type::NODE_DATA_CHANGED,
            "/n".to_string()
        )],
        "the notification came before the reply of the read applied after it"
    );
}

#[tokio::test]
async fn a_short_stall_holds_replies_and_resume_delivers_them_in_order() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    raw_create_ok(&mut c, "/s", 0).await;
    let stall = mock.stall(c.session_id).expect("a live session");
    // Two pipelined reads: both held.
    for xid in [100, 101] {
        let body = zk_mock::codec::Record::to_bytes(&path_watch("/s", false));
        let mut f = bytes::BytesMut::new();
        zk_mock::codec::Record::encode(
            &zk_mock::proto::RequestHeader {
                xid,
                op_type: OpCode::GetData as i32,
            },
            &mut f,
        );
        f.extend_from_slice(&body);
        c.send_frame(&f).await.unwrap();
    }
    c.set_read_timeout(Duration::from_millis(300));
    assert!(
        c.read_frame().await.is_err(),
        "nothing arrives while stalled"
    );
    drop(stall);
    c.set_read_timeout(QUICK);
    let r1 = c.next_reply().await.unwrap().unwrap();
    let r2 = c.next_reply().await.unwrap().unwrap();
    assert_eq!((r1.header.xid, r2.header.xid), (100, 101));
    assert!(mock.session_ids().contains(&c.session_id.into()));
}

/// Waits until `n` connections are held by a stall.
async fn stalled_connections(mock: &ZkMock, n: usize) {
    with_timeout(QUICK, &format!("{n} stalled connections"), async {
        while mock.metrics().stalled_connections != n {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
}

/// A session stalled with a request waiting on its connection, and a
/// reconnect of the same session waiting on another: on resume the older
/// connection goes first, every time. Its create is applied, and then the
/// reconnect takes the session over and closes it, as ZooKeeper closes a
/// session's previous connection. (Gates opened in a hash table's order
/// let the reconnect go first in some rounds: the old connection was closed
/// with its create unread.)
#[tokio::test]
async fn on_resume_a_sessions_oldest_connection_goes_first() {
    let mock = start_mock().await;
    for round in 0..16 {
        let mut old = raw(&mock).await;
        let stall = mock.stall(old.session_id).expect("a live session");
        let path = format!("/held-{round}");
        let create = zk_mock::codec::Record::to_bytes(&create_req(&path, None, 0));
        old.send_raw(&request_bytes(100, OpCode::Create as i32, &create))
            .await
            .unwrap();
        let reconnect = zk_mock::proto::ConnectRequest {
            time_out: 10_000,
            session_id: old.session_id,
            passwd: Some(old.passwd.clone()),
            ..Default::default()
        };
        let addr = mock.addr();
        let new =
            tokio::spawn(
                async move { zk_mock::client::RawClient::handshake(addr, &reconnect).await },
            );
        stalled_connections(&mock, 2).await;
        drop(stall);
        let (_, answer) = with_timeout(QUICK, "the reconnect's answer", new)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(answer.expect("answered").session_id, old.session_id);
        let reply = old.next_reply().await.unwrap().expect("the create's reply");
        assert_eq!(
            (reply.header.xid, reply.header.err),
            (100, 0),
            "round {round}"
        );
        assert_eq!(old.read_frame().await.unwrap(), None, "then closed");
        assert!(mock.snapshot().tree.contains_key(&path), "round {round}");
    }
}

#[tokio::test]
async fn refused_connections_keep_a_client_out_until_the_refusal_ends() {
    let mock = start_mock().await;
    let client = connect(&mock).await;
    let id = client.session_id().0;
    let refusal = mock.refuse_connections();
    assert_eq!(mock.disconnect_all(), 1);
    wait_state(&client, SessionState::Disconnected).await;
    // Give the client time to try; nothing gets in.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(mock.connection_count(), 0);
    drop(refusal);
    wait_state(&client, SessionState::SyncConnected).await;
    assert_eq!(client.session_id().0, id, "same session");
    assert!(client.check_stat("/").await.unwrap().is_some());
}

#[tokio::test]
async fn expire_session_deletes_ephemerals_in_one_transaction_and_the_client_sees_expired() {
    let mock = start_mock().await;
    let victim = connect(&mock).await;
    victim.create("/e1", b"", &ephemeral()).await.unwrap();
    victim.create("/e2", b"", &ephemeral()).await.unwrap();
    let observer = connect(&mock).await;
    let (_, _, w1) = observer.get_and_watch_data("/e1").await.unwrap();
    let (_, _, w2) = observer.get_and_watch_data("/e2").await.unwrap();
    let id = victim.session_id().0;
    assert!(mock.expire_session(id));
    assert!(!mock.expire_session(id), "already gone");
    for w in [w1, w2] {
        assert_eq!(
            with_timeout(QUICK, "NodeDeleted", w.changed())
                .await
                .event_type,
            EventType::NodeDeleted
        );
    }
    let notes: Vec<_> = mock.inspect(|log| {
        log.notifications()
            .to_session(observer.session_id().0)
            .event(zk_mock::proto::EventType::NodeDeleted)
            .cloned()
            .collect()
    });
    assert_eq!(notes.len(), 2);
    assert_eq!(notes[0].zxid, notes[1].zxid, "one closeSession transaction");
    let expired = mock
        .recorded()
        .sessions
        .iter()
        .find(|s| s.event == SessionEvent::Expired)
        .cloned()
        .unwrap();
    assert_eq!((expired.session.0, expired.zxid), (id, notes[0].zxid));
    wait_state(&victim, SessionState::Expired).await;
    assert_eq!(victim.check_stat("/").await, Err(Error::SessionExpired));
}

#[tokio::test]
async fn disconnect_keeps_the_session_and_expire_all_ends_every_one() {
    let mock = start_mock().await;
    let a = connect(&mock).await;
    let b = connect(&mock).await;
    assert!(mock.disconnect(a.session_id().0));
    assert!(get_after_reconnect(&a, "/").await.is_ok());
    assert_eq!(mock.session_ids().len(), 2);
    assert_eq!(mock.expire_all(), 2);
    wait_state(&a, SessionState::Expired).await;
    wait_state(&b, SessionState::Expired).await;
    assert!(mock.session_ids().is_empty());
}

#[tokio::test]
async fn expire_all_ends_the_oldest_session_first_every_run() {
    let mock = start_mock().await;
    let clients = clients_with_ephemerals(&mock, 8).await;
    let mut ids: Vec<i64> = clients.iter().map(|c| c.session_id().0).collect();
    ids.sort_unstable();
    assert_eq!(mock.expire_all(), 8);
    // One closeSession each, in the order the sessions were made: the
    // zxids, the deletes and the recorder's events the same every run.
    let expired: Vec<(i64, i64)> = mock.inspect(|log| {
        log.sessions()
            .filter(|s| s.event == SessionEvent::Expired)
            .map(|s| (s.session.0, s.zxid))
            .collect()
    });
    assert_eq!(expired.iter().map(|e| e.0).collect::<Vec<_>>(), ids);
    assert!(expired.windows(2).all(|w| w[0].1 < w[1].1), "{expired:?}");
}

#[tokio::test]
async fn on_the_manual_clock_a_silent_session_expires_only_when_time_is_advanced() {
    let mock = ZkMock::builder()
        .clock(ClockMode::Manual)
        .start()
        .await
        .unwrap();
    let c = raw(&mock).await; // 10 s timeout, never pings
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        mock.session_ids().contains(&c.session_id.into()),
        "wall time does not count"
    );
    // The deadline is the next tick (2000 ms) boundary after 10000 ms.
    mock.advance(Duration::from_millis(11_999));
    assert!(mock.session_ids().contains(&c.session_id.into()));
    mock.advance(Duration::from_millis(1));
    assert!(
        !mock.session_ids().contains(&c.session_id.into()),
        "expired when advance returned"
    );
    assert_eq!(mock.clock_ms(), 12_000);
}

#[tokio::test]
async fn the_recorder_counts_notifications_per_session_and_path_and_exports_json_lines() {
    let mock = start_mock().await;
    let writer = connect(&mock).await;
    let w1 = connect(&mock).await;
    let w2 = connect(&mock).await;
    writer.create("/r", b"", &persistent()).await.unwrap();
    let (_, _, a) = w1.get_and_watch_data("/r").await.unwrap();
    let (_, _, b) = w2.get_and_watch_data("/r").await.unwrap();
    let (_, c) = w2.check_and_watch_stat("/missing").await.unwrap();
    writer.set_data("/r", b"1", None).await.unwrap();
    a.changed().await;
    b.changed().await;
    drop(c);
    mock.wait_until(QUICK, |log| log.notifications().by_path("/r").count() == 2)
        .await
        .unwrap();
    let rec = mock.recorded();
    let to = |s: i64| rec.notifications.iter().to_session(s).count();
    assert_eq!(to(w1.session_id().0), 1);
    assert_eq!(to(writer.session_id().0), 0);
    assert_eq!(rec.per_path["/r"].notifications, 2);
    let kinds: Vec<_> = rec
        .watches
        .iter()
        .map(|w| (w.path.as_str(), w.kind))
        .collect();
    assert!(kinds.contains(&("/missing", zk_mock::record::WatchKind::Exist)));
    for line in rec.to_json_lines().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(v["type"].is_string() && v["seq"].is_u64());
    }
    mock.clear_recording();
    assert_eq!(mock.recorded().requests.count(), 0);
}

#[tokio::test]
async fn the_recorder_is_bounded_and_says_how_much_it_dropped() {
    let mock = ZkMock::builder()
        .recorder_capacity(10)
        .start()
        .await
        .unwrap();
    let mut c = raw(&mock).await;
    for _ in 0..25 {
        raw_stat(&mut c, "/").await;
    }
    let rec = mock.recorded();
    assert_eq!(rec.requests.count(), 10);
    assert!(rec.dropped >= 15);
    assert_eq!(
        rec.per_session[&c.session_id.into()].requests,
        25,
        "counters are not bounded"
    );
}

#[tokio::test]
async fn a_snapshot_shows_the_tree_sessions_and_watches_and_names_the_seed() {
    let mock = ZkMock::builder().seed(4242).start().await.unwrap();
    let c = connect(&mock).await;
    c.create("/snap", b"d", &ephemeral()).await.unwrap();
    let (_, _, _w) = c.get_and_watch_data("/snap").await.unwrap();
    let snap = mock.snapshot();
    let id = c.session_id().0;
    assert_eq!(snap.tree["/snap"].data.as_deref(), Some(&b"d"[..]));
    assert_eq!(snap.tree["/snap"].stat.ephemeral_owner, id);
    assert_eq!(
        snap.sessions[&id.into()].ephemerals,
        vec!["/snap".to_string()]
    );
    assert_eq!(snap.watches["/snap"].len(), 1);
    assert_eq!(snap.watch_count(), 1);
    assert!(snap.to_string().contains("seed 4242"));
    assert_eq!(mock.metrics().ephemerals, 1);
}

/// A mock with a 100 ms tick and a client with a 1 s session timeout: the
/// client gives up on a silent connection after 2/5 of that (400 ms).
async fn fast_session() -> (ZkMock, Client) {
    init_tracing();
    let mock = ZkMock::builder().tick_time(100).start().await.unwrap();
    let client = with_timeout(
        QUICK,
        "connect",
        Client::connector()
            .with_session_timeout(Duration::from_secs(1))
            .connect(&mock.connect_string()),
    )
    .await
    .unwrap();
    (mock, client)
}

#[tokio::test]
async fn a_delay_longer_than_two_fifths_of_the_timeout_makes_the_client_reconnect_to_its_session() {
    let (mock, client) = fast_session().await;
    let id = client.session_id().0;
    let _g = mock.rule(
        Rule::when()
            .op(OpFamily::GetData)
            .times(1)
            .delay(Duration::from_millis(1500)),
    );
    // zookeeper-client fails the pending request with its own "no response
    // from connection" error and drops the connection.
    let err = client.get_data("/").await.unwrap_err();
    assert!(
        err == Error::ConnectionLoss || err.to_string().contains("no response"),
        "{err}"
    );
    assert!(get_after_reconnect(&client, "/").await.is_ok());
    assert_eq!(
        client.session_id().0,
        id,
        "the server kept the session: pings kept arriving"
    );
    assert!(mock
        .recorded()
        .sessions
        .iter()
        .any(|s| s.session == id && s.event == SessionEvent::Reattached));
}

#[tokio::test]
async fn a_stall_that_outlasts_the_timeout_in_real_time_expires_the_session() {
    let (mock, client) = fast_session().await;
    client.create("/held", b"", &ephemeral()).await.unwrap();
    let id = client.session_id().0;
    let _stall = mock.stall(id).expect("a live session");
    wait_state(&client, SessionState::Expired).await;
    assert!(!mock.session_ids().contains(&id.into()));
    assert!(!mock.snapshot().tree.contains_key("/held"));
}

/// The change log: every create, setData and delete with its zxid and the
/// session that caused it, expiry deletions included, in commit order.
#[tokio::test]
async fn the_change_log_holds_every_tree_change_in_commit_order() {
    let zk = start_mock().await;
    let a = connect(&zk).await;
    let b = connect(&zk).await;
    let (sa, sb) = (a.session_id().0, b.session_id().0);
    a.create("/q", b"", &persistent()).await.unwrap();
    let (stat, seq) = b
        .create("/q/n-", b"x", &ephemeral_sequential())
        .await
        .unwrap();
    a.set_data("/q", b"y", None).await.unwrap();
    a.delete("/q/n-", None).await.unwrap_err(); // NoNode: no change
    assert!(zk.expire_session(sb));
    let changes = zk.changes();
    let seen: Vec<_> = changes
        .iter()
        .map(|c| (c.kind, c.path.as_str(), c.session.0))
        .collect();
    let created = format!("/q/n-{seq}");
    use zk_mock::record::ChangeKind::*;
    assert_eq!(
        seen,
        vec![
            (Created, "/q", sa),
            (Created, created.as_str(), sb),
            (DataChanged, "/q", sa),
            (Deleted, created.as_str(), sb),
        ]
    );
    assert_eq!(changes[1].zxid, stat.czxid);
    assert!(changes.windows(2).all(|w| w[0].zxid < w[1].zxid));
    let expired = zk
        .recorded()
        .sessions
        .iter()
        .find(|s| s.event == SessionEvent::Expired)
        .map(|s| s.zxid);
    assert_eq!(expired, Some(changes[3].zxid));
    assert!(zk.recorded().to_json_lines().contains(r#""type":"change""#));
}

// ---- expectations, verified when the guard drops ---------------------------

#[tokio::test]
async fn an_expectation_met_passes_silently() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    let once = mock
        .rule(
            Rule::when()
                .op(OpFamily::GetData)
                .path("/")
                .times(1)
                .fail(ErrorCode::NoAuth),
        )
        .expect(1);
    let any = mock
        .rule(Rule::when().op(OpFamily::Exists).delay(Duration::ZERO))
        .expect(2..);
    assert_eq!(c.get_data("/").await.err(), Some(Error::NoAuth));
    c.get_data("/").await.unwrap();
    c.check_stat("/").await.unwrap();
    c.check_stat("/").await.unwrap();
    c.check_stat("/").await.unwrap();
    assert_eq!(once.verify(), Ok(()));
    drop(once);
    drop(any);
}

#[tokio::test]
#[should_panic(
    expected = "was expected to fire 1 time, and fired 0 times (0 requests met its criteria)"
)]
async fn an_expectation_unmet_panics_naming_the_rule_and_the_counts() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    let _lost = mock
        .rule(
            Rule::when()
                .op(OpFamily::Create)
                .path_prefix("/locks/")
                .lose_reply(),
        )
        .expect(1);
    c.check_stat("/").await.unwrap();
}

#[tokio::test]
async fn the_message_names_the_rule_and_a_range() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    let g = mock
        .rule(
            Rule::when()
                .op(OpFamily::Exists)
                .path("/")
                .delay(Duration::ZERO),
        )
        .expect(..2);
    c.check_stat("/").await.unwrap();
    c.check_stat("/").await.unwrap();
    let message = g.verify().unwrap_err();
    assert!(message.contains("exists on / → delay 0ms"), "{message}");
    assert!(
        message.contains("expected to fire at most 1 time, and fired 2 times"),
        "{message}"
    );
    assert!(
        message.contains(&format!("seed {}", mock.seed())),
        "{message}"
    );
    g.forget(); // a forgotten guard is not verified
}

#[tokio::test]
#[should_panic(expected = "the test's own failure")]
async fn an_unmet_expectation_does_not_panic_while_the_test_is_panicking() {
    let mock = start_mock().await;
    let _never = mock.rule(Rule::when().op(OpFamily::Sync).stall()).expect(1);
    // Were the guard to panic again while unwinding, the process would abort.
    panic!("the test's own failure");
}

/// Requests of several sessions held by one gate are applied in the order
/// they were held when it opens, every time: sequential nodes are numbered
/// in that order. (With one channel shared by every waiter, tokio woke
/// them in an order drawn at random.)
#[tokio::test]
async fn an_opened_gate_lets_what_it_held_go_in_the_order_it_was_held() {
    let mock = start_mock().await;
    let mut setup = raw(&mock).await;
    raw_create_ok(&mut setup, "/q", 0).await;
    for round in 0..4 {
        let gate = mock.gate();
        let rule = mock.rule(creates().path_under("/q").hold_request(gate.id()));
        let mut clients = Vec::new();
        for i in 0..8 {
            let mut c = raw(&mock).await;
            let create = zk_mock::codec::Record::to_bytes(&create_req("/q/n-", None, 2));
            c.send_raw(&request_bytes(1, OpCode::Create as i32, &create))
                .await
                .unwrap();
            // Polled, not slept on: the rule fires as the server holds it.
            with_timeout(QUICK, "the create held", async {
                while rule.fired() != i + 1 {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            })
            .await;
            clients.push(c);
        }
        assert!(gate.open());
        let names = created_paths(&mut clients).await;
        let want: Vec<String> = (0..8)
            .map(|i| format!("/q/n-{:010}", round * 8 + i))
            .collect();
        assert_eq!(names, want, "round {round}");
    }
}

/// A held reply: the create is applied at once (another session sees the
/// node), its reply reaches the client only when the gate opens; a held
/// request is applied only when its gate opens.
#[tokio::test]
async fn a_hold_keeps_a_reply_or_a_request_until_its_gate_opens() {
    let mock = start_mock().await;
    let client = connect(&mock).await;
    let observer = connect(&mock).await;
    let gate = mock.gate();
    let rule = mock.rule(creates().path("/held-reply").hold_reply(gate.id()));
    let c2 = client.clone();
    let create = tokio::spawn(async move { c2.create("/held-reply", b"x", &persistent()).await });
    // Applied: the observer sees the node while the creator waits.
    let (_, created) = observer.check_and_watch_stat("/held-reply").await.unwrap();
    with_timeout(QUICK, "the create applied", created.changed()).await;
    assert!(observer.check_stat("/held-reply").await.unwrap().is_some());
    assert!(!create.is_finished(), "the reply is held");
    assert!(gate.open());
    let done = with_timeout(QUICK, "the held reply", create).await.unwrap();
    assert!(done.is_ok(), "{done:?}");
    assert_eq!(rule.fired(), 1);
    drop(rule);

    // A held request: nothing is applied until the gate opens; the reply
    // then carries the outcome of applying it then.
    let gate = mock.gate();
    let rule = mock.rule(
        Rule::when()
            .op(OpFamily::Delete)
            .path("/held-reply")
            .hold_request(gate.id()),
    );
    let c2 = client.clone();
    let delete = tokio::spawn(async move { c2.delete("/held-reply", None).await });
    // Polled, not slept on: the rule fires when the delete reaches the server.
    with_timeout(QUICK, "the delete held", async {
        while rule.fired() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    // The observer's own writes go on while the creator's delete waits.
    observer
        .create("/meanwhile", b"", &persistent())
        .await
        .unwrap();
    assert!(
        observer.check_stat("/held-reply").await.unwrap().is_some(),
        "not applied"
    );
    assert!(!delete.is_finished());
    drop(gate); // a dropped gate opens
    let done = with_timeout(QUICK, "the held request", delete)
        .await
        .unwrap();
    assert!(done.is_ok(), "{done:?}");
    assert!(observer.check_stat("/held-reply").await.unwrap().is_none());
    // An open gate holds nothing more.
    let zxid = mock.last_zxid();
    client
        .create("/held-reply", b"", &persistent())
        .await
        .unwrap();
    client.delete("/held-reply", None).await.unwrap();
    assert!(mock.last_zxid() > zxid);
}

/// An expiry whose cleanup waits for a gate: the session ends at once, its
/// ephemeral stays (owned by the dead session) until the gate opens, then
/// goes in one closeSession transaction and its watchers hear of it.
#[tokio::test]
async fn an_expiry_held_until_a_gate_keeps_the_dead_sessions_nodes_until_it_opens() {
    let mock = start_mock().await;
    let victim = connect(&mock).await;
    victim.create("/held", b"", &ephemeral()).await.unwrap();
    let id = victim.session_id().0;
    let observer = connect(&mock).await;
    let (_, _, gone) = observer.get_and_watch_data("/held").await.unwrap();
    let gate = mock.gate();
    assert!(mock.expire_session_until(id, gate.id()));
    wait_state(&victim, SessionState::Expired).await;
    assert!(!mock.session_ids().contains(&id.into()));
    let stat = observer
        .check_stat("/held")
        .await
        .unwrap()
        .expect("still there");
    assert_eq!(stat.ephemeral_owner, id);
    assert!(gate.open());
    assert!(!gate.open(), "once open, it stays open");
    let ev = with_timeout(QUICK, "NodeDeleted", gone.changed()).await;
    assert_eq!(ev.event_type, EventType::NodeDeleted);
    assert!(observer.check_stat("/held").await.unwrap().is_none());
    // A rule naming a gate that was never made is refused.
    let e = mock
        .try_rule(creates().hold_reply(zk_mock::fault::GateId(999)))
        .unwrap_err();
    assert!(e.contains("gate 999"), "{e}");
}

/// `ChaosMonkeyCnxnFactory`'s fault as two rules: the first create under
/// `/mylock/` is applied and its connection closed with no reply; for the
/// next 6 s of the session clock every request but `sync` has its
/// connection closed before it is applied; then the server serves again.
#[tokio::test]
async fn a_rule_after_another_locks_out_requests_for_its_window_on_the_session_clock() {
    let mock = ZkMock::builder()
        .clock(ClockMode::Manual)
        .start()
        .await
        .unwrap();
    let client = connect(&mock).await;
    client.create("/mylock", b"", &persistent()).await.unwrap();
    let chaos = mock.rule(creates().path_prefix("/mylock/").times(1).lose_reply());
    let all_but_sync: Vec<OpCode> = (-20..200)
        .filter_map(OpCode::from_i32)
        .filter(|o| !matches!(o, OpCode::Sync | OpCode::Ping))
        .collect();
    let mut lockout = Rule::when().after(chaos.id(), Duration::from_millis(6000));
    lockout.ops = all_but_sync;
    let lockout = mock.rule(lockout.disconnect());
    // A rule cannot follow one that is not installed.
    let err = mock
        .try_rule(Rule::when().after(999, Duration::from_secs(1)).disconnect())
        .unwrap_err();
    assert!(err.contains("rule 999 is not installed"), "{err}");

    assert_eq!(
        client.create("/mylock/a", b"", &persistent()).await.err(),
        Some(Error::ConnectionLoss)
    );
    assert!(mock.snapshot().tree.contains_key("/mylock/a"), "applied");
    // Locked out: the client reconnects, and each request closes the
    // connection again unapplied.
    mock.advance(Duration::from_millis(5000));
    for _ in 0..3 {
        let r = client.delete("/mylock/a", None).await;
        assert!(matches!(r, Err(Error::ConnectionLoss)), "locked out: {r:?}");
    }
    assert!(
        mock.snapshot().tree.contains_key("/mylock/a"),
        "not applied"
    );
    assert!(lockout.fired() >= 1);
    // The window closes 6 s after the first fault.
    mock.advance(Duration::from_millis(1000));
    with_timeout(QUICK, "the delete after the lockout", async {
        loop {
            match client.delete("/mylock/a", None).await {
                Err(Error::ConnectionLoss) => tokio::time::sleep(Duration::from_millis(20)).await,
                other => return other.unwrap(),
            }
        }
    })
    .await;
    assert!(!mock.snapshot().tree.contains_key("/mylock/a"));
    assert_eq!(chaos.fired(), 1);
}
