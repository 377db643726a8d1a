//! `harness shrink`: cuts a failing run down to a minimal scenario that
//! still fails, and writes it as a file `harness run` plays.
//!
//! 1. Delta debugging (ddmin) over the fault steps; a fault with an end
//!    (partition and heal, kill and restart, lag and catch-up) is one unit.
//! 2. Then the workload, greedily: fewer groups, fewer clients, fewer
//!    rounds, shorter holds, no start delays, fewer options.
//! 3. Each step still triggered by a time is re-anchored to the last event
//!    before it in a failing run's record (a client came to hold or to
//!    wait), when that makes the scenario fail at least as often: event
//!    anchors are what make a race replay.
//! 4. A scenario that still fails only sometimes gets variants that open
//!    its race wider (a group that starts later, a longer hold, a step's
//!    delay after its event changed), kept when they fail more often.
//!
//! A candidate still fails if one of `tries` runs violates one of the
//! invariants the original run violated. The result's reproduction rate is
//! then measured over `rate_runs` runs and written into the file's
//! description, with `expect` listing the violated invariants.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::stream::{FuturesUnordered, StreamExt};
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::draft::{action_of, dur, last_before_wrap, ms, Draft};
use crate::implementation::Implementation;
use crate::journal::Event;
use crate::record::RunRecord;
use crate::target::TargetSpec;

/// How shrinking judges candidates.
#[derive(Debug, Clone)]
pub struct ShrinkOptions {
    /// The implementation under test.
    pub implementation: Implementation,
    /// Where.
    pub target: TargetSpec,
    /// A candidate still fails if one of this many runs fails (default 5).
    pub tries: usize,
    /// Runs at once.
    pub jobs: usize,
    /// Runs measuring the result's reproduction rate (default 20).
    pub rate_runs: usize,
    /// Stop shrinking after this long and keep the smallest failing
    /// candidate so far.
    pub budget: Option<Duration>,
    /// Driver processes kept between runs (drivers that offer `reuse`).
    pub pool: Option<Arc<crate::implementation::HostPool>>,
}

/// What to shrink.
#[derive(Debug, Clone)]
pub struct Job {
    /// The failing scenario.
    pub draft: Draft,
    /// The seed it failed with.
    pub seed: u64,
    /// The invariants it violated: a candidate must violate one of them.
    pub violated: BTreeSet<String>,
    /// Its record, for re-anchoring (else the first failing candidate's).
    pub record: Option<RunRecord>,
    /// How it was found (`source:` of the written file), if by `explore`.
    pub found_by: Option<String>,
    /// Where to write the shrunk scenario.
    pub out: PathBuf,
}

/// A shrunk scenario.
#[derive(Debug, Clone, Serialize)]
pub struct Shrunk {
    /// Where it was written.
    pub file: PathBuf,
    /// Its fault steps.
    pub steps: usize,
    /// Its clients.
    pub clients: usize,
    /// The original's fault steps.
    pub original_steps: usize,
    /// The original's clients.
    pub original_clients: usize,
    /// The invariants it is expected to violate.
    pub violated: Vec<String>,
    /// Its fault kinds (as in a finding's signature).
    pub fault_kinds: Vec<String>,
    /// Runs measuring its reproduction rate.
    pub runs: usize,
    /// Of those, the runs that violated every expected invariant.
    pub reproduced: usize,
    /// The command that plays it.
    pub replay: String,
    /// Runs spent shrinking.
    pub runs_used: usize,
    /// Seconds spent shrinking.
    pub seconds: f64,
}

impl Shrunk {
    /// `reproduced / runs`.
    pub fn rate(&self) -> f64 {
        if self.runs == 0 {
            0.0
        } else {
            self.reproduced as f64 / self.runs as f64
        }
    }
}

/// Why a run could not be shrunk.
#[derive(Debug, thiserror::Error)]
pub enum ShrinkError {
    /// The original does not fail any more.
    #[error("the scenario did not fail again in {0} runs: nothing to shrink (a finding that shows this rarely needs its race forced by hand: see the `hold` step)")]
    NoLongerFails(usize),
    /// The scenario cannot be used.
    #[error("{0}")]
    Draft(String),
    /// The result could not be written.
    #[error("writing {0}: {1}")]
    Io(PathBuf, std::io::Error),
}

/// What the runs of one candidate showed.
#[derive(Debug, Default)]
struct Trial {
    /// Runs that violated one of the original's invariants.
    failed: usize,
    /// Each run's violated invariants.
    violated: Vec<BTreeSet<String>>,
    /// A failing run's record.
    record: Option<RunRecord>,
}

