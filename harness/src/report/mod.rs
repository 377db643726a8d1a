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
    /// The scenario could not be run as written (setup error, a driver that
    /// failed, a step that never ran while the lock was not stalled, a fault
    /// that never fired).
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

/// How often one scenario failed over repeated runs (`run --repeat N`): the
/// runs of one scenario file on one implementation and target.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reproduction {
    /// The scenario's name.
    pub scenario: String,
    /// Its file.
    pub file: String,
    /// The implementation under test.
    pub implementation: String,
    /// `mock` or `real`.
    pub target: String,
    /// The runs that ran (not skipped).
    pub runs: usize,
    /// Of those, the runs that failed (an invariant violated, or a negative
    /// scenario not caught).
    pub failed: usize,
    /// The runs that could not be run as written.
    pub errors: usize,
    /// The runs skipped.
    pub skipped: usize,
    /// `failed / runs`; `None` when nothing ran.
    pub rate: Option<f64>,
    /// The seeds of the failed runs, in run order: each replays its failure.
    pub failed_seeds: Vec<u64>,
}

impl Reproduction {
    /// `3/20`.
    pub fn fraction(&self) -> String {
        format!("{}/{}", self.failed, self.runs)
    }

    /// `15.0%`, or `-` when nothing ran.
    pub fn percent(&self) -> String {
        self.rate
            .map(|r| format!("{:.1}%", r * 100.0))
            .unwrap_or_else(|| "-".into())
    }
}

