//! Server benchmarks on the embedded mock, through `zookeeper-client`:
//!
//! * `ops/<op>/<sessions>`: create, getData, setData, exists, getChildren
//!   and delete with 1, 16 and 64 sessions, one op outstanding per session
//!   (criterion reports time per op and ops/s);
//! * `connect/1000`: 1000 sessions connecting at once;
//! * `fanout/1000`: one setData until all of 1000 getData watchers have
//!   their notification;
//! * `codec/*`: encoding and decoding common records, no I/O.
//!
//! `cargo bench -p benches --bench server`. The side-by-side comparison
//! with a real ZooKeeper, p50/p99 included, is
//! `cargo run --release -p benches --bin compare`.

use std::time::Duration;

use benches::{connect_many, connect_storm, fanout, op_workload, Op, Server};
use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use zk_mock::codec::Record;
use zk_mock::proto::{
    Acl, CreateRequest, GetDataResponse, PathWatchRequest, ReplyHeader, RequestHeader, Stat,
    WatcherEvent,
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
        acl: Acl::open_unsafe(),
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

criterion_group!(benches, codec, ops, connect_and_fanout);
criterion_main!(benches);
