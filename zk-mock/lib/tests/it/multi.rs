//! multi (14) and multiRead (22): results, atomicity, zxids and encodings.

use bytes::Bytes;
use zk_mock::codec::Record;
use zk_mock::proto::{
    CheckVersionRequest, DeleteRequest, MultiOp, MultiRequest, MultiResponse, MultiResult, OpCode,
    SetDataRequest,
};
use zookeeper_client::{Error, MultiWriteError, MultiWriteResult};

use crate::support::*;

#[tokio::test]
async fn a_successful_multi_applies_every_op_under_one_zxid() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    c.create("/m", b"", &persistent()).await.unwrap();
    c.create("/m/old", b"", &persistent()).await.unwrap();
    let mut w = c.new_multi_writer();
    w.add_check_version("/m", 0).unwrap();
    w.add_create("/m/a", b"A", &persistent()).unwrap();
    w.add_create("/m/a/b", b"", &persistent()).unwrap();
    w.add_create("/m/s-", b"", &sequential()).unwrap();
    w.add_set_data("/m/a", b"AA", Some(0)).unwrap();
    w.add_delete("/m/old", None).unwrap();
    let results = w.commit().await.unwrap();
    let zxid = mock.last_zxid();
    assert_eq!(results.len(), 6);
    assert_eq!(results[0], MultiWriteResult::Check);
    // ZooKeeper 3.8.0 answers creates inside multi with a path-only result
    // (type 1), so the client reports an invalid Stat (ZOOKEEPER-4026, 3.8.2).
    let created: Vec<(&str, bool)> = results[1..4]
        .iter()
        .map(|r| match r {
            MultiWriteResult::Create { path, stat } => (path.as_str(), stat.is_invalid()),
            other => panic!("expected a create result, got {other:?}"),
        })
        .collect();
    assert_eq!(
        created,
        [
            ("/m/a", true),
            ("/m/a/b", true),
            // Later ops see earlier ones: /m had 2 child creates before this one.
            ("/m/s-0000000002", true)
        ]
    );
    let MultiWriteResult::SetData { stat } = &results[4] else {
        panic!("{results:?}")
    };
    assert_eq!((stat.version, stat.mzxid, stat.czxid), (1, zxid, zxid));
    assert_eq!(results[5], MultiWriteResult::Delete);

    let (data, a) = c.get_data("/m/a").await.unwrap();
    assert_eq!(data, b"AA");
    assert_eq!(
        (a.czxid, a.mzxid, a.pzxid, a.num_children),
        (zxid, zxid, zxid, 1)
    );
    let m = c.check_stat("/m").await.unwrap().unwrap();
    assert_eq!((m.pzxid, m.num_children), (zxid, 2));
}

#[tokio::test]
async fn a_failed_multi_applies_nothing_and_still_consumes_one_zxid() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    c.create("/f", b"x", &persistent()).await.unwrap();
    let before = mock.last_zxid();
    let mut w = c.new_multi_writer();
    w.add_create("/f/new", b"", &persistent()).unwrap();
    w.add_set_data("/f", b"y", None).unwrap();
    w.add_check_version("/f", 7).unwrap();
    w.add_delete("/f/new", None).unwrap();
    let err = w.commit().await.unwrap_err();
    assert_eq!(
        err,
        MultiWriteError::OperationFailed {
            index: 2,
            source: Error::BadVersion
        }
    );
    assert_eq!(mock.last_zxid(), before + 1);
    assert_eq!(c.check_stat("/f/new").await.unwrap(), None);
    let (data, stat) = c.get_data("/f").await.unwrap();
    assert_eq!((data.as_slice(), stat.version), (&b"x"[..], 0));
    let f = c.check_stat("/f").await.unwrap().unwrap();
    assert_eq!(f.cversion, 0, "rolled-back creates leave the parent alone");
    // The sequence counter did not move either.
    let (_, s) = c.create("/f/s-", b"", &sequential()).await.unwrap();
    assert_eq!(s.into_i64(), 0);
}

#[tokio::test]
async fn a_check_on_a_missing_node_fails_the_multi_with_no_node() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    let mut w = c.new_multi_writer();
    w.add_check_version("/absent", -1).unwrap();
    w.add_create("/created", b"", &persistent()).unwrap();
    assert_eq!(
        w.commit().await.unwrap_err(),
        MultiWriteError::OperationFailed {
            index: 0,
            source: Error::NoNode
        }
    );
    assert_eq!(c.check_stat("/created").await.unwrap(), None);
}

fn check(path: &str, version: i32) -> MultiOp {
    MultiOp::Check(CheckVersionRequest {
        path: path.into(),
        version,
    })
}

