//! The servers as a quorum, on the core's state: who serves and who
//! votes, kills and partitions, elections, lag, read-only mode and
//! reconfig. The data they work on (replicas, lag, status, membership) is
//! in `crate::ensemble`.

use crate::ensemble::{Lag, LagError, QuorumConfig, ServerInfo, ServerStatus, Then};

use super::State;

impl State {
    /// Whether server `i` takes clients now (see `Ensemble::serves`).
    pub(crate) fn serves(&self, i: usize) -> bool {
        self.ensemble.serves(i)
    }

    /// `QuorumPeer`'s read-only fallback, once a server has been cut off
    /// for the read-only delay: every server still cut off starts a
    /// `ReadOnlyZooKeeperServer` and takes read-only clients.
    pub(crate) fn start_read_only(&mut self) {
        if !self.settings.read_only_mode {
            return;
        }
        for i in 0..self.ensemble.servers.len() {
            if self.ensemble.cut_off(i) && !self.ensemble.servers[i].read_only {
                self.ensemble.servers[i].read_only = true;
                // The line ZooKeeper logs (ReadOnlyZooKeeperServer), which
                // test suites wait for.
                tracing::info!(server = i, "Read-only server started");
            }
        }
        self.changed();
    }

    /// A read-only server rejoins the quorum: it shuts its read-only server
    /// down (every connection closes) and its local sessions are gone.
    fn leave_read_only(&mut self, i: usize) {
        if !std::mem::take(&mut self.ensemble.servers[i].read_only) {
            return;
        }
        self.drop_clients(i);
        let local: Vec<i64> = self
            .sessions
            .iter()
            .filter(|s| s.local == Some(i))
            .map(|s| s.id)
            .collect();
        for id in local {
            self.sessions.remove(id);
        }
        tracing::info!(server = i, "read-only server stopped: back in the quorum");
    }

    /// Closes every client connection of server `i`, oldest first (the
    /// recorder's disconnects come in the same order every run).
    fn drop_clients(&mut self, i: usize) {
        for conn in self.out.oldest_first(|c| c.server == i) {
            self.close_conn(conn);
        }
    }

    /// A single server: ZooKeeper's standalone mode, with no quorum and no
    /// election.
    fn standalone(&self) -> bool {
        self.ensemble.servers.len() == 1
    }

    /// Takes server `i` down (killed, or partitioned from the quorum): its
    /// connections drop and it applies nothing until it is back. Losing the
    /// leader or the quorum of an ensemble starts an election; a standalone
    /// server just stops.
    pub(crate) fn take_down(&mut self, i: usize, how: ServerStatus) -> Then {
        match self.ensemble.servers.get(i).map(|r| r.status) {
            Some(ServerStatus::Serving) => {}
            _ => return Then::Unchanged,
        }
        self.ensemble.servers[i].status = how;
        self.drop_clients(i);
        if how == ServerStatus::Killed {
            self.ensemble.servers[i].read_only = false;
        }
        tracing::info!(server = i, status = how.name(), "server down");
        let then = if self.standalone() {
            // A standalone ZooKeeper has no quorum and elects nothing.
            Then::Done
        } else if i == self.ensemble.leader || !self.ensemble.has_quorum() {
            self.begin_election();
            Then::Elect
        } else {
            Then::Done
        };
        self.changed();
        then
    }

    /// Brings server `i` back: it catches up with the committed txns (as a
    /// restarted ZooKeeper syncs with the leader) and serves again; if that
    /// restores the quorum, a leader is elected. A standalone server serves
    /// at once.
    pub(crate) fn bring_up(&mut self, i: usize) -> Then {
        match self.ensemble.servers.get(i).map(|r| r.status) {
            Some(ServerStatus::Killed | ServerStatus::Partitioned) => {}
            _ => return Then::Unchanged,
        }
        self.leave_read_only(i);
        self.ensemble.servers[i].status = ServerStatus::Serving;
        self.catch_up(i);
        tracing::info!(server = i, "server up");
        if self.standalone() && !self.ensemble.electing {
            // A restarted standalone ZooKeeper serves once it has loaded its
            // data, with no election and no new epoch; its session tracker
            // is built afresh from the snapshot, so every session's timeout
            // starts again.
            let now = self.clock.now_ms();
            self.sessions.touch_all(now);
        }
        self.changed();
        if self.ensemble.electing {
            Then::Elect
        } else {
            Then::Done
        }
    }

