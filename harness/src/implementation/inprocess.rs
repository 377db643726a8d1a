//! zk-lock's recipes (and the harness's recipes broken on purpose) hosted in
//! this process, behind the same operations a driver offers. The harness
//! runs them directly (`--implementation zk-lock`), and the `zk-lock-driver`
//! binary serves them through the driver protocol, so the two can be compared.

use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::AbortHandle;
use zk_lock::{GuardMonitor, GuardState, LockError};
use zookeeper_client as zk;

use super::protocol::{ConnState, Event, LockSpec, OpError};
use super::{Acquired, Mode};
use crate::implementation::recipe::{Held, Lock};
use crate::scenario::{Kind, LayoutName, Recipe, Role};

/// Where a host's events go.
pub type EventSink = Arc<dyn Fn(Event) + Send + Sync>;

/// The in-process implementation's name in reports.
pub const NAME: &str = "zk-lock";

/// What the in-process host offers: every kind but the semaphore, and every recipe.
pub fn offers() -> (BTreeMap<String, String>, Vec<String>) {
    let kinds = [
        (Kind::Exclusive, "zk_lock::Lock"),
        (Kind::ReadWrite, "zk_lock::RwLock"),
        (Kind::Reentrant, "zk_lock::Lock (reentrant)"),
    ]
    .into_iter()
    .map(|(k, c)| (k.name().to_string(), c.to_string()))
    .collect();
    let recipes = Recipe::ALL.iter().map(|r| r.name().to_string()).collect();
    (kinds, recipes)
}

/// The implementation string, with zk-lock's version.
pub fn implementation() -> String {
    format!("zk-lock {}", env!("CARGO_PKG_VERSION"))
}

struct Client {
    zk: zk::Client,
    lock: Lock,
    /// What the client holds, innermost entry last.
    held: tokio::sync::Mutex<Vec<Held>>,
    /// The newest entry's guard state, for the monitor.
    guard: watch::Sender<Option<GuardMonitor>>,
    monitor: AbortHandle,
}

impl Drop for Client {
    fn drop(&mut self) {
        self.monitor.abort();
    }
}

/// The in-process host of one scenario run.
pub struct Host {
    clients: Mutex<HashMap<String, Arc<Client>>>,
    sink: EventSink,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("inprocess::Host")
            .field("clients", &self.clients().len())
            .finish()
    }
}

/// A zookeeper-client error, classified.
pub fn zk_error(e: &zk::Error) -> OpError {
    let code = format!("{e:?}");
    let code = code
        .split(['(', ' ', '{'])
        .next()
        .unwrap_or("Error")
        .to_string();
    match e {
        zk::Error::NoNode
        | zk::Error::NodeExists
        | zk::Error::BadVersion
        | zk::Error::BadArguments(_)
        | zk::Error::NoAuth
        | zk::Error::InvalidAcl
        | zk::Error::NoChildrenForEphemerals
        | zk::Error::NotEmpty => OpError::definite(&code, e.to_string()),
        _ => OpError::indefinite(&code, e.to_string()),
    }
}

/// A zk-lock error, classified.
pub fn lock_error(e: &LockError) -> OpError {
    match e {
        LockError::Zk(z) | LockError::ConnectionLoss(z) => zk_error(z),
        LockError::InvalidDir(_) => OpError::definite("InvalidDir", e.to_string()),
        LockError::Unsupported(_) => OpError::definite("Unsupported", e.to_string()),
        LockError::SessionExpired => OpError::indefinite("SessionExpired", e.to_string()),
        LockError::Timeout => OpError::definite("Timeout", e.to_string()),
        LockError::Lost => OpError::definite("LockLost", e.to_string()),
        other => {
            let code = format!("{other:?}");
            let code = code.split(['(', ' ']).next().unwrap_or("Error").to_string();
            OpError::indefinite(&code, other.to_string())
        }
    }
}

