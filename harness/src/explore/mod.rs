//! `harness explore`: draws runs — a workload and a schedule of faults —
//! plays many at once, judges each, groups the failures into findings by
//! signature, and shrinks each finding to a minimal scenario that `harness
//! run` replays ([`shrink`]).
//!
//! Everything drawn comes from `--seed`: the same seed draws the same
//! scenarios in the same order, so an exploration replays, and `--shard
//! I/N` splits one exploration across machines (run `k` goes to shard
//! `k mod N`).

pub mod draft;
pub mod draw;
pub mod shrink;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::stream::{FuturesUnordered, StreamExt};
use serde::Serialize;

use crate::implementation::{HostPool, Implementation};
use crate::record::RunRecord;
use crate::report::{Outcome, Status};
use crate::runner::{self, RunOptions};
use crate::target::TargetSpec;
pub use draft::Draft;
pub use draw::{Base, Vocabulary};

/// How to explore.
#[derive(Debug, Clone)]
pub struct ExploreOptions {
    /// What the runs are built on.
    pub base: Base,
    /// What may be drawn.
    pub vocabulary: Vocabulary,
    /// The implementation under test.
    pub implementation: Implementation,
    /// Where.
    pub target: TargetSpec,
    /// The exploration's seed.
    pub seed: u64,
    /// Stop after this many runs (of this shard).
    pub runs: Option<u64>,
    /// Stop starting runs after this long.
    pub budget: Option<Duration>,
    /// Runs at once.
    pub jobs: usize,
    /// This shard, 0-based, of `shards`.
    pub shard: (u64, u64),
    /// Where records, scenarios and the report go.
    pub out: PathBuf,
    /// Shrink each finding.
    pub shrink: bool,
    /// How shrinking judges a candidate.
    pub shrink_options: shrink::ShrinkOptions,
    /// Start no new shrink after this long shrinking (the findings left are
    /// reported unshrunk, with their first failing run's scenario).
    pub shrink_total: Option<Duration>,
}

/// What identifies a finding: the implementation, the violated invariants
/// and the kinds of fault involved.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Signature {
    /// The implementation (as it names itself).
    pub implementation: String,
    /// The violated invariants, sorted.
    pub violated: Vec<String>,
    /// The fault kinds of the run's schedule, sorted.
    pub faults: Vec<String>,
}

impl std::fmt::Display for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let faults = if self.faults.is_empty() {
            "no faults".to_string()
        } else {
            self.faults.join(" + ")
        };
        write!(
            f,
            "{} under {faults} on {}",
            self.violated.join(", "),
            self.implementation
        )
    }
}

/// A group of failing runs with one signature.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// What identifies it: once shrunk, the fault kinds are those of the
    /// shrunk scenario, the ones the failure needs.
    pub signature: Signature,
    /// The failing runs' indices, in the order they ended.
    pub runs: Vec<u64>,
    /// When the first one ended, since the exploration began.
    pub first_after_s: f64,
    /// The first failing run's scenario file.
    pub scenario: PathBuf,
    /// Its seed.
    pub seed: u64,
    /// Its first violated invariant's first line of evidence.
    pub evidence: String,
    /// The shrunk scenario, once shrunk.
    pub shrunk: Option<shrink::Shrunk>,
    /// Why shrinking failed, if it did.
    pub shrink_error: Option<String>,
}

/// A failing run, as kept until the findings are made.
#[derive(Debug, Clone)]
struct Failure {
    index: u64,
    after_s: f64,
    file: PathBuf,
    seed: u64,
    signature: Signature,
    evidence: String,
    draft: Draft,
    record: Option<Box<RunRecord>>,
}

/// The order in which a failure's invariants name it: the first violated
/// of these is its group's.
const PRIMARY: [&str; 7] = [
    "mutual_exclusion",
    "fencing",
    "fenced_mutex",
    "lost_noticed",
    "no_orphans",
    "liveness",
    "notifications_per_handoff",
];

fn primary(sig: &Signature) -> String {
    PRIMARY
        .iter()
        .find(|p| sig.violated.iter().any(|v| v == *p))
        .map(|p| p.to_string())
        .unwrap_or_else(|| sig.violated.first().cloned().unwrap_or_default())
}

/// Whether every kind of `a` is in `b`.
fn kinds_within(a: &[String], b: &[String]) -> bool {
    a.iter().all(|k| b.contains(k))
}

