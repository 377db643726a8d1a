//! Error codes and the order in which ZooKeeper checks them.

use zk_mock::proto::{perms, Acl, DeleteRequest, OpCode, SetAclRequest, SetDataRequest};
use zookeeper_client::Error;

use crate::support::*;

const NONODE: i32 = -101;
const NOAUTH: i32 = -102;
const BADVERSION: i32 = -103;
const NOCHILDRENFOREPHEMERALS: i32 = -108;
const NODEEXISTS: i32 = -110;
const NOTEMPTY: i32 = -111;
const BADARGUMENTS: i32 = -8;

fn server_bad_arguments() -> Error {
    Error::BadArguments(&"server error")
}

#[tokio::test]
async fn creating_an_existing_node_is_node_exists() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    c.create("/x", b"", &persistent()).await.unwrap();
    assert_eq!(
        c.create("/x", b"", &persistent()).await,
        Err(Error::NodeExists)
    );
    assert_eq!(
        c.create("/x", b"", &ephemeral()).await,
        Err(Error::NodeExists)
    );
    assert_eq!(
        c.create("/zookeeper", b"", &persistent()).await,
        Err(Error::NodeExists)
    );
}

#[tokio::test]
async fn creating_under_a_missing_parent_is_no_node() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    assert_eq!(
        c.create("/a/b", b"", &persistent()).await,
        Err(Error::NoNode)
    );
    assert_eq!(
        c.create("/a/b-", b"", &sequential()).await,
        Err(Error::NoNode)
    );
}

#[tokio::test]
async fn an_ephemeral_cannot_have_children() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    c.create("/e", b"", &ephemeral()).await.unwrap();
    assert_eq!(
        c.create("/e/c", b"", &persistent()).await,
        Err(Error::NoChildrenForEphemerals)
    );
    assert_eq!(
        c.create("/e/c", b"", &ephemeral_sequential()).await,
        Err(Error::NoChildrenForEphemerals)
    );
    let mut r = raw(&mock).await;
    assert_eq!(
        raw_create(&mut r, "/e/c", None, 0).await.header.err,
        NOCHILDRENFOREPHEMERALS
    );
}

#[tokio::test]
async fn bad_version_beats_not_empty_on_delete() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    c.create("/p", b"", &persistent()).await.unwrap();
    c.create("/p/c", b"", &persistent()).await.unwrap();
    assert_eq!(c.delete("/p", Some(3)).await, Err(Error::BadVersion));
    assert_eq!(c.delete("/p", Some(0)).await, Err(Error::NotEmpty));
    assert_eq!(c.delete("/p", None).await, Err(Error::NotEmpty));
    // A missing parent is NoNode before anything else.
    assert_eq!(c.delete("/q/c", Some(3)).await, Err(Error::NoNode));
}

#[tokio::test]
async fn special_nodes_cannot_be_deleted() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    for p in ["/zookeeper", "/zookeeper/quota", "/zookeeper/config"] {
        assert_eq!(c.delete(p, None).await, Err(server_bad_arguments()), "{p}");
    }
    let mut r = raw(&mock).await;
    let del = r
        .request(
            OpCode::Delete,
            &DeleteRequest {
                path: "/".into(),
                version: -1,
            },
        )
        .await
        .unwrap();
    assert_eq!(del.header.err, BADARGUMENTS);
    assert_eq!(c.count_descendants_number("/").await.unwrap(), 3);
}

#[tokio::test]
async fn clients_may_create_and_delete_their_own_nodes_under_zookeeper() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    c.create("/zookeeper/mine", b"", &persistent())
        .await
        .unwrap();
    c.delete("/zookeeper/mine", None).await.unwrap();
}

#[tokio::test]
async fn the_config_node_is_read_only() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    assert_eq!(c.get_config().await.unwrap().0, b"");
    assert_eq!(
        c.set_data("/zookeeper/config", b"x", None).await,
        Err(Error::NoAuth)
    );
    assert_eq!(
        c.create("/zookeeper/config/x", b"", &persistent()).await,
        Err(Error::NoAuth)
    );
}

#[tokio::test]
async fn invalid_create_paths_are_bad_arguments_after_the_parent_lookup() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    raw_create_ok(&mut c, "/foo", 0).await;
    let cases: &[(&str, i32, i32)] = &[
        ("", 0, BADARGUMENTS),
        ("noslash", 0, BADARGUMENTS),
        ("/foo/", 0, BADARGUMENTS),
        ("/.", 0, BADARGUMENTS),
        ("/foo/..", 0, BADARGUMENTS),
        ("/bad\u{1}char", 0, BADARGUMENTS),
        ("/nul\u{0}", 0, BADARGUMENTS),
        ("/private\u{e000}", 0, BADARGUMENTS),
        ("/emoji\u{1f600}", 0, BADARGUMENTS),
        ("/", 0, NODEEXISTS),
        // Parent lookup happens before full path validation.
        ("/a//b", 0, NONODE),
        ("/missing/", 0, NONODE),
        // Unknown create flags.
        ("/flags", 7, BADARGUMENTS),
        ("/flags", -1, BADARGUMENTS),
    ];
    for &(path, flags, want) in cases {
        let r = raw_create(&mut c, path, None, flags).await;
        assert_eq!(r.header.err, want, "create {path:?} flags {flags}");
    }
    // A sequential create may end in '/': the suffix makes it valid.
    let r = raw_create(&mut c, "/foo/", None, 2).await;
    assert_eq!(r.header.err, 0);
    let created: zk_mock::proto::CreateResponse = r.decode().unwrap();
    assert_eq!(created.path, "/foo/0000000000");
}

