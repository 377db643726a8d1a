//! The lock implementations a scenario can judge: zk-lock in this process,
//! or any library behind a driver process (`harness/DRIVERS.md`).
//!
//! Either way the runner sees one `Host` per scenario run with the same
//! operations — open, acquire, release, touch, close, crash — and one
//! [`View`] per client of what its library reports (session, suspended,
//! reconnected, lost).

mod broken;
pub mod driver;
pub mod inprocess;
pub mod pool;
pub mod protocol;
mod recipe;

pub use pool::{HostPool, PoolStats};

use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::error::{ImplementationError, RunError};
use crate::scenario::{Kind, Loaded, Role};
use protocol::{ConnState, Event, LockSpec, OpError};

/// How an acquisition is attempted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Wait as long as it takes.
    Block,
    /// Wait at most this long.
    Timeout(Duration),
    /// Do not wait.
    Try,
}

/// What an acquisition came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquired {
    /// Held; the library may say which node.
    Held {
        /// The lock node, if the library tells it (a hint: the harness asks the server).
        node: Option<String>,
        /// The library's session when it acquired, if it tells it.
        session: Option<i64>,
    },
    /// Busy (`try`) or timed out.
    NotAcquired,
}

/// Which implementation, as `--implementation` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Implementation {
    /// zk-lock's recipes in the harness's own process (the default).
    ZkLock,
    /// A driver process.
    Driver {
        /// The name in reports: `kazoo`, `curator`, `zk-lock-driver`, or the command.
        name: String,
        /// Program and arguments.
        command: Vec<String>,
    },
}

/// The folder of the drivers shipped in this repository.
pub fn drivers_dir() -> PathBuf {
    std::env::var_os("HARNESS_DRIVERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("drivers"))
}

/// The `zk-lock-driver` binary: `$ZK_LOCK_DRIVER`, else beside this executable.
fn zk_lock_driver() -> PathBuf {
    if let Some(p) = std::env::var_os("ZK_LOCK_DRIVER") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().unwrap_or_default();
    let dir = exe.parent().unwrap_or(Path::new("."));
    // Integration tests run from target/<profile>/deps.
    for d in [dir, dir.parent().unwrap_or(dir)] {
        let p = d.join("zk-lock-driver");
        if p.exists() {
            return p;
        }
    }
    dir.join("zk-lock-driver")
}

impl Implementation {
    /// `zk-lock`, `kazoo`, `curator`, `zk-lock-driver`, a path to a driver
    /// executable, or a command line (split at spaces).
    pub fn parse(s: &str) -> Result<Implementation, ImplementationError> {
        let s = s.trim();
        let driver = |name: &str, command: Vec<String>| Implementation::Driver {
            name: name.to_string(),
            command,
        };
        let d = drivers_dir();
        match s {
            "" => Err(ImplementationError {
                given: String::new(),
                why: "empty",
            }),
            "zk-lock" => Ok(Implementation::ZkLock),
            "kazoo" => Ok(driver(
                "kazoo",
                vec![
                    std::env::var("PYTHON").unwrap_or_else(|_| "python3".into()),
                    d.join("kazoo/driver.py").display().to_string(),
                ],
            )),
            "curator" => Ok(driver(
                "curator",
                vec![d.join("curator/driver").display().to_string()],
            )),
            "zk-lock-driver" => Ok(driver(
                "zk-lock-driver",
                vec![zk_lock_driver().display().to_string()],
            )),
            cmd => {
                let parts: Vec<String> = cmd.split_whitespace().map(String::from).collect();
                let program = Path::new(&parts[0]);
                if parts.len() == 1 && !program.exists() {
                    return Err(ImplementationError {
                        given: cmd.to_string(),
                        why: "not zk-lock, kazoo, curator or zk-lock-driver, and no such file",
                    });
                }
                Ok(driver(cmd, parts))
            }
        }
    }

    /// The name in reports and matrices.
    pub fn name(&self) -> &str {
        match self {
            Implementation::ZkLock => inprocess::NAME,
            Implementation::Driver { name, .. } => name,
        }
    }

    /// The `--implementation` argument that names it again.
    pub fn arg(&self) -> String {
        match self {
            Implementation::Driver { name, .. } if name.contains(' ') => format!("'{name}'"),
            other => other.name().to_string(),
        }
    }
}

/// What a client's library has reported, as the harness keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct View {
    /// The current session (0 before the first).
    pub session: i64,
    /// Suspended now (connection gone, session maybe alive).
    pub suspended: bool,
    /// `lost` events so far (the session ended).
    pub lost: u64,
    /// `lock lost` events so far.
    pub lock_lost: u64,
    /// `suspended` events so far.
    pub suspensions: u64,
}