/// Shrinks at most this many distinct failures of one group (one
/// implementation, one leading invariant).
const SHRINKS_PER_GROUP: usize = 3;
/// Failures kept per group for shrinking (the rest are counted only).
const KEPT_PER_GROUP: usize = 40;

/// The result of an exploration.
#[derive(Debug, Clone, Serialize)]
pub struct Exploration {
    /// The seed.
    pub seed: u64,
    /// The base (a kind, a recipe or a scenario's name).
    pub base: String,
    /// The implementation under test.
    pub implementation: String,
    /// The shard, 1-based, and the number of shards.
    pub shard: (u64, u64),
    /// Runs played.
    pub runs: u64,
    /// Why the implementation cannot run the drawn scenarios, if it cannot
    /// (the exploration stops at the first such run).
    pub skipped: Option<String>,
    /// Runs in which a drawn fault never applied (its trigger never came,
    /// or the lock never sent the op it hits), and nothing was violated.
    pub unapplied: u64,
    /// The most common ways a drawn fault did not apply, with counts.
    pub unapplied_reasons: Vec<(String, u64)>,
    /// Runs that could not be played (a client without a session, a driver
    /// that failed): neither a pass nor a finding.
    pub errors: u64,
    /// The most common reasons for those, with counts.
    pub error_reasons: Vec<(String, u64)>,
    /// Wall time exploring (before shrinking).
    pub explore_s: f64,
    /// Runs per minute while exploring.
    pub runs_per_minute: f64,
    /// Wall time shrinking.
    pub shrink_s: f64,
    /// Runs at once.
    pub jobs: usize,
    /// The findings, in the order first seen.
    pub findings: Vec<Finding>,
}

/// Progress, for a display: runs done, findings, errors.
#[derive(Debug, Default)]
pub struct Progress {
    /// Runs done.
    pub runs: AtomicUsize,
    /// Distinct findings.
    pub findings: AtomicUsize,
    /// Runs that were errors.
    pub errors: AtomicUsize,
    /// Shrinking: runs done.
    pub shrink_runs: AtomicUsize,
}

/// The default number of runs at once: a run mostly waits (on holds,
/// session timeouts and its clients), so many share a core.
pub fn default_jobs(implementation: &Implementation) -> usize {
    let cores = std::thread::available_parallelism()
        .map(usize::from)
        .unwrap_or(2);
    match implementation {
        Implementation::ZkLock => cores * 8,
        Implementation::Driver { .. } => cores * 4,
    }
}

/// The signature of a judged run, or `None` if it violated nothing.
pub fn signature(o: &Outcome, d: &Draft) -> Option<Signature> {
    let violated: Vec<String> = o.violated().into_iter().map(String::from).collect();
    if violated.is_empty() {
        return None;
    }
    Some(Signature {
        implementation: o.implementation.clone(),
        violated,
        faults: d.fault_kinds(),
    })
}

/// The first line of evidence of the first violated invariant.
pub fn evidence(o: &Outcome) -> String {
    o.invariants
        .iter()
        .find(|i| i.checked && !i.held)
        .and_then(|i| i.details.first().map(|d| format!("{}: {d}", i.name)))
        .unwrap_or_default()
}

/// Plays one draft as the scenario `file` (written only if the caller
/// wants it kept).
pub(crate) async fn play(
    d: &Draft,
    file: &Path,
    seed: u64,
    implementation: &Implementation,
    target: &TargetSpec,
    pool: Option<&Arc<HostPool>>,
) -> Result<Outcome, String> {
    let loaded = d.load(file).map_err(|e| e.to_string())?;
    let opts = RunOptions {
        target: target.clone(),
        seed: Some(seed),
        implementation: implementation.clone(),
        progress: None,
        pool: pool.cloned(),
    };
    Ok(runner::run(&loaded, &opts).await)
}

