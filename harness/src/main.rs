//! `harness run PATH...`: plays scenarios and reports.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use clap::{Parser, Subcommand};
use harness::implementation::Implementation;
use harness::report::{self, Outcome, Status};
use harness::runner::{self, RunOptions};
use harness::scenario;
use harness::target::TargetSpec;

#[derive(Debug, Parser)]
#[command(
    name = "harness",
    version,
    about = "Scripted fault scenarios for ZooKeeper lock code"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Plays scenario files (or every *.yaml under folders).
    Run(RunArgs),
    /// Runs the scenarios on several implementations and prints (and writes
    /// as Markdown, JSON and JUnit) the verdict table, checked against the
    /// expected verdicts if `--expect` is given.
    Matrix(MatrixArgs),
    /// Judges recorded runs again (files written by `run --record`): the
    /// invariants are pure functions of the record.
    Judge {
        /// Record files (one JSON record per line).
        #[arg(required = true)]
        records: Vec<PathBuf>,
        /// Write a JSON report here (`-`: standard output).
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Draws runs (a workload and a schedule of faults), plays many at
    /// once, groups the failures into findings and shrinks each to a
    /// minimal scenario that `harness run` replays.
    Explore(ExploreArgs),
    /// Shrinks a failing run (a record written by `run --record` or
    /// `explore`) to a minimal scenario that still fails, and writes it.
    Shrink(ShrinkArgs),
    /// Parses and validates scenario files without running them.
    Check {
        /// Files or folders.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
}

/// `--jobs` of `run` and `matrix`.
#[derive(Debug, clap::Args)]
struct Jobs {
    /// Runs at once, each with its own embedded server (and driver
    /// process). A run mostly waits, so a few at once finish sooner; one at a
    /// time is the default, the most faithful to a scenario's timings. With
    /// `--target real` the runs share the one server: keep 1.
    #[arg(long = "jobs", default_value_t = 1)]
    count: usize,
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// Files or folders.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// The seed (default: each scenario's own, or random).
    #[arg(long)]
    seed: Option<u64>,
    /// Only scenarios whose name contains this.
    #[arg(long)]
    filter: Option<String>,
    /// Leave out scenarios whose name contains this (repeatable).
    #[arg(long)]
    exclude: Vec<String>,
    /// Play each scenario N times, with a new seed each time.
    #[arg(long, default_value_t = 1)]
    repeat: u32,
    /// `mock` (the embedded zk-mock, default); `real`: Apache ZooKeeper
    /// started from its jars (`ZK_CLASSPATH`, `ZK_JAVA`), one standalone
    /// server for the run and a fresh ensemble for each scenario with
    /// `servers: N`; or HOST:PORT of a running ZooKeeper (ensemble
    /// scenarios are skipped there).
    #[arg(long, default_value = "mock")]
    target: String,
    /// The lock implementation: `zk-lock` (in process, default), `kazoo`,
    /// `curator`, `zk-lock-driver`, or a driver command (harness/DRIVERS.md).
    #[arg(long, default_value = "zk-lock")]
    implementation: String,
    #[command(flatten)]
    jobs: Jobs,
    /// Write a JSON report here (`-`: standard output).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write a JUnit XML report here.
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Write the clients' invoke/ok/fail/info operations here, one JSON
    /// object per line (Jepsen's history form; `-`: standard output).
    #[arg(long)]
    history: Option<PathBuf>,
    /// Write a self-contained HTML report here.
    #[arg(long)]
    html: Option<PathBuf>,
    /// Write every run's record here, one JSON object per line: the
    /// journal, the server's history, faults, markers and crashes, which
    /// `harness judge` judges again.
    #[arg(long)]
    record: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

#[derive(Debug, clap::Args)]
struct ExploreArgs {
    /// Draw workloads for this kind of lock: exclusive, read-write,
    /// semaphore or reentrant (any implementation).
    #[arg(long, conflicts_with_all = ["recipe", "scenario"])]
    kind: Option<String>,
    /// Draw workloads for one of zk-lock's recipes (the broken ones
    /// included; zk-lock and zk-lock-driver only).
    #[arg(long, conflicts_with = "scenario")]
    recipe: Option<String>,
    /// Build on this scenario file: its clients and timeline, plus drawn faults.
    #[arg(long)]
    scenario: Option<PathBuf>,
    /// The lock implementation, as for `run`.
    #[arg(long, default_value = "zk-lock")]
    implementation: String,
    /// Where, as for `run` (drawn runs on a real server share it: use --jobs 1).
    #[arg(long, default_value = "mock")]
    target: String,
    /// Explore this long (`10m`, `90s`); the default is 2m unless --runs is given.
    #[arg(long, value_parser = humantime::parse_duration)]
    budget: Option<std::time::Duration>,
    /// Play this many runs (of this shard).
    #[arg(long)]
    runs: Option<u64>,
    /// The exploration's seed (default random; printed): the same seed
    /// draws the same runs.
    #[arg(long)]
    seed: Option<u64>,
    /// Runs at once (default: 8 per core for zk-lock, 4 per core for a driver).
    #[arg(long)]
    jobs: Option<usize>,
    /// `I/N`: play only shard I (1-based) of N; merge the shards' records
    /// with `harness judge`.
    #[arg(long, default_value = "1/1")]
    shard: String,
    /// Servers in the ensemble: more than 1 adds kill, restart, lag,
    /// partition and election faults.
    #[arg(long, default_value_t = 1)]
    servers: usize,
    /// The most fault steps a run draws.
    #[arg(long, default_value_t = 3)]
    max_steps: usize,
    /// Records, scenarios, shrunk findings and report.json go here.
    #[arg(long, default_value = "target/explore")]
    out: PathBuf,
    /// Do not shrink the findings.
    #[arg(long)]
    no_shrink: bool,
    /// Shrinking: a candidate still fails if one of this many runs fails.
    #[arg(long, default_value_t = 5)]
    tries: usize,
    /// Shrinking: at most this long per finding.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "5m")]
    shrink_budget: std::time::Duration,
    /// Shrinking: start no new shrink after this long in all (default: as
    /// long as the exploration's budget, 2m with --runs); the findings left
    /// are reported with their first failing run.
    #[arg(long, value_parser = humantime::parse_duration)]
    shrink_total: Option<std::time::Duration>,
    /// Exit with success even if there are findings (exploring a library
    /// with known bugs).
    #[arg(long)]
    allow_findings: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

#[derive(Debug, clap::Args)]
struct ShrinkArgs {
    /// A record file (`run --record`, or explore's records.jsonl).
    record: PathBuf,
    /// Which record of the file (0-based).
    #[arg(long, default_value_t = 0)]
    index: usize,
    /// The implementation, as for `run` (default: the one the record's
    /// replay command names).
    #[arg(long)]
    implementation: Option<String>,
    /// Where, as for `run`.
    #[arg(long, default_value = "mock")]
    target: String,
    /// A candidate still fails if one of this many runs fails.
    #[arg(long, default_value_t = 5)]
    tries: usize,
    /// Runs measuring the result's reproduction rate.
    #[arg(long, default_value_t = 20)]
    rate_runs: usize,
    /// Runs at once (default as for explore).
    #[arg(long)]
    jobs: Option<usize>,
    /// Stop shrinking after this long and keep the smallest failing scenario.
    #[arg(long, value_parser = humantime::parse_duration)]
    budget: Option<std::time::Duration>,
    /// Write the shrunk scenario here (default: beside the record's
    /// scenario, `NAME-shrunk.yaml`).
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct MatrixArgs {
    /// Files or folders.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Comma-separated: zk-lock, kazoo, curator, zk-lock-driver, or driver commands.
    #[arg(long, default_value = "zk-lock,kazoo,curator")]
    implementations: String,
    /// The seed (default: each scenario's own, or random).
    #[arg(long)]
    seed: Option<u64>,
    /// Only scenarios whose name contains this.
    #[arg(long)]
    filter: Option<String>,
    /// Leave out scenarios whose name contains this (repeatable).
    #[arg(long)]
    exclude: Vec<String>,
    /// `mock` (the embedded zk-mock, default); `real`: Apache ZooKeeper
    /// started from its jars (`ZK_CLASSPATH`, `ZK_JAVA`), one standalone
    /// server for the run and a fresh ensemble for each scenario with
    /// `servers: N`; or HOST:PORT of a running ZooKeeper (ensemble
    /// scenarios are skipped there).
    #[arg(long, default_value = "mock")]
    target: String,
    #[command(flatten)]
    jobs: Jobs,
    /// Write matrix.md, matrix.json and matrix.xml (JUnit) here.
    #[arg(long, default_value = "target/matrix")]
    out: PathBuf,
    /// The expected verdicts (YAML); a cell that differs fails the run.
    #[arg(long)]
    expect: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// The target, and for `real` the standalone server started for the run
/// (it stops when dropped).
fn parse_target(t: &str) -> Result<(TargetSpec, Option<zk_mock::real::RealZk>), String> {
    if t == "mock" {
        return Ok((TargetSpec::Mock, None));
    }
    if t == "real" {
        let zk = harness::target::real_zookeeper()
            .start()
            .map_err(|e| format!("--target real: {e}"))?;
        return Ok((TargetSpec::RealStarted(zk.addr()), Some(zk)));
    }
    use std::net::ToSocketAddrs;
    t.to_socket_addrs()
        .map_err(|e| format!("--target {t}: {e}"))?
        .next()
        .map(|a| (TargetSpec::Real(a), None))
        .ok_or_else(|| format!("--target {t}: no address, nor `mock` or `real`"))
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new("warn,zookeeper_client=error")
            }),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Check { paths } => check(&paths),
        Command::Judge { records, json } => judge(&records, json.as_deref()),
        Command::Run(args) => run(args),
        Command::Matrix(args) => matrix(args),
        Command::Explore(args) => explore(args),
        Command::Shrink(args) => shrink(args),
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("error: tokio runtime: {e}");
            ExitCode::FAILURE
        })
}

fn parse_shard(s: &str) -> Result<(u64, u64), String> {
    let bad = || format!("--shard {s}: expected I/N with 1 <= I <= N, like 2/4");
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let (i, n): (u64, u64) = (
        i.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if i == 0 || n == 0 || i > n {
        return Err(bad());
    }
    Ok((i - 1, n))
}

/// For a driver, a pool of `jobs` processes started ahead of the runs
/// (drivers that offer reuse serve run after run); none for zk-lock.
fn driver_pool(
    implementation: &Implementation,
    jobs: usize,
) -> Result<Option<Arc<harness::implementation::HostPool>>, String> {
    if !matches!(implementation, Implementation::Driver { .. }) {
        return Ok(None);
    }
    let pool = harness::implementation::HostPool::new(jobs)
        .map_err(|e| format!("starting the driver pool: {e}"))?;
    pool.prestart(implementation);
    Ok(Some(pool))
}

fn explore(args: ExploreArgs) -> ExitCode {
    use harness::explore::{self, Base, ExploreOptions, Vocabulary};
    let fail = |e: String| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    };
    let (target, _real) = match parse_target(&args.target) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let implementation = match Implementation::parse(&args.implementation) {
        Ok(i) => i,
        Err(e) => return fail(e.to_string()),
    };
    let base = match (&args.kind, &args.recipe, &args.scenario) {
        (Some(k), _, _) => match serde_json::from_value(serde_json::Value::String(k.clone())) {
            Ok(kind) => Base::Kind(kind),
            Err(_) => {
                return fail(format!(
                    "--kind {k}: expected exclusive, read-write, semaphore or reentrant"
                ))
            }
        },
        (_, Some(r), _) => match harness::scenario::Recipe::from_name(r) {
            Some(r) => Base::Recipe(r),
            None => {
                let names: Vec<&str> = harness::scenario::Recipe::ALL
                    .iter()
                    .map(|r| r.name())
                    .collect();
                return fail(format!(
                    "--recipe {r}: expected one of {}",
                    names.join(", ")
                ));
            }
        },
        (_, _, Some(file)) => {
            let text = match std::fs::read_to_string(file) {
                Ok(t) => t,
                Err(e) => return fail(format!("{}: {e}", file.display())),
            };
            match explore::Draft::parse(file, &text) {
                Ok(mut d) => {
                    if d.name.is_none() {
                        d.name = file.file_stem().map(|s| s.to_string_lossy().into_owned());
                    }
                    Base::Scenario(Box::new(d))
                }
                Err(e) => return fail(e.to_string()),
            }
        }
        (None, None, None) => Base::Kind(harness::scenario::Kind::Exclusive),
    };
    let shard = match parse_shard(&args.shard) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    if !(1..=15).contains(&args.servers) {
        return fail(format!("--servers {}: 1 to 15", args.servers));
    }
    let seed = args.seed.unwrap_or_else(rand::random);
    let jobs = args
        .jobs
        .unwrap_or_else(|| explore::default_jobs(&implementation))
        .max(1);
    let budget = match (args.budget, args.runs) {
        (None, None) => Some(std::time::Duration::from_secs(120)),
        (b, _) => b,
    };
    let opts = ExploreOptions {
        base,
        vocabulary: Vocabulary {
            servers: args.servers,
            max_steps: args.max_steps.max(1),
            sequence_wraps: matches!(target, TargetSpec::Mock),
            ..Vocabulary::default()
        },
        implementation: implementation.clone(),
        target: target.clone(),
        seed,
        runs: args.runs,
        budget,
        jobs,
        shard,
        out: args.out.clone(),
        shrink: !args.no_shrink,
        shrink_total: Some(
            args.shrink_total
                .or(budget)
                .unwrap_or(std::time::Duration::from_secs(120)),
        ),
        shrink_options: harness::explore::shrink::ShrinkOptions {
            implementation,
            target,
            tries: args.tries.max(1),
            jobs,
            rate_runs: 20,
            budget: Some(args.shrink_budget),
            pool: None,
        },
    };
    eprintln!(
        "exploring {} on {} with seed {seed} ({} runs at once)",
        opts.base.label(),
        opts.implementation.name(),
        jobs
    );
    let rt = match runtime() {
        Ok(r) => r,
        Err(code) => return code,
    };
    // Drivers that can serve run after run are kept and reused; the pool's
    // processes are started ahead of the runs.
    let mut opts = opts;
    opts.shrink_options.pool = match driver_pool(&opts.implementation, jobs) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let progress = Arc::new(explore::Progress::default());
    let bar = if args.quiet {
        indicatif::ProgressBar::hidden()
    } else {
        let b = match args.runs {
            Some(n) => indicatif::ProgressBar::new(n),
            None => indicatif::ProgressBar::new(budget.map_or(0, |b| b.as_secs())),
        };
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {elapsed} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    };
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ticker = {
        let (bar, progress, done) = (bar.clone(), progress.clone(), done.clone());
        let by_runs = args.runs.is_some();
        std::thread::spawn(move || {
            let started = std::time::Instant::now();
            while !done.load(Ordering::Relaxed) {
                let runs = progress.runs.load(Ordering::Relaxed);
                let secs = started.elapsed().as_secs_f64().max(0.001);
                let shrink = progress.shrink_runs.load(Ordering::Relaxed);
                bar.set_position(if by_runs {
                    runs as u64
                } else {
                    started.elapsed().as_secs()
                });
                bar.set_message(format!(
                    "{runs} runs, {:.1}/s, {} findings, {} errors{}",
                    runs as f64 / secs,
                    progress.findings.load(Ordering::Relaxed),
                    progress.errors.load(Ordering::Relaxed),
                    if shrink > 0 {
                        format!(", shrinking ({shrink} runs)")
                    } else {
                        String::new()
                    }
                ));
                std::thread::sleep(std::time::Duration::from_millis(250));
            }
        })
    };
    let result = rt.block_on(async {
        let r = explore::explore(&opts, progress).await;
        if let Some(pool) = &opts.shrink_options.pool {
            pool.close().await;
        }
        r
    });
    done.store(true, Ordering::Relaxed);
    let _ = ticker.join();
    bar.finish_and_clear();
    drop(rt);
    let e = match result {
        Ok(e) => e,
        Err(err) => {
            eprintln!("error: {}: {err}", args.out.display());
            return ExitCode::FAILURE;
        }
    };
    print!("{}", explore::report(&e));
    eprintln!("wrote {}", args.out.join("report.json").display());
    if e.skipped.is_some() {
        return ExitCode::from(2);
    }
    if e.findings.is_empty() || args.allow_findings {
        ExitCode::SUCCESS
    } else {
        eprintln!("harness explore: {} findings", e.findings.len());
        ExitCode::FAILURE
    }
}

fn shrink(args: ShrinkArgs) -> ExitCode {
    use harness::explore;
    let fail = |e: String| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    };
    let (target, _real) = match parse_target(&args.target) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let (job, record) =
        match explore::shrink::job_from_record(&args.record, args.index, args.out.clone()) {
            Ok(j) => j,
            Err(e) => return fail(e),
        };
    let imp_arg = match &args.implementation {
        Some(i) => i.clone(),
        None => implementation_of_replay(&record.replay),
    };
    let implementation = match Implementation::parse(&imp_arg) {
        Ok(i) => i,
        Err(e) => return fail(e.to_string()),
    };
    let jobs = args
        .jobs
        .unwrap_or_else(|| explore::default_jobs(&implementation))
        .max(1);
    let opts = explore::shrink::ShrinkOptions {
        implementation,
        target,
        tries: args.tries.max(1),
        jobs,
        rate_runs: args.rate_runs.max(1),
        budget: args.budget,
        pool: None,
    };
    let mut opts = opts;
    opts.pool = match driver_pool(&opts.implementation, jobs) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    eprintln!(
        "shrinking {} ({} steps, {} clients; violated {})",
        record.scenario,
        job.draft.timeline.len(),
        job.draft.client_count(),
        job.violated.iter().cloned().collect::<Vec<_>>().join(", ")
    );
    let rt = match runtime() {
        Ok(r) => r,
        Err(code) => return code,
    };
    let used = std::sync::atomic::AtomicUsize::new(0);
    let result = rt.block_on(async {
        let r = explore::shrink::shrink(job, &opts, &used).await;
        if let Some(pool) = &opts.pool {
            pool.close().await;
        }
        r
    });
    drop(rt);
    match result {
        Ok(s) => {
            println!(
                "shrunk from {} steps, {} clients to {} steps, {} clients in {} runs ({:.0}s)",
                s.original_steps, s.original_clients, s.steps, s.clients, s.runs_used, s.seconds
            );
            println!(
                "violates {} in {}/{} runs ({:.0}%)",
                s.violated.join(", "),
                s.reproduced,
                s.runs,
                s.rate() * 100.0
            );
            println!("wrote {}", s.file.display());
            println!("replay: {}", s.replay);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The `--implementation` a replay command names (`zk-lock` if none).
fn implementation_of_replay(replay: &str) -> String {
    let Some((_, rest)) = replay.split_once("--implementation ") else {
        return "zk-lock".into();
    };
    let rest = rest.trim_start();
    if let Some(quoted) = rest.strip_prefix('\'') {
        quoted.split('\'').next().unwrap_or_default().to_string()
    } else {
        rest.split_whitespace()
            .next()
            .unwrap_or("zk-lock")
            .to_string()
    }
}

fn load_all(paths: &[PathBuf]) -> Result<Vec<scenario::Loaded>, ExitCode> {
    let files = match harness::find_scenarios(paths) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return Err(ExitCode::from(2));
        }
    };
    let mut loaded = Vec::new();
    let mut bad = false;
    for f in files {
        match scenario::load(&f) {
            Ok(l) => loaded.push(l),
            Err(e) => {
                eprintln!("error: {e}");
                bad = true;
            }
        }
    }
    if bad {
        return Err(ExitCode::from(2));
    }
    Ok(loaded)
}

/// The scenarios under `paths` whose names contain `filter` and none of
/// `exclude`; none at all is an error.
fn select(
    paths: &[PathBuf],
    filter: Option<&str>,
    exclude: &[String],
) -> Result<Vec<scenario::Loaded>, ExitCode> {
    let mut scenarios = load_all(paths)?;
    if let Some(f) = filter {
        scenarios.retain(|s| s.name.contains(f));
    }
    scenarios.retain(|s| !exclude.iter().any(|x| s.name.contains(x.as_str())));
    if scenarios.is_empty() {
        eprintln!("error: no scenarios to run");
        return Err(ExitCode::from(2));
    }
    Ok(scenarios)
}

fn check(paths: &[PathBuf]) -> ExitCode {
    match load_all(paths) {
        Ok(l) => {
            println!("{} scenario files are valid", l.len());
            ExitCode::SUCCESS
        }
        Err(code) => code,
    }
}

fn judge(files: &[PathBuf], json: Option<&std::path::Path>) -> ExitCode {
    let mut outcomes = Vec::new();
    for f in files {
        let records = match harness::record::RunRecord::read_all(f) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        };
        outcomes.extend(records.iter().map(harness::check::outcome));
    }
    print!("{}", report::terminal(&outcomes));
    if let Some(p) = json {
        let text = report::json(&outcomes);
        if p.as_os_str() == "-" {
            println!("{text}");
        } else if let Err(e) = report::write(p, &text) {
            eprintln!("error: writing {}: {e}", p.display());
            return ExitCode::FAILURE;
        }
    }
    if outcomes.iter().all(|o| o.status.ok()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn run(args: RunArgs) -> ExitCode {
    let (target, _real) = match parse_target(&args.target) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let implementation = match Implementation::parse(&args.implementation) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let scenarios = match select(&args.paths, args.filter.as_deref(), &args.exclude) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let mut runs = Vec::new();
    for rep in 0..args.repeat.max(1) {
        for s in &scenarios {
            let seed = match (args.seed, rep) {
                (Some(seed), 0) => Some(seed),
                (Some(seed), r) => Some(seed.wrapping_add(u64::from(r))),
                (None, 0) => None,
                (None, _) => Some(rand::random()),
            };
            runs.push((
                s.clone(),
                RunOptions {
                    target: target.clone(),
                    seed,
                    implementation: implementation.clone(),
                    progress: None,
                    pool: None,
                },
            ));
        }
    }
    let outcomes = match play(runs, args.jobs.count, args.quiet) {
        Ok(o) => o,
        Err(code) => return code,
    };
    print!("{}", report::terminal(&outcomes));
    let mut io_failed = false;
    if let Some(p) = &args.json {
        let text = report::json(&outcomes);
        if p.as_os_str() == "-" {
            println!("{text}");
        } else if let Err(e) = report::write(p, &text) {
            eprintln!("error: writing {}: {e}", p.display());
            io_failed = true;
        }
    }
    if let Some(p) = &args.history {
        let mut text = String::new();
        for o in &outcomes {
            for op in &o.history {
                let mut v = serde_json::to_value(op).unwrap_or_default();
                if let Some(m) = v.as_object_mut() {
                    m.insert("scenario".into(), o.name.clone().into());
                    m.insert("seed".into(), o.seed.into());
                }
                text.push_str(&v.to_string());
                text.push('\n');
            }
        }
        if p.as_os_str() == "-" {
            print!("{text}");
        } else if let Err(e) = report::write(p, &text) {
            eprintln!("error: writing {}: {e}", p.display());
            io_failed = true;
        }
    }
    if let Some(p) = &args.record {
        let mut text = Vec::new();
        for r in outcomes.iter().filter_map(|o| o.record.as_deref()) {
            // Writing into memory cannot fail.
            let _ = r.write_line(&mut text);
        }
        if let Err(e) = report::write(p, &String::from_utf8_lossy(&text)) {
            eprintln!("error: writing {}: {e}", p.display());
            io_failed = true;
        }
    }
    if let Some(p) = &args.junit {
        if let Err(e) = report::write(p, &report::junit(&outcomes)) {
            eprintln!("error: writing {}: {e}", p.display());
            io_failed = true;
        }
    }
    if let Some(p) = &args.html {
        if let Err(e) = report::write(p, &report::html(&outcomes)) {
            eprintln!("error: writing {}: {e}", p.display());
            io_failed = true;
        }
    }
    let ok = outcomes.iter().all(|o| o.status.ok());
    if ok && !io_failed {
        ExitCode::SUCCESS
    } else {
        if outcomes
            .iter()
            .any(|o| o.status == Status::Failed || o.status == Status::Error)
        {
            eprintln!("harness: FAILED");
        }
        ExitCode::FAILURE
    }
}

/// With `--jobs`, a scenario with this many clients or more runs alone.
const CROWD: usize = 200;

/// Plays each (scenario, options), `jobs` at a time, with a progress bar
/// that also shows the acquisitions so far. The outcomes come back in the
/// order of `runs`, and a failure's details are printed in that order.
fn play(
    runs: Vec<(scenario::Loaded, RunOptions)>,
    jobs: usize,
    quiet: bool,
) -> Result<Vec<Outcome>, ExitCode> {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: tokio runtime: {e}");
            return Err(ExitCode::FAILURE);
        }
    };
    let bar = if quiet {
        indicatif::ProgressBar::hidden()
    } else {
        let b = indicatif::ProgressBar::new(runs.len() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    };
    let progress = Arc::new(AtomicUsize::new(0));
    let label = Arc::new(parking_lot::Mutex::new(String::new()));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ticker = {
        let (bar, progress, label, done) =
            (bar.clone(), progress.clone(), label.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let l = label.lock().clone();
                bar.set_message(format!(
                    "{l} ({} acquisitions)",
                    progress.load(Ordering::Relaxed)
                ));
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
        })
    };
    let outcomes = runtime.block_on(async {
        let jobs = jobs.max(1);
        let permits = Arc::new(tokio::sync::Semaphore::new(jobs));
        let handles: Vec<_> = runs
            .into_iter()
            .map(|(s, mut opts)| {
                let (permits, label, progress) = (permits.clone(), label.clone(), progress.clone());
                // A crowd (a stampede of hundreds) keeps the machine busy on
                // its own: it runs alone, so that its timings stay its own.
                let clients: usize = s.scenario.clients.iter().map(|g| g.value.count).sum();
                let weight = if clients >= CROWD { jobs } else { 1 };
                tokio::spawn(async move {
                    // The semaphore is never closed: the permits always come.
                    let _permit = permits.acquire_many_owned(weight as u32).await.ok();
                    *label.lock() = format!("{} on {}", s.name, opts.implementation.name());
                    opts.progress = Some(progress);
                    runner::run(&s, &opts).await
                })
            })
            .collect();
        let mut outcomes = Vec::with_capacity(handles.len());
        for h in handles {
            match h.await {
                Ok(outcome) => {
                    if !outcome.status.ok() {
                        bar.suspend(|| eprint!("{}", report::failure_details(&outcome)));
                    }
                    outcomes.push(outcome);
                    bar.inc(1);
                }
                Err(e) => {
                    bar.suspend(|| eprintln!("error: a run's task failed: {e}"));
                    return Err(ExitCode::FAILURE);
                }
            }
        }
        Ok(outcomes)
    });
    done.store(true, Ordering::Relaxed);
    let _ = ticker.join();
    bar.finish_and_clear();
    // Make sure every session is gone before the process ends.
    drop(runtime);
    outcomes
}

