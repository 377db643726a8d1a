//! Conformance suite: the same operation sequences against a real Apache
//! ZooKeeper 3.8 (started here, in a child JVM) and against zk-mock, with
//! every reply and every notification compared after normalization.
//!
//! The ensemble cases (`ensemble.rs`) start a real 3-server ensemble
//! (`QuorumPeerMain`) per case and compare a client's view of failover,
//! a session's move and SESSIONMOVED, the `lastZxidSeen` refusal, `sync`,
//! quorum loss and read-only mode with `ZkMock::ensemble(3)`'s.
//!
//! Run: `cargo test -p zk-mock --features conformance --test conformance`
//! (needs Java and the Debian `zookeeper` package, or `ZK_CLASSPATH`).
//!
//! Environment:
//! - `CONFORMANCE_CASES` (default 300): number of random sequences;
//! - `CONFORMANCE_LEN` (default 40): ops per random sequence;
//! - `CONFORMANCE_SEED` (default fixed): seed of the random sequences;
//! - `CONFORMANCE_PRINT=1`: print every transcript, also of passing cases;
//! - `ZK_CLASSPATH`, `ZK_JAVA`: where the real server comes from.
//!
//! The real server is the judge: where it differs from later 3.8 releases
//! (3.8.6's source), the cases expect what the Debian 3.8.0 server does. Differences found so far:
//! - check (13) outside a multi is a transaction, not UNIMPLEMENTED: it
//!   consumes a zxid (also with a malformed body), failures are answered
//!   normally, a successful check is never answered and the connection stays
//!   open;
//! - inside a multi, create2 (15) answers result type 1 (path only), but
//!   createContainer (19) answers type 15 with a Stat;
//! - exists does not check READ (a node with an ADMIN-only ACL answers exists);
//! - notifications ARE filtered by READ ACL (Debian backported
//!   ZOOKEEPER-4799): NodeCreated of a WRITE-only node is not delivered, the
//!   parent's NodeChildrenChanged is;
//! - a multi of only reads answers err −5 (no body, a zxid consumed); a
//!   multiRead holding a write or a check answers err −5 plus an empty
//!   MultiResponse body (just the end marker);
//! - getAllChildrenNumber("") counts every node but the "" alias (4 on a
//!   fresh server), "/" counts 3;
//! - createTTL with a non-TTL mode and ttl −1 kills the server (SyncThread
//!   "Severe unrecoverable error"), so it is never sent.

mod cases;
mod driver;
mod ensemble;
mod random;

use std::sync::Mutex;

use driver::{Mode, Op, Transcript};
use zk_mock::real::RealZk;
use zk_mock::ZkMock;

/// Cases on the shared real server run one at a time, so zxids relative to a
/// case's baseline are not disturbed by other cases.
static SHARED_LOCK: Mutex<()> = Mutex::new(());

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

