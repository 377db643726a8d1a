//! Owned, printable copies of the server's state: the tree, the sessions and
//! the watches. Nothing here refers into the live server.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::proto::{Acl, Stat};
use crate::session::SessionId;
use crate::watch::WatchKind;

/// Everything at one instant.
#[derive(Debug, Clone, Serialize)]
pub struct Snapshot {
    /// The server's seed.
    pub seed: u64,
    /// The last processed zxid.
    pub last_zxid: i64,
    /// Every node, by path.
    pub tree: BTreeMap<String, NodeSnapshot>,
    /// Every live session, by id.
    pub sessions: BTreeMap<SessionId, SessionSnapshot>,
    /// Every watch, by path.
    pub watches: BTreeMap<String, Vec<WatchSnapshot>>,
}

/// One node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeSnapshot {
    /// The data; `None` is null.
    #[serde(serialize_with = "data_as_text")]
    pub data: Option<Vec<u8>>,
    /// The Stat clients would see.
    #[serde(serialize_with = "stat_fields")]
    pub stat: Stat,
    /// The ACL.
    #[serde(serialize_with = "acl_text")]
    pub acl: Vec<Acl>,
}

/// One session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionSnapshot {
    /// The id.
    pub id: SessionId,
    /// Negotiated timeout, ms.
    pub timeout: i32,
    /// Session-clock ms of its last packet.
    pub last_active_ms: u64,
    /// Session-clock ms at which it expires if nothing arrives.
    pub expires_at_ms: u64,
    /// Whether a connection serves it now.
    pub connected: bool,
    /// Whether a fault holds it stalled.
    pub stalled: bool,
    /// Its ephemeral nodes.
    pub ephemerals: Vec<String>,
    /// Its current connection's watches.
    pub watches: Vec<SessionWatch>,
}

/// A watch as a session holds it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct SessionWatch {
    /// The watched path.
    pub path: String,
    /// The kind.
    pub kind: WatchKind,
}

/// One watch on a path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WatchSnapshot {
    /// The session whose connection holds it (0 if none).
    pub session: SessionId,
    /// The kind.
    pub kind: WatchKind,
}

fn data_as_text<S: serde::Serializer>(d: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        None => s.serialize_none(),
        Some(b) => s.serialize_str(&String::from_utf8_lossy(b)),
    }
}

fn stat_fields<S: serde::Serializer>(st: &Stat, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(11))?;
    m.serialize_entry("czxid", &st.czxid)?;
    m.serialize_entry("mzxid", &st.mzxid)?;
    m.serialize_entry("ctime", &st.ctime)?;
    m.serialize_entry("mtime", &st.mtime)?;
    m.serialize_entry("version", &st.version)?;
    m.serialize_entry("cversion", &st.cversion)?;
    m.serialize_entry("aversion", &st.aversion)?;
    m.serialize_entry("ephemeralOwner", &st.ephemeral_owner)?;
    m.serialize_entry("dataLength", &st.data_length)?;
    m.serialize_entry("numChildren", &st.num_children)?;
    m.serialize_entry("pzxid", &st.pzxid)?;
    m.end()
}

fn acl_text<S: serde::Serializer>(acl: &[Acl], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(
        acl.iter()
            .map(|a| format!("{}:{}:{}", a.id.scheme, a.id.id, a.perms)),
    )
}

impl Snapshot {
    /// The number of watches, all sessions and paths together.
    pub fn watch_count(&self) -> usize {
        self.watches.values().map(Vec::len).sum()
    }
}

impl fmt::Display for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "zk-mock snapshot (seed {}, last zxid {:#x})",
            self.seed, self.last_zxid
        )?;
        writeln!(f, "tree:")?;
        for (path, n) in &self.tree {
            let data = match &n.data {
                None => "null".to_string(),
                Some(d) => format!("{:?}", String::from_utf8_lossy(d)),
            };
            let s = &n.stat;
            write!(f, "  {path} = {data} (czxid={:#x} mzxid={:#x} pzxid={:#x} version={} cversion={} aversion={}", s.czxid, s.mzxid, s.pzxid, s.version, s.cversion, s.aversion)?;
            if s.ephemeral_owner != 0 {
                write!(f, " ephemeralOwner={:#x}", s.ephemeral_owner)?;
            }
            writeln!(f, ")")?;
        }
        writeln!(f, "sessions:")?;
        for s in self.sessions.values() {
            writeln!(
                f,
                "  {:#x} timeout={}ms {}{} ephemerals={:?} watches={:?}",
                s.id,
                s.timeout,
                if s.connected {
                    "connected"
                } else {
                    "disconnected"
                },
                if s.stalled { " stalled" } else { "" },
                s.ephemerals,
                s.watches
            )?;
        }
        writeln!(f, "watches:")?;
        for (path, ws) in &self.watches {
            let list: Vec<String> = ws
                .iter()
                .map(|w| format!("{:#x} {:?}", w.session, w.kind))
                .collect();
            writeln!(f, "  {path}: {}", list.join(", "))?;
        }
        Ok(())
    }
}
