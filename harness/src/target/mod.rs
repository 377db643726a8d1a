//! Where a scenario runs: the embedded zk-mock (`mock`), or a real
//! ZooKeeper behind the harness's own fault proxies (`real`: `proxy`,
//! `observer`, `takeover`).

use std::net::SocketAddr;
use std::time::Duration;

use zk_mock::record::ChangeKind;

use crate::error::RunError;
use crate::scenario::Loaded;

mod mock;
mod real;

use mock::MockTarget;
pub use real::real_zookeeper;
use real::RealTarget;

/// The lock nodes under `dir`: every ephemeral node, and every sequential
/// leaf (a lock node a library made persistent by mistake), three levels
/// deep (a semaphore keeps its leases in a subdirectory), with their Stat,
/// by absolute path, sorted.
/// Directories a library made (persistent or container nodes) are walked,
/// not listed. A node that goes while it is walked is skipped.
pub(crate) async fn lock_nodes_under(
    c: &zookeeper_client::Client,
    dir: &str,
) -> Result<Vec<(String, zookeeper_client::Stat)>, zookeeper_client::Error> {
    use zookeeper_client::Error;
    // The harness's session may be on a server that is behind (an ensemble
    // with a lagging follower): sync first, as any reader that needs the
    // newest state must.
    match c.sync(dir).await {
        Ok(()) | Err(Error::NoNode) => {}
        Err(e) => return Err(e),
    }
    walk_lock_nodes(c, dir).await
}

/// [`lock_nodes_under`] for a caller that has synced `dir` already (or
/// reads from the only server).
pub(crate) async fn walk_lock_nodes(
    c: &zookeeper_client::Client,
    dir: &str,
) -> Result<Vec<(String, zookeeper_client::Stat)>, zookeeper_client::Error> {
    use zookeeper_client::Error;
    let mut found = Vec::new();
    let mut dirs = vec![(dir.to_string(), 0)];
    while let Some((d, depth)) = dirs.pop() {
        let children = match c.list_children(&d).await {
            Ok(ch) => ch,
            Err(Error::NoNode) => continue,
            Err(e) => return Err(e),
        };
        for child in children {
            let p = format!("{d}/{child}");
            match c.check_stat(&p).await? {
                Some(st) if st.ephemeral_owner != 0 => found.push((p, st)),
                // A lock's node that is not ephemeral (a library's mistake)
                // outlives its session: a sequential leaf counts too.
                Some(st) if st.num_children == 0 && sequential_name(&child) => found.push((p, st)),
                Some(st) if st.num_children > 0 && depth < 2 => dirs.push((p, depth + 1)),
                _ => {}
            }
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(found)
}

/// Whether `name` ends with a sequence suffix as ZooKeeper writes it: Java's
/// `%010d` of the parent's i32 counter (`0000000042`, and past the wrap
/// `-000000005`).
fn sequential_name(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() >= 10 && {
        let tail = &b[b.len() - 10..];
        tail[1..].iter().all(u8::is_ascii_digit) && (tail[0].is_ascii_digit() || tail[0] == b'-')
    }
}

/// The session timeout the harness's own session asks for.
pub(crate) const ADMIN_TIMEOUT_MS: i32 = 30_000;

/// Which server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetSpec {
    /// The embedded zk-mock, one fresh server per scenario.
    Mock,
    /// A real ZooKeeper at this address.
    Real(SocketAddr),
    /// Real ZooKeeper that the harness started itself (`--target real`): the
    /// standalone server at this address for single-server scenarios, and a
    /// fresh real ensemble for each scenario with `servers: N`.
    RealStarted(SocketAddr),
}

impl TargetSpec {
    /// `mock`, or `real` for reports and `skip.on`.
    pub fn kind(&self) -> &'static str {
        match self {
            TargetSpec::Mock => "mock",
            TargetSpec::Real(_) | TargetSpec::RealStarted(_) => "real",
        }
    }

    /// Why a scenario cannot be played on this target, if it cannot: a
    /// mock-only setting or step.
    pub(crate) fn cannot_play(&self, s: &crate::scenario::Scenario) -> Option<String> {
        if *self == TargetSpec::Mock {
            return None;
        }
        if s.server.expiry_cleanup_delay.is_some() {
            return Some(
                "needs the mock's expiry_cleanup_delay (a real server applies an expiry at once)"
                    .into(),
            );
        }
        if s.server.sequence_start.is_some() {
            return Some(
                "needs the mock's sequence_start (a real server's counter cannot be set)".into(),
            );
        }
        if s.timeline.iter().any(|t| t.value.cleanup_until.is_some()) {
            return Some(
                "needs the mock's held expiry cleanup, `cleanup_until` (a real server applies an expiry at once)"
                    .into(),
            );
        }
        if s.server.servers <= 1 {
            return None;
        }
        if let TargetSpec::Real(_) = self {
            return Some(format!(
                "needs an ensemble of {}: `--target real` starts real ones (the target given is one running server)",
                s.server.servers
            ));
        }
        let steps = [
            ("lag", s.timeline.iter().any(|t| t.value.lag.is_some())),
            (
                "partition_server",
                s.timeline
                    .iter()
                    .any(|t| t.value.partition_server.is_some() || t.value.heal_server.is_some()),
            ),
            (
                "leader_election",
                s.timeline.iter().any(|t| t.value.leader_election.is_some()),
            ),
        ];
        let mock_only: Vec<&str> = steps
            .iter()
            .filter(|(_, on)| *on)
            .map(|(n, _)| *n)
            .collect();
        (!mock_only.is_empty()).then(|| {
            format!(
                "needs the mock's {} (a real ensemble cannot be made to lag, be partitioned or hold an election on demand)",
                mock_only.join(", ")
            )
        })
    }
}

