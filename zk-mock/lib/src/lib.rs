//! # zk-mock
//!
//! An in-process server that speaks ZooKeeper's wire protocol (Jute over TCP)
//! and behaves like a standalone Apache ZooKeeper 3.8: sessions, every read
//! and write op, watches, multi, ACLs and zxid ordering exactly as ZooKeeper
//! does them, so real clients cannot tell the difference. It starts in well
//! under a millisecond, on a free loopback port, with no Java and no Docker.
//!
//! A test:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! // #[tokio::test]
//! // async fn my_code_works_against_zookeeper() {
//! let zk = zk_mock::ZkMock::start().await; // free loopback port, < 1 ms
//! let client = zookeeper_client::Client::connect(&zk.connect_string())
//!     .await
//!     .unwrap();
//! // ... exercise your code ...
//! assert_eq!(client.list_children("/").await.unwrap(), ["zookeeper"]);
//! // } // dropping `zk` stops the server and closes every connection
//! # }
//! ```
//!
//! with, in `Cargo.toml`:
//!
//! ```toml
//! [dev-dependencies]
//! zk-mock = "0.1"
//! zookeeper-client = { version = "0.11", features = ["tokio"] }
//! tokio = { version = "1", features = ["macros", "rt"] }
//! ```
//!
//! Its methods make the rare failure happen at an exact request and show
//! what the server saw: fault rules ([`fault::Rule`]), verbs such as
//! [`ZkMock::expire_session`], and the recorder, queried in place
//! ([`ZkMock::inspect`], [`record::RequestQuery`]):
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use zk_mock::fault::{OpFamily, Rule};
//! use zk_mock::{proto::ErrorCode, record::RequestQuery, ZkMock};
//! use zookeeper_client::{Acls, Client, CreateMode, Error};
//!
//! let zk = ZkMock::start().await;
//! let client = Client::connect(&zk.connect_string()).await?;
//! // The next create fails with NODEEXISTS, once (checked when the guard drops).
//! let when = Rule::when().op(OpFamily::Create).path("/a").nth(1);
//! let rule = zk.rule(when.fail(ErrorCode::NodeExists)).expect(1);
//! let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
//! assert_eq!(client.create("/a", &[], &open).await.unwrap_err(), Error::NodeExists);
//! drop(rule);
//! let failed = zk.inspect(|log| log.requests().by_path("/a").error(ErrorCode::NodeExists).count());
//! assert_eq!(failed, 1);
//!
//! // Expire the session as the server would, and wait until it is gone.
//! zk.expire_session(client.session_id().0);
//! zk.wait_until(Duration::from_secs(5), |log| log.session_ids().is_empty()).await?;
//! # Ok(())
//! # }
//! ```
//!
//! ## Module map
//! - [`codec`]: framing and Jute primitives (nom over bytes, no `unsafe`).
//! - [`proto`]: the records, one file per family, and request decoding.
//! - [`tree`]: the data tree and every write/read rule in ZooKeeper's check order.
//! - `session`, `watch`, `txn`, `ensemble`: sessions, watches, the
//!   transaction and how a replica applies it, each server's replica.
//! - `core/`: the pipeline ZooKeeper has (prep → committed txn → each
//!   server's apply) on one `State` under one lock, with connections,
//!   sessions' ends, the ensemble's controls and the four-letter words; no
//!   other module touches the state but through its methods. `outbox` keeps
//!   the connections' channels and gates apart from the data model;
//!   `observe` is what watches the pipeline without being part of it (the
//!   fault rules, the counters behind [`Metrics`], `wait_until`'s signal,
//!   and the feed of the [`record`] log, which sits below it); `handler`
//!   and `server` are the async shell.
//!   `ARCHITECTURE.md` in the repository has the layers and their rules.
//! - [`ZkMock`] / [`ZkMockBuilder`]: the test-facing API (`mock/`: the
//!   handle, its [`Control`] clone, [`Metrics`], the guards, the builder);
//!   [`fault`], [`record`], [`snapshot`], [`clock`]: what its methods take
//!   and give; [`SessionId`] names sessions everywhere.
//!
//! ## Features and the binary
//! By default the crate is the server, its faults, the recorder and
//! snapshots. Features add the rest: `admin` the HTTP+JSON admin interface
//! (`ZkMock::serve_admin`), `tls` a secure client port
//! (`ZkMockBuilder::tls`), `real` `real::RealZk` (Apache ZooKeeper itself in
//! a child JVM, for differential tests). The `zk-mock` binary, for test
//! suites in other languages, is the `zk-mock-cli` package, which depends on
//! this one (`cargo install --path zk-mock` in the repository).
//!
//! ## Which ZooKeeper
//! The judge is Apache ZooKeeper **3.8.0** (Debian's `zookeeper` package):
//! the conformance suite (`cargo test -p zk-mock --features conformance
//! --test conformance`) runs the same operations against it and against the
//! mock and compares every reply, Stat and notification. Where 3.8 point
//! releases differ, the mock does what 3.8.0 does:
//! - `exists` does not check READ on the node (3.8.4 added that check), but
//!   notifications are filtered by READ on the node (the parent's, for
//!   NodeChildrenChanged), as Debian's 3.8.0 carries the CVE-2024-23944 fix;
//! - `create` and `create2` inside `multi` answer a type-1 CreateResult with
//!   the path only (the Stat-carrying type 15 arrived in 3.8.2), while
//!   `createContainer` and `createTTL` answer type 15 with a Stat;
//! - a standalone `check` (13) is a transaction: failures are answered, a
//!   success is not answered at all (3.8.6 answers UNIMPLEMENTED and closes);
//! - a `multi` (14) of read ops is a failed transaction (MARSHALLINGERROR, a
//!   zxid consumed); a `multiRead` (22) of write ops answers MARSHALLINGERROR
//!   followed by an empty result list.
//!
//! ## Known differences
//! - `createTTL` with a non-TTL mode and ttl −1 answers BADARGUMENTS; the
//!   real 3.8.0 server process exits on it.
//! - SASL (102) is answered as by a server with no SASL configured (an empty
//!   token); reconfig (16) as by a standalone server (RECONFIGDISABLED). TTL
//!   nodes are off, as on a default ZooKeeper (`extended_types` turns them
//!   on).
//! - A write is answered as soon as it is applied, with no log to sync:
//!   about ten times faster than on a server with a disk.
//!   [`ZkMockBuilder::commit_latency`] makes each write wait for a sync of
//!   its batch, as ZooKeeper's transaction log does.
//! - A read is answered as soon as it is read: an exists through ZooKeeper's
//!   Java client takes 42 µs, 190 µs on Curator's `TestingServer`
//!   (medians). [`ZkMockBuilder::request_latency`] makes each request wait.
//! - With a commit latency, a read from another connection than a waiting
//!   write's is answered at once, without that write, as a follower would
//!   answer it; ZooKeeper's standalone server holds it until the write's
//!   sync ends.
//! - A handshake is answered as soon as it is read (a new session's once
//!   its createSession is synced): in 0.07 ms, where Curator's
//!   `TestingServer` took 0.7 ms once warm and 2.2 ms for a new server's
//!   first session (medians). [`ZkMockBuilder::connect_latency`]
//!   makes each handshake take at least a given time.
//!
//! The guide's chapter on fidelity (`docs/fidelity.md` in the repository)
//! says how each behaviour is checked against ZooKeeper 3.8.0.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod acl;
#[cfg(feature = "admin")]
pub mod admin;
pub mod client;
pub mod clock;
pub mod codec;
mod compact;
mod compat;
mod core;
mod ensemble;
mod error;
pub mod fault;
#[doc(hidden)]
pub mod fuzzing;
mod handler;
mod hash;
mod listen;
mod mock;
mod observe;
mod outbox;
pub mod proto;
#[cfg(feature = "real")]
pub mod real;
pub mod record;
mod server;
mod session;
pub mod snapshot;
#[cfg(feature = "tls")]
mod tls;
pub mod tree;
mod txn;
mod txnlog;
mod watch;

pub use crate::core::{VERSION, VERSION_3_9};
pub use compat::{Compat, UnknownCompat};
pub use ensemble::{Lag, LagError, ServerInfo, ServerStatus};
pub use error::{Error, WaitTimeout};
pub use mock::{
    Control, HoldGate, Metrics, Refusal, RuleGuard, Server, Stall, Times, ZkMock, ZkMockBuilder,
};
pub use session::{password_for, BadSessionId, SessionId};
#[cfg(feature = "tls")]
pub use tls::Tls;