/// Explores until the budget or the run count is spent, then shrinks each
/// finding. Writes `records.jsonl` (every failing run), `runs/` (their
/// scenarios), `found/` (the shrunk scenarios) and `report.json` under
/// `opts.out`.
pub async fn explore(
    opts: &ExploreOptions,
    progress: Arc<Progress>,
) -> std::io::Result<Exploration> {
    let started = Instant::now();
    let runs_dir = opts.out.join("runs");
    std::fs::create_dir_all(&runs_dir)?;
    let records_path = opts.out.join("records.jsonl");
    let mut records = std::fs::File::create(&records_path)?;
    let (shard, shards) = opts.shard;
    let mut next: u64 = 0;
    let mut in_flight = FuturesUnordered::new();
    // Failures by (implementation, leading invariant), in the order first seen.
    let mut groups: Vec<((String, String), Vec<Failure>)> = Vec::new();
    let mut done: u64 = 0;
    let mut errors: u64 = 0;
    let mut idle: u64 = 0;
    let mut idle_reasons: BTreeMap<String, u64> = BTreeMap::new();
    let mut skipped: Option<String> = None;
    let mut reasons: BTreeMap<String, u64> = BTreeMap::new();
    let out_of_time = |started: Instant| opts.budget.is_some_and(|b| started.elapsed() >= b);
    let out_of_runs = |n: u64| opts.runs.is_some_and(|r| n >= r);
    loop {
        while skipped.is_none()
            && in_flight.len() < opts.jobs.max(1)
            && !out_of_time(started)
            && !out_of_runs(next)
        {
            let index = shard + next * shards;
            next += 1;
            let d = draw::draw(&opts.base, &opts.vocabulary, opts.seed, index);
            let file = runs_dir.join(format!("{}.yaml", d.name.clone().unwrap_or_default()));
            let seed = draw::run_seed(opts.seed ^ 0x5EED, index);
            let (implementation, target) = (opts.implementation.clone(), opts.target.clone());
            let pool = opts.shrink_options.pool.clone();
            in_flight.push(tokio::spawn(async move {
                let o = play(&d, &file, seed, &implementation, &target, pool.as_ref()).await;
                (index, d, file, o)
            }));
        }
        let Some(joined) = in_flight.next().await else {
            break;
        };
        done += 1;
        progress.runs.fetch_add(1, Ordering::Relaxed);
        let Ok((index, d, file, outcome)) = joined else {
            errors += 1;
            *reasons.entry("a run's task panicked".into()).or_default() += 1;
            continue;
        };
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                errors += 1;
                progress.errors.fetch_add(1, Ordering::Relaxed);
                *reasons.entry(first_words(&e)).or_default() += 1;
                continue;
            }
        };
        if outcome.status == Status::Skipped {
            // The implementation cannot run what is drawn (zk-lock has no
            // semaphore; a driver without the recipe): no run will differ.
            skipped = Some(outcome.errors.join("; "));
            continue;
        }
        let Some(sig) = signature(&outcome, &d) else {
            if outcome.status == Status::Error {
                if outcome.errors.iter().all(|e| unapplied(e)) {
                    // A drawn step whose moment never came (its client was
                    // done), or a request fault on an op the lock never
                    // sent: the run is a pass with less in it.
                    idle += 1;
                    for e in &outcome.errors {
                        *idle_reasons.entry(first_words(e)).or_default() += 1;
                    }
                } else {
                    errors += 1;
                    progress.errors.fetch_add(1, Ordering::Relaxed);
                    for e in &outcome.errors {
                        *reasons.entry(first_words(e)).or_default() += 1;
                    }
                }
            }
            continue;
        };
        // A failing run: keep its scenario and its record.
        if let Ok(text) = d.to_yaml() {
            std::fs::write(&file, text)?;
        }
        if let Some(r) = &outcome.record {
            r.write_line(&mut records)?;
        }
        let key = (sig.implementation.clone(), primary(&sig));
        let group = match groups.iter().position(|(k, _)| *k == key) {
            Some(g) => g,
            None => {
                progress.findings.fetch_add(1, Ordering::Relaxed);
                tracing::info!(run = index, "finding: {sig}");
                groups.push((key, Vec::new()));
                groups.len() - 1
            }
        };
        let failures = &mut groups[group].1;
        let keep = failures.len() < KEPT_PER_GROUP;
        failures.push(Failure {
            index,
            after_s: started.elapsed().as_secs_f64(),
            file: file.clone(),
            seed: outcome.seed,
            evidence: evidence(&outcome),
            signature: sig,
            draft: d,
            record: if keep { outcome.record } else { None },
        });
    }
    let explore_s = started.elapsed().as_secs_f64();
    let shrink_started = Instant::now();
    let mut findings: Vec<Finding> = Vec::new();
    let found_dir = opts.out.join("found");
    for (_, failures) in &groups {
        // The findings this group's failures belong to.
        let mut mine: Vec<usize> = Vec::new();
        // The simplest distinct failures first: fewest fault kinds, then
        // fewest steps and clients; one per set of fault kinds.
        let mut reps: Vec<&Failure> = failures.iter().filter(|f| f.record.is_some()).collect();
        reps.sort_by_key(|f| {
            (
                f.signature.faults.len(),
                f.draft.timeline.len(),
                f.draft.client_count(),
                f.index,
            )
        });
        reps.dedup_by(|a, b| a.signature.faults == b.signature.faults);
        let mut shrunk_here = 0;
        for rep in reps {
            if !opts.shrink && !mine.is_empty() {
                break;
            }
            if shrunk_here >= SHRINKS_PER_GROUP {
                break;
            }
            let out_of_shrink_time = opts
                .shrink_total
                .is_some_and(|t| shrink_started.elapsed() >= t);
            if opts.shrink && out_of_shrink_time && !mine.is_empty() {
                break;
            }
            // A failure whose faults include a shrunk finding's needs no
            // shrinking of its own: most likely the same bug with more noise.
            if mine.iter().any(|&i| {
                findings[i].shrunk.is_some()
                    && kinds_within(&findings[i].signature.faults, &rep.signature.faults)
            }) {
                continue;
            }
            let mut finding = Finding {
                signature: rep.signature.clone(),
                runs: Vec::new(),
                first_after_s: rep.after_s,
                scenario: rep.file.clone(),
                seed: rep.seed,
                evidence: rep.evidence.clone(),
                shrunk: None,
                shrink_error: None,
            };
            if opts.shrink && !out_of_shrink_time {
                shrunk_here += 1;
                let stem = format!("{}-{}", slug(&rep.signature), findings.len() + 1);
                let job = shrink::Job {
                    draft: rep.draft.clone(),
                    seed: rep.seed,
                    violated: rep.signature.violated.iter().cloned().collect(),
                    record: rep.record.as_deref().cloned(),
                    found_by: Some(format!(
                        "harness explore --seed {} --implementation {} (run {})",
                        opts.seed,
                        opts.implementation.arg(),
                        rep.index
                    )),
                    out: found_dir.join(format!("{stem}.yaml")),
                };
                match shrink::shrink(job, &opts.shrink_options, &progress.shrink_runs).await {
                    Ok(sh) => {
                        finding.signature.violated = sh.violated.clone();
                        finding.signature.faults = sh.fault_kinds.clone();
                        finding.shrunk = Some(sh);
                    }
                    Err(e) => finding.shrink_error = Some(e.to_string()),
                }
                // The same bug shrunk twice (here, or from another group):
                // one finding.
                if let Some(same) = findings
                    .iter()
                    .position(|f| f.shrunk.is_some() && f.signature == finding.signature)
                {
                    if let Some(dup) = &finding.shrunk {
                        let _ = std::fs::remove_file(&dup.file);
                    }
                    if !mine.contains(&same) {
                        mine.push(same);
                    }
                    continue;
                }
            }
            mine.push(findings.len());
            findings.push(finding);
        }
        if mine.is_empty() {
            // Nothing kept a record (or nothing could be shrunk): the
            // first failure stands for the group.
            let f = &failures[0];
            mine.push(findings.len());
            findings.push(Finding {
                signature: f.signature.clone(),
                runs: Vec::new(),
                first_after_s: f.after_s,
                scenario: f.file.clone(),
                seed: f.seed,
                evidence: f.evidence.clone(),
                shrunk: None,
                shrink_error: None,
            });
        }
        // Each failing run counts for the first finding whose faults it has.
        for f in failures {
            let at = mine
                .iter()
                .copied()
                .find(|&i| kinds_within(&findings[i].signature.faults, &f.signature.faults))
                .unwrap_or(mine[0]);
            findings[at].runs.push(f.index);
            findings[at].first_after_s = findings[at].first_after_s.min(f.after_s);
        }
    }
    let mut error_reasons: Vec<(String, u64)> = reasons.into_iter().collect();
    error_reasons.sort_by_key(|r| std::cmp::Reverse(r.1));
    error_reasons.truncate(5);
    let mut unapplied_reasons: Vec<(String, u64)> = idle_reasons.into_iter().collect();
    unapplied_reasons.sort_by_key(|r| std::cmp::Reverse(r.1));
    unapplied_reasons.truncate(8);
    let exploration = Exploration {
        seed: opts.seed,
        base: opts.base.label(),
        implementation: opts.implementation.name().to_string(),
        shard: (shard + 1, shards),
        runs: done,
        skipped,
        unapplied: idle,
        unapplied_reasons,
        errors,
        error_reasons,
        explore_s,
        runs_per_minute: if explore_s > 0.0 {
            done as f64 * 60.0 / explore_s
        } else {
            0.0
        },
        shrink_s: shrink_started.elapsed().as_secs_f64(),
        jobs: opts.jobs,
        findings,
    };
    let json = serde_json::to_string_pretty(&exploration).unwrap_or_default();
    std::fs::write(opts.out.join("report.json"), json)?;
    Ok(exploration)
}