/// One change to the tree as a target reports it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Change {
    /// Order of the change (the zxid when known).
    pub pos: i64,
    /// The zxid, when the target knows it.
    pub zxid: Option<i64>,
    /// The session that caused it, when known.
    pub session: Option<i64>,
    /// The node.
    pub path: String,
    /// What happened.
    pub kind: ChangeKind,
    /// Whether the change came with a session's expiry.
    pub by_session_end: bool,
}

/// A notification and the change that caused it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Notified {
    /// The zxid of the change that fired it.
    pub zxid: i64,
    /// The session notified.
    pub session: i64,
    /// The event's path.
    pub path: String,
}

/// What the server saw, as far as the target can tell.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct History {
    /// Changes under the scenario's nodes, in commit order.
    pub changes: Vec<Change>,
    /// Notifications sent (mock only).
    pub notifications: Option<Vec<Notified>>,
    /// The recorder's own text of the history (mock only), for failure reports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub text: Vec<String>,
}

/// A running target.
#[derive(Debug)]
pub(crate) enum Target {
    Mock(MockTarget),
    Real(RealTarget),
}

impl Target {
    pub(crate) async fn start(
        spec: &TargetSpec,
        scenario: &Loaded,
        seed: u64,
    ) -> Result<Target, RunError> {
        match spec {
            TargetSpec::Mock => MockTarget::start(scenario, seed).await.map(Target::Mock),
            TargetSpec::Real(addr) | TargetSpec::RealStarted(addr)
                if scenario.scenario.server.servers <= 1 =>
            {
                RealTarget::start(*addr, &scenario.lock_dir(), &scenario.resource_dir())
                    .await
                    .map(Target::Real)
            }
            TargetSpec::RealStarted(_) => RealTarget::start_ensemble(
                scenario.scenario.server.servers,
                &scenario.lock_dir(),
                &scenario.resource_dir(),
            )
            .await
            .map(Target::Real),
            TargetSpec::Real(_) => Err(RunError::Ensemble),
        }
    }

    /// The connect string for one client (real targets: its own proxy);
    /// `server`: only that server of the ensemble.
    pub(crate) async fn connect_string(
        &self,
        client: &str,
        servers: Option<&[usize]>,
    ) -> Result<String, RunError> {
        match (self, servers) {
            (Target::Mock(m), None) => Ok(m.zk.connect_string()),
            (Target::Mock(m), Some(v)) => Ok(v
                .iter()
                .map(|&i| m.zk.server(i).connect_string())
                .collect::<Vec<_>>()
                .join(",")),
            (Target::Real(r), only) => r.connect_string(client, only).await,
        }
    }

