//! The connect handshake, byte for byte, and four-letter words.

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use zk_mock::client::RawClient;
use zk_mock::codec::Record;
use zk_mock::proto::{ConnectRequest, ConnectResponse, GetDataResponse, OpCode, RequestHeader};

use crate::support::*;

/// Sends `bytes` on a fresh socket and reads one length-prefixed frame.
async fn first_frame(addr: std::net::SocketAddr, bytes: &[u8]) -> (TcpStream, Option<Vec<u8>>) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(bytes).await.unwrap();
    let mut len = [0u8; 4];
    let frame = match with_timeout(QUICK, "first frame", s.read_exact(&mut len)).await {
        Ok(_) => {
            let mut body = vec![0; i32::from_be_bytes(len) as usize];
            s.read_exact(&mut body).await.unwrap();
            Some(body)
        }
        Err(_) => None,
    };
    (s, frame)
}

fn framed(body: &[u8]) -> Vec<u8> {
    let mut v = (body.len() as i32).to_be_bytes().to_vec();
    v.extend_from_slice(body);
    v
}

#[tokio::test]
async fn a_connect_with_the_read_only_byte_gets_a_37_byte_response() {
    let mock = start_mock().await;
    let req = new_session(10_000, Some(false)).to_bytes();
    assert_eq!(req.len(), 45);
    let (_s, frame) = first_frame(mock.addr(), &framed(&req)).await;
    let frame = frame.expect("answered");
    assert_eq!(frame.len(), 37);
    let resp = ConnectResponse::decode(&frame).unwrap();
    assert_eq!(resp.protocol_version, 0);
    assert_eq!(resp.time_out, 10_000);
    assert_ne!(resp.session_id, 0);
    assert_eq!(resp.read_only, Some(false));
    let pw = resp.passwd.unwrap();
    assert_eq!(pw.len(), 16);
    // Byte layout: protocolVersion, timeOut, sessionId, passwd (len + 16), readOnly.
    assert_eq!(&frame[0..4], &[0, 0, 0, 0]);
    assert_eq!(&frame[4..8], &10_000i32.to_be_bytes());
    assert_eq!(&frame[8..16], &resp.session_id.to_be_bytes());
    assert_eq!(&frame[16..20], &[0, 0, 0, 16]);
    assert_eq!(&frame[20..36], &pw[..]);
    assert_eq!(frame[36], 0);
}

#[tokio::test]
async fn a_connect_without_the_read_only_byte_gets_a_36_byte_response() {
    let mock = start_mock().await;
    let req = new_session(10_000, None).to_bytes();
    assert_eq!(req.len(), 44);
    let (_s, frame) = first_frame(mock.addr(), &framed(&req)).await;
    let frame = frame.expect("answered");
    assert_eq!(frame.len(), 36);
    let resp = ConnectResponse::decode(&frame).unwrap();
    assert_eq!(resp.read_only, None);
    assert_ne!(resp.session_id, 0);
}

#[tokio::test]
async fn the_expired_answer_also_mirrors_the_read_only_byte() {
    let mock = start_mock().await;
    for (ro, len) in [(Some(false), 37), (None, 36)] {
        let req = ConnectRequest {
            session_id: 42,
            ..new_session(10_000, ro)
        };
        let (_s, frame) = first_frame(mock.addr(), &framed(&req.to_bytes())).await;
        let frame = frame.expect("answered");
        assert_eq!(frame.len(), len);
        let mut expect = vec![0u8; 20];
        expect[16..20].copy_from_slice(&16i32.to_be_bytes());
        expect.extend_from_slice(&[0; 16]);
        if ro.is_some() {
            expect.push(0);
        }
        assert_eq!(frame, expect, "timeout 0, id 0, sixteen zero bytes");
    }
}

#[tokio::test]
async fn a_new_session_may_send_an_empty_password_as_the_rust_client_does() {
    let mock = start_mock().await;
    let req = ConnectRequest {
        passwd: Some(Bytes::new()),
        ..new_session(10_000, Some(false))
    };
    let (c, resp) = RawClient::handshake(mock.addr(), &req).await.unwrap();
    let resp = resp.unwrap();
    assert_ne!(resp.session_id, 0);
    assert_eq!(resp.passwd.unwrap().len(), 16);
    drop(c);
}

#[tokio::test]
async fn session_ids_follow_zookeepers_standalone_layout_and_passwords_its_generator() {
    let mock = start_mock().await;
    let a = raw(&mock).await;
    let b = raw(&mock).await;
    assert_eq!(
        a.session_id >> 56,
        1,
        "server id 1 in the top byte: {:#x}",
        a.session_id
    );
    assert_eq!(b.session_id, a.session_id + 1);
    assert_eq!(&a.passwd[..], &zk_mock::password_for(a.session_id)[..]);
    assert_ne!(a.passwd, b.passwd);
}

