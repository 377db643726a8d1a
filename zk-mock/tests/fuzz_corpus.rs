//! Replays the committed fuzz corpus (`fuzz/corpus/<target>/`: seeds from
//! kazoo's traffic, the inputs libFuzzer kept for coverage, and every input
//! a crash was ever found with) through the same entry points as the
//! cargo-fuzz targets, so the default `cargo test` keeps them fixed
//! without libFuzzer or a nightly flag.

use std::path::{Path, PathBuf};

use bytes::BytesMut;
use zk_mock::codec::{split_frame, Record};
use zk_mock::proto::{decode_request, ConnectRequest};

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(
        files.len() > 10,
        "{}: {} inputs",
        dir.display(),
        files.len()
    );
    files
        .into_iter()
        .map(|p| {
            let data = std::fs::read(&p).unwrap();
            (p, data)
        })
        .collect()
}

#[test]
fn frames_corpus() {
    for (_, data) in corpus("frames") {
        let Some((&limit, rest)) = data.split_first() else {
            continue;
        };
        let max = [16usize, 1024, 0xfffff][usize::from(limit) % 3];
        let mut buf = BytesMut::from(rest);
        while let Ok(Some(frame)) = split_frame(&mut buf, max) {
            assert!(frame.len() <= max);
            let _ = ConnectRequest::decode(&frame);
        }
    }
}

#[test]
fn requests_corpus() {
    let mut decoded = 0;
    for (_, data) in corpus("requests") {
        let Some((&op, body)) = data.split_first() else {
            continue;
        };
        let op = i32::from(op as i8);
        decoded += usize::from(decode_request(op, body).is_ok());
        let _ = decode_request(op + 100, body);
    }
    assert!(decoded > 0, "some seeds are well-formed requests");
}

#[test]
fn server_corpus() {
    let mut sent = 0;
    for (path, data) in corpus("server") {
        let s = std::panic::catch_unwind(|| zk_mock::fuzzing::run_script(&data))
            .unwrap_or_else(|_| panic!("{} panicked", path.display()));
        sent += s.sent;
    }
    assert!(sent > 0, "the server answered something");
}

/// A kazoo session replayed as a script reaches past the handshake: the
/// server answers far more than a ConnectResponse.
#[test]
fn a_kazoo_seed_is_served() {
    let seeds: Vec<_> = corpus("server")
        .into_iter()
        .filter(|(p, _)| p.to_string_lossy().contains("seed-kazoo"))
        .collect();
    assert!(!seeds.is_empty());
    let most = seeds
        .iter()
        .map(|(_, d)| zk_mock::fuzzing::run_script(d).sent)
        .max()
        .unwrap();
    assert!(most > 1000, "{most} bytes answered");
}
