//! addWatch (persistent and persistent-recursive watches), checkWatches and
//! removeWatches. Expected sequences were recorded from ZooKeeper 3.8.0.

use zk_mock::proto::{event_type::*, DeleteRequest, OpCode, WatchesRequest};
use zookeeper_client::{AddWatchMode, EventType};

use crate::support::*;

const NOWATCHER: i32 = -121;

async fn delete(c: &mut zk_mock::client::RawClient, path: &str) {
    let r = c
        .request(
            OpCode::Delete,
            &DeleteRequest {
                path: path.into(),
                version: -1,
            },
        )
        .await
        .unwrap();
    assert_eq!(r.header.err, 0, "delete {path}");
}

async fn watches_op(c: &mut zk_mock::client::RawClient, op: OpCode, path: &str, kind: i32) -> i32 {
    c.request(
        op,
        &WatchesRequest {
            path: path.into(),
            watcher_type: kind,
        },
    )
    .await
    .unwrap()
    .header
    .err
}

fn ev(t: i32, p: &str) -> (i32, String) {
    (t, p.to_string())
}

#[tokio::test]
async fn add_watch_answers_a_four_byte_zero_body_and_rejects_unknown_modes() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    let zxid = mock.last_zxid();
    assert_eq!(
        raw_add_watch(&mut c, "/not/there", 0).await,
        (0, vec![0; 4])
    );
    assert_eq!(raw_add_watch(&mut c, "/r", 1).await, (0, vec![0; 4]));
    assert_eq!(raw_add_watch(&mut c, "/x", 7).await, (-5, vec![]));
    assert_eq!(mock.last_zxid(), zxid);
}

#[tokio::test]
async fn a_persistent_watch_fires_on_its_node_and_direct_children_and_survives() {
    let mock = start_mock().await;
    let mut w = raw(&mock).await;
    let mut c = raw(&mock).await;
    raw_add_watch(&mut w, "/pw", 0).await;
    raw_create_ok(&mut c, "/pw", 0).await;
    raw_set(&mut c, "/pw", b"1", -1).await;
    raw_create_ok(&mut c, "/pw/k", 0).await;
    raw_create_ok(&mut c, "/pw/k/g", 0).await;
    delete(&mut c, "/pw/k/g").await;
    delete(&mut c, "/pw/k").await;
    delete(&mut c, "/pw").await;
    raw_create_ok(&mut c, "/pw", 0).await;
    assert_eq!(
        kinds(&events_after_barrier(&mut w).await),
        [
            ev(NODE_CREATED, "/pw"),
            ev(NODE_DATA_CHANGED, "/pw"),
            ev(NODE_CHILDREN_CHANGED, "/pw"),
            ev(NODE_CHILDREN_CHANGED, "/pw"),
            ev(NODE_DELETED, "/pw"),
            ev(NODE_CREATED, "/pw"),
        ]
    );
}

#[tokio::test]
async fn a_recursive_watch_covers_descendants_but_never_reports_children_changed() {
    let mock = start_mock().await;
    let mut w = raw(&mock).await;
    let mut c = raw(&mock).await;
    raw_add_watch(&mut w, "/rw", 1).await;
    raw_create_ok(&mut c, "/rw", 0).await;
    raw_create_ok(&mut c, "/rw/k", 0).await;
    raw_create_ok(&mut c, "/rw/k/g", 0).await;
    raw_set(&mut c, "/rw/k", b"1", -1).await;
    delete(&mut c, "/rw/k/g").await;
    raw_create_ok(&mut c, "/rwx", 0).await; // a sibling with a common prefix
    assert_eq!(
        kinds(&events_after_barrier(&mut w).await),
        [
            ev(NODE_CREATED, "/rw"),
            ev(NODE_CREATED, "/rw/k"),
            ev(NODE_CREATED, "/rw/k/g"),
            ev(NODE_DATA_CHANGED, "/rw/k"),
            ev(NODE_DELETED, "/rw/k/g"),
        ]
    );
}

