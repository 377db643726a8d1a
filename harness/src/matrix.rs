//! `harness matrix`: the verdict of every scenario on every implementation,
//! as a table (terminal, Markdown, JSON, JUnit), checked against a file of
//! expected verdicts so that a changed verdict fails CI.
//!
//! The expectations file lists only the cells that differ from the default —
//! passed (caught, for a negative scenario), or skipped where the
//! implementation cannot express the scenario — with the upstream issue
//! that explains each finding:
//!
//! ```yaml
//! kazoo-732-lost-cleanup-delete:
//!   kazoo:
//!     verdict: failed
//!     violated: [liveness, no_orphans]
//!     finding: python-zk/kazoo#732
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::ExpectationsError;
use crate::report::{Outcome, Status};
use crate::scenario::Loaded;

/// A cell's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every invariant held.
    Passed,
    /// A negative scenario, caught.
    Caught,
    /// An invariant was violated.
    Failed,
    /// The run could not be judged.
    Error,
    /// The implementation cannot express the scenario.
    Skipped,
}

impl From<Status> for Verdict {
    fn from(s: Status) -> Verdict {
        match s {
            Status::Passed => Verdict::Passed,
            Status::Caught => Verdict::Caught,
            Status::Failed => Verdict::Failed,
            Status::Error => Verdict::Error,
            Status::Skipped => Verdict::Skipped,
        }
    }
}

impl Verdict {
    fn name(self) -> &'static str {
        match self {
            Verdict::Passed => "passed",
            Verdict::Caught => "caught",
            Verdict::Failed => "failed",
            Verdict::Error => "error",
            Verdict::Skipped => "skipped",
        }
    }
}

/// One expected cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    /// The verdict.
    pub verdict: Verdict,
    /// For `failed`: exactly these invariants.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violated: Vec<String>,
    /// For a finding: the upstream issue, or "not reported upstream".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finding: Option<String>,
    /// Anything else worth saying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// scenario → implementation → expected cell.
pub type Expectations = BTreeMap<String, BTreeMap<String, Expected>>;

/// Reads an expectations file (errors name the file, line and column).
pub fn load_expectations(path: &Path) -> Result<Expectations, ExpectationsError> {
    let text = std::fs::read_to_string(path).map_err(|source| ExpectationsError::Io {
        file: path.to_path_buf(),
        source,
    })?;
    serde_saphyr::from_str(&text).map_err(|e| {
        let (line, column) = e
            .location()
            .map(|l| (l.line(), l.column()))
            .unwrap_or((0, 0));
        let msg = e.to_string();
        ExpectationsError::Invalid {
            file: path.to_path_buf(),
            line,
            column,
            message: msg.lines().next().unwrap_or("invalid YAML").to_string(),
        }
    })
}

/// One cell of the matrix.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// The verdict.
    pub verdict: Verdict,
    /// Violated invariants.
    pub violated: Vec<String>,
    /// Errors, or the reason for a skip.
    pub errors: Vec<String>,
    /// The seed.
    pub seed: u64,
    /// The command that replays it.
    pub replay: String,
    /// Wall time.
    pub duration_ms: f64,
    /// What was expected, if an expectations file was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<Expected>,
    /// Whether the verdict is what was expected (true without expectations
    /// when the run is ok).
    pub as_expected: bool,
}

/// One row.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The scenario.
    pub scenario: String,
    /// Its file.
    pub file: String,
    /// Its upstream source, if any.
    pub source: Option<String>,
    /// Whether it is a negative scenario.
    pub negative: bool,
    /// implementation → cell.
    pub cells: BTreeMap<String, Cell>,
}

/// The whole matrix.
#[derive(Debug, Clone, Serialize)]
pub struct Matrix {
    /// The implementations, in column order, with what each said it is.
    pub implementations: Vec<(String, String)>,
    /// The target (`mock` or `real`).
    pub target: String,
    /// The rows, in the scenarios' order.
    pub rows: Vec<Row>,
    /// Wall time of the whole matrix.
    pub duration_s: f64,
}

/// The default expectation when the file says nothing of a cell.
fn default_expected(negative: bool, skipped: bool) -> Expected {
    Expected {
        verdict: if skipped {
            Verdict::Skipped
        } else if negative {
            Verdict::Caught
        } else {
            Verdict::Passed
        },
        violated: Vec::new(),
        finding: None,
        note: None,
    }
}

