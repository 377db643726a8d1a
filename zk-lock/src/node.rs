//! A contender's node: its name ([`Layout`], [`contender_id`]), its
//! directory, how long its acquisition waits ([`Wait`]), finding it after a
//! lost create reply, and deleting it until it is provably gone.

use std::time::Duration;

use tokio::time::Instant;

use zookeeper_client as zk;

use crate::error::{connection_lost, shed, Result};

/// Pause before retrying a call that failed with ConnectionLoss; the client
/// reconnects on its own meanwhile.
const RETRY_PAUSE: Duration = Duration::from_millis(10);

/// The pause before resending a shed request: 10 ms, doubling up to 1 s.
#[derive(Debug)]
pub(crate) struct Backoff(Duration);

impl Backoff {
    const FIRST: Duration = Duration::from_millis(10);
    const MAX: Duration = Duration::from_secs(1);

    pub(crate) fn new() -> Backoff {
        Backoff(Self::FIRST)
    }

    /// Sleeps for the current pause and doubles the next one.
    pub(crate) async fn wait(&mut self) {
        tokio::time::sleep(self.0).await;
        self.0 = (self.0 * 2).min(Self::MAX);
    }
}

/// Runs `op` until it fails with something other than a lost connection
/// ([`connection_lost`]) or a shed request ([`shed`]).
///
/// Gives up with SessionExpired once the session is terminated.
pub(crate) async fn retry<T, F, Fut>(client: &zk::Client, mut op: F) -> Result<T, zk::Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, zk::Error>>,
{
    let mut backoff = Backoff::new();
    loop {
        match op().await {
            Err(err) if connection_lost(&err) => {
                if client.state().is_terminated() {
                    return Err(zk::Error::SessionExpired);
                }
                tokio::time::sleep(RETRY_PAUSE).await;
            }
            Err(err) if shed(&err) => backoff.wait().await,
            other => return other,
        }
    }
}

/// A node known to be ours: its path and creation zxid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Owned {
    pub(crate) path: String,
    pub(crate) czxid: i64,
    /// Whether another contender's node can take this path after ours is
    /// gone (the naive lock's `<dir>/lock`); a sequential node's path is
    /// never reused.
    pub(crate) shared_path: bool,
}

/// How [`delete_until_gone`] found the node gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gone {
    /// Our delete removed it, or may have (its reply was lost) while the
    /// session lived on.
    Deleted,
    /// It was gone before our delete reached it (someone else deleted it),
    /// or the session ended first or meanwhile: the node went with it, and
    /// nothing proves the lock was still held when the release began.
    Lost,
}

/// Deletes `node` until it is provably gone: deleted by us, gone already,
/// or replaced by a node with another czxid (someone else's, after our
/// delete was applied but its reply lost). Never deletes a node it does not own.
pub(crate) async fn delete_until_gone(client: &zk::Client, node: &Owned) -> Result<Gone> {
    // The node is known to be there whenever a delete is sent (at first, and
    // after a read found it again), so a NoNode is someone else's doing. A
    // shared path may by now hold another contender's node (ours deleted by
    // someone else): look first. (A deletion and a new create between that
    // read and the delete remain possible; only a sequential lock closes it.)
    if node.shared_path {
        match retry(client, || client.get_data(&node.path)).await {
            Ok((_, stat)) if stat.czxid == node.czxid => {}
            Ok(_) | Err(zk::Error::NoNode) => return Ok(Gone::Lost),
            Err(zk::Error::SessionExpired | zk::Error::ClientClosed) => return Ok(Gone::Lost),
            Err(err) => return Err(err.into()),
        }
    }
    let mut backoff = Backoff::new();
    loop {
        match client.delete(&node.path, None).await {
            Ok(()) => return Ok(Gone::Deleted),
            Err(zk::Error::NoNode) => return Ok(Gone::Lost),
            // Ephemerals go with the session: nothing left to delete.
            Err(zk::Error::SessionExpired | zk::Error::ClientClosed) => return Ok(Gone::Lost),
            Err(err) if connection_lost(&err) => {}
            // Not executed: the node is still there, the same delete goes again.
            Err(err) if shed(&err) => {
                backoff.wait().await;
                continue;
            }
            Err(err) => return Err(err.into()),
        }
        // The delete may or may not have been applied: look before deleting
        // again, as the path may by now name another contender's node.
        match retry(client, || client.get_data(&node.path)).await {
            Err(zk::Error::NoNode) => return Ok(Gone::Deleted),
            Err(zk::Error::SessionExpired | zk::Error::ClientClosed) => return Ok(Gone::Lost),
            Ok((_, stat)) if stat.czxid != node.czxid => return Ok(Gone::Deleted),
            Ok(_) => {}
            Err(err) => return Err(err.into()),
        }
    }
}

