//! Every data operation through `zookeeper-client`, plus null data through the raw client.

use zk_mock::proto::{GetDataResponse, OpCode};
use zookeeper_client::{Acl, Acls, AuthId, CreateMode, Error, MultiReadResult, Permission};

use crate::support::*;

#[tokio::test]
async fn a_persistent_node_reads_back_its_data_and_survives_its_session() {
    let mock = start_mock().await;
    let a = connect(&mock).await;
    let (stat, seq) = a.create("/p", b"hello", &persistent()).await.unwrap();
    assert_eq!(seq.into_i64(), -1);
    assert_eq!(stat.data_length, 5);
    assert_eq!(stat.ephemeral_owner, 0);
    let (data, read) = a.get_data("/p").await.unwrap();
    assert_eq!(data, b"hello");
    assert_eq!(read, stat);
    drop(a);

    let b = connect(&mock).await;
    assert_eq!(b.get_data("/p").await.unwrap().0, b"hello");
}

#[tokio::test]
async fn an_ephemeral_node_is_owned_by_the_creating_session() {
    let mock = start_mock().await;
    let a = connect(&mock).await;
    let (stat, _) = a.create("/e", b"", &ephemeral()).await.unwrap();
    assert_eq!(stat.ephemeral_owner, a.session_id().0);
    assert_ne!(stat.ephemeral_owner, 0);
    let b = connect(&mock).await;
    let seen = b.check_stat("/e").await.unwrap().unwrap();
    assert_eq!(seen.ephemeral_owner, a.session_id().0);
}

#[tokio::test]
async fn sequential_nodes_get_ten_digit_suffixes_counting_from_zero() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    c.create("/q", b"", &persistent()).await.unwrap();
    let (_, s0) = c.create("/q/job-", b"", &sequential()).await.unwrap();
    let (_, s1) = c
        .create("/q/job-", b"", &ephemeral_sequential())
        .await
        .unwrap();
    let (_, s2) = c.create("/q/other-", b"", &sequential()).await.unwrap();
    assert_eq!((s0.into_i64(), s1.into_i64(), s2.into_i64()), (0, 1, 2));
    assert_eq!(s1.to_string(), "0000000001");
    let mut children = c.list_children("/q").await.unwrap();
    children.sort();
    assert_eq!(
        children,
        ["job-0000000000", "job-0000000001", "other-0000000002"]
    );
    let eph = c.check_stat("/q/job-0000000001").await.unwrap().unwrap();
    assert_eq!(eph.ephemeral_owner, c.session_id().0);
    let per = c.check_stat("/q/job-0000000000").await.unwrap().unwrap();
    assert_eq!(per.ephemeral_owner, 0);
}

#[tokio::test]
async fn the_first_sequential_child_of_the_root_is_numbered_zero() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    let (_, s) = c.create("/seq-", b"", &sequential()).await.unwrap();
    assert_eq!(s.into_i64(), 0);
    assert!(c.check_stat("/seq-0000000000").await.unwrap().is_some());
}

#[tokio::test]
async fn a_container_reports_no_ephemeral_owner_and_may_have_children() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    let (stat, _) = c.create("/box", b"c", &container()).await.unwrap();
    assert_eq!(stat.ephemeral_owner, 0);
    assert_eq!(stat.data_length, 1);
    c.create("/box/item", b"", &persistent()).await.unwrap();
    c.create("/box/eph", b"", &ephemeral()).await.unwrap();
    assert_eq!(c.check_stat("/box").await.unwrap().unwrap().num_children, 2);
}

#[tokio::test]
async fn create2_returns_the_same_stat_a_later_read_reports() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    let (created, _) = c.create("/s", b"abc", &persistent()).await.unwrap();
    let exists = c.check_stat("/s").await.unwrap().unwrap();
    let (_, via_children) = c.get_children("/s").await.unwrap();
    assert_eq!(created, exists);
    assert_eq!(created, via_children);
}

#[tokio::test]
async fn delete_honours_the_expected_version() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    c.create("/d", b"", &persistent()).await.unwrap();
    c.set_data("/d", b"1", None).await.unwrap();
    assert_eq!(c.delete("/d", Some(0)).await, Err(Error::BadVersion));
    assert!(c.check_stat("/d").await.unwrap().is_some());
    c.delete("/d", Some(1)).await.unwrap();
    assert_eq!(c.check_stat("/d").await.unwrap(), None);
    assert_eq!(c.delete("/d", None).await, Err(Error::NoNode));
}

#[tokio::test]
async fn delete_of_a_node_with_children_is_not_empty() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    c.create("/n", b"", &persistent()).await.unwrap();
    c.create("/n/c", b"", &persistent()).await.unwrap();
    assert_eq!(c.delete("/n", None).await, Err(Error::NotEmpty));
    c.delete("/n/c", None).await.unwrap();
    c.delete("/n", None).await.unwrap();
}

