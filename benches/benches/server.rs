//! Server benchmarks on the embedded mock, through `zookeeper-client`:
//!
//! * `ops/<op>/<sessions>`: create, getData, setData, exists, getChildren
//!   and delete with 1, 16 and 64 sessions, one op outstanding per session
//!   (criterion reports time per op and ops/s);
//! * `connect/1000`: 1000 sessions connecting at once;
//! * `fanout/1000`: one setData until all of 1000 getData watchers have
//!   their notification;
//! * `codec/*`: encoding and decoding common records, no I/O;
//! * `core/<op>`: the server's own work per request, without sockets or
//!   tasks: a request frame handed to a connection's reader as the socket
//!   reader hands it (decoding, the state lock, the tree, the watches, the
//!   observers, the reply queued). The kernel's share of a round trip,
//!   which swamps it in `ops` and `compare` on a shared 2-core machine, is
//!   left out, so a change to the core shows in it.
//!
//! `cargo bench -p benches --bench server`. The side-by-side comparison
//! with a real ZooKeeper, p50/p99 included, is
//! `cargo run --release -p benches --bin compare`.

use std::time::Duration;

use benches::socketless::{self, create_frame, delete_frame, feed_all, read_frame, set_data_frame};
use benches::{connect_many, connect_storm, fanout, op_workload, Op, Server};
use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use zk_mock::codec::Record;
use zk_mock::proto::{
    Acl, CreateRequest, GetDataResponse, OpCode, PathWatchRequest, ReplyHeader, RequestHeader,
    Stat, WatcherEvent,
};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn ops(c: &mut Criterion) {
    let rt = runtime();
    let server = rt.block_on(Server::mock()).expect("mock");
    if let Some(m) = server.mock_handle() {
        // Recording every request would be part of the measurement otherwise.
        m.clear_recording();
    }
    let mut g = c.benchmark_group("ops");
    g.sample_size(20)
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(1));
    for sessions in [1usize, 16, 64] {
        let clients = rt
            .block_on(connect_many(&server.connect_string(), sessions))
            .expect("sessions");
        for op in Op::ALL {
            g.bench_with_input(BenchmarkId::new(op.name(), sessions), &sessions, |b, &s| {
                b.to_async(&rt).iter_custom(|iters| {
                    let clients = &clients;
                    async move {
                        let per = (iters as usize).div_ceil(s).max(1);
                        let run = op_workload(clients, op, per).await.expect("workload");
                        run.wall.mul_f64(iters as f64 / run.ops as f64)
                    }
                })
            });
            if let Some(m) = server.mock_handle() {
                m.clear_recording();
            }
        }
    }
    g.finish();
}

/// A socketless server with the defaults a test gets (the recorder on, at
/// its default capacity) but a manual session clock, one connection
/// handshaken, and `/b` created.
fn core_server() -> zk_mock::fuzzing::Server {
    // The session clock is manual: nothing expires between benchmarks.
    socketless::server(&zk_mock::ZkMock::builder().clock(zk_mock::clock::ClockMode::Manual))
}

/// Nodes created (or deleted) per round in `core/create` and
/// `core/delete`: the tree stays at a steady size, as a test's does.
const CORE_ROUND: u64 = 2_000;

fn core(c: &mut Criterion) {
    let mut g = c.benchmark_group("core");
    g.throughput(Throughput::Elements(1));
    // One server per benchmark, at a steady size: creates are timed in
    // rounds of CORE_ROUND, each followed by the (untimed) deletes of what
    // it created, and deletes the other way round. The requests are made
    // beforehand: that is the client's work.
    let rounds = |iters: u64, timed_create: bool| {
        let mut s = core_server();
        let mut total = Duration::ZERO;
        let mut done = 0u64;
        while done < iters {
            let n = CORE_ROUND.min(iters - done);
            let creates: Vec<Bytes> = (0..n)
                .map(|i| create_frame(i as i32 + 2, &format!("/b/n{i}")))
                .collect();
            let deletes: Vec<Bytes> = (0..n)
                .map(|i| delete_frame(i as i32 + 2, &format!("/b/n{i}")))
                .collect();
            let c = feed_all(&mut s, &creates);
            let d = feed_all(&mut s, &deletes);
            total += if timed_create { c } else { d };
            done += n;
        }
        total
    };
    g.bench_function("create", |b| b.iter_custom(|iters| rounds(iters, true)));
    g.bench_function("delete", |b| b.iter_custom(|iters| rounds(iters, false)));
    let mut s = core_server();
    for (name, op) in [("getData", OpCode::GetData), ("exists", OpCode::Exists)] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let frames: Vec<Bytes> = (0..iters)
                    .map(|i| read_frame(i as i32 + 2, op, "/b"))
                    .collect();
                feed_all(&mut s, &frames)
            })
        });
    }
    g.bench_function("setData", |b| {
        b.iter_custom(|iters| {
            let frames: Vec<Bytes> = (0..iters)
                .map(|i| set_data_frame(i as i32 + 2, "/b"))
                .collect();
            feed_all(&mut s, &frames)
        })
    });
    g.finish();
}

