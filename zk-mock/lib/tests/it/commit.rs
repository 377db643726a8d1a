//! The commit latency: a write (and a new session's handshake) is applied
//! and answered only once the transaction log's sync of its batch is over,
//! and what its connection sends after it waits behind it. The connect
//! latency: a handshake is answered no sooner than it after it is read.
//! The request latency: every request is answered no sooner than it after
//! it is read, in its connection's order.
//! Each test checks what a latency guarantees (a lower bound, an order,
//! what others see meanwhile), never how fast the rest is.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use zk_mock::client::RawClient;
use zk_mock::codec::Record;
use zk_mock::proto::ConnectRequest;
use zk_mock::proto::OpCode;
use zk_mock::{ZkMock, ZkMockBuilder};

use crate::support::*;

async fn mock_with(latency: Duration) -> ZkMock {
    start(ZkMock::builder().commit_latency(latency)).await
}

async fn start(builder: ZkMockBuilder) -> ZkMock {
    init_tracing();
    builder.start().await.expect("mock starts")
}

#[tokio::test]
async fn a_new_session_and_each_write_wait_for_their_sync() {
    let latency = Duration::from_millis(150);
    let mock = mock_with(latency).await;
    let begun = Instant::now();
    let client = connect(&mock).await;
    assert!(
        begun.elapsed() >= latency,
        "the handshake was answered before its createSession was synced"
    );
    let begun = Instant::now();
    client.create("/a", b"1", &persistent()).await.unwrap();
    assert!(
        begun.elapsed() >= latency,
        "create answered before its sync"
    );
    let begun = Instant::now();
    client.set_data("/a", b"2", None).await.unwrap();
    assert!(
        begun.elapsed() >= latency,
        "setData answered before its sync"
    );
    // A failed write is a txn too (an error txn), and waits as well.
    let begun = Instant::now();
    let err = client.create("/a", b"", &persistent()).await.unwrap_err();
    assert!(
        matches!(err, zookeeper_client::Error::NodeExists),
        "{err:?}"
    );
    assert!(
        begun.elapsed() >= latency,
        "a failed create answered before its sync"
    );
    assert_eq!(client.get_data("/a").await.unwrap().0, b"2");
    // A reconfig is a txn as well (here a failed one: RECONFIGDISABLED on a
    // single server), and waits for its sync like any write.
    let mut c = raw(&mock).await;
    // ReconfigRequest{joiningServers, leavingServers, newMembers: ustring; curConfigId: long}
    let mut body = Vec::new();
    for _ in 0..3 {
        body.extend_from_slice(&0i32.to_be_bytes());
    }
    body.extend_from_slice(&(-1i64).to_be_bytes());
    let begun = Instant::now();
    let r = c.request_raw(OpCode::Reconfig as i32, &body).await.unwrap();
    assert_eq!(r.header.err, -123, "RECONFIGDISABLED");
    assert!(
        begun.elapsed() >= latency,
        "a reconfig answered before its sync"
    );
}

#[tokio::test]
async fn requests_pipelined_behind_a_write_wait_for_it_and_see_it() {
    let latency = Duration::from_millis(150);
    let mock = mock_with(latency).await;
    let mut c = raw(&mock).await;
    let mut batch = request_bytes(
        1,
        OpCode::Create as i32,
        &create_req("/p", Some(b"x"), 0).to_bytes(),
    );
    batch.extend(request_bytes(
        2,
        OpCode::GetData as i32,
        &path_watch("/p", false).to_bytes(),
    ));
    batch.extend(request_bytes(-2, OpCode::Ping as i32, &[]));
    let begun = Instant::now();
    c.send_raw(&batch).await.unwrap();
    let mut got = Vec::new();
    for _ in 0..3 {
        let r = c.next_reply().await.unwrap().expect("a reply");
        got.push((r.header.xid, r.header.err));
    }
    assert!(begun.elapsed() >= latency);
    assert_eq!(got, [(1, 0), (2, 0), (-2, 0)], "answered in order");
}

