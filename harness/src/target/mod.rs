//! Where a scenario runs: the embedded zk-mock, or a real ZooKeeper behind
//! the harness's own fault proxy.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use zk_mock::record::{ChangeKind, SessionEvent};
use zk_mock::{RuleGuard, ZkMock};

use crate::scenario::Loaded;

mod real;

/// The ephemeral nodes under `dir` (three levels deep: a semaphore keeps its
/// leases in a subdirectory), with their Stat, by absolute path, sorted.
/// Directories a library made (persistent or container nodes) are walked,
/// not listed. A node that goes while it is walked is skipped.
pub(crate) async fn ephemerals_under(
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
                Some(st) if st.num_children > 0 && depth < 2 => dirs.push((p, depth + 1)),
                _ => {}
            }
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(found)
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
}

impl TargetSpec {
    /// `mock`, or `real` for reports and `skip.on`.
    pub fn kind(&self) -> &'static str {
        match self {
            TargetSpec::Mock => "mock",
            TargetSpec::Real(_) => "real",
        }
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
    Mock {
        zk: ZkMock,
        rules: std::sync::Mutex<Vec<RuleGuard>>,
        refusal: std::sync::Mutex<Option<zk_mock::Refusal>>,
    },
    Real(real::RealTarget),
}

impl Target {
    pub(crate) async fn start(
        spec: &TargetSpec,
        scenario: &Loaded,
        seed: u64,
    ) -> Result<Target, String> {
        match spec {
            TargetSpec::Mock => {
                let server = &scenario.scenario.server;
                let compat: zk_mock::Compat = server
                    .compat
                    .parse()
                    .map_err(|e| format!("server.compat: {e}"))?;
                let tick = server.tick_time.0.as_millis().max(1) as u64;
                let timeout = server.session_timeout.0.as_millis() as i32;
                let zk = ZkMock::builder()
                    .compat(compat)
                    .tick_time(tick)
                    .min_session_timeout((2 * tick as i32).min(timeout))
                    // Clients ask for exactly the scenario's timeout; the
                    // harness's own session asks for more, so that a loaded
                    // run (a 1000-client stampede) cannot expire it.
                    .max_session_timeout((20 * tick as i32).max(timeout).max(ADMIN_TIMEOUT_MS))
                    .seed(seed)
                    .expiry_cleanup_delay(
                        server.expiry_cleanup_delay.map(|d| d.0).unwrap_or_default(),
                    )
                    .recorder_capacity(2_000_000)
                    .start()
                    .await
                    .map_err(|e| format!("starting zk-mock: {e}"))?;
                Ok(Target::Mock {
                    zk,
                    rules: Default::default(),
                    refusal: Default::default(),
                })
            }
            TargetSpec::Real(addr) => {
                real::RealTarget::start(*addr, &scenario.lock_dir(), &scenario.resource_dir())
                    .await
                    .map(Target::Real)
            }
        }
    }

    /// The connect string for one client (real targets: its own proxy).
    pub(crate) async fn connect_string(&self, client: &str) -> Result<String, String> {
        match self {
            Target::Mock { zk, .. } => Ok(zk.connect_string()),
            Target::Real(r) => r.connect_string(client).await,
        }
    }

    /// The connect string for the harness's own session (no faults).
    pub(crate) fn admin_connect_string(&self) -> String {
        match self {
            Target::Mock { zk, .. } => zk.connect_string(),
            Target::Real(r) => r.server_connect_string(),
        }
    }

    pub(crate) async fn expire(&self, client: &str, session: i64) -> bool {
        match self {
            Target::Mock { zk, .. } => zk.expire_session(session),
            Target::Real(r) => r.expire(client).await,
        }
    }

    pub(crate) fn disconnect(&self, client: &str, session: i64) -> bool {
        match self {
            Target::Mock { zk, .. } => zk.disconnect(session),
            Target::Real(r) => r.disconnect(client),
        }
    }

