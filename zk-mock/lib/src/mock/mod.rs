//! [`ZkMock`], the handle tests hold, and what comes with it: the
//! [`ZkMockBuilder`] (builder), the handle and its [`Control`] clone
//! (handle, control), [`Metrics`] (metrics), and the guards its methods
//! hand out (guards).

mod builder;
mod control;
mod guards;
mod handle;
mod metrics;
mod servers;

pub use builder::ZkMockBuilder;
pub use control::Control;
pub use guards::{HoldGate, Refusal, RuleGuard, Stall, Times};
pub use handle::ZkMock;
pub use metrics::Metrics;
pub use servers::Server;