struct Tester<'a> {
    opts: &'a ShrinkOptions,
    violated: &'a BTreeSet<String>,
    seed: u64,
    file: PathBuf,
    used: &'a AtomicUsize,
    runs: AtomicUsize,
}

impl Tester<'_> {
    /// Plays `d` `n` times (seeds from `salt`), `jobs` at a time.
    /// Of `d`'s [`boost_candidates`], the one that fails most often over
    /// `n` runs, if any fails more than `base` of them; stops early once one
    /// fails every run, or when time is out.
    async fn best_variant(
        &self,
        d: &Draft,
        n: usize,
        salt: u64,
        mut base: usize,
        out_of_time: &dyn Fn() -> bool,
    ) -> Option<(Draft, Trial)> {
        let mut best = None;
        for c in boost_candidates(d) {
            if out_of_time() || base >= n {
                break;
            }
            let t = self.trial(&c, n, salt).await;
            if t.failed > base {
                base = t.failed;
                best = Some((c, t));
            }
        }
        best
    }

    async fn trial(&self, d: &Draft, n: usize, salt: u64) -> Trial {
        let mut trial = Trial::default();
        if d.load(&self.file).is_err() {
            return trial;
        }
        let d = Arc::new(d.clone());
        let mut pending = FuturesUnordered::new();
        let mut next = 0;
        loop {
            while pending.len() < self.opts.jobs.max(1) && next < n {
                let seed = self.seed.wrapping_add(salt).wrapping_add(next as u64);
                next += 1;
                let (d, file) = (d.clone(), self.file.clone());
                let (imp, target) = (self.opts.implementation.clone(), self.opts.target.clone());
                let pool = self.opts.pool.clone();
                pending.push(tokio::spawn(async move {
                    super::play(&d, &file, seed, &imp, &target, pool.as_ref()).await
                }));
            }
            let Some(r) = pending.next().await else { break };
            self.used.fetch_add(1, Ordering::Relaxed);
            self.runs.fetch_add(1, Ordering::Relaxed);
            let Ok(Ok(o)) = r else { continue };
            let v: BTreeSet<String> = o.violated().into_iter().map(String::from).collect();
            if v.iter().any(|x| self.violated.contains(x)) {
                trial.failed += 1;
                if trial.record.is_none() {
                    trial.record = o.record.map(|r| *r);
                }
            }
            trial.violated.push(v);
        }
        trial
    }

    async fn fails(&self, d: &Draft) -> Option<Trial> {
        let t = self.trial(d, self.opts.tries, 0).await;
        (t.failed > 0).then_some(t)
    }
}

/// Steps that belong together: a fault and its end.
fn units(d: &Draft) -> Vec<Vec<usize>> {
    let mut taken = vec![false; d.timeline.len()];
    let mut out = Vec::new();
    for i in 0..d.timeline.len() {
        if taken[i] {
            continue;
        }
        taken[i] = true;
        let mut unit = vec![i];
        let step = &d.timeline[i];
        let action = action_of(step);
        let end = match action {
            "kill_server" => Some("restart_server"),
            "partition_server" => Some("heal_server"),
            "lag" => Some("lag"),
            _ => None,
        };
        if let Some(end) = end {
            let server = match step.get(action) {
                Some(Value::Object(l)) => l.get("server").cloned(),
                other => other.cloned(),
            };
            let is_end = |s: &Map<String, Value>| match s.get(end) {
                Some(Value::Object(l)) if end == "lag" => {
                    l.get("server") == server.as_ref()
                        && !l.contains_key("txns")
                        && !l.contains_key("time")
                }
                Some(v) if end != "lag" => Some(v) == server.as_ref(),
                _ => false,
            };
            if let Some(j) =
                (i + 1..d.timeline.len()).find(|&j| !taken[j] && is_end(&d.timeline[j]))
            {
                taken[j] = true;
                unit.push(j);
            }
        }
        out.push(unit);
    }
    out
}

fn with_units(d: &Draft, all: &[Vec<usize>], keep: &[usize]) -> Draft {
    let mut idx: Vec<usize> = keep.iter().flat_map(|&u| all[u].clone()).collect();
    idx.sort_unstable();
    let mut c = d.clone();
    c.timeline = idx.into_iter().map(|i| d.timeline[i].clone()).collect();
    c
}