#[tokio::test]
async fn exists_distinguishes_a_missing_node_from_a_present_one() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    assert_eq!(c.check_stat("/nope").await.unwrap(), None);
    assert_eq!(c.get_data("/nope").await, Err(Error::NoNode));
    assert_eq!(c.get_children("/nope").await, Err(Error::NoNode));
    assert_eq!(c.list_children("/nope").await, Err(Error::NoNode));
    let root = c.check_stat("/").await.unwrap().unwrap();
    assert_eq!(root.num_children, 1);
}

#[tokio::test]
async fn set_data_bumps_the_version_and_checks_the_expected_one() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    c.create("/v", b"0", &persistent()).await.unwrap();
    let s1 = c.set_data("/v", b"1", Some(0)).await.unwrap();
    assert_eq!(s1.version, 1);
    assert_eq!(
        c.set_data("/v", b"x", Some(0)).await,
        Err(Error::BadVersion)
    );
    assert_eq!(
        c.set_data("/v", b"x", Some(-2)).await,
        Err(Error::BadVersion)
    );
    let s2 = c.set_data("/v", b"1", None).await.unwrap();
    assert_eq!(s2.version, 2, "identical data still bumps the version");
    assert_eq!(c.set_data("/missing", b"", None).await, Err(Error::NoNode));
    assert_eq!(c.get_data("/v").await.unwrap().0, b"1");
}

#[tokio::test]
async fn get_children_and_get_children2_list_the_same_children() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    c.create("/kids", b"", &persistent()).await.unwrap();
    for k in ["a", "b", "c"] {
        c.create(&format!("/kids/{k}"), b"", &persistent())
            .await
            .unwrap();
    }
    let mut plain = c.list_children("/kids").await.unwrap();
    let (mut with_stat, stat) = c.get_children("/kids").await.unwrap();
    plain.sort();
    with_stat.sort();
    assert_eq!(plain, ["a", "b", "c"]);
    assert_eq!(plain, with_stat);
    assert_eq!(stat.num_children, 3);
    assert_eq!(c.list_children("/").await.unwrap().len(), 2);
    let mut zk = c.list_children("/zookeeper").await.unwrap();
    zk.sort();
    assert_eq!(zk, ["config", "quota"]);
}

#[tokio::test]
async fn sync_succeeds_on_any_path_and_writes_nothing() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    let before = mock.last_zxid();
    c.sync("/").await.unwrap();
    c.sync("/does/not/exist").await.unwrap();
    assert_eq!(mock.last_zxid(), before);
}

#[tokio::test]
async fn null_data_reads_back_as_null_and_empty_data_as_empty() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    assert_eq!(raw_create(&mut c, "/null", None, 0).await.header.err, 0);
    assert_eq!(
        raw_create(&mut c, "/empty", Some(b""), 0).await.header.err,
        0
    );
    let null = raw_get(&mut c, "/null", false).await;
    assert_eq!(&null.body[..4], &[0xff; 4], "null is encoded as length -1");
    let null: GetDataResponse = null.decode().unwrap();
    assert_eq!(null.data, None);
    assert_eq!(null.stat.data_length, 0);
    let empty: GetDataResponse = raw_get(&mut c, "/empty", false).await.decode().unwrap();
    assert_eq!(empty.data.as_deref(), Some(&b""[..]));
    assert_eq!(empty.stat.data_length, 0);
    // Special nodes hold empty (not null) data.
    let root: GetDataResponse = raw_get(&mut c, "/", false).await.decode().unwrap();
    assert_eq!(root.data.as_deref(), Some(&b""[..]));
    // setData with null data turns a node's data null.
    let r = c
        .request(
            OpCode::SetData,
            &zk_mock::proto::SetDataRequest {
                path: "/empty".into(),
                data: None,
                version: -1,
            },
        )
        .await
        .unwrap();
    assert_eq!(r.header.err, 0);
    let now: GetDataResponse = raw_get(&mut c, "/empty", false).await.decode().unwrap();
    assert_eq!(now.data, None);
}

#[tokio::test]
async fn get_acl_reports_open_acls_and_the_read_only_config_node() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    let (acl, stat) = c.get_acl("/").await.unwrap();
    assert_eq!(acl, [Acl::new(Permission::ALL, AuthId::anyone())]);
    assert_eq!(stat.aversion, 0);
    let (acl, stat) = c.get_acl("/zookeeper/config").await.unwrap();
    assert_eq!(acl, [Acl::new(Permission::READ, AuthId::anyone())]);
    assert_eq!(stat.aversion, -1);
    assert_eq!(c.get_acl("/missing").await, Err(Error::NoNode));
}