    /// The server of the ensemble `session` is connected to.
    pub(crate) fn server_of(&self, session: i64) -> Option<usize> {
        match self {
            Target::Mock(m) => m.zk.server_of(session),
            Target::Real(r) => r.server_of(session),
        }
    }

    /// kill, restart, partition or heal server `i` of the ensemble.
    pub(crate) async fn server_verb(&self, verb: &str, i: usize) -> Result<(), RunError> {
        let m = match self {
            Target::Mock(m) => m,
            Target::Real(r) => return r.server_verb(verb, i).await,
        };
        let server = m.zk.server(i);
        let done = match verb {
            "kill" => server.kill(),
            "restart" => server.restart()?,
            "partition" => server.partition(),
            _ => server.heal(),
        };
        if !done {
            tracing::warn!(server = i, verb, "the server was not in a state to {verb}");
        }
        Ok(())
    }

    /// Sets server `i`'s lag; false if the server refused it (it leads:
    /// a leader applies each txn as it commits it).
    pub(crate) fn lag(&self, i: usize, lag: zk_mock::Lag) -> Result<bool, RunError> {
        let Target::Mock(m) = self else {
            return Err(RunError::MockOnly("lag"));
        };
        match m.zk.server(i).set_lag(lag) {
            Ok(()) => Ok(true),
            Err(e) => {
                tracing::warn!(server = i, "lag refused: {e}");
                Ok(false)
            }
        }
    }

    /// Sets the next sequence number of `dir`'s sequential children (mock
    /// only).
    pub(crate) fn set_sequence_counter(&self, dir: &str, next: i32) -> Result<(), RunError> {
        let Target::Mock(m) = self else {
            return Err(RunError::MockOnly("sequence_start"));
        };
        if m.zk.set_sequence_counter(dir, next) {
            Ok(())
        } else {
            Err(RunError::zk(
                format!("setting {dir}'s sequence counter"),
                zookeeper_client::Error::NoNode,
            ))
        }
    }

    /// Leader loss for `window`.
    pub(crate) fn leader_election(&self, window: Duration) -> Result<(), RunError> {
        let Target::Mock(m) = self else {
            return Err(RunError::MockOnly("leader_election"));
        };
        m.zk.leader_election(window);
        Ok(())
    }

    /// The connect string for the harness's own session (no faults).
    pub(crate) fn admin_connect_string(&self) -> String {
        match self {
            Target::Mock(m) => m.zk.connect_string(),
            Target::Real(r) => r.server_connect_string(),
        }
    }

    pub(crate) async fn expire(&self, client: &str, session: i64) -> bool {
        match self {
            Target::Mock(m) => m.zk.expire_session(session),
            Target::Real(r) => r.expire(client).await,
        }
    }

    pub(crate) fn disconnect(&self, client: &str, session: i64) -> bool {
        match self {
            Target::Mock(m) => m.zk.disconnect(session),
            Target::Real(r) => r.disconnect(client),
        }
    }

    /// A new, closed gate for a `hold` step or a held expiry cleanup: its
    /// id, for [`crate::fault::FaultVerdict::Hold`] and `expire_until`.
    pub(crate) fn new_gate(&self) -> u64 {
        match self {
            Target::Mock(m) => m.new_gate(),
            Target::Real(r) => r.new_gate(),
        }
    }

    /// Opens a gate: what it held goes on.
    pub(crate) fn open_gate(&self, gate: u64) {
        match self {
            Target::Mock(m) => m.open_gate(gate),
            Target::Real(r) => r.open_gate(gate),
        }
    }

    /// Opens every gate (the run is over).
    pub(crate) fn open_all_gates(&self) {
        match self {
            Target::Mock(m) => m.open_all_gates(),
            Target::Real(r) => r.open_all_gates(),
        }
    }

    /// Expires the client's session now; its ephemeral nodes go when gate
    /// `gate` opens (mock only: the real target's expiry applies at once).
    pub(crate) async fn expire_until(&self, client: &str, session: i64, gate: u64) -> bool {
        match self {
            Target::Mock(m) => {
                m.zk.expire_session_until(session, zk_mock::fault::GateId(gate))
            }
            Target::Real(_) => {
                tracing::warn!(client, "cleanup_until needs the mock");
                false
            }
        }
    }

