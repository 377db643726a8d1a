//! Heap allocations per request on the server's request path, without
//! sockets (the socketless server the `core` bench uses): a count, so it
//! does not move with the machine's noise.
//! `cargo run --release -p benches --example allocs` (with `NO_RECORD=1`: the
//! recorder off, to see its share; with `DHAT_OUT=dhat.json`: where each
//! allocation is made, for `dh_view.html`, in a build with line tables:
//! `CARGO_PROFILE_RELEASE_DEBUG=line-tables-only`).

use benches::socketless::{self, create_frame, delete_frame, feed_all, read_frame, set_data_frame};
use bytes::Bytes;
use zk_mock::proto::OpCode;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn counts() -> (u64, u64) {
    let s = dhat::HeapStats::get();
    (s.total_blocks, s.total_bytes)
}

fn main() {
    // DHAT_OUT=file: also write each allocation's site (for dhat's viewer).
    let _profiler = match std::env::var("DHAT_OUT") {
        Ok(file) => dhat::Profiler::builder().file_name(file).build(),
        Err(_) => dhat::Profiler::builder().testing().build(),
    };
    let builder = zk_mock::ZkMock::builder()
        .clock(zk_mock::clock::ClockMode::Manual)
        .record(std::env::var("NO_RECORD").is_err());
    let mut s = socketless::server(&builder);
    let measure = |name: &str, frames: Vec<Bytes>, s: &mut zk_mock::fuzzing::Server| {
        let (a0, b0) = counts();
        feed_all(s, &frames);
        let (a1, b1) = counts();
        let k = frames.len() as f64;
        println!(
            "{name:<11} {:>6.1} allocations, {:>7.0} bytes per request",
            (a1 - a0) as f64 / k,
            (b1 - b0) as f64 / k
        );
    };
    let n = 2_000;
    // A node with ten children, as `compare`'s getChildren lists.
    let ten: Vec<Bytes> = std::iter::once(create_frame(1, "/c"))
        .chain((0..10).map(|i| create_frame(1, &format!("/c/k{i}"))))
        .collect();
    feed_all(&mut s, &ten);
    // Two rounds to warm the tables up, then one measured.
    for round in 0..3 {
        let creates: Vec<Bytes> = (0..n)
            .map(|i| create_frame(i + 2, &format!("/b/n{i}")))
            .collect();
        let deletes: Vec<Bytes> = (0..n)
            .map(|i| delete_frame(i + 2, &format!("/b/n{i}")))
            .collect();
        if round < 2 {
            feed_all(&mut s, &creates);
            feed_all(&mut s, &deletes);
            continue;
        }
        let reads = |op| -> Vec<Bytes> { (0..n).map(|i| read_frame(i + 2, op, "/b")).collect() };
        let sets: Vec<Bytes> = (0..n).map(|i| set_data_frame(i + 2, "/b")).collect();
        println!("-- round {round}");
        measure("create", creates, &mut s);
        measure("getData", reads(OpCode::GetData), &mut s);
        measure("exists", reads(OpCode::Exists), &mut s);
        let listings = (0..n)
            .map(|i| read_frame(i + 2, OpCode::GetChildren, "/c"))
            .collect();
        measure("getChildren", listings, &mut s);
        measure("setData", sets, &mut s);
        measure("delete", deletes, &mut s);
    }
}
