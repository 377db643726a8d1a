//! The same workloads against zk-mock and a real ZooKeeper 3.8 in one run,
//! side by side with their ratio, checked against zk-mock's speed targets
//! (3x ZooKeeper for reads, 5x for writes, 10x for connects and lock
//! experiments, 5x for fan-out; docs/performance.md has the latest run);
//! plus the lock experiment at N = 1000 and an SVG plot of notifications
//! per hand-off against N for every recipe.
//!
//! `cargo run --release -p benches --bin compare [-- --out DIR] [--quick] [--skip-real]`

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use benches::{
    connect_many, connect_storm, fanout, lock_experiment, op_workload, percentile, BoxError,
    LockRun, Op, OpWorkload, Pace, Recipe, Server,
};
use clap::Parser;

#[derive(Debug, Parser)]
#[command(about = "zk-mock against a real ZooKeeper 3.8, side by side")]
struct Args {
    /// Where the report (compare.md) and the plot (notifications.svg) go.
    #[arg(long, default_value = "target/compare")]
    out: PathBuf,
    /// Fewer ops and repetitions (a smoke run).
    #[arg(long)]
    quick: bool,
    /// Only the mock (no Java needed); ratios are not computed.
    #[arg(long)]
    skip_real: bool,
    /// Skip the N = 1000 lock runs.
    #[arg(long)]
    skip_1000: bool,
    /// Sections to run (comma-separated): ops, ensemble, raw, sessions, locks.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "ops,ensemble,raw,sessions,locks"
    )]
    only: Vec<String>,
    /// Recipes for the lock sections (default: all).
    #[arg(long, value_delimiter = ',')]
    recipes: Vec<String>,
    /// Runs of each op and session count in the ops section, the floor and
    /// the servers taking turns: the table gives the medians (one run with
    /// `--quick`). One run's CPU ratio to the floor swings by ±0.3x on a
    /// shared 2-core machine.
    #[arg(long, default_value_t = 5)]
    repeats: usize,
}

struct Report {
    text: String,
    misses: Vec<String>,
    /// Aims a pass could not decide: their runs straddle them.
    open: Vec<String>,
}

impl Report {
    fn line(&mut self, s: impl AsRef<str>) {
        println!("{}", s.as_ref());
        self.text.push_str(s.as_ref());
        self.text.push('\n');
    }
    fn target(&mut self, what: &str, ratio: Option<f64>, want: f64) -> String {
        match ratio {
            Some(r) if r >= want => format!("{r:.1}x (target {want}x: met)"),
            Some(r) => {
                self.misses.push(format!("{what}: {r:.2}x < {want}x"));
                format!("{r:.2}x (target {want}x: MISSED)")
            }
            None => "-".into(),
        }
    }

    /// Files a floor aim's standing (`claim`: what was measured; `beyond`:
    /// the side of the aim a miss is on) and gives the note for its cell.
    fn judged(
        &mut self,
        at: Standing,
        claim: String,
        beyond: &str,
        show: impl Fn(f64) -> String,
    ) -> String {
        match at {
            Standing::Met => String::new(),
            Standing::Missed => {
                self.misses.push(format!("{claim} {beyond}"));
                ": MISSED".into()
            }
            Standing::Open(lo, hi) => {
                let (lo, hi) = (show(lo), show(hi));
                self.open
                    .push(format!("{claim}, its 90% interval {lo} to {hi}"));
                format!(": not decided, {lo}–{hi}")
            }
        }
    }
}

fn ms(d: Duration) -> String {
    if d < Duration::from_micros(100) {
        format!("{:.1}µs", d.as_secs_f64() * 1e6)
    } else if d < Duration::from_millis(1) {
        format!("{:.0}µs", d.as_secs_f64() * 1e6)
    } else {
        format!("{:.2}ms", d.as_secs_f64() * 1e3)
    }
}

/// Runs `f` and returns its result with the CPU time `server` spent meanwhile.
async fn with_cpu<T>(
    server: &Server,
    f: impl std::future::Future<Output = Result<T, BoxError>>,
) -> Result<(T, Duration), BoxError> {
    let before = server.cpu_time();
    let t = f.await?;
    Ok((t, server.cpu_time().saturating_sub(before)))
}

