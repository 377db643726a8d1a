//! Errors of the mock itself (not ZooKeeper error codes, which are data: see
//! [`ErrorCode`](crate::proto::ErrorCode)).

/// Why a mock could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
    /// The server's thread or runtime could not be started.
    #[error("cannot start the server runtime: {0}")]
    Runtime(std::io::Error),
    /// The builder's settings contradict each other.
    #[error("invalid configuration: {0}")]
    Config(String),
}
