//! The core: the server's state and the one path every request, txn and
//! session event takes through it, shaped like ZooKeeper's pipeline.
//!
//! - [`state`]: the `State` behind the one lock, its settings, and the
//!   small operations the rest share (queueing a frame, closing a
//!   connection).
//! - [`prep`]: every request enters here (`PrepRequestProcessor`): its
//!   session checked, the fault rules asked, routed to its family. A read
//!   is answered from the replica of the server the client is on; a write
//!   becomes a [`Txn`](crate::txn::Txn). `State::prep` is the only place a
//!   txn is made, for clients' writes and the server's own (createSession,
//!   closeSession, the container check, a reset).
//! - [`commit`]: the commit and request latencies: how long a write waits
//!   for the transaction log's sync, and any request for its pipeline,
//!   before it is applied (none by default).
//! - [`apply`]: commit, then each server applies the txn to its replica,
//!   fires its watches, notifies, and answers through the connection's
//!   outbox (`FinalRequestProcessor`).
//! - [`connect`]: the handshake (a new session is a txn; a re-attach is
//!   not), a connection's registration and its end.
//! - [`lifecycle`]: sessions ending (expiry, close, kill), stalls, gates,
//!   held requests, the container check and a reset.
//! - [`ensemble`]: the servers as a quorum: who serves, elections, kills,
//!   partitions, lag, reconfig, each server's info.
//! - [`controls`]: what the API asks beyond requests: fault rules,
//!   refusing connections, the clock, disconnects, sequence counters.
//! - [`inspect`]: read-only views for the layers above: snapshots, the
//!   recorder's view, metrics; [`four_letter`]: the
//!   four-letter words' answers.
//!
//! Nothing outside this module names a field of `State` or adds an `impl
//! State`: the connections (`handler`, `server`), the four-letter words
//! and the API (`mock/`, `admin`) call the methods these files define.

mod apply;
mod commit;
mod connect;
mod controls;
mod ensemble;
mod four_letter;
mod inspect;
mod lifecycle;
mod prep;
mod state;

pub(crate) use crate::outbox::{Gate, Outgoing};
pub(crate) use four_letter::is_command as is_four_letter_word;
pub use four_letter::{VERSION, VERSION_3_9};
pub use inspect::Metrics;
pub(crate) use state::{lock, Flow, HeldRequest, Settings, Shared, State};
