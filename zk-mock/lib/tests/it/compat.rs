//! The 3.9 mode against the 3.8 default: each documented difference, in
//! both modes, through real sockets (see `zk_mock::Compat`).

use zk_mock::client::RawClient;
use zk_mock::proto::event_type::*;
use zk_mock::proto::{
    CheckVersionRequest, MultiOp, MultiRequest, MultiResponse, MultiResult, OpCode, WatchesRequest,
};
use zk_mock::{Compat, ZkMock};
use zookeeper_client::{AddWatchMode, EventType};

use crate::support::*;

async fn mock(compat: Compat) -> ZkMock {
    init_tracing();
    ZkMock::builder().compat(compat).start().await.unwrap()
}

async fn add_watch(c: &mut RawClient, path: &str, mode: i32) {
    let (err, _) = raw_add_watch(c, path, mode).await;
    assert_eq!(err, 0, "addWatch {path} mode {mode}");
}

async fn watches_op(c: &mut RawClient, op: OpCode, path: &str, watcher_type: i32) -> i32 {
    c.request(
        op,
        &WatchesRequest {
            path: path.into(),
            watcher_type,
        },
    )
    .await
    .unwrap()
    .header
    .err
}

const NO_WATCHER: i32 = -121;

#[tokio::test]
async fn notifications_carry_the_zxid_of_their_change_on_3_9_and_minus_one_on_3_8() {
    for compat in [Compat::V3_8, Compat::V3_9] {
        let mock = mock(compat).await;
        let mut w = raw(&mock).await;
        let mut c = raw(&mock).await;
        raw_exists(&mut w, "/n", true).await;
        raw_get(&mut w, "/", false).await;
        let r = w
            .request(OpCode::GetChildren, &path_watch("/", true))
            .await
            .unwrap();
        assert_eq!(r.header.err, 0);
        let created = raw_create(&mut c, "/n", Some(b""), 0).await.header.zxid;
        raw_get(&mut w, "/n", true).await;
        let changed = raw_set(&mut c, "/n", b"x", -1).await.header.zxid;
        raw_exists(&mut w, "/n", true).await;
        let r = c
            .request(
                OpCode::Delete,
                &zk_mock::proto::DeleteRequest {
                    path: "/n".into(),
                    version: -1,
                },
            )
            .await
            .unwrap();
        let deleted = r.header.zxid;
        let got: Vec<(i32, i64)> = events_after_barrier(&mut w)
            .await
            .iter()
            .map(|n| (n.event.event_type, n.zxid))
            .collect();
        let z = |zxid: i64| if compat == Compat::V3_9 { zxid } else { -1 };
        assert_eq!(
            got,
            [
                (NODE_CREATED, z(created)),
                (NODE_CHILDREN_CHANGED, z(created)),
                (NODE_DATA_CHANGED, z(changed)),
                (NODE_DELETED, z(deleted)),
            ],
            "{compat}"
        );
    }
}

#[tokio::test]
async fn zookeeper_client_sees_the_zxid_in_its_watched_event_on_3_9() {
    let mock = mock(Compat::V3_9).await;
    let client = connect(&mock).await;
    client.create("/z", b"", &persistent()).await.unwrap();
    let (_, _, w) = client.get_and_watch_data("/z").await.unwrap();
    let stat = client.set_data("/z", b"1", None).await.unwrap();
    let event = with_timeout(QUICK, "NodeDataChanged", w.changed()).await;
    assert_eq!(event.event_type, EventType::NodeDataChanged);
    assert_eq!(event.zxid, stat.mzxid);
}

