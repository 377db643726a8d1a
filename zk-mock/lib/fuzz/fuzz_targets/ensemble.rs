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
    zk_mock::fuzzing::fuzz(zk_mock::fuzzing::run_ensemble_script, data);
});
