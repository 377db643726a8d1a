//! [`Metrics`]: the counters and gauges of a running server.

use super::Control;

pub use crate::core::Metrics;

impl Control {
    /// As [`ZkMock::metrics`](crate::ZkMock::metrics).
    pub fn metrics(&self) -> Metrics {
        self.state().metrics()
    }
}