fn unknown(client: &str) -> OpError {
    OpError::definite("UnknownClient", format!("no open client {client:?}"))
}

impl Host {
    /// A host whose clients report to `sink`.
    pub fn new(sink: EventSink) -> Host {
        Host {
            clients: Mutex::default(),
            sink,
        }
    }

    fn clients(&self) -> parking_lot::MutexGuard<'_, HashMap<String, Arc<Client>>> {
        self.clients.lock()
    }

    fn get(&self, client: &str) -> Result<Arc<Client>, OpError> {
        self.clients()
            .get(client)
            .cloned()
            .ok_or_else(|| unknown(client))
    }

    /// Connects `name` and makes its lock; an open client of that name is closed first.
    pub async fn open(
        &self,
        name: &str,
        connect: &str,
        session_timeout: Duration,
        spec: &LockSpec,
    ) -> Result<i64, OpError> {
        let old = self.clients().remove(name);
        drop(old);
        let recipe = match &spec.recipe {
            Some(r) => Recipe::from_name(r)
                .ok_or_else(|| OpError::definite("UnknownRecipe", format!("no recipe {r:?}")))?,
            None => match spec.kind.as_str() {
                "exclusive" => Recipe::Predecessor,
                "read-write" => Recipe::RwPredecessor,
                "reentrant" => Recipe::Reentrant,
                k => {
                    return Err(OpError::definite(
                        "UnknownKind",
                        format!("zk-lock has no {k:?} lock"),
                    ))
                }
            },
        };
        let layout = match spec.layout.as_deref() {
            None | Some("curator") => LayoutName::Curator,
            Some("kazoo") => LayoutName::Kazoo,
            Some(l) => {
                return Err(OpError::definite(
                    "UnknownLayout",
                    format!("no layout {l:?}"),
                ))
            }
        };
        let zk = zk::Client::connector()
            .with_session_timeout(session_timeout)
            .connect(connect)
            .await
            .map_err(|e| zk_error(&e))?;
        let session = zk.session_id().0;
        let lock_ =
            Lock::new(recipe, layout, zk.clone(), &spec.path).map_err(|e| lock_error(&e))?;
        let (guard_tx, guard_rx) = watch::channel(None);
        let monitor = tokio::spawn(monitor(
            name.to_string(),
            zk.clone(),
            guard_rx,
            self.sink.clone(),
        ))
        .abort_handle();
        (self.sink)(Event::State {
            client: name.to_string(),
            state: ConnState::Connected,
            session: Some(session),
        });
        let c = Arc::new(Client {
            zk,
            lock: lock_,
            held: tokio::sync::Mutex::new(Vec::new()),
            guard: guard_tx,
            monitor,
        });
        self.clients().insert(name.to_string(), c);
        Ok(session)
    }

    /// Acquires (or, while held, re-enters a reentrant lock).
    pub async fn acquire(&self, name: &str, role: Role, mode: Mode) -> Result<Acquired, OpError> {
        let c = self.get(name)?;
        match c.lock.acquire(role, mode).await {
            Ok(Some(held)) => {
                let node = held.path();
                c.guard.send_replace(held.monitor());
                c.held.lock().await.push(held);
                Ok(Acquired::Held {
                    node,
                    session: Some(c.zk.session_id().0),
                })
            }
            Ok(None) | Err(LockError::Timeout) => Ok(Acquired::NotAcquired),
            Err(e) => Err(lock_error(&e)),
        }
    }

    /// Releases the newest entry.
    pub async fn release(&self, name: &str) -> Result<(), OpError> {
        let c = self.get(name)?;
        let held = c.held.lock().await.pop();
        let Some(held) = held else {
            return Err(OpError::definite("NotHeld", "the client holds nothing"));
        };
        let r = c.lock.release(held).await;
        let rest = c.held.lock().await.last().and_then(Held::monitor);
        c.guard.send_replace(rest);
        r.map_err(|e| lock_error(&e))
    }

    /// Creates a persistent marker node through the client's session.
    pub async fn touch(&self, name: &str, path: &str, data: &str) -> Result<(), OpError> {
        let c = self.get(name)?;
        let opts = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
        c.zk.create(path, data.as_bytes(), &opts)
            .await
            .map(|_| ())
            .map_err(|e| zk_error(&e))
    }

    /// Closes the client's session.
    pub async fn close(&self, name: &str) -> Result<(), OpError> {
        let c = self.clients().remove(name).ok_or_else(|| unknown(name))?;
        let zk = c.zk.clone();
        drop(c);
        // Every clone gone: the client sends closeSession. Wait until it is
        // done, boundedly (the connection may be stalled).
        let mut states = zk.state_watcher();
        drop(zk);
        let _ = tokio::time::timeout(Duration::from_secs(5), async {
            while !states.state().is_terminated() {
                states.changed().await;
            }
        })
        .await;
        Ok(())
    }

    /// Drops the client without waiting for anything (the harness has
    /// already silenced its connection).
    pub fn crash(&self, name: &str) {
        self.clients().remove(name);
    }

    /// Whether the client's session has ended (expired or closed), as its
    /// zookeeper-client knows it now.
    pub fn session_ended(&self, name: &str) -> bool {
        self.clients()
            .get(name)
            .is_some_and(|c| c.zk.state().is_terminated())
    }

    /// The instances' counters: (notifications, children reads).
    pub fn counters(&self) -> (u64, u64) {
        self.clients().values().fold((0, 0), |acc, c| {
            let (n, r) = c.lock.counters();
            (acc.0 + n, acc.1 + r)
        })
    }

    /// Closes every client, in the order of their names: the closeSessions
    /// and what they delete and notify come in the same order every run.
    pub async fn shutdown(&self) {
        let mut names: Vec<String> = self.clients().keys().cloned().collect();
        names.sort_unstable();
        for n in names {
            let _ = self.close(&n).await;
        }
    }
}

