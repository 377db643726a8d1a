//! Four-letter words: a 4-byte command instead of a ConnectRequest on a fresh
//! connection, answered with text and then closed (`NIOServerCnxn.checkFourLetterWord`).
//! The mock behaves like a server started with `zookeeper.4lw.commands.whitelist=*`.

use std::fmt::Write;

use std::collections::{BTreeMap, BTreeSet};

use super::State;
use crate::watch::Table;

/// Data-table watches, by the session of the connection holding them.
fn data_watches_by_conn(state: &State) -> BTreeMap<i64, Vec<&str>> {
    let mut out: BTreeMap<i64, Vec<&str>> = BTreeMap::new();
    for (table, path, conn, _) in state.all_watches() {
        if table == Table::Data {
            let session = state
                .out
                .conns
                .get(&conn)
                .and_then(|c| c.session)
                .unwrap_or(0);
            out.entry(session).or_default().push(path);
        }
    }
    for paths in out.values_mut() {
        paths.sort_unstable();
    }
    out
}

/// The version string the mock reports (in 3.8 mode).
pub const VERSION: &str = "3.8.0-zk-mock, built on 1970-01-01 00:00 UTC";

/// The version string the mock reports in 3.9 mode.
pub const VERSION_3_9: &str = "3.9.0-zk-mock, built on 1970-01-01 00:00 UTC";

fn version(state: &State) -> &'static str {
    match state.settings.compat {
        crate::Compat::V3_8 => VERSION,
        crate::Compat::V3_9 => VERSION_3_9,
    }
}

const KNOWN: [&[u8; 4]; 19] = [
    b"ruok", b"srvr", b"stat", b"conf", b"envi", b"mntr", b"isro", b"cons", b"wchs", b"wchc",
    b"wchp", b"dump", b"srst", b"crst", b"dirs", b"gtmk", b"stmk", b"hash", b"ruok",
];

/// Whether the first four bytes of a connection are a four-letter word.
pub(crate) fn is_command(first: &[u8]) -> bool {
    first.len() >= 4 && KNOWN.iter().any(|k| &first[..4] == *k)
}

/// What `srvr` and `mntr` call a server's role.
fn mode(state: &State, server: usize) -> &'static str {
    if state.ensemble.servers[server].read_only {
        "read-only"
    } else if state.ensemble.servers.len() == 1 {
        "standalone"
    } else if server == state.ensemble.leader {
        "leader"
    } else {
        "follower"
    }
}