/// Whether a run's error only says that a drawn fault did not apply.
fn unapplied(e: &str) -> bool {
    e.ends_with(" never ran") || e.contains("never fired")
}

/// A reason's first words, to count alike errors together.
fn first_words(s: &str) -> String {
    let s: String = s
        .chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect();
    s.split_whitespace().take(8).collect::<Vec<_>>().join(" ")
}

/// A file name for a signature: `kazoo-liveness-no-orphans`.
pub fn slug(s: &Signature) -> String {
    // A driver's command line: its program's name, past `env`, its
    // variables, the interpreter and options (`env BUG=x python3
    // /tmp/minilock/driver.py` → `driver`).
    const RUNNERS: [&str; 9] = [
        "env", "python", "python3", "java", "node", "ruby", "sh", "bash", "exec",
    ];
    let imp = s
        .implementation
        .split_whitespace()
        .find(|t| !t.contains('=') && !t.starts_with('-') && !RUNNERS.contains(t))
        .map(|t| {
            let base = t.rsplit('/').next().unwrap_or(t);
            base.split('.').next().unwrap_or(base).to_string()
        })
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "lock".into())
        .to_lowercase();
    let mut out = imp;
    for v in &s.violated {
        out.push('-');
        out.push_str(&v.replace('_', "-"));
    }
    out.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// The exploration as the terminal shows it.
