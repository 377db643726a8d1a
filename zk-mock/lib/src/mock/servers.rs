//! The servers of an ensemble: [`ZkMock::servers`], [`ZkMock::server`]'s
//! [`Server`] handle (kill, restart, partition, heal, lag) and
//! [`ZkMock::leader_election`].

use std::net::SocketAddr;
use std::time::Duration;

use crate::core::lock;
use crate::ensemble::{Lag, LagError, ServerInfo, ServerStatus, Then};

#[cfg(doc)]
use super::ZkMock;
use super::{Control, ZkMock as Mock};

impl Control {
    /// As [`ZkMock::servers`].
    pub fn servers(&self) -> Vec<ServerInfo> {
        self.state().server_infos(&self.addrs)
    }

    /// As [`ZkMock::server`].
    ///
    /// # Panics
    /// If there is no server `index`.
    pub fn server(&self, index: usize) -> Server {
        assert!(
            index < self.addrs.len(),
            "zk-mock: no server {index}: the ensemble has {} (0..{})",
            self.addrs.len(),
            self.addrs.len()
        );
        Server {
            control: self.clone(),
            index,
        }
    }

    /// As [`ZkMock::server_of`].
    pub fn server_of(&self, session: impl Into<crate::SessionId>) -> Option<usize> {
        self.state().server_of_session(session.into().0)
    }

    /// As [`ZkMock::leader`].
    pub fn leader(&self) -> usize {
        self.state().leader()
    }

    /// As [`ZkMock::election_window`].
    pub fn election_window(&self) -> Duration {
        Duration::from_millis(self.state().settings().election_window_ms)
    }

    /// As [`ZkMock::leader_election`].
    pub fn leader_election(&self, window: Duration) {
        self.state().begin_election();
        self.end_election_after(window);
    }

    /// Ends the election once `window` has passed (if a quorum is up then;
    /// else when a server comes back and restores it).
    fn end_election_after(&self, window: Duration) {
        let shared = self.shared.clone();
        self.runtime.spawn(async move {
            tokio::time::sleep(window).await;
            lock(&shared).end_election();
        });
    }

    fn then(&self, then: Then) -> bool {
        let (window, read_only) = {
            let st = self.state();
            let s = st.settings();
            (
                Duration::from_millis(s.election_window_ms),
                s.read_only_mode
                    .then(|| Duration::from_millis(s.read_only_after_ms)),
            )
        };
        if then == Then::Elect {
            self.end_election_after(window);
        }
        if let (Some(after), true) = (read_only, then != Then::Unchanged) {
            // Whoever is still cut off from a quorum then goes read-only.
            let shared = self.shared.clone();
            self.runtime.spawn(async move {
                tokio::time::sleep(after).await;
                lock(&shared).start_read_only();
            });
        }
        then != Then::Unchanged
    }
}

impl Mock {
    /// Every server of the ensemble (one for a single server): address,
    /// status, whether it leads, its lag, the last zxid it applied, how many
    /// committed txns it has yet to apply, and its connections.
    pub fn servers(&self) -> Vec<ServerInfo> {
        self.control.servers()
    }

    /// A handle on server `index` (0-based) of the ensemble.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// let zk = zk_mock::ZkMock::ensemble(3).await;
    /// assert_eq!(zk.connect_string().split(',').count(), 3);
    /// zk.server(2).set_lag(zk_mock::Lag::Txns(1)).expect("a follower"); // one write behind
    /// zk.server(1).kill(); // its clients fail over; sessions survive
    /// zk.server(1).restart().expect("its port is free");
    /// zk.leader_election(Duration::from_millis(50)); // every client drops for 50 ms
    /// # }
    /// ```
    ///
    /// # Panics
    /// If there is no server `index`.
    pub fn server(&self, index: usize) -> Server {
        self.control.server(index)
    }

    /// The server a session is connected to now (`None` between
    /// connections, or for an unknown session).
    pub fn server_of(&self, session: impl Into<crate::SessionId>) -> Option<usize> {
        self.control.server_of(session)
    }

    /// The index of the server that leads.
    pub fn leader(&self) -> usize {
        self.control.leader()
    }

    /// How long an ensemble that loses its leader goes without one
    /// ([`ZkMockBuilder::election_window`](crate::ZkMockBuilder::election_window)).
    pub fn election_window(&self) -> Duration {
        self.control.election_window()
    }

    /// Leader loss: every server drops its clients and takes none, so
    /// nothing is written, for `window`; then a leader is elected (the
    /// server with the highest index that is up), a new epoch starts its
    /// zxids at `epoch << 32`, every server has caught up, and every
    /// session's timeout starts afresh.
    pub fn leader_election(&self, window: Duration) {
        self.control.leader_election(window);
    }
}

