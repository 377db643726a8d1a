//! Several mocks in one process, and what dropping one does to its clients.

use zk_mock::client::RawClient;
use zk_mock::record::NotificationQuery;
use zookeeper_client::SessionState;

use crate::support::*;

#[tokio::test]
async fn independent_mocks_share_no_state() {
    let one = start_mock().await;
    let two = start_mock().await;
    assert_ne!(one.addr(), two.addr());
    let a = connect(&one).await;
    let b = connect(&two).await;
    let (sa, _) = a.create("/only-one", b"1", &persistent()).await.unwrap();
    assert_eq!(b.check_stat("/only-one").await.unwrap(), None);
    let (sb, _) = b.create("/only-two", b"2", &persistent()).await.unwrap();
    assert_eq!(a.check_stat("/only-two").await.unwrap(), None);
    // Each has its own zxid sequence: both first creates are czxid 2.
    assert_eq!((sa.czxid, sb.czxid), (2, 2));
    assert_eq!((one.last_zxid(), two.last_zxid()), (2, 2));
    assert_eq!(one.session_ids(), [a.session_id().0]);
    assert_eq!(two.session_ids(), [b.session_id().0]);
}

#[tokio::test]
async fn connection_count_tracks_open_connections() {
    let mock = start_mock().await;
    assert_eq!(mock.connection_count(), 0);
    let a = raw(&mock).await;
    let b = raw(&mock).await;
    assert_eq!(mock.connection_count(), 2);
    a.close().await.unwrap();
    assert_eq!(mock.connection_count(), 1);
    assert_eq!(mock.session_ids(), [b.session_id]);
}

#[tokio::test]
async fn dropping_a_mock_closes_its_client_connections_and_frees_the_port() {
    let mock = start_mock().await;
    let addr = mock.addr();
    let mut rawc = raw(&mock).await;
    let client = connect(&mock).await;
    let mut state = client.state_watcher();
    let survivor = start_mock().await;
    let mut other = raw(&survivor).await;

    drop(mock);
    assert_eq!(rawc.read_frame().await.unwrap(), None);
    assert_eq!(
        with_timeout(QUICK, "Disconnected", state.changed()).await,
        SessionState::Disconnected
    );
    assert!(
        RawClient::connect(addr, 10_000).await.is_err(),
        "nothing listens on the old port"
    );
    // Another mock is unaffected.
    assert_eq!(raw_exists(&mut other, "/", false).await.header.err, 0);
}

#[tokio::test]
async fn a_multi_threaded_mock_serves_watches_in_order_and_stops_cleanly() {
    let mock = zk_mock::ZkMock::builder()
        .worker_threads(2)
        .start()
        .await
        .unwrap();
    let addr = mock.addr();
    let writer = connect(&mock).await;
    let watcher = connect(&mock).await;
    writer.create("/mt", b"0", &persistent()).await.unwrap();
    // Sessions on different worker threads: every change is seen, in order.
    for i in 1..=20u8 {
        let (_, _, w) = watcher.get_and_watch_data("/mt").await.unwrap();
        writer.set_data("/mt", &[i], None).await.unwrap();
        let e = with_timeout(QUICK, "NodeDataChanged", w.changed()).await;
        assert_eq!(e.event_type, zookeeper_client::EventType::NodeDataChanged);
        assert_eq!(watcher.get_data("/mt").await.unwrap().0, [i]);
    }
    assert_eq!(mock.notifications().iter().by_path("/mt").count(), 20);
    let mut rawc = raw(&mock).await;
    drop(mock);
    assert_eq!(rawc.read_frame().await.unwrap(), None);
    assert!(RawClient::connect(addr, 10_000).await.is_err());
}

/// The server threads of this process serving `port` (named `zk-mock-PORT`).
fn server_threads(port: u16) -> usize {
    let name = format!("zk-mock-{port}");
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
                .filter(|comm| comm.trim() == name)
                .count()
        })
        .unwrap_or(0)
}

/// A test that panics while a mock runs: unwinding drops the mock, which
/// closes its connections, stops its thread and frees its port, so the
/// test binary neither hangs nor leaks a server.
#[test]
fn a_panicking_test_leaves_no_server_behind() {
    let (tx, rx) = std::sync::mpsc::channel();
    let outcome = std::panic::catch_unwind(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mock = zk_mock::ZkMock::start().await;
            let c = RawClient::connect(mock.addr(), 10_000).await.unwrap();
            assert_eq!(server_threads(mock.addr().port()), 1);
            tx.send(mock.addr()).unwrap();
            std::mem::forget(c); // a client the test never closes
            panic!("the test fails while the mock runs");
        })
    });
    assert!(outcome.is_err());
    let addr = rx.recv().unwrap();
    assert_eq!(server_threads(addr.port()), 0, "the server thread is gone");
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "the port is free"
    );
}

#[tokio::test]
async fn reset_puts_the_server_back_as_a_new_one_and_keeps_its_port() {
    let mock = start_mock().await;
    let fresh = {
        let c = connect(&mock).await;
        let (mut top, _) = c.get_children("/zookeeper").await.unwrap();
        top.sort();
        top
    };
    let c = connect(&mock).await;
    c.create("/a", b"", &persistent()).await.unwrap();
    c.create("/a/b", b"x", &persistent()).await.unwrap();
    c.create("/e", b"", &ephemeral()).await.unwrap();
    let _rule = mock.rule(
        zk_mock::fault::Rule::when()
            .path("/never")
            .fail(zk_mock::proto::ErrorCode::NoAuth),
    );
    let other = connect(&mock).await;
    let _stall = mock.stall(other.session_id().0).expect("a live session");
    let _refusal = mock.refuse_connections();
    let before = mock.last_zxid();
    let mut state = c.state_watcher();

    mock.reset();

    assert!(mock.session_ids().is_empty(), "every session expired");
    with_timeout(QUICK, "the client told its session expired", async {
        while state.changed().await != SessionState::Expired {}
    })
    .await;
    assert!(mock.rules().is_empty(), "the rules are gone");
    assert_eq!(mock.requests().count(), 0, "the recording is cleared");
    assert!(mock.last_zxid() > before, "the zxid keeps counting up");
    // The same port takes new clients (the refusal ended), and the tree
    // is a new server's.
    let next = connect(&mock).await;
    assert_eq!(next.get_children("/").await.unwrap().0, ["zookeeper"]);
    let (mut top, _) = next.get_children("/zookeeper").await.unwrap();
    top.sort();
    assert_eq!(top, fresh);
    next.create("/a", b"", &persistent()).await.unwrap();
}