    /// Sets a follower's lag and applies what the new lag lets through. The
    /// leader refuses one: it applies each txn as it commits it.
    pub(crate) fn set_lag(&mut self, i: usize, lag: Lag) -> Result<(), LagError> {
        if i >= self.ensemble.servers.len() {
            return Err(LagError::NoSuchServer(i));
        }
        if i == self.ensemble.leader && lag != Lag::None {
            return Err(LagError::Leader(i));
        }
        self.ensemble.servers[i].lag = lag;
        self.settle(i);
        self.lag_wake.notify_one();
        Ok(())
    }

    /// Leader loss: every server drops its clients and takes none, and
    /// nothing is written, until [`end_election`](Self::end_election).
    pub(crate) fn begin_election(&mut self) {
        self.ensemble.electing = true;
        for i in 0..self.ensemble.servers.len() {
            self.drop_clients(i);
        }
        tracing::info!("leader election started");
        self.changed();
    }

    /// Ends an election if a quorum is up: every server that is up catches
    /// up, and a leader a reconfig designated leads if it is up, else the
    /// voting server with the highest id (all have the same zxid, and
    /// `FastLeaderElection` then prefers the higher myid; an observer never
    /// leads); a new epoch
    /// begins (`NEWLEADER`: zxid `epoch << 32`), and every session's
    /// timeout starts afresh (the new leader's `SessionTracker` is built
    /// from the snapshot). Returns whether it ended.
    pub(crate) fn end_election(&mut self) -> bool {
        if !self.ensemble.electing || !self.ensemble.has_quorum() {
            return false;
        }
        let up: Vec<usize> = (0..self.ensemble.servers.len())
            .filter(|&i| self.ensemble.servers[i].status == ServerStatus::Serving)
            .collect();
        for &i in &up {
            self.leave_read_only(i);
            self.catch_up(i);
        }
        // Only a participant leads; an observer follows whoever does. A
        // leader a reconfig designated takes over if it can.
        let designated = self
            .ensemble
            .designated
            .take()
            .filter(|i| up.contains(i) && self.ensemble.votes(*i));
        let Some(leader) =
            designated.or_else(|| up.iter().rev().copied().find(|&i| self.ensemble.votes(i)))
        else {
            return false;
        };
        self.ensemble.leader = leader;
        if std::mem::take(&mut self.ensemble.servers[leader].lag) != Lag::None {
            // It caught up above; as the leader it applies each txn as it commits it.
            tracing::info!(
                server = leader,
                "a lagging follower now leads: its lag is dropped"
            );
        }
        // The new leader's epoch: its NEWLEADER zxid is `epoch << 32`, the
        // first txn `(epoch << 32) + 1`; followers keep reporting the old
        // epoch's last zxid until they apply that txn.
        let epoch = (self.tree().last_zxid() >> 32) + 1;
        self.ensemble.servers[leader].tree.advance_to(epoch << 32);
        let now = self.clock.now_ms();
        self.sessions.touch_all(now);
        self.ensemble.electing = false;
        tracing::info!(leader, epoch, "leader elected");
        self.changed();
        true
    }

