//! The HTTP+JSON admin interface, through a minimal HTTP/1.1 client, acting
//! on real client sessions.

use std::net::SocketAddr;

use serde_json::Value;
use zk_mock::clock::ClockMode;
use zk_mock::ZkMock;
use zookeeper_client::Error;

use crate::support::*;

async fn admin_mock(manual: bool) -> (ZkMock, SocketAddr) {
    init_tracing();
    let mut b = ZkMock::builder();
    if manual {
        b = b.clock(ClockMode::Manual);
    }
    let mock = b.start().await.unwrap();
    let admin = mock.serve_admin("127.0.0.1:0".parse().unwrap()).unwrap();
    (mock, admin)
}

#[tokio::test]
async fn sessions_are_listed_with_decimal_ids_ephemerals_and_watches() {
    let (mock, admin) = admin_mock(false).await;
    let c = connect(&mock).await;
    c.create("/a", b"", &ephemeral()).await.unwrap();
    let (_, _, _w) = c.get_and_watch_data("/a").await.unwrap();
    let (status, v) = http(admin, "GET", "/sessions", None).await;
    assert_eq!(status, 200);
    assert_eq!(v[0]["id"].as_i64(), Some(c.session_id().0));
    assert_eq!(v[0]["ephemerals"][0], "/a");
    assert_eq!(v[0]["watches"][0]["path"], "/a");
    assert_eq!(v[0]["watches"][0]["kind"], "data");
}

#[tokio::test]
async fn expire_and_disconnect_act_on_a_real_session_and_unknown_ids_are_404() {
    let (mock, admin) = admin_mock(false).await;
    let c = connect(&mock).await;
    let id = c.session_id().0;
    let (s, _) = http(admin, "POST", &format!("/sessions/{id}/disconnect"), None).await;
    assert_eq!(s, 200);
    let (s, _) = http(admin, "POST", &format!("/sessions/{id:#x}/expire"), None).await;
    assert_eq!(s, 200, "hex ids work too");
    assert_eq!(
        c.check_stat("/")
            .await
            .err()
            .map(|e| e == Error::SessionExpired || e == Error::ConnectionLoss),
        Some(true)
    );
    let (s, v) = http(admin, "POST", &format!("/sessions/{id}/expire"), None).await;
    assert_eq!(s, 404);
    assert!(v["error"].as_str().unwrap().contains("no live session"));
    let (s, v) = http(admin, "POST", "/sessions/banana/expire", None).await;
    assert_eq!(s, 400);
    assert!(v["error"].as_str().unwrap().contains("banana"));
}

#[tokio::test]
async fn a_rule_posted_as_json_affects_a_real_client_and_delete_removes_it() {
    let (mock, admin) = admin_mock(false).await;
    let c = connect(&mock).await;
    c.create("/cfg", b"v", &persistent()).await.unwrap();
    let rule = r#"{"ops": ["getData"], "path": {"exact": "/cfg"}, "verdict": {"type": "fail", "code": -101}}"#;
    let (s, v) = http(admin, "POST", "/rules", Some(rule)).await;
    assert_eq!(s, 201);
    let id = v["id"].as_u64().unwrap();
    assert_eq!(c.get_data("/cfg").await.err(), Some(Error::NoNode));
    let (_, list) = http(admin, "GET", "/rules", None).await;
    assert_eq!(list[0]["fired"], 1);
    let (s, _) = http(admin, "DELETE", &format!("/rules/{id}"), None).await;
    assert_eq!(s, 204);
    assert_eq!(c.get_data("/cfg").await.unwrap().0, b"v");
    let (s, _) = http(admin, "DELETE", &format!("/rules/{id}"), None).await;
    assert_eq!(s, 404);
}