fn create(op: OpCode, path: &str) -> MultiOp {
    MultiOp::Create(op, create_req(path, Some(b"d"), 0))
}

fn set(path: &str, version: i32) -> MultiOp {
    MultiOp::SetData(SetDataRequest {
        path: path.into(),
        data: Some(Bytes::from_static(b"s")),
        version,
    })
}

fn delete(path: &str) -> MultiOp {
    MultiOp::Delete(DeleteRequest {
        path: path.into(),
        version: -1,
    })
}

#[tokio::test]
async fn a_failed_multi_reports_zero_then_the_error_then_runtime_inconsistency() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    raw_create_ok(&mut c, "/x", 0).await;
    let before = mock.last_zxid();
    let r = c
        .request(
            OpCode::Multi,
            &MultiRequest {
                ops: vec![create(OpCode::Create, "/a"), set("/x", 5), delete("/y")],
            },
        )
        .await
        .unwrap();
    assert_eq!(r.header.err, 0, "the header of a failed multi is OK");
    assert_eq!(r.header.zxid, before + 1);
    let expect: Vec<u8> = [
        &[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0][..],
        &[0, 0, 0, 0],
        &[0xff, 0xff, 0xff, 0xff, 0, 0xff, 0xff, 0xff, 0x99],
        &[0xff, 0xff, 0xff, 0x99],
        &[0xff, 0xff, 0xff, 0xff, 0, 0xff, 0xff, 0xff, 0xfe],
        &[0xff, 0xff, 0xff, 0xfe],
        &[0xff, 0xff, 0xff, 0xff, 1, 0xff, 0xff, 0xff, 0xff],
    ]
    .concat();
    assert_eq!(&r.body[..], &expect[..]);
    assert_eq!(raw_exists(&mut c, "/a", false).await.header.err, -101);
}

#[tokio::test]
async fn multi_results_are_path_only_for_create_and_create2_but_carry_a_stat_for_containers() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    raw_create_ok(&mut c, "/x", 0).await;
    raw_create_ok(&mut c, "/gone", 0).await;
    let r = c
        .request(
            OpCode::Multi,
            &MultiRequest {
                ops: vec![
                    create(OpCode::Create, "/c1"),
                    create(OpCode::Create2, "/c2"),
                    MultiOp::Create(OpCode::CreateContainer, create_req("/c3", None, 4)),
                    check("/x", 0),
                    set("/x", 0),
                    delete("/gone"),
                ],
            },
        )
        .await
        .unwrap();
    assert_eq!(r.header.err, 0);
    let zxid = r.header.zxid;
    let resp: MultiResponse = r.decode().unwrap();
    // 3.8.0: type 1 with the path for create and create2 (the Stat-carrying
    // type 15 arrived for create2 in 3.8.2, ZOOKEEPER-4026), but type 15 with
    // a Stat for createContainer (recorded from a real 3.8.0).
    for (i, want) in ["/c1", "/c2"].iter().enumerate() {
        assert_eq!(
            resp.results[i],
            MultiResult::Create {
                path: want.to_string()
            }
        );
    }
    let c2 = raw_stat(&mut c, "/c2").await;
    assert_eq!((c2.czxid, c2.data_length), (zxid, 1));
    let MultiResult::Create2 { path, stat } = &resp.results[2] else {
        panic!("createContainer in multi should answer type 15: {resp:?}")
    };
    assert_eq!(path, "/c3");
    assert_eq!((stat.czxid, stat.mzxid, stat.pzxid), (zxid, zxid, zxid));
    assert_eq!(
        (stat.ephemeral_owner, stat.data_length, stat.version),
        (0, 0, 0)
    );
    assert_eq!(resp.results[3], MultiResult::Check);
    let MultiResult::SetData { stat } = &resp.results[4] else {
        panic!("{resp:?}")
    };
    assert_eq!((stat.version, stat.mzxid), (1, zxid));
    assert_eq!(resp.results[5], MultiResult::Delete);
    // The raw bytes of the first result: header {1, false, 0} then the path.
    let mut head = vec![0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 3];
    head.extend_from_slice(b"/c1");
    assert_eq!(&r.body[..head.len()], &head[..]);
    // And the list ends with {-1, true, -1}.
    assert_eq!(
        &r.body[r.body.len() - 9..],
        &[0xff, 0xff, 0xff, 0xff, 1, 0xff, 0xff, 0xff, 0xff]
    );
}

