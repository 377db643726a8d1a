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
    /// Parses and validates scenario files without running them.
    Check {
        /// Files or folders.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
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
                s,
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
    let outcomes = match play(runs, args.quiet) {
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

/// Plays each (scenario, options) in turn with a progress bar that also
/// shows the acquisitions inside the running scenario.
fn play(runs: Vec<(&scenario::Loaded, RunOptions)>, quiet: bool) -> Result<Vec<Outcome>, ExitCode> {
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
    let mut outcomes = Vec::new();
    for (s, mut opts) in runs {
        *label.lock() = format!("{} on {}", s.name, opts.implementation.name());
        opts.progress = Some(progress.clone());
        let outcome = runtime.block_on(runner::run(s, &opts));
        if !outcome.status.ok() {
            bar.suspend(|| eprint!("{}", report::failure_details(&outcome)));
        }
        outcomes.push(outcome);
        bar.inc(1);
    }
    done.store(true, Ordering::Relaxed);
    let _ = ticker.join();
    bar.finish_and_clear();
    // Make sure every session is gone before the process ends.
    drop(runtime);
    Ok(outcomes)
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
                s,
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
    let outcomes = match play(runs, args.quiet) {
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