impl View {
    fn apply(&mut self, e: &Event) {
        match e {
            Event::State { state, session, .. } => {
                if let Some(s) = session {
                    if *state != ConnState::Lost {
                        self.session = *s;
                    }
                }
                match state {
                    ConnState::Connected | ConnState::Reconnected => self.suspended = false,
                    ConnState::Suspended => {
                        self.suspended = true;
                        self.suspensions += 1;
                    }
                    ConnState::Lost => {
                        self.suspended = false;
                        self.lost += 1;
                    }
                }
            }
            Event::Lock { .. } => self.lock_lost += 1,
            Event::Log { .. } => {}
        }
    }
}

/// Every client's [`View`], fed by the host's events.
#[derive(Debug, Default)]
pub(crate) struct Views {
    views: Mutex<HashMap<String, watch::Sender<View>>>,
}

impl Views {
    fn sender(&self, client: &str) -> watch::Sender<View> {
        let mut v = self.views.lock();
        v.entry(client.to_string())
            .or_insert_with(|| watch::channel(View::default()).0)
            .clone()
    }

    pub(crate) fn apply(&self, e: &Event) {
        let client = match e {
            Event::State { client, .. } | Event::Lock { client, .. } => client,
            Event::Log { .. } => return,
        };
        self.sender(client).send_modify(|v| v.apply(e));
    }

    /// The client's view, watched.
    pub(crate) fn watch(&self, client: &str) -> watch::Receiver<View> {
        self.sender(client).subscribe()
    }

    /// The client's view now.
    pub(crate) fn get(&self, client: &str) -> View {
        *self.sender(client).borrow()
    }

    /// The client holds the lock: whatever suspended it before is over.
    pub(crate) fn held(&self, client: &str) {
        self.sender(client).send_modify(|v| v.suspended = false);
    }

    /// Sets the session a client's `open` returned.
    pub(crate) fn opened(&self, client: &str, session: i64) {
        self.sender(client).send_modify(|v| {
            v.session = session;
            v.suspended = false;
        });
    }
}

/// One run's implementation, with its clients.
#[derive(Debug)]
pub(crate) enum Host {
    InProcess(inprocess::Host),
    Driver(driver::Host),
}

/// What an implementation offers, from its `init`.
#[derive(Debug, Clone, Default)]
pub struct Offer {
    /// Its name and version.
    pub implementation: String,
    /// Kind → its class.
    pub kinds: BTreeMap<String, String>,
    /// zk-lock recipes.
    pub recipes: Vec<String>,
}

impl Offer {
    /// Why the scenario cannot run on this implementation, if it cannot.
    pub fn cannot_run(&self, loaded: &Loaded) -> Option<String> {
        let lock = &loaded.scenario.lock.value;
        if let Some(r) = lock.recipe {
            if !self.recipes.iter().any(|x| x == r.name()) {
                return Some(format!(
                    "names zk-lock's `{}` recipe; {} offers {}",
                    r.name(),
                    self.implementation,
                    self.kinds_text()
                ));
            }
            return None;
        }
        let kind = lock.kind();
        if !self.kinds.contains_key(kind.name()) {
            return Some(format!(
                "needs a {} lock; {} offers {}",
                kind.name(),
                self.implementation,
                self.kinds_text()
            ));
        }
        None
    }