/// One server of an ensemble (see [`ZkMock::server`]). Cheap to clone.
#[derive(Debug, Clone)]
pub struct Server {
    control: Control,
    index: usize,
}

impl Server {
    /// Its index in the ensemble.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Its client address.
    pub fn addr(&self) -> SocketAddr {
        self.control.addrs[self.index]
    }

    /// A connect string naming only this server.
    pub fn connect_string(&self) -> String {
        self.addr().to_string()
    }

    /// What it reports in [`ZkMock::servers`].
    pub fn info(&self) -> ServerInfo {
        self.control.servers().swap_remove(self.index)
    }

    /// What it is doing.
    pub fn status(&self) -> ServerStatus {
        self.info().status
    }

    /// The last zxid it has applied.
    pub fn last_zxid(&self) -> i64 {
        self.control
            .state()
            .server_zxid(self.index)
            .expect("the handle's server exists")
    }

    /// Kills it, as a ZooKeeper process dies: its connections drop (its
    /// clients fail over to the other servers and keep their sessions if
    /// they reconnect within the timeout), its port closes, so that
    /// connection attempts are refused and another server may listen there,
    /// and it applies nothing until [`restart`](Self::restart). Killing the
    /// leader, or the server that leaves no quorum, starts an election (the
    /// builder's [`election_window`](crate::ZkMockBuilder::election_window)).
    /// False if it was not serving.
    pub fn kill(&self) -> bool {
        let then = self
            .control
            .state()
            .take_down(self.index, ServerStatus::Killed);
        if then != Then::Unchanged {
            for port in self.ports() {
                port.close();
            }
        }
        self.control.then(then)
    }

    /// Its client port, and server 0's secure port.
    fn ports(&self) -> impl Iterator<Item = &std::sync::Arc<crate::listen::Port>> {
        let secure = (self.index == 0)
            .then_some(self.control.secure_port.as_ref())
            .flatten();
        std::iter::once(&self.control.ports[self.index]).chain(secure)
    }

    /// Restarts a killed or partitioned server: a killed one first listens
    /// on its port again. Then it catches up with every committed txn, as a
    /// restarted ZooKeeper syncs with the leader, and serves again.
    /// `Ok(false)` if it was not down.
    ///
    /// # Errors
    /// [`Error::Bind`](crate::Error::Bind) if its port has been taken since
    /// the kill (as a restarted ZooKeeper fails to bind); the server stays
    /// down.
    pub fn restart(&self) -> Result<bool, crate::Error> {
        if self.status() == ServerStatus::Killed {
            let mut opened: Vec<&crate::listen::Port> = Vec::new();
            for port in self.ports() {
                if let Err(source) = port.reopen() {
                    for p in opened {
                        p.close();
                    }
                    return Err(crate::Error::Bind {
                        addr: port.addr(),
                        source,
                    });
                }
                opened.push(port);
            }
        }
        let then = self.control.state().bring_up(self.index);
        Ok(self.control.then(then))
    }

    /// Cuts it off from the quorum: it stops serving and closes its
    /// connections, as a ZooKeeper server that loses the leader does.
    /// False if it was not serving.
    pub fn partition(&self) -> bool {
        let then = self
            .control
            .state()
            .take_down(self.index, ServerStatus::Partitioned);
        self.control.then(then)
    }

    /// Heals a partition: as [`restart`](Self::restart); false if it was
    /// not down, or was killed and cannot listen again.
    pub fn heal(&self) -> bool {
        match self.restart() {
            Ok(healed) => healed,
            Err(e) => {
                tracing::warn!(server = self.index, %e, "cannot restart");
                false
            }
        }
    }

    /// Sets how far behind the leader this follower applies txns, as
    /// ZooKeeper's followers do when they fall behind: reads through it are
    /// stale, its watches fire late, a write through it is answered when it
    /// applies that write, a new session through it is answered when it
    /// applies the createSession, and a session's expiry or close reaches
    /// its connection when it applies the closeSession (until then it
    /// answers that session's reads and pings). Mock-only: a real ensemble
    /// cannot be made to lag on demand.
    ///
    /// # Errors
    /// [`LagError::Leader`] if this server leads: a leader applies each txn
    /// as it commits it. (A lagging follower that wins an election drops
    /// its lag.) `Lag::None` is always accepted.
    pub fn set_lag(&self, lag: Lag) -> Result<(), LagError> {
        self.control.state().set_lag(self.index, lag)
    }

    /// Applies every committed txn it has not yet, whatever its lag.
    pub fn catch_up(&self) {
        let mut st = self.control.state();
        st.catch_up(self.index);
        st.changed();
    }
}