/// Shrinks a failing scenario and writes the result to `job.out`.
pub async fn shrink(
    job: Job,
    opts: &ShrinkOptions,
    used: &AtomicUsize,
) -> Result<Shrunk, ShrinkError> {
    let started = Instant::now();
    let stem = job
        .out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "shrunk".into());
    let mut best = job.draft.clone();
    best.name = Some(stem.clone());
    let original_steps = job.draft.timeline.len();
    let original_clients = job.draft.client_count();
    let tester = Tester {
        opts,
        violated: &job.violated,
        seed: job.seed,
        file: job.out.clone(),
        used,
        runs: AtomicUsize::new(0),
    };
    best.load(&job.out)
        .map_err(|e| ShrinkError::Draft(e.to_string()))?;
    let out_of_time = || opts.budget.is_some_and(|b| started.elapsed() >= b);
    let Some(mut trial) = tester.fails(&best).await else {
        return Err(ShrinkError::NoLongerFails(opts.tries));
    };
    let mut record = job.record.clone().or(trial.record.take());

    // 1. ddmin over the fault steps.
    let mut no_faults = best.clone();
    no_faults.timeline.clear();
    if !best.timeline.is_empty() {
        if let Some(t) = tester.fails(&no_faults).await {
            best = no_faults;
            record = t.record.or(record);
        }
    }
    let all = units(&best);
    let mut keep: Vec<usize> = (0..all.len()).collect();
    let mut n = 2usize;
    while keep.len() >= 2 && !out_of_time() {
        let chunk = keep.len().div_ceil(n);
        let parts: Vec<Vec<usize>> = keep.chunks(chunk).map(<[usize]>::to_vec).collect();
        let mut reduced = false;
        for part in &parts {
            let c = with_units(&best, &all, part);
            if let Some(t) = tester.fails(&c).await {
                keep = part.clone();
                n = 2;
                reduced = true;
                record = t.record.or(record);
                break;
            }
        }
        if !reduced && parts.len() > 2 {
            for i in 0..parts.len() {
                let rest: Vec<usize> = parts
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .flat_map(|(_, p)| p.clone())
                    .collect();
                let c = with_units(&best, &all, &rest);
                if let Some(t) = tester.fails(&c).await {
                    keep = rest;
                    n = (n - 1).max(2);
                    reduced = true;
                    record = t.record.or(record);
                    break;
                }
            }
        }
        if !reduced {
            if n >= keep.len() {
                break;
            }
            n = (n * 2).min(keep.len());
        }
    }
    if keep.len() == 1 && all.len() > 1 {
        // ddmin stops at one unit; it may be all that is needed already.
    }
    best = with_units(&best, &all, &keep);

    // 2. The workload, greedily, until nothing more goes.
    loop {
        if out_of_time() {
            break;
        }
        let mut changed = false;
        for c in workload_candidates(&best) {
            if out_of_time() {
                break;
            }
            if let Some(t) = tester.fails(&c).await {
                best = c;
                record = t.record.or(record);
                changed = true;
                break;
            }
        }
        if !changed {
            break;
        }
    }

    // 3. Re-anchor time-triggered steps to the events before them.
    let mut current = tester.trial(&best, opts.tries, 0).await;
    if let Some(r) = current.record.take() {
        record = Some(r);
    }
    for i in 0..best.timeline.len() {
        if out_of_time() {
            break;
        }
        let Some(r) = &record else { break };
        let Some(c) = reanchored(&best, i, r) else {
            continue;
        };
        let t = tester.trial(&c, opts.tries, 0).await;
        if t.failed > 0 && t.failed >= current.failed {
            best = c;
            if t.record.is_some() {
                record = t.record.clone();
            }
            current = t;
        }
    }

    // 4. A scenario that fails only sometimes: try what makes the race it
    //    shows come more often — a group that starts later (the others
    //    queue first), a longer hold (the window stays open longer), a
    //    step's delay after its event halved or doubled — and keep a change
    //    when it fails more often.
    let boost_runs = (opts.tries * 2).max(10);
    let mut base = tester.trial(&best, boost_runs, 500).await.failed;
    for _ in 0..4 {
        let Some((c, t)) = tester
            .best_variant(&best, boost_runs, 500, base, &out_of_time)
            .await
        else {
            break;
        };
        best = c;
        base = t.failed;
        if t.record.is_some() {
            record = t.record;
        }
    }

    // 5. Margins: a hold at the edge of the window its failure needs is
    //    made longer (see `with_margins`).
    let tr = &tester;
    let (c, r) = with_margins(best, |c| async move { tr.fails(&c).await }, &out_of_time).await;
    best = c;
    if r.is_some() {
        record = r;
    }

    // The reproduction rate. Under 19 of 20, and with time left, boost once
    // more, judging each candidate over as many runs as the rate (ten runs
    // that all failed by luck stopped the first pass too soon), and measure
    // again.
    let mut rate = tester.trial(&best, opts.rate_runs, 1000).await;
    if rate.failed * 20 < opts.rate_runs * 19 && !out_of_time() {
        if let Some((c, t)) = tester
            .best_variant(&best, opts.rate_runs, 1000, rate.failed, &out_of_time)
            .await
        {
            best = c;
            if t.record.is_some() {
                record = t.record;
            }
            // A later start may have brought a hold to its edge again.
            let (c, r) =
                with_margins(best, |c| async move { tr.fails(&c).await }, &out_of_time).await;
            best = c;
            if r.is_some() {
                record = r;
            }
            // Measured afresh: the best of several trials flatters itself.
            rate = tester.trial(&best, opts.rate_runs, 1000).await;
        }
    }
    let expect = expected(&rate.violated, &job.violated);
    let reproduced = rate
        .violated
        .iter()
        .filter(|v| expect.iter().all(|e| v.contains(e)))
        .count();
    let runs = rate.violated.len();
    best.expect = Some({
        let mut m = Map::new();
        m.insert("violated".into(), json!(expect));
        if !best.lock.contains_key("recipe") {
            // A finding of one implementation: the others must pass.
            m.insert(
                "implementations".into(),
                json!([opts.implementation.name()]),
            );
        }
        m
    });
    best.description = describe(
        &best,
        record.as_ref(),
        &expect,
        &opts.implementation,
        reproduced,
        runs,
    );
    best.source = Some(match &job.found_by {
        Some(how) => format!("found by {how}, shrunk by harness shrink"),
        None => "shrunk by harness shrink".into(),
    });
    let text = best
        .to_yaml()
        .map_err(|e| ShrinkError::Draft(e.to_string()))?;
    if let Some(dir) = job.out.parent() {
        std::fs::create_dir_all(dir).map_err(|e| ShrinkError::Io(dir.to_path_buf(), e))?;
    }
    std::fs::write(&job.out, text).map_err(|e| ShrinkError::Io(job.out.clone(), e))?;
    let imp = match &opts.implementation {
        Implementation::ZkLock => String::new(),
        other => format!(" --implementation {}", other.arg()),
    };
    Ok(Shrunk {
        file: job.out.clone(),
        steps: best.timeline.len(),
        clients: best.client_count(),
        original_steps,
        original_clients,
        violated: expect,
        fault_kinds: best.fault_kinds(),
        runs,
        reproduced,
        replay: format!(
            "cargo run --release -p harness -- run {} --repeat {runs}{imp}",
            job.out.display()
        ),
        runs_used: tester.runs.load(Ordering::Relaxed),
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The invariants to expect: of those the original violated, the ones the
/// measuring runs violated most often.
fn expected(runs: &[BTreeSet<String>], original: &BTreeSet<String>) -> Vec<String> {
    let count = |inv: &String| runs.iter().filter(|v| v.contains(inv)).count();
    let most = original.iter().map(count).max().unwrap_or(0);
    if most == 0 {
        return original.iter().cloned().collect();
    }
    original
        .iter()
        .filter(|i| count(i) == most)
        .cloned()
        .collect()
}

/// Whether a timeline step names group `g` or one of its members (`named`:
/// the draft's `names_in_timeline`).
fn step_names_group(d: &Draft, g: usize, named: &[String]) -> bool {
    let name = d.clients[g]
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let members = d.members(g);
    named.iter().any(|x| x == name || members.contains(x))
}

/// Smaller workloads to try, simplest cut first.
fn workload_candidates(d: &Draft) -> Vec<Draft> {
    let mut out = Vec::new();
    let named = d.names_in_timeline();
    // Drop a group no step names.
    if d.clients.len() > 1 {
        for g in (0..d.clients.len()).rev() {
            if step_names_group(d, g, &named) {
                continue;
            }
            let mut c = d.clone();
            c.clients.remove(g);
            out.push(c);
        }
    }
    // Fewer clients in a group, fewer rounds.
    for g in 0..d.clients.len() {
        for key in ["count", "rounds"] {
            let v = d.clients[g].get(key).and_then(Value::as_u64).unwrap_or(1);
            if v > 1 {
                let mut c = d.clone();
                if v / 2 <= 1 {
                    c.clients[g].remove(key);
                } else {
                    c.clients[g].insert(key.into(), json!(v / 2));
                }
                out.push(c);
                if v > 2 {
                    let mut c = d.clone();
                    c.clients[g].insert(key.into(), json!(v - 1));
                    out.push(c);
                }
            }
        }
    }
    // Options a group may not need.
    for g in 0..d.clients.len() {
        for key in ["start", "on_expiry", "acquire_timeout", "try"] {
            if d.clients[g].contains_key(key) {
                let mut c = d.clone();
                c.clients[g].remove(key);
                out.push(c);
            }
        }
    }
    // Shorter holds.
    for g in 0..d.clients.len() {
        if let Some(h) = d.clients[g].get("hold").and_then(dur) {
            if h >= Duration::from_millis(40) {
                let mut c = d.clone();
                c.clients[g].insert("hold".into(), ms(round10(h / 2)));
                out.push(c);
            }
        }
    }
    // Steps' extras.
    for i in 0..d.timeline.len() {
        if d.timeline[i].contains_key("after") {
            let mut c = d.clone();
            c.timeline[i].remove("after");
            out.push(c);
        }
        let action = action_of(&d.timeline[i]).to_string();
        if let Some(Value::Object(spec)) = d.timeline[i].get(&action) {
            if spec.contains_key("times") {
                let mut c = d.clone();
                if let Some(Value::Object(s)) = c.timeline[i].get_mut(&action) {
                    s.remove("times");
                }
                out.push(c);
            }
        }
    }
    if let Some(server) = &d.server {
        for key in ["expiry_cleanup_delay", "sequence_start"] {
            if server.contains_key(key) {
                let mut c = d.clone();
                if let Some(s) = c.server.as_mut() {
                    s.remove(key);
                }
                out.push(c);
            }
        }
        // A counter that starts right at the wrap's last number needs the
        // fewest acquisitions to cross it: fewer clients or rounds may do.
        if let Some(start) = d.sequence_start() {
            let last = last_before_wrap(start);
            if start != last {
                let mut c = d.clone();
                if let Some(s) = c.server.as_mut() {
                    s.insert("sequence_start".into(), Value::from(last));
                }
                out.push(c);
            }
        }
    }
    out
}

/// Variants that may make a sometimes-failing scenario fail more often.
fn boost_candidates(d: &Draft) -> Vec<Draft> {
    let mut out = Vec::new();
    for g in 0..d.clients.len() {
        let start = d.clients[g].get("start").and_then(dur).unwrap_or_default();
        let mut c = d.clone();
        let later = if start.is_zero() {
            Duration::from_millis(50)
        } else {
            start * 2
        };
        if later <= Duration::from_secs(2) {
            c.clients[g].insert("start".into(), ms(later));
            out.push(c);
        }
    }
    for g in 0..d.clients.len() {
        if let Some(h) = d.clients[g].get("hold").and_then(dur) {
            if h <= Duration::from_secs(1) {
                let mut c = d.clone();
                c.clients[g].insert("hold".into(), ms(round10(h * 2)));
                out.push(c);
            }
        }
    }
    // More chances: a race that each contender or round wins only now and
    // then (a random node name, an interleaving) comes more often with more
    // of them. Groups that steps name keep their members' names.
    let named = d.names_in_timeline();
    for g in 0..d.clients.len() {
        let count = d.clients[g]
            .get("count")
            .and_then(Value::as_u64)
            .unwrap_or(1);
        if count < 8 && !step_names_group(d, g, &named) {
            let mut c = d.clone();
            c.clients[g].insert("count".into(), json!((count * 2).clamp(4, 8)));
            out.push(c);
        }
        let rounds = d.clients[g]
            .get("rounds")
            .and_then(Value::as_u64)
            .unwrap_or(1);
        if rounds < 4 {
            let mut c = d.clone();
            c.clients[g].insert("rounds".into(), json!((rounds * 2).min(4)));
            out.push(c);
        }
    }
    for g in 0..d.clients.len() {
        // A timed acquire that gives up sooner, or later, than the holder
        // lets go.
        if let Some(t) = d.clients[g].get("acquire_timeout").and_then(dur) {
            for u in [t / 2, t * 2] {
                let u = round10(u);
                if !u.is_zero() && u <= Duration::from_secs(2) {
                    let mut c = d.clone();
                    c.clients[g].insert("acquire_timeout".into(), ms(u));
                    out.push(c);
                }
            }
        }
    }
    for i in 0..d.timeline.len() {
        let step = &d.timeline[i];
        if let Some(a) = step.get("after").and_then(dur) {
            // Right at its event, or sooner or later after it.
            for b in [Duration::ZERO, a / 2, a * 2] {
                let b = round10(b);
                if b != a {
                    let mut c = d.clone();
                    if b.is_zero() {
                        c.timeline[i].remove("after");
                    } else {
                        c.timeline[i].insert("after".into(), ms(b));
                    }
                    out.push(c);
                }
            }
        }
        if let Some(a) = step.get("at").and_then(dur) {
            // From the start (a request fault is then in place before the
            // first request), or sooner.
            for b in [Duration::ZERO, a / 2] {
                let b = round10(b);
                if b != a {
                    let mut c = d.clone();
                    c.timeline[i].insert("at".into(), ms(b));
                    out.push(c);
                }
            }
        }
        // A stall or a delay that lasts longer; a request fault that hits
        // more requests.
        for key in ["stall", "delay"] {
            if let Some(f) = step
                .get(key)
                .and_then(|v| v.get("for"))
                .and_then(dur)
                .filter(|f| *f <= Duration::from_secs(5))
            {
                // Twice as long, and a quarter longer: a delay that must
                // outlast the client's patience but not its session.
                for longer in [f * 2, f * 5 / 4] {
                    let mut c = d.clone();
                    if let Some(Value::Object(m)) = c.timeline[i].get_mut(key) {
                        m.insert("for".into(), ms(round10(longer)));
                    }
                    out.push(c);
                }
            }
        }
        // A delay at its extreme: the reply never comes (a delay that
        // outlasts the client's patience is, to it, a lost reply; how long
        // that patience is depends on the machine's load).
        if let Some(Value::Object(spec)) = step.get("delay") {
            let mut lost = spec.clone();
            lost.remove("for");
            let mut c = d.clone();
            c.timeline[i].remove("delay");
            c.timeline[i].insert("lose_reply".into(), Value::Object(lost));
            out.push(c);
        }
        for key in ["lose_reply", "drop_request", "fail", "delay"] {
            if let Some(Value::Object(spec)) = step.get(key) {
                let times = spec.get("times").and_then(Value::as_u64).unwrap_or(1);
                if times < 3 {
                    let mut c = d.clone();
                    if let Some(Value::Object(m)) = c.timeline[i].get_mut(key) {
                        m.insert("times".into(), json!(times + 1));
                    }
                    out.push(c);
                }
            }
        }
    }
    out
}

/// Halving a hold stops at the edge of the window the failure needs: a
/// hold that ends 10 ms after another group starts fails every run on a
/// quiet machine and passes on a loaded one, where a client's steps come
/// later. So each group's hold whose scenario no longer fails once the hold
/// is a [`margin`] shorter is doubled, up to three times, while the longer
/// hold still fails. `fails` plays a candidate; the record is the last
/// failing run's of a kept change.
async fn with_margins<F, Fut>(
    mut best: Draft,
    mut fails: F,
    out_of_time: &dyn Fn() -> bool,
) -> (Draft, Option<RunRecord>)
where
    F: FnMut(Draft) -> Fut,
    Fut: std::future::Future<Output = Option<Trial>>,
{
    let mut record = None;
    for g in 0..best.clients.len() {
        let Some(mut h) = best.clients[g].get("hold").and_then(dur) else {
            continue;
        };
        for _ in 0..3 {
            if out_of_time() {
                return (best, record);
            }
            if fails(with_hold(&best, g, h.saturating_sub(margin(h))))
                .await
                .is_some()
            {
                break;
            }
            let longer = round10(h * 2).max(Duration::from_millis(10));
            if longer > MARGIN_HOLD_CAP {
                break;
            }
            let c = with_hold(&best, g, longer);
            let Some(t) = fails(c.clone()).await else {
                break;
            };
            best = c;
            h = longer;
            if t.record.is_some() {
                record = t.record;
            }
        }
    }
    (best, record)
}

/// How much shorter a shrunk hold must be able to be and still fail: a
/// quarter of it, and at least 30 ms (more than a loaded machine has been
/// seen to shift one client's steps against another's).
fn margin(hold: Duration) -> Duration {
    (hold / 4).max(Duration::from_millis(30))
}

/// The longest hold the margins step makes.
const MARGIN_HOLD_CAP: Duration = Duration::from_secs(5);

/// `d` with group `g`'s hold set to `h`.
fn with_hold(d: &Draft, g: usize, h: Duration) -> Draft {
    let mut c = d.clone();
    c.clients[g].insert("hold".into(), ms(h));
    c
}

fn round10(d: Duration) -> Duration {
    Duration::from_millis(d.as_millis() as u64 / 10 * 10)
}

/// Step `i` triggered by the last client event before it in `record`
/// instead of by its time, or `None` if it has no time or nothing came
/// before it.
fn reanchored(d: &Draft, i: usize, record: &RunRecord) -> Option<Draft> {
    let step = &d.timeline[i];
    if !step.contains_key("at") {
        return None;
    }
    // The fault record of this step (its number in the candidate the
    // record ran is the same: steps before it keep their order).
    let f = record.faults.iter().find(|f| f.step == i + 1)?;
    let t = Duration::from_secs_f64(f.t_ms / 1000.0);
    let members: BTreeSet<String> = (0..d.clients.len()).flat_map(|g| d.members(g)).collect();
    let (at, on) = record
        .journal
        .iter()
        .rev()
        .filter(|e| e.t <= t && members.contains(&e.client))
        .find_map(|e| match &e.event {
            Event::Acquired { .. } => Some((e.t, json!({"holds": e.client}))),
            Event::Waiting { .. } => Some((e.t, json!({"waiting": e.client}))),
            _ => None,
        })?;
    let mut c = d.clone();
    let s = &mut c.timeline[i];
    let extra = s.get("after").and_then(dur).unwrap_or_default();
    s.remove("at");
    s.remove("after");
    let mut ordered = Map::new();
    ordered.insert("on".into(), on);
    let after = round10(t - at + extra);
    if !after.is_zero() {
        ordered.insert("after".into(), ms(after));
    }
    for (k, v) in std::mem::take(s) {
        ordered.insert(k, v);
    }
    *s = ordered;
    Some(c)
}

/// The written scenario's description, in the record's words.
fn describe(
    d: &Draft,
    record: Option<&RunRecord>,
    expect: &[String],
    implementation: &Implementation,
    reproduced: usize,
    runs: usize,
) -> String {
    let lock = d
        .lock
        .get("recipe")
        .or_else(|| d.lock.get("kind"))
        .and_then(Value::as_str)
        .unwrap_or("exclusive");
    let who = record
        .map(|r| r.implementation.clone())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| implementation.name().to_string());
    let mut text = format!(
        "{} client{} of a{} {lock} lock ({who})",
        d.client_count(),
        if d.client_count() == 1 { "" } else { "s" },
        if lock.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "n"
        } else {
            ""
        },
    );
    if let Some(start) = d.sequence_start() {
        text.push_str(&format!(
            ", the lock directory's sequence counter starting at {start} (near its wrap)"
        ));
    }
    if d.timeline.is_empty() {
        text.push_str(", with no faults");
    } else {
        text.push_str(". ");
        let steps: Vec<String> = d.timeline.iter().map(describe_step).collect();
        text.push_str(&capitalize(&steps.join("; then ")));
    }
    text.push_str(&format!(". Violated: {}.", expect.join(", ")));
    if let Some(r) = record {
        let o = crate::check::outcome(r);
        let ev = super::evidence(&o);
        if !ev.is_empty() {
            text.push_str(&format!(" In a failing run: {ev}."));
        }
    }
    text.push_str(&format!(
        " Reproduced in {reproduced} of {runs} runs when shrunk."
    ));
    wrap(&text, 76)
}

