//! Sessions: expiry, keep-alive, re-attach, invalid re-attach, zxid-ahead
//! clients and timeout negotiation.

use std::time::{Duration, Instant};

use bytes::Bytes;
use zk_mock::client::RawClient;
use zk_mock::proto::{ConnectRequest, ConnectResponse, OpCode};
use zk_mock::ZkMock;
use zookeeper_client::{Client, Error, EventType, SessionState};

use crate::support::*;

fn reattach(session_id: i64, passwd: Bytes, timeout: i32) -> ConnectRequest {
    ConnectRequest {
        time_out: timeout,
        session_id,
        passwd: Some(passwd),
        read_only: Some(false),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_silent_session_expires_within_timeout_plus_a_tick_and_a_pinging_one_lives() {
    let mock = start_mock().await; // tickTime 2000
    let observer = connect(&mock).await;
    let mut silent = RawClient::connect(mock.addr(), 4000).await.unwrap();
    let mut alive = RawClient::connect(mock.addr(), 4000).await.unwrap();
    assert_eq!((silent.timeout, alive.timeout), (4000, 4000));
    raw_create_ok(&mut silent, "/lease", 1).await;
    raw_create_ok(&mut alive, "/alive", 1).await;
    let last_packet = Instant::now();
    let (_, _, gone) = observer.get_and_watch_data("/lease").await.unwrap();

    // The live session pings every second while we wait for the silent one to expire.
    let pinger = async {
        while last_packet.elapsed() < Duration::from_millis(7500) {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let r = alive.request_raw(OpCode::Ping as i32, &[]).await.unwrap();
            assert_eq!(r.header.xid, -2);
        }
    };
    let expiry = async {
        let ev = with_timeout(Duration::from_secs(10), "expiry", gone.changed()).await;
        (ev, last_packet.elapsed())
    };
    let ((ev, elapsed), ()) = tokio::join!(expiry, pinger);
    assert_eq!(ev, node_event(EventType::NodeDeleted, "/lease"));
    assert!(
        elapsed >= Duration::from_millis(3900) && elapsed <= Duration::from_millis(7000),
        "expired after {elapsed:?}, expected within 4 s .. 6 s of the last packet"
    );
    // The expired session's socket is closed with nothing sent first.
    assert_eq!(silent.read_frame().await.unwrap(), None);
    assert!(!mock.session_ids().contains(&silent.session_id.into()));
    // Its id and password now get the expired answer.
    let (_, resp) = RawClient::handshake(
        mock.addr(),
        &reattach(silent.session_id, silent.passwd.clone(), 4000),
    )
    .await
    .unwrap();
    assert_eq!(resp, Some(ConnectResponse::expired(Some(false))));
    // The pinging session outlived its 4 s timeout.
    assert!(mock.session_ids().contains(&alive.session_id.into()));
    assert_eq!(raw_exists(&mut alive, "/alive", false).await.header.err, 0);
    assert!(observer.check_stat("/alive").await.unwrap().is_some());
}

#[tokio::test]
async fn a_session_reattached_on_a_new_socket_closes_the_old_one() {
    let mock = start_mock().await;
    let mut old = raw(&mock).await;
    raw_create_ok(&mut old, "/mine", 1).await;
    let zxid = mock.last_zxid();
    let (mut new, resp) = RawClient::handshake(
        mock.addr(),
        &ConnectRequest {
            last_zxid_seen: old.last_zxid,
            ..reattach(old.session_id, old.passwd.clone(), 20_000)
        },
    )
    .await
    .unwrap();
    let resp = resp.expect("a valid re-attach is answered");
    assert_eq!(resp.session_id, old.session_id);
    assert_eq!(resp.passwd.as_ref(), Some(&old.passwd));
    assert_eq!(resp.time_out, 20_000, "the timeout is negotiated again");
    assert_eq!(old.read_frame().await.unwrap(), None, "old socket closed");
    assert_eq!(mock.last_zxid(), zxid, "a re-attach is not a transaction");
    assert_eq!(mock.session_ids(), [old.session_id]);
    let stat = raw_stat(&mut new, "/mine").await;
    assert_eq!(stat.ephemeral_owner, old.session_id);
    // The re-attached connection can use the session's ephemerals.
    let r = raw_set(&mut new, "/mine", b"v", 0).await;
    assert_eq!(r.header.err, 0);
}

#[tokio::test]
async fn a_wrong_password_gets_the_expired_answer_but_still_closes_the_old_connection() {
    let mock = start_mock().await;
    let mut old = raw(&mock).await;
    let (mut bad, resp) = RawClient::handshake(
        mock.addr(),
        &reattach(old.session_id, Bytes::from_static(&[0xaa; 16]), 10_000),
    )
    .await
    .unwrap();
    let resp = resp.expect("a wrong password is answered");
    assert_eq!(resp, ConnectResponse::expired(Some(false)));
    assert_eq!(resp.passwd.as_deref(), Some(&[0u8; 16][..]));
    assert_eq!(bad.read_frame().await.unwrap(), None, "then closed");
    assert_eq!(
        old.read_frame().await.unwrap(),
        None,
        "the old connection is closed first"
    );
    // The session itself is untouched: the right password still works.
    assert_eq!(mock.session_ids(), [old.session_id]);
    let (_, ok) = RawClient::handshake(
        mock.addr(),
        &reattach(old.session_id, old.passwd.clone(), 10_000),
    )
    .await
    .unwrap();
    assert_eq!(ok.unwrap().session_id, old.session_id);
}

#[tokio::test]
async fn an_unknown_session_id_gets_the_expired_answer_and_is_closed() {
    let mock = start_mock().await;
    let (mut c, resp) = RawClient::handshake(
        mock.addr(),
        &reattach(0x0123_4567_89ab_cdef, Bytes::from_static(&[0; 16]), 10_000),
    )
    .await
    .unwrap();
    let resp = resp.unwrap();
    assert_eq!((resp.time_out, resp.session_id), (0, 0));
    assert_eq!(resp.passwd.as_deref(), Some(&[0u8; 16][..]));
    assert_eq!(c.read_frame().await.unwrap(), None);
    assert!(mock.session_ids().is_empty());
    assert_eq!(mock.last_zxid(), 0);
}

#[tokio::test]
async fn a_client_ahead_of_the_server_is_closed_without_a_reply() {
    let mock = start_mock().await;
    let req = ConnectRequest {
        last_zxid_seen: 100,
        time_out: 10_000,
        passwd: Some(Bytes::from_static(&[0; 16])),
        read_only: Some(false),
        ..Default::default()
    };
    let (_, resp) = RawClient::handshake(mock.addr(), &req).await.unwrap();
    assert_eq!(resp, None);
    assert!(mock.session_ids().is_empty());
    assert_eq!(mock.last_zxid(), 0);
    // A client exactly at the server's zxid is fine.
    let c = raw(&mock).await; // zxid 1
    let (_, resp) = RawClient::handshake(
        mock.addr(),
        &ConnectRequest {
            last_zxid_seen: 1,
            ..req.clone()
        },
    )
    .await
    .unwrap();
    assert!(resp.unwrap().session_id != 0);
    // And a re-attach that is ahead is refused too, leaving the old connection alone.
    let (_, resp) = RawClient::handshake(
        mock.addr(),
        &ConnectRequest {
            last_zxid_seen: 50,
            ..reattach(c.session_id, c.passwd.clone(), 10_000)
        },
    )
    .await
    .unwrap();
    assert_eq!(resp, None);
    let mut c = c;
    assert_eq!(raw_exists(&mut c, "/", false).await.header.err, 0);
}

#[tokio::test]
async fn requested_timeouts_are_clamped_to_two_and_twenty_ticks() {
    let mock = start_mock().await;
    for (asked, got) in [
        (1, 4000),
        (3999, 4000),
        (4000, 4000),
        (10_000, 10_000),
        (40_000, 40_000),
        (100_000, 40_000),
        (0, 4000),
        (-5, 4000),
    ] {
        let c = RawClient::connect(mock.addr(), asked).await.unwrap();
        assert_eq!(c.timeout, got, "asked {asked}");
    }
    let custom = ZkMock::builder().tick_time(500).start().await.unwrap();
    for (asked, got) in [(1, 1000), (5000, 5000), (60_000, 10_000)] {
        let c = RawClient::connect(custom.addr(), asked).await.unwrap();
        assert_eq!(c.timeout, got, "tick 500, asked {asked}");
    }
    let bounded = ZkMock::builder()
        .min_session_timeout(6000)
        .max_session_timeout(8000)
        .start()
        .await
        .unwrap();
    for (asked, got) in [(1, 6000), (7000, 7000), (9000, 8000)] {
        let c = RawClient::connect(bounded.addr(), asked).await.unwrap();
        assert_eq!(c.timeout, got, "6000..=8000, asked {asked}");
    }
}

#[tokio::test]
async fn zookeeper_client_sees_the_negotiated_timeout() {
    let mock = start_mock().await;
    let short = Client::connector()
        .with_session_timeout(Duration::from_millis(1000))
        .connect(&mock.connect_string())
        .await
        .unwrap();
    assert_eq!(short.session_timeout(), Duration::from_millis(4000));
    let long = Client::connector()
        .with_session_timeout(Duration::from_secs(100))
        .connect(&mock.connect_string())
        .await
        .unwrap();
    assert_eq!(long.session_timeout(), Duration::from_secs(40));
}

#[tokio::test]
async fn a_detached_session_is_reattached_by_a_new_client_with_its_ephemerals() {
    let mock = start_mock().await;
    let first = Client::connector()
        .with_detached()
        .connect(&mock.connect_string())
        .await
        .unwrap();
    first.create("/kept", b"", &ephemeral()).await.unwrap();
    let id = first.session_id();
    let info = first.session().clone();
    drop(first);
    let second = Client::connector()
        .with_session(info)
        .connect(&mock.connect_string())
        .await
        .unwrap();
    assert_eq!(second.session_id(), id);
    let stat = second.check_stat("/kept").await.unwrap().unwrap();
    assert_eq!(stat.ephemeral_owner, id.0);
    assert_eq!(second.list_ephemerals("/").await.unwrap(), ["/kept"]);
    assert_eq!(mock.session_ids(), [id.0]);
}

#[tokio::test]
async fn reattaching_a_closed_session_fails_with_session_expired() {
    let mock = start_mock().await;
    let observer = connect(&mock).await;
    let owner = connect(&mock).await;
    owner.create("/o", b"", &ephemeral()).await.unwrap();
    let info = owner.session().clone();
    let (_, _, w) = observer.get_and_watch_data("/o").await.unwrap();
    drop(owner);
    with_timeout(QUICK, "closeSession", w.changed()).await;
    let r = with_timeout(
        QUICK,
        "expired connect",
        Client::connector()
            .with_session(info)
            .connect(&mock.connect_string()),
    )
    .await;
    assert_eq!(r.err(), Some(Error::SessionExpired));
}

#[tokio::test]
async fn a_session_closed_by_a_second_client_shows_up_as_expired_in_the_first() {
    let mock = start_mock().await;
    let proxy = Proxy::start(mock.addr()).await;
    let victim = connect_to(&proxy.connect_string()).await;
    victim.create("/v", b"", &ephemeral()).await.unwrap();
    let observer = connect(&mock).await;
    let (_, _, w) = observer.get_and_watch_data("/v").await.unwrap();
    let mut state = victim.state_watcher();

    proxy.pause_and_cut();
    let killer = Client::connector()
        .with_session(victim.session().clone())
        .connect(&mock.connect_string())
        .await
        .unwrap();
    assert_eq!(killer.session_id(), victim.session_id());
    drop(killer); // closeSession for the shared session
    let ev = with_timeout(QUICK, "ephemeral deleted", w.changed()).await;
    assert_eq!(ev, node_event(EventType::NodeDeleted, "/v"));
    proxy.resume();
    let expired = with_timeout(QUICK, "Expired", async {
        loop {
            let s = state.changed().await;
            if s == SessionState::Expired {
                return s;
            }
        }
    })
    .await;
    assert_eq!(expired, SessionState::Expired);
    assert_eq!(victim.check_stat("/").await, Err(Error::SessionExpired));
}

#[tokio::test]
async fn a_real_client_cut_off_past_its_timeout_is_told_its_session_expired() {
    // A short tick makes the server expire the session well before the
    // client's own 7/5 x timeout deadline, so the Expired comes from the
    // server's answer to the re-attach.
    init_tracing();
    let mock = ZkMock::builder()
        .tick_time(200)
        .min_session_timeout(4000)
        .start()
        .await
        .unwrap();
    let proxy = Proxy::start(mock.addr()).await;
    let client = Client::connector()
        .with_session_timeout(Duration::from_secs(4))
        .connect(&proxy.connect_string())
        .await
        .unwrap();
    assert_eq!(client.session_timeout(), Duration::from_secs(4));
    client.create("/lease", b"", &ephemeral()).await.unwrap();
    let observer = connect(&mock).await;
    let (_, _, gone) = observer.get_and_watch_data("/lease").await.unwrap();
    let mut state = client.state_watcher();

    let cut = Instant::now();
    proxy.pause_and_cut();
    let ev = with_timeout(Duration::from_secs(8), "server-side expiry", gone.changed()).await;
    assert_eq!(ev, node_event(EventType::NodeDeleted, "/lease"));
    let elapsed = cut.elapsed();
    assert!(
        elapsed >= Duration::from_millis(3500) && elapsed <= Duration::from_millis(5500),
        "expired {elapsed:?} after the cut"
    );
    assert!(!mock.session_ids().contains(&client.session_id().0.into()));
    proxy.resume();
    with_timeout(QUICK, "Expired", async {
        while state.changed().await != SessionState::Expired {}
    })
    .await;
    assert_eq!(client.check_stat("/").await, Err(Error::SessionExpired));
}

#[tokio::test]
async fn an_unknown_auth_scheme_fails_the_real_clients_session_but_not_the_servers() {
    let mock = start_mock().await;
    let client = connect(&mock).await;
    let mut state = client.state_watcher();
    assert_eq!(client.auth("nosuch", b"x").await, Err(Error::AuthFailed));
    assert_eq!(
        with_timeout(QUICK, "AuthFailed", state.changed()).await,
        SessionState::AuthFailed
    );
    // The server closed the connection but keeps the session until it times out.
    assert_eq!(mock.session_ids(), [client.session_id().0]);
}
