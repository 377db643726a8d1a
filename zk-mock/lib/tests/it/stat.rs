//! Every Stat field after create, setData, child create and child delete;
//! reported cversion arithmetic; zxid accounting.

use std::time::{SystemTime, UNIX_EPOCH};

use zookeeper_client::Error;

use crate::support::*;

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[tokio::test]
async fn a_fresh_tree_reports_zookeeper_special_node_stats() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    let root = c.check_stat("/").await.unwrap().unwrap();
    assert_eq!(
        (root.czxid, root.mzxid, root.pzxid, root.ctime, root.mtime),
        (0, 0, 0, 0, 0)
    );
    assert_eq!((root.version, root.cversion, root.aversion), (0, -1, 0));
    assert_eq!(
        (root.ephemeral_owner, root.data_length, root.num_children),
        (0, 0, 1)
    );
    let zk = c.check_stat("/zookeeper").await.unwrap().unwrap();
    assert_eq!((zk.cversion, zk.num_children, zk.pzxid), (-2, 2, 0));
    let quota = c.check_stat("/zookeeper/quota").await.unwrap().unwrap();
    assert_eq!((quota.cversion, quota.aversion, quota.ctime), (0, 0, 0));
    let config = c.check_stat("/zookeeper/config").await.unwrap().unwrap();
    assert_eq!((config.aversion, config.cversion, config.czxid), (-1, 0, 0));
}

/// A server told when its clock starts stamps ctime and mtime from that
/// start plus its session clock, not from the machine's time: with a
/// manual clock a test can assert them exactly.
#[tokio::test]
async fn ctime_and_mtime_follow_the_start_time_and_the_manual_clock() {
    let start = 1_700_000_000_123;
    let mock = zk_mock::ZkMock::builder()
        .clock(zk_mock::clock::ClockMode::Manual)
        .seed(7)
        .start_time(UNIX_EPOCH + std::time::Duration::from_millis(start as u64))
        .start()
        .await
        .unwrap();
    let c = connect(&mock).await;
    let (s, _) = c.create("/n", b"a", &persistent()).await.unwrap();
    assert_eq!((s.ctime, s.mtime), (start, start));
    mock.advance(std::time::Duration::from_millis(1500));
    let s = c.set_data("/n", b"b", None).await.unwrap();
    assert_eq!((s.ctime, s.mtime), (start, start + 1500));
    let (child, _) = c.create("/n/c", b"", &persistent()).await.unwrap();
    assert_eq!(child.ctime, start + 1500);
}

#[tokio::test]
async fn a_created_node_has_every_stat_field_set_from_its_transaction() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    let before = now_ms();
    let (s, _) = c.create("/n", b"12345", &persistent()).await.unwrap();
    let after = now_ms();
    let zxid = mock.last_zxid();
    assert_eq!((s.czxid, s.mzxid, s.pzxid), (zxid, zxid, zxid));
    assert!(
        s.ctime >= before - 1000 && s.ctime <= after + 1000,
        "ctime {} not near now",
        s.ctime
    );
    assert_eq!(s.mtime, s.ctime);
    assert_eq!((s.version, s.cversion, s.aversion), (0, 0, 0));
    assert_eq!(
        (s.ephemeral_owner, s.data_length, s.num_children),
        (0, 5, 0)
    );
}

#[tokio::test]
async fn set_data_changes_only_mzxid_mtime_version_and_data_length() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    let (created, _) = c.create("/n", b"12345", &persistent()).await.unwrap();
    let set = c.set_data("/n", b"xy", Some(0)).await.unwrap();
    assert_eq!(set.mzxid, mock.last_zxid());
    assert!(set.mzxid > created.mzxid);
    assert!(set.mtime >= created.mtime);
    assert_eq!(set.version, 1);
    assert_eq!(set.data_length, 2);
    assert_eq!(set.czxid, created.czxid);
    assert_eq!(set.ctime, created.ctime);
    assert_eq!(set.pzxid, created.pzxid, "setData leaves pzxid alone");
    assert_eq!((set.cversion, set.aversion), (0, 0));
    assert_eq!(set.num_children, 0);
    let (_, read) = c.get_data("/n").await.unwrap();
    assert_eq!(read, set);
}

#[tokio::test]
async fn a_child_create_and_delete_move_the_parents_pzxid_cversion_and_count() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    let (parent, _) = c.create("/p", b"", &persistent()).await.unwrap();
    let (child, _) = c.create("/p/c", b"", &persistent()).await.unwrap();
    let p1 = c.check_stat("/p").await.unwrap().unwrap();
    assert_eq!(p1.pzxid, child.czxid);
    assert_eq!((p1.cversion, p1.num_children), (1, 1));
    assert_eq!(
        (p1.mzxid, p1.version, p1.mtime),
        (parent.mzxid, 0, parent.mtime)
    );

    c.delete("/p/c", None).await.unwrap();
    let delete_zxid = mock.last_zxid();
    let p2 = c.check_stat("/p").await.unwrap().unwrap();
    assert_eq!(p2.pzxid, delete_zxid);
    assert!(p2.pzxid > child.czxid);
    assert_eq!((p2.cversion, p2.num_children), (2, 0));
    assert_eq!((p2.mzxid, p2.version), (parent.mzxid, 0));
}