/// "mock / zk (ratio)" of server CPU per unit of work.
fn cpu_cell(per: &[Duration]) -> String {
    match per {
        [m] => ms(*m),
        [m, z] => format!(
            "{} / {} ({:.1}x)",
            ms(*m),
            ms(*z),
            z.as_secs_f64() / m.as_secs_f64().max(1e-12)
        ),
        _ => "-".into(),
    }
}

fn median_f64(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Each run's ratio, after the median, when there was more than one.
fn each_run(ratios: &[f64]) -> String {
    if ratios.len() < 2 {
        return String::new();
    }
    let each: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
    format!("; runs {}", each.join(" "))
}

/// The order statistics that bound the median of `n` paired runs with at
/// least 90% confidence, whatever the runs' distribution: the `k`-th
/// smallest and the `k`-th largest, for the largest `k` with
/// `2 * P(Binomial(n, 1/2) < k) <= 0.1`. `None` under 5 runs, which
/// cannot give one.
fn median_bounds(n: usize) -> Option<usize> {
    // P(X <= j) for X ~ Binomial(n, 1/2), summed term by term.
    let total = 2f64.powi(n as i32);
    let mut term = 1.0; // C(n, 0)
    let mut below = 0.0; // P(X < k) * 2^n
    let mut best = None;
    for k in 1..=n / 2 {
        below += term;
        if 2.0 * below / total > 0.1 {
            break;
        }
        best = Some(k);
        term = term * (n - (k - 1)) as f64 / k as f64;
    }
    best
}

/// Where an aim stands after a pass: decided when the 90% interval of the
/// median of the runs' ratios lies wholly on one side of it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Standing {
    Met,
    Missed,
    /// The interval straddles the aim: more runs decide it.
    Open(f64, f64),
}