/// The reproduction rate of each scenario over the outcomes: one entry per
/// (file, implementation, target), in the order first seen.
pub fn reproduction(outcomes: &[Outcome]) -> Vec<Reproduction> {
    let mut groups: Vec<Reproduction> = Vec::new();
    for o in outcomes {
        let i = match groups.iter().position(|g| {
            g.file == o.file && g.implementation == o.implementation && g.target == o.target
        }) {
            Some(i) => i,
            None => {
                groups.push(Reproduction {
                    scenario: o.name.clone(),
                    file: o.file.clone(),
                    implementation: o.implementation.clone(),
                    target: o.target.to_string(),
                    runs: 0,
                    failed: 0,
                    errors: 0,
                    skipped: 0,
                    rate: None,
                    failed_seeds: Vec::new(),
                });
                groups.len() - 1
            }
        };
        let g = &mut groups[i];
        match o.status {
            Status::Skipped => g.skipped += 1,
            status => {
                g.runs += 1;
                match status {
                    Status::Failed => {
                        g.failed += 1;
                        g.failed_seeds.push(o.seed);
                    }
                    Status::Error => g.errors += 1,
                    _ => {}
                }
            }
        }
    }
    for g in &mut groups {
        g.rate = (g.runs > 0).then(|| g.failed as f64 / g.runs as f64);
    }
    groups
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

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str, implementation: &str, seed: u64, status: Status) -> Outcome {
        Outcome {
            name: name.into(),
            file: format!("scenarios/{name}.yaml"),
            implementation: implementation.into(),
            target: "mock",
            seed,
            status,
            ..Outcome::default()
        }
    }

    #[test]
    fn reproduction_counts_each_scenario_on_each_implementation() {
        use Status::*;
        let outcomes = vec![
            run("a", "zk-lock", 11, Passed),
            run("b", "zk-lock", 11, Failed),
            run("a", "zk-lock", 12, Failed),
            run("b", "zk-lock", 12, Failed),
            run("a", "kazoo", 11, Error),
            run("a", "zk-lock", 13, Skipped),
            run("b", "zk-lock", 13, Caught),
            run("a", "zk-lock", 14, Failed),
        ];
        let r = reproduction(&outcomes);
        // First seen first: a on zk-lock, b on zk-lock, a on kazoo.
        let keys: Vec<(&str, &str)> = r
            .iter()
            .map(|g| (g.scenario.as_str(), g.implementation.as_str()))
            .collect();
        assert_eq!(
            keys,
            vec![("a", "zk-lock"), ("b", "zk-lock"), ("a", "kazoo")]
        );
        let a = &r[0];
        assert_eq!((a.runs, a.failed, a.errors, a.skipped), (3, 2, 0, 1));
        assert_eq!(a.failed_seeds, vec![12, 14]);
        assert_eq!(a.rate, Some(2.0 / 3.0));
        assert_eq!(a.fraction(), "2/3");
        assert_eq!(a.percent(), "66.7%");
        let b = &r[1];
        assert_eq!((b.runs, b.failed, b.errors, b.skipped), (3, 2, 0, 0));
        assert_eq!(b.failed_seeds, vec![11, 12]);
        let k = &r[2];
        assert_eq!((k.runs, k.failed, k.errors, k.skipped), (1, 0, 1, 0));
        assert_eq!(k.rate, Some(0.0));
        assert!(k.failed_seeds.is_empty());
        assert_eq!(k.file, "scenarios/a.yaml");
        assert_eq!(k.target, "mock");
    }

    #[test]
    fn nothing_run_has_no_rate() {
        let r = reproduction(&[
            run("a", "zk-lock", 1, Status::Skipped),
            run("a", "zk-lock", 2, Status::Skipped),
        ]);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].runs, r[0].skipped), (0, 2));
        assert_eq!(r[0].rate, None);
        assert_eq!(r[0].percent(), "-");
        assert!(reproduction(&[]).is_empty());
    }

    /// The same file on another target is another entry.
    #[test]
    fn targets_are_told_apart() {
        let mut real = run("a", "zk-lock", 1, Status::Failed);
        real.target = "real";
        let r = reproduction(&[run("a", "zk-lock", 1, Status::Passed), real]);
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].target.as_str(), r[0].failed), ("mock", 0));
        assert_eq!((r[1].target.as_str(), r[1].failed), ("real", 1));
    }

    /// The terminal shows the table only when a scenario ran more than once.
    #[test]
    fn the_terminal_table_needs_repeated_runs() {
        let once = [
            run("a", "zk-lock", 1, Status::Passed),
            run("b", "zk-lock", 1, Status::Failed),
        ];
        assert!(!terminal(&once).contains("reproduction"));
        let mut outcomes: Vec<Outcome> = (0..20)
            .map(|i| {
                let failed = [4, 11, 18].contains(&i);
                run(
                    "a",
                    "zk-lock",
                    40 + i,
                    if failed {
                        Status::Failed
                    } else {
                        Status::Passed
                    },
                )
            })
            .collect();
        outcomes.push(run("b", "zk-lock", 1, Status::Passed));
        let text = terminal(&outcomes);
        let table = &text[text.find("reproduction\n").expect("a table")..];
        let a = table.lines().find(|l| l.starts_with("a ")).unwrap();
        assert!(a.contains("3/20 15.0%"), "{a}");
        assert!(a.ends_with("44, 51, 58"), "{a}");
        let b = table.lines().find(|l| l.starts_with("b ")).unwrap();
        assert!(b.contains("0/1 0.0%"), "{b}");
        // The totals still close the report.
        assert!(text
            .trim_end()
            .lines()
            .last()
            .unwrap()
            .contains("21 scenarios"));
    }

    #[test]
    fn junit_carries_the_rate_on_each_run() {
        let outcomes: Vec<Outcome> = (0..4)
            .map(|i| {
                run(
                    "a",
                    "zk-lock",
                    10 + i,
                    if i == 2 {
                        Status::Failed
                    } else {
                        Status::Passed
                    },
                )
            })
            .collect();
        let xml = junit(&outcomes);
        assert_eq!(
            xml.matches("<property name=\"reproduction\" value=\"1/4\"/>")
                .count(),
            4,
            "{xml}"
        );
        assert_eq!(
            xml.matches("<property name=\"reproduction_rate\" value=\"0.25\"/>")
                .count(),
            4,
            "{xml}"
        );
        assert!(
            xml.contains("reproduction: 1 of 4 runs failed (25.0%); failing seeds 12"),
            "{xml}"
        );
        let doc: serde_json::Value = serde_json::from_str(&json(&outcomes)).unwrap();
        assert_eq!(doc["reproduction"][0]["runs"], 4);
        assert_eq!(doc["reproduction"][0]["rate"], 0.25);
        assert_eq!(
            doc["reproduction"][0]["failed_seeds"],
            serde_json::json!([12])
        );
    }
}