/// Answers a four-letter word sent to server `server` of the ensemble.
pub(crate) fn answer(state: &State, server: usize, word: &[u8]) -> String {
    let mut out = String::new();
    let replica = &state.ensemble.servers[server];
    if !state.serves(server) {
        // No running ZooKeeperServer (an election, no quorum): the words
        // that need one say so (`AbstractFourLetterCommand.ZK_NOT_SERVING`),
        // `isro` says "null" (IsroCommand), and ruok, envi and the trace
        // mask words answer as ever.
        match word {
            b"ruok" => out.push_str("imok"),
            b"isro" => out.push_str("null"),
            b"envi" => envi(&mut out, state),
            b"gtmk" => out.push_str("306"),
            b"stmk" => {}
            _ => out.push_str("This ZooKeeper instance is not currently serving requests\n"),
        }
        return out;
    }
    match word {
        b"ruok" => out.push_str("imok"),
        b"isro" => out.push_str(if replica.read_only { "ro" } else { "rw" }),
        b"srvr" | b"stat" => {
            let _ = writeln!(out, "Zookeeper version: {}", version(state));
            if replica.read_only {
                out.push_str("READ-ONLY mode; serving only read-only clients\n");
            }
            if word == b"stat" {
                out.push_str("Clients:\n");
                for c in conns_in_order(state) {
                    connection_info(&mut out, state, c, true);
                    out.push('\n');
                }
                out.push('\n');
            }
            let _ = writeln!(out, "Latency min/avg/max: 0/0.0/0");
            let _ = writeln!(out, "Received: {}", state.out.packets_received);
            let _ = writeln!(out, "Sent: {}", state.out.packets_sent);
            let _ = writeln!(out, "Connections: {}", state.out.conns.len());
            let _ = writeln!(out, "Outstanding: 0");
            let _ = writeln!(out, "Zxid: {:#x}", replica.last_zxid());
            let _ = writeln!(out, "Mode: {}", mode(state, server));
            let _ = writeln!(out, "Node count: {}", replica.tree.node_count());
        }
        b"conf" => {
            // The keys and order of `ZooKeeperServer.dumpConf`; the mock has no data directory.
            let st = &state.settings;
            let _ = writeln!(out, "clientPort={}", st.client_port);
            let _ = writeln!(out, "secureClientPort=-1");
            let _ = writeln!(out, "dataDir=/dev/null");
            let _ = writeln!(out, "dataDirSize=0");
            let _ = writeln!(out, "dataLogDir=/dev/null");
            let _ = writeln!(out, "dataLogSize=0");
            let _ = writeln!(out, "tickTime={}", st.tick_time);
            let _ = writeln!(out, "maxClientCnxns=60");
            let _ = writeln!(out, "minSessionTimeout={}", st.min_session_timeout);
            let _ = writeln!(out, "maxSessionTimeout={}", st.max_session_timeout);
            let _ = writeln!(out, "clientPortListenBacklog=-1");
            let _ = writeln!(out, "serverId=0");
        }
        b"envi" => envi(&mut out, state),
        b"cons" => {
            // `ConsCommand`: every connection, this one included, in full.
            for c in conns_in_order(state) {
                connection_info(&mut out, state, c, false);
                out.push('\n');
            }
            out.push('\n');
        }
        b"dump" => dump(&mut out, state),
        b"dirs" => out.push_str("datadir_size: 0\nlogdir_size: 0\n"),
        // The trace mask: ZooTrace's default (client requests, server
        // requests and watch events), not settable here.
        b"gtmk" => out.push_str("306"),
        b"stmk" | b"hash" => {}
        b"mntr" => mntr(&mut out, state, server),
        b"srst" => out.push_str("Server stats reset.\n"),
        b"crst" => out.push_str("Connection stats reset.\n"),
        // The watch words dump the data table only (`DataTree.dumpWatches*`),
        // so child watches are not listed. Lists are sorted (ZooKeeper: HashMap order).
        b"wchs" => {
            let by_conn = data_watches_by_conn(state);
            let paths: BTreeSet<&str> = by_conn.values().flatten().copied().collect();
            let total: usize = by_conn.values().map(Vec::len).sum();
            let _ = writeln!(
                out,
                "{} connections watching {} paths\nTotal watches:{}",
                by_conn.len(),
                paths.len(),
                total
            );
        }
        b"wchc" => {
            for (session, paths) in data_watches_by_conn(state) {
                let _ = writeln!(out, "0x{session:x}");
                for p in paths {
                    let _ = writeln!(out, "\t{p}");
                }
            }
            out.push('\n');
        }
        b"wchp" => {
            let mut by_path: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
            for (session, paths) in data_watches_by_conn(state) {
                for p in paths {
                    by_path.entry(p).or_default().push(session);
                }
            }
            for (p, sessions) in by_path {
                let _ = writeln!(out, "{p}");
                for s in sessions {
                    let _ = writeln!(out, "\t0x{s:x}");
                }
            }
            out.push('\n');
        }
        other => {
            let _ = writeln!(
                out,
                "{} is not executed because it is not in the whitelist.",
                String::from_utf8_lossy(other)
            );
        }
    }
    out
}

/// The connections as `cons` lists them: the order ZooKeeper's
/// `ConcurrentHashMap` keeps is unpredictable, so by connection number.
fn conns_in_order(state: &State) -> Vec<&crate::outbox::Conn> {
    state
        .out
        .oldest_first(|_| true)
        .iter()
        .filter_map(|id| state.out.conns.get(id))
        .collect()
}

