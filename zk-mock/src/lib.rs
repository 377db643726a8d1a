//! # zk-mock
//!
//! An in-process server that speaks ZooKeeper's wire protocol (Jute over TCP)
//! and behaves like a standalone Apache ZooKeeper 3.8: sessions, every read
//! and write op, watches, multi, ACLs and zxid ordering exactly as ZooKeeper
//! does them, so real clients cannot tell the difference. It starts in well
//! under a millisecond, on a free loopback port, with no Java and no Docker.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use zk_mock::ZkMock;
//!
//! let zk = ZkMock::start().await;
//! // Hand `zk.connect_string()` to any ZooKeeper client.
//! let addr = zk.connect_string();
//! # let _ = addr;
//! // Dropping the handle shuts the server down.
//! # }
//! ```
//!
//! ## Module map
//! - [`codec`]: framing and Jute primitives (nom over bytes, no `unsafe`).
//! - [`proto`]: the records, one file per family, and request decoding.
//! - [`tree`]: the data tree and every write/read rule in ZooKeeper's check order.
//! - `session`, `watch`, `state`, `dispatch`: sessions, watches, and applying
//!   requests under one lock; `handler` and `server` are the async shell.
//! - [`ZkMock`] / [`ZkMockBuilder`]: the test-facing API.
//!
//! Differences from ZooKeeper are documented where they live; the
//! conformance suite (`cargo test --features conformance`) compares the mock
//! against a real ZooKeeper 3.8 operation by operation.

#![forbid(unsafe_code)]

pub mod acl;
pub mod client;
mod clock;
pub mod codec;
mod dispatch;
mod error;
mod four_letter;
mod handler;
mod mock;
pub mod proto;
mod server;
mod session;
mod state;
pub mod tree;
mod watch;

pub use error::Error;
pub use four_letter::VERSION;
pub use mock::{ZkMock, ZkMockBuilder};
pub use session::password_for;
