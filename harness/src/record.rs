//! [`RunRecord`]: everything a scenario run produced, as plain data — the
//! clients' journal, the server's history, the faults applied, the markers
//! and the crashes. The invariants (module `check`) are pure functions of
//! it, so a run can be written down (`harness run --record FILE`), read back
//! and judged again (`harness check FILE`), and the checks are tested on
//! recorded runs (`harness/tests/records/`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::journal::Entry;
use crate::scenario::{Invariants, Role};
use crate::target::History;

/// The record format's version; a reader refuses others.
pub const FORMAT: u32 = 1;

/// A fault the timeline applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultRecord {
    /// The step's number in the file (1-based).
    pub step: usize,
    /// When it was applied.
    pub t_ms: f64,
    /// When its effect ends (stalls, refusals; expiry of crashed sessions).
    pub until_ms: f64,
    /// The action.
    pub action: String,
    /// Its argument as written.
    pub argument: String,
    /// The clients it hit.
    pub clients: Vec<String>,
}

/// A marker node a client created (or tried to) in the resource directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marker {
    /// The client.
    pub client: String,
    /// Its round.
    pub round: usize,
    /// The entry's number within the round (re-entries after a suspension count up).
    pub entry: usize,
    /// An entry marker (else an exit marker).
    pub enter: bool,
    /// The token it touched with.
    pub token: i64,
}

/// A client of the scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientInfo {
    /// Its name.
    pub name: String,
    /// What it asks for.
    pub role: Role,
}

/// How the run ended, as the harness saw it after the clients were done.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct End {
    /// Lock nodes left under the lock directory (names relative to it),
    /// while every session was still open.
    pub orphans: Vec<String>,
    /// Clients that did not finish before the deadline.
    pub unfinished: Vec<String>,
    /// Timeline steps that never ran.
    pub steps_not_run: Vec<String>,
    /// Of those, the steps anchored to an event (`on:`) whose trigger never
    /// came before the deadline (the same labels). A lock that stalled
    /// before the trigger failed liveness; records written before this field
    /// existed have none, and their steps stay errors.
    #[serde(default)]
    pub untriggered: Vec<String>,
    /// The harness's own session (its notifications are not the clients').
    pub admin_session: i64,
}

/// What the implementation's instances counted themselves (zk-lock in process).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientCounters {
    /// Watch notifications received.
    pub notifications: u64,
    /// Children listings made.
    pub children_reads: u64,
}

/// Everything one run produced.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRecord {
    /// [`FORMAT`].
    pub format: u32,
    /// The scenario's name.
    pub scenario: String,
    /// Its file.
    pub file: String,
    /// The lock kind or recipe it ran.
    pub recipe: String,
    /// The command that replays the run.
    pub replay: String,
    /// The seed it ran with.
    pub seed: u64,
    /// `mock` or the real server's address.
    pub target: String,
    /// The implementation, as reported by it.
    pub implementation: String,
    /// The lock directory.
    pub dir: String,
    /// The resource (marker) directory.
    pub res_dir: String,
    /// Every client, in the scenario's order.
    pub clients: Vec<ClientInfo>,
    /// The invariants to check.
    pub invariants: Invariants,
    /// Invariants the scenario expects violated (a negative scenario).
    pub expect_violated: Vec<String>,
    /// The clients' observations, in order.
    pub journal: Vec<Entry>,
    /// The server's history of the scenario's nodes.
    pub history: History,
    /// The faults the timeline applied.
    pub faults: Vec<FaultRecord>,
    /// Marker nodes by path.
    pub markers: BTreeMap<String, Marker>,
    /// Clients that crashed.
    pub crashed: BTreeSet<String>,
    /// How it ended.
    pub end: End,
    /// Whether the timeline had request faults (lose_reply, drop_request, fail, delay).
    pub request_faults: bool,
    /// How many of them fired (`None`: the target cannot tell).
    pub request_faults_fired: Option<u64>,
    /// What the implementation counted.
    pub counters: ClientCounters,
}

/// A record file that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The file could not be read.
    #[error("{file}: {source}")]
    Io {
        /// The file.
        file: String,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not a record.
    #[error("{file}:{line}: not a run record: {source}")]
    Parse {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// Why.
        source: serde_json::Error,
    },
    /// A record of another format version.
    #[error("{file}:{line}: record format {found}; this harness reads {FORMAT}")]
    Format {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// The version found.
        found: u32,
    },
}

impl RunRecord {
    /// The role of `client` (exclusive if unknown).
    pub fn role(&self, client: &str) -> Role {
        self.clients
            .iter()
            .find(|c| c.name == client)
            .map(|c| c.role)
            .unwrap_or_default()
    }

    /// Appends the record to `out` as one JSON line.
    pub fn write_line(&self, out: &mut impl Write) -> std::io::Result<()> {
        serde_json::to_writer(&mut *out, self)?;
        out.write_all(b"\n")
    }

    /// Reads every record of a file written by [`write_line`](Self::write_line).
    pub fn read_all(file: &Path) -> Result<Vec<RunRecord>, RecordError> {
        let name = file.display().to_string();
        let io = |source| RecordError::Io {
            file: name.clone(),
            source,
        };
        let f = std::fs::File::open(file).map_err(io)?;
        let mut records = Vec::new();
        for (i, line) in std::io::BufReader::new(f).lines().enumerate() {
            let line = line.map_err(io)?;
            if line.trim().is_empty() {
                continue;
            }
            let r: RunRecord =
                serde_json::from_str(&line).map_err(|source| RecordError::Parse {
                    file: name.clone(),
                    line: i + 1,
                    source,
                })?;
            if r.format != FORMAT {
                return Err(RecordError::Format {
                    file: name.clone(),
                    line: i + 1,
                    found: r.format,
                });
            }
            records.push(r);
        }
        Ok(records)
    }
}