#[tokio::test]
async fn a_standard_watch_downgrades_a_persistent_one_on_3_8_and_joins_it_on_3_9() {
    for compat in [Compat::V3_8, Compat::V3_9] {
        let mock = mock(compat).await;
        let mut w = raw(&mock).await;
        let mut c = raw(&mock).await;
        raw_create_ok(&mut c, "/p", 0).await;
        add_watch(&mut w, "/p", 0).await;
        raw_get(&mut w, "/p", true).await;
        raw_set(&mut c, "/p", b"1", -1).await;
        // One notification per connection either way.
        assert_eq!(
            kinds(&events_after_barrier(&mut w).await),
            [(NODE_DATA_CHANGED, "/p".into())],
            "{compat}"
        );
        raw_set(&mut c, "/p", b"2", -1).await;
        let second = kinds(&events_after_barrier(&mut w).await);
        match compat {
            // The one-shot mode replaced the persistent one and is spent.
            Compat::V3_8 => assert_eq!(second, []),
            // The persistent mode stayed beside the one-shot one.
            Compat::V3_9 => assert_eq!(second, [(NODE_DATA_CHANGED, "/p".into())]),
        }
    }
}

#[tokio::test]
async fn a_recursive_watch_replaces_a_child_watch_on_3_8_and_joins_it_on_3_9() {
    for compat in [Compat::V3_8, Compat::V3_9] {
        let mock = mock(compat).await;
        let mut w = raw(&mock).await;
        let mut c = raw(&mock).await;
        raw_create_ok(&mut c, "/r", 0).await;
        let r = w
            .request(OpCode::GetChildren, &path_watch("/r", true))
            .await
            .unwrap();
        assert_eq!(r.header.err, 0);
        add_watch(&mut w, "/r", 1).await;
        raw_create_ok(&mut c, "/r/a", 0).await;
        let got = kinds(&events_after_barrier(&mut w).await);
        let created = (NODE_CREATED, "/r/a".to_string());
        match compat {
            Compat::V3_8 => assert_eq!(got, [created]),
            Compat::V3_9 => {
                assert_eq!(got, [created, (NODE_CHILDREN_CHANGED, "/r".into())])
            }
        }
    }
}

#[tokio::test]
async fn zookeeper_clients_persistent_and_one_shot_watchers_both_fire_on_3_9() {
    // The pattern of the crate's own `test_watcher_coexist_on_same_path`.
    let mock = mock(Compat::V3_9).await;
    let client = connect(&mock).await;
    client.create("/co", b"", &persistent()).await.unwrap();
    let mut persistent = client.watch("/co", AddWatchMode::Persistent).await.unwrap();
    let (_, _, oneshot) = client.get_and_watch_data("/co").await.unwrap();
    let stat = client.set_data("/co", b"1", None).await.unwrap();
    let a = with_timeout(QUICK, "persistent", persistent.changed()).await;
    let b = with_timeout(QUICK, "one-shot", oneshot.changed()).await;
    for e in [&a, &b] {
        assert_eq!(e.event_type, EventType::NodeDataChanged);
        assert_eq!(e.zxid, stat.mzxid);
    }
    let stat = client.set_data("/co", b"2", None).await.unwrap();
    let again = with_timeout(QUICK, "persistent again", persistent.changed()).await;
    assert_eq!(again.zxid, stat.mzxid);
}

