//! The `zk-mock` binary as users run it: every server setting as a flag,
//! `--exit-with-stdin`, and the admin interface it serves, observed through
//! real clients over real sockets.

mod admin;
mod flags;
#[path = "../common/binary.rs"]
mod process;
/// The library's test helpers (connecting real and raw clients, bounded
/// waits, the admin interface's HTTP client); this crate uses a few.
#[allow(dead_code)]
#[path = "../../lib/tests/it/support.rs"]
mod support;