/// `ServerCnxn.dumpConnectionInfo`: ` /ip:port[interestOps](queued=…,recved=…,sent=…`
/// and, unless `brief`, for a connection with a session, its session id,
/// last op, establishment time, timeout, last cxid and zxid, last response
/// time and latencies (all 0 ms here: zk-mock keeps no latency figures).
fn connection_info(out: &mut String, state: &State, c: &crate::outbox::Conn, brief: bool) {
    let interest = if c.four_letter { "0" } else { "1" };
    let _ = write!(
        out,
        " /{}[{interest}](queued=0,recved={},sent={}",
        c.peer, c.received, c.sent
    );
    if !brief {
        if let Some(id) = c.session.filter(|id| *id != 0) {
            let timeout = state.sessions.get(id).map_or(0, |s| s.timeout);
            let _ = write!(
                out,
                ",sid=0x{id:x},lop={},est={},to={timeout}",
                c.last_op, c.established_ms
            );
            if c.last_cxid >= 0 {
                let _ = write!(out, ",lcxid=0x{:x}", c.last_cxid);
            }
            let _ = write!(
                out,
                ",lzxid=0x{:x},lresp={},llat=0,minlat=0,avglat=0,maxlat=0",
                c.last_zxid, c.last_response_ms
            );
        }
    }
    out.push(')');
}

/// `java.util.Date.toString()` in UTC: `Mon Nov 23 00:12:52 UTC 2026`.
fn java_date(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {} {:02} {:02}:{:02}:{:02} UTC {}",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(month - 1) as usize],
        day,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        year
    )
}

/// `DumpCommand`: the session tracker's expiry sets, the ephemerals of each
/// session, and the connections' expiry sets.
fn dump(out: &mut String, state: &State) {
    let now = state.clock.now_ms();
    let wall = state.clock.wall_ms();
    let at = |deadline: u64| java_date(wall + deadline as i64 - now as i64);
    let mut by_deadline: BTreeMap<u64, Vec<i64>> = BTreeMap::new();
    for s in state.sessions.iter() {
        by_deadline.entry(s.deadline).or_default().push(s.id);
    }
    for ids in by_deadline.values_mut() {
        ids.sort_unstable();
    }
    let count = state.sessions.iter().count();
    out.push_str("SessionTracker dump:\n");
    let _ = writeln!(out, "Session Sets ({})/({count}):", by_deadline.len());
    for (deadline, ids) in &by_deadline {
        let _ = writeln!(out, "{} expire at {}:", ids.len(), at(*deadline));
        for id in ids {
            let _ = writeln!(out, "\t0x{id:x}");
        }
    }
    out.push_str("ephemeral nodes dump:\n");
    let mut with: Vec<(i64, Vec<&str>)> = state
        .sessions
        .iter()
        .map(|s| (s.id, state.tree().ephemerals_of(s.id).collect::<Vec<_>>()))
        .filter(|(_, e)| !e.is_empty())
        .collect();
    with.sort_unstable_by_key(|(id, _)| *id);
    let _ = writeln!(out, "Sessions with Ephemerals ({}):", with.len());
    for (id, paths) in with {
        let _ = writeln!(out, "0x{id:x}:");
        for p in paths {
            let _ = writeln!(out, "\t{p}");
        }
    }
    out.push_str("Connections dump:\n");
    // A connection expires with its session; one without a session at once.
    let mut conns: BTreeMap<u64, Vec<&crate::outbox::Conn>> = BTreeMap::new();
    for c in conns_in_order(state) {
        let deadline = c
            .session
            .and_then(|id| state.sessions.get(id))
            .map_or(now, |s| s.deadline);
        conns.entry(deadline).or_default().push(c);
    }
    let _ = writeln!(
        out,
        "Connections Sets ({})/({}):",
        conns.len(),
        state.out.conns.len()
    );
    for (deadline, cs) in conns {
        let _ = writeln!(out, "{} expire at {}:", cs.len(), at(deadline));
        for c in cs {
            let _ = writeln!(
                out,
                "\tip: /{} sessionId: 0x{:x}",
                c.peer,
                c.session.unwrap_or(0)
            );
        }
    }
}

