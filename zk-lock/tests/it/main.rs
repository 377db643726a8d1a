//! zk-lock against zk-mock on real sockets.

mod api;
mod exclusion;
mod expiry;
mod faults;
mod interop;
#[cfg(feature = "kazoo")]
mod kazoo;
mod profile;
mod reentrant;
mod rw;
mod support;
mod suspend;
mod wrap;
