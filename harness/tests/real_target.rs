//! Scenarios with faults against a real Apache ZooKeeper 3.8, through the
//! harness's own proxy (`--target HOST:PORT`): disconnect, expiry by session
//! takeover, a lost create reply, a stall past the session timeout.
//!
//! Needs Java and the ZooKeeper jars (Debian's `zookeeper` package:
//! `/usr/share/java/zookeeper.jar`), so it only builds with the feature:
//! `cargo test -p harness --features real-zk --test real_target`.
//! `ZK_CLASSPATH` and `ZK_JAVA` override where they are found.
//!
//! The server runs in a child JVM under a small `sh` wrapper that holds the
//! read end of a pipe whose write end is this process's `ChildStdin` (the
//! approach of zk-mock's conformance tests): when the test binary exits for
//! any reason, the pipe closes and the wrapper kills the JVM and removes
//! its data directory. Its tick is 200 ms so that the scenarios' 1–3 s
//! session timeouts are honoured (the minimum is two ticks).
#![cfg(feature = "real-zk")]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use harness::report::{failure_details, Outcome, Status};
use harness::runner::{run, RunOptions};
use harness::target::TargetSpec;

#[derive(Debug)]
struct RealZk {
    addr: SocketAddr,
    log: PathBuf,
    _child: Child,
    _stdin: ChildStdin,
}

static SHARED: OnceLock<RealZk> = OnceLock::new();

fn server() -> &'static RealZk {
    SHARED.get_or_init(|| {
        let mut last = String::new();
        for _ in 0..3 {
            match RealZk::start() {
                Ok(z) => return z,
                Err(e) => last = e,
            }
        }
        panic!("{last}")
    })
}

fn classpath() -> String {
    if let Ok(cp) = std::env::var("ZK_CLASSPATH") {
        return cp;
    }
    let jar = Path::new("/usr/share/java/zookeeper.jar");
    if jar.exists() {
        return jar.display().to_string();
    }
    "/usr/share/java/*".to_string()
}

fn java() -> String {
    std::env::var("ZK_JAVA").unwrap_or_else(|_| {
        if Path::new("/usr/bin/java").exists() {
            "/usr/bin/java".into()
        } else {
            "java".into()
        }
    })
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().unwrap().port()
}

