//! Raw frames: bad op codes, bad lengths, short and malformed bodies,
//! pipelining, special xids and the notification layout.

use zk_mock::client::RawClient;
use zk_mock::codec::Record;
use zk_mock::proto::{AuthPacket, CheckVersionRequest, OpCode, SetDataRequest, WhoAmIResponse};
use zk_mock::ZkMock;

use crate::support::*;

const UNIMPLEMENTED: i32 = -6;
const MARSHALLINGERROR: i32 = -5;

#[tokio::test]
async fn an_unknown_op_code_is_unimplemented_with_zxid_minus_one_then_closed() {
    let mock = start_mock().await;
    // (20 deleteContainer and -10 createSession are valid ops on 3.8.0.)
    for op in [999, 10, 0, 1016, 23, 108] {
        let mut c = raw(&mock).await;
        let r = c.request_with_xid(7, op, &[]).await.unwrap();
        assert_eq!(
            (r.header.xid, r.header.zxid, r.header.err),
            (7, -1, UNIMPLEMENTED),
            "op {op}"
        );
        assert!(r.body.is_empty());
        assert_eq!(c.read_frame().await.unwrap(), None, "op {op}: closed after");
        assert!(
            mock.session_ids().contains(&c.session_id.into()),
            "the session survives"
        );
    }
}

#[tokio::test]
async fn check_outside_multi_is_a_transaction_whose_failures_are_answered_on_3_8_0() {
    // 3.8.6 answers UNIMPLEMENTED and closes; the 3.8.0 server this mock
    // follows treats a standalone check as a transaction.
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    raw_create_ok(&mut c, "/c", 0).await;
    let check = |path: &str, version: i32| {
        CheckVersionRequest {
            path: path.into(),
            version,
        }
        .to_bytes()
    };
    let zxid = mock.last_zxid();
    let r = c
        .request_raw(OpCode::Check as i32, &check("/missing", 0))
        .await
        .unwrap();
    assert_eq!((r.header.zxid, r.header.err), (zxid + 1, -101));
    let r = c
        .request_raw(OpCode::Check as i32, &check("/c", 4))
        .await
        .unwrap();
    assert_eq!((r.header.zxid, r.header.err), (zxid + 2, -103));
    // A successful check gets no reply at all; the next request is answered.
    let mut batch = request_bytes(50, OpCode::Check as i32, &check("/c", 0));
    batch.extend(request_bytes(
        51,
        OpCode::Exists as i32,
        &path_watch("/c", false).to_bytes(),
    ));
    c.send_raw(&batch).await.unwrap();
    let r = c.next_reply().await.unwrap().expect("the exists reply");
    assert_eq!(
        (r.header.xid, r.header.zxid, r.header.err),
        (51, zxid + 3, 0)
    );
    assert_eq!(mock.last_zxid(), zxid + 3);
}

#[tokio::test]
async fn an_oversize_length_prefix_closes_only_that_connection_without_a_reply() {
    let mock = start_mock().await;
    let mut other = raw(&mock).await;
    for len in [0x7fff_ffffu32, 0x0010_0000, 0xffff_ffff, 0x8000_0000] {
        let mut c = raw(&mock).await;
        c.send_raw(&len.to_be_bytes()).await.unwrap();
        // The server may already have closed: a failed write is fine too.
        let _ = c.send_raw(&[0; 64]).await;
        assert_eq!(c.read_frame().await.unwrap(), None, "len {len:#x}");
        assert!(
            mock.session_ids().contains(&c.session_id.into()),
            "session kept"
        );
        assert_eq!(raw_exists(&mut other, "/", false).await.header.err, 0);
    }
}