pub(crate) fn print_all() -> bool {
    std::env::var("CONFORMANCE_PRINT").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Runs `ops` under `prefix` on the shared real server and on a fresh mock.
pub(crate) fn run_shared(
    rt: &tokio::runtime::Runtime,
    prefix: &str,
    ops: &[Op],
) -> (Transcript, Transcript) {
    let real = RealZk::shared();
    let _guard = SHARED_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    assert!(
        !real.died(),
        "the shared real ZooKeeper has died (an earlier case killed it); log:\n{}",
        real.log_tail(40)
    );
    rt.block_on(async {
        let mock = ZkMock::start().await;
        let out = tokio::join!(
            driver::run(real.addr(), prefix, Mode::Shared, ops),
            driver::run(mock.addr(), prefix, Mode::Shared, ops)
        );
        drop(mock);
        out
    })
}

/// Side by side: lines both servers agree on once, differing lines as a
/// `real` / `mock` pair marked with `!`.
pub(crate) fn side_by_side(real: &Transcript, mock: &Transcript) -> String {
    let mut out = String::new();
    let n = real.len().max(mock.len());
    for i in 0..n {
        let empty = Vec::new();
        let r = real.get(i).unwrap_or(&empty);
        let m = mock.get(i).unwrap_or(&empty);
        let k = r.len().max(m.len());
        for j in 0..k {
            let (a, b) = (r.get(j), m.get(j));
            if a == b {
                let l = a.map(String::as_str).unwrap_or("");
                if j == 0 {
                    out.push_str(&format!("#{i:<3}  {l}\n"));
                } else {
                    out.push_str(&format!("      {l}\n"));
                }
            } else {
                let tag = if j == 0 {
                    format!("#{i:<3}")
                } else {
                    "    ".into()
                };
                out.push_str(&format!(
                    "{tag}! real: {}\n{}! mock: {}\n",
                    a.map(String::as_str).unwrap_or("<nothing>"),
                    " ".repeat(tag.len()),
                    b.map(String::as_str).unwrap_or("<nothing>")
                ));
            }
        }
    }
    out
}

pub(crate) fn render(t: &Transcript) -> String {
    let mut out = String::new();
    for (i, g) in t.iter().enumerate() {
        for (j, l) in g.iter().enumerate() {
            if j == 0 {
                out.push_str(&format!("#{i:<3} {l}\n"));
            } else {
                out.push_str(&format!("     {l}\n"));
            }
        }
    }
    out
}

fn compare(name: &str, real: &Transcript, mock: &Transcript, log: impl FnOnce() -> String) {
    if print_all() {
        println!("=== {name}: real ZooKeeper transcript\n{}", render(real));
    }
    if real != mock {
        panic!(
            "zk-mock diverges from real ZooKeeper in case `{name}`:\n{}\n--- real server log (tail):\n{}",
            side_by_side(real, mock),
            log()
        );
    }
}

/// A case on the shared real server with its own prefix `/<name>`.
fn check_shared(name: &str, ops: Vec<Op>) {
    let rt = runtime();
    let prefix = format!("/{name}");
    let (real, mock) = run_shared(&rt, &prefix, &ops);
    compare(name, &real, &mock, || RealZk::shared().log_tail(30));
}

/// A case that needs a pristine tree: a fresh real server and a fresh mock,
/// absolute zxids.
fn check_fresh(name: &str, ops: Vec<Op>) {
    check_configured(name, Config::default(), ops);
}

/// Server settings beyond the defaults, applied to both servers: the real
/// one gets them as system properties, the mock through its builder.
#[derive(Debug, Clone, Default)]
pub(crate) struct Config {
    /// `znode.container.checkIntervalMs`.
    pub(crate) container_check_ms: Option<u64>,
    /// `zookeeper.extendedTypesEnabled`.
    pub(crate) extended_types: bool,
    /// `zookeeper.DigestAuthenticationProvider.superDigest`.
    pub(crate) super_digest: Option<String>,
    /// `reconfigEnabled` (a zoo.cfg line).
    pub(crate) reconfig_enabled: bool,
    /// The mock's commit latency (the real server's is its disk's).
    pub(crate) mock_commit_latency: Option<std::time::Duration>,
    /// The mock's connect latency (the real server's is its own).
    pub(crate) mock_connect_latency: Option<std::time::Duration>,
    /// The mock's request latency (the real server's is its pipeline's).
    pub(crate) mock_request_latency: Option<std::time::Duration>,
}

/// A case on a fresh real server and a fresh mock, both configured with `config`.
fn check_configured(name: &str, config: Config, ops: Vec<Op>) {
    let mut real = RealZk::builder();
    let mut builder = ZkMock::builder();
    if let Some(ms) = config.container_check_ms {
        real = real.jvm_arg(format!("-Dznode.container.checkIntervalMs={ms}"));
        builder = builder.container_check_interval(std::time::Duration::from_millis(ms));
    }
    if config.extended_types {
        real = real.jvm_arg("-Dzookeeper.extendedTypesEnabled=true");
        builder = builder.extended_types(true);
    }
    if config.reconfig_enabled {
        real = real.cfg("reconfigEnabled=true");
        builder = builder.reconfig_enabled(true);
    }
    if let Some(digest) = &config.super_digest {
        real = real.jvm_arg(format!(
            "-Dzookeeper.DigestAuthenticationProvider.superDigest={digest}"
        ));
        builder = builder.super_digest(digest);
    }
    if let Some(latency) = config.mock_commit_latency {
        builder = builder.commit_latency(latency);
    }
    if let Some(latency) = config.mock_connect_latency {
        builder = builder.connect_latency(latency);
    }
    if let Some(latency) = config.mock_request_latency {
        builder = builder.request_latency(latency);
    }
    let real = real.start().unwrap_or_else(|e| panic!("{e}"));
    let rt = runtime();
    let (r, m) = rt.block_on(async {
        let mock = builder.start().await.expect("mock starts");
        let out = tokio::join!(
            driver::run(real.addr(), "", Mode::Fresh, &ops),
            driver::run(mock.addr(), "", Mode::Fresh, &ops)
        );
        drop(mock);
        out
    });
    compare(name, &r, &m, || real.log_tail(30));
}

/// With a commit latency, a write and what is pipelined behind it on its
/// connection are answered in the order, and with the outcomes, a real
/// server's are: the latency changes when, never what, a client sees.
/// (2 ms: longer than a real server's sync here, so requests do pile up
/// behind the writes.)
#[test]
fn pipelined_ordering_with_commit_latency() {
    check_configured(
        "pipelined_ordering_with_commit_latency",
        Config {
            mock_commit_latency: Some(std::time::Duration::from_millis(2)),
            ..Config::default()
        },
        cases::pipelined_ordering(),
    );
}

/// With a commit latency, watchers (the writer's own among them) are told
/// of a write before its reply, as a real server tells them.
#[test]
fn watches_writer_before_reply_with_commit_latency() {
    check_configured(
        "watches_writer_before_reply_with_commit_latency",
        Config {
            mock_commit_latency: Some(std::time::Duration::from_millis(2)),
            ..Config::default()
        },
        cases::watches_writer_before_reply(),
    );
}

/// With a connect latency (and a commit latency), requests pipelined behind
/// a ConnectRequest, and a reconnect with the session's id, are answered as
/// a real server answers them: the latencies change when, never what, a
/// client sees.
#[test]
fn pipelined_connect_with_connect_latency() {
    check_configured(
        "pipelined_connect_with_connect_latency",
        Config {
            mock_commit_latency: Some(std::time::Duration::from_millis(2)),
            mock_connect_latency: Some(std::time::Duration::from_millis(5)),
            ..Config::default()
        },
        cases::pipelined_connect(),
    );
}

/// With a request latency (and a commit latency), reads and writes
/// pipelined on one connection, and the watch events they set off, are
/// answered in the order, and with the outcomes, a real server's are: each
/// request waits its own latency from when it is read, and none overtakes
/// another on its connection.
#[test]
fn pipelined_ordering_with_request_latency() {
    check_configured(
        "pipelined_ordering_with_request_latency",
        Config {
            mock_commit_latency: Some(std::time::Duration::from_millis(1)),
            mock_request_latency: Some(std::time::Duration::from_millis(2)),
            ..Config::default()
        },
        cases::pipelined_ordering(),
    );
}

#[test]
fn watches_writer_before_reply_with_request_latency() {
    check_configured(
        "watches_writer_before_reply_with_request_latency",
        Config {
            mock_request_latency: Some(std::time::Duration::from_millis(2)),
            ..Config::default()
        },
        cases::watches_writer_before_reply(),
    );
}

#[test]
fn reconnect_same_session_with_connect_latency() {
    check_configured(
        "reconnect_same_session_with_connect_latency",
        Config {
            mock_connect_latency: Some(std::time::Duration::from_millis(5)),
            ..Config::default()
        },
        cases::reconnect_same_session(),
    );
}

#[test]
fn container_check() {
    check_configured(
        "container_check",
        Config {
            container_check_ms: Some(300),
            ..Config::default()
        },
        cases::container_check(),
    );
}

#[test]
fn ttl_nodes() {
    check_configured(
        "ttl_nodes",
        Config {
            container_check_ms: Some(300),
            extended_types: true,
            ..Config::default()
        },
        cases::ttl_nodes(),
    );
}

/// kazoo's test harness turns reconfigEnabled on: a standalone server then
/// answers reconfig UNIMPLEMENTED instead of RECONFIGDISABLED.
#[test]
fn reconfig_enabled() {
    check_configured(
        "reconfig_enabled",
        Config {
            reconfig_enabled: true,
            ..Config::default()
        },
        cases::other_op_codes(),
    );
}

#[test]
fn super_digest() {
    check_configured(
        "super_digest",
        Config {
            super_digest: Some(zk_mock::acl::digest("super:test")),
            ..Config::default()
        },
        cases::super_digest(),
    );
}

macro_rules! shared_cases {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                check_shared(stringify!($name), cases::$name());
            }
        )*
    };
}