/// Judges the median of paired `runs` against an aim (`at_most`: the
/// ratio must not exceed `aim`; else it must reach it). With fewer than
/// 5 runs the median alone decides.
fn standing(runs: &[f64], median: f64, aim: f64, at_most: bool) -> Standing {
    let good = |x: f64| if at_most { x <= aim } else { x >= aim };
    let Some(k) = median_bounds(runs.len()) else {
        return if good(median) {
            Standing::Met
        } else {
            Standing::Missed
        };
    };
    let mut v = runs.to_vec();
    v.sort_by(f64::total_cmp);
    let (lo, hi) = (v[k - 1], v[v.len() - k]);
    match (good(lo), good(hi)) {
        (true, true) => Standing::Met,
        (false, false) => Standing::Missed,
        _ => Standing::Open(lo, hi),
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args = Args::parse();
    if let Err(e) = run(args).await {
        eprintln!("compare failed: {e}");
        std::process::exit(1);
    }
}

async fn run(args: Args) -> Result<(), BoxError> {
    std::fs::create_dir_all(&args.out)?;
    let mut r = Report {
        text: String::new(),
        misses: Vec::new(),
        open: Vec::new(),
    };
    let mock = Server::mock().await?;
    if let Some(m) = mock.mock_handle() {
        m.clear_recording();
    }
    let real = if args.skip_real {
        None
    } else {
        Some(Server::real().await?)
    };
    let servers: Vec<&Server> = std::iter::once(&mock).chain(real.as_ref()).collect();
    // A JVM keeps compiling and collecting for a while after it starts:
    // warm both servers up with every workload, then let the JVM settle,
    // before anything is measured.
    for s in &servers {
        let clients = connect_many(&s.connect_string(), 16).await?;
        let until = std::time::Instant::now() + Duration::from_secs(if args.quick { 2 } else { 8 });
        while std::time::Instant::now() < until {
            for op in Op::ALL {
                op_workload(&clients, op, 50).await?;
            }
        }
        let (_, storm) = connect_storm(&s.connect_string(), 200).await?;
        drop(storm);
        if let Some(m) = s.mock_handle() {
            m.clear_recording();
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    r.line(format!(
        "# zk-mock vs ZooKeeper 3.8 ({} cores, same client: zookeeper-client 0.11, same listen backlog 1024)\n",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    ));
    r.line(format!("Machine: {}\n", benches::machine::describe()));

    let section = |name: &str| args.only.iter().any(|s| s == name);
    let recipes: Vec<Recipe> = Recipe::ALL
        .into_iter()
        .filter(|r| args.recipes.is_empty() || args.recipes.iter().any(|x| x == r.name()))
        .collect();

    // ---- single ops -----------------------------------------------------
    if section("ops") {
        // The floor (benches::floor): the least any server must do per op,
        // on the same sockets, for the same client (the targets: the
        // mock's server CPU per op within 1.5x of it, its throughput at
        // least 80% of it, at 16 and 64 sessions).
        let floor = Server::floor()?;
        let repeats = if args.quick { 1 } else { args.repeats.max(1) };
        r.line(format!(
            "## Ops (closed loop, one op outstanding per session; each figure the median of {repeats} run(s), the floor and the servers taking turns; a ratio to the floor is the median of each run's ratio to the floor run beside it, the figure its verdict and interval judge)\n"
        ));
        r.line("| op | sessions | floor ops/s | zk-mock ops/s | ZooKeeper ops/s | zk-mock / ZooKeeper | zk-mock / floor, ops/s | zk-mock p50 / p99 | ZooKeeper p50 / p99 | server CPU per op: floor / zk-mock / ZooKeeper | zk-mock CPU / floor CPU |");
        r.line("|---|---|---|---|---|---|---|---|---|---|---|");
        let total_ops = if args.quick { 2_000 } else { 20_000 };
        for sessions in [1usize, 16, 64] {
            let floor_clients = connect_many(&floor.connect_string(), sessions).await?;
            let mut clients = Vec::new();
            for s in &servers {
                clients.push(connect_many(&s.connect_string(), sessions).await?);
            }
            for op in Op::ALL {
                let per = (total_ops / sessions).max(20);
                // The floor and each server take turns, `repeats` times;
                // each column is the median of its runs, and latencies are
                // taken over all of them.
                let mut floor_tputs = Vec::new();
                let mut floor_cpus = Vec::new();
                let mut tputs = vec![Vec::new(); servers.len()];
                let mut cpus = vec![Vec::new(); servers.len()];
                let mut lats = vec![Vec::new(); servers.len()];
                let mut per_repeat = Vec::new();
                let mut tput_per_repeat = Vec::new();
                for _ in 0..repeats {
                    op_workload(&floor_clients, op, (per / 10).max(5)).await?;
                    let w = OpWorkload::prepare(&floor_clients, op, per).await?;
                    let (floor_run, floor_used) = with_cpu(&floor, w.run()).await?;
                    let floor_cpu = floor_used / floor_run.ops.max(1) as u32;
                    floor_tputs.push(floor_run.throughput());
                    floor_cpus.push(floor_cpu);
                    for (i, (cs, s)) in clients.iter().zip(&servers).enumerate() {
                        // Warm up (JIT, caches), then measure.
                        op_workload(cs, op, (per / 10).max(5)).await?;
                        let w = OpWorkload::prepare(cs, op, per).await?;
                        let (run, used) = with_cpu(s, w.run()).await?;
                        let c = used / run.ops.max(1) as u32;
                        if i == 0 {
                            per_repeat.push(c.as_secs_f64() / floor_cpu.as_secs_f64().max(1e-12));
                            tput_per_repeat
                                .push(run.throughput() / floor_run.throughput().max(1e-9));
                        }
                        cpus[i].push(c);
                        tputs[i].push(run.throughput());
                        lats[i].extend(run.latencies);
                        if let Some(m) = mock.mock_handle() {
                            m.clear_recording();
                        }
                    }
                }
                let tput: Vec<f64> = tputs.into_iter().map(median_f64).collect();
                let cpu: Vec<Duration> = cpus.into_iter().map(median).collect();
                let floor_tput_med = median_f64(floor_tputs);
                let floor_cpu = median(floor_cpus);
                let ratio = tput.get(1).map(|z| tput[0] / z.max(1e-9));
                let want = if op.is_write() { 5.0 } else { 3.0 };
                let verdict = if sessions >= 16 {
                    r.target(&format!("{} x{sessions}", op.name()), ratio, want)
                } else {
                    ratio
                        .map(|x| format!("{x:.1}x"))
                        .unwrap_or_else(|| "-".into())
                };
                // The ratios to the floor are the medians of the paired
                // runs' ratios: the same figure the verdict and its
                // interval judge (a ratio of the two medians can sit on the
                // other side of an aim from it).
                let of_floor = median_f64(tput_per_repeat.clone());
                let cpu_over_floor = median_f64(per_repeat.clone());
                let (floor_tput, floor_cpu_cell) = if sessions >= 16 {
                    let what = format!("{} x{sessions}", op.name());
                    let tput_note = r.judged(
                        standing(&tput_per_repeat, of_floor, 0.8, false),
                        format!("{what}: throughput {:.0}% of the floor's", of_floor * 100.0),
                        "< 80%",
                        |x| format!("{:.0}%", x * 100.0),
                    );
                    let cpu_note = r.judged(
                        standing(&per_repeat, cpu_over_floor, 1.5, true),
                        format!("{what}: server CPU {cpu_over_floor:.2}x the floor's"),
                        "> 1.5x",
                        |x| format!("{x:.2}x"),
                    );
                    (
                        format!("{:.0}% (target 80%{tput_note})", of_floor * 100.0),
                        format!(
                            "{cpu_over_floor:.2}x (target 1.5x{cpu_note}){}",
                            each_run(&per_repeat)
                        ),
                    )
                } else {
                    (
                        format!("{:.0}%", of_floor * 100.0),
                        format!("{cpu_over_floor:.2}x{}", each_run(&per_repeat)),
                    )
                };
                let lat = |latencies: &Vec<Duration>| {
                    format!(
                        "{} / {}",
                        ms(percentile(latencies, 0.5)),
                        ms(percentile(latencies, 0.99))
                    )
                };
                r.line(format!(
                    "| {} | {sessions} | {:.0} | {:.0} | {} | {verdict} | {floor_tput} | {} | {} | {} / {} | {floor_cpu_cell} |",
                    op.name(),
                    floor_tput_med,
                    tput[0],
                    tput.get(1)
                        .map(|z| format!("{z:.0}"))
                        .unwrap_or_else(|| "-".into()),
                    lat(&lats[0]),
                    lats.get(1).map(lat).unwrap_or_else(|| "-".into()),
                    ms(floor_cpu),
                    cpu_cell(&cpu),
                ));
            }
            drop(clients);
        }
    }

    // ---- an ensemble of 3 against a single server ---------------------------
    if section("ensemble") {
        // The target: an ensemble of 3 costs at most 1.5x a single server per
        // write. The same client; its sessions spread over the ensemble's
        // connect string, so most writes come through a follower, and every
        // write is applied by three replicas.
        let ensemble = Server::mock_ensemble(3).await?;
        r.line("\n## An ensemble of 3 against a single server (zk-mock; sessions spread over the ensemble's servers)\n");
        r.line("| op | sessions | 1 server ops/s | 3 servers ops/s | server CPU per op: 1 / 3 servers | 3 servers / 1, CPU per op |");
        r.line("|---|---|---|---|---|---|");
        let total_ops = if args.quick { 2_000 } else { 20_000 };
        for sessions in [16usize, 64] {
            let single = connect_many(&mock.connect_string(), sessions).await?;
            let spread = connect_many(&ensemble.connect_string(), sessions).await?;
            for op in Op::ALL {
                let per = (total_ops / sessions).max(20);
                let mut cells = Vec::new();
                for (cs, s) in [(&single, &mock), (&spread, &ensemble)] {
                    op_workload(cs, op, (per / 10).max(5)).await?;
                    let w = OpWorkload::prepare(cs, op, per).await?;
                    let (run, used) = with_cpu(s, w.run()).await?;
                    cells.push((run.throughput(), used / run.ops.max(1) as u32));
                    if let Some(m) = s.mock_handle() {
                        m.clear_recording();
                    }
                }
                let over = cells[1].1.as_secs_f64() / cells[0].1.as_secs_f64().max(1e-12);
                let cell = if op.is_write() {
                    if over > 1.5 {
                        r.misses.push(format!(
                            "{} x{sessions}: an ensemble of 3 costs {over:.2}x a single server per write > 1.5x",
                            op.name()
                        ));
                    }
                    format!("{over:.2}x (target 1.5x)")
                } else {
                    format!("{over:.2}x")
                };
                r.line(format!(
                    "| {} | {sessions} | {:.0} | {:.0} | {} / {} | {cell} |",
                    op.name(),
                    cells[0].0,
                    cells[1].0,
                    ms(cells[0].1),
                    ms(cells[1].1),
                ));
            }
        }
    }

    // ---- the same reads and writes through a lean pipelined client -------
    if section("raw") {
        r.line("\n## getData and setData through a lean client (zk-mock's RawClient; one session with one request in flight, then 8 in flight per session)\n");
        r.line("| op | sessions | zk-mock ops/s | ZooKeeper ops/s | ratio | zk-mock p50 / p99 | ZooKeeper p50 / p99 | server CPU per op mock / zk |");
        r.line("|---|---|---|---|---|---|---|---|");
        let addr = |s: &Server| -> Result<std::net::SocketAddr, BoxError> {
            Ok(s.connect_string().parse()?)
        };
        for (sessions, depth) in [(1usize, 1usize), (16, 8), (64, 8)] {
            for write in [false, true] {
                let per = (if args.quick { 4_000 } else { 40_000 } / sessions).max(50);
                let mut runs = Vec::new();
                let mut cpu = Vec::new();
                for s in &servers {
                    benches::raw_pipelined(addr(s)?, sessions, per / 10, depth, write).await?;
                    let (run, used) = with_cpu(
                        s,
                        benches::raw_pipelined(addr(s)?, sessions, per, depth, write),
                    )
                    .await?;
                    cpu.push(used / run.ops.max(1) as u32);
                    runs.push(run);
                    if let Some(m) = s.mock_handle() {
                        m.clear_recording();
                    }
                }
                let ratio = runs.get(1).map(|z| runs[0].throughput() / z.throughput());
                let name = if write { "setData" } else { "getData" };
                let want = if write { 5.0 } else { 3.0 };
                let verdict = if sessions >= 16 {
                    r.target(&format!("{name} x{sessions} (raw, pipelined)"), ratio, want)
                } else {
                    ratio
                        .map(|x| format!("{x:.1}x"))
                        .unwrap_or_else(|| "-".into())
                };
                let lat = |run: &benches::OpRun| {
                    format!(
                        "{} / {}",
                        ms(percentile(&run.latencies, 0.5)),
                        ms(percentile(&run.latencies, 0.99))
                    )
                };
                r.line(format!(
                    "| {name} | {sessions} | {:.0} | {} | {verdict} | {} | {} | {} |",
                    runs[0].throughput(),
                    runs.get(1)
                        .map(|z| format!("{:.0}", z.throughput()))
                        .unwrap_or_else(|| "-".into()),
                    lat(&runs[0]),
                    runs.get(1).map(lat).unwrap_or_else(|| "-".into()),
                    cpu_cell(&cpu),
                ));
            }
        }
    }

    // ---- connect storm and fan-out --------------------------------------
    if section("sessions") {
        r.line("\n## Sessions\n");
        r.line(
            "Through `zookeeper-client` (what applications use) and through the lean `RawClient`",
        );
        r.line("(a connect request or a read per socket and nothing else), so that the servers' share shows.\n");
        r.line("| workload | client | zk-mock | ZooKeeper | ratio | server CPU mock / zk |");
        r.line("|---|---|---|---|---|---|");
        let reps = if args.quick { 1 } else { 3 };
        for raw in [false, true] {
            let client = if raw { "RawClient" } else { "zookeeper-client" };
            let mut storm = vec![Vec::new(); servers.len()];
            let mut cpu = vec![Vec::new(); servers.len()];
            for _ in 0..reps {
                for (i, s) in servers.iter().enumerate() {
                    let before = s.cpu_time();
                    let d = if raw {
                        benches::raw_connect_storm(s.connect_string().parse()?, 1000)
                            .await?
                            .0
                    } else {
                        connect_storm(&s.connect_string(), 1000).await?.0
                    };
                    // The sessions are dropped (closed) here; that is not timed.
                    storm[i].push(d);
                    cpu[i].push(s.cpu_time().saturating_sub(before));
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
            let storm: Vec<Duration> = storm.into_iter().map(median).collect();
            let cpu: Vec<Duration> = cpu.into_iter().map(median).collect();
            let ratio = storm
                .get(1)
                .map(|z| z.as_secs_f64() / storm[0].as_secs_f64());
            let verdict = r.target(&format!("connect 1000 ({client})"), ratio, 10.0);
            r.line(format!(
                "| 1000 sessions connecting at once, then closing (median of {reps}) | {client} | {} | {} | {verdict} | {} |",
                ms(storm[0]),
                storm.get(1).map(|d| ms(*d)).unwrap_or_else(|| "-".into()),
                cpu_cell(&cpu),
            ));
        }
        for raw in [false, true] {
            let client = if raw { "RawClient" } else { "zookeeper-client" };
            let mut fan = Vec::new();
            let mut cpu = Vec::new();
            for s in &servers {
                let mut v = Vec::new();
                let mut c = Vec::new();
                if raw {
                    let addr = s.connect_string().parse()?;
                    let (_, mut watchers) = benches::raw_connect_storm(addr, 1000).await?;
                    let mut writer = zk_mock::client::RawClient::connect(addr, 30_000).await?;
                    benches::raw_fanout(&mut watchers, &mut writer).await?; // warm-up
                    for _ in 0..(reps * 3) {
                        let (d, used) =
                            with_cpu(s, benches::raw_fanout(&mut watchers, &mut writer)).await?;
                        v.push(d);
                        c.push(used);
                    }
                } else {
                    let watchers = connect_many(&s.connect_string(), 1000).await?;
                    let writer = connect_many(&s.connect_string(), 1).await?.remove(0);
                    fanout(&watchers, &writer).await?; // warm-up
                    for _ in 0..(reps * 3) {
                        let (d, used) = with_cpu(s, fanout(&watchers, &writer)).await?;
                        v.push(d);
                        c.push(used);
                    }
                }
                fan.push(median(v));
                cpu.push(median(c));
            }
            let ratio = fan.get(1).map(|z| z.as_secs_f64() / fan[0].as_secs_f64());
            let verdict = r.target(&format!("fan-out 1000 ({client})"), ratio, 5.0);
            r.line(format!(
                "| one setData to 1000 watchers (median of {}; CPU includes the setup reads) | {client} | {} | {} | {verdict} | {} |",
                reps * 3,
                ms(fan[0]),
                fan.get(1).map(|d| ms(*d)).unwrap_or_else(|| "-".into()),
                cpu_cell(&cpu),
            ));
        }
        if let Some(m) = mock.mock_handle() {
            m.clear_recording();
        }
    }

    // ---- the lock experiment --------------------------------------------
    if section("locks") {
        r.line("\n## Lock experiment: N contenders, each acquires and releases once\n");
        r.line("Wall time: the N−1 hand-offs with every holder releasing at once (median of 3 runs; server CPU:");
        r.line("for the whole run, connecting and queueing included, per hand-off). Notifications and children");
        r.line("reads: with every hand-off settled (each holder waits until all remaining waiters watch), so");
        r.line("that they are what the recipe's design costs, the same on every run and on both servers.\n");
        r.line("| recipe | N | zk-mock wall | ZooKeeper wall | ratio | hand-off p50 mock / zk | notifications mock / zk | per hand-off | children reads mock / zk | server CPU per hand-off mock / zk |");
        r.line("|---|---|---|---|---|---|---|---|---|---|");
        let mut plot: Vec<(Recipe, Vec<(usize, f64)>)> =
            Recipe::ALL.iter().map(|r| (*r, Vec::new())).collect();
        let ns: &[usize] = if args.quick {
            &[10, 50]
        } else {
            &[10, 50, 200]
        };
        let mut run_id = 0;
        for &recipe in &recipes {
            for &n in ns {
                let mut timed: Vec<LockRun> = Vec::new();
                let mut counted: Vec<LockRun> = Vec::new();
                let mut cpu = Vec::new();
                for s in &servers {
                    // The median of three timed runs (a single one is at the
                    // mercy of the scheduler).
                    let mut runs = Vec::new();
                    for _ in 0..3 {
                        run_id += 1;
                        runs.push(
                            with_cpu(
                                s,
                                lock_experiment(
                                    s,
                                    recipe,
                                    n,
                                    &format!("/bench-lock-{run_id}"),
                                    Pace::Immediate,
                                ),
                            )
                            .await?,
                        );
                        if let Some(m) = s.mock_handle() {
                            m.clear_recording();
                        }
                    }
                    runs.sort_by_key(|(run, _)| run.wall);
                    let (run, used) = runs.swap_remove(1);
                    cpu.push(used / (n - 1).max(1) as u32);
                    timed.push(run);
                    run_id += 1;
                    counted.push(
                        lock_experiment(
                            s,
                            recipe,
                            n,
                            &format!("/bench-lock-{run_id}"),
                            Pace::Settled,
                        )
                        .await?,
                    );
                    if let Some(m) = mock.mock_handle() {
                        m.clear_recording();
                    }
                }
                let ratio = timed
                    .get(1)
                    .map(|z| z.wall.as_secs_f64() / timed[0].wall.as_secs_f64());
                let verdict = if n == 200 && matches!(recipe, Recipe::Herd | Recipe::Predecessor) {
                    r.target(&format!("lock {} N=200", recipe.name()), ratio, 10.0)
                } else {
                    ratio
                        .map(|x| format!("{x:.1}x"))
                        .unwrap_or_else(|| "-".into())
                };
                let notes = |x: &LockRun| x.server_notifications.unwrap_or(x.client_notifications);
                let mock_notes = notes(&counted[0]);
                if let Some(z) = counted.get(1) {
                    // The same workload must cost the same notifications.
                    if z.client_notifications != counted[0].client_notifications {
                        r.misses.push(format!(
                        "{} N={n}: clients counted {} notifications on zk-mock, {} on ZooKeeper",
                        recipe.name(),
                        counted[0].client_notifications,
                        z.client_notifications
                    ));
                    }
                }
                if recipe.is_herd() {
                    let expected = (n * (n - 1) / 2) as u64;
                    if mock_notes != expected {
                        r.misses.push(format!(
                            "{} N={n}: {mock_notes} notifications, design says {expected}",
                            recipe.name()
                        ));
                    }
                } else if mock_notes != (n - 1) as u64 {
                    r.misses.push(format!(
                        "{} N={n}: {mock_notes} notifications, design says {}",
                        recipe.name(),
                        n - 1
                    ));
                }
                if let Some((_, v)) = plot.iter_mut().find(|(x, _)| *x == recipe) {
                    v.push((n, counted[0].per_handoff()));
                }
                r.line(format!(
                    "| {} | {n} | {} | {} | {verdict} | {} / {} | {} / {} | {:.1} | {} / {} | {} |",
                    recipe.name(),
                    ms(timed[0].wall),
                    timed
                        .get(1)
                        .map(|z| ms(z.wall))
                        .unwrap_or_else(|| "-".into()),
                    ms(counted[0].median_handoff()),
                    counted
                        .get(1)
                        .map(|z| ms(z.median_handoff()))
                        .unwrap_or_else(|| "-".into()),
                    mock_notes,
                    counted
                        .get(1)
                        .map(|z| z.client_notifications.to_string())
                        .unwrap_or_else(|| "-".into()),
                    counted[0].per_handoff(),
                    counted[0].children_reads,
                    counted
                        .get(1)
                        .map(|z| z.children_reads.to_string())
                        .unwrap_or_else(|| "-".into()),
                    cpu_cell(&cpu),
                ));
            }
        }

        if !args.skip_1000 {
            r.line(
                "\n## N = 1000 on zk-mock (single measured runs, each holder releasing at once)\n",
            );
            r.line("| recipe | wall | notifications | per hand-off | children reads | child names re-read | bytes re-read |");
            r.line("|---|---|---|---|---|---|---|");
            for &recipe in &recipes {
                run_id += 1;
                let run = lock_experiment(
                    &mock,
                    recipe,
                    1000,
                    &format!("/bench-lock-{run_id}"),
                    Pace::Immediate,
                )
                .await?;
                if let Some(m) = mock.mock_handle() {
                    m.clear_recording();
                }
                if let Some((_, v)) = plot.iter_mut().find(|(x, _)| *x == recipe) {
                    v.push((1000, run.per_handoff()));
                }
                r.line(format!(
                    "| {} | {} | {} | {:.1} | {} | {} | {:.1} MB |",
                    recipe.name(),
                    ms(run.wall),
                    run.server_notifications.unwrap_or(run.client_notifications),
                    run.per_handoff(),
                    run.children_reads,
                    run.children_listed,
                    run.children_bytes as f64 / 1e6
                ));
            }
        }

        let svg = args.out.join("notifications.svg");
        plot_svg(&svg, &plot)?;
        r.line(format!("\nPlot: {}", svg.display()));
    }
    if r.misses.is_empty() && r.open.is_empty() {
        r.line("\nEvery target met.");
    }
    if !r.misses.is_empty() {
        r.line("\nMissed:");
        for m in r.misses.clone() {
            r.line(format!("- {m}"));
        }
    }
    if !r.open.is_empty() {
        r.line(
            "\nNot decided by this pass (the runs straddle the aim; more runs, `--repeats N`, narrow the interval):",
        );
        for m in r.open.clone() {
            r.line(format!("- {m}"));
        }
    }
    let mut text = r.text.clone();
    let _ = writeln!(text);
    std::fs::write(args.out.join("compare.md"), text)?;
    Ok(())
}

fn plot_svg(
    path: &std::path::Path,
    series: &[(Recipe, Vec<(usize, f64)>)],
) -> Result<(), BoxError> {
    use plotters::prelude::*;
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let max_n = series
        .iter()
        .flat_map(|(_, v)| v.iter().map(|p| p.0))
        .max()
        .unwrap_or(10) as f64;
    let max_y = series
        .iter()
        .flat_map(|(_, v)| v.iter().map(|p| p.1))
        .fold(1.0f64, f64::max);
    let mut chart = ChartBuilder::on(&root)
        .caption("Watch notifications per lock hand-off", ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(
            (5f64..max_n * 1.3).log_scale(),
            (0.5f64..max_y * 1.5).log_scale(),
        )?;
    chart
        .configure_mesh()
        .x_desc("contenders N")
        .y_desc("notifications per hand-off")
        .draw()?;
    let colors = [RED, BLUE, GREEN, MAGENTA, CYAN, BLACK];
    for (i, (recipe, points)) in series.iter().enumerate() {
        let color = colors[i % colors.len()];
        let pts: Vec<(f64, f64)> = points
            .iter()
            .map(|(n, y)| (*n as f64, y.max(0.5)))
            .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
            .label(recipe.name())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 4, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_bounded_by_the_order_statistics_of_90_percent_confidence() {
        assert_eq!(median_bounds(1), None);
        assert_eq!(median_bounds(4), None);
        // 2 / 2^5 = 6.25% outside [min, max].
        assert_eq!(median_bounds(5), Some(1));
        assert_eq!(median_bounds(9), Some(2));
        assert_eq!(median_bounds(10), Some(2));
        assert_eq!(median_bounds(15), Some(4));
        assert_eq!(median_bounds(20), Some(6));
    }

    #[test]
    fn an_aim_is_decided_only_when_the_interval_is_on_one_side_of_it() {
        let cpu = |runs: &[f64]| standing(runs, median_f64(runs.to_vec()), 1.5, true);
        assert_eq!(cpu(&[1.1, 1.2, 1.3, 1.4, 1.5]), Standing::Met);
        assert_eq!(cpu(&[1.6, 1.7, 1.8, 1.9, 2.0]), Standing::Missed);
        assert_eq!(cpu(&[1.7, 1.2, 1.45, 1.6, 1.4]), Standing::Open(1.2, 1.7));
        // Nine runs: the second smallest and the second largest.
        let nine = [1.0, 1.2, 1.3, 1.3, 1.4, 1.4, 1.45, 1.49, 2.5];
        assert_eq!(cpu(&nine), Standing::Met);
        let tput = |runs: &[f64]| standing(runs, median_f64(runs.to_vec()), 0.8, false);
        assert_eq!(tput(&[0.81, 0.9, 0.85, 0.95, 0.82]), Standing::Met);
        assert_eq!(tput(&[0.7, 0.75, 0.79, 0.6, 0.78]), Standing::Missed);
        assert_eq!(
            tput(&[0.7, 0.9, 0.85, 0.95, 0.82]),
            Standing::Open(0.7, 0.95)
        );
        // Under five runs the median alone decides.
        assert_eq!(cpu(&[1.4, 1.9]), Standing::Missed);
        assert_eq!(cpu(&[1.4, 1.45, 1.9]), Standing::Met);
    }
}
