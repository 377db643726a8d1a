//! Plays one scenario many times, `--jobs` at once, each run with its own
//! embedded server, with or without a driver pool (`RunOptions::pool`), and
//! prints the runs per minute and the pool's counters. Wrap it in
//! `/usr/bin/time` for the CPU it took:
//!
//! ```sh
//! cargo build --release -p harness --example driver_pool_bench
//! /usr/bin/time -f '%e s wall, %U+%S s CPU' target/release/examples/driver_pool_bench \
//!     scenarios/semaphore-basic.yaml --implementation kazoo --runs 40 --jobs 2 --pool
//! ```
//!
//! It exits non-zero if a run did not end as the scenario expects.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use harness::implementation::{HostPool, Implementation};
use harness::report::failure_details;
use harness::runner::{run, RunOptions};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (mut file, mut imp, mut runs, mut jobs, mut pool) =
        (None, "zk-lock".to_string(), 20usize, 1usize, false);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--implementation" => imp = args.next().expect("--implementation NAME"),
            "--runs" => runs = args.next().and_then(|n| n.parse().ok()).expect("--runs N"),
            "--jobs" => jobs = args.next().and_then(|n| n.parse().ok()).expect("--jobs J"),
            "--pool" => pool = true,
            f => file = Some(PathBuf::from(f)),
        }
    }
    let file = file.expect("a scenario file");
    let loaded = harness::scenario::load(&file).expect("the scenario loads");
    let implementation = Implementation::parse(&imp).expect("an implementation");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let pool = pool.then(|| HostPool::new(jobs).expect("a pool"));
    if let Some(p) = &pool {
        p.prestart(&implementation);
    }
    let opts = RunOptions {
        pool: pool.clone(),
        implementation,
        ..RunOptions::mock(None)
    };
    let started = Instant::now();
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let failed = runtime.block_on(async {
        let workers: Vec<_> = (0..jobs)
            .map(|_| {
                let (loaded, opts, next) = (loaded.clone(), opts.clone(), next.clone());
                tokio::spawn(async move {
                    let mut failed = 0;
                    while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < runs {
                        let o = run(&loaded, &opts).await;
                        if !o.status.ok() {
                            eprint!("{}", failure_details(&o));
                            failed += 1;
                        }
                    }
                    failed
                })
            })
            .collect();
        let mut failed = 0;
        for w in workers {
            failed += w.await.unwrap_or(1);
        }
        if let Some(p) = &pool {
            p.close().await;
        }
        failed
    });
    let took = started.elapsed().as_secs_f64();
    println!(
        "{} runs of {} on {} ({} at once{}): {:.1} s, {:.0} runs/min, {} not as expected{}",
        runs,
        loaded.name,
        imp,
        jobs,
        if pool.is_some() { ", pooled" } else { "" },
        took,
        runs as f64 * 60.0 / took,
        failed,
        pool.map(|p| format!("; pool: {:?}", p.stats()))
            .unwrap_or_default()
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