macro_rules! fresh_cases {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                check_fresh(stringify!($name), cases::$name());
            }
        )*
    };
}

shared_cases!(
    create_basic,
    create_flags_and_sequential,
    create_invalid_flags_container_ttl,
    create_check_order,
    delete_check_order,
    exists_get_set,
    children_and_cversion,
    sync_and_ping,
    multi_success,
    multi_failure_layout,
    multi_mixed_and_empty,
    multi_read,
    close_session_ephemerals_and_watchers,
    acl_basics,
    ephemerals_and_children_number,
    path_validation,
    special_nodes,
    watches_one_shot,
    watches_one_per_connection,
    watches_writer_before_reply,
    watches_child_and_delete,
    set_watches_v1,
    set_watches_v2,
    reconnect_same_session,
    reconnect_wrong_password_and_unknown,
    connect_without_read_only_byte,
    connect_zxid_ahead,
    check_outside_multi,
    unknown_op_code,
    malformed_bodies,
    failed_writes_consume_zxids,
    session_creation_consumes_zxid,
    ephemeral_children_and_owner,
    multi_rollback_keeps_ephemerals,
    auth_and_whoami,
    add_watch_persistent,
    add_watch_recursive,
    set_watches2_persistent,
    pipelined_ordering,
    session_expiry,
    big_frames,
    set_watches_xid_minus_8,
    pipelined_connect,
    other_op_codes,
);

fresh_cases!(fresh_server_tree, four_letter_words);

#[test]
fn random_sequences() {
    random::run();
}

/// The launcher with the benchmarks' settings: its zoo.cfg lines and JVM
/// flags take, and the JVM's own pid is known (for CPU accounting).
#[test]
fn the_launcher_starts_a_tuned_server_and_stops_it_on_drop() {
    let real = RealZk::builder()
        .cfg("maxClientCnxns=0")
        .heap(Some("512m"))
        .quick_jit(false)
        .sync_writes(true)
        .start()
        .unwrap_or_else(|e| panic!("{e}"));
    let conf = {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(real.addr()).unwrap();
        s.write_all(b"conf").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    };
    assert!(conf.contains("maxClientCnxns=0"), "{conf}");
    let pid = real.jvm_pid().expect("the JVM's pid");
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    drop(real);
    // The wrapper kills the JVM once the handle is gone.
    let gone = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map_or(true, |s| s.split_whitespace().nth(2) == Some("Z"))
    });
    assert!(gone, "JVM {pid} still runs");
}