#[tokio::test]
async fn set_data_validates_the_path_but_delete_and_reads_only_look_it_up() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    raw_create_ok(&mut c, "/foo", 0).await;
    let set = c
        .request(
            OpCode::SetData,
            &SetDataRequest {
                path: "/foo/".into(),
                data: None,
                version: -1,
            },
        )
        .await
        .unwrap();
    assert_eq!(set.header.err, BADARGUMENTS);
    let del = c
        .request(
            OpCode::Delete,
            &DeleteRequest {
                path: "/foo/".into(),
                version: -1,
            },
        )
        .await
        .unwrap();
    assert_eq!(del.header.err, NONODE);
    assert_eq!(raw_get(&mut c, "/foo/", false).await.header.err, NONODE);
    assert_eq!(raw_exists(&mut c, "/foo/", false).await.header.err, NONODE);
    // "" is an alias of the root for reads.
    let root = raw_get(&mut c, "", false).await;
    assert_eq!(root.header.err, 0);
}

#[tokio::test]
async fn the_parents_acl_is_checked_before_the_childs_existence() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    // /zookeeper/config is READ-only: NoAuth comes before the full path check.
    assert_eq!(
        raw_create(&mut c, "/zookeeper/config/x", None, 0)
            .await
            .header
            .err,
        NOAUTH
    );
    assert_eq!(
        raw_create(&mut c, "/zookeeper/config/", None, 0)
            .await
            .header
            .err,
        NOAUTH
    );
    raw_create_ok(&mut c, "/locked", 0).await;
    raw_create_ok(&mut c, "/locked/c", 0).await;
    let r = c
        .request(
            OpCode::SetAcl,
            &SetAclRequest {
                path: "/locked".into(),
                acl: vec![Acl::new(perms::READ | perms::ADMIN, "world", "anyone")],
                version: 0,
            },
        )
        .await
        .unwrap();
    assert_eq!(r.header.err, 0);
    // create: NoAuth on the parent beats NodeExists.
    assert_eq!(
        raw_create(&mut c, "/locked/c", None, 0).await.header.err,
        NOAUTH
    );
    // delete: NoAuth on the parent beats NoNode and BadVersion.
    for (path, version) in [("/locked/missing", -1), ("/locked/c", 7)] {
        let r = c
            .request(
                OpCode::Delete,
                &DeleteRequest {
                    path: path.into(),
                    version,
                },
            )
            .await
            .unwrap();
        assert_eq!(r.header.err, NOAUTH, "delete {path}");
    }
    // But a missing parent is NoNode first.
    assert_eq!(
        raw_create(&mut c, "/nowhere/x", None, 0).await.header.err,
        NONODE
    );
    assert_eq!(
        raw_create(&mut c, "/zookeeper/quota", None, 0)
            .await
            .header
            .err,
        NODEEXISTS
    );
}

#[tokio::test]
async fn a_delete_of_an_existing_node_with_the_wrong_version_is_bad_version_even_when_empty() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    raw_create_ok(&mut c, "/v", 0).await;
    let del = c
        .request(
            OpCode::Delete,
            &DeleteRequest {
                path: "/v".into(),
                version: 1,
            },
        )
        .await
        .unwrap();
    assert_eq!(del.header.err, BADVERSION);
    raw_create_ok(&mut c, "/v/c", 0).await;
    let del = c
        .request(
            OpCode::Delete,
            &DeleteRequest {
                path: "/v".into(),
                version: 0,
            },
        )
        .await
        .unwrap();
    assert_eq!(del.header.err, NOTEMPTY);
}

#[tokio::test]
async fn ttl_nodes_are_unimplemented_by_default_and_still_cost_a_zxid() {
    let mock = start_mock().await;
    let c = connect(&mock).await;
    let zxid = mock.last_zxid();
    let opts = persistent().with_ttl(std::time::Duration::from_secs(5));
    assert_eq!(
        c.create("/ttl", b"", &opts).await,
        Err(Error::Unimplemented)
    );
    assert_eq!(mock.last_zxid(), zxid + 1);
    let mut r = raw(&mock).await;
    // create2 with a TTL flag: the same answer.
    let reply = r
        .request(OpCode::Create2, &create_req("/ttl2", None, 5))
        .await
        .unwrap();
    assert_eq!(reply.header.err, -6);
    assert_eq!(c.check_stat("/ttl").await.unwrap(), None);
}

#[tokio::test]
async fn reconfig_is_disabled_on_a_standalone_server_as_a_failed_transaction() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    let zxid = mock.last_zxid();
    // ReconfigRequest{joiningServers, leavingServers, newMembers: ustring; curConfigId: long}
    let mut body = Vec::new();
    for _ in 0..3 {
        body.extend_from_slice(&0i32.to_be_bytes());
    }
    body.extend_from_slice(&(-1i64).to_be_bytes());
    let r = c.request_raw(OpCode::Reconfig as i32, &body).await.unwrap();
    assert_eq!((r.header.err, r.header.zxid), (-123, zxid + 1));
}

#[tokio::test]
async fn exists_rejects_a_nul_in_the_path_and_sync_echoes_any_path() {
    let mock = start_mock().await;
    let mut c = raw(&mock).await;
    assert_eq!(
        raw_exists(&mut c, "/a\0b", false).await.header.err,
        BADARGUMENTS
    );
    let r = c
        .request(OpCode::Sync, &path_req("/what/ever"))
        .await
        .unwrap();
    assert_eq!(r.header.err, 0);
    let echoed: zk_mock::proto::PathRequest = r.decode().unwrap();
    assert_eq!(echoed.path, "/what/ever");
}
