//! The observer session: the history of the scenario's nodes on a real
//! server, attributed to sessions from the proxies' ledger.

use crate::error::RunError;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use zk_mock::record::ChangeKind;
use zookeeper_client as zk;

use crate::target::{Change, History};
use zk_mock::fault::OpFamily;

/// The writes the proxies keep in their ledger (for the history).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpKind {
    /// create, create2, createContainer, createTTL.
    Create,
    /// delete.
    Delete,
    /// closeSession.
    Close,
}

impl OpKind {
    /// The kind of a request op code, if the ledger keeps it.
    pub(super) fn of(op: i32) -> Option<OpKind> {
        match OpFamily::of(op)? {
            OpFamily::Create => Some(OpKind::Create),
            OpFamily::Delete => Some(OpKind::Delete),
            _ => None,
        }
    }
}

/// A create, delete or closeSession the server confirmed to a proxied
/// session: which session, and the zxid of the transaction (from the reply
/// header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Known {
    pub(super) kind: OpKind,
    /// The node (empty for closeSession).
    pub(super) path: String,
    pub(super) zxid: i64,
    pub(super) session: i64,
}

/// Who made a change, and at which zxid, as far as the proxies know.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Who {
    pub(super) session: Option<i64>,
    pub(super) zxid: Option<i64>,
    pub(super) by_session_end: bool,
}

impl Who {
    pub(super) fn known(session: i64, zxid: i64) -> Who {
        Who {
            session: Some(session),
            zxid: Some(zxid),
            by_session_end: false,
        }
    }
}

/// Who made each change the observer saw, as far as the proxies know:
/// the creator of a node (from the create's reply), and for a deletion the
/// session whose delete succeeded during that node's lifetime — or, when no
/// proxied session deleted it, its creator: by its own closeSession, or
/// with `by_session_end` (the server removed an ephemeral when the session
/// expired or was taken over and closed). The zxid comes with it where a
/// reply told it.
pub(super) fn attribute(seen: &[(ChangeKind, String)], known: &[Known]) -> Vec<Who> {
    let mut creates: BTreeMap<&str, Vec<&Known>> = BTreeMap::new();
    let mut deletes: BTreeMap<&str, Vec<&Known>> = BTreeMap::new();
    let mut closes: BTreeMap<i64, i64> = BTreeMap::new();
    for k in known {
        match k.kind {
            OpKind::Create => creates.entry(k.path.as_str()).or_default().push(k),
            OpKind::Delete => deletes.entry(k.path.as_str()).or_default().push(k),
            OpKind::Close => {
                closes.insert(k.session, k.zxid);
            }
        }
    }
    for v in creates.values_mut() {
        v.sort_by_key(|k| k.zxid);
    }
    // Per path: how many creations seen so far.
    let mut lifetimes: BTreeMap<&str, usize> = BTreeMap::new();
    seen.iter()
        .map(|(kind, path)| {
            let path = path.as_str();
            let made = creates.get(path);
            match kind {
                ChangeKind::Created => {
                    let n = lifetimes.entry(path).or_default();
                    *n += 1;
                    match made.and_then(|c| c.get(*n - 1)) {
                        Some(k) => Who::known(k.session, k.zxid),
                        None => Who::default(),
                    }
                }
                ChangeKind::Deleted => {
                    let n = lifetimes.get(path).copied().unwrap_or(0);
                    let Some(this) = made.and_then(|c| c.get(n.wrapping_sub(1))) else {
                        return Who::default();
                    };
                    let next = made.and_then(|c| c.get(n)).map_or(i64::MAX, |k| k.zxid);
                    let by = deletes
                        .get(path)
                        .and_then(|d| d.iter().find(|k| k.zxid > this.zxid && k.zxid < next));
                    let closed = closes
                        .get(&this.session)
                        .filter(|z| **z > this.zxid && **z < next);
                    match (by, closed) {
                        (Some(k), _) => Who::known(k.session, k.zxid),
                        (None, Some(z)) => Who::known(this.session, *z),
                        (None, None) => Who {
                            session: Some(this.session),
                            zxid: None,
                            by_session_end: true,
                        },
                    }
                }
                _ => Who::default(),
            }
        })
        .collect()
}