fn connect_and_fanout(c: &mut Criterion) {
    let rt = runtime();
    let server = rt.block_on(Server::mock()).expect("mock");
    let cs = server.connect_string();
    let mut g = c.benchmark_group("sessions");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    g.bench_function("connect/1000", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let cs = cs.clone();
            async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let (d, clients) = connect_storm(&cs, 1000).await.expect("connect");
                    total += d;
                    drop(clients);
                }
                total
            }
        })
    });
    let watchers = rt.block_on(connect_many(&cs, 1000)).expect("watchers");
    let writer = rt.block_on(connect_many(&cs, 1)).expect("writer").remove(0);
    g.bench_function("fanout/1000", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let (watchers, writer) = (&watchers, &writer);
            async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    total += fanout(watchers, writer).await.expect("fanout");
                }
                total
            }
        })
    });
    g.finish();
}

fn codec(c: &mut Criterion) {
    let stat = Stat {
        czxid: 0x1_0000_0042,
        mzxid: 0x1_0000_0043,
        ctime: 1_700_000_000_000,
        mtime: 1_700_000_000_001,
        version: 3,
        cversion: 7,
        aversion: 0,
        ephemeral_owner: 0,
        data_length: 100,
        num_children: 10,
        pzxid: 0x1_0000_0044,
    };
    let get = (
        RequestHeader {
            xid: 42,
            op_type: 4,
        },
        PathWatchRequest {
            path: "/locks/report/_c_0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0-lock-0000000042".into(),
            watch: true,
        },
    );
    let reply = (
        ReplyHeader {
            xid: 42,
            zxid: 0x1_0000_0044,
            err: 0,
        },
        GetDataResponse {
            data: Some(Bytes::from(vec![7u8; 100])),
            stat,
        },
    );
    let create = CreateRequest {
        path: "/locks/report/_c_0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0-lock-".into(),
        data: Some(Bytes::from_static(b"contender")),
        acl: Acl::open_shared(),
        flags: 3,
    };
    let event = WatcherEvent {
        event_type: 2,
        state: 3,
        path: "/locks/report/_c_0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0-lock-0000000041".into(),
    };
    let mut g = c.benchmark_group("codec");
    g.throughput(Throughput::Elements(1));
    let encode = |f: &dyn Fn(&mut BytesMut)| {
        let mut b = BytesMut::with_capacity(256);
        f(&mut b);
        b
    };
    g.bench_function("encode/getData request", |b| {
        b.iter(|| {
            encode(&|buf| {
                get.0.encode(buf);
                get.1.encode(buf);
            })
        })
    });
    let bytes = encode(&|buf| get.1.encode(buf)).freeze();
    g.bench_function("decode/getData request", |b| {
        b.iter(|| PathWatchRequest::decode(&bytes).expect("decode"))
    });
    g.bench_function("encode/getData reply", |b| {
        b.iter(|| {
            encode(&|buf| {
                reply.0.encode(buf);
                reply.1.encode(buf);
            })
        })
    });
    let bytes = encode(&|buf| reply.1.encode(buf)).freeze();
    g.bench_function("decode/getData reply", |b| {
        b.iter(|| GetDataResponse::decode(&bytes).expect("decode"))
    });
    let bytes = create.to_bytes();
    g.bench_function("decode/create request", |b| {
        b.iter(|| zk_mock::proto::decode_request(15, &bytes).expect("decode"))
    });
    g.bench_function("encode/watcher event", |b| {
        b.iter(|| encode(&|buf| event.encode(buf)))
    });
    g.finish();
}

criterion_group!(benches, codec, core, ops, connect_and_fanout);
criterion_main!(benches);
