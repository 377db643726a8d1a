//! Containers and TTL nodes, and the container check that deletes them
//! (`ContainerManager`), through `zookeeper-client` and the raw client.

use std::time::Duration;

use zk_mock::clock::ClockMode;
use zk_mock::proto::{Acl, CreateTtlRequest, OpCode};
use zk_mock::record::ChangeKind;
use zk_mock::{SessionId, ZkMock};
use zookeeper_client::{Acls, CreateMode, EventType, Stat};

use crate::support::*;

fn ttl_node(ttl: Duration) -> zookeeper_client::CreateOptions<'static> {
    CreateMode::Persistent
        .with_acls(Acls::anyone_all())
        .with_ttl(ttl)
}

/// A session that outlives the clock jumps below (the mock's longest, 40 s).
async fn long_session(mock: &ZkMock) -> zookeeper_client::Client {
    zookeeper_client::Client::connector()
        .with_session_timeout(Duration::from_secs(40))
        .connect(&mock.connect_string())
        .await
        .unwrap()
}

async fn manual_mock() -> ZkMock {
    init_tracing();
    ZkMock::builder()
        .clock(ClockMode::Manual)
        .extended_types(true)
        .container_check_interval(Duration::from_millis(100))
        .start()
        .await
        .unwrap()
}

#[tokio::test]
async fn an_emptied_container_goes_at_the_next_check_and_its_watchers_hear_it() {
    init_tracing();
    let mock = ZkMock::builder()
        .container_check_interval(Duration::from_millis(50))
        .start()
        .await
        .unwrap();
    let client = connect(&mock).await;
    let watcher = connect(&mock).await;
    client.create("/c", b"", &container()).await.unwrap();
    client.create("/c/x", b"", &persistent()).await.unwrap();
    // Still used: several checks pass and it stays.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(client.check_stat("/c").await.unwrap().is_some());
    let (_, _, gone) = watcher.get_and_watch_data("/c").await.unwrap();
    let (_, _, root_changed) = watcher.get_and_watch_children("/").await.unwrap();
    let before = mock.last_zxid();
    client.delete("/c/x", None).await.unwrap();
    let event = with_timeout(QUICK, "NodeDeleted of the container", gone.changed()).await;
    assert_eq!(event.event_type, EventType::NodeDeleted);
    assert_eq!(event.path, "/c");
    let event = with_timeout(QUICK, "NodeChildrenChanged of /", root_changed.changed()).await;
    assert_eq!(event.event_type, EventType::NodeChildrenChanged);
    assert_eq!(client.check_stat("/c").await.unwrap(), None);
    // The check's delete is a transaction of its own, after the client's.
    let deleted = mock
        .changes()
        .iter()
        .find(|c| c.path == "/c" && c.kind == ChangeKind::Deleted)
        .map(|c| (c.zxid, c.session))
        .expect("the deletion is in the change log");
    assert_eq!(deleted, (before + 2, SessionId(0)));
}

#[tokio::test]
async fn a_never_used_container_and_a_plain_empty_node_stay() {
    let mock = manual_mock().await;
    let client = long_session(&mock).await;
    client.create("/unused", b"", &container()).await.unwrap();
    client.create("/plain", b"", &persistent()).await.unwrap();
    client.create("/plain/x", b"", &persistent()).await.unwrap();
    client.delete("/plain/x", None).await.unwrap();
    mock.advance(Duration::from_secs(30));
    assert_eq!(mock.check_containers(), 0);
    assert!(client.check_stat("/unused").await.unwrap().is_some());
    assert!(client.check_stat("/plain").await.unwrap().is_some());
}

#[tokio::test]
async fn nested_containers_go_one_level_per_check() {
    let mock = manual_mock().await;
    let client = long_session(&mock).await;
    client.create("/outer", b"", &container()).await.unwrap();
    client
        .create("/outer/inner", b"", &container())
        .await
        .unwrap();
    client
        .create("/outer/inner/leaf", b"", &persistent())
        .await
        .unwrap();
    client.delete("/outer/inner/leaf", None).await.unwrap();
    assert_eq!(mock.check_containers(), 1, "the inner one only");
    assert_eq!(client.check_stat("/outer/inner").await.unwrap(), None);
    assert!(client.check_stat("/outer").await.unwrap().is_some());
    assert_eq!(mock.check_containers(), 1, "then the outer one");
    assert_eq!(client.check_stat("/outer").await.unwrap(), None);
}

