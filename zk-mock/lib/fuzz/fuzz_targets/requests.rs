//! Every request decoder (multi included): an op code, then a body (see
//! `zk_mock::fuzzing::requests`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    zk_mock::fuzzing::requests(data);
});
