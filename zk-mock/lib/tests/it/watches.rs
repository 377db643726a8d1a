//! Data, exist and child watches: triggers, one-shot semantics, per-connection
//! dedup, ordering against replies, and re-registration with SetWatches.

use zk_mock::proto::{event_type::*, OpCode, SetWatches, STATE_SYNC_CONNECTED};
use zookeeper_client::{EventType, SessionState};

use crate::support::*;

#[tokio::test]
async fn a_data_watch_fires_node_data_changed_on_another_sessions_write() {
    let mock = start_mock().await;
    let watcher = connect(&mock).await;
    let writer = connect(&mock).await;
    writer.create("/w", b"0", &persistent()).await.unwrap();
    let (data, _, w) = watcher.get_and_watch_data("/w").await.unwrap();
    assert_eq!(data, b"0");
    writer.set_data("/w", b"1", None).await.unwrap();
    let ev = with_timeout(QUICK, "NodeDataChanged", w.changed()).await;
    assert_eq!(ev, node_event(EventType::NodeDataChanged, "/w"));
    assert_eq!(ev.zxid, -1, "3.8 notifications carry zxid -1");
}

#[tokio::test]
async fn an_exist_watch_on_a_missing_node_fires_node_created() {
    let mock = start_mock().await;
    let watcher = connect(&mock).await;
    let writer = connect(&mock).await;
    let (stat, w) = watcher.check_and_watch_stat("/later").await.unwrap();
    assert_eq!(stat, None);
    writer.create("/later", b"", &persistent()).await.unwrap();
    let ev = with_timeout(QUICK, "NodeCreated", w.changed()).await;
    assert_eq!(ev, node_event(EventType::NodeCreated, "/later"));
}

#[tokio::test]
async fn an_exist_watch_on_a_present_node_fires_on_data_change_and_delete() {
    let mock = start_mock().await;
    let watcher = connect(&mock).await;
    let writer = connect(&mock).await;
    writer.create("/x", b"", &persistent()).await.unwrap();
    let (_, w) = watcher.check_and_watch_stat("/x").await.unwrap();
    writer.set_data("/x", b"1", None).await.unwrap();
    let ev = with_timeout(QUICK, "NodeDataChanged", w.changed()).await;
    assert_eq!(ev, node_event(EventType::NodeDataChanged, "/x"));
    let (_, w) = watcher.check_and_watch_stat("/x").await.unwrap();
    writer.delete("/x", None).await.unwrap();
    let ev = with_timeout(QUICK, "NodeDeleted", w.changed()).await;
    assert_eq!(ev, node_event(EventType::NodeDeleted, "/x"));
}

#[tokio::test]
async fn a_child_watch_fires_node_children_changed_on_create_and_delete() {
    let mock = start_mock().await;
    let watcher = connect(&mock).await;
    let writer = connect(&mock).await;
    writer.create("/dir", b"", &persistent()).await.unwrap();
    let (children, _, w) = watcher.get_and_watch_children("/dir").await.unwrap();
    assert!(children.is_empty());
    writer.create("/dir/a", b"", &persistent()).await.unwrap();
    let ev = with_timeout(QUICK, "NodeChildrenChanged", w.changed()).await;
    assert_eq!(ev, node_event(EventType::NodeChildrenChanged, "/dir"));
    let (children, w) = watcher.list_and_watch_children("/dir").await.unwrap();
    assert_eq!(children, ["a"]);
    writer.delete("/dir/a", None).await.unwrap();
    let ev = with_timeout(QUICK, "NodeChildrenChanged", w.changed()).await;
    assert_eq!(ev, node_event(EventType::NodeChildrenChanged, "/dir"));
}

#[tokio::test]
async fn a_child_watcher_of_a_deleted_node_gets_node_deleted() {
    let mock = start_mock().await;
    let watcher = connect(&mock).await;
    let writer = connect(&mock).await;
    writer.create("/gone", b"", &persistent()).await.unwrap();
    let (_, _, w) = watcher.get_and_watch_children("/gone").await.unwrap();
    writer.delete("/gone", None).await.unwrap();
    let ev = with_timeout(QUICK, "NodeDeleted", w.changed()).await;
    assert_eq!(ev, node_event(EventType::NodeDeleted, "/gone"));
}

