//! The frame splitter and the handshake's decoder: any bytes, any limit
//! (see `zk_mock::fuzzing::frames`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    zk_mock::fuzzing::frames(data);
});