impl Matrix {
    /// Builds the matrix from outcomes (one per scenario and implementation).
    pub fn new(
        scenarios: &[Loaded],
        implementations: Vec<(String, String)>,
        target: &str,
        outcomes: &[Outcome],
        expectations: Option<&Expectations>,
        duration_s: f64,
    ) -> Matrix {
        let mut rows = Vec::new();
        for l in scenarios {
            let mut cells = BTreeMap::new();
            for (imp, _) in &implementations {
                let negative = !l.scenario.expect.violated_by(imp).is_empty();
                let Some(o) = outcomes
                    .iter()
                    .find(|o| o.name == l.name && &o.implementation == imp)
                else {
                    continue;
                };
                let verdict = Verdict::from(o.status);
                let violated: Vec<String> = o.violated().into_iter().map(String::from).collect();
                let expected = expectations.map(|e| {
                    e.get(&l.name)
                        .and_then(|m| m.get(imp))
                        .cloned()
                        .unwrap_or_else(|| default_expected(negative, verdict == Verdict::Skipped))
                });
                let as_expected = match &expected {
                    Some(x) => {
                        (x.verdict == verdict
                            && (x.verdict != Verdict::Failed || {
                                let a: BTreeSet<&String> = x.violated.iter().collect();
                                let b: BTreeSet<&String> = violated.iter().collect();
                                a == b
                            }))
                            // On a real server, a scenario that needs the
                            // mock's own knobs is skipped whatever its
                            // verdict on the mock (where it is checked).
                            || (verdict == Verdict::Skipped && target != "mock")
                    }
                    None => o.status.ok(),
                };
                cells.insert(
                    imp.clone(),
                    Cell {
                        verdict,
                        violated,
                        errors: o.errors.clone(),
                        seed: o.seed,
                        replay: o.replay.clone(),
                        duration_ms: o.duration_ms,
                        expected,
                        as_expected,
                    },
                );
            }
            rows.push(Row {
                scenario: l.name.clone(),
                file: l.file.display().to_string(),
                source: l.scenario.source.clone(),
                negative: !l.scenario.expect.violated.is_empty(),
                cells,
            });
        }
        Matrix {
            implementations,
            target: target.to_string(),
            rows,
            duration_s,
        }
    }

    /// Whether every cell is as expected.
    pub fn ok(&self) -> bool {
        self.rows
            .iter()
            .all(|r| r.cells.values().all(|c| c.as_expected))
    }

    /// The cells that are not as expected: (scenario, implementation, cell).
    pub fn mismatches(&self) -> Vec<(&str, &str, &Cell)> {
        self.rows
            .iter()
            .flat_map(|r| {
                r.cells
                    .iter()
                    .filter(|(_, c)| !c.as_expected)
                    .map(move |(i, c)| (r.scenario.as_str(), i.as_str(), c))
            })
            .collect()
    }

    fn cell_text(c: &Cell, markdown: bool) -> String {
        let bold = |s: &str| {
            if markdown {
                format!("**{s}**")
            } else {
                s.to_uppercase()
            }
        };
        let mut t = match c.verdict {
            Verdict::Passed => "passed".to_string(),
            Verdict::Caught => "caught".to_string(),
            Verdict::Skipped => "skipped".to_string(),
            Verdict::Failed => format!("{}: {}", bold("failed"), c.violated.join(", ")),
            Verdict::Error => bold("error"),
        };
        if let Some(f) = c.expected.as_ref().and_then(|e| e.finding.as_ref()) {
            let _ = write!(t, " ({f})");
        }
        if !c.as_expected {
            if let Some(x) = &c.expected {
                let _ = write!(t, " — expected {}", x.verdict.name());
            }
        }
        t
    }

    /// The table for the terminal.
    pub fn terminal(&self) -> String {
        let mut out = String::new();
        let w = self
            .rows
            .iter()
            .map(|r| r.scenario.len())
            .max()
            .unwrap_or(8)
            .max(8);
        let cw = 26;
        let _ = write!(out, "{:<w$}", "scenario");
        for (i, _) in &self.implementations {
            let _ = write!(out, "  {i:<cw$}");
        }
        out.push('\n');
        for r in &self.rows {
            let _ = write!(out, "{:<w$}", r.scenario);
            for (i, _) in &self.implementations {
                let t = r
                    .cells
                    .get(i)
                    .map(|c| {
                        let mut t = Self::cell_text(c, false);
                        if !c.as_expected {
                            t.insert_str(0, "! ");
                        }
                        t
                    })
                    .unwrap_or_else(|| "-".into());
                let _ = write!(out, "  {t:<cw$}");
            }
            out.push('\n');
        }
        let n: usize = self.rows.iter().map(|r| r.cells.len()).sum();
        let bad = self.mismatches();
        let _ = writeln!(
            out,
            "\n{} scenarios × {} implementations = {n} runs in {:.0} s; {} not as expected",
            self.rows.len(),
            self.implementations.len(),
            self.duration_s,
            bad.len()
        );
        for (s, i, c) in bad {
            let _ = writeln!(
                out,
                "  {s} on {i}: {} (seed {}) — replay: {}",
                Self::cell_text(c, false),
                c.seed,
                c.replay
            );
            for e in c.errors.iter().take(3) {
                let _ = writeln!(out, "    {e}");
            }
        }
        out
    }