#[tokio::test]
async fn set_acl_bumps_aversion_only_and_is_enforced() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    let (created, _) = c.create("/acl", b"", &persistent()).await.unwrap();
    let read_only = [Acl::new(
        Permission::READ | Permission::ADMIN,
        AuthId::anyone(),
    )];
    assert_eq!(
        c.set_acl("/acl", &read_only, Some(1)).await,
        Err(Error::BadVersion)
    );
    let stat = c.set_acl("/acl", &read_only, Some(0)).await.unwrap();
    assert_eq!(stat.aversion, 1);
    assert_eq!(stat.version, created.version);
    assert_eq!(stat.mzxid, created.mzxid, "setACL does not change mzxid");
    assert_eq!(c.get_acl("/acl").await.unwrap().0, read_only);
    assert_eq!(c.set_data("/acl", b"x", None).await, Err(Error::NoAuth));
    assert_eq!(
        c.create("/acl/child", b"", &persistent()).await,
        Err(Error::NoAuth)
    );
    assert_eq!(c.get_data("/acl").await.unwrap().0, b"");
    assert_eq!(
        c.set_acl("/missing", &read_only, None).await,
        Err(Error::NoNode)
    );
}

#[tokio::test]
async fn creating_with_creator_acls_without_auth_is_invalid_acl() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    let opts = CreateMode::Persistent.with_acls(Acls::creator_all());
    assert_eq!(c.create("/mine", b"", &opts).await, Err(Error::InvalidAcl));
    assert_eq!(c.check_stat("/mine").await.unwrap(), None);
}

#[tokio::test]
async fn get_ephemerals_lists_only_this_sessions_ephemerals_by_prefix() {
    let mock = start_mock().await;
    let a = connect(&mock).await;
    let b = connect(&mock).await;
    a.create("/app", b"", &persistent()).await.unwrap();
    a.create("/app/a1", b"", &ephemeral()).await.unwrap();
    a.create("/app/a2", b"", &ephemeral()).await.unwrap();
    a.create("/apple", b"", &ephemeral()).await.unwrap();
    a.create("/app/p", b"", &persistent()).await.unwrap();
    b.create("/app/b1", b"", &ephemeral()).await.unwrap();

    let mut all = a.list_ephemerals("/").await.unwrap();
    all.sort();
    assert_eq!(all, ["/app/a1", "/app/a2", "/apple"]);
    // A plain string prefix: `/app` also matches `/apple`, as on ZooKeeper.
    let mut prefixed = a.list_ephemerals("/app").await.unwrap();
    prefixed.sort();
    assert_eq!(prefixed, ["/app/a1", "/app/a2", "/apple"]);
    assert_eq!(b.list_ephemerals("/").await.unwrap(), ["/app/b1"]);
    // A raw prefix with a trailing '/' (the Rust client refuses to send one).
    let mut r = raw(&mock).await;
    let prefix = a.list_ephemerals("/app/a").await.unwrap();
    assert_eq!(prefix.len(), 2);
    let other = r
        .request(OpCode::GetEphemerals, &path_req("/"))
        .await
        .unwrap();
    let other: zk_mock::proto::GetEphemeralsResponse = other.decode().unwrap();
    assert!(
        other.ephemerals.is_empty(),
        "another session sees only its own"
    );
    raw_create_ok(&mut r, "/app/r1", 1).await;
    raw_create_ok(&mut r, "/apple2", 1).await;
    let slash = r
        .request(OpCode::GetEphemerals, &path_req("/app/"))
        .await
        .unwrap();
    let slash: zk_mock::proto::GetEphemeralsResponse = slash.decode().unwrap();
    assert_eq!(slash.ephemerals, ["/app/r1"]);
    assert!(b.list_ephemerals("/none").await.unwrap().is_empty());
}

#[tokio::test]
async fn get_all_children_number_counts_every_descendant() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    assert_eq!(c.count_descendants_number("/").await.unwrap(), 3);
    assert_eq!(c.count_descendants_number("/zookeeper").await.unwrap(), 2);
    c.create("/t", b"", &persistent()).await.unwrap();
    c.create("/t/a", b"", &persistent()).await.unwrap();
    c.create("/t/a/b", b"", &persistent()).await.unwrap();
    c.create("/t/c", b"", &persistent()).await.unwrap();
    c.create("/tt", b"", &persistent()).await.unwrap();
    assert_eq!(c.count_descendants_number("/t").await.unwrap(), 3);
    assert_eq!(c.count_descendants_number("/t/a/b").await.unwrap(), 0);
    assert_eq!(c.count_descendants_number("/").await.unwrap(), 8);
    assert_eq!(c.count_descendants_number("/x").await, Err(Error::NoNode));
}

