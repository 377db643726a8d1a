//! The harness's errors. A run that cannot be played ends in
//! [`RunError`] (reported as the run's error, never as a pass); files and
//! arguments that cannot be used end in the other types here, each naming
//! what was given and why it was refused.

use std::path::PathBuf;

/// Why a scenario could not be played on a target with an implementation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// A scenario setting the target refuses.
    #[error("{field}: {message}")]
    Setting {
        /// The field, as in the scenario file.
        field: &'static str,
        /// Why.
        message: String,
    },
    /// The embedded zk-mock did not start.
    #[error("starting zk-mock: {0}")]
    Mock(#[from] zk_mock::Error),
    /// A request fault could not be installed.
    #[error("request fault: {0}")]
    Rule(String),
    /// A call of the harness's own ZooKeeper session failed.
    #[error("{context}: {source}")]
    Zk {
        /// What the harness was doing.
        context: String,
        /// The client's error.
        #[source]
        source: zookeeper_client::Error,
    },
    /// A socket of the real target's proxies failed.
    #[error("{context}: {source}")]
    Io {
        /// What the harness was doing.
        context: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// An ensemble step or setting on a target that is one server.
    #[error("ensemble steps (servers, kill_server, a group's server) need an ensemble: the embedded zk-mock, or `--target real`")]
    Ensemble,
    /// A step only the embedded zk-mock can play (lag, a partition, a
    /// leader election on demand).
    #[error("{0} needs the embedded zk-mock (a real ensemble cannot be made to do it on demand)")]
    MockOnly(&'static str),
    /// A group's `server` names a server the ensemble lacks.
    #[error("no server {0:?} in the ensemble")]
    NoSuchServer(Vec<usize>),
    /// A real ZooKeeper server or ensemble did not start, or a killed
    /// server did not come back.
    #[error("real ZooKeeper: {0}")]
    Real(#[from] Box<zk_mock::real::RealZkError>),
    /// The real target's proxies know no such client.
    #[error("no proxy for client {0:?}")]
    UnknownClient(String),
    /// A driver failed: it could not start, broke the protocol, or exited.
    #[error("{0}")]
    Driver(String),
    /// The implementation could not be started for another reason.
    #[error("{0}")]
    Implementation(String),
}

impl From<zk_mock::real::RealZkError> for RunError {
    fn from(e: zk_mock::real::RealZkError) -> RunError {
        RunError::Real(Box::new(e))
    }
}

impl RunError {
    /// A failed call of the harness's own session.
    pub(crate) fn zk(context: impl Into<String>, source: zookeeper_client::Error) -> RunError {
        RunError::Zk {
            context: context.into(),
            source,
        }
    }

    /// A failed socket operation.
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> RunError {
        RunError::Io {
            context: context.into(),
            source,
        }
    }
}

/// An `--implementation` that names nothing the harness can run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--implementation {given:?}: {why}")]
pub struct ImplementationError {
    /// What was given.
    pub given: String,
    /// Why it was refused.
    pub why: &'static str,
}

/// A ZooKeeper error code name or number that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown error code {0:?}: expected a name such as ConnectionLoss, NoNode, NodeExists, SessionExpired, OperationTimeout, or a number")]
pub struct UnknownErrorCode(pub String);

/// An expectations file (`harness matrix --expect`) that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ExpectationsError {
    /// It could not be read.
    #[error("{}: {source}", file.display())]
    Io {
        /// The file.
        file: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// It is not valid.
    #[error("{}:{line}:{column}: {message}", file.display())]
    Invalid {
        /// The file.
        file: PathBuf,
        /// 1-based line (0: unknown).
        line: u64,
        /// 1-based column (0: unknown).
        column: u64,
        /// What is wrong.
        message: String,
    },
}