    /// The table as Markdown, with the findings and the failing cells'
    /// replay commands below it.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = write!(out, "| scenario | source |");
        for (i, _) in &self.implementations {
            let _ = write!(out, " {i} |");
        }
        let _ = write!(out, "\n|---|---|");
        for _ in &self.implementations {
            out.push_str("---|");
        }
        out.push('\n');
        for r in &self.rows {
            let name = if r.negative {
                format!("{} (negative)", r.scenario)
            } else {
                r.scenario.clone()
            };
            let _ = write!(out, "| `{name}` | {} |", r.source.as_deref().unwrap_or(""));
            for (i, _) in &self.implementations {
                let t = r
                    .cells
                    .get(i)
                    .map(|c| Self::cell_text(c, true))
                    .unwrap_or_else(|| "–".into());
                let _ = write!(out, " {t} |");
            }
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "\nImplementations: {}. Target: {}. {} runs in {:.0} s.",
            self.implementations
                .iter()
                .map(|(n, v)| format!("`{n}` = {v}"))
                .collect::<Vec<_>>()
                .join(", "),
            self.target,
            self.rows.iter().map(|r| r.cells.len()).sum::<usize>(),
            self.duration_s
        );
        let failing: Vec<(&Row, &String, &Cell)> = self
            .rows
            .iter()
            .flat_map(|r| {
                r.cells
                    .iter()
                    .filter(|(_, c)| matches!(c.verdict, Verdict::Failed | Verdict::Error))
                    .map(move |(i, c)| (r, i, c))
            })
            .collect();
        if !failing.is_empty() {
            out.push_str("\nFailing cells:\n\n");
            for (r, i, c) in failing {
                let finding = c
                    .expected
                    .as_ref()
                    .and_then(|e| e.finding.clone())
                    .map(|f| format!(" Finding: {f}."))
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "- `{}` on `{i}`: {}.{finding} Seed {}; replay: `{}`",
                    r.scenario,
                    if c.verdict == Verdict::Failed {
                        format!("violated {}", c.violated.join(", "))
                    } else {
                        format!("error: {}", c.errors.join("; "))
                    },
                    c.seed,
                    c.replay
                );
            }
        }
        out
    }

    /// The matrix as JSON.
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// JUnit XML: a suite per implementation, a case per scenario; a case
    /// fails when its cell is not as expected.
    pub fn junit(&self) -> String {
        use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
        let mut report = Report::new("harness-matrix");
        for (imp, version) in &self.implementations {
            let mut suite = TestSuite::new(imp.clone());
            for r in &self.rows {
                let Some(c) = r.cells.get(imp) else { continue };
                let status = if !c.as_expected {
                    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    s.set_message(format!(
                        "{}, expected {}",
                        Self::cell_text(c, false),
                        c.expected.as_ref().map_or("passed", |e| e.verdict.name())
                    ));
                    s.set_description(format!(
                        "seed {}\nreplay: {}\n{}",
                        c.seed,
                        c.replay,
                        c.errors.join("\n")
                    ));
                    s
                } else if c.verdict == Verdict::Skipped {
                    let mut s = TestCaseStatus::skipped();
                    if let TestCaseStatus::Skipped { message, .. } = &mut s {
                        *message = c.errors.first().map(|e| e.as_str().into());
                    }
                    s
                } else {
                    TestCaseStatus::success()
                };
                let mut case = TestCase::new(r.scenario.clone(), status);
                case.set_classname(format!("harness.{}.{imp}", self.target));
                case.set_time(std::time::Duration::from_secs_f64(c.duration_ms / 1000.0));
                case.set_system_out(format!(
                    "{version}: {}\nseed {}\nreplay: {}\n",
                    Self::cell_text(c, false),
                    c.seed,
                    c.replay
                ));
                suite.add_test_case(case);
            }
            report.add_test_suite(suite);
        }
        report
            .to_string()
            .unwrap_or_else(|e| format!("<!-- junit serialisation failed: {e} -->"))
    }
}