/// Reports the library's view as events: while a guard is held, the guard's
/// own state (zk-lock's suspended / held again / lost); otherwise the
/// session's connection state. The end of the session is always reported.
async fn monitor(
    name: String,
    zk: zk::Client,
    mut guard: watch::Receiver<Option<GuardMonitor>>,
    sink: EventSink,
) {
    let session = Some(zk.session_id().0);
    let mut states = zk.state_watcher();
    drop(zk);
    let say = |word: Word| {
        sink(match word {
            Word::Suspended => Event::State {
                client: name.clone(),
                state: ConnState::Suspended,
                session,
            },
            Word::Reconnected => Event::State {
                client: name.clone(),
                state: ConnState::Reconnected,
                session,
            },
            Word::SessionLost => Event::State {
                client: name.clone(),
                state: ConnState::Lost,
                session,
            },
            Word::LockLost => Event::Lock {
                client: name.clone(),
                state: "lost".into(),
            },
        })
    };
    let mut reporter = Reporter::default();
    let mut current: Option<GuardMonitor> = guard.borrow_and_update().clone();
    if let Some(word) = reporter.entry(current.as_ref().map(GuardMonitor::state)) {
        say(word);
    }
    loop {
        let guard_changed = async {
            match current.as_mut() {
                Some(g) => g.changed().await,
                None => std::future::pending().await,
            }
        };
        let word = tokio::select! {
            s = states.changed() => {
                let word = reporter.session(s);
                if s.is_terminated() {
                    if let Some(word) = word {
                        say(word);
                    }
                    return;
                }
                word
            }
            r = guard.changed() => {
                if r.is_err() {
                    return;
                }
                current = guard.borrow_and_update().clone();
                let now = current.as_ref().map(GuardMonitor::state);
                if matches!(now, Some(GuardState::Lost | GuardState::Released)) {
                    current = None;
                }
                reporter.entry(now)
            }
            now = guard_changed => {
                if matches!(now, GuardState::Lost | GuardState::Released) {
                    // Final: the next entry, if any, comes on `guard`.
                    current = None;
                }
                reporter.guard(now)
            }
        };
        if let Some(word) = word {
            say(word);
        }
    }
}