#[tokio::test]
async fn a_write_not_yet_synced_is_invisible_to_other_sessions_and_unanswered() {
    // A sync that does not end during the test: what the write's session
    // and the others see meanwhile. (The sessions are made before: a
    // handshake waits for its createSession's sync too.)
    let mock = mock_with(Duration::ZERO).await;
    let mut other = raw(&mock).await;
    let mut writer = raw(&mock).await;
    mock.set_commit_latency(Duration::from_secs(3600));
    send_create_until_read(&mock, &mut writer, "/w").await;
    let r = raw_exists(&mut other, "/w", false).await;
    assert_eq!(
        r.header.err, -101,
        "another session saw a write before its sync"
    );
    assert!(!mock.snapshot().tree.contains_key("/w"));
    writer.set_read_timeout(Duration::from_millis(200));
    assert!(
        writer.read_frame().await.is_err(),
        "the write was answered before its sync"
    );
}

#[tokio::test]
async fn the_latency_changes_at_run_time() {
    let mock = mock_with(Duration::ZERO).await;
    let client = connect(&mock).await;
    let latency = Duration::from_millis(150);
    mock.set_commit_latency(latency);
    let begun = Instant::now();
    client.create("/late", b"", &persistent()).await.unwrap();
    assert!(begun.elapsed() >= latency);
    mock.set_commit_latency(Duration::ZERO);
    client.create("/now", b"", &persistent()).await.unwrap();
    assert!(mock.snapshot().tree.contains_key("/now"));
}

/// Sends a create of `path` on `writer` without waiting for its reply, and
/// returns once the server has read it.
async fn send_create_until_read(mock: &ZkMock, writer: &mut RawClient, path: &str) {
    let create = request_bytes(
        7,
        OpCode::Create as i32,
        &create_req(path, None, 0).to_bytes(),
    );
    send_until_read(mock, writer, &create, 1).await;
}

/// The writes of several sessions that share a sync are applied in the
/// order they reached the log, as ZooKeeper gives them their zxids in that
/// order: sequential nodes are numbered in it, every run. (One channel
/// watched by every waiting write woke them in an order tokio drew at
/// random.)
#[tokio::test]
async fn the_writes_that_share_a_sync_are_applied_in_the_order_they_came() {
    let mock = mock_with(Duration::ZERO).await;
    let mut setup = raw(&mock).await;
    raw_create_ok(&mut setup, "/q", 0).await;
    let mut writers = Vec::new();
    for _ in 0..8 {
        writers.push(raw(&mock).await);
    }
    // The first write starts a sync; those read while it runs share the next.
    mock.set_commit_latency(Duration::from_millis(300));
    for w in &mut writers {
        let create = request_bytes(
            7,
            OpCode::Create as i32,
            &create_req("/q/n-", None, 2).to_bytes(),
        );
        send_until_read(&mock, w, &create, 1).await;
    }
    let names = created_paths(&mut writers).await;
    let want: Vec<String> = (0..8).map(|i| format!("/q/n-{i:010}")).collect();
    assert_eq!(names, want);
}

#[tokio::test]
async fn a_write_whose_client_goes_before_its_sync_is_still_applied() {
    let mock = mock_with(Duration::ZERO).await;
    let mut writer = raw(&mock).await;
    mock.set_commit_latency(Duration::from_secs(3600));
    send_create_until_read(&mock, &mut writer, "/left").await;
    assert!(!mock.snapshot().tree.contains_key("/left"));
    // The server read it: ZooKeeper's pipeline applies it though the
    // client is gone.
    drop(writer);
    with_timeout(QUICK, "the create to be applied", async {
        while !mock.snapshot().tree.contains_key("/left") {
            tokio::task::yield_now().await;
        }
    })
    .await;
}