#[tokio::test]
async fn a_frame_of_exactly_jute_maxbuffer_is_accepted() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    raw_create_ok(&mut c, "/big", 0).await;
    // header 8 + path (4 + 4) + data (4 + n) + version 4 = 0xfffff
    let n = 0xfffff - 8 - 8 - 4 - 4;
    let body = SetDataRequest {
        path: "/big".into(),
        data: Some(vec![7u8; n].into()),
        version: -1,
    }
    .to_bytes();
    assert_eq!(body.len() + 8, 0xfffff);
    let r = c.request_raw(OpCode::SetData as i32, &body).await.unwrap();
    assert_eq!(r.header.err, 0);
    assert_eq!(raw_stat(&mut c, "/big").await.data_length as usize, n);
    // One byte more is refused.
    let body = SetDataRequest {
        path: "/big".into(),
        data: Some(vec![7u8; n + 1].into()),
        version: -1,
    }
    .to_bytes();
    // The server closes as soon as it has read the length prefix, so writing
    // the rest of the megabyte may already fail (EPIPE/ECONNRESET): either
    // way the connection ends with no reply.
    match c
        .send_raw(&request_bytes(99, OpCode::SetData as i32, &body))
        .await
    {
        Ok(()) => assert_eq!(c.read_frame().await.unwrap(), None),
        Err(e) => assert!(
            matches!(
                e.kind(),
                std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
            ),
            "{e}"
        ),
    }
}

#[tokio::test]
async fn the_configured_max_packet_size_is_enforced() {
    init_tracing();
    let mock = ZkMock::builder()
        .max_packet_size(200)
        .start()
        .await
        .unwrap();
    let mut c = RawClient::connect(mock.addr(), 10_000).await.unwrap();
    raw_create_ok(&mut c, "/small", 0).await;
    c.send_raw(&request_bytes(5, OpCode::SetData as i32, &[0; 201 - 8]))
        .await
        .unwrap();
    assert_eq!(c.read_frame().await.unwrap(), None);
}

#[tokio::test]
async fn a_frame_too_short_for_a_request_header_closes_the_connection() {
    let mock = start_mock().await;
    for body in [&[][..], &[0, 0, 0, 1][..], &[0, 0, 0, 1, 0, 0, 0][..]] {
        let mut c = raw(&mock).await;
        c.send_frame(body).await.unwrap();
        assert_eq!(c.read_frame().await.unwrap(), None, "{} bytes", body.len());
    }
}

#[tokio::test]
async fn a_malformed_read_body_is_a_marshalling_error_and_the_connection_lives() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    let zxid = mock.last_zxid();
    // getData whose path claims 9 bytes but carries one.
    let r = c
        .request_raw(OpCode::GetData as i32, &[0, 0, 0, 9, b'/'])
        .await
        .unwrap();
    assert_eq!((r.header.err, r.header.zxid), (MARSHALLINGERROR, zxid));
    assert!(r.body.is_empty());
    assert_eq!(mock.last_zxid(), zxid, "a read consumes no zxid");
    assert_eq!(raw_exists(&mut c, "/", false).await.header.err, 0);
}

#[tokio::test]
async fn a_malformed_write_body_is_a_marshalling_error_that_consumes_a_zxid() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    let zxid = mock.last_zxid();
    let r = c
        .request_raw(OpCode::Create as i32, &[0, 0, 0, 2, b'/'])
        .await
        .unwrap();
    assert_eq!((r.header.err, r.header.zxid), (MARSHALLINGERROR, zxid + 1));
    assert_eq!(raw_exists(&mut c, "/", false).await.header.err, 0);
}

#[tokio::test]
async fn pipelined_requests_in_one_write_are_answered_in_order() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    let mut batch = Vec::new();
    batch.extend(request_bytes(
        10,
        OpCode::Create as i32,
        &create_req("/p1", None, 0).to_bytes(),
    ));
    batch.extend(request_bytes(
        11,
        OpCode::GetData as i32,
        &path_watch("/p1", false).to_bytes(),
    ));
    batch.extend(request_bytes(
        12,
        OpCode::Create as i32,
        &create_req("/p1", None, 0).to_bytes(),
    ));
    batch.extend(request_bytes(
        13,
        OpCode::Exists as i32,
        &path_watch("/nope", false).to_bytes(),
    ));
    batch.extend(request_bytes(-2, OpCode::Ping as i32, &[]));
    batch.extend(request_bytes(
        14,
        OpCode::Sync as i32,
        &path_req("/p1").to_bytes(),
    ));
    c.send_raw(&batch).await.unwrap();
    let mut got = Vec::new();
    for _ in 0..6 {
        let r = c.next_reply().await.unwrap().expect("reply");
        got.push((r.header.xid, r.header.zxid, r.header.err));
    }
    assert_eq!(
        got,
        [
            (10, 2, 0),
            (11, 2, 0),
            (12, 3, -110),
            (13, 3, -101),
            (-2, 3, 0),
            (14, 3, 0)
        ]
    );
}

