//! Structure-aware, on an ensemble: connections to any server, handshakes
//! that move sessions between servers, well-formed requests on a small
//! tree, clock moves, kills, partitions, restarts, lags, elections and
//! read-only mode (see `zk_mock::fuzzing::run_ensemble_script`), with
//! every replica's invariants checked after each input; with
//! `ZK_MOCK_FUZZ_TWICE=1`, each input also runs twice and must queue the
//! same bytes both times.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let first = zk_mock::fuzzing::run_ensemble_script(data);
    if twice() {
        // Each run's hash tables have a seed of their own: a reply that
        // follows a table's order differs between the two.
        let second = zk_mock::fuzzing::run_ensemble_script(data);
        assert_eq!(
            (first.sent, first.frames, first.digest),
            (second.sent, second.frames, second.digest),
            "two runs of one input queued different bytes"
        );
    }
});

/// `ZK_MOCK_FUZZ_TWICE=1`: every input runs twice and must queue the same
/// bytes both times (a search for nondeterminism, at half the speed).
fn twice() -> bool {
    static TWICE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TWICE.get_or_init(|| std::env::var_os("ZK_MOCK_FUZZ_TWICE").is_some_and(|v| v == "1"))
}
