//! Hostile and broken connections: each gets ZooKeeper's reaction (the
//! connection closed, an error code), and nobody else notices.

use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use zk_mock::codec::{frame, Record};
use zk_mock::proto::{OpCode, RequestHeader};

use crate::support::{create_req, raw, raw_create_ok, raw_exists, start_mock};

fn connect_frame() -> Vec<u8> {
    frame(&crate::support::new_session(10_000, Some(false)).to_bytes()).to_vec()
}

fn create_frame(xid: i32, path: &str) -> Vec<u8> {
    let mut body = RequestHeader {
        xid,
        op_type: OpCode::Create as i32,
    }
    .to_bytes()
    .to_vec();
    body.extend_from_slice(&create_req(path, Some(b"x"), 0).to_bytes());
    frame(&body).to_vec()
}

/// A request cut in the middle, then the client goes: nothing of it is
/// applied, the connection is freed, the session lives on until its
/// timeout, and another client sees no difference.
#[tokio::test]
async fn a_request_cut_in_the_middle_is_never_applied() {
    let mock = start_mock().await;
    let mut other = raw(&mock).await;
    let mut c = raw(&mock).await;
    let session = c.session_id;
    let whole = create_frame(7, "/half");
    c.send_raw(&whole[..whole.len() / 2]).await.unwrap();
    assert_eq!(
        raw_exists(&mut other, "/half", false).await.header.err,
        -101
    );
    drop(c);
    // The server notices the close and frees the connection.
    for _ in 0..200 {
        if mock.connection_count() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(mock.connection_count(), 1);
    assert!(
        mock.session_ids().contains(&session.into()),
        "the session waits for its timeout"
    );
    assert_eq!(
        raw_exists(&mut other, "/half", false).await.header.err,
        -101
    );
    raw_create_ok(&mut other, "/after", 0).await;
}

/// A slow-loris client trickling its handshake and a request a few bytes
/// at a time is served when its bytes are complete, and blocks nobody
/// meanwhile.
#[tokio::test]
async fn a_client_trickling_bytes_is_served_and_blocks_nobody() {
    let mock = start_mock().await;
    let mut other = raw(&mock).await;
    let mut slow = TcpStream::connect(mock.addr()).await.unwrap();
    slow.set_nodelay(true).unwrap();
    let mut bytes = connect_frame();
    bytes.extend(create_frame(1, "/slow"));
    for (i, chunk) in bytes.chunks(3).enumerate() {
        slow.write_all(chunk).await.unwrap();
        if i % 4 == 0 {
            // Others are answered while the slow client is mid-frame.
            raw_create_ok(&mut other, &format!("/other-{i}"), 0).await;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Its handshake, then its create, were answered in order.
    let mut buf = bytes::BytesMut::new();
    let mut frames = Vec::new();
    while frames.len() < 2 {
        let n = tokio::time::timeout(
            Duration::from_secs(10),
            tokio::io::AsyncReadExt::read_buf(&mut slow, &mut buf),
        )
        .await
        .expect("the slow client is answered")
        .unwrap();
        assert!(n > 0, "closed after {} frames", frames.len());
        while let Some(f) = zk_mock::codec::split_frame(&mut buf, 1 << 20).unwrap() {
            frames.push(f);
        }
    }
    let resp = zk_mock::proto::ConnectResponse::decode(&frames[0]).unwrap();
    assert!(resp.session_id != 0);
    let (_, header) = zk_mock::proto::ReplyHeader::parse(&frames[1]).unwrap();
    assert_eq!((header.xid, header.err), (1, 0));
    assert_eq!(raw_exists(&mut other, "/slow", false).await.header.err, 0);
}

/// After closeSession the connection is closed: requests pipelined behind
/// it in the same write are not applied, and the session is gone.
#[tokio::test]
async fn requests_behind_close_session_are_not_applied() {
    let mock = start_mock().await;
    let mut other = raw(&mock).await;
    let mut c = raw(&mock).await;
    let session = c.session_id;
    let close = frame(
        &RequestHeader {
            xid: 1,
            op_type: OpCode::CloseSession as i32,
        }
        .to_bytes(),
    )
    .to_vec();
    let mut burst = close;
    burst.extend(create_frame(2, "/behind-close"));
    c.send_raw(&burst).await.unwrap();
    let mut replies = Vec::new();
    while let Ok(Some(f)) = c.read_frame().await {
        replies.push(f);
    }
    assert!(!replies.is_empty(), "the close is answered");
    assert!(!mock.session_ids().contains(&session.into()));
    assert_eq!(
        raw_exists(&mut other, "/behind-close", false)
            .await
            .header
            .err,
        -101
    );
}

/// Many connections that send garbage at once are each closed; the
/// server's other sessions keep working throughout.
#[tokio::test]
async fn a_crowd_of_garbage_connections_is_closed_and_harms_nobody() {
    let mock = start_mock().await;
    let mut other = raw(&mock).await;
    let garbage: [&[u8]; 5] = [
        b"\xff\xff\xff\xff",                  // length -1
        b"\x80\x00\x00\x00",                  // length i32::MIN
        b"\x7f\xff\xff\xffhello",             // 2 GB announced
        b"\x00\x00\x00\x02\x00\x00",          // a frame too short for a ConnectRequest
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", // an HTTP client on the wrong port
    ];
    let mut tasks = Vec::new();
    for i in 0..50 {
        let bytes = garbage[i % garbage.len()].to_vec();
        let addr = mock.addr();
        tasks.push(tokio::spawn(async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            let _ = s.write_all(&bytes).await;
            let mut buf = Vec::new();
            let r = tokio::time::timeout(
                Duration::from_secs(10),
                tokio::io::AsyncReadExt::read_to_end(&mut s, &mut buf),
            )
            .await;
            assert!(r.is_ok(), "connection {i} was not closed");
            buf
        }));
    }
    for (i, t) in tasks.into_iter().enumerate() {
        let answer = t.await.unwrap();
        assert!(answer.is_empty(), "connection {i} got {answer:?}");
    }
    assert!(mock.session_ids().contains(&other.session_id.into()));
    raw_create_ok(&mut other, "/still-here", 0).await;
    assert_eq!(
        mock.session_ids().len(),
        1,
        "no session came of the garbage"
    );
}

/// A client that asks for more than it reads: past the outbox limit its
/// connection is closed (its session lives on, as after any disconnect);
/// the server's memory for it is bounded and others are served throughout.
#[tokio::test]
async fn a_slow_reader_is_disconnected_not_buffered_without_limit() {
    let mock = zk_mock::ZkMock::builder()
        .max_outbox_bytes(1 << 20)
        .start()
        .await
        .unwrap();
    let mut other = raw(&mock).await;
    let big = vec![7u8; 200_000];
    let r = crate::support::raw_create(&mut other, "/big", Some(&big), 0).await;
    assert_eq!(r.header.err, 0);

    let mut slow = TcpStream::connect(mock.addr()).await.unwrap();
    slow.write_all(&connect_frame()).await.unwrap();
    let get = |xid: i32| {
        let mut body = RequestHeader {
            xid,
            op_type: OpCode::GetData as i32,
        }
        .to_bytes()
        .to_vec();
        body.extend_from_slice(&crate::support::path_watch("/big", false).to_bytes());
        frame(&body).to_vec()
    };
    // 400 reads of 200 kB (80 MB) that it never reads back. Writes may
    // fail once the server has closed the connection.
    for xid in 1..=400 {
        if slow.write_all(&get(xid)).await.is_err() {
            break;
        }
        if xid % 50 == 0 {
            assert_eq!(raw_exists(&mut other, "/big", false).await.header.err, 0);
        }
    }
    let mut closed = false;
    for _ in 0..500 {
        if mock.metrics().slow_readers_closed == 1 {
            closed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        closed,
        "the slow reader was not cut off: {:?}",
        mock.metrics()
    );
    // What it still has queued is dropped with the connection.
    assert!(
        mock.metrics().outbox_bytes < 2 << 20,
        "{:?}",
        mock.metrics()
    );
    assert_eq!(mock.session_ids().len(), 2, "its session lives on");
    assert_eq!(raw_exists(&mut other, "/big", false).await.header.err, 0);
}