/// Finds, among `dir`'s children, the node whose name starts with `prefix`
/// and whose ephemeral owner is this session (Curator PR #303: a closing
/// session's node with our prefix is not ours).
pub(crate) async fn find_protected(
    client: &zk::Client,
    dir: &str,
    prefix: &str,
) -> Result<Option<Owned>> {
    let children = match retry(client, || client.list_children(dir)).await {
        Ok(children) => children,
        // The directory is missing: so is any node in it.
        Err(zk::Error::NoNode) => return Ok(None),
        Err(err) => return Err(err.into()),
    };
    let session = client.session_id().0;
    for name in children.into_iter().filter(|c| c.starts_with(prefix)) {
        let path = format!("{dir}/{name}");
        match retry(client, || client.get_data(&path)).await {
            Ok((_, stat)) if stat.ephemeral_owner == session => {
                return Ok(Some(Owned {
                    path,
                    czxid: stat.czxid,
                    shared_path: false,
                }))
            }
            Ok(_) | Err(zk::Error::NoNode) => {}
            Err(err) => return Err(err.into()),
        }
    }
    Ok(None)
}

/// Reads `path` and says whether it is ours: created by this session with
/// `id` as its data (the naive lock's check after a lost create reply).
pub(crate) async fn find_by_data(
    client: &zk::Client,
    path: &str,
    id: &[u8],
) -> Result<Option<Owned>> {
    match retry(client, || client.get_data(path)).await {
        Ok((data, stat)) if data == id && stat.ephemeral_owner == client.session_id().0 => {
            Ok(Some(Owned {
                path: path.to_string(),
                czxid: stat.czxid,
                shared_path: true,
            }))
        }
        Ok(_) | Err(zk::Error::NoNode) => Ok(None),
        Err(err) => Err(err.into()),
    }
}

/// How to find a contender's node that may exist without the contender
/// knowing it yet (a create in flight, or whose reply was lost).
#[derive(Debug, Clone)]
pub(crate) enum Target {
    /// Not created, or created and known.
    Known(Option<Owned>),
    /// A protected sequential node: `dir`'s child starting with `prefix`.
    Protected { dir: String, prefix: String },
    /// A fixed path holding `id` as its data.
    Tagged { path: String, id: Vec<u8> },
}

/// A contender's node while it is not yet handed to a guard. Dropping it
/// (an `acquire` future cancelled) deletes the node in a spawned task.
#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) client: zk::Client,
    pub(crate) target: Target,
}

impl Pending {
    pub(crate) fn new(client: zk::Client, target: Target) -> Pending {
        Pending { client, target }
    }

    /// Records that the node exists and is ours.
    pub(crate) fn created(&mut self, node: Owned) {
        self.target = Target::Known(Some(node));
    }

    /// Records that no node exists (any more).
    pub(crate) fn cleared(&mut self) {
        self.target = Target::Known(None);
    }

    /// Hands the node over (to a guard): dropping no longer deletes it.
    pub(crate) fn disarm(&mut self) -> Option<Owned> {
        match std::mem::replace(&mut self.target, Target::Known(None)) {
            Target::Known(node) => node,
            _ => None,
        }
    }

    /// Deletes the node, wherever it got to, until it is provably gone.
    /// Cancelled midway, the drop finishes the job in the background.
    pub(crate) async fn remove(mut self) -> Result<()> {
        let result = cleanup(&self.client, self.target.clone()).await;
        self.target = Target::Known(None);
        result
    }
}

async fn cleanup(client: &zk::Client, target: Target) -> Result<()> {
    let node = match target {
        Target::Known(node) => node,
        Target::Protected { dir, prefix } => find_protected(client, &dir, &prefix).await?,
        Target::Tagged { path, id } => find_by_data(client, &path, &id).await?,
    };
    match node {
        Some(node) => delete_until_gone(client, &node).await.map(|_| ()),
        None => Ok(()),
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let target = std::mem::replace(&mut self.target, Target::Known(None));
        if matches!(target, Target::Known(None)) {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let client = self.client.clone();
            rt.spawn(async move {
                let _ = cleanup(&client, target).await;
            });
        }
    }
}

/// Which ecosystem's node names a sequential lock uses, so that processes
/// using other clients can share one lock directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Layout {
    /// `_c_<uuid>-lock-<seq>`: Apache Curator's `InterProcessMutex` and
    /// `zookeeper_client`'s `LockPrefix::new_curator(dir, "lock-")`. The
    /// read/write lock's `_c_<uuid>-read-<seq>` / `…-write-<seq>` are this
    /// crate's own (Curator's `InterProcessReadWriteLock` uses
    /// `__READ__`/`__WRIT__`).
    #[default]
    Curator,
    /// `<uuid hex>__lock__<seq>`: kazoo's `Lock` and `WriteLock`; readers
    /// `<uuid hex>__rlock__<seq>`, kazoo's `ReadLock`.
    Kazoo,
}

/// How long an acquisition waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    Forever,
    Until(Instant),
    /// Not at all: `try_acquire`.
    Never,
}

/// A fresh per-acquisition id: a random (v4) UUID, hyphenated.
pub(crate) fn contender_id() -> String {
    uuid::Uuid::new_v4().hyphenated().to_string()
}

/// Creates `dir` (and its ancestors) as persistent nodes if missing.
pub(crate) async fn ensure_dir(client: &zk::Client, dir: &str) -> Result<()> {
    let opts = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    match retry(client, || client.mkdir(dir, &opts)).await {
        Ok(()) | Err(zk::Error::NodeExists) => Ok(()),
        Err(err) => Err(err.into()),
    }
}