#[tokio::test]
async fn the_root_cversion_goes_from_minus_one_to_zero_on_the_first_create() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    assert_eq!(c.check_stat("/").await.unwrap().unwrap().cversion, -1);
    let (child, _) = c.create("/first", b"", &persistent()).await.unwrap();
    let root = c.check_stat("/").await.unwrap().unwrap();
    assert_eq!((root.cversion, root.num_children), (0, 2));
    assert_eq!(root.pzxid, child.czxid);
}

#[tokio::test]
async fn reported_cversion_counts_creates_and_deletes_but_the_sequence_counts_creates() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    c.create("/q", b"", &persistent()).await.unwrap();
    for _ in 0..3 {
        c.create("/q/n-", b"", &sequential()).await.unwrap();
    }
    c.delete("/q/n-0000000000", None).await.unwrap();
    c.delete("/q/n-0000000001", None).await.unwrap();
    let q = c.check_stat("/q").await.unwrap().unwrap();
    assert_eq!((q.cversion, q.num_children), (5, 1));
    let (_, next) = c.create("/q/n-", b"", &sequential()).await.unwrap();
    assert_eq!(next.to_string(), "0000000003");
    assert_eq!(c.check_stat("/q").await.unwrap().unwrap().cversion, 6);
}

#[tokio::test]
async fn a_failed_create_leaves_the_parent_and_the_sequence_untouched() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    c.create("/q", b"", &persistent()).await.unwrap();
    c.create("/q/x", b"", &persistent()).await.unwrap();
    let before = c.check_stat("/q").await.unwrap().unwrap();
    assert_eq!(
        c.create("/q/x", b"", &persistent()).await,
        Err(Error::NodeExists)
    );
    assert_eq!(c.check_stat("/q").await.unwrap().unwrap(), before);
    let (_, s) = c.create("/q/s", b"", &sequential()).await.unwrap();
    assert_eq!(s.into_i64(), 1);
}

#[tokio::test]
async fn the_first_session_is_zxid_1_and_its_first_create_is_czxid_2() {
    let mock = start_mock().await;
    assert_eq!(mock.last_zxid(), 0);
    let c = connect(&mock).await;
    assert_eq!(mock.last_zxid(), 1, "createSession is a transaction");
    let (s, _) = c.create("/a", b"", &persistent()).await.unwrap();
    assert_eq!(s.czxid, 2);
    assert_eq!(mock.last_zxid(), 2);
}

#[tokio::test]
async fn failed_writes_consume_zxids_and_reads_do_not() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    let (a, _) = c.create("/a", b"", &persistent()).await.unwrap();
    assert_eq!(a.czxid, 2);
    // Failing writes: each one is an error transaction.
    assert_eq!(
        c.create("/a", b"", &persistent()).await,
        Err(Error::NodeExists)
    ); // 3
    assert_eq!(c.set_data("/a", b"", Some(9)).await, Err(Error::BadVersion)); // 4
    assert_eq!(c.delete("/nope", None).await, Err(Error::NoNode)); // 5
    assert_eq!(
        c.create("/no/parent", b"", &persistent()).await,
        Err(Error::NoNode)
    ); // 6
    assert_eq!(mock.last_zxid(), 6);
    // Reads: none.
    c.get_data("/a").await.unwrap();
    c.check_stat("/missing").await.unwrap();
    c.list_children("/").await.unwrap();
    c.get_acl("/a").await.unwrap();
    c.count_descendants_number("/").await.unwrap();
    c.list_ephemerals("/").await.unwrap();
    c.sync("/").await.unwrap();
    assert_eq!(mock.last_zxid(), 6);
    let (b, _) = c.create("/b", b"", &persistent()).await.unwrap();
    assert_eq!(b.czxid, 7);
    // A second session costs one zxid.
    let _d = connect(&mock).await;
    assert_eq!(mock.last_zxid(), 8);
}

#[tokio::test]
async fn every_reply_header_carries_the_servers_last_zxid() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    assert_eq!(c.last_zxid, 0, "the ConnectResponse has no zxid");
    raw_create_ok(&mut c, "/z", 0).await;
    assert_eq!(c.last_zxid, 2);
    let failed = raw_create(&mut c, "/z", None, 0).await;
    assert_eq!((failed.header.err, failed.header.zxid), (-110, 3));
    let read = raw_get(&mut c, "/z", false).await;
    assert_eq!(
        read.header.zxid, 3,
        "a read reports the last zxid, not the node's mzxid"
    );
    let ping = c
        .request_raw(zk_mock::proto::OpCode::Ping as i32, &[])
        .await
        .unwrap();
    assert_eq!((ping.header.xid, ping.header.zxid), (-2, 3));
}
