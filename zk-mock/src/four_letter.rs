//! Four-letter words: a 4-byte command instead of a ConnectRequest on a fresh
//! connection, answered with text and then closed (`NIOServerCnxn.checkFourLetterWord`).
//! The mock behaves like a server started with `zookeeper.4lw.commands.whitelist=*`.

use std::fmt::Write;

use std::collections::{BTreeMap, BTreeSet};

use crate::state::State;
use crate::watch::Table;

/// Data-table watches, by the session of the connection holding them.
fn data_watches_by_conn(state: &State) -> BTreeMap<i64, Vec<&str>> {
    let mut out: BTreeMap<i64, Vec<&str>> = BTreeMap::new();
    for (table, path, conn, _) in state.watches.entries() {
        if table == Table::Data {
            let session = state.conns.get(&conn).and_then(|c| c.session).unwrap_or(0);
            out.entry(session).or_default().push(path);
        }
    }
    for paths in out.values_mut() {
        paths.sort_unstable();
    }
    out
}

/// The version string the mock reports.
pub const VERSION: &str = "3.8.0-zk-mock, built on 1970-01-01 00:00 UTC";

const KNOWN: [&[u8; 4]; 19] = [
    b"ruok", b"srvr", b"stat", b"conf", b"envi", b"mntr", b"isro", b"cons", b"wchs", b"wchc",
    b"wchp", b"dump", b"srst", b"crst", b"dirs", b"gtmk", b"stmk", b"hash", b"ruok",
];

/// Whether the first four bytes of a connection are a four-letter word.
pub(crate) fn is_command(first: &[u8]) -> bool {
    first.len() >= 4 && KNOWN.iter().any(|k| &first[..4] == *k)
}

/// The text answer to a four-letter word.
pub(crate) fn answer(state: &State, word: &[u8]) -> String {
    let mut out = String::new();
    match word {
        b"ruok" => out.push_str("imok"),
        b"isro" => out.push_str("rw"),
        b"srvr" | b"stat" => {
            let _ = writeln!(out, "Zookeeper version: {VERSION}");
            if word == b"stat" {
                out.push_str("Clients:\n");
                for c in state.conns.values() {
                    let _ = writeln!(
                        out,
                        " /{}[1](queued=0,recved={},sent={})",
                        c.peer, c.received, c.sent
                    );
                }
                out.push('\n');
            }
            let _ = writeln!(out, "Latency min/avg/max: 0/0.0/0");
            let _ = writeln!(out, "Received: {}", state.packets_received);
            let _ = writeln!(out, "Sent: {}", state.packets_sent);
            let _ = writeln!(out, "Connections: {}", state.conns.len());
            let _ = writeln!(out, "Outstanding: 0");
            let _ = writeln!(out, "Zxid: {:#x}", state.tree.last_zxid());
            let _ = writeln!(out, "Mode: standalone");
            let _ = writeln!(out, "Node count: {}", state.tree.node_count());
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
        b"envi" => {
            out.push_str("Environment:\n");
            let _ = writeln!(out, "zookeeper.version={VERSION}");
            let _ = writeln!(out, "host.name=localhost");
            let _ = writeln!(out, "os.name={}", std::env::consts::OS);
        }
        b"mntr" => {
            let ephemerals: usize = state
                .sessions
                .iter()
                .map(|s| state.tree.ephemerals_of(s.id).count())
                .sum();
            let lines: [(&str, String); 12] = [
                ("zk_version", VERSION.to_string()),
                ("zk_server_state", "standalone".into()),
                ("zk_avg_latency", "0.0".into()),
                ("zk_max_latency", "0".into()),
                ("zk_min_latency", "0".into()),
                ("zk_packets_received", state.packets_received.to_string()),
                ("zk_packets_sent", state.packets_sent.to_string()),
                ("zk_num_alive_connections", state.conns.len().to_string()),
                ("zk_outstanding_requests", "0".into()),
                ("zk_znode_count", state.tree.node_count().to_string()),
                ("zk_watch_count", state.watches.count().to_string()),
                ("zk_ephemerals_count", ephemerals.to_string()),
            ];
            for (k, v) in lines {
                let _ = writeln!(out, "{k}\t{v}");
            }
            let _ = writeln!(out, "zk_global_sessions\t{}", state.sessions.iter().count());
        }
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
