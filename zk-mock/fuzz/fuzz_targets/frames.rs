//! The frame splitter and the handshake's decoder: any bytes, any limit.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use zk_mock::codec::{split_frame, Record};
use zk_mock::proto::ConnectRequest;

fuzz_target!(|data: &[u8]| {
    let Some((&limit, rest)) = data.split_first() else {
        return;
    };
    let max = [16usize, 1024, 0xfffff][usize::from(limit) % 3];
    let mut buf = BytesMut::from(rest);
    while let Ok(Some(frame)) = split_frame(&mut buf, max) {
        assert!(frame.len() <= max);
        let _ = ConnectRequest::decode(&frame);
    }
    let _ = ConnectRequest::decode(rest);
});