#[tokio::test]
async fn an_empty_multi_returns_only_the_end_marker_and_consumes_a_zxid() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    let zxid = mock.last_zxid();
    let r = c
        .request(OpCode::Multi, &MultiRequest { ops: vec![] })
        .await
        .unwrap();
    assert_eq!(r.header.err, 0);
    assert_eq!(
        r.header.zxid,
        zxid + 1,
        "even an empty multi is a transaction"
    );
    assert_eq!(
        &r.body[..],
        &[0xff, 0xff, 0xff, 0xff, 1, 0xff, 0xff, 0xff, 0xff]
    );
}

#[tokio::test]
async fn a_multi_mixing_reads_and_writes_is_a_marshalling_error() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    let mut body = MultiRequest {
        ops: vec![create(OpCode::Create, "/mixed")],
    }
    .to_bytes()
    .to_vec();
    // Splice a getData op in before the end marker.
    body.truncate(body.len() - 9);
    body.extend_from_slice(&[0, 0, 0, 4, 0, 0xff, 0xff, 0xff, 0xff]);
    body.extend_from_slice(&path_watch("/", false).to_bytes());
    body.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 1, 0xff, 0xff, 0xff, 0xff]);
    let zxid = mock.last_zxid();
    let r = c.request_raw(OpCode::Multi as i32, &body).await.unwrap();
    assert_eq!(r.header.err, -5);
    assert_eq!(
        r.header.zxid,
        zxid + 1,
        "as a write, it fails as an error txn"
    );
    assert!(r.body.is_empty());
    assert_eq!(raw_exists(&mut c, "/mixed", false).await.header.err, -101);
}

#[tokio::test]
async fn multi_read_reports_errors_in_place_without_a_cascade() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    raw_create_ok(&mut c, "/r", 0).await;
    let zxid = mock.last_zxid();
    let r = c
        .request(
            OpCode::MultiRead,
            &MultiRequest {
                ops: vec![
                    MultiOp::GetData(path_watch("/missing", false)),
                    MultiOp::GetChildren(path_watch("/", false)),
                    MultiOp::GetData(path_watch("/r", false)),
                ],
            },
        )
        .await
        .unwrap();
    assert_eq!((r.header.err, r.header.zxid), (0, zxid));
    let resp: MultiResponse = r.decode().unwrap();
    assert_eq!(resp.results[0], MultiResult::Error { err: -101 });
    let MultiResult::GetChildren { children } = &resp.results[1] else {
        panic!("{resp:?}")
    };
    let mut children = children.clone();
    children.sort();
    assert_eq!(children, ["r", "zookeeper"]);
    let MultiResult::GetData { data, stat } = &resp.results[2] else {
        panic!("{resp:?}")
    };
    assert_eq!(data.as_deref(), Some(&b""[..]));
    assert_eq!(stat.czxid, zxid);
    assert_eq!(mock.last_zxid(), zxid, "multiRead is not a transaction");
}

#[tokio::test]
async fn multi_operations_fire_watches_before_the_multi_reply() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    raw_create_ok(&mut c, "/w", 0).await;
    raw_get(&mut c, "/w", true).await;
    raw_exists(&mut c, "/w2", true).await;
    let r = c
        .request(
            OpCode::Multi,
            &MultiRequest {
                ops: vec![set("/w", -1), create(OpCode::Create, "/w2")],
            },
        )
        .await
        .unwrap();
    assert_eq!(r.header.err, 0);
    use zk_mock::proto::event_type::*;
    assert_eq!(
        kinds(&c.take_events()),
        [
            (NODE_DATA_CHANGED, "/w".to_string()),
            (NODE_CREATED, "/w2".to_string())
        ]
    );
}

#[tokio::test]
async fn an_ephemeral_touched_by_a_failed_multi_still_dies_with_its_session() {
    let mock = start_mock().await;
    let observer = connect(&mock).await;
    let owner = connect(&mock).await;
    owner.create("/e", b"", &ephemeral()).await.unwrap();
    let mut w = owner.new_multi_writer();
    w.add_set_data("/e", b"x", None).unwrap();
    w.add_create("/e", b"", &persistent()).unwrap();
    assert_eq!(
        w.commit().await.unwrap_err(),
        MultiWriteError::OperationFailed {
            index: 1,
            source: Error::NodeExists
        }
    );
    assert_eq!(owner.list_ephemerals("/").await.unwrap(), ["/e"]);
    let (_, _, gone) = observer.get_and_watch_data("/e").await.unwrap();
    drop(owner);
    let ev = with_timeout(QUICK, "NodeDeleted /e", gone.changed()).await;
    assert_eq!(
        ev,
        node_event(zookeeper_client::EventType::NodeDeleted, "/e")
    );
    observer.create("/e", b"", &persistent()).await.unwrap();
}