#[tokio::test]
async fn several_client_watchers_on_one_path_all_fire_from_one_notification() {
    let mock = start_mock().await;
    let watcher = connect(&mock).await;
    let writer = connect(&mock).await;
    writer.create("/multi", b"", &persistent()).await.unwrap();
    let (_, _, w1) = watcher.get_and_watch_data("/multi").await.unwrap();
    let (_, _, w2) = watcher.get_and_watch_data("/multi").await.unwrap();
    let (_, w3) = watcher.check_and_watch_stat("/multi").await.unwrap();
    let (_, _, w4) = watcher.get_and_watch_children("/multi").await.unwrap();
    writer.delete("/multi", None).await.unwrap();
    for w in [w1, w2, w3, w4] {
        let ev = with_timeout(QUICK, "NodeDeleted", w.changed()).await;
        assert_eq!(ev, node_event(EventType::NodeDeleted, "/multi"));
    }
}

#[tokio::test]
async fn one_connection_gets_one_notification_however_many_watches_it_set() {
    let mock = start_mock().await;
    let mut w = raw(&mock).await;
    let mut writer = raw(&mock).await;
    raw_create_ok(&mut writer, "/d", 0).await;
    raw_create_ok(&mut writer, "/d2", 0).await;
    // Data table twice (getData + exists) and the child table, on one connection.
    assert_eq!(raw_get(&mut w, "/d", true).await.header.err, 0);
    assert_eq!(raw_get(&mut w, "/d", true).await.header.err, 0);
    assert_eq!(raw_exists(&mut w, "/d", true).await.header.err, 0);
    let r = w
        .request(OpCode::GetChildren, &path_watch("/d", true))
        .await
        .unwrap();
    assert_eq!(r.header.err, 0);
    assert_eq!(raw_get(&mut w, "/d2", true).await.header.err, 0);
    assert_eq!(raw_exists(&mut w, "/d2", true).await.header.err, 0);

    let del = writer
        .request(
            OpCode::Delete,
            &zk_mock::proto::DeleteRequest {
                path: "/d".into(),
                version: -1,
            },
        )
        .await
        .unwrap();
    assert_eq!(del.header.err, 0);
    raw_set(&mut writer, "/d2", b"x", -1).await;
    let events = events_after_barrier(&mut w).await;
    assert_eq!(
        kinds(&events),
        [
            (NODE_DELETED, "/d".to_string()),
            (NODE_DATA_CHANGED, "/d2".to_string())
        ]
    );
    for n in &events {
        assert_eq!(n.zxid, -1);
        assert_eq!(n.event.state, STATE_SYNC_CONNECTED);
    }
}

#[tokio::test]
async fn watches_are_one_shot() {
    let mock = start_mock().await;
    let mut w = raw(&mock).await;
    let mut writer = raw(&mock).await;
    raw_create_ok(&mut writer, "/once", 0).await;
    raw_get(&mut w, "/once", true).await;
    w.request(OpCode::GetChildren, &path_watch("/once", true))
        .await
        .unwrap();
    raw_set(&mut writer, "/once", b"1", -1).await;
    raw_set(&mut writer, "/once", b"2", -1).await;
    raw_create_ok(&mut writer, "/once/a", 0).await;
    raw_create_ok(&mut writer, "/once/b", 0).await;
    let events = events_after_barrier(&mut w).await;
    assert_eq!(
        kinds(&events),
        [
            (NODE_DATA_CHANGED, "/once".to_string()),
            (NODE_CHILDREN_CHANGED, "/once".to_string())
        ]
    );
}

#[tokio::test]
async fn get_data_on_a_missing_node_registers_no_watch_but_exists_does() {
    let mock = start_mock().await;
    let mut w = raw(&mock).await;
    let mut writer = raw(&mock).await;
    assert_eq!(raw_get(&mut w, "/m1", true).await.header.err, -101);
    let r = w
        .request(OpCode::GetChildren, &path_watch("/m1", true))
        .await
        .unwrap();
    assert_eq!(r.header.err, -101);
    assert_eq!(raw_exists(&mut w, "/m2", true).await.header.err, -101);
    raw_create_ok(&mut writer, "/m1", 0).await;
    raw_create_ok(&mut writer, "/m2", 0).await;
    let events = events_after_barrier(&mut w).await;
    assert_eq!(kinds(&events), [(NODE_CREATED, "/m2".to_string())]);
}

