//! `harness run PATH...`: plays scenarios and reports.

use std::path::PathBuf;
use std::process::ExitCode;

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
    /// Play each scenario N times, with a new seed each time.
    #[arg(long, default_value_t = 1)]
    repeat: u32,
    /// `mock` (the embedded zk-mock, default) or HOST:PORT of a real ZooKeeper.
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
    /// Write a self-contained HTML report here.
    #[arg(long)]
    html: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

fn parse_target(t: &str) -> Result<TargetSpec, String> {
    if t == "mock" {
        return Ok(TargetSpec::Mock);
    }
    use std::net::ToSocketAddrs;
    t.to_socket_addrs()
        .map_err(|e| format!("--target {t}: {e}"))?
        .next()
        .map(TargetSpec::Real)
        .ok_or_else(|| format!("--target {t}: no address"))
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
        Command::Run(args) => run(args),
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

fn check(paths: &[PathBuf]) -> ExitCode {
    match load_all(paths) {
        Ok(l) => {
            println!("{} scenario files are valid", l.len());
            ExitCode::SUCCESS
        }
        Err(code) => code,
    }
}

fn run(args: RunArgs) -> ExitCode {
    let target = match parse_target(&args.target) {
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
    let mut scenarios = match load_all(&args.paths) {
        Ok(l) => l,
        Err(code) => return code,
    };
    if let Some(f) = &args.filter {
        scenarios.retain(|s| s.name.contains(f.as_str()));
    }
    if scenarios.is_empty() {
        eprintln!("error: no scenarios to run");
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let total = scenarios.len() as u64 * u64::from(args.repeat.max(1));
    let bar = if args.quiet {
        indicatif::ProgressBar::hidden()
    } else {
        let b = indicatif::ProgressBar::new(total);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    };
    let mut outcomes: Vec<Outcome> = Vec::new();
    for rep in 0..args.repeat.max(1) {
        for s in &scenarios {
            bar.set_message(s.name.clone());
            let seed = match (args.seed, rep) {
                (Some(seed), 0) => Some(seed),
                (Some(seed), r) => Some(seed.wrapping_add(u64::from(r))),
                (None, 0) => None,
                (None, _) => Some(rand::random()),
            };
            let opts = RunOptions {
                target: target.clone(),
                seed,
                implementation: implementation.clone(),
            };
            let outcome = runtime.block_on(runner::run(s, &opts));
            if !outcome.status.ok() {
                bar.suspend(|| eprint!("{}", report::failure_details(&outcome)));
            }
            outcomes.push(outcome);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
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
    if let Some(p) = &args.junit {
        if let Err(e) = report::write(p, &report::junit(&outcomes)) {
            eprintln!("error: writing {}: {e}", p.display());
            io_failed = true;
        }
    }
    if let Some(p) = &args.html {
        if let Err(e) = report::write(p, &harness::html::render(&outcomes)) {
            eprintln!("error: writing {}: {e}", p.display());
            io_failed = true;
        }
    }
    // Make sure every session is gone before the process ends.
    drop(runtime);
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