    fn kinds_text(&self) -> String {
        if self.kinds.is_empty() {
            "no kinds".into()
        } else {
            self.kinds
                .iter()
                .map(|(k, c)| format!("{k} ({c})"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    }
}

impl Host {
    /// Starts the implementation for one run; its events go to `first`,
    /// then feed `views`. A driver comes from `pool` if there is one (and
    /// goes back to it at [`Host::shutdown`] if it may serve another run).
    pub(crate) async fn start(
        imp: &Implementation,
        pool: Option<&Arc<HostPool>>,
        views: Arc<Views>,
        first: Arc<dyn Fn(&Event) + Send + Sync>,
    ) -> Result<Host, RunError> {
        let sink: inprocess::EventSink = Arc::new(move |e: Event| {
            first(&e);
            views.apply(&e)
        });
        match imp {
            Implementation::ZkLock => Ok(Host::InProcess(inprocess::Host::new(sink))),
            Implementation::Driver { name, command } => match pool {
                Some(pool) => pool.host(name, command, sink).await.map(Host::Driver),
                None => driver::Host::start(name, command, sink)
                    .await
                    .map(Host::Driver),
            },
        }
    }

    /// What it offers.
    pub(crate) fn offer(&self) -> Offer {
        match self {
            Host::InProcess(_) => {
                let (kinds, recipes) = inprocess::offers();
                Offer {
                    implementation: inprocess::implementation(),
                    kinds,
                    recipes,
                }
            }
            Host::Driver(d) => Offer {
                implementation: d.process().implementation.clone(),
                kinds: d.process().kinds.clone(),
                recipes: d.process().recipes.clone(),
            },
        }
    }

    /// Connects a client and makes its lock; returns the session id.
    pub(crate) async fn open(
        &self,
        client: &str,
        connect: &str,
        session_timeout: Duration,
        lock: &LockSpec,
    ) -> Result<i64, OpError> {
        match self {
            Host::InProcess(h) => h.open(client, connect, session_timeout, lock).await,
            Host::Driver(h) => h.open(client, connect, session_timeout, lock).await,
        }
    }

    /// Acquires.
    pub(crate) async fn acquire(
        &self,
        client: &str,
        role: Role,
        mode: Mode,
    ) -> Result<Acquired, OpError> {
        match self {
            Host::InProcess(h) => h.acquire(client, role, mode).await,
            Host::Driver(h) => h.acquire(client, role, mode).await,
        }
    }

    /// Releases (one entry).
    pub(crate) async fn release(&self, client: &str) -> Result<(), OpError> {
        match self {
            Host::InProcess(h) => h.release(client).await,
            Host::Driver(h) => h.release(client).await,
        }
    }

    /// Creates a marker through the client's own session.
    pub(crate) async fn touch(&self, client: &str, path: &str, data: &str) -> Result<(), OpError> {
        match self {
            Host::InProcess(h) => h.touch(client, path, data).await,
            Host::Driver(h) => h.touch(client, path, data).await,
        }
    }

    /// Closes the client's session.
    pub(crate) async fn close(&self, client: &str) -> Result<(), OpError> {
        match self {
            Host::InProcess(h) => h.close(client).await,
            Host::Driver(h) => h.close(client).await,
        }
    }

    /// Drops the client without closing its session.
    pub(crate) async fn crash(&self, client: &str) {
        match self {
            Host::InProcess(h) => h.crash(client),
            Host::Driver(h) => h.crash(client).await,
        }
    }

    /// Whether the client's session has ended, where the implementation can
    /// tell at once (in process); a driver tells through its events.
    pub(crate) fn session_ended(&self, client: &str) -> bool {
        match self {
            Host::InProcess(h) => h.session_ended(client),
            Host::Driver(_) => false,
        }
    }

    /// The in-process recipes' counters: (notifications, children reads).
    pub(crate) fn counters(&self) -> (u64, u64) {
        match self {
            Host::InProcess(h) => h.counters(),
            Host::Driver(_) => (0, 0),
        }
    }

    /// Why the implementation failed, if it did (drivers only).
    pub(crate) fn fatal(&self) -> Option<String> {
        match self {
            Host::InProcess(_) => None,
            Host::Driver(h) => h.fatal(),
        }
    }

    /// Closes every client and ends the implementation (a pooled driver
    /// that may serve another run is `reset` and goes back to its pool).
    pub(crate) async fn shutdown(&self) {
        match self {
            Host::InProcess(h) => h.shutdown().await,
            Host::Driver(h) => h.shutdown().await,
        }
    }
}

/// The lock a scenario's clients open.
pub(crate) fn lock_spec(loaded: &Loaded) -> LockSpec {
    let lock = &loaded.scenario.lock.value;
    LockSpec {
        kind: lock.kind().name().to_string(),
        path: loaded.lock_dir(),
        recipe: lock.recipe.map(|r| r.name().to_string()),
        layout: lock.recipe.map(|_| {
            match lock.layout {
                crate::scenario::LayoutName::Curator => "curator",
                crate::scenario::LayoutName::Kazoo => "kazoo",
            }
            .to_string()
        }),
    }
}

/// Whether the kind re-enters once per round.
pub(crate) fn reenters(loaded: &Loaded) -> bool {
    loaded.scenario.lock.value.kind() == Kind::Reentrant
}