/// Where a matrix's files go: `<dir>/matrix.{md,json,xml}`.
pub fn files(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    (
        dir.join("matrix.md"),
        dir.join("matrix.json"),
        dir.join("matrix.xml"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::implementation::Implementation;
    use crate::report::InvariantResult;
    use crate::target::TargetSpec;
    use std::path::Path;

    fn outcome(l: &Loaded, imp: &str, status: Status, violated: &[&str]) -> Outcome {
        let implementation = Implementation::parse(imp).unwrap_or(Implementation::Driver {
            name: imp.into(),
            command: vec![imp.into()],
        });
        let mut o = Outcome::new(l, &TargetSpec::Mock, &implementation, 9);
        o.status = status;
        for v in violated {
            o.invariants.push(InvariantResult {
                name: v.to_string(),
                checked: true,
                held: false,
                expected_violation: false,
                details: vec![],
            });
        }
        o
    }

    #[test]
    fn cells_are_judged_against_the_expectations_and_findings_are_shown() {
        let l = crate::scenario::parse(
            Path::new("kazoo-732.yaml"),
            "lock: {kind: exclusive}\nclients:\n  - name: a\n",
        )
        .unwrap();
        let expectations: Expectations = serde_saphyr::from_str(
            "kazoo-732:\n  kazoo:\n    verdict: failed\n    violated: [liveness, no_orphans]\n    finding: python-zk/kazoo#732\n",
        )
        .unwrap();
        let outcomes = vec![
            outcome(&l, "zk-lock", Status::Passed, &[]),
            outcome(&l, "kazoo", Status::Failed, &["liveness", "no_orphans"]),
        ];
        let imps = vec![
            ("zk-lock".to_string(), "zk-lock 0.1.0".to_string()),
            ("kazoo".to_string(), "kazoo 2.11.0".to_string()),
        ];
        let m = Matrix::new(
            std::slice::from_ref(&l),
            imps.clone(),
            "mock",
            &outcomes,
            Some(&expectations),
            1.0,
        );
        assert!(m.ok(), "{}", m.terminal());
        let md = m.markdown();
        assert!(md.contains("| `kazoo-732` |  | passed | **failed**: liveness, no_orphans (python-zk/kazoo#732) |"), "{md}");
        assert!(md.contains("Seed 9; replay: `"), "{md}");
        // A fixed upstream bug is a changed verdict: it fails.
        let fixed = vec![
            outcome(&l, "zk-lock", Status::Passed, &[]),
            outcome(&l, "kazoo", Status::Passed, &[]),
        ];
        let m = Matrix::new(
            std::slice::from_ref(&l),
            imps.clone(),
            "mock",
            &fixed,
            Some(&expectations),
            1.0,
        );
        assert!(!m.ok());
        assert_eq!(m.mismatches().len(), 1);
        assert!(m.terminal().contains("expected failed"), "{}", m.terminal());
        assert!(m.junit().contains("<failure"), "{}", m.junit());
        // So is a different set of violated invariants.
        let other = vec![
            outcome(&l, "zk-lock", Status::Passed, &[]),
            outcome(&l, "kazoo", Status::Failed, &["liveness"]),
        ];
        assert!(!Matrix::new(
            std::slice::from_ref(&l),
            imps.clone(),
            "mock",
            &other,
            Some(&expectations),
            1.0
        )
        .ok());
        let ok = |target: &str, outcomes: &[Outcome], e: &Expectations| {
            Matrix::new(
                std::slice::from_ref(&l),
                imps.clone(),
                target,
                outcomes,
                Some(e),
                1.0,
            )
            .ok()
        };
        // On a real server a listed cell may be skipped (a mock-only knob); on
        // the mock it may not.
        let skipped_kazoo = vec![
            outcome(&l, "zk-lock", Status::Passed, &[]),
            outcome(&l, "kazoo", Status::Skipped, &[]),
        ];
        assert!(ok("real", &skipped_kazoo, &expectations));
        assert!(!ok("mock", &skipped_kazoo, &expectations));
        // Every verdict must replay: a finding that shows in some runs
        // only is not an expectation (the scenario is restaged so that
        // events force the race), and the file cannot say so.
        let flaky = serde_saphyr::from_str::<Expectations>(
            "kazoo-732:\n  kazoo:\n    verdict: failed\n    violated: [liveness, no_orphans]\n    finding: python-zk/kazoo#732\n    intermittent: true\n",
        );
        assert!(flaky.is_err(), "intermittent is not a field");
        assert!(!ok("mock", &fixed, &expectations));
        // A skipped cell is expected unless the file says otherwise; an
        // unlisted failure is not.
        let skipped = vec![
            outcome(&l, "zk-lock", Status::Failed, &["mutual_exclusion"]),
            outcome(&l, "kazoo", Status::Skipped, &[]),
        ];
        let m = Matrix::new(&[l], imps, "mock", &skipped, None, 1.0);
        assert_eq!(m.mismatches().len(), 1);
        assert_eq!(m.mismatches()[0].1, "zk-lock");
    }
}