fn matrix(args: MatrixArgs) -> ExitCode {
    let (target, _real) = match parse_target(&args.target) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut implementations = Vec::new();
    for name in args
        .implementations
        .split(',')
        .filter(|n| !n.trim().is_empty())
    {
        match Implementation::parse(name) {
            Ok(i) => implementations.push(i),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let expectations = match &args.expect {
        Some(p) => match harness::matrix::load_expectations(p) {
            Ok(e) => Some(e),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        },
        None => None,
    };
    let scenarios = match select(&args.paths, args.filter.as_deref(), &args.exclude) {
        Ok(l) => l,
        Err(code) => return code,
    };
    if let Some(exp) = &expectations {
        for (name, cells) in exp {
            if !scenarios.iter().any(|s| &s.name == name)
                && args.filter.is_none()
                && args.exclude.is_empty()
            {
                eprintln!("warning: expectations name scenario {name:?}, which is not in the run");
            }
            for imp in cells.keys() {
                if !implementations.iter().any(|i| i.name() == imp) {
                    tracing::debug!("expectations for {imp} (not in this run)");
                }
            }
        }
    }
    let started = std::time::Instant::now();
    let mut runs = Vec::new();
    for imp in &implementations {
        for s in &scenarios {
            runs.push((
                s.clone(),
                RunOptions {
                    target: target.clone(),
                    seed: args.seed,
                    implementation: imp.clone(),
                    progress: None,
                    pool: None,
                },
            ));
        }
    }
    let outcomes = match play(runs, args.jobs.count, args.quiet) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let versions: Vec<(String, String)> = implementations
        .iter()
        .map(|i| {
            let v = outcomes
                .iter()
                .find(|o| o.implementation == i.name() && !o.implementation_version.is_empty())
                .map(|o| o.implementation_version.clone())
                .unwrap_or_else(|| "(did not start)".into());
            (i.name().to_string(), v)
        })
        .collect();
    let m = harness::matrix::Matrix::new(
        &scenarios,
        versions,
        target.kind(),
        &outcomes,
        expectations.as_ref(),
        started.elapsed().as_secs_f64(),
    );
    print!("{}", m.terminal());
    let (md, json, xml) = harness::matrix::files(&args.out);
    let mut io_failed = false;
    for (p, text) in [(md, m.markdown()), (json, m.json()), (xml, m.junit())] {
        if let Err(e) = report::write(&p, &text) {
            eprintln!("error: writing {}: {e}", p.display());
            io_failed = true;
        } else {
            eprintln!("wrote {}", p.display());
        }
    }
    if m.ok() && !io_failed {
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "harness matrix: FAILED ({} cells not as expected)",
            m.mismatches().len()
        );
        ExitCode::FAILURE
    }
}