#[tokio::test]
async fn multi_read_evaluates_each_op_on_its_own() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    c.create("/r", b"data", &persistent()).await.unwrap();
    c.create("/r/k", b"", &persistent()).await.unwrap();
    let mut reader = c.new_multi_reader();
    reader.add_get_data("/r").unwrap();
    reader.add_get_data("/missing").unwrap();
    reader.add_get_children("/r").unwrap();
    reader.add_get_children("/missing").unwrap();
    let results = reader.commit().await.unwrap();
    assert_eq!(results.len(), 4);
    match &results[0] {
        MultiReadResult::Data { data, stat } => {
            assert_eq!(data, b"data");
            assert_eq!(stat.num_children, 1);
        }
        other => panic!("expected data, got {other:?}"),
    }
    assert!(matches!(
        &results[1],
        MultiReadResult::Error { err: Error::NoNode }
    ));
    match &results[2] {
        MultiReadResult::Children { children } => assert_eq!(children, &["k"]),
        other => panic!("expected children, got {other:?}"),
    }
    assert!(matches!(
        &results[3],
        MultiReadResult::Error { err: Error::NoNode }
    ));
}

#[tokio::test]
async fn creator_acls_after_digest_auth_lock_out_other_sessions() {
    let mock = start_mock().await;
    let alice = connect(&mock).await;
    alice.auth("digest", b"alice:secret").await.unwrap();
    let mut users = alice.list_auth_users().await.unwrap();
    users.sort_by(|a, b| a.scheme().cmp(b.scheme()));
    assert_eq!(
        users
            .iter()
            .map(|u| (u.scheme(), u.user()))
            .collect::<Vec<_>>(),
        [("digest", "alice"), ("ip", "127.0.0.1")]
    );
    let opts = CreateMode::Persistent.with_acls(Acls::creator_all());
    alice.create("/private", b"s", &opts).await.unwrap();
    let (acl, _) = alice.get_acl("/private").await.unwrap();
    // auth:<empty> expands to the caller's digest identity: user:base64(sha1("alice:secret")).
    assert_eq!(
        acl,
        [Acl::new(
            Permission::ALL,
            AuthId::new("digest", "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=")
        )]
    );
    assert_eq!(alice.get_data("/private").await.unwrap().0, b"s");

    let bob = connect(&mock).await;
    assert_eq!(bob.get_data("/private").await, Err(Error::NoAuth));
    assert_eq!(
        bob.set_data("/private", b"x", None).await,
        Err(Error::NoAuth)
    );
    assert_eq!(bob.list_children("/private").await, Err(Error::NoAuth));
    // getACL needs READ or ADMIN; bob has neither.
    assert_eq!(bob.get_acl("/private").await, Err(Error::NoAuth));
    bob.auth("digest", b"alice:secret").await.unwrap();
    assert_eq!(bob.get_data("/private").await.unwrap().0, b"s");
}

#[tokio::test]
async fn concurrent_requests_from_one_client_are_answered_in_send_order() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    c.create("/load", b"", &persistent()).await.unwrap();
    let opts = sequential();
    let futures: Vec<_> = (0..200).map(|_| c.create("/load/n-", b"", &opts)).collect();
    let results = futures::future::join_all(futures).await;
    for (i, r) in results.into_iter().enumerate() {
        let (stat, seq) = r.unwrap();
        assert_eq!(
            seq.into_i64(),
            i as i64,
            "the i-th request sent gets suffix i"
        );
        assert_eq!(stat.czxid, 3 + i as i64);
    }
    assert_eq!(c.count_descendants_number("/load").await.unwrap(), 200);
}

#[tokio::test]
async fn a_chrooted_client_sees_paths_relative_to_its_root() {
    let mock = start_mock().await;
    let plain = connect(&mock).await;
    plain.create("/app", b"", &persistent()).await.unwrap();
    let rooted = connect_to(&format!("{}/app", mock.connect_string())).await;
    let (_, seq) = rooted
        .create("/job-", b"", &ephemeral_sequential())
        .await
        .unwrap();
    assert_eq!(seq.into_i64(), 0);
    assert_eq!(
        plain.list_children("/app").await.unwrap(),
        ["job-0000000000"]
    );
    assert_eq!(
        rooted.list_ephemerals("/").await.unwrap(),
        ["/job-0000000000"]
    );
    let (_, w) = rooted.check_and_watch_stat("/later").await.unwrap();
    plain
        .create("/app/later", b"", &persistent())
        .await
        .unwrap();
    let ev = with_timeout(QUICK, "NodeCreated", w.changed()).await;
    assert_eq!(
        ev,
        node_event(zookeeper_client::EventType::NodeCreated, "/later")
    );
}
