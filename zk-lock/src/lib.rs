//! # zk-lock
//!
//! Lock recipes on the `zookeeper-client` crate. The recipes arrive with
//! issue #4; this crate exists now so the workspace has its final shape.
