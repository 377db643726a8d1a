//! The binary's admin interface: its address and token flags, and an
//! ensemble served by one process.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;

use crate::process::{spawn_with, Binary};
use crate::support::*;

/// The binary with a free admin port: its admin address and announcement.
fn admin_binary(args: &[&str], token: Option<&str>) -> (Binary, SocketAddr, String) {
    let args: Vec<&str> = ["--admin-port", "0"].iter().chain(args).copied().collect();
    let b = spawn_with(&args, token);
    let (admin, line) = b.admin.clone().expect("--admin-port was given");
    (b, admin, line)
}

#[tokio::test]
async fn the_binary_keeps_the_admin_interface_on_loopback_whatever_the_client_host() {
    let (_b, admin, line) = admin_binary(&["--host", "0.0.0.0"], None);
    assert!(admin.ip().is_loopback(), "{line}");
    let (s, _) = http(admin, "GET", "/sessions", None).await;
    assert_eq!(s, 200);
    let (_moved, admin, line) = admin_binary(&["--admin-host", "0.0.0.0"], Some("t0ken"));
    assert!(admin.ip().is_unspecified(), "{line}");
}

#[tokio::test]
async fn the_binary_takes_its_admin_token_from_the_flag_or_the_environment() {
    for (args, env) in [
        (&["--admin-token", "t0ken"][..], None),
        (&[][..], Some("t0ken")),
    ] {
        let (_b, admin, line) = admin_binary(args, env);
        assert!(line.contains("bearer token required"), "{line}");
        let local = SocketAddr::from(([127, 0, 0, 1], admin.port()));
        let ((s, _), _) = http_as(local, None, "GET", "/sessions", None).await;
        assert_eq!(s, 401, "{args:?} {env:?}");
        let ((s, _), _) = http_as(local, Some("t0ken"), "GET", "/sessions", None).await;
        assert_eq!(s, 200, "{args:?} {env:?}");
    }
}

#[tokio::test]
async fn the_binary_serves_an_ensemble_whose_servers_the_admin_interface_kills_lags_and_restarts() {
    let (b, admin, _) = admin_binary(&["--servers", "3", "--election-window", "50"], None);
    let hosts: Vec<&str> = b.connect_string.split(',').collect();
    assert_eq!(hosts.len(), 3, "{}", b.connect_string);

    let (s, v) = http(admin, "GET", "/servers", None).await;
    assert_eq!(s, 200);
    let servers = v.as_array().unwrap();
    assert_eq!(servers.len(), 3);
    assert_eq!(servers[0]["leader"], true);
    assert_eq!(servers[1]["status"], "serving");
    assert_eq!(servers[2]["addr"], hosts[2]);

    // A lagging server 2: its client reads stale data. (Connected first: a
    // new session through it waits for it to apply the createSession.)
    let writer = connect_to(hosts[0]).await;
    let reader = connect_to(hosts[2]).await;
    let (s, v) = http(admin, "POST", "/servers/2/lag", Some(r#"{"txns": 1}"#)).await;
    assert_eq!((s, &v["lag"]["txns"]), (200, &Value::from(1)));
    // The leader cannot lag: it says why.
    let (s, v) = http(admin, "POST", "/servers/0/lag", Some(r#"{"txns": 1}"#)).await;
    assert_eq!(s, 409, "{v}");
    assert!(v.to_string().contains("server 0 is the leader"), "{v}");
    writer.create("/lagged", b"", &persistent()).await.unwrap();
    assert!(reader.check_stat("/lagged").await.unwrap().is_none());
    let (_, v) = http(admin, "GET", "/servers", None).await;
    assert_eq!(v[2]["behind"], 1);
    let (s, _) = http(admin, "POST", "/servers/2/catch_up", None).await;
    assert_eq!(s, 200);
    assert!(reader.check_stat("/lagged").await.unwrap().is_some());

    // Kill and restart: a second kill is a 409, an unknown server a 404.
    let (s, v) = http(admin, "POST", "/servers/1/kill", None).await;
    assert_eq!((s, v["status"].as_str()), (200, Some("killed")));
    let (s, v) = http(admin, "POST", "/servers/1/kill", None).await;
    assert_eq!(s, 409, "{v}");
    let (s, _) = http(admin, "POST", "/servers/7/kill", None).await;
    assert_eq!(s, 404);
    let (s, v) = http(admin, "POST", "/servers/1/restart", None).await;
    assert_eq!((s, v["status"].as_str()), (200, Some("serving")));
    let (s, v) = http(
        admin,
        "POST",
        "/servers/1/lag",
        Some(r#"{"ms": 5, "txns": 1}"#),
    )
    .await;
    assert_eq!(s, 400, "{v}");

    // Leader loss: every client drops for the window, then a new leader.
    let (s, _) = http(admin, "POST", "/election", Some(r#"{"ms": 50}"#)).await;
    assert_eq!(s, 200);
    with_timeout(QUICK, "a write after the election", async {
        while writer.create("/after", b"", &persistent()).await.is_err() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let (_, v) = http(admin, "GET", "/servers", None).await;
    assert_eq!(v[2]["leader"], true, "{v}");
}
