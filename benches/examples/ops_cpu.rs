//! Server CPU per op, zk-mock against the floor, for a few ops at a few
//! session counts, with repeats: the floor and the mock take turns, and the
//! medians of each are compared within the one run. A longer, steadier
//! sample of what `compare --only ops --skip-real` measures in one pass.
//!
//! `cargo run --release -p benches --example ops_cpu -- [--ops create,delete,setData]
//! [--sessions 16,64] [--ops-per-run 40000] [--repeats 5] [--steady]`

use std::time::Duration;

use benches::{connect_many, remove_created, BoxError, Op, OpWorkload, Server};
use clap::Parser;

#[derive(Parser)]
struct Args {
    #[arg(long, value_delimiter = ',', default_value = "create,delete,setData")]
    ops: Vec<String>,
    #[arg(long, value_delimiter = ',', default_value = "16,64")]
    sessions: Vec<usize>,
    #[arg(long, default_value_t = 40_000)]
    ops_per_run: usize,
    #[arg(long, default_value_t = 5)]
    repeats: usize,
    /// After each create run, delete what it made (untimed), so every run
    /// creates into a tree of the same size rather than one that grows.
    #[arg(long)]
    steady: bool,
}

/// User and system CPU seconds of this process's threads whose name starts with `prefix`
/// (from `/proc/self/task/*/stat`, in clock ticks of 10 ms).
fn user_sys(prefix: &str) -> (f64, f64, f64, f64) {
    let (mut u, mut s, mut flt, mut cs) = (0u64, 0u64, 0u64, 0u64);
    for t in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if !comm.starts_with(prefix) {
            continue;
        }
        let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
        let after = stat.rsplit_once(')').map_or("", |x| x.1);
        let f: Vec<&str> = after.split_whitespace().collect();
        u += f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0);
        s += f.get(12).and_then(|v| v.parse().ok()).unwrap_or(0);
        flt += f.get(7).and_then(|v| v.parse().ok()).unwrap_or(0);
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        for l in status.lines() {
            if l.contains("ctxt_switches") {
                cs += l
                    .split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
            }
        }
    }
    (u as f64 / 100.0, s as f64 / 100.0, flt as f64, cs as f64)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

async fn measure(
    s: &Server,
    clients: &[zookeeper_client::Client],
    op: Op,
    per: usize,
    steady: bool,
) -> Result<(f64, f64), BoxError> {
    let warm = OpWorkload::prepare(clients, op, (per / 10).max(5)).await?;
    let warm_root = warm.root().to_owned();
    warm.run().await?;
    let w = OpWorkload::prepare(clients, op, per).await?;
    let root = w.root().to_owned();
    let prefix = if s.mock_handle().is_some() {
        "zk-mock"
    } else {
        "zk-floor"
    };
    let us0 = user_sys(prefix);
    let all0 = user_sys("");
    let before = s.cpu_time();
    let run = w.run().await?;
    let used = s.cpu_time() - before;
    let us1 = user_sys(prefix);
    let all1 = user_sys("");
    if std::env::var("USER_SYS").is_ok() {
        let ops = run.ops.max(1) as f64;
        let server = (us1.0 - us0.0) + (us1.1 - us0.1);
        let all = (all1.0 - all0.0) + (all1.1 - all0.1);
        eprintln!(
            "{prefix}: user {:.2} µs/op, sys {:.2} µs/op, {:.3} faults/op, {:.3} switches/op; \
             the rest of the process (the client) {:.2} µs/op; cores busy {:.2}",
            (us1.0 - us0.0) * 1e6 / ops,
            (us1.1 - us0.1) * 1e6 / ops,
            (us1.2 - us0.2) / ops,
            (us1.3 - us0.3) / ops,
            (all - server) * 1e6 / ops,
            all / run.wall.as_secs_f64().max(1e-9),
        );
    }
    if steady && op == Op::Create {
        remove_created(clients, &warm_root, (per / 10).max(5)).await?;
        remove_created(clients, &root, per).await?;
    }
    if let Some(m) = s.mock_handle() {
        m.clear_recording();
    }
    Ok((
        used.as_secs_f64() * 1e6 / run.ops.max(1) as f64,
        run.throughput(),
    ))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), BoxError> {
    let args = Args::parse();
    let ops: Vec<Op> = Op::ALL
        .into_iter()
        .filter(|o| args.ops.iter().any(|n| n == o.name()))
        .collect();
    let mock = Server::mock().await?;
    let floor = Server::floor()?;
    println!("Machine: {}\n", benches::machine::describe());
    println!("| op | sessions | floor µs/op | zk-mock µs/op | CPU ratio | throughput, % of floor | ratios per repeat |");
    println!("|---|---|---|---|---|---|---|");
    for &sessions in &args.sessions {
        let fc = connect_many(&floor.connect_string(), sessions).await?;
        let mc = connect_many(&mock.connect_string(), sessions).await?;
        for &op in &ops {
            let per = (args.ops_per_run / sessions).max(20);
            let (mut f_cpu, mut m_cpu, mut f_t, mut m_t, mut ratios) =
                (vec![], vec![], vec![], vec![], vec![]);
            for _ in 0..args.repeats {
                let (fc_, ft) = measure(&floor, &fc, op, per, args.steady).await?;
                let (mc_, mt) = measure(&mock, &mc, op, per, args.steady).await?;
                f_cpu.push(fc_);
                m_cpu.push(mc_);
                f_t.push(ft);
                m_t.push(mt);
                ratios.push(mc_ / fc_);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let r: Vec<String> = ratios.iter().map(|x| format!("{x:.2}")).collect();
            println!(
                "| {} | {sessions} | {:.2} | {:.2} | {:.2}× | {:.0}% | {} |",
                op.name(),
                median(f_cpu.clone()),
                median(m_cpu.clone()),
                median(ratios),
                100.0 * median(m_t) / median(f_t),
                r.join(" ")
            );
        }
    }
    Ok(())
}
