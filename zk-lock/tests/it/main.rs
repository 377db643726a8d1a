//! zk-lock against zk-mock on real sockets.

mod api;
mod exclusion;
mod expiry;
mod faults;
mod interop;
mod profile;
mod reentrant;
mod rw;
mod support;
