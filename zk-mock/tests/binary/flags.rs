//! The `zk-mock` binary: every server setting as a flag, observed through
//! real clients.

use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use zk_mock::client::RawClient;
use zookeeper_client::{Acls, Client, CreateMode, Error, EventType};

use crate::support::*;

use crate::process::spawn;

async fn four_letter(addr: SocketAddr, word: &[u8]) -> String {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(word).await.unwrap();
    let mut out = String::new();
    with_timeout(QUICK, "four-letter answer", s.read_to_string(&mut out))
        .await
        .unwrap();
    out
}

#[tokio::test]
async fn every_server_setting_is_a_flag() {
    let digest = zk_mock::acl::digest("super:secret");
    let bin = spawn(&[
        "--compat",
        "3.9",
        "--tick-time",
        "100",
        "--min-session-timeout",
        "300",
        "--max-session-timeout",
        "900",
        "--max-packet-size",
        "2000",
        "--container-check-interval",
        "100",
        "--extended-types",
        "--super-digest",
        &digest,
        "--start-time-ms",
        "1700000000000",
    ]);
    let srvr = four_letter(bin.addr, b"srvr").await;
    assert!(srvr.contains(zk_mock::VERSION_3_9), "{srvr}");
    let conf = four_letter(bin.addr, b"conf").await;
    for want in [
        "tickTime=100",
        "minSessionTimeout=300",
        "maxSessionTimeout=900",
    ] {
        assert!(conf.contains(want), "{want} in {conf}");
    }
    // Session timeouts are clamped to the flags' bounds.
    for (asked, got) in [(10, 300), (600, 600), (100_000, 900)] {
        let c = RawClient::connect(bin.addr, asked).await.unwrap();
        assert_eq!(c.timeout, got, "asked {asked}");
    }
    let client = Client::connector()
        .with_session_timeout(Duration::from_millis(900))
        .connect(&bin.addr.to_string())
        .await
        .unwrap();
    // A packet over the maximum closes the connection.
    let err = client
        .create("/big", &[0u8; 3000], &persistent())
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::ConnectionLoss | Error::SessionExpired),
        "{err:?}"
    );
    let client = Client::connect(&bin.addr.to_string()).await.unwrap();
    // TTL nodes are allowed.
    let ttl = CreateMode::Persistent
        .with_acls(Acls::anyone_all())
        .with_ttl(Duration::from_secs(3600));
    let (stat, _) = client.create("/ttl", b"", &ttl).await.unwrap();
    // The clock started at the given wall time (and has run since).
    let start = 1_700_000_000_000;
    assert!(
        (start..start + 600_000).contains(&stat.ctime),
        "ctime {}",
        stat.ctime
    );
    // Containers are checked every 100 ms.
    client.create("/c", b"", &container()).await.unwrap();
    client.create("/c/x", b"", &persistent()).await.unwrap();
    let (_, _, gone) = client.get_and_watch_data("/c").await.unwrap();
    client.delete("/c/x", None).await.unwrap();
    let event = with_timeout(QUICK, "the container check", gone.changed()).await;
    assert_eq!(event.event_type, EventType::NodeDeleted);
    // 3.9: the notification carries the zxid.
    assert!(event.zxid > 0);
    // The super digest reads what nobody else may.
    let alice = Client::connect(&bin.addr.to_string()).await.unwrap();
    alice.auth("digest", b"alice:pw").await.unwrap();
    alice
        .create(
            "/private",
            b"p",
            &CreateMode::Persistent.with_acls(Acls::creator_all()),
        )
        .await
        .unwrap();
    assert_eq!(
        client.get_data("/private").await.unwrap_err(),
        Error::NoAuth
    );
    let root = Client::connect(&bin.addr.to_string()).await.unwrap();
    root.auth("digest", b"super:secret").await.unwrap();
    assert_eq!(root.get_data("/private").await.unwrap().0, b"p");
}

#[test]
fn an_unknown_compat_is_refused_with_a_message() {
    let out = Command::new(env!("CARGO_BIN_EXE_zk-mock"))
        .args(["--port", "0", "--compat", "3.7"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("3.7") && err.contains("3.9"), "{err}");
}

/// SIGTERM: every connection is closed promptly, the process exits 0 and
/// its ports are free.
#[tokio::test]
async fn sigterm_closes_every_connection_and_exits_cleanly() {
    let mut bin = spawn(&[]);
    let addr = bin.addr;
    let mut clients = Vec::new();
    for _ in 0..20 {
        clients.push(RawClient::connect(addr, 10_000).await.unwrap());
    }
    let status = Command::new("kill")
        .args(["-TERM", &bin.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    for c in &mut clients {
        let f = with_timeout(QUICK, "the connection closes", c.read_frame()).await;
        assert_eq!(f.unwrap(), None);
    }
    let mut exited = None;
    for _ in 0..500 {
        if let Some(s) = bin.child.try_wait().unwrap() {
            exited = Some(s);
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let exited = exited.expect("the binary exits within 5 s of SIGTERM");
    assert!(exited.success(), "{exited:?}");
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "the port is free"
    );
}

#[test]
fn exit_with_stdin_stops_the_server_when_its_parent_lets_go() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_zk-mock"))
        .args(["--port", "0", "--exit-with-stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("zk-mock binary starts");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("zk-mock listening on "), "{first:?}");
    assert!(
        child.try_wait().unwrap().is_none(),
        "serving while stdin is open"
    );
    // The parent's end of the pipe closes (as when the test process dies).
    drop(child.stdin.take());
    let deadline = std::time::Instant::now() + QUICK;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(std::time::Instant::now() < deadline, "still running");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
}
