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

/// [`ZkMock::wait_until`](crate::ZkMock::wait_until)'s condition did not
/// hold within its timeout. It prints the server's seed (to replay the run
/// with [`ZkMockBuilder::seed`](crate::ZkMockBuilder::seed)) and the
/// recording as it stood.
#[derive(Debug, thiserror::Error)]
#[error("zk-mock (seed {seed}): condition not met within {timeout:?}\n{recording}")]
pub struct WaitTimeout {
    /// The server's seed.
    pub seed: u64,
    /// How long it waited.
    pub timeout: std::time::Duration,
    /// Everything recorded, when it gave up.
    pub recording: Box<crate::record::Recording>,
}