#[tokio::test]
async fn a_create_fires_node_created_and_the_parents_children_changed() {
    let mock = start_mock().await;
    let mut w = raw(&mock).await;
    let mut writer = raw(&mock).await;
    raw_exists(&mut w, "/top", true).await;
    w.request(OpCode::GetChildren, &path_watch("/", true))
        .await
        .unwrap();
    raw_create_ok(&mut writer, "/top", 0).await;
    let events = events_after_barrier(&mut w).await;
    let mut got = kinds(&events);
    got.sort();
    assert_eq!(
        got,
        [
            (NODE_CREATED, "/top".to_string()),
            (NODE_CHILDREN_CHANGED, "/".to_string())
        ]
    );
}

#[tokio::test]
async fn the_writer_sees_its_own_notification_before_the_reply_to_its_write() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    raw_create_ok(&mut c, "/self", 0).await;
    raw_get(&mut c, "/self", true).await;
    assert!(c.take_events().is_empty());
    let r = raw_set(&mut c, "/self", b"v", -1).await;
    assert_eq!(r.header.err, 0);
    // `request` returns at the setData reply: the event must already be queued.
    assert_eq!(
        kinds(&c.take_events()),
        [(NODE_DATA_CHANGED, "/self".to_string())]
    );
    // Same for a child watch and a create.
    c.request(OpCode::GetChildren, &path_watch("/self", true))
        .await
        .unwrap();
    raw_create_ok(&mut c, "/self/kid", 0).await;
    assert_eq!(
        kinds(&c.take_events()),
        [(NODE_CHILDREN_CHANGED, "/self".to_string())]
    );
}

#[tokio::test]
async fn another_sessions_notification_precedes_its_next_reply() {
    let mock = start_mock().await;
    let mut w = raw(&mock).await;
    let mut writer = raw(&mock).await;
    raw_create_ok(&mut writer, "/o", 0).await;
    raw_get(&mut w, "/o", true).await;
    raw_set(&mut writer, "/o", b"1", -1).await;
    // The first reply the watcher gets after the write is preceded by the event.
    let ping = w.request_raw(OpCode::Ping as i32, &[]).await.unwrap();
    assert_eq!(ping.header.xid, -2);
    assert_eq!(
        kinds(&w.take_events()),
        [(NODE_DATA_CHANGED, "/o".to_string())]
    );
}

#[tokio::test]
async fn closing_a_session_deletes_its_ephemerals_and_notifies_watchers() {
    let mock = start_mock().await;
    let watcher = connect(&mock).await;
    watcher.create("/svc", b"", &persistent()).await.unwrap();
    let owner = connect(&mock).await;
    owner.create("/svc/e1", b"", &ephemeral()).await.unwrap();
    owner.create("/svc/e2", b"", &ephemeral()).await.unwrap();
    let (_, _, data_w) = watcher.get_and_watch_data("/svc/e1").await.unwrap();
    let (_, stat_w) = watcher.check_and_watch_stat("/svc/e2").await.unwrap();
    let (_, _, kids_w) = watcher.get_and_watch_children("/svc").await.unwrap();
    drop(owner); // the last handle: zookeeper-client sends closeSession
    let ev = with_timeout(QUICK, "NodeDeleted e1", data_w.changed()).await;
    assert_eq!(ev, node_event(EventType::NodeDeleted, "/svc/e1"));
    let ev = with_timeout(QUICK, "NodeDeleted e2", stat_w.changed()).await;
    assert_eq!(ev, node_event(EventType::NodeDeleted, "/svc/e2"));
    let ev = with_timeout(QUICK, "NodeChildrenChanged", kids_w.changed()).await;
    assert_eq!(ev, node_event(EventType::NodeChildrenChanged, "/svc"));
    assert!(watcher.list_children("/svc").await.unwrap().is_empty());
    // Both ephemerals went in the one closeSession transaction.
    let svc = watcher.check_stat("/svc").await.unwrap().unwrap();
    assert_eq!(svc.pzxid, mock.last_zxid());
}