    pub(crate) fn stall(&self, client: &str, session: i64) -> bool {
        match self {
            Target::Mock { zk, .. } => zk.stall(session),
            Target::Real(r) => r.stall(client),
        }
    }

    pub(crate) fn resume(&self, client: &str, session: i64) -> bool {
        match self {
            Target::Mock { zk, .. } => zk.resume(session),
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
    ) -> Result<(), String> {
        match self {
            Target::Mock { zk, rules, .. } => {
                let guard = zk.try_rule(fault.to_rule(session))?;
                rules.lock().unwrap_or_else(|e| e.into_inner()).push(guard);
                Ok(())
            }
            Target::Real(r) => r.request_fault(fault, client),
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
        let prefix = format!("{dir}/");
        match self {
            Target::Mock { zk, .. } => zk
                .ephemerals(session)
                .into_iter()
                .filter(|(p, _)| p.starts_with(&prefix))
                .max_by_key(|(_, z)| *z),
            Target::Real(r) => r.lock_node(session, dir, hint).await,
        }
    }

    /// How many times the request faults fired (mock), for "the fault never fired" checks.
    pub(crate) fn faults_fired(&self) -> Option<u64> {
        match self {
            Target::Mock { rules, .. } => Some(
                rules
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter()
                    .map(RuleGuard::fired)
                    .sum(),
            ),
            Target::Real(r) => Some(r.faults_fired()),
        }
    }

    pub(crate) fn refuse(&self, on: bool) {
        match self {
            Target::Mock { zk, refusal, .. } => {
                let mut r = refusal.lock().unwrap_or_else(|e| e.into_inner());
                *r = if on {
                    Some(zk.refuse_connections())
                } else {
                    None
                };
            }
            Target::Real(r) => r.refuse(on),
        }
    }

    /// How many of `sessions` have a watch set under `dir` (mock); `None`
    /// if the target cannot tell.
    pub(crate) fn watching(&self, dir: &str, sessions: &[i64]) -> Option<usize> {
        match self {
            Target::Mock { zk, .. } => {
                let snap = zk.snapshot();
                Some(
                    sessions
                        .iter()
                        .filter(|s| {
                            snap.sessions.get(s).is_some_and(|ss| {
                                ss.watches.iter().any(|w| w.path.starts_with(dir))
                            })
                        })
                        .count(),
                )
            }
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
            Target::Mock { zk, .. } => {
                let rec = zk.recorded();
                let ends: BTreeMap<i64, SessionEvent> = rec
                    .sessions
                    .iter()
                    .filter(|s| s.event == SessionEvent::Expired)
                    .map(|s| (s.zxid, s.event))
                    .collect();
                let changes = rec
                    .changes
                    .iter()
                    .filter(|c| under(&c.path))
                    .map(|c| Change {
                        pos: c.zxid,
                        zxid: Some(c.zxid),
                        session: Some(c.session),
                        path: c.path.clone(),
                        kind: c.kind,
                        by_session_end: ends.contains_key(&c.zxid),
                    })
                    .collect();
                let notifications = rec
                    .notifications
                    .iter()
                    .filter(|n| under(&n.path))
                    .map(|n| Notified {
                        zxid: n.zxid,
                        session: n.session,
                        path: n.path.clone(),
                    })
                    .collect();
                let text = rec.to_string().lines().map(str::to_string).collect();
                History {
                    changes,
                    notifications: Some(notifications),
                    text,
                }
            }
            Target::Real(r) => r.history(prefixes),
        }
    }

    /// Whether request faults aimed at a client need its session (the mock
    /// tells clients apart by session; the real target by their own proxies).
    pub(crate) fn binds_by_session(&self) -> bool {
        matches!(self, Target::Mock { .. })
    }

    /// Extra settle time before a trigger counts waiters as watching, on
    /// targets that cannot report watches.
    pub(crate) fn settle(&self) -> Duration {
        match self {
            Target::Mock { .. } => Duration::ZERO,
            Target::Real(_) => Duration::from_millis(200),
        }
    }
}