#[tokio::test]
async fn watcher_types_4_and_5_name_persistent_modes_on_3_9_only() {
    let mock38 = mock(Compat::V3_8).await;
    let mut c = raw(&mock38).await;
    add_watch(&mut c, "/", 0).await;
    for t in [4, 5] {
        assert_eq!(watches_op(&mut c, OpCode::CheckWatches, "/", t).await, -5);
        assert_eq!(watches_op(&mut c, OpCode::RemoveWatches, "/", t).await, -5);
    }
    // 3.8: type 2 matches the persistent entry in the data table.
    assert_eq!(watches_op(&mut c, OpCode::CheckWatches, "/", 2).await, 0);

    let mock39 = mock(Compat::V3_9).await;
    let mut c = raw(&mock39).await;
    let mut other = raw(&mock39).await;
    add_watch(&mut c, "/p", 0).await;
    add_watch(&mut c, "/r", 1).await;
    let check = |t| (OpCode::CheckWatches, t);
    for (path, (op, t), want) in [
        ("/p", check(4), 0),
        ("/p", check(5), NO_WATCHER),
        // Types 1 and 2 name one-shot watches only.
        ("/p", check(2), NO_WATCHER),
        ("/p", check(1), NO_WATCHER),
        ("/p", check(3), 0),
        ("/r", check(5), 0),
        ("/r", check(4), NO_WATCHER),
        ("/r", check(3), 0),
        ("/p", check(6), -5),
    ] {
        assert_eq!(
            watches_op(&mut c, op, path, t).await,
            want,
            "{op:?} {path} {t}"
        );
    }
    // checkWatches looks at the caller's watches only.
    assert_eq!(
        watches_op(&mut other, OpCode::CheckWatches, "/p", 3).await,
        NO_WATCHER
    );
    // Removing a one-shot watch leaves the persistent one.
    raw_get(&mut c, "/", true).await;
    assert_eq!(
        watches_op(&mut c, OpCode::RemoveWatches, "/p", 2).await,
        NO_WATCHER
    );
    assert_eq!(watches_op(&mut c, OpCode::RemoveWatches, "/p", 4).await, 0);
    assert_eq!(
        watches_op(&mut c, OpCode::CheckWatches, "/p", 3).await,
        NO_WATCHER
    );
    assert_eq!(
        watches_op(&mut c, OpCode::RemoveWatches, "/r", 4).await,
        NO_WATCHER
    );
    assert_eq!(watches_op(&mut c, OpCode::RemoveWatches, "/r", 5).await, 0);
    assert_eq!(
        watches_op(&mut c, OpCode::RemoveWatches, "/r", 3).await,
        NO_WATCHER
    );
}

#[tokio::test]
async fn create2_inside_multi_answers_a_stat_on_3_9() {
    for compat in [Compat::V3_8, Compat::V3_9] {
        let mock = mock(compat).await;
        let mut c = raw(&mock).await;
        let r = c
            .request(
                OpCode::Multi,
                &MultiRequest {
                    ops: vec![
                        MultiOp::Create(OpCode::Create, create_req("/a", None, 0)),
                        MultiOp::Create(OpCode::Create2, create_req("/b", None, 0)),
                    ],
                },
            )
            .await
            .unwrap();
        assert_eq!(r.header.err, 0);
        let resp: MultiResponse = r.decode().unwrap();
        assert_eq!(resp.results[0], MultiResult::Create { path: "/a".into() });
        match (compat, &resp.results[1]) {
            (Compat::V3_8, MultiResult::Create { path }) => assert_eq!(path, "/b"),
            (Compat::V3_9, MultiResult::Create2 { path, stat }) => {
                assert_eq!(path, "/b");
                assert_eq!(stat.czxid, r.header.zxid);
                assert_eq!(*stat, raw_stat(&mut c, "/b").await);
            }
            other => panic!("{compat}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn check_outside_multi_is_unimplemented_and_closes_on_3_9() {
    let mock = mock(Compat::V3_9).await;
    let mut c = raw(&mock).await;
    let last = mock.last_zxid();
    let r = c
        .request(
            OpCode::Check,
            &CheckVersionRequest {
                path: "/".into(),
                version: 0,
            },
        )
        .await
        .unwrap();
    assert_eq!((r.header.err, r.header.zxid), (-6, -1));
    assert_eq!(c.read_frame().await.unwrap(), None, "closed");
    assert_eq!(mock.last_zxid(), last, "no zxid consumed");
}

#[tokio::test]
async fn four_letter_words_report_the_imitated_version() {
    for (compat, want) in [
        (Compat::V3_8, zk_mock::VERSION),
        (Compat::V3_9, zk_mock::VERSION_3_9),
    ] {
        let mock = mock(compat).await;
        assert_eq!(mock.compat(), compat);
        let out = four_letter(mock.addr(), b"srvr").await;
        assert!(
            out.starts_with(&format!("Zookeeper version: {want}\n")),
            "{out}"
        );
    }
}