#[tokio::test]
async fn zookeeper_client_persistent_watchers_keep_delivering() {
    let mock = start_mock().await;
    let watcher = connect(&mock).await;
    let writer = connect(&mock).await;
    // Separate paths: 3.8 keeps one mode per (connection, path) (ZOOKEEPER-4466).
    let mut node = watcher
        .watch("/pc", AddWatchMode::Persistent)
        .await
        .unwrap();
    let mut tree = watcher
        .watch("/pt", AddWatchMode::PersistentRecursive)
        .await
        .unwrap();
    for p in ["/pc", "/pc/a", "/pt", "/pt/a"] {
        writer.create(p, b"", &persistent()).await.unwrap();
    }
    writer.set_data("/pc/a", b"x", None).await.unwrap();
    writer.set_data("/pt/a", b"x", None).await.unwrap();
    writer.set_data("/pc", b"x", None).await.unwrap();
    for want in [
        node_event(EventType::NodeCreated, "/pc"),
        node_event(EventType::NodeChildrenChanged, "/pc"),
        node_event(EventType::NodeDataChanged, "/pc"),
    ] {
        assert_eq!(
            with_timeout(QUICK, "persistent", node.changed()).await,
            want
        );
    }
    for want in [
        node_event(EventType::NodeCreated, "/pt"),
        node_event(EventType::NodeCreated, "/pt/a"),
        node_event(EventType::NodeDataChanged, "/pt/a"),
    ] {
        assert_eq!(with_timeout(QUICK, "recursive", tree.changed()).await, want);
    }
}

#[tokio::test]
async fn check_and_remove_watches_answer_no_watcher_when_nothing_matches() {
    let mock = start_mock().await;
    let mut w = raw(&mock).await;
    let mut c = raw(&mock).await;
    assert_eq!(
        watches_op(&mut w, OpCode::CheckWatches, "/none", 3).await,
        NOWATCHER
    );
    assert_eq!(
        watches_op(&mut w, OpCode::RemoveWatches, "/none", 3).await,
        NOWATCHER
    );
    raw_create_ok(&mut c, "/dw", 0).await;
    raw_get(&mut w, "/dw", true).await;
    assert_eq!(
        watches_op(&mut w, OpCode::CheckWatches, "/dw", 1).await,
        NOWATCHER
    );
    assert_eq!(watches_op(&mut w, OpCode::CheckWatches, "/dw", 2).await, 0);
    // 3.8 quirk: checkWatches looks at every connection's watches.
    assert_eq!(watches_op(&mut c, OpCode::CheckWatches, "/dw", 2).await, 0);
    assert_eq!(watches_op(&mut w, OpCode::RemoveWatches, "/dw", 2).await, 0);
    raw_set(&mut c, "/dw", b"1", -1).await;
    assert!(events_after_barrier(&mut w).await.is_empty(), "removed");
    assert_eq!(
        watches_op(&mut w, OpCode::RemoveWatches, "/dw", 2).await,
        NOWATCHER
    );
    assert_eq!(
        watches_op(&mut w, OpCode::RemoveWatches, "/dw", 9).await,
        -5
    );
}

#[tokio::test]
async fn dropping_a_zookeeper_client_watcher_removes_the_server_watch() {
    let mock = start_mock().await;
    let watcher = connect(&mock).await;
    let mut writer = raw(&mock).await;
    raw_create_ok(&mut writer, "/drop", 0).await;
    let (_, _, w) = watcher.get_and_watch_data("/drop").await.unwrap();
    drop(w); // zookeeper-client sends removeWatches for the last watcher
    watcher.sync("/").await.unwrap(); // answered after the removeWatches
    let mut other = raw(&mock).await;
    assert_eq!(
        watches_op(&mut other, OpCode::CheckWatches, "/drop", 2).await,
        NOWATCHER,
        "no connection watches /drop any more"
    );
}
