//! The lock experiment under criterion, per recipe and N (10, 50, 200):
//!
//! * `notifications_per_handoff`: watch notifications the server's recorder
//!   counted per hand-off (a custom criterion measurement; the predecessor
//!   forms give exactly 1, the herd forms about N/2 on average);
//! * `handoff_latency`: median time from one holder's release returning to
//!   the next holder's acquire returning (settled: every waiter watching);
//! * `total_time`: the N−1 hand-offs, from the first release to the last,
//!   each holder releasing at once.
//!
//! Counts are taken with [`Pace::Settled`]: each holder waits until every
//! remaining waiter watches again before releasing, so each hand-off costs
//! what the recipe's design says (herd: all remaining waiters; predecessor:
//! one) and the count is the same on every run and on a real ZooKeeper.
//!
//! `cargo bench -p benches --bench locks` (`-- herd` to filter). N = 1000
//! runs once per recipe in the comparison runner
//! (`cargo run --release -p benches --bin compare`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use benches::{lock_experiment, LockRun, Pace, Recipe, Server};
use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

const NS: [usize; 3] = [10, 50, 200];

/// A count of notifications, reported as such.
struct Notifications;

struct CountFormatter;

impl ValueFormatter for CountFormatter {
    fn scale_values(&self, _typical: f64, _values: &mut [f64]) -> &'static str {
        "notifications"
    }
    fn scale_throughputs(
        &self,
        _typical: f64,
        _throughput: &Throughput,
        _values: &mut [f64],
    ) -> &'static str {
        "notifications"
    }
    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "notifications"
    }
}

impl Measurement for Notifications {
    type Intermediate = ();
    type Value = f64;
    fn start(&self) {}
    fn end(&self, _: ()) -> f64 {
        0.0
    }
    fn add(&self, a: &f64, b: &f64) -> f64 {
        a + b
    }
    fn zero(&self) -> f64 {
        0.0
    }
    fn to_f64(&self, v: &f64) -> f64 {
        *v
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &CountFormatter
    }
}

static RUN: AtomicU64 = AtomicU64::new(0);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

async fn one(server: &Server, recipe: Recipe, n: usize, pace: Pace) -> LockRun {
    let dir = format!(
        "/bench/{}-{n}-{}",
        recipe.name(),
        RUN.fetch_add(1, Ordering::Relaxed)
    );
    lock_experiment(server, recipe, n, &dir, pace)
        .await
        .unwrap_or_else(|e| panic!("{} N={n}: {e}", recipe.name()))
}

fn notifications(c: &mut Criterion<Notifications>) {
    let rt = runtime();
    let server = rt.block_on(Server::mock()).expect("mock");
    let mut g = c.benchmark_group("notifications_per_handoff");
    g.sample_size(10).warm_up_time(Duration::from_millis(1));
    for recipe in Recipe::ALL {
        for n in NS {
            g.bench_with_input(BenchmarkId::new(recipe.name(), n), &n, |b, &n| {
                b.to_async(&rt).iter_custom(|iters| {
                    let server = &server;
                    async move {
                        let mut total = 0.0;
                        for _ in 0..iters {
                            total += one(server, recipe, n, Pace::Settled).await.per_handoff();
                        }
                        total
                    }
                })
            });
        }
    }
    g.finish();
}

fn timing(c: &mut Criterion) {
    let rt = runtime();
    let server = rt.block_on(Server::mock()).expect("mock");
    type Pick = fn(&LockRun) -> Duration;
    for (name, pace, pick) in [
        (
            "handoff_latency",
            Pace::Settled,
            (|r: &LockRun| r.median_handoff()) as Pick,
        ),
        (
            "total_time",
            Pace::Immediate,
            (|r: &LockRun| r.wall) as Pick,
        ),
    ] {
        let mut g = c.benchmark_group(name);
        g.sample_size(10).warm_up_time(Duration::from_millis(200));
        for recipe in Recipe::ALL {
            for n in NS {
                g.bench_with_input(BenchmarkId::new(recipe.name(), n), &n, |b, &n| {
                    b.to_async(&rt).iter_custom(|iters| {
                        let server = &server;
                        async move {
                            let mut total = Duration::ZERO;
                            for _ in 0..iters {
                                total += pick(&one(server, recipe, n, pace).await);
                            }
                            total
                        }
                    })
                });
            }
        }
        g.finish();
    }
}

criterion_group! {
    name = counts;
    config = Criterion::default().with_measurement(Notifications).without_plots();
    targets = notifications
}
criterion_group!(times, timing);
criterion_main!(counts, times);
