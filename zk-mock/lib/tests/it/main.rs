//! Integration tests of zk-mock through the real `zookeeper-client` crate and
//! through raw sockets. Every expectation is ZooKeeper 3.8's behaviour
//! (as its source in apache/zookeeper and the conformance suite's runs
//! against a real 3.8.0 show it); where the mock differs the test keeps
//! asserting ZooKeeper's behaviour.

mod admin;
mod commit;
mod compat;
mod containers;
mod crud;
mod ensemble;
mod errors;
mod faults;
mod handshake;
mod hostile;
mod mocks;
mod multi;
mod persistent;
mod sessions;
mod stat;
mod support;
mod tls;
mod watches;
mod wire;