/// `EnviCommand`: ZooKeeper's keys, in its order, with the values a Rust
/// process has (`java.*` name the mock instead of a JVM).
fn envi(out: &mut String, state: &State) {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let os_version = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "aarch64",
        other => other,
    };
    let os = match std::env::consts::OS {
        "linux" => "Linux",
        "macos" => "Mac OS X",
        "windows" => "Windows",
        other => other,
    };
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let cwd = std::env::current_dir()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let lines = [
        ("zookeeper.version", version(state).to_string()),
        ("host.name", "localhost".to_string()),
        ("java.version", "zk-mock".to_string()),
        ("java.vendor", "zk-mock".to_string()),
        ("java.home", exe.clone()),
        ("java.class.path", exe),
        ("java.library.path", String::new()),
        ("java.io.tmpdir", std::env::temp_dir().display().to_string()),
        ("java.compiler", "<NA>".to_string()),
        ("os.name", os.to_string()),
        ("os.arch", arch.to_string()),
        ("os.version", os_version),
        ("user.name", var("USER")),
        ("user.home", var("HOME")),
        ("user.dir", cwd),
        ("os.memory.free", "0MB".to_string()),
        ("os.memory.max", "0MB".to_string()),
        ("os.memory.total", "0MB".to_string()),
    ];
    out.push_str("Environment:\n");
    for (k, v) in lines {
        let _ = writeln!(out, "{k}={v}");
    }
}

/// The keys of a real 3.8.0 server's `mntr`, in its order, `i` for integer
/// and `f` for decimal values (per-namespace keys left out).
const MNTR_KEYS: &str = include_str!("mntr_keys.tsv");

/// `MonitorCommand`: every key ZooKeeper 3.8 reports, the ones the mock
/// has with its values, counters it does not keep at 0.
fn mntr(out: &mut String, state: &State, server: usize) {
    let ephemerals: usize = state
        .sessions
        .iter()
        .map(|s| state.tree().ephemerals_of(s.id).count())
        .sum();
    let fds = if state.settings.count_open_files {
        std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
    } else {
        0
    };
    let max_fds = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|l| {
            l.lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| l.split_whitespace().nth(3).map(str::to_string))
        })
        .unwrap_or_else(|| "0".into());
    let data_size: usize = state
        .tree()
        .iter()
        .map(|(p, n)| p.len() + n.data.as_ref().map_or(0, |d| d.len()))
        .sum();
    for line in MNTR_KEYS.lines() {
        let Some((key, kind)) = line.split_once('\t') else {
            continue;
        };
        let value = match key {
            "zk_version" => version(state).to_string(),
            "zk_server_state" => mode(state, server).into(),
            "zk_ephemerals_count" => ephemerals.to_string(),
            "zk_num_alive_connections" => state.out.conns.len().to_string(),
            "zk_znode_count" => state.ensemble.servers[server].tree.node_count().to_string(),
            "zk_global_sessions" => state.sessions.iter().count().to_string(),
            "zk_packets_sent" => state.out.packets_sent.to_string(),
            "zk_packets_received" => state.out.packets_received.to_string(),
            "zk_watch_count" => state
                .ensemble
                .servers
                .iter()
                .map(|r| r.watches.count())
                .sum::<usize>()
                .to_string(),
            "zk_approximate_data_size" => data_size.to_string(),
            "zk_open_file_descriptor_count" => fds.to_string(),
            "zk_max_file_descriptor_count" => max_fds.clone(),
            "zk_uptime" => state.clock.now_ms().to_string(),
            _ if kind == "f" => "0.0".into(),
            _ => "0".into(),
        };
        let _ = writeln!(out, "{key}\t{value}");
    }
}

impl State {
    /// Answers a four-letter word on a connection that sent no handshake,
    /// then closes it (`NIOServerCnxn.checkFourLetterWord`).
    pub(crate) fn four_letter_word(&mut self, conn: crate::session::ConnId, word: &[u8]) {
        if let Some(c) = self.out.conns.get_mut(&conn) {
            c.four_letter = true;
            c.received += 1;
        }
        let server = self.server_of(conn);
        let text = answer(self, server, word);
        self.enqueue(conn, bytes::Bytes::from(text));
        self.close_conn(conn);
    }
}
