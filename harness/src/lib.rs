//! # harness
//!
//! The scenario runner arrives with issue #5.