fn describe_step(s: &Map<String, Value>) -> String {
    let action = action_of(s);
    let arg = match s.get(action) {
        Some(Value::String(x)) => x.clone(),
        // A request fault: "c0's delete with ThrottledOp".
        Some(Value::Object(m)) if m.contains_key("op") => {
            let str_of = |k: &str| m.get(k).and_then(Value::as_str);
            let mut a = match str_of("client") {
                Some(c) => format!("{c}'s {}", str_of("op").unwrap_or("?")),
                None => str_of("op").unwrap_or("?").to_string(),
            };
            if let Some(n) = m.get("times").and_then(Value::as_u64) {
                a.push_str(&format!(" ({n} times)"));
            }
            if let Some(code) = str_of("code") {
                a.push_str(&format!(" with {code}"));
            }
            if let Some(d) = str_of("for") {
                a.push_str(&format!(" for {d}"));
            }
            a
        }
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(x) => format!("{k} {x}"),
                other => format!("{k} {other}"),
            })
            .collect::<Vec<_>>()
            .join(", "),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let when = if let Some(at) = s.get("at").and_then(Value::as_str) {
        format!("at {at}")
    } else if let Some(Value::Object(on)) = s.get("on") {
        let (k, v) = on
            .iter()
            .next()
            .map(|(k, v)| (k.clone(), v.clone()))
            .unwrap_or_default();
        let v = v
            .as_str()
            .map(String::from)
            .unwrap_or_else(|| v.to_string());
        match k.as_str() {
            "holds" => format!("once {v} holds the lock"),
            "waiting" => format!("once {v} waits"),
            "acquisitions" if v == "1" => "after the first acquisition".to_string(),
            "acquisitions" => format!("after {v} acquisitions"),
            _ => format!("on {k} {v}"),
        }
    } else {
        String::new()
    };
    let after = s
        .get("after")
        .and_then(Value::as_str)
        .map(|a| format!(" and {a}"))
        .unwrap_or_default();
    format!("{when}{after}, {} {arg}", action.replace('_', " "))
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// Reads the first record of a record file and its scenario, for `harness
/// shrink RECORD`.
pub fn job_from_record(
    records: &Path,
    index: usize,
    out: Option<PathBuf>,
) -> Result<(Job, RunRecord), String> {
    let all = RunRecord::read_all(records).map_err(|e| e.to_string())?;
    let r = all.get(index).cloned().ok_or_else(|| {
        format!(
            "{}: no record {index} (it has {})",
            records.display(),
            all.len()
        )
    })?;
    let file = PathBuf::from(&r.file);
    let text = std::fs::read_to_string(&file)
        .map_err(|e| format!("{}: the record's scenario: {e}", file.display()))?;
    let draft = Draft::parse(&file, &text).map_err(|e| e.to_string())?;
    let o = crate::check::outcome(&r);
    let violated: BTreeSet<String> = o.violated().into_iter().map(String::from).collect();
    if violated.is_empty() {
        return Err(format!(
            "{}: record {index} ({}) violated no invariant: nothing to shrink",
            records.display(),
            r.scenario
        ));
    }
    let out = out.unwrap_or_else(|| {
        let stem = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "scenario".into());
        file.with_file_name(format!("{stem}-shrunk.yaml"))
    });
    Ok((
        Job {
            draft,
            seed: r.seed,
            violated,
            record: Some(r.clone()),
            found_by: None,
            out,
        },
        r,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// c0 holds; c1, starting at 50 ms, must find it holding: the failure
    /// needs c0's hold to outlast c1's start.
    fn two_groups(hold_ms: u64) -> Draft {
        let text = format!(
            "name: margins\nlock:\n  kind: exclusive\nclients:\n- name: c0\n  hold: {hold_ms}ms\n\
             - name: c1\n  start: 50ms\n  hold: 20ms\n  try: true\n"
        );
        Draft::parse(Path::new("margins.yaml"), &text).unwrap()
    }

    fn hold_of(d: &Draft, g: usize) -> Duration {
        d.clients[g].get("hold").and_then(dur).unwrap()
    }

    /// Plays the model: fails while c0's hold is longer than `edge`.
    async fn run_margins(hold_ms: u64, edge: Duration) -> (Draft, Vec<Duration>) {
        let tried = std::sync::Mutex::new(Vec::new());
        let (d, _) = with_margins(
            two_groups(hold_ms),
            |c| {
                let h = hold_of(&c, 0);
                tried.lock().unwrap().push(h);
                async move { (h > edge).then(Trial::default) }
            },
            &|| false,
        )
        .await;
        let tried = tried.into_inner().unwrap();
        (d, tried)
    }

    #[tokio::test]
    async fn a_hold_at_the_edge_of_its_window_is_doubled_until_a_margin_shorter_still_fails() {
        // 60 ms fails, 30 ms does not: 120 ms, whose 90 ms still fails.
        let (d, tried) = run_margins(60, Duration::from_millis(50)).await;
        assert_eq!(
            hold_of(&d, 0),
            Duration::from_millis(120),
            "tried {tried:?}"
        );
        // c1's hold does not matter to the model: it stays as it was.
        assert_eq!(hold_of(&d, 1), Duration::from_millis(20));
    }

    #[tokio::test]
    async fn a_hold_with_room_to_spare_is_left_as_it_is() {
        let (d, tried) = run_margins(200, Duration::from_millis(50)).await;
        assert_eq!(hold_of(&d, 0), Duration::from_millis(200));
        // One probe per group: a margin shorter (150 ms for c0; 0 for c1).
        assert_eq!(tried.len(), 2, "tried {tried:?}");
    }

    #[tokio::test]
    async fn a_longer_hold_that_no_longer_fails_is_not_kept() {
        // Fails only in a narrow band: 60 ms does, 30 and 120 do not.
        let tried = std::sync::Mutex::new(Vec::new());
        let (d, _) = with_margins(
            two_groups(60),
            |c| {
                let h = hold_of(&c, 0);
                tried.lock().unwrap().push(h);
                let fails = h > Duration::from_millis(50) && h < Duration::from_millis(100);
                async move { fails.then(Trial::default) }
            },
            &|| false,
        )
        .await;
        assert_eq!(
            hold_of(&d, 0),
            Duration::from_millis(60),
            "{:?}",
            tried.lock()
        );
    }

    #[test]
    fn the_margin_is_a_quarter_and_at_least_30ms() {
        assert_eq!(margin(Duration::from_millis(60)), Duration::from_millis(30));
        assert_eq!(
            margin(Duration::from_millis(400)),
            Duration::from_millis(100)
        );
    }
}