#[tokio::test]
async fn xids_are_echoed_whatever_their_value_and_pings_always_answer_minus_two() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    for xid in [i32::MAX, 1_700_000_000, 0, -8, -100] {
        let r = c
            .request_with_xid(
                xid,
                OpCode::Exists as i32,
                &path_watch("/", false).to_bytes(),
            )
            .await
            .unwrap();
        assert_eq!(r.header.xid, xid);
    }
    // A ping sent with an ordinary xid is still answered with -2.
    c.send_raw(&request_bytes(77, OpCode::Ping as i32, &[]))
        .await
        .unwrap();
    let r = c.next_reply().await.unwrap().unwrap();
    assert_eq!((r.header.xid, r.header.zxid, r.header.err), (-2, 1, 0));
    assert!(r.body.is_empty());
}

#[tokio::test]
async fn a_notification_has_xid_minus_one_zxid_minus_one_and_a_watcher_event_body() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    raw_create_ok(&mut c, "/n", 0).await;
    raw_get(&mut c, "/n", true).await;
    let mut other = raw(&mock).await;
    raw_set(&mut other, "/n", b"", -1).await;
    let frame = c.read_frame().await.unwrap().unwrap();
    let mut expect = vec![0xff; 12];
    expect.extend_from_slice(&[0, 0, 0, 0]); // err
    expect.extend_from_slice(&3i32.to_be_bytes()); // NodeDataChanged
    expect.extend_from_slice(&3i32.to_be_bytes()); // SyncConnected
    expect.extend_from_slice(&2i32.to_be_bytes());
    expect.extend_from_slice(b"/n");
    assert_eq!(&frame[..], &expect[..]);
}

#[tokio::test]
async fn digest_auth_is_answered_with_xid_minus_four_and_zxid_zero() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    raw_create_ok(&mut c, "/z", 0).await;
    let body = AuthPacket {
        auth_type: 0,
        scheme: "digest".into(),
        auth: Some(bytes::Bytes::from_static(b"alice:secret")),
    }
    .to_bytes();
    let r = c
        .request_with_xid(-4, OpCode::Auth as i32, &body)
        .await
        .unwrap();
    assert_eq!((r.header.xid, r.header.zxid, r.header.err), (-4, 0, 0));
    let who = c.request_raw(OpCode::WhoAmI as i32, &[]).await.unwrap();
    assert_eq!(who.header.err, 0);
    let who: WhoAmIResponse = who.decode().unwrap();
    let mut ids: Vec<(String, String)> = who
        .client_info
        .iter()
        .map(|i| (i.auth_scheme.clone(), i.user.clone()))
        .collect();
    ids.sort();
    assert_eq!(
        ids,
        [
            ("digest".to_string(), "alice".to_string()),
            ("ip".to_string(), "127.0.0.1".to_string())
        ]
    );
}

#[tokio::test]
async fn auth_with_an_unknown_scheme_fails_and_closes_the_connection() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    let body = AuthPacket {
        auth_type: 0,
        scheme: "nosuch".into(),
        auth: Some(bytes::Bytes::from_static(b"x")),
    }
    .to_bytes();
    let r = c
        .request_with_xid(-4, OpCode::Auth as i32, &body)
        .await
        .unwrap();
    assert_eq!((r.header.xid, r.header.zxid, r.header.err), (-4, 0, -115));
    assert_eq!(c.read_frame().await.unwrap(), None);
    assert!(mock.session_ids().contains(&c.session_id.into()));
}