impl RealZk {
    fn start() -> Result<RealZk, String> {
        let port = free_port();
        let dir =
            std::env::temp_dir().join(format!("harness-real-zk-{}-{port}", std::process::id()));
        let data = dir.join("data");
        std::fs::create_dir_all(&data).map_err(|e| format!("mkdir {}: {e}", data.display()))?;
        let cfg = dir.join("zoo.cfg");
        std::fs::write(
            &cfg,
            format!(
                "tickTime=200\ndataDir={}\nclientPort={port}\nminSessionTimeout=400\n\
                 maxSessionTimeout=60000\nadmin.enableServer=false\n4lw.commands.whitelist=*\n",
                data.display()
            ),
        )
        .map_err(|e| format!("write zoo.cfg: {e}"))?;
        let log = dir.join("zookeeper.log");
        let script = r#"log="$1"; dir="$2"; shift 2
(
  "$@" </dev/null >"$log" 2>&1 &
  echo $! >"$dir/jvm.pid"
  wait $!
  echo "harness-real-zk: JVM exited with status $?" >>"$log"
) &
read _ || true
kill "$(cat "$dir/jvm.pid" 2>/dev/null)" 2>/dev/null
wait
case "$dir" in */harness-real-zk-*) rm -rf "$dir" ;; esac
"#;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg("sh")
            .arg(&log)
            .arg(&dir)
            .arg(java())
            .arg("-XX:+UseSerialGC")
            .arg("-XX:TieredStopAtLevel=1")
            .arg("-Xmx256m")
            .arg("-Dzookeeper.forceSync=no")
            .arg("-cp")
            .arg(classpath())
            .arg("org.apache.zookeeper.server.ZooKeeperServerMain")
            .arg(&cfg)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot spawn sh/java: {e}"))?;
        let stdin = child.stdin.take().expect("piped stdin");
        let zk = RealZk {
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            log,
            _child: child,
            _stdin: stdin,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !zk.serving() {
            let log = std::fs::read_to_string(&zk.log).unwrap_or_default();
            if log.contains("harness-real-zk: JVM exited") || Instant::now() > deadline {
                return Err(format!(
                    "real ZooKeeper did not start on {} (java {}, classpath {}); log:\n{log}",
                    zk.addr,
                    java(),
                    classpath()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(zk)
    }

    /// `srvr` shows a `Zxid:` line once the server serves requests.
    fn serving(&self) -> bool {
        let Ok(mut s) = TcpStream::connect_timeout(&self.addr, Duration::from_millis(500)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        if s.write_all(b"srvr").is_err() {
            return false;
        }
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out.contains("Zxid:")
    }
}

async fn play(name: &str, text: &str) -> Outcome {
    let zk = server();
    let loaded = harness::scenario::parse(Path::new(&format!("{name}.yaml")), text)
        .unwrap_or_else(|e| panic!("{e}"));
    let opts = RunOptions {
        target: TargetSpec::Real(zk.addr),
        seed: Some(7),
        implementation: harness::implementation::Implementation::ZkLock,
        progress: None,
    };
    let outcome = run(&loaded, &opts).await;
    assert_eq!(outcome.target, "real");
    assert_eq!(
        outcome.status,
        Status::Passed,
        "{}",
        failure_details(&outcome)
    );
    outcome
}

/// The clients a fault step reached.
fn reached<'a>(o: &'a Outcome, action: &str) -> Vec<&'a str> {
    o.faults
        .iter()
        .filter(|f| f.action == action)
        .flat_map(|f| f.clients.iter().map(String::as_str))
        .collect()
}

fn journal_has(o: &Outcome, client: &str, kind: &str) -> bool {
    o.journal.iter().any(|e| {
        e.client == client
            && serde_json::to_value(e)
                .ok()
                .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(|k| k == kind))
                .unwrap_or(false)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnects_within_the_session_timeout() {
    let o = play(
        "real-disconnect",
        "server: {session_timeout: 3s}
lock: {recipe: predecessor}
clients:
  - name: holder
    hold: 600ms
  - name: waiter
    count: 3
    start: 50ms
    hold: 20ms
timeline:
  - on: {waiting: waiter}
    disconnect: holder
  - on: {waiting: waiter}
    after: 100ms
    disconnect: WAITERS
invariants:
  liveness: 5s
",
    )
    .await;
    assert_eq!(reached(&o, "disconnect").first(), Some(&"holder"));
    assert_eq!(o.stats.acquisitions, 4);
    // The holder kept its session: one session per client.
    assert_eq!(o.stats.sessions, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holder_expired_by_session_takeover() {
    let o = play(
        "real-expire",
        "server: {session_timeout: 1s}
lock: {recipe: predecessor}
clients:
  - name: holder
    hold: 2s
    on_expiry: stop
  - name: waiter
    count: 3
    start: 100ms
    hold: 20ms
timeline:
  - on: {waiting: waiter}
    expire: holder
invariants:
  liveness: 5s
",
    )
    .await;
    assert_eq!(reached(&o, "expire"), vec!["holder"]);
    assert!(journal_has(&o, "holder", "lost"), "{:#?}", o.journal);
    assert!(journal_has(&o, "holder", "expired"), "{:#?}", o.journal);
    assert_eq!(o.stats.acquisitions, 4);
    // The proxies attribute the holder's node to its session's end, so the
    // loss is checked against the holder's own journal.
    let lost = o
        .invariants
        .iter()
        .find(|i| i.name == "lost_noticed")
        .unwrap();
    assert!(lost.checked && lost.held, "{lost:?}");
    assert!(
        o.handoffs
            .iter()
            .any(|h| h.by_session_end && h.from.as_deref() == Some("holder")),
        "{:#?}",
        o.handoffs
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_create_reply() {
    let o = play(
        "real-lose-reply",
        "lock: {recipe: predecessor}
clients:
  - name: holder
    hold: 200ms
  - name: unlucky
    start: 50ms
    hold: 20ms
  - name: other
    count: 3
    start: 100ms
    hold: 20ms
timeline:
  - at: 0ms
    lose_reply: {op: create, client: unlucky}
invariants:
  liveness: 5s
",
    )
    .await;
    assert_eq!(reached(&o, "lose_reply"), vec!["unlucky"]);
    assert_eq!(o.stats.acquisitions, 5);
    // The server's history saw every lock node come and go.
    let lock_nodes = o.handoffs.len();
    assert_eq!(lock_nodes, 5, "{:#?}", o.handoffs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stall_past_the_session_timeout() {
    let o = play(
        "real-stall",
        "server: {session_timeout: 1s}
lock: {recipe: predecessor}
clients:
  - name: holder
    hold: 1500ms
  - name: waiter
    count: 2
    start: 50ms
    hold: 50ms
timeline:
  - on: {waiting: waiter}
    stall: {client: holder, for: 2500ms}
invariants:
  liveness: 6s
",
    )
    .await;
    assert_eq!(reached(&o, "stall"), vec!["holder"]);
    assert!(journal_has(&o, "holder", "lost"), "{:#?}", o.journal);
    // The real server expired the stalled session on its own.
    assert!(journal_has(&o, "holder", "expired"), "{:#?}", o.journal);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_and_delay_through_the_proxy() {
    let o = play(
        "real-fail-delay",
        "lock: {recipe: predecessor}
clients:
  - name: holder
    hold: 200ms
  - name: waiter
    count: 2
    start: 50ms
    hold: 20ms
timeline:
  - at: 0ms
    fail: {op: create, client: waiter, code: ThrottledOp}
  - at: 0ms
    fail: {op: delete, client: holder, code: ThrottledOp}
  - at: 0ms
    delay: {op: getData, client: waiter, for: 300ms}
invariants:
  liveness: 5s
",
    )
    .await;
    let mut failed = reached(&o, "fail");
    failed.sort_unstable();
    assert_eq!(failed, vec!["holder", "waiter.0", "waiter.1"]);
    assert_eq!(reached(&o, "delay").len(), 2);
    // Every shed request was sent again: all three got the lock in turn.
    assert_eq!(o.stats.acquisitions, 3);
    assert_eq!(o.handoffs.len(), 3, "{:#?}", o.handoffs);
}