#[tokio::test]
async fn a_raw_close_session_fires_the_closing_connections_own_watches_first() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    raw_create_ok(&mut c, "/mine", 1).await;
    raw_get(&mut c, "/mine", true).await;
    let zxid_before = mock.last_zxid();
    let reply = c
        .request_raw(OpCode::CloseSession as i32, &[])
        .await
        .unwrap();
    assert_eq!(reply.header.err, 0);
    assert_eq!(
        reply.header.zxid,
        zxid_before + 1,
        "closeSession is a transaction"
    );
    assert!(reply.body.is_empty());
    assert_eq!(
        kinds(&c.take_events()),
        [(NODE_DELETED, "/mine".to_string())],
        "the ephemeral's deletion is notified before the closeSession reply"
    );
    assert_eq!(
        c.read_frame().await.unwrap(),
        None,
        "then the socket is closed"
    );
    let mut other = raw(&mock).await;
    assert_eq!(
        raw_exists(&mut other, "/mine", false).await.header.err,
        -101
    );
}

#[tokio::test]
async fn set_watches_behind_the_tree_fires_the_missed_events_before_its_reply() {
    let mock = start_mock().await;
    let mut writer = raw(&mock).await;
    for p in ["/changed", "/same", "/kids", "/exists"] {
        raw_create_ok(&mut writer, p, 0).await;
    }
    let rel = writer.last_zxid;
    raw_set(&mut writer, "/changed", b"x", -1).await;
    raw_create_ok(&mut writer, "/kids/k", 0).await;

    let mut w = raw(&mock).await;
    let r = w
        .request_with_xid(
            -8,
            OpCode::SetWatches as i32,
            &zk_mock::codec::Record::to_bytes(&SetWatches {
                relative_zxid: rel,
                data_watches: vec!["/changed".into(), "/same".into(), "/deleted".into()],
                exist_watches: vec!["/exists".into(), "/absent".into()],
                child_watches: vec!["/kids".into(), "/same".into()],
            }),
        )
        .await
        .unwrap();
    assert_eq!((r.header.xid, r.header.err), (-8, 0), "the xid is echoed");
    assert!(r.body.is_empty());
    let mut fired = kinds(&w.take_events());
    fired.sort();
    assert_eq!(
        fired,
        [
            (NODE_CREATED, "/exists".to_string()),
            (NODE_DELETED, "/deleted".to_string()),
            (NODE_DATA_CHANGED, "/changed".to_string()),
            (NODE_CHILDREN_CHANGED, "/kids".to_string()),
        ]
    );
    // The others were re-registered and fire on the next change.
    raw_set(&mut writer, "/same", b"y", -1).await;
    raw_create_ok(&mut writer, "/absent", 0).await;
    raw_create_ok(&mut writer, "/same/c", 0).await;
    raw_set(&mut writer, "/changed", b"z", -1).await; // consumed above: silent now
    let mut later = kinds(&events_after_barrier(&mut w).await);
    later.sort();
    assert_eq!(
        later,
        [
            (NODE_CREATED, "/absent".to_string()),
            (NODE_DATA_CHANGED, "/same".to_string()),
            (NODE_CHILDREN_CHANGED, "/same".to_string()),
        ]
    );
}

#[tokio::test]
async fn watches_belong_to_the_connection_and_do_not_follow_a_reattached_session() {
    let mock = start_mock().await;
    let mut old = raw(&mock).await;
    raw_create_ok(&mut old, "/conn", 0).await;
    raw_get(&mut old, "/conn", true).await;
    let req = zk_mock::proto::ConnectRequest {
        time_out: 10_000,
        session_id: old.session_id,
        passwd: Some(old.passwd.clone()),
        last_zxid_seen: old.last_zxid,
        read_only: Some(false),
        ..Default::default()
    };
    let (mut new, resp) = zk_mock::client::RawClient::handshake(mock.addr(), &req)
        .await
        .unwrap();
    assert_eq!(resp.unwrap().session_id, old.session_id);
    raw_set(&mut new, "/conn", b"x", -1).await;
    assert!(new.take_events().is_empty());
    assert!(events_after_barrier(&mut new).await.is_empty());
}

