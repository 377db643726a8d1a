//! The request path's cost per write as the tree grows, without sockets:
//! creates spread over 16 directories in rounds of 40,000 (as `ops_cpu`'s
//! create workload makes them), then setData and delete rounds over what
//! was made. One thread, no kernel: a change to the core's tables shows
//! here in user time alone.
//! `cargo run --release -p benches --example bigtree -- [ROUNDS]`
//! (`RECORD_CAPACITY=n`: the recorder's capacity, 100,000 by default;
//! `NO_RECORD=1`: the recorder off).

use benches::socketless::{self, create_frame, delete_frame, feed_all, set_data_frame};
use bytes::Bytes;

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10);
    let mut builder = zk_mock::ZkMock::builder().clock(zk_mock::clock::ClockMode::Manual);
    if let Some(c) = std::env::var("RECORD_CAPACITY")
        .ok()
        .and_then(|c| c.parse().ok())
    {
        builder = builder.recorder_capacity(c);
    }
    if std::env::var("NO_RECORD").is_ok() {
        builder = builder.record(false);
    }
    let mut s = socketless::server(&builder);
    let dirs = 16;
    let per = 40_000;
    let mk: Vec<Bytes> = (0..dirs)
        .map(|d| create_frame(2, &format!("/b/s{d}")))
        .collect();
    feed_all(&mut s, &mk);
    let path = |r: usize, i: usize| format!("/b/s{}/c{r}-{i}", i % dirs);
    // Each round's time per request: `per` requests made by `frame`, one
    // per path of the round.
    let mut time_rounds = |frame: fn(i32, &str) -> Bytes| -> Vec<f64> {
        (0..rounds)
            .map(|r| {
                let frames: Vec<Bytes> =
                    (0..per).map(|i| frame(i as i32 + 2, &path(r, i))).collect();
                feed_all(&mut s, &frames).as_nanos() as f64 / per as f64
            })
            .collect()
    };
    let creates = time_rounds(create_frame);
    let sets = time_rounds(set_data_frame);
    let deletes = time_rounds(delete_frame);
    let show = |name: &str, v: &[f64]| {
        let mut m = v.to_vec();
        m.sort_by(f64::total_cmp);
        let each: Vec<String> = v.iter().map(|x| format!("{x:.0}")).collect();
        println!(
            "{name:<8} median {:>6.0} ns per request; by round: {}",
            m[m.len() / 2],
            each.join(" ")
        );
    };
    show("create", &creates);
    show("setData", &sets);
    show("delete", &deletes);
}
