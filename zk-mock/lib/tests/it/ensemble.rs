//! The ensemble: N servers, one txn log, a replica each. Replication,
//! lagging followers (stale reads, late watches, late answers), `sync`,
//! expiry applied at each server's own pace (CURATOR-498), the
//! `lastZxidSeen` refusal, failover on a kill, leader elections and quorum
//! loss — through `zookeeper-client` and raw sockets.

use std::time::Duration;

use zk_mock::client::RawClient;
use zk_mock::codec::Record;
use zk_mock::fault::{OpFamily, Rule};
use zk_mock::proto::{ConnectRequest, ErrorCode, OpCode};
use zk_mock::record::{NotificationQuery, RequestQuery};
use zk_mock::{Lag, ServerStatus, ZkMock};
use zookeeper_client::{Client, EventType, SessionState};

use crate::support::*;

async fn ensemble(n: usize) -> ZkMock {
    init_tracing();
    ZkMock::builder()
        .servers(n)
        .election_window(Duration::from_millis(100))
        .start()
        .await
        .unwrap()
}

/// Waits until no server is electing (a leader was chosen).
async fn until_elected(mock: &ZkMock) {
    with_timeout(QUICK, "a new leader", async {
        while mock
            .servers()
            .iter()
            .any(|s| s.status == ServerStatus::Electing)
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

/// A client that can only reach server `i`.
async fn on(mock: &ZkMock, i: usize) -> Client {
    connect_to(&mock.server(i).connect_string()).await
}

#[tokio::test]
async fn an_ensemble_names_every_server_and_every_replica_applies_every_write() {
    let mock = ensemble(3).await;
    let hosts: Vec<String> = mock.addrs().iter().map(|a| a.to_string()).collect();
    assert_eq!(mock.connect_string(), hosts.join(","));
    let servers = mock.servers();
    assert_eq!(servers.len(), 3);
    assert!(servers.iter().all(|s| s.status == ServerStatus::Serving));
    assert_eq!(servers.iter().filter(|s| s.leader).count(), 1);
    assert!(servers[0].leader, "server 0 leads a fresh ensemble");

    let (a, b, c) = (on(&mock, 0).await, on(&mock, 1).await, on(&mock, 2).await);
    let (stat, _) = a.create("/x", b"one", &persistent()).await.unwrap();
    for client in [&b, &c] {
        let (data, read) = client.get_data("/x").await.unwrap();
        assert_eq!(data, b"one");
        assert_eq!(read, stat, "every replica holds the same node");
    }
    let zxids: Vec<i64> = mock.servers().iter().map(|s| s.last_zxid).collect();
    assert_eq!(zxids, vec![zxids[0]; 3]);
    // The recorder says which server each request came through.
    mock.inspect(|log| {
        assert_eq!(log.requests().by_path("/x").through(0).count(), 1);
        assert_eq!(log.requests().by_path("/x").through(1).count(), 1);
        assert_eq!(log.requests().by_path("/x").through(2).count(), 1);
    });
}

#[tokio::test]
async fn a_lagging_follower_serves_stale_reads_and_fires_its_watches_late() {
    let mock = ensemble(3).await;
    let writer = on(&mock, 0).await;
    let reader = on(&mock, 1).await;
    mock.server(1).set_lag(Lag::Txns(1)).unwrap();

    writer.create("/a", b"", &persistent()).await.unwrap();
    // Server 1 holds /a back: its reader does not see it, and leaves a watch.
    let (stat, created) = reader.check_and_watch_stat("/a").await.unwrap();
    assert_eq!(stat, None, "a read through the lagging follower is stale");
    assert_eq!(mock.servers()[1].behind, 1);

    writer.create("/b", b"", &persistent()).await.unwrap();
    // Now server 1 applies /a (and holds /b back): the watch fires, late.
    let ev = with_timeout(QUICK, "the late NodeCreated", created.changed()).await;
    assert_eq!(ev.event_type, EventType::NodeCreated);
    assert_eq!(ev.path, "/a");
    assert!(reader.check_stat("/b").await.unwrap().is_none());
    mock.inspect(|log| {
        assert_eq!(log.notifications().by_path("/a").from_server(1).count(), 1);
    });
}

#[tokio::test]
async fn a_write_through_a_lagging_follower_is_answered_when_that_follower_applies_it() {
    let mock = ensemble(3).await;
    let leader_client = on(&mock, 0).await;
    let follower_client = on(&mock, 1).await;
    mock.server(1).set_lag(Lag::Txns(1)).unwrap();

    let write = tokio::spawn(async move {
        let r = follower_client.create("/w", b"", &persistent()).await;
        (r, follower_client)
    });
    // The leader has it at once; the follower's client waits for its server.
    with_timeout(QUICK, "the write at the leader", async {
        while leader_client.check_stat("/w").await.unwrap().is_none() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert_eq!(mock.servers()[1].behind, 1);
    assert!(
        !write.is_finished(),
        "answered before its server applied it"
    );
    // One more commit lets server 1 apply /w and answer.
    leader_client
        .create("/next", b"", &persistent())
        .await
        .unwrap();
    let (r, follower_client) = with_timeout(QUICK, "the late answer", write).await.unwrap();
    let (stat, _) = r.unwrap();
    assert_eq!(follower_client.check_stat("/w").await.unwrap(), Some(stat));
}

#[tokio::test]
async fn sync_brings_a_lagging_follower_up_to_the_leader() {
    let mock = ensemble(3).await;
    let writer = on(&mock, 0).await;
    let reader = on(&mock, 2).await;
    mock.server(2).set_lag(Lag::Txns(100)).unwrap();
    writer.create("/s", b"v", &persistent()).await.unwrap();
    assert!(reader.check_stat("/s").await.unwrap().is_none());
    reader.sync("/s").await.unwrap();
    assert_eq!(reader.get_data("/s").await.unwrap().0, b"v");
    assert_eq!(mock.servers()[2].behind, 0);
    assert_eq!(mock.servers()[2].last_zxid, mock.last_zxid());
}

#[tokio::test]
async fn a_lagging_follower_names_sequential_nodes_as_the_leader_did_across_a_counter_set() {
    let mock = ensemble(3).await;
    let writer = on(&mock, 0).await;
    let reader = on(&mock, 1).await;
    // Server 2 does not lag: it takes each counter at once.
    let current = on(&mock, 2).await;
    let seq = zookeeper_client::CreateMode::PersistentSequential
        .with_acls(zookeeper_client::Acls::anyone_all());
    // `/old` is on the follower before it lags; `/new` is only in its backlog.
    writer.create("/old", b"", &persistent()).await.unwrap();
    reader.sync("/old").await.unwrap();
    mock.server(1).set_lag(Lag::Txns(100)).unwrap();
    writer.create("/new", b"", &persistent()).await.unwrap();
    for dir in ["/old", "/new"] {
        writer
            .create(&format!("{dir}/n-"), b"", &seq)
            .await
            .unwrap();
        writer
            .create(&format!("{dir}/n-"), b"", &seq)
            .await
            .unwrap();
        assert!(mock.set_sequence_counter(dir, 100));
        writer
            .create(&format!("{dir}/n-"), b"", &seq)
            .await
            .unwrap();
    }
    assert!(!mock.set_sequence_counter("/none", 7));
    assert!(mock.servers()[1].behind > 0);
    reader.sync("/new").await.unwrap();
    for dir in ["/old", "/new"] {
        let mut on_leader = writer.list_children(dir).await.unwrap();
        let mut on_follower = reader.list_children(dir).await.unwrap();
        on_leader.sort();
        on_follower.sort();
        assert_eq!(on_leader, ["n-0000000000", "n-0000000001", "n-0000000100"]);
        assert_eq!(on_follower, on_leader, "{dir} on the follower");
        let mut on_current = current.list_children(dir).await.unwrap();
        on_current.sort();
        assert_eq!(
            on_current, on_leader,
            "{dir} on the follower that does not lag"
        );
    }
}

#[tokio::test]
async fn a_counter_set_reaches_a_txn_that_a_slow_readers_close_commits_in_the_middle_of_an_apply() {
    // A follower applies its backlog; a notification of that apply takes a
    // slow reader past its outbox limit, and closing it commits the create
    // it had waiting for a sync. The follower applies that create from
    // inside the apply it is in, so the counter set after the txn being
    // applied must already be on its tree. No frame below passes the
    // 100-byte limit alone (the largest, a Stat reply, is 88 bytes), but a
    // held 20-byte reply and three notifications of one catch-up (34 bytes
    // each) pass it at the third.
    init_tracing();
    let mock = ZkMock::builder()
        .servers(3)
        .max_outbox_bytes(100)
        .start()
        .await
        .unwrap();
    let mut writer = RawClient::connect(mock.server(0).addr(), 10_000)
        .await
        .unwrap();
    let mut slow = RawClient::connect(mock.server(1).addr(), 10_000)
        .await
        .unwrap();
    for path in ["/p", "/a", "/b", "/c"] {
        let r = writer
            .request(OpCode::Create, &create_req(path, None, 0))
            .await
            .unwrap();
        assert_eq!(r.header.err, 0, "create {path}");
    }
    for path in ["/a", "/b", "/c"] {
        assert_eq!(raw_exists(&mut slow, path, true).await.header.err, 0);
    }
    mock.server(1).set_lag(Lag::Txns(100)).unwrap();
    for path in ["/a", "/b", "/c"] {
        let set = zk_mock::proto::SetDataRequest {
            path: path.into(),
            data: Some(bytes::Bytes::from_static(b"v")),
            version: -1,
        };
        assert_eq!(
            writer
                .request(OpCode::SetData, &set)
                .await
                .unwrap()
                .header
                .err,
            0
        );
    }
    assert_eq!(mock.servers()[1].behind, 3);
    // Set after the setData of /c: server 1 takes it right after applying that.
    assert!(mock.set_sequence_counter("/p", 100));

    // The slow reader's connection writes nothing more: a delayed reply's
    // pause holds what follows it (its 20-byte header, then the
    // notifications) in the outbox, where the limit counts it. Its
    // sequential create waits for a sync that does not end.
    let _held = mock.rule(
        Rule::when()
            .op(OpFamily::GetData)
            .path("/missing")
            .delay(Duration::from_secs(3600)),
    );
    mock.set_commit_latency(Duration::from_secs(3600));
    let get = request_bytes(
        6,
        OpCode::GetData as i32,
        &path_watch("/missing", false).to_bytes(),
    );
    let create = request_bytes(
        7,
        OpCode::Create as i32,
        &create_req("/p/n-", None, 2).to_bytes(),
    );
    send_until_read(&mock, &mut slow, &[get, create].concat(), 2).await;
    assert!(!mock.snapshot().tree.contains_key("/p/n-0000000100"));

    // Server 1 applies its backlog: the third notification closes the slow
    // reader, whose create commits (the leader names it with the counter) and
    // reaches server 1 while it is still applying the setData of /c.
    mock.server(1).set_lag(Lag::None).unwrap();
    assert_eq!(mock.metrics().slow_readers_closed, 1);
    mock.set_commit_latency(Duration::ZERO);
    for server in 0..3 {
        let client = on(&mock, server).await;
        assert_eq!(
            client.list_children("/p").await.unwrap(),
            ["n-0000000100"],
            "/p on server {server}"
        );
    }
}

#[tokio::test]
async fn a_time_lag_applies_each_txn_that_long_after_its_commit() {
    let mock = ZkMock::builder()
        .servers(2)
        .clock(zk_mock::clock::ClockMode::Manual)
        .start()
        .await
        .unwrap();
    let writer = on(&mock, 0).await;
    let reader = on(&mock, 1).await;
    mock.server(1)
        .set_lag(Lag::Time(Duration::from_secs(1)))
        .unwrap();
    writer.create("/t", b"", &persistent()).await.unwrap();
    assert!(reader.check_stat("/t").await.unwrap().is_none());
    mock.advance(Duration::from_millis(999));
    assert!(reader.check_stat("/t").await.unwrap().is_none());
    mock.advance(Duration::from_millis(1));
    assert!(reader.check_stat("/t").await.unwrap().is_some());
}

#[tokio::test]
async fn an_expired_sessions_ephemerals_linger_on_a_lagging_follower_curator_498() {
    let mock = ensemble(3).await;
    let admin = on(&mock, 0).await;
    admin.create("/lock", b"", &persistent()).await.unwrap();
    let holder = on(&mock, 0).await;
    holder.create("/lock/n-1", b"", &ephemeral()).await.unwrap();
    let follower_reader = on(&mock, 1).await;
    follower_reader.sync("/lock").await.unwrap();
    mock.server(1).set_lag(Lag::Txns(1)).unwrap();
    assert_eq!(
        follower_reader.list_children("/lock").await.unwrap(),
        ["n-1"]
    );

    // Expiry is decided once; the leader applies the closeSession at once...
    assert!(mock.expire_session(holder.session_id().0));
    assert!(admin.list_children("/lock").await.unwrap().is_empty());
    // ...while the lagging follower still lists the dead session's node.
    assert_eq!(
        follower_reader.list_children("/lock").await.unwrap(),
        ["n-1"],
        "the follower has not applied the closeSession yet"
    );
    admin.create("/tick", b"", &persistent()).await.unwrap();
    assert!(follower_reader
        .list_children("/lock")
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn an_expired_session_keeps_its_connection_on_a_lagging_follower_until_it_applies_the_close()
{
    let mock = ensemble(3).await;
    let admin = on(&mock, 0).await;
    let client = on(&mock, 1).await;
    admin.create("/e", b"v", &persistent()).await.unwrap();
    client.sync("/e").await.unwrap();
    mock.server(1).set_lag(Lag::Txns(1)).unwrap();
    let mut states = client.state_watcher();

    // The leader expires the session; server 1 holds the closeSession back
    // and serves the session from its replica as before.
    assert!(mock.expire_session(client.session_id().0));
    assert_eq!(mock.servers()[1].behind, 1);
    assert_eq!(client.get_data("/e").await.unwrap().0, b"v");
    assert_eq!(client.state(), SessionState::SyncConnected);

    // One more commit: server 1 applies the closeSession and closes the
    // connection; the client comes back to hear that its session expired.
    admin.create("/tick", b"", &persistent()).await.unwrap();
    with_timeout(QUICK, "the expiry, at server 1's pace", async {
        while states.changed().await != SessionState::Expired {}
    })
    .await;
}

#[tokio::test]
async fn a_write_of_an_expired_session_through_a_lagging_follower_is_never_answered() {
    let mock = ensemble(3).await;
    let client = on(&mock, 1).await;
    mock.server(1).set_lag(Lag::Txns(1)).unwrap();
    let session = client.session_id().0;
    assert!(mock.expire_session(session));
    // The leader fails the write (an error txn with its own zxid). That
    // commit lets server 1 apply the closeSession, which closes the
    // connection before the write's answer could come.
    let write = {
        let client = client.clone();
        tokio::spawn(async move { client.create("/w", b"", &persistent()).await })
    };
    let err = with_timeout(QUICK, "the write's end", write).await.unwrap();
    // No answer: the connection's end is what the client hears.
    assert!(
        matches!(err, Err(zookeeper_client::Error::ConnectionLoss)),
        "{err:?}"
    );
    mock.inspect(|log| {
        let write = log
            .requests()
            .by_path("/w")
            .last()
            .expect("the write reached the server");
        assert_eq!(write.err, ErrorCode::SessionExpired.code());
        assert_eq!(write.server, 1);
    });
    // Server 1 applied the closeSession and still holds the write's error
    // txn back, its answer with it.
    assert_eq!(mock.servers()[1].behind, 1);
}

#[tokio::test]
async fn a_new_session_through_a_lagging_follower_is_answered_when_it_applies_the_create_session() {
    let mock = ensemble(3).await;
    let admin = on(&mock, 0).await;
    mock.server(1).set_lag(Lag::Txns(1)).unwrap();
    let connect = {
        let cluster = mock.server(1).connect_string();
        tokio::spawn(async move { Client::connect(&cluster).await })
    };
    // The leader has made the session (the admin's and this one)...
    mock.wait_until(QUICK, |log| {
        log.sessions()
            .filter(|s| s.event == zk_mock::record::SessionEvent::Created)
            .count()
            == 2
    })
    .await
    .unwrap();
    // ...and server 1 has not applied its createSession: no answer yet.
    assert_eq!(mock.servers()[1].behind, 1);
    assert!(
        !connect.is_finished(),
        "answered before its server applied it"
    );
    admin.create("/tick", b"", &persistent()).await.unwrap();
    let client = with_timeout(QUICK, "the late handshake", connect)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(client.state(), SessionState::SyncConnected);
    assert_eq!(mock.server_of(client.session_id().0), Some(1));
}

#[tokio::test]
async fn a_request_sent_before_the_handshakes_answer_waits_for_it() {
    use zk_mock::proto::ReplyHeader;
    let mock = ensemble(3).await;
    let admin = on(&mock, 0).await;
    admin.create("/p", b"", &persistent()).await.unwrap();
    mock.server(1).set_lag(Lag::Txns(1)).unwrap();
    // The handshake and an exists, in one write, before any answer.
    let mut s = pipelined_through_follower_1(&mock, &admin, &["/p"]).await;
    // ZooKeeper reads nothing more until the session is set up: the
    // handshake's answer comes first, then the exists' reply.
    let frames = read_frames(&mut s, 2).await;
    let answer = zk_mock::proto::ConnectResponse::decode(&frames[0]).unwrap();
    assert_ne!(answer.session_id, 0, "the handshake's answer comes first");
    let header = ReplyHeader::decode(&frames[1]).unwrap();
    assert_eq!((header.xid, header.err), (1, 0));
}

/// A new session's handshake and an exists (no watch) of each of `paths`,
/// xids from 1, sent to server 1 in one write before any answer; returns
/// once the leader has committed the createSession and one more write
/// (`/tick`), so that server 1, one txn behind, has applied the
/// createSession.
async fn pipelined_through_follower_1(
    mock: &ZkMock,
    admin: &Client,
    paths: &[&str],
) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let mut out = zk_mock::codec::frame(&new_session(6000, Some(false)).to_bytes()).to_vec();
    for (xid, path) in (1..).zip(paths) {
        out.extend_from_slice(&request_bytes(xid, 3, &path_watch(path, false).to_bytes()));
    }
    let mut s = tokio::net::TcpStream::connect(mock.server(1).addr())
        .await
        .unwrap();
    s.write_all(&out).await.unwrap();
    mock.wait_until(QUICK, |log| {
        log.sessions()
            .filter(|s| s.event == zk_mock::record::SessionEvent::Created)
            .count()
            == 2
    })
    .await
    .unwrap();
    admin.create("/tick", b"", &persistent()).await.unwrap();
    s
}

/// The next `n` frames (length prefix off) from a raw socket.
async fn read_frames(s: &mut tokio::net::TcpStream, n: usize) -> Vec<Vec<u8>> {
    use tokio::io::AsyncReadExt;
    let mut frames = Vec::new();
    with_timeout(QUICK, "the answers", async {
        let mut buf = Vec::new();
        while frames.len() < n {
            let mut chunk = [0u8; 512];
            let read = s.read(&mut chunk).await.unwrap();
            assert!(read > 0, "closed after {} frames", frames.len());
            buf.extend_from_slice(&chunk[..read]);
            while buf.len() >= 4 {
                let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
                if buf.len() < 4 + len {
                    break;
                }
                frames.push(buf[4..4 + len].to_vec());
                buf.drain(..4 + len);
            }
        }
    })
    .await;
    frames
}

/// A request that waited for its server's createSession and is then held
/// by a `hold_request` rule still holds the connection's reading: the
/// request sent after it is answered after it, as on any connection.
#[tokio::test]
async fn a_request_held_by_a_rule_after_waiting_for_the_handshake_keeps_its_place() {
    use zk_mock::proto::ReplyHeader;
    let mock = ensemble(3).await;
    let admin = on(&mock, 0).await;
    admin.create("/p", b"", &persistent()).await.unwrap();
    mock.server(1).set_lag(Lag::Txns(1)).unwrap();
    let gate = mock.gate();
    let rule = mock.rule(
        Rule::when()
            .op(OpFamily::Exists)
            .path("/p")
            .hold_request(gate.id()),
    );
    // The handshake, an exists of /p (xid 1) and one of /q (xid 2), in
    // one write, before any answer.
    let mut s = pipelined_through_follower_1(&mock, &admin, &["/p", "/q"]).await;
    let answer = read_frames(&mut s, 1).await;
    assert_ne!(
        zk_mock::proto::ConnectResponse::decode(&answer[0])
            .unwrap()
            .session_id,
        0
    );
    with_timeout(QUICK, "the exists of /p held", async {
        while rule.fired() == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    drop(gate);
    let replies = read_frames(&mut s, 2).await;
    let xids: Vec<i32> = replies
        .iter()
        .map(|f| ReplyHeader::decode(f).unwrap().xid)
        .collect();
    assert_eq!(xids, [1, 2], "in the order they were sent");
}

#[tokio::test]
async fn the_leader_refuses_a_lag_and_a_lagging_follower_that_wins_drops_its_lag() {
    let mock = ensemble(3).await;
    assert_eq!(
        mock.server(0).set_lag(Lag::Txns(1)),
        Err(zk_mock::LagError::Leader(0))
    );
    let message = mock
        .server(0)
        .set_lag(Lag::Txns(1))
        .unwrap_err()
        .to_string();
    assert!(message.contains("server 0 is the leader"), "{message}");
    mock.server(0).set_lag(Lag::None).unwrap();
    assert_eq!(mock.servers()[0].lag, Lag::None);

    // Server 2 lags; the leader dies and the highest id wins: server 2.
    mock.server(2).set_lag(Lag::Txns(5)).unwrap();
    assert!(mock.server(0).kill());
    until_elected(&mock).await;
    assert_eq!(mock.leader(), 2);
    assert_eq!(mock.servers()[2].lag, Lag::None, "a leader does not lag");
}

#[tokio::test]
async fn a_server_behind_the_clients_last_zxid_refuses_it() {
    let mock = ensemble(3).await;
    mock.server(2).set_lag(Lag::Txns(100)).unwrap();
    let writer = on(&mock, 0).await;
    writer.create("/z", b"", &persistent()).await.unwrap();
    let seen = mock.last_zxid();
    let req = ConnectRequest {
        last_zxid_seen: seen,
        ..new_session(6000, Some(false))
    };
    // ZooKeeperServer.processConnectRequest: CLIENT_ZXID_AHEAD, closed with no answer.
    let (_, behind) = RawClient::handshake(mock.server(2).addr(), &req)
        .await
        .unwrap();
    assert!(behind.is_none(), "a server behind the client answered it");
    mock.inspect(|log| {
        let refused: Vec<_> = log
            .sessions()
            .filter(|s| s.event == zk_mock::record::SessionEvent::ZxidAhead)
            .collect();
        assert_eq!(refused.len(), 1, "the refusal is recorded");
        assert!(refused[0].zxid < seen);
    });
    let (_, caught_up) = RawClient::handshake(mock.server(1).addr(), &req)
        .await
        .unwrap();
    assert!(
        caught_up.is_some(),
        "a server that has applied the zxid refused it"
    );
}

/// The sessions the recorder saw disconnected, in its order, from the
/// `skip`-th on.
fn disconnects(mock: &ZkMock, skip: usize) -> Vec<i64> {
    mock.inspect(|log| {
        log.sessions()
            .filter(|s| s.event == zk_mock::record::SessionEvent::Disconnected)
            .skip(skip)
            .map(|s| s.session.0)
            .collect()
    })
}

#[tokio::test]
async fn connections_dropped_together_are_recorded_in_the_order_they_connected() {
    let mock = ensemble(3).await;
    let mut on_1 = Vec::new();
    let mut on_2 = Vec::new();
    for _ in 0..8 {
        on_1.push(on(&mock, 1).await);
        on_2.push(on(&mock, 2).await);
    }
    let ids =
        |clients: &[Client]| -> Vec<i64> { clients.iter().map(|c| c.session_id().0).collect() };
    // A kill drops its server's connections, oldest first: the same order
    // every run, whatever the order of the server's own tables.
    assert!(mock.server(1).kill());
    assert_eq!(disconnects(&mock, 0), ids(&on_1));
    // So does disconnect_all (server 1's clients cannot reach it again).
    assert_eq!(mock.disconnect_all(), 8);
    assert_eq!(disconnects(&mock, 8), ids(&on_2));
}

#[tokio::test]
async fn killing_a_clients_server_fails_it_over_with_its_session_and_ephemerals() {
    let mock = ensemble(3).await;
    let client = connect_to(&mock.connect_string()).await;
    let session = client.session_id();
    client.create("/e", b"", &ephemeral()).await.unwrap();
    let on_server = mock
        .servers()
        .iter()
        .position(|s| s.connections == 1)
        .expect("the client is on one server");
    let mut state = client.state_watcher();

    assert!(mock.server(on_server).kill());
    assert_eq!(mock.server(on_server).status(), ServerStatus::Killed);
    assert!(
        !mock.server(on_server).kill(),
        "killing a dead server does nothing"
    );
    with_timeout(QUICK, "the failover", async {
        while state.changed().await != SessionState::SyncConnected {}
    })
    .await;
    assert_eq!(client.session_id(), session);
    assert!(client.check_stat("/e").await.unwrap().is_some());
    let now_on = mock
        .servers()
        .iter()
        .position(|s| s.connections == 1)
        .unwrap();
    assert_ne!(now_on, on_server);

    // A restarted server catches up before it serves.
    client
        .create("/while-down", b"", &persistent())
        .await
        .unwrap();
    assert!(mock.server(on_server).restart().unwrap());
    let back = on(&mock, on_server).await;
    assert!(back.check_stat("/while-down").await.unwrap().is_some());
}

#[tokio::test]
async fn a_leader_election_drops_every_client_and_starts_a_new_epoch() {
    let mock = ensemble(3).await;
    let client = connect_to(&mock.connect_string()).await;
    let session = client.session_id();
    let (before, _) = client.create("/pre", b"", &persistent()).await.unwrap();
    assert_eq!(before.mzxid >> 32, 1, "a quorum's first epoch is 1");
    let mut state = client.state_watcher();

    mock.leader_election(Duration::from_millis(100));
    assert!(mock
        .servers()
        .iter()
        .all(|s| s.status == ServerStatus::Electing && s.connections == 0));
    assert_eq!(state.changed().await, SessionState::Disconnected);
    with_timeout(QUICK, "the reconnect after the election", async {
        while state.changed().await != SessionState::SyncConnected {}
    })
    .await;
    assert_eq!(
        client.session_id(),
        session,
        "the session survives the election"
    );
    assert_eq!(mock.leader(), 2, "the highest id among equals leads");
    let (after, _) = client.create("/post", b"", &persistent()).await.unwrap();
    assert_eq!(after.mzxid, (2 << 32) + 1, "the new epoch's first write");
}

#[tokio::test]
async fn killing_the_leader_elects_another_and_losing_the_quorum_stops_every_server() {
    let mock = ensemble(3).await;
    let client = connect_to(&mock.connect_string()).await;
    client.create("/k", b"", &persistent()).await.unwrap();

    assert!(mock.server(0).kill());
    until_elected(&mock).await;
    assert_eq!(mock.leader(), 2);
    client.create("/k2", b"", &persistent()).await.unwrap();

    // Two of three down: no quorum, so the survivor takes no clients.
    assert!(mock.server(2).kill());
    assert_eq!(mock.server(1).status(), ServerStatus::Electing);
    let refused = RawClient::connect(mock.server(1).addr(), 6000).await;
    assert!(refused.is_err(), "a server without a quorum took a client");

    // One back: a quorum again, a leader after the window, writes again.
    assert!(mock.server(0).restart().unwrap());
    with_timeout(QUICK, "the quorum back", async {
        loop {
            if let Ok(()) = client.create("/k3", b"", &persistent()).await.map(drop) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let zxids: Vec<(ServerStatus, i64)> = mock
        .servers()
        .iter()
        .map(|s| (s.status, s.last_zxid))
        .collect();
    assert_eq!(zxids[0], (ServerStatus::Serving, mock.last_zxid()));
    assert_eq!(zxids[1], (ServerStatus::Serving, mock.last_zxid()));
    assert_eq!(zxids[2].0, ServerStatus::Killed);
}

#[tokio::test]
async fn srvr_names_each_servers_mode_and_the_zxid_it_has_applied() {
    let mock = ensemble(3).await;
    mock.server(2).set_lag(Lag::Txns(1)).unwrap();
    let client = on(&mock, 0).await;
    client.create("/m", b"", &persistent()).await.unwrap();
    let (leader, follower, lagging) = (
        four_letter(mock.server(0).addr(), b"srvr").await,
        four_letter(mock.server(1).addr(), b"srvr").await,
        four_letter(mock.server(2).addr(), b"srvr").await,
    );
    assert!(leader.contains("Mode: leader\n"), "{leader}");
    assert!(follower.contains("Mode: follower\n"), "{follower}");
    let zxid = |text: &str| {
        text.lines()
            .find(|l| l.starts_with("Zxid: "))
            .unwrap()
            .to_string()
    };
    assert_eq!(zxid(&leader), zxid(&follower));
    assert_ne!(
        zxid(&leader),
        zxid(&lagging),
        "the lagging server reports its own zxid"
    );
    let single = ZkMock::start().await;
    assert!(four_letter(single.addr(), b"srvr")
        .await
        .contains("Mode: standalone\n"));
}

/// Re-attaches `c`'s session on another server with a raw ConnectRequest.
async fn move_session(c: &RawClient, to: std::net::SocketAddr) -> RawClient {
    let req = ConnectRequest {
        time_out: c.timeout,
        last_zxid_seen: c.last_zxid,
        session_id: c.session_id,
        passwd: Some(c.passwd.clone()),
        read_only: Some(false),
        ..Default::default()
    };
    let (moved, resp) = RawClient::handshake(to, &req).await.unwrap();
    assert_eq!(resp.expect("re-attached").session_id, c.session_id);
    moved
}

#[tokio::test]
async fn after_a_session_moves_its_old_followers_connection_still_reads_and_a_write_closes_it() {
    let mock = ensemble(3).await;
    let mut old = RawClient::connect(mock.server(1).addr(), 6000)
        .await
        .unwrap();
    raw_create_ok(&mut old, "/moved", 0).await;
    let mut new = move_session(&old, mock.server(2).addr()).await;

    // Server 1 does not know yet: it answers reads and pings from its replica.
    let r = raw_get(&mut old, "/moved", false).await;
    assert_eq!(r.header.err, 0);
    let ping = old
        .request_raw(zk_mock::proto::OpCode::Ping as i32, &[])
        .await
        .unwrap();
    assert_eq!(ping.header.err, 0);

    // A write reaches the leader, whose owner check fails: the connection is
    // closed with no answer, and the error txn took a zxid.
    let before = mock.last_zxid();
    let body = create_req("/from-old", None, 0);
    let closed = old.request(zk_mock::proto::OpCode::Create, &body).await;
    assert!(
        closed.is_err(),
        "the old connection answered a write: {closed:?}"
    );
    assert_eq!(
        mock.last_zxid(),
        before + 1,
        "the failed write is an error txn"
    );
    mock.inspect(|log| {
        let r = log
            .requests()
            .error(ErrorCode::SessionMoved)
            .next()
            .unwrap();
        assert_eq!((r.server, r.path.as_deref()), (1, Some("/from-old")));
    });
    // The session lives on through its new connection.
    raw_create_ok(&mut new, "/from-new", 0).await;
    assert_eq!(mock.session_ids().len(), 1);
}

#[tokio::test]
async fn after_a_session_moves_its_old_leaders_connection_is_closed_by_any_request() {
    let mock = ensemble(3).await;
    let mut old = RawClient::connect(mock.server(0).addr(), 6000)
        .await
        .unwrap();
    let _new = move_session(&old, mock.server(1).addr()).await;
    let before = mock.last_zxid();
    let read = old
        .request(zk_mock::proto::OpCode::GetData, &path_watch("/", false))
        .await;
    assert!(
        read.is_err(),
        "the leader answered a moved session's read: {read:?}"
    );
    assert_eq!(mock.last_zxid(), before, "a read takes no zxid");
    assert_eq!(mock.session_ids().len(), 1);
}

#[tokio::test]
async fn on_one_server_a_reattach_closes_the_sessions_other_connection_at_once() {
    let mock = ensemble(3).await;
    let mut old = RawClient::connect(mock.server(1).addr(), 6000)
        .await
        .unwrap();
    let _new = move_session(&old, mock.server(1).addr()).await;
    // CLIENT_RECONNECT: closed, with nothing sent.
    assert!(old.read_frame().await.unwrap().is_none());
}

/// Waits until server `i` serves read-only.
async fn until_read_only(mock: &ZkMock, i: usize) {
    with_timeout(QUICK, "the server read-only", async {
        while !mock.servers()[i].read_only {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

async fn read_only_ensemble(local_sessions: bool) -> ZkMock {
    init_tracing();
    ZkMock::builder()
        .servers(3)
        .election_window(Duration::from_millis(50))
        .read_only_mode(true)
        .read_only_after(Duration::from_millis(100))
        .local_sessions(local_sessions)
        .start()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_partitioned_server_in_read_only_mode_serves_read_only_clients_until_it_heals() {
    let mock = read_only_ensemble(true).await;
    let writer = on(&mock, 0).await;
    writer
        .create("/ro", b"before", &persistent())
        .await
        .unwrap();
    assert!(mock.server(2).partition());
    until_read_only(&mock, 2).await;
    assert_eq!(four_letter(mock.server(2).addr(), b"isro").await, "ro");
    let srvr = four_letter(mock.server(2).addr(), b"srvr").await;
    assert!(
        srvr.contains("READ-ONLY mode; serving only read-only clients\n"),
        "{srvr}"
    );
    assert!(srvr.contains("Mode: read-only\n"), "{srvr}");
    assert_eq!(four_letter(mock.server(0).addr(), b"isro").await, "rw");

    // A client that cannot be read-only is closed unanswered.
    assert!(RawClient::connect(mock.server(2).addr(), 6000)
        .await
        .is_err());
    // One that can gets a local session: reads from the cut-off replica,
    // NOTREADONLY for writes and sync.
    let ro = with_timeout(
        QUICK,
        "a read-only session",
        Client::connector()
            .with_readonly(true)
            .connect(&mock.server(2).connect_string()),
    )
    .await
    .unwrap();
    assert_eq!(ro.state(), SessionState::ConnectedReadOnly);
    assert!(ro.session().is_readonly());
    writer.set_data("/ro", b"after", None).await.unwrap();
    assert_eq!(
        ro.get_data("/ro").await.unwrap().0,
        b"before",
        "the cut-off replica"
    );
    assert_eq!(
        ro.create("/w", b"", &persistent()).await.unwrap_err(),
        zookeeper_client::Error::NotReadOnly
    );
    assert_eq!(
        ro.sync("/").await.unwrap_err(),
        zookeeper_client::Error::NotReadOnly
    );

    // Healed: the read-only server stops, its connections close, and its
    // local sessions are gone; it has caught up.
    let ro_session = ro.session_id();
    assert!(mock.server(2).heal());
    assert!(!mock.servers()[2].read_only);
    assert!(!mock.session_ids().contains(&ro_session.0.into()));
    let back = on(&mock, 2).await;
    assert_eq!(back.get_data("/ro").await.unwrap().0, b"after");
}

/// A read-only server's local session is unknown to the quorum: another
/// server answers its re-attach as expired (the leader, asked to
/// revalidate it, does not know it) and closes the connection, so the
/// session can own no ephemeral node there that would outlive it when its
/// server rejoins. On its own server it still re-attaches.
#[tokio::test]
async fn a_read_only_servers_local_session_is_expired_on_a_server_of_the_quorum() {
    let mock = read_only_ensemble(true).await;
    assert!(mock.server(2).partition());
    until_read_only(&mock, 2).await;
    let new = new_session(6000, Some(true));
    let (local, resp) = RawClient::handshake(mock.server(2).addr(), &new)
        .await
        .unwrap();
    let resp = resp.expect("a local session");
    assert_ne!(resp.session_id, 0);
    assert_eq!(resp.read_only, Some(true));

    let again = ConnectRequest {
        session_id: local.session_id,
        passwd: Some(local.passwd.clone()),
        ..new.clone()
    };
    for server in [0, 1] {
        let (mut elsewhere, resp) = RawClient::handshake(mock.server(server).addr(), &again)
            .await
            .unwrap();
        let resp = resp.expect("an answer");
        assert_eq!(
            (resp.time_out, resp.session_id),
            (0, 0),
            "server {server}: expired"
        );
        assert!(
            elsewhere.read_frame().await.unwrap().is_none(),
            "then closed"
        );
    }
    let (_, home) = RawClient::handshake(mock.server(2).addr(), &again)
        .await
        .unwrap();
    assert_eq!(home.expect("re-attached").session_id, local.session_id);
    assert!(mock.session_ids().contains(&local.session_id.into()));
}

#[tokio::test]
async fn without_local_sessions_a_read_only_server_answers_a_new_session_with_notreadonly() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mock = read_only_ensemble(false).await;
    // Two of three down: the survivor has no quorum and goes read-only.
    assert!(mock.server(0).kill());
    assert!(mock.server(1).kill());
    until_read_only(&mock, 2).await;
    let req = new_session(6000, Some(true));
    let mut s = tokio::net::TcpStream::connect(mock.server(2).addr())
        .await
        .unwrap();
    s.write_all(&zk_mock::codec::frame(&req.to_bytes()))
        .await
        .unwrap();
    let mut frame = [0u8; 20];
    s.read_exact(&mut frame).await.unwrap();
    // ReadOnlyRequestProcessor fails the createSession: a bare reply header
    // (xid 0, the server's zxid, NOTREADONLY), not a ConnectResponse.
    assert_eq!(&frame[..8], &[0, 0, 0, 16, 0, 0, 0, 0]);
    let zxid = i64::from_be_bytes(frame[8..16].try_into().unwrap());
    assert_eq!(zxid, mock.servers()[2].last_zxid);
    assert_eq!(i32::from_be_bytes(frame[16..].try_into().unwrap()), -119);
}

/// kazoo's and zookeeper-client's test harnesses' digest for `super:test`.
const SUPER_DIGEST: &str = "super:D/InIHSb7yEEbrWz8b9l71RjZJU=";

/// Three servers that take reconfig from the super user.
async fn reconfig_ensemble() -> ZkMock {
    init_tracing();
    ZkMock::builder()
        .servers(3)
        .reconfig_enabled(true)
        .super_digest(SUPER_DIGEST)
        .start()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_reconfig_that_removes_the_leader_makes_it_step_down_for_the_lowest_voter_left() {
    use zookeeper_client::EnsembleUpdate;
    let mock = reconfig_ensemble().await;
    let old = mock.leader();
    let other = (0..3).rev().find(|&i| i != old).unwrap();
    let mut follower_client = RawClient::connect(mock.server(other).addr(), 6000)
        .await
        .unwrap();
    let client = connect_to(&mock.server(old).connect_string()).await;
    client.auth("digest", b"super:test").await.unwrap();
    let before = mock.last_zxid();
    let leave = (old + 1).to_string();
    let update = EnsembleUpdate::Incremental {
        joinings: vec![].into_iter(),
        leavings: vec![leave.as_str()].into_iter(),
    };
    client.update_ensemble(update, None).await.unwrap();

    // The lowest id left leads a new epoch; the old leader follows.
    let new = (0..3).find(|&i| i != old).unwrap();
    assert_eq!(mock.leader(), new);
    assert!(mock.last_zxid() >> 32 > before >> 32, "a new epoch");
    let infos = mock.servers();
    assert!(!infos[old].leader && infos[old].status == ServerStatus::Serving);
    // Every server dropped its clients, as a leader change does: a follower's
    // too (a raw client, which does not reconnect by itself).
    let dropped = follower_client
        .request_raw(zk_mock::proto::OpCode::Ping as i32, &[])
        .await;
    assert!(
        dropped.is_err(),
        "a follower's client outlived the leader change: {dropped:?}"
    );
    // Writes go on through the new leader.
    let c = on(&mock, new).await;
    c.create("/after", b"", &persistent()).await.unwrap();
}

#[tokio::test]
async fn reconfig_changes_the_ensembles_config_with_super_and_a_fresh_version() {
    use zookeeper_client::{EnsembleUpdate, Error};
    let mock = reconfig_ensemble().await;
    let client = connect_to(&mock.connect_string()).await;
    let (config, stat) = client.get_config().await.unwrap();
    let config = String::from_utf8(config).unwrap();
    for i in 0..3 {
        let line = format!("server.{}=", i + 1);
        assert!(config.contains(&line), "{config}");
        assert!(
            config.contains(&format!("participant;{}", mock.server(i).addr())),
            "{config}"
        );
    }
    assert!(config.ends_with("\nversion=100000000"), "{config}");

    let observer = "server.100=0.0.0.0:1234:2345:observer;0.0.0.0:3456";
    let join = || EnsembleUpdate::Incremental {
        joinings: vec![observer].into_iter(),
        leavings: vec![].into_iter(),
    };
    // WRITE on /zookeeper/config is super's alone (checked last).
    assert_eq!(
        client.update_ensemble(join(), None).await.unwrap_err(),
        Error::NoAuth
    );
    let bad = EnsembleUpdate::Incremental {
        joinings: vec!["some thing"].into_iter(),
        leavings: vec![].into_iter(),
    };
    assert!(matches!(
        client.update_ensemble(bad, None).await.unwrap_err(),
        Error::BadArguments(_)
    ));

    client.auth("digest", b"super:test").await.unwrap();
    assert_eq!(
        client
            .update_ensemble(join(), Some(stat.mzxid + 1))
            .await
            .unwrap_err(),
        Error::BadVersion,
        "a stale or future config version"
    );
    let (joined, _) = client
        .update_ensemble(join(), Some(0x1_0000_0000))
        .await
        .unwrap();
    let joined = String::from_utf8(joined).unwrap();
    assert!(joined.contains(observer), "{joined}");
    let version = i64::from_str_radix(joined.rsplit('=').next().unwrap(), 16).unwrap();
    let (_, stat) = client.get_config().await.unwrap();
    assert_eq!(
        version, stat.mzxid,
        "a config's version is its reconfig's zxid"
    );

    let leave = EnsembleUpdate::Incremental {
        joinings: vec![].into_iter(),
        leavings: vec!["100"].into_iter(),
    };
    let (left, _) = client.update_ensemble(leave, None).await.unwrap();
    assert!(!String::from_utf8(left).unwrap().contains("server.100"));
    // A joining participant that is no server of this ensemble cannot sync.
    let ghost = EnsembleUpdate::Incremental {
        joinings: [
            "server.9=127.0.0.1:1:2:participant;127.0.0.1:3",
            "server.8=127.0.0.1:4:5:participant;127.0.0.1:6",
        ]
        .into_iter(),
        leavings: ["2", "3"].into_iter(),
    };
    // NEWCONFIGNOQUORUM (−13), which zookeeper-client has no name for.
    let err = client.update_ensemble(ghost, None).await.unwrap_err();
    assert!(matches!(err, Error::UnexpectedErrorCode(-13)), "{err:?}");
}

#[tokio::test]
async fn observers_outside_the_membership_serve_but_do_not_vote_until_a_reconfig_makes_them_participants(
) {
    use zookeeper_client::EnsembleUpdate;
    init_tracing();
    // zookeeper-client's test_update_ensemble: server 1 alone in the
    // config, servers 2 and 3 observers that know only it and themselves.
    let mock = ZkMock::builder()
        .servers(3)
        .membership(["server.1=localhost:2001:3001:participant;localhost:4001"])
        .reconfig_enabled(true)
        .super_digest(SUPER_DIGEST)
        .start()
        .await
        .unwrap();
    assert_eq!(mock.leader(), 0);
    let one = connect_to(&mock.server(0).connect_string()).await;
    let three = connect_to(&mock.server(2).connect_string()).await;
    one.create("/xx", b"xx", &persistent()).await.unwrap();
    three.sync("/").await.unwrap();
    assert_eq!(three.get_data("/xx").await.unwrap().0, b"xx");
    let (config, stat) = one.get_config().await.unwrap();
    assert_eq!(
        String::from_utf8(config).unwrap(),
        "server.1=localhost:2001:3001:participant;localhost:4001\nversion=100000000"
    );

    // One voter: losing an observer costs nothing, losing server 1 the quorum.
    assert!(mock.server(1).kill());
    assert_eq!(mock.server(0).status(), ServerStatus::Serving);
    one.create("/still", b"", &persistent()).await.unwrap();
    assert!(mock.server(1).restart().unwrap());

    let all = EnsembleUpdate::New {
        ensemble: vec![
            "server.1=localhost:2001:3001:participant;localhost:4001",
            "server.2=localhost:2002:3002:participant;localhost:4002",
            "server.3=localhost:2003:3003:participant;localhost:4003",
        ]
        .into_iter(),
    };
    one.auth("digest", b"super:test").await.unwrap();
    let (config, _) = one.update_ensemble(all, Some(stat.mzxid)).await.unwrap();
    let config = String::from_utf8(config).unwrap();
    for id in 1..=3 {
        assert!(config.contains(&format!("server.{id}=")), "{config}");
    }

    // Three voters now: server 1 can go, and server 3 (the highest id) leads.
    assert!(mock.server(0).kill());
    until_elected(&mock).await;
    assert_eq!(mock.leader(), 2);
    three.create("/after", b"", &persistent()).await.unwrap();
}

#[tokio::test]
async fn a_membership_that_does_not_fit_the_ensemble_is_refused() {
    for (lines, why) in [
        (vec!["server.4=localhost:1:2;3"], "servers 1 to 3"),
        (vec!["server.1=localhost:1:2:observer;3"], "no participant"),
        (vec!["server.x=localhost:1:2;3"], "not server.N=spec"),
        (vec!["server.1=localhost:1;3"], "host:port:port"),
    ] {
        let err = ZkMock::builder()
            .servers(3)
            .membership(lines.clone())
            .start()
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains(why), "{lines:?}: {err}");
    }
}

/// A killed server frees its port as a dead ZooKeeper process does: a client
/// is refused there, another server can listen on it, and the killed one
/// cannot restart until that server has gone; then it does, on the same
/// port, with its sessions.
#[tokio::test]
async fn a_killed_server_frees_its_port_and_takes_it_back_on_restart() {
    init_tracing();
    let mock = ZkMock::builder().start().await.unwrap();
    let addr = mock.addr();
    let client = connect_to(&mock.connect_string()).await;
    client.create("/mine", b"", &ephemeral()).await.unwrap();
    let session = client.session_id().0;
    let mut states = client.state_watcher();

    assert!(mock.server(0).kill());
    assert_eq!(states.changed().await, SessionState::Disconnected);
    let refused = std::net::TcpStream::connect(addr).unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);

    // Another server on the very port, as `new TestingServer(port)` after
    // `stop()` would start one.
    let other = ZkMock::builder().listen(addr).start().await.unwrap();
    assert_eq!(other.addr(), addr);
    let theirs = connect_to(&other.connect_string()).await;
    theirs.create("/theirs", b"", &persistent()).await.unwrap();
    let err = mock.server(0).restart().unwrap_err();
    assert!(
        matches!(&err, zk_mock::Error::Bind { addr: a, .. } if *a == addr),
        "{err}"
    );
    assert_eq!(mock.server(0).status(), ServerStatus::Killed);
    drop(theirs);
    drop(other);

    // The port is free again: the first server listens there, and its
    // client is back in the session it had, with its ephemeral node.
    assert!(mock.server(0).restart().unwrap());
    assert!(!mock.server(0).restart().unwrap(), "already up");
    with_timeout(QUICK, "the client reconnected", async {
        while states.changed().await != SessionState::SyncConnected {}
    })
    .await;
    assert_eq!(client.session_id().0, session);
    assert!(client.check_stat("/mine").await.unwrap().is_some());
    assert!(client.check_stat("/theirs").await.unwrap().is_none());
    assert!(mock.session_ids().iter().any(|s| s.0 == session));
}

/// A single server is ZooKeeper's standalone mode: down, it expires no
/// session; restarted, it serves as soon as `restart` returns, with no
/// election and no new epoch, and every session's timeout starts afresh from
/// its session tracker's rebuild.
#[tokio::test]
async fn a_restarted_standalone_server_serves_at_once_in_the_same_epoch() {
    init_tracing();
    let mock = ZkMock::builder()
        .clock(zk_mock::clock::ClockMode::Manual)
        .start()
        .await
        .unwrap();
    let mut old = RawClient::connect(mock.addr(), 10_000).await.unwrap();
    let r = old
        .request(OpCode::Create, &create_req("/e", None, 1))
        .await
        .unwrap();
    assert_eq!(r.header.err, 0);
    let session = old.session_id;
    let before = mock.last_zxid();
    mock.advance(Duration::from_secs(8));

    assert!(mock.server(0).kill());
    // Down, it runs no session tracker: nothing expires meanwhile.
    mock.advance(Duration::from_secs(30));
    assert!(mock.session_ids().iter().any(|s| s.0 == session));
    assert!(mock.server(0).restart().unwrap());
    // No election window: the handshake right after is answered.
    let mut new = RawClient::connect(mock.addr(), 10_000).await.unwrap();
    let r = new
        .request(OpCode::Create, &create_req("/p", None, 0))
        .await
        .unwrap();
    assert_eq!(r.header.err, 0);
    assert_eq!(
        r.header.zxid,
        before + 2,
        "the zxids go on in the same epoch: the new session's, then the create's"
    );

    // The old session's 10 s count again from the restart, 8 s in.
    mock.advance(Duration::from_secs(6));
    assert!(
        mock.session_ids().iter().any(|s| s.0 == session),
        "the session expired on its old deadline"
    );
    assert!(mock.snapshot().tree.contains_key("/e"));
    mock.advance(Duration::from_secs(8));
    assert!(!mock.session_ids().iter().any(|s| s.0 == session));
    assert!(!mock.snapshot().tree.contains_key("/e"));
    drop(new);
}
