//! Outcomes and their reports: `terminal`, `json`, `junit` and `html`.

use std::path::Path;

use serde::Serialize;

use crate::journal::Entry;
pub use crate::record::FaultRecord;
use crate::resource::ResourceViolation;
use crate::scenario::Loaded;
use crate::target::TargetSpec;

/// How a scenario ended (`Passed` until something says otherwise).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Every invariant held.
    #[default]
    Passed,
    /// A negative scenario: exactly the expected invariants were violated.
    Caught,
    /// An invariant failed (or a negative scenario was not caught).
    Failed,
    /// The scenario could not be run as written (setup error, a step that
    /// never ran, a fault that never fired).
    Error,
    /// Not run on this target.
    Skipped,
}

impl Status {
    /// Whether the run counts as a success.
    pub fn ok(self) -> bool {
        matches!(self, Status::Passed | Status::Caught | Status::Skipped)
    }
}

/// One invariant's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InvariantResult {
    /// Its name (as in the scenario file).
    pub name: String,
    /// Whether it was checked (some cannot be on some targets).
    pub checked: bool,
    /// Whether it held.
    pub held: bool,
    /// Whether the scenario expects it to be violated.
    pub expected_violation: bool,
    /// The evidence: one line per violation, or what was checked.
    pub details: Vec<String>,
}

/// One hand-off: a lock node deleted, and who was told.
#[derive(Debug, Clone, Serialize)]
pub struct Handoff {
    /// The deletion's zxid (or order on targets without zxids).
    pub zxid: i64,
    /// The deleted lock node.
    pub path: String,
    /// The client that owned it, if known.
    pub from: Option<String>,
    /// Whether the node went with its session (expiry, close).
    pub by_session_end: bool,
    /// Watch notifications the deletion caused (mock only).
    pub notifications: Option<u64>,
}

/// Totals of one run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Stats {
    /// Successful acquisitions.
    pub acquisitions: usize,
    /// Lock-node deletions.
    pub handoffs: usize,
    /// Notifications under the lock directory counted by the server (mock).
    pub server_notifications: Option<u64>,
    /// The largest number of notifications one hand-off caused (mock).
    pub max_notifications_per_handoff: Option<u64>,
    /// Notifications the recipes' instances counted.
    pub client_notifications: u64,
    /// Children listings the recipes' instances made.
    pub children_reads: u64,
    /// Sessions the clients used.
    pub sessions: usize,
}

/// Everything about one scenario run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Outcome {
    /// The scenario's name.
    pub name: String,
    /// Its file.
    pub file: String,
    /// What it shows.
    pub description: String,
    /// The recipe, or the kind of lock when the scenario names no recipe.
    pub recipe: String,
    /// The implementation under test (`zk-lock`, `kazoo`, `curator`, a driver command).
    pub implementation: String,
    /// What the implementation says it is (name and version).
    pub implementation_version: String,
    /// `mock` or `real`.
    pub target: &'static str,
    /// The seed used.
    pub seed: u64,
    /// How it ended.
    pub status: Status,
    /// Wall time.
    pub duration_ms: f64,
    /// Per invariant.
    pub invariants: Vec<InvariantResult>,
    /// Why the scenario could not be run as written.
    pub errors: Vec<String>,
    /// The clients, in order.
    pub clients: Vec<String>,
    /// What the clients observed.
    pub journal: Vec<Entry>,
    /// The resource's complaints.
    pub resource_violations: Vec<ResourceViolation>,
    /// The faults applied.
    pub faults: Vec<FaultRecord>,
    /// Lock hand-offs.
    pub handoffs: Vec<Handoff>,
    /// Totals.
    pub stats: Stats,
    /// The end of the server's history (on failure).
    pub history_tail: Vec<String>,
    /// The command that replays this run.
    pub replay: String,
    /// The clients' operations (`--history`).
    #[serde(skip)]
    pub history: Vec<crate::history::Op>,
    /// Everything the run produced, for `--record` (none when it could not run).
    #[serde(skip)]
    pub record: Option<Box<crate::record::RunRecord>>,
}

impl Outcome {
    pub(crate) fn new(
        l: &Loaded,
        target: &TargetSpec,
        implementation: &crate::implementation::Implementation,
        seed: u64,
    ) -> Outcome {
        let target_arg = match target {
            TargetSpec::Mock => String::new(),
            TargetSpec::Real(a) => format!(" --target {a}"),
            TargetSpec::RealStarted(_) => " --target real".into(),
        };
        let imp_arg = match implementation {
            crate::implementation::Implementation::ZkLock => String::new(),
            other => format!(" --implementation {}", other.arg()),
        };
        let lock = &l.scenario.lock.value;
        Outcome {
            name: l.name.clone(),
            file: l.file.display().to_string(),
            description: l.scenario.description.trim().to_string(),
            recipe: lock
                .recipe
                .map_or(lock.kind().name(), |r| r.name())
                .to_string(),
            implementation: implementation.name().to_string(),
            implementation_version: String::new(),
            target: target.kind(),
            seed,
            clients: l.all_members(),
            replay: format!(
                "cargo run --release -p harness -- run {} --seed {seed}{target_arg}{imp_arg}",
                l.file.display()
            ),
            ..Outcome::default()
        }
    }

    /// The violated invariants' names.
    pub fn violated(&self) -> Vec<&str> {
        self.invariants
            .iter()
            .filter(|i| i.checked && !i.held)
            .map(|i| i.name.as_str())
            .collect()
    }
}

/// Writes `text` to `path`, creating parent directories.
pub fn write(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir)?;
        }
    }
    std::fs::write(path, text)
}

mod html;
mod json;
mod junit;
mod terminal;

pub use html::render as html;
pub use json::json;
pub use junit::junit;
pub use terminal::{failure_details, terminal};