    /// An ensemble's membership, in every replica's `/zookeeper/config`
    /// from the start: every server on `addrs` a participant, or the
    /// `server.N` lines of `membership` (server N is the ensemble's server
    /// N − 1; one it does not name is an observer outside the config, as a
    /// server started with only itself and the leader in its zoo.cfg).
    /// The first leader is the first participant.
    ///
    /// # Errors
    /// A line that is not `server.N=host:port:port[:role];[host:]port`, an
    /// id with no such server, or no participant.
    pub(crate) fn init_quorum(
        &mut self,
        addrs: &[std::net::SocketAddr],
        membership: &[String],
    ) -> Result<(), String> {
        let q = if membership.is_empty() {
            if addrs.len() < 2 {
                return Ok(());
            }
            QuorumConfig::for_servers(addrs)
        } else {
            QuorumConfig::from_lines(membership, addrs.len())?
        };
        let data = bytes::Bytes::from(q.text());
        for r in &mut self.ensemble.servers {
            r.tree.init_config(data.clone(), q.version);
        }
        let first = q
            .voters()
            .next()
            .and_then(|id| usize::try_from(id - 1).ok());
        self.ensemble.quorum = Some(q);
        if let Some(first) = first.filter(|&i| i != self.ensemble.leader) {
            self.ensemble.leader = first;
            self.ensemble.servers[first].tree.advance_to(1 << 32);
        }
        Ok(())
    }

    /// After a reconfig is committed: one that left the leader out of the
    /// voters makes it step down. It designates the new config's voter
    /// with the lowest id that is up (`Leader.getDesignatedLeader`: the
    /// first of the acking voters, a `HashSet<Long>`), every server drops
    /// its clients as in an election, and the designated server leads a
    /// new epoch at once. The old leader, if it is still up, follows.
    pub(crate) fn after_reconfig(&mut self) {
        if self.ensemble.votes(self.ensemble.leader) {
            return;
        }
        let Some(next) = (0..self.ensemble.servers.len()).find(|&i| {
            self.ensemble.servers[i].status == ServerStatus::Serving && self.ensemble.votes(i)
        }) else {
            return;
        };
        tracing::info!(
            old = self.ensemble.leader,
            designated = next,
            "the reconfig removed the leader: it steps down"
        );
        self.begin_election();
        self.ensemble.designated = Some(next);
        self.end_election();
    }

    /// Prep of a reconfig on an ensemble's leader (`PrepRequestProcessor`):
    /// the new membership's `/zookeeper/config` data, versioned with the
    /// txn's zxid, or the error the txn carries. The checks in ZooKeeper's
    /// order: the version asked for, the new membership, a synced quorum of
    /// its voters, then WRITE on `/zookeeper/config` (super has it).
    pub(crate) fn prep_reconfig(
        &mut self,
        r: &crate::proto::ReconfigRequest,
        auth: &[crate::proto::Id],
        zxid: i64,
    ) -> Result<bytes::Bytes, crate::proto::ErrorCode> {
        use crate::proto::ErrorCode;
        let Some(q) = &self.ensemble.quorum else {
            return Err(ErrorCode::Unimplemented);
        };
        let mut next = q.apply(r)?;
        let voters: Vec<u64> = next.voters().collect();
        let synced = voters
            .iter()
            .filter(|&&id| {
                usize::try_from(id - 1)
                    .ok()
                    .and_then(|i| self.ensemble.servers.get(i))
                    .is_some_and(|s| s.status == ServerStatus::Serving)
            })
            .count();
        if synced * 2 <= voters.len() {
            return Err(ErrorCode::NewConfigNoQuorum);
        }
        let config = self.tree().get("/zookeeper/config").map(|n| n.acl.clone());
        if let Some(acl) = config {
            crate::acl::check(&acl, crate::proto::perms::WRITE, auth)?;
        }
        next.version = zxid;
        let data = bytes::Bytes::from(next.text());
        self.ensemble.quorum = Some(next);
        Ok(data)
    }

    /// Every server, as the controls report them.
    pub(crate) fn server_infos(&self, addrs: &[std::net::SocketAddr]) -> Vec<ServerInfo> {
        self.ensemble
            .servers
            .iter()
            .enumerate()
            .map(|(i, r)| ServerInfo {
                index: i,
                addr: addrs[i],
                status: if r.status == ServerStatus::Serving && self.ensemble.electing {
                    ServerStatus::Electing
                } else {
                    r.status
                },
                leader: i == self.ensemble.leader,
                lag: r.lag,
                last_zxid: r.last_zxid(),
                behind: r.backlog.len(),
                read_only: r.read_only,
                connections: self.out.conns.values().filter(|c| c.server == i).count(),
            })
            .collect()
    }
}