/// The observer session and what it saw.
pub(super) struct Observer {
    pub(super) client: zk::Client,
    pub(super) seen: Arc<Mutex<Vec<(ChangeKind, String)>>>,
    pub(super) notes: Arc<Mutex<Vec<String>>>,
    pub(super) task: JoinHandle<()>,
}

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observer")
            .field("session", &self.client.session_id())
            .field("seen", &self.seen.lock().len())
            .finish()
    }
}

/// The parent of `path` ("/" for a top-level node).
pub(super) fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// Deletes `path` and everything below it; a missing node is fine.
pub(super) async fn delete_tree(c: &zk::Client, path: &str) -> Result<(), zk::Error> {
    for _ in 0..10 {
        let children = match c.list_children(path).await {
            Ok(ch) => ch,
            Err(zk::Error::NoNode) => return Ok(()),
            Err(e) => return Err(e),
        };
        for child in children {
            let p = if path == "/" {
                format!("/{child}")
            } else {
                format!("{path}/{child}")
            };
            Box::pin(delete_tree(c, &p)).await?;
        }
        match c.delete(path, None).await {
            Ok(()) | Err(zk::Error::NoNode) => return Ok(()),
            // Someone (a session of an earlier run) added a child meanwhile.
            Err(zk::Error::NotEmpty) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(zk::Error::NotEmpty)
}

impl Observer {
    pub(super) async fn start(
        server: SocketAddr,
        lock_dir: &str,
        res_dir: &str,
    ) -> Result<Observer, RunError> {
        let cs = server.to_string();
        let client = zk::Client::connector()
            .with_session_timeout(Duration::from_secs(10))
            .connect(&cs)
            .await
            .map_err(|e| RunError::zk(format!("observer session to {cs}"), e))?;
        for dir in [lock_dir, res_dir] {
            delete_tree(&client, dir)
                .await
                .map_err(|e| RunError::zk(format!("removing {dir} left by an earlier run"), e))?;
        }
        let root = parent(lock_dir).to_string();
        if root != "/" {
            let opts = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
            match client.mkdir(&root, &opts).await {
                Ok(()) | Err(zk::Error::NodeExists) => {}
                Err(e) => return Err(RunError::zk(format!("creating {root}"), e)),
            }
        }
        let mut watcher = client
            .watch(&root, zk::AddWatchMode::PersistentRecursive)
            .await
            .map_err(|e| RunError::zk(format!("watching {root} (persistent, recursive)"), e))?;
        let seen: Arc<Mutex<Vec<(ChangeKind, String)>>> = Arc::default();
        let notes: Arc<Mutex<Vec<String>>> = Arc::default();
        let (seen2, notes2) = (seen.clone(), notes.clone());
        let task = tokio::spawn(async move {
            loop {
                let ev = watcher.changed().await;
                let kind = match ev.event_type {
                    zk::EventType::NodeCreated => ChangeKind::Created,
                    zk::EventType::NodeDeleted => ChangeKind::Deleted,
                    zk::EventType::NodeDataChanged => ChangeKind::DataChanged,
                    zk::EventType::NodeChildrenChanged => continue,
                    zk::EventType::Session => {
                        let n = seen2.lock().len();
                        notes2.lock().push(format!(
                            "observer session {:?} after {n} changes (changes may be missing)",
                            ev.session_state
                        ));
                        if ev.session_state.is_terminated() {
                            return;
                        }
                        continue;
                    }
                };
                seen2.lock().push((kind, ev.path));
            }
        });
        Ok(Observer {
            client,
            seen,
            notes,
            task,
        })
    }

    pub(super) fn history(&self, prefixes: &[String], known: &[Known]) -> History {
        history_of(&self.seen.lock(), &self.notes.lock(), prefixes, known)
    }
}

/// The history of the nodes under `prefixes`: what an observer `seen`
/// (with its `notes`), attributed from the proxies' ledger (`known`), and
/// completed from it where the observer missed changes.
pub(super) fn history_of(
    seen: &[(ChangeKind, String)],
    notes: &[String],
    prefixes: &[String],
    known: &[Known],
) -> History {
    let under = |p: &str| {
        prefixes.iter().any(|x| {
            p == x
                || p.strip_prefix(x.as_str())
                    .is_some_and(|r| r.starts_with('/'))
        })
    };
    let who = attribute(seen, known);
    let mut rows: Vec<(Change, String)> = Vec::new();
    // The order: the zxid where a reply told it, else the last zxid
    // known before it (arrival order is zxid order).
    let mut last = 0;
    for ((kind, path), w) in seen.iter().zip(who) {
        last = w.zxid.unwrap_or(last).max(last);
        if !under(path) {
            continue;
        }
        let zxid = w
            .zxid
            .map_or_else(|| format!("~{last:#x}"), |z| format!("{z:#x}"));
        let by = match (w.session, w.by_session_end) {
            (Some(s), true) => format!(" (session {s:#x} ended)"),
            (Some(s), false) => format!(" by session {s:#x}"),
            (None, _) => String::new(),
        };
        rows.push((
            Change {
                pos: last,
                zxid: w.zxid,
                session: w.session,
                path: path.clone(),
                kind: *kind,
                by_session_end: w.by_session_end,
            },
            format!("zxid {zxid} {kind:?} {path}{by}"),
        ));
    }
    // What the observer missed while its connection was down (a
    // persistent watch is not replayed after a reconnection): every
    // create and delete a proxied client was told succeeded, by its
    // zxid, that no seen change accounts for.
    // A seen change the ledger did not explain (no session known: the
    // observer missed the start of that node's lifetime) is the one a
    // ledger entry of the same node and kind stands for: it takes that
    // entry's zxid and session, in order.
    let accounted: std::collections::BTreeSet<(String, i64)> = rows
        .iter()
        .filter_map(|(c, _)| Some((c.path.clone(), c.zxid?)))
        .collect();
    let mut anonymous: BTreeMap<(String, bool), std::collections::VecDeque<usize>> =
        BTreeMap::new();
    for (i, (c, _)) in rows.iter().enumerate() {
        if c.session.is_none() && matches!(c.kind, ChangeKind::Created | ChangeKind::Deleted) {
            anonymous
                .entry((c.path.clone(), c.kind == ChangeKind::Created))
                .or_default()
                .push_back(i);
        }
    }
    let mut missed = Vec::new();
    let mut reordered = false;
    let mut ledger: Vec<&Known> = known.iter().collect();
    ledger.sort_by_key(|k| k.zxid);
    for k in ledger {
        let kind = match k.kind {
            OpKind::Create => ChangeKind::Created,
            OpKind::Delete => ChangeKind::Deleted,
            OpKind::Close => continue,
        };
        if !under(&k.path) || accounted.contains(&(k.path.clone(), k.zxid)) {
            continue;
        }
        if let Some(i) = anonymous
            .get_mut(&(k.path.clone(), kind == ChangeKind::Created))
            .and_then(std::collections::VecDeque::pop_front)
        {
            let (c, t) = &mut rows[i];
            c.pos = k.zxid;
            c.zxid = Some(k.zxid);
            c.session = Some(k.session);
            *t = format!(
                "zxid {:#x} {kind:?} {} by session {:#x}",
                k.zxid, k.path, k.session
            );
            reordered = true;
            continue;
        }
        missed.push((
            Change {
                pos: k.zxid,
                zxid: Some(k.zxid),
                session: Some(k.session),
                path: k.path.clone(),
                kind,
                by_session_end: false,
            },
            format!(
                "zxid {:#x} {kind:?} {} by session {:#x} (from the proxy's ledger: the observer missed it)",
                k.zxid, k.path, k.session
            ),
        ));
    }
    if reordered || !missed.is_empty() {
        rows.extend(missed);
        rows.sort_by_key(|(c, _)| c.pos);
    }
    let (changes, mut text): (Vec<Change>, Vec<String>) = rows.into_iter().unzip();
    text.extend(notes.iter().map(|n| format!("{n} sess ")));
    History {
        changes,
        notifications: None,
        text,
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