#[tokio::test]
async fn each_handshake_waits_the_connect_latency_and_what_follows_it_waits_too() {
    let latency = Duration::from_millis(150);
    let mock = start(ZkMock::builder().connect_latency(latency)).await;
    let begun = Instant::now();
    let first = RawClient::connect(mock.addr(), 30_000).await.unwrap();
    assert!(
        begun.elapsed() >= latency,
        "a new session's handshake was answered within the connect latency"
    );
    // A reconnect with the session's id and password (no txn, the same
    // latency), and an exists pipelined behind it in the same write.
    let req = ConnectRequest {
        time_out: 30_000,
        session_id: first.session_id,
        passwd: Some(first.passwd.clone()),
        read_only: Some(false),
        ..Default::default()
    };
    let body = req.to_bytes();
    let mut bytes = (body.len() as i32).to_be_bytes().to_vec();
    bytes.extend_from_slice(&body);
    bytes.extend(request_bytes(
        1,
        OpCode::Exists as i32,
        &path_watch("/", false).to_bytes(),
    ));
    let mut stream = tokio::net::TcpStream::connect(mock.addr()).await.unwrap();
    let begun = Instant::now();
    stream.write_all(&bytes).await.unwrap();
    let resp = read_frame(&mut stream).await;
    assert!(
        begun.elapsed() >= latency,
        "a reconnect was answered within the connect latency"
    );
    let resp = zk_mock::proto::ConnectResponse::decode(&resp).unwrap();
    assert_eq!(resp.session_id, first.session_id, "the session was resumed");
    // Then the exists: xid 1, no error.
    let reply = read_frame(&mut stream).await;
    assert_eq!(&reply[0..4], &1i32.to_be_bytes(), "the exists's xid");
    assert_eq!(&reply[12..16], &0i32.to_be_bytes(), "the exists's error");
}

/// One length-prefixed frame's body, read from a plain socket.
async fn read_frame(stream: &mut tokio::net::TcpStream) -> Vec<u8> {
    with_timeout(QUICK, "a frame", async {
        let mut len = [0; 4];
        stream.read_exact(&mut len).await.unwrap();
        let mut body = vec![0; i32::from_be_bytes(len) as usize];
        stream.read_exact(&mut body).await.unwrap();
        body
    })
    .await
}

#[tokio::test]
async fn the_connect_latency_changes_at_run_time_and_counts_with_the_sync() {
    let mock = mock_with(Duration::ZERO).await;
    let latency = Duration::from_millis(150);
    mock.set_connect_latency(latency);
    let begun = Instant::now();
    let client = connect(&mock).await;
    assert!(begun.elapsed() >= latency);
    // With a commit latency too, both count from the ConnectRequest's read:
    // the handshake waits the longer of the two.
    mock.set_commit_latency(Duration::from_millis(50));
    let begun = Instant::now();
    let _second = connect(&mock).await;
    assert!(begun.elapsed() >= latency);
    mock.set_connect_latency(Duration::ZERO);
    mock.set_commit_latency(Duration::ZERO);
    let _third = connect(&mock).await;
    client.create("/now", b"", &persistent()).await.unwrap();
    assert!(mock.snapshot().tree.contains_key("/now"));
}

#[tokio::test]
async fn every_request_waits_for_the_request_latency_in_order() {
    let latency = Duration::from_millis(150);
    let mock = start(ZkMock::builder().request_latency(latency)).await;
    let begun = Instant::now();
    let client = connect(&mock).await;
    assert!(begun.elapsed() >= latency, "the handshake answered early");
    let begun = Instant::now();
    client.create("/r", b"1", &persistent()).await.unwrap();
    assert!(begun.elapsed() >= latency, "a write answered early");
    let begun = Instant::now();
    assert!(client.check_stat("/r").await.unwrap().is_some());
    assert!(begun.elapsed() >= latency, "a read answered early");
    // Pipelined reads: answered in order, and none before the latency.
    let mut c = raw(&mock).await;
    let mut batch = Vec::new();
    for xid in 1..=5 {
        batch.extend(request_bytes(
            xid,
            OpCode::Exists as i32,
            &path_watch("/r", false).to_bytes(),
        ));
    }
    let begun = Instant::now();
    c.send_raw(&batch).await.unwrap();
    for xid in 1..=5 {
        let r = c.next_reply().await.unwrap().expect("a reply");
        assert_eq!((r.header.xid, r.header.err), (xid, 0));
    }
    assert!(begun.elapsed() >= latency);
}