#[tokio::test]
async fn a_real_client_reregisters_its_watches_after_a_reconnect_and_gets_missed_events() {
    let mock = start_mock().await;
    let proxy = Proxy::start(mock.addr()).await;
    let watcher = connect_to(&proxy.connect_string()).await;
    let writer = connect(&mock).await;
    writer.create("/rw", b"0", &persistent()).await.unwrap();
    writer.create("/rw-dir", b"", &persistent()).await.unwrap();
    let (_, _, data_w) = watcher.get_and_watch_data("/rw").await.unwrap();
    let (_, _, kids_w) = watcher.get_and_watch_children("/rw-dir").await.unwrap();
    let (_, created_w) = watcher.check_and_watch_stat("/rw-new").await.unwrap();
    let mut state = watcher.state_watcher();

    proxy.pause_and_cut();
    assert_eq!(
        with_timeout(QUICK, "Disconnected", state.changed()).await,
        SessionState::Disconnected
    );
    // Changes the watcher misses while it is away.
    writer.set_data("/rw", b"1", None).await.unwrap();
    writer
        .create("/rw-dir/k", b"", &persistent())
        .await
        .unwrap();
    writer.create("/rw-new", b"", &persistent()).await.unwrap();
    proxy.resume();
    assert_eq!(
        with_timeout(QUICK, "SyncConnected", state.changed()).await,
        SessionState::SyncConnected
    );
    let ev = with_timeout(QUICK, "missed NodeDataChanged", data_w.changed()).await;
    assert_eq!(ev, node_event(EventType::NodeDataChanged, "/rw"));
    let ev = with_timeout(QUICK, "missed NodeChildrenChanged", kids_w.changed()).await;
    assert_eq!(ev, node_event(EventType::NodeChildrenChanged, "/rw-dir"));
    let ev = with_timeout(QUICK, "missed NodeCreated", created_w.changed()).await;
    assert_eq!(ev, node_event(EventType::NodeCreated, "/rw-new"));
    // And the session is the same one.
    assert_eq!(mock.session_ids().len(), 2);
}

#[tokio::test]
async fn notifications_are_filtered_by_the_nodes_read_acl() {
    // Debian's 3.8.0 carries the ZOOKEEPER-4799 filter (recorded from the real server).
    let mock = start_mock().await;
    let mut w = raw(&mock).await;
    let mut c = raw(&mock).await;
    raw_exists(&mut w, "/hidden", true).await;
    w.request(OpCode::GetChildren, &path_watch("/", true))
        .await
        .unwrap();
    let write_only = zk_mock::proto::CreateRequest {
        acl: vec![zk_mock::proto::Acl::new(2, "world", "anyone")].into(),
        ..create_req("/hidden", None, 0)
    };
    let r = c.request(OpCode::Create, &write_only).await.unwrap();
    assert_eq!(r.header.err, 0);
    // The parent's ACL is open: its NodeChildrenChanged is delivered; the
    // unreadable node's NodeCreated is not.
    assert_eq!(
        kinds(&events_after_barrier(&mut w).await),
        [(NODE_CHILDREN_CHANGED, "/".to_string())]
    );
}

#[tokio::test]
async fn set_watches2_reregisters_persistent_watches_without_replaying_missed_events() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    raw_create_ok(&mut c, "/s", 0).await;
    raw_create_ok(&mut c, "/s/a", 0).await;
    let rel = c.last_zxid;
    raw_set(&mut c, "/s/a", b"x", -1).await;
    raw_create_ok(&mut c, "/s/a/k", 0).await;
    let mut w = raw(&mock).await;
    let sw = zk_mock::proto::SetWatches2 {
        relative_zxid: rel,
        persistent_watches: vec!["/s/a".into()],
        persistent_recursive_watches: vec!["/s".into()],
        ..Default::default()
    };
    let r = w
        .request_with_xid(
            -8,
            OpCode::SetWatches2 as i32,
            &zk_mock::codec::Record::to_bytes(&sw),
        )
        .await
        .unwrap();
    assert_eq!((r.header.xid, r.header.err), (-8, 0));
    assert!(w.take_events().is_empty(), "missed events are not replayed");
    raw_set(&mut c, "/s/a", b"y", -1).await;
    raw_create_ok(&mut c, "/s/a/k2", 0).await;
    // One NodeDataChanged although both watches match (one per connection).
    assert_eq!(
        kinds(&events_after_barrier(&mut w).await),
        [
            (NODE_DATA_CHANGED, "/s/a".to_string()),
            (NODE_CREATED, "/s/a/k2".to_string()),
            (NODE_CHILDREN_CHANGED, "/s/a".to_string()),
        ]
    );
}