pub fn report(e: &Exploration) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "explored {} runs of {} on {} in {:.0}s ({:.0} runs/min, {} at once, seed {}, shard {}/{}); in {} a drawn fault did not apply; {} errors",
        e.runs,
        e.base,
        e.implementation,
        e.explore_s,
        e.runs_per_minute,
        e.jobs,
        e.seed,
        e.shard.0,
        e.shard.1,
        e.unapplied,
        e.errors,
    );
    if let Some(why) = &e.skipped {
        let _ = writeln!(
            out,
            "stopped: {} cannot run these scenarios: {why}",
            e.implementation
        );
    }
    for (reason, n) in &e.error_reasons {
        let _ = writeln!(out, "  {n:>5} × {reason}");
    }
    if e.findings.is_empty() {
        let _ = writeln!(out, "no findings");
        return out;
    }
    let _ = writeln!(out, "{} findings:", e.findings.len());
    for (n, f) in e.findings.iter().enumerate() {
        let _ = writeln!(out, "\n{}. {}", n + 1, f.signature);
        let _ = writeln!(
            out,
            "   {} runs; first after {:.1}s ({})",
            f.runs.len(),
            f.first_after_s,
            f.scenario.display()
        );
        if !f.evidence.is_empty() {
            let _ = writeln!(out, "   {}", f.evidence);
        }
        match (&f.shrunk, &f.shrink_error) {
            (Some(s), _) => {
                let _ = writeln!(
                    out,
                    "   shrunk to {} steps, {} clients: {}",
                    s.steps,
                    s.clients,
                    s.file.display()
                );
                let _ = writeln!(
                    out,
                    "   reproduces {}/{} ({:.0}%); replay: {}",
                    s.reproduced,
                    s.runs,
                    s.rate() * 100.0,
                    s.replay
                );
            }
            (None, Some(e)) => {
                let _ = writeln!(out, "   not shrunk: {e}");
            }
            (None, None) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{slug, Signature};

    fn named(implementation: &str) -> String {
        slug(&Signature {
            implementation: implementation.into(),
            violated: vec!["mutual_exclusion".into()],
            faults: vec![],
        })
    }

    #[test]
    fn a_finding_is_named_after_its_program() {
        assert_eq!(named("kazoo"), "kazoo-mutual-exclusion");
        assert_eq!(
            named("env MY_BUG=x python3 /tmp/minilock/driver.py --fast"),
            "driver-mutual-exclusion"
        );
        assert_eq!(named("./my-driver"), "my-driver-mutual-exclusion");
        assert_eq!(named(""), "lock-mutual-exclusion");
    }
}
