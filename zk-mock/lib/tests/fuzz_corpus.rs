//! Replays the committed fuzz corpus (`fuzz/corpus/<target>/`: seeds from
//! kazoo's traffic, the inputs libFuzzer kept for coverage, and every input
//! a crash was ever found with) through the same entry points as the
//! cargo-fuzz targets, so the default `cargo test` keeps them fixed
//! without libFuzzer or a nightly flag.

use std::path::{Path, PathBuf};

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
        zk_mock::fuzzing::frames(&data);
    }
}

#[test]
fn requests_corpus() {
    let decoded = corpus("requests")
        .iter()
        .filter(|(_, data)| zk_mock::fuzzing::requests(data))
        .count();
    assert!(decoded > 0, "some seeds are well-formed requests");
}

/// Runs every input of `target`'s corpus through `run`; the bytes the
/// server queued for clients, all inputs together.
fn replay(target: &str, run: fn(&[u8]) -> zk_mock::fuzzing::Server) -> usize {
    corpus(target)
        .into_iter()
        .map(|(path, data)| {
            std::panic::catch_unwind(|| run(&data))
                .unwrap_or_else(|_| panic!("{} panicked", path.display()))
                .sent
        })
        .sum()
}

#[test]
fn server_corpus() {
    let sent = replay("server", zk_mock::fuzzing::run_script);
    assert!(sent > 0, "the server answered something");
}

#[test]
fn ensemble_corpus() {
    let sent = replay("ensemble", zk_mock::fuzzing::run_ensemble_script);
    assert!(sent > 0, "the servers answered something");
}

/// Each hand-written ensemble seed gets past its handshakes: the servers
/// queue more frames than one answer per connection.
#[test]
fn the_ensemble_seeds_are_served() {
    let seeds: Vec<_> = corpus("ensemble")
        .into_iter()
        .filter(|(p, _)| p.to_string_lossy().contains("seed-"))
        .collect();
    assert!(seeds.len() >= 10, "{} seeds", seeds.len());
    for (path, data) in seeds {
        let s = zk_mock::fuzzing::run_ensemble_script(&data);
        assert!(
            s.frames > s.connections(),
            "{}: {} frames for {} connections",
            path.display(),
            s.frames,
            s.connections()
        );
    }
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