#[tokio::test]
async fn requests_pipelined_behind_the_connect_request_are_answered_after_it() {
    let mock = start_mock().await;
    let mut bytes = framed(&new_session(10_000, Some(false)).to_bytes());
    for xid in 1..=3 {
        let mut b = BytesMut::new();
        RequestHeader {
            xid,
            op_type: OpCode::GetData as i32,
        }
        .encode(&mut b);
        path_watch("/", false).encode(&mut b);
        bytes.extend_from_slice(&framed(&b));
    }
    let (mut s, frame) = first_frame(mock.addr(), &bytes).await;
    let resp = ConnectResponse::decode(&frame.unwrap()).unwrap();
    assert_ne!(resp.session_id, 0);
    for xid in 1..=3i32 {
        let mut len = [0u8; 4];
        s.read_exact(&mut len).await.unwrap();
        let mut body = vec![0; i32::from_be_bytes(len) as usize];
        s.read_exact(&mut body).await.unwrap();
        assert_eq!(&body[0..4], &xid.to_be_bytes());
        assert_eq!(
            &body[4..12],
            &1i64.to_be_bytes(),
            "zxid 1: the createSession"
        );
        assert_eq!(&body[12..16], &[0, 0, 0, 0]);
        let data = GetDataResponse::decode(&body[16..]).unwrap();
        assert_eq!(data.stat.num_children, 1);
    }
}

#[tokio::test]
async fn ruok_is_answered_with_imok_and_a_close() {
    let mock = start_mock().await;
    assert_eq!(four_letter(mock.addr(), b"ruok").await, "imok");
}

#[tokio::test]
async fn srvr_reports_a_standalone_server_with_five_nodes_when_fresh() {
    let mock = start_mock().await;
    let _session = raw(&mock).await; // zxid 1
    let out = four_letter(mock.addr(), b"srvr").await;
    assert!(out.starts_with("Zookeeper version: 3.8"), "{out}");
    assert!(out.contains("Mode: standalone\n"), "{out}");
    assert!(out.contains("Node count: 5\n"), "{out}");
    assert!(out.contains("Zxid: 0x1\n"), "{out}");
}

#[tokio::test]
async fn dump_lists_the_sessions_with_ephemerals_in_id_order() {
    let mock = start_mock().await;
    let clients = clients_with_ephemerals(&mock, 6).await;
    let mut sessions: Vec<i64> = clients.iter().map(|c| c.session_id().0).collect();
    sessions.sort_unstable();
    let ids: Vec<String> = sessions.iter().map(|id| format!("0x{id:x}:")).collect();
    let out = four_letter(mock.addr(), b"dump").await;
    assert!(out.contains("Sessions with Ephemerals (6):\n"), "{out}");
    let listed: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("0x") && l.ends_with(':'))
        .collect();
    assert_eq!(listed, ids, "{out}");
    // The session sets: each deadline's sessions in id order too.
    let sets = out
        .split("SessionTracker dump:\n")
        .nth(1)
        .and_then(|s| s.split("ephemeral nodes dump:").next())
        .unwrap();
    let mut in_sets = 0;
    for set in sets.split(" expire at ").skip(1) {
        let ids: Vec<i64> = set
            .lines()
            .filter_map(|l| l.strip_prefix("\t0x"))
            .map(|h| i64::from_str_radix(h, 16).unwrap())
            .collect();
        assert!(ids.is_sorted(), "{out}");
        in_sets += ids.len();
    }
    assert_eq!(in_sets, 6, "{out}");
}

#[tokio::test]
async fn a_four_letter_word_after_the_handshake_is_just_a_bad_frame() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    // "ruok" read as a length prefix is 0x72756f6b: far above jute.maxbuffer.
    c.send_raw(b"ruok").await.unwrap();
    assert_eq!(c.read_frame().await.unwrap(), None);
}

#[tokio::test]
async fn a_bad_first_frame_is_closed_with_nothing_sent() {
    let mock = start_mock().await;
    for bytes in [
        &[0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0][..], // too short for a ConnectRequest
        &[0x7f, 0xff, 0xff, 0xff, 1, 2, 3][..],           // oversize length prefix
        &[0, 0, 0, 0][..],                                // empty frame
    ] {
        let mut s = TcpStream::connect(mock.addr()).await.unwrap();
        s.write_all(bytes).await.unwrap();
        let mut out = Vec::new();
        with_timeout(QUICK, "close", s.read_to_end(&mut out))
            .await
            .unwrap();
        assert!(out.is_empty(), "{bytes:?} got {out:?}");
    }
    assert!(mock.session_ids().is_empty());
    assert_eq!(mock.last_zxid(), 0);
}
