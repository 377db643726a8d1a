//! Heap allocations per request on the server's request path, without
//! sockets (the socketless server the `core` bench uses): a count, so it
//! does not move with the machine's noise.
//! `cargo run --release -p benches --example allocs` (with `NO_RECORD=1`: the
//! recorder off, to see its share).

use bytes::{Bytes, BytesMut};
use zk_mock::codec::Record;
use zk_mock::proto::{
    Acl, ConnectRequest, CreateRequest, DeleteRequest, OpCode, PathWatchRequest, RequestHeader,
    SetDataRequest,
};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn counts() -> (u64, u64) {
    let s = dhat::HeapStats::get();
    (s.total_blocks, s.total_bytes)
}

fn request_frame(xid: i32, op: OpCode, body: &dyn Fn(&mut BytesMut)) -> Bytes {
    zk_mock::codec::framed(64, |b| {
        RequestHeader {
            xid,
            op_type: op as i32,
        }
        .encode(b);
        body(b);
    })
}

fn main() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let builder = zk_mock::ZkMock::builder()
        .clock(zk_mock::clock::ClockMode::Manual)
        .record(std::env::var("NO_RECORD").is_err());
    let mut s = zk_mock::fuzzing::Server::with_builder(&builder);
    let c = s.open();
    s.feed(
        c,
        &zk_mock::codec::framed(64, |b| {
            ConnectRequest {
                protocol_version: 0,
                last_zxid_seen: 0,
                time_out: 30_000,
                session_id: 0,
                passwd: Some(Bytes::from_static(&[0; 16])),
                read_only: Some(false),
            }
            .encode(b)
        }),
    );
    let n = 2_000;
    let create = |i: i32| {
        request_frame(i + 2, OpCode::Create, &|b| {
            CreateRequest {
                path: format!("/b/n{i}"),
                data: Some(Bytes::from_static(&[7; 100])),
                acl: Acl::open_unsafe(),
                flags: 0,
            }
            .encode(b)
        })
    };
    s.feed(
        c,
        &request_frame(1, OpCode::Create, &|b| {
            CreateRequest {
                path: "/b".into(),
                data: None,
                acl: Acl::open_unsafe(),
                flags: 0,
            }
            .encode(b)
        }),
    );
    s.drain();
    let measure = |name: &str, frames: Vec<Bytes>, s: &mut zk_mock::fuzzing::Server| {
        let (a0, b0) = counts();
        for (i, f) in frames.iter().enumerate() {
            s.feed(c, f);
            if i % 64 == 63 {
                s.drain();
            }
        }
        s.drain();
        let (a1, b1) = counts();
        let k = frames.len() as f64;
        println!(
            "{name:<10} {:>6.1} allocations, {:>7.0} bytes per request",
            (a1 - a0) as f64 / k,
            (b1 - b0) as f64 / k
        );
    };
    for round in 0..3 {
        let creates: Vec<Bytes> = (0..n).map(create).collect();
        let deletes: Vec<Bytes> = (0..n)
            .map(|i| {
                request_frame(i + 2, OpCode::Delete, &|b| {
                    DeleteRequest {
                        path: format!("/b/n{i}"),
                        version: -1,
                    }
                    .encode(b)
                })
            })
            .collect();
        let reads = |op| -> Vec<Bytes> {
            (0..n)
                .map(|i| {
                    request_frame(i + 2, op, &|b| {
                        PathWatchRequest {
                            path: "/b".into(),
                            watch: false,
                        }
                        .encode(b)
                    })
                })
                .collect()
        };
        let sets: Vec<Bytes> = (0..n)
            .map(|i| {
                request_frame(i + 2, OpCode::SetData, &|b| {
                    SetDataRequest {
                        path: "/b".into(),
                        data: Some(Bytes::from_static(&[7; 100])),
                        version: -1,
                    }
                    .encode(b)
                })
            })
            .collect();
        if round == 2 {
            println!("-- round {round}");
            measure("create", creates, &mut s);
            measure("getData", reads(OpCode::GetData), &mut s);
            measure("exists", reads(OpCode::Exists), &mut s);
            measure("setData", sets, &mut s);
            measure("delete", deletes, &mut s);
        } else {
            for f in creates.iter().chain(&deletes) {
                s.feed(c, f);
            }
            s.drain();
        }
    }
}