/// What the monitor tells the harness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Word {
    Suspended,
    Reconnected,
    SessionLost,
    LockLost,
}

/// The monitor's decisions, apart from its channels: what it has said
/// (suspended or not) and whether a guard speaks for the connection.
///
/// Every "suspended" it says is followed by "reconnected" once the library
/// shows the connection back, whichever source said which: a disconnection
/// seen between two entries, before the next entry's guard reached the
/// monitor, is answered by that guard's `Held`.
#[derive(Debug, Default)]
struct Reporter {
    suspended: bool,
    guarded: bool,
}

impl Reporter {
    /// The session's state changed; it speaks only while no guard does.
    fn session(&mut self, s: zk::SessionState) -> Option<Word> {
        if s.is_terminated() {
            return Some(Word::SessionLost);
        }
        if self.guarded {
            return None;
        }
        match s {
            zk::SessionState::Disconnected => self.suspend(),
            zk::SessionState::SyncConnected => self.resume(),
            _ => None,
        }
    }

    /// A new entry's guard (`None`: no entry), from what it says now.
    fn entry(&mut self, state: Option<GuardState>) -> Option<Word> {
        let Some(state) = state else {
            self.guarded = false;
            return None;
        };
        self.guarded = true;
        self.guard(state)
    }

    /// The followed guard's state changed.
    fn guard(&mut self, state: GuardState) -> Option<Word> {
        match state {
            GuardState::Suspended => self.suspend(),
            GuardState::Held => self.resume(),
            GuardState::Lost => {
                self.guarded = false;
                Some(Word::LockLost)
            }
            // Released: the session speaks until the next entry.
            _ => {
                self.guarded = false;
                None
            }
        }
    }

    fn suspend(&mut self) -> Option<Word> {
        (!std::mem::replace(&mut self.suspended, true)).then_some(Word::Suspended)
    }

    fn resume(&mut self) -> Option<Word> {
        std::mem::replace(&mut self.suspended, false).then_some(Word::Reconnected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zk::SessionState::{Disconnected, SyncConnected};

    #[test]
    fn a_disconnection_between_entries_is_answered_by_the_next_guard() {
        let mut r = Reporter::default();
        // Released; the session drops before the next entry's guard arrives.
        assert_eq!(r.session(Disconnected), Some(Word::Suspended));
        // The guard arrives held again: the suspension must end.
        assert_eq!(r.entry(Some(GuardState::Held)), Some(Word::Reconnected));
        // The session's word no longer counts while the guard speaks.
        assert_eq!(r.session(Disconnected), None);
        assert_eq!(r.session(SyncConnected), None);
    }

    #[test]
    fn a_guard_speaks_for_the_connection_while_held() {
        let mut r = Reporter::default();
        assert_eq!(r.entry(Some(GuardState::Held)), None);
        assert_eq!(r.guard(GuardState::Suspended), Some(Word::Suspended));
        assert_eq!(r.entry(Some(GuardState::Suspended)), None, "said once");
        assert_eq!(r.guard(GuardState::Held), Some(Word::Reconnected));
        assert_eq!(r.guard(GuardState::Released), None);
        // Between entries the session speaks again.
        assert_eq!(r.session(Disconnected), Some(Word::Suspended));
        assert_eq!(r.session(SyncConnected), Some(Word::Reconnected));
    }

    #[test]
    fn a_lost_lock_and_an_ended_session_are_said() {
        let mut r = Reporter::default();
        assert_eq!(r.entry(Some(GuardState::Lost)), Some(Word::LockLost));
        assert_eq!(r.session(Disconnected), Some(Word::Suspended));
        assert_eq!(
            r.session(zk::SessionState::Expired),
            Some(Word::SessionLost)
        );
    }
}