    pub(crate) fn stall(&self, client: &str, session: i64) -> bool {
        match self {
            // Held until `resume`, which the step's timer calls.
            Target::Mock(m) => m.zk.stall(session).map(zk_mock::Stall::forget).is_some(),
            Target::Real(r) => r.stall(client),
        }
    }

    pub(crate) fn resume(&self, client: &str, session: i64) -> bool {
        match self {
            Target::Mock(m) => m.zk.resume(session),
            Target::Real(r) => r.resume(client),
        }
    }

    /// Installs a request fault for `client`'s requests (its `session` on
    /// the mock), or anyone's.
    pub(crate) fn request_fault(
        &self,
        fault: &crate::fault::RequestFault,
        client: Option<&str>,
        session: Option<i64>,
    ) -> Result<(), RunError> {
        match self {
            Target::Mock(m) => m.request_fault(fault, session),
            Target::Real(r) => {
                r.request_fault(fault, client);
                Ok(())
            }
        }
    }

    /// The lock node `session` owns under `dir` (any depth), with its czxid:
    /// the ephemeral node with the largest czxid. `hint` is the node the
    /// library named, checked against the server before it is believed.
    pub(crate) async fn lock_node(
        &self,
        session: i64,
        dir: &str,
        hint: Option<&str>,
    ) -> Option<(String, i64)> {
        match self {
            Target::Mock(m) => m.lock_node(session, dir),
            Target::Real(r) => r.lock_node(session, dir, hint).await,
        }
    }

    /// How many times the request faults fired, for "the fault never fired" checks.
    pub(crate) fn faults_fired(&self) -> Option<u64> {
        match self {
            Target::Mock(m) => Some(m.faults_fired()),
            Target::Real(r) => Some(r.faults_fired()),
        }
    }

    pub(crate) fn refuse(&self, on: bool) {
        match self {
            Target::Mock(m) => m.refuse(on),
            Target::Real(r) => r.refuse(on),
        }
    }

    /// How many of `sessions` have a watch set under `dir` (mock); `None`
    /// if the target cannot tell.
    pub(crate) fn watching(&self, dir: &str, sessions: &[i64]) -> Option<usize> {
        match self {
            Target::Mock(m) => Some(m.watching(dir, sessions)),
            Target::Real(_) => None,
        }
    }

    /// The history of changes under `prefixes`.
    pub(crate) fn history(&self, prefixes: &[String]) -> History {
        let under = |p: &str| {
            prefixes
                .iter()
                .any(|x| p == x || p.starts_with(&format!("{x}/")))
        };
        match self {
            Target::Mock(m) => m.history(under),
            Target::Real(r) => r.history(prefixes),
        }
    }

    /// Whether request faults aimed at a client need its session (the mock
    /// tells clients apart by session; the real target by their own proxies).
    pub(crate) fn binds_by_session(&self) -> bool {
        matches!(self, Target::Mock(_))
    }

    /// Extra settle time before a trigger counts waiters as watching, on
    /// targets that cannot report watches.
    pub(crate) fn settle(&self) -> Duration {
        match self {
            Target::Mock(_) => Duration::ZERO,
            Target::Real(_) => Duration::from_millis(200),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{sequential_name, TargetSpec};

    #[test]
    fn only_the_mock_plays_a_sequence_start() {
        let text = "server: {sequence_start: 2147483647}\nlock: {kind: exclusive}\nclients:\n  - name: a\n";
        let l = crate::scenario::parse(std::path::Path::new("t.yaml"), text).unwrap();
        assert_eq!(TargetSpec::Mock.cannot_play(&l.scenario), None);
        let real = TargetSpec::Real("127.0.0.1:2181".parse().unwrap());
        assert!(real
            .cannot_play(&l.scenario)
            .is_some_and(|why| why.contains("sequence_start")));
    }

    #[test]
    fn sequential_names_are_told_from_directories() {
        assert!(sequential_name("_c_1a2b-lock-0000000042"));
        assert!(sequential_name("4f3e__lock__0000000000"));
        assert!(sequential_name("lock--000000005"));
        assert!(!sequential_name("leases"));
        assert!(!sequential_name("lock"));
        assert!(!sequential_name("lock-12"));
        assert!(!sequential_name("000000012"));
    }
}