#[tokio::test]
async fn bad_rules_get_a_400_with_a_message() {
    let (_mock, admin) = admin_mock(false).await;
    let (s, v) = http(admin, "POST", "/rules", Some("{not json")).await;
    assert_eq!(s, 400);
    assert!(v["error"].as_str().unwrap().starts_with("bad rule"));
    let (s, v) = http(
        admin,
        "POST",
        "/rules",
        Some(r#"{"verdict": {"type": "fail", "code": 7}}"#),
    )
    .await;
    assert_eq!(s, 400);
    assert!(v["error"]
        .as_str()
        .unwrap()
        .contains("not a ZooKeeper error code"));
    let (s, _) = http(
        admin,
        "POST",
        "/rules",
        Some(r#"{"ops": ["frobnicate"], "verdict": {"type": "stall"}}"#),
    )
    .await;
    assert_eq!(s, 400);
}

#[tokio::test]
async fn the_clock_advances_over_http_and_expires_a_silent_session() {
    let (mock, admin) = admin_mock(true).await;
    let c = raw(&mock).await;
    let (s, v) = http(admin, "POST", "/clock/advance", Some(r#"{"ms": 30000}"#)).await;
    assert_eq!(s, 200);
    assert_eq!(v["clock_ms"], 30000);
    assert!(!mock.session_ids().contains(&c.session_id.into()));
    let (s, _) = http(admin, "POST", "/clock/advance", Some(r#"{"seconds": 3}"#)).await;
    assert_eq!(s, 400);
}

#[tokio::test]
async fn snapshot_recorder_and_metrics_are_served_as_json() {
    let (mock, admin) = admin_mock(false).await;
    let c = connect(&mock).await;
    let other = connect(&mock).await;
    c.create("/n", b"hello", &persistent()).await.unwrap();
    let (_, _, w) = other.get_and_watch_data("/n").await.unwrap();
    c.delete("/n", None).await.unwrap();
    w.changed().await;
    let (s, snap) = http(admin, "GET", "/snapshot", None).await;
    assert_eq!(s, 200);
    assert_eq!(snap["tree"]["/zookeeper"]["stat"]["cversion"], -2);
    let (_, reqs) = http(
        admin,
        "GET",
        &format!("/recorder/requests?session={}&op=create2", c.session_id().0),
        None,
    )
    .await;
    assert_eq!(reqs.as_array().unwrap().len(), 1);
    assert_eq!(reqs[0]["path"], "/n");
    let (_, notes) = http(
        admin,
        "GET",
        "/recorder/notifications?path=/n&event=NodeDeleted",
        None,
    )
    .await;
    assert_eq!(notes.as_array().unwrap().len(), 1);
    assert_eq!(notes[0]["session"].as_i64(), Some(other.session_id().0));
    let (s, _) = http(admin, "GET", "/recorder/notifications?event=Bogus", None).await;
    assert_eq!(s, 400);
    let (_, m) = http(admin, "GET", "/metrics", None).await;
    assert_eq!(m["sessions"], 2);
    assert_eq!(m["totals"]["notifications"], 1);
    let (s, _) = http(admin, "GET", "/nope", None).await;
    assert_eq!(s, 404);
}

#[tokio::test]
async fn refusing_connections_over_http_keeps_new_clients_out() {
    let (mock, admin) = admin_mock(false).await;
    let (s, _) = http(admin, "POST", "/connections/refuse", None).await;
    assert_eq!(s, 200);
    assert!(zk_mock::client::RawClient::connect(mock.addr(), 10_000)
        .await
        .is_err());
    http(admin, "POST", "/connections/accept", None).await;
    assert!(zk_mock::client::RawClient::connect(mock.addr(), 10_000)
        .await
        .is_ok());
}

#[tokio::test]
async fn a_rule_names_its_session_as_a_json_number_or_string() {
    let (mock, admin) = admin_mock(false).await;
    let (a, b) = (connect(&mock).await, connect(&mock).await);
    a.create("/cfg", b"v", &persistent()).await.unwrap();
    let id = a.session_id().0;
    for session in [format!("\"{id:#x}\""), format!("\"{id}\""), id.to_string()] {
        let rule = format!(
            r#"{{"ops": ["getData"], "session": {session}, "times": 1, "verdict": {{"type": "fail", "code": -101}}}}"#
        );
        let (s, v) = http(admin, "POST", "/rules", Some(&rule)).await;
        assert_eq!(s, 201, "{session}: {v}");
        // Only that session's request fails.
        assert_eq!(b.get_data("/cfg").await.unwrap().0, b"v", "{session}");
        assert_eq!(
            a.get_data("/cfg").await.err(),
            Some(Error::NoNode),
            "{session}"
        );
    }
    let (s, v) = http(
        admin,
        "POST",
        "/rules",
        Some(r#"{"session": "0xnope", "verdict": {"type": "lose_reply"}}"#),
    )
    .await;
    assert_eq!(s, 400);
    assert!(v["error"].as_str().unwrap().contains("0xnope"), "{v}");
}

#[tokio::test]
async fn with_a_token_every_request_must_carry_it() {
    init_tracing();
    let mock = ZkMock::start().await;
    let any = "127.0.0.1:0".parse().unwrap();
    assert!(
        mock.serve_admin_with_token(any, "  ").is_err(),
        "an empty token"
    );
    let admin = mock.serve_admin_with_token(any, "s3cret").unwrap();
    let ((s, v), head) = http_as(admin, None, "GET", "/sessions", None).await;
    assert_eq!(s, 401);
    assert!(head.contains("www-authenticate: bearer"), "{head}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("Authorization: Bearer"),
        "says what to send: {v}"
    );
    let ((s, v), _) = http_as(admin, Some("guess"), "POST", "/sessions/expire", None).await;
    assert_eq!(s, 401, "{v}");
    let ((s, _), _) = http_as(admin, Some("s3cret"), "GET", "/sessions", None).await;
    assert_eq!(s, 200);
    // Unknown paths are refused before they are looked up, too.
    let ((s, _), _) = http_as(admin, None, "GET", "/nope", None).await;
    assert_eq!(s, 401);
}

#[tokio::test]
async fn reset_wipes_the_tree_and_expires_every_session() {
    let (mock, admin) = admin_mock(false).await;
    let c = connect(&mock).await;
    c.create("/left-over", b"", &persistent()).await.unwrap();
    let (s, v) = http(admin, "POST", "/reset", None).await;
    assert_eq!((s, &v["reset"]), (200, &Value::Bool(true)));
    let (_, sessions) = http(admin, "GET", "/sessions", None).await;
    assert_eq!(sessions, Value::Array(vec![]));
    let next = connect(&mock).await;
    assert_eq!(next.check_stat("/left-over").await.unwrap(), None);
}

#[tokio::test]
async fn the_request_filter_takes_an_operation_family_as_rules_do() {
    let (mock, admin) = admin_mock(false).await;
    let c = connect(&mock).await;
    // zookeeper-client sends create2.
    c.create("/f", b"", &persistent()).await.unwrap();
    let (_, family) = http(admin, "GET", "/recorder/requests?path=/f&op=create", None).await;
    assert_eq!(
        family[0]["op"], "create2",
        "the family holds every create op code"
    );
    let (_, exact) = http(admin, "GET", "/recorder/requests?path=/f&op=create2", None).await;
    assert_eq!(exact.as_array().unwrap().len(), 1);
    let (_, by_code) = http(admin, "GET", "/recorder/requests?path=/f&op=15", None).await;
    assert_eq!(by_code.as_array().unwrap().len(), 1, "create2's code");
    let (_, plain) = http(admin, "GET", "/recorder/requests?path=/f&op=1", None).await;
    assert_eq!(
        plain,
        Value::Array(vec![]),
        "plain create's code is another op"
    );
}

#[tokio::test]
async fn a_parents_sequence_counter_is_set_over_http_and_wraps_as_zookeepers_does() {
    let (mock, admin) = admin_mock(false).await;
    let client = connect(&mock).await;
    client.create("/locks", b"", &persistent()).await.unwrap();
    let (s, v) = http(
        admin,
        "POST",
        "/sequence_counter",
        Some(r#"{"path": "/locks", "next": 2147483647}"#),
    )
    .await;
    assert_eq!((s, &v["next"]), (200, &Value::from(i32::MAX)));
    let seq = zookeeper_client::CreateMode::EphemeralSequential
        .with_acls(zookeeper_client::Acls::anyone_all());
    let (_, first) = client.create("/locks/n-", b"", &seq).await.unwrap();
    let (_, second) = client.create("/locks/n-", b"", &seq).await.unwrap();
    assert_eq!(
        (first.into_i64(), second.into_i64()),
        (2147483647, -2147483648)
    );
    let mut names = client.list_children("/locks").await.unwrap();
    names.sort();
    assert_eq!(names, ["n--2147483648", "n-2147483647"]);

    let (s, v) = http(
        admin,
        "POST",
        "/sequence_counter",
        Some(r#"{"path": "/none", "next": 1}"#),
    )
    .await;
    assert_eq!(s, 404);
    assert_eq!(v["error"], "no node \"/none\"");
    let (s, v) = http(
        admin,
        "POST",
        "/sequence_counter",
        Some(r#"{"path": "/locks", "next": 2147483648}"#),
    )
    .await;
    assert_eq!(s, 400);
    assert!(v["error"].as_str().unwrap().contains("32-bit"), "{v}");
}
