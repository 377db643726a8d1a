//! Every request decoder (multi included): an op code, then a body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zk_mock::proto::decode_request;

fuzz_target!(|data: &[u8]| {
    let Some((&op, body)) = data.split_first() else {
        return;
    };
    // Op codes that exist are small, plus the negative ones (ping, auth,
    // setWatches2 are 100+).
    let op = i32::from(op as i8);
    let _ = decode_request(op, body);
    let _ = decode_request(op + 100, body);
});
