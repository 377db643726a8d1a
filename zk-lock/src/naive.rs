//! Naive exclusive lock: one ephemeral node `<dir>/lock`.
//!
//! Every contender tries to create `<dir>/lock` with a per-acquisition id as
//! its data; exactly one succeeds. The others set an exists watch on it and
//! try again when it is deleted, so each release wakes every waiter (the
//! herd effect). After a ConnectionLoss on create, a NodeExists is checked
//! by reading the node back: if it carries our id and our session owns it,
//! the lost reply was our success.

use std::sync::Arc;
use std::time::Duration;

use zookeeper_client as zk;

use crate::error::{connection_lost, shed, LockError, Result};
use crate::metrics::Counters;
use crate::node::{
    contender_id, ensure_dir, find_by_data, retry, Backoff, Owned, Pending, Target, Wait,
};

/// The naive engine: the node `<dir>/lock`.
///
/// When the exists call finds the node already gone, its watch stays
/// registered until the node is next created (by this contender's own
/// retry, which is then notified of its own create).
#[derive(Debug)]
pub(crate) struct Naive {
    client: zk::Client,
    dir: String,
    path: String,
    counters: Arc<Counters>,
}

impl Naive {
    pub(crate) fn new(client: zk::Client, dir: String, counters: Arc<Counters>) -> Naive {
        Naive {
            client,
            path: format!("{dir}/lock"),
            dir,
            counters,
        }
    }

    pub(crate) fn client(&self) -> &zk::Client {
        &self.client
    }

    /// Acquires: `Ok(None)` when `wait` is [`Wait::Never`] and the node
    /// exists, [`LockError::Timeout`] when a deadline passed.
    pub(crate) async fn acquire(&self, wait: Wait) -> Result<Option<Owned>> {
        let id = contender_id().into_bytes();
        let mut pending = Pending::new(
            self.client.clone(),
            Target::Tagged {
                path: self.path.clone(),
                id: id.clone(),
            },
        );
        let attempt = self.attempt(&mut pending, &id, wait == Wait::Never);
        let result = match wait {
            Wait::Until(at) => tokio::time::timeout_at(at, attempt)
                .await
                .unwrap_or(Err(LockError::Timeout)),
            Wait::Forever | Wait::Never => attempt.await,
        };
        match result {
            Ok(true) => match pending.disarm() {
                Some(node) => Ok(Some(node)),
                None => Err(LockError::NodeVanished(self.path.clone())),
            },
            Ok(false) => {
                pending.cleared();
                Ok(None)
            }
            Err(err) => {
                let _ = pending.remove().await;
                Err(err)
            }
        }
    }

    async fn attempt(&self, pending: &mut Pending, id: &[u8], try_only: bool) -> Result<bool> {
        let client = &self.client;
        let opts = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());
        let mut maybe_ours = false;
        let mut backoff = Backoff::new();
        loop {
            match client.create(&self.path, id, &opts).await {
                Ok((stat, _)) => {
                    pending.created(Owned {
                        path: self.path.clone(),
                        czxid: stat.czxid,
                        shared_path: true,
                    });
                    return Ok(true);
                }
                Err(zk::Error::NoNode) => ensure_dir(client, &self.dir).await?,
                // Not executed: create again.
                Err(err) if shed(&err) => backoff.wait().await,
                Err(err) if connection_lost(&err) => {
                    if client.state().is_terminated() {
                        return Err(LockError::SessionExpired);
                    }
                    maybe_ours = true;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Err(zk::Error::NodeExists) => {
                    if std::mem::take(&mut maybe_ours) {
                        if let Some(node) = find_by_data(client, &self.path, id).await? {
                            pending.created(node);
                            return Ok(true);
                        }
                    }
                    if try_only {
                        return Ok(false);
                    }
                    match retry(client, || client.check_and_watch_stat(&self.path)).await {
                        Ok((None, _)) => continue,
                        Ok((Some(_), watcher)) => {
                            let event = watcher.changed().await;
                            self.counters.notification();
                            if event.event_type == zk::EventType::Session
                                && event.session_state.is_terminated()
                            {
                                return Err(LockError::SessionExpired);
                            }
                        }
                        Err(err) => return Err(err.into()),
                    }
                }
                Err(err) => return Err(err.into()),
            }
        }
    }
}