#[tokio::test]
async fn a_ttl_node_goes_once_unmodified_for_longer_than_its_ttl() {
    let mock = manual_mock().await;
    let client = long_session(&mock).await;
    let (stat, _) = client
        .create("/t", b"v", &ttl_node(Duration::from_millis(1000)))
        .await
        .unwrap();
    // Reported like a persistent node: no ephemeral owner.
    assert_eq!(stat.ephemeral_owner, 0);
    mock.advance(Duration::from_millis(900));
    assert!(client.check_stat("/t").await.unwrap().is_some());
    // A write resets the clock the TTL counts from.
    client.set_data("/t", b"w", None).await.unwrap();
    mock.advance(Duration::from_millis(900));
    assert!(client.check_stat("/t").await.unwrap().is_some());
    let (_, _, gone) = client.get_and_watch_data("/t").await.unwrap();
    mock.advance(Duration::from_millis(200));
    let event = with_timeout(QUICK, "NodeDeleted of the TTL node", gone.changed()).await;
    assert_eq!(event.event_type, EventType::NodeDeleted);
    assert_eq!(client.check_stat("/t").await.unwrap(), None);
}

#[tokio::test]
async fn a_ttl_node_with_children_stays_until_they_go() {
    let mock = manual_mock().await;
    let client = long_session(&mock).await;
    client
        .create("/t", b"", &ttl_node(Duration::from_millis(100)))
        .await
        .unwrap();
    client.create("/t/child", b"", &persistent()).await.unwrap();
    mock.advance(Duration::from_secs(10));
    assert!(client.check_stat("/t").await.unwrap().is_some());
    client.delete("/t/child", None).await.unwrap();
    // The child's deletion does not touch the TTL node's mtime.
    mock.advance(Duration::from_millis(100));
    assert_eq!(client.check_stat("/t").await.unwrap(), None::<Stat>);
}

#[tokio::test]
async fn sequential_ttl_nodes_get_a_suffix_and_expire_too() {
    let mock = manual_mock().await;
    let client = long_session(&mock).await;
    let opts = CreateMode::PersistentSequential
        .with_acls(Acls::anyone_all())
        .with_ttl(Duration::from_millis(500));
    let (_, seq) = client.create("/s-", b"", &opts).await.unwrap();
    let path = format!("/s-{seq}");
    assert!(client.check_stat(&path).await.unwrap().is_some());
    mock.advance(Duration::from_millis(600));
    assert_eq!(client.check_stat(&path).await.unwrap(), None);
}

#[tokio::test]
async fn ttl_values_outside_1_to_2_pow_40_and_ttl_modes_without_a_ttl_are_bad_arguments() {
    let mock = manual_mock().await;
    let mut c = raw(&mock).await;
    let ttl_req = |path: &str, flags: i32, ttl: i64| CreateTtlRequest {
        path: path.into(),
        data: Some(bytes::Bytes::new()),
        acl: Acl::open_shared(),
        flags,
        ttl,
    };
    for (flags, ttl, want) in [
        (5, 0, -8),
        (5, -1, -8),
        (5, 0x100_0000_0000, -8),
        (5, 0xFF_FFFF_FFFF, 0),
        (6, 1, 0),
        // A ttl with a non-TTL mode.
        (0, 1000, -8),
    ] {
        let r = c
            .request(
                OpCode::CreateTtl,
                &ttl_req(&format!("/t{flags}-{ttl}"), flags, ttl),
            )
            .await
            .unwrap();
        assert_eq!(r.header.err, want, "flags {flags} ttl {ttl}");
    }
    // A TTL mode through plain create carries no ttl.
    assert_eq!(
        raw_create(&mut c, "/plain-ttl", None, 5).await.header.err,
        -8
    );
}

#[tokio::test]
async fn a_manual_clock_runs_the_check_only_when_advanced_past_its_time() {
    let mock = manual_mock().await;
    let client = long_session(&mock).await;
    client.create("/c", b"", &container()).await.unwrap();
    client.create("/c/x", b"", &persistent()).await.unwrap();
    client.delete("/c/x", None).await.unwrap();
    // Real time passes, session time does not: no check runs.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(client.check_stat("/c").await.unwrap().is_some());
    mock.advance(Duration::from_millis(50));
    assert!(client.check_stat("/c").await.unwrap().is_some());
    mock.advance(Duration::from_millis(50));
    assert_eq!(client.check_stat("/c").await.unwrap(), None);
}
