//! Structure-aware: connections, handshakes, requests and clock moves
//! (see `zk_mock::fuzzing::run_script`) run against the whole server
//! state, whose invariants are checked after each input; with
//! `ZK_MOCK_FUZZ_TWICE=1`, each input also runs twice and must queue the
//! same bytes both times.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    zk_mock::fuzzing::fuzz(zk_mock::fuzzing::run_script, data);
});
