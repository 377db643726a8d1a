//! The scenario file format: serde types, parsing, and validation with
//! errors that name the file, line, column and field.
//!
//! The format is documented by example in `scenarios/README.md`.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_saphyr::Spanned;

/// A duration written as `250ms`, `2s`, `1m` or `1s 500ms` (humantime
/// syntax, read and written by `humantime-serde`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Deserialize, serde::Serialize,
)]
#[serde(transparent)]
pub struct Dur(#[serde(with = "humantime_serde")] pub Duration);

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", humantime::format_duration(self.0))
    }
}

/// One scenario file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Defaults to the file's stem.
    #[serde(default)]
    pub name: Option<String>,
    /// What the scenario shows, for the reports.
    #[serde(default)]
    pub description: String,
    /// Where the failure it reproduces was seen (an upstream issue), if anywhere.
    #[serde(default)]
    pub source: Option<String>,
    /// Server settings (the embedded mock's; `session_timeout` applies to every target).
    #[serde(default)]
    pub server: Server,
    /// The lock under test.
    pub lock: Spanned<Lock>,
    /// Groups of clients.
    pub clients: Vec<Spanned<Group>>,
    /// Faults and other steps.
    #[serde(default)]
    pub timeline: Vec<Spanned<Step>>,
    /// The invariants to check.
    #[serde(default)]
    pub invariants: Invariants,
    /// For negative scenarios: the invariants that must be violated.
    #[serde(default)]
    pub expect: Expect,
    /// The whole run is cut off after this long (default 60s).
    #[serde(default)]
    pub deadline: Option<Dur>,
    /// Skip this scenario on these targets (`mock`, `real`), with the reason.
    #[serde(default)]
    pub skip: Option<Skip>,
}

/// Targets a scenario does not run on.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Skip {
    /// `mock` or `real`.
    pub on: Vec<String>,
    /// Why.
    pub because: String,
}

/// Server settings.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Server {
    /// The mock's tick time (default 50ms).
    #[serde(default = "default_tick")]
    pub tick_time: Dur,
    /// The session timeout clients ask for (default 2s).
    #[serde(default = "default_session_timeout")]
    pub session_timeout: Dur,
    /// Server behaviour to follow: `"3.8"` (default) or `"3.9"`.
    #[serde(default = "default_compat")]
    pub compat: String,
    /// The mock's seed (session ids, passwords); `--seed` overrides it.
    #[serde(default)]
    pub seed: Option<u64>,
    /// The mock applies a server-side expiry's ephemeral deletions this much
    /// later (the session itself ends at once): what a client sees through a
    /// server that has not applied the expiry yet (CURATOR-604). Mock only.
    #[serde(default)]
    pub expiry_cleanup_delay: Option<Dur>,
    /// An ensemble of this many servers (default 1): one connect string
    /// naming them all, a replica each; `kill_server`, `restart_server`,
    /// `partition_server`, `heal_server`, `lag` and `leader_election`
    /// steps act on them. The mock's, or with `--target real` a real
    /// ensemble started for the scenario (kill and restart only).
    #[serde(default = "one")]
    pub servers: usize,
    /// The lock directory's sequence counter starts here: the next
    /// sequential node made in it takes this number. At 2147483647 the one
    /// after it wraps to -2147483648, as ZooKeeper's 32-bit counter does,
    /// and a lock that orders its nodes by the suffix as text or as signed
    /// numbers puts the newest first. Mock only.
    #[serde(default)]
    pub sequence_start: Option<i32>,
}

fn default_tick() -> Dur {
    Dur(Duration::from_millis(50))
}
fn default_session_timeout() -> Dur {
    Dur(Duration::from_secs(2))
}
fn default_compat() -> String {
    "3.8".into()
}

impl Default for Server {
    fn default() -> Server {
        Server {
            tick_time: default_tick(),
            session_timeout: default_session_timeout(),
            compat: default_compat(),
            seed: None,
            expiry_cleanup_delay: None,
            sequence_start: None,
            servers: 1,
        }
    }
}

/// The recipes the harness can drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Recipe {
    /// `zk_lock::Lock` with `Strategy::Naive`.
    Naive,
    /// `zk_lock::Lock` with `Strategy::Herd`.
    Herd,
    /// `zk_lock::Lock` with `Strategy::Predecessor`.
    Predecessor,
    /// `zk_lock::Lock`, reentrant (each round re-enters once more, then releases twice).
    Reentrant,
    /// `zk_lock::RwLock` with `Strategy::Herd`.
    RwHerd,
    /// `zk_lock::RwLock` with `Strategy::Predecessor`.
    RwPredecessor,
    /// Broken on purpose: a naive lock that takes ConnectionLoss on its create for success.
    BrokenIgnoresConnectionLoss,
    /// Broken on purpose: a predecessor lock that holds as soon as its predecessor goes,
    /// without listing the children again.
    BrokenNoRecheck,
    /// Broken on purpose: a sequential lock that orders nodes by their whole
    /// name (ZOOKEEPER-2931) instead of the sequence suffix.
    BrokenNameSort,
    /// Broken on purpose: a sequential lock whose release deletes once and forgets
    /// the node on ConnectionLoss (Curator 1193).
    BrokenReleaseOnce,
    /// Broken on purpose: a sequential lock whose non-blocking acquire cleans
    /// up its node with one delete and swallows the error (kazoo 732).
    BrokenTryCleanupOnce,
}

impl Recipe {
    /// Whether the recipe queues sequential nodes in the lock directory
    /// (the naive recipes take one node, `<dir>/lock`, and never read a
    /// sequence number).
    pub fn makes_sequential_nodes(self) -> bool {
        !matches!(self, Recipe::Naive | Recipe::BrokenIgnoresConnectionLoss)
    }

    /// Whether the lock is a read/write lock (groups then need a role).
    pub fn is_read_write(self) -> bool {
        matches!(self, Recipe::RwHerd | Recipe::RwPredecessor)
    }

    /// The name used in files and reports.
    pub fn name(self) -> &'static str {
        match self {
            Recipe::Naive => "naive",
            Recipe::Herd => "herd",
            Recipe::Predecessor => "predecessor",
            Recipe::Reentrant => "reentrant",
            Recipe::RwHerd => "rw-herd",
            Recipe::RwPredecessor => "rw-predecessor",
            Recipe::BrokenIgnoresConnectionLoss => "broken-ignores-connection-loss",
            Recipe::BrokenNoRecheck => "broken-no-recheck",
            Recipe::BrokenNameSort => "broken-name-sort",
            Recipe::BrokenReleaseOnce => "broken-release-once",
            Recipe::BrokenTryCleanupOnce => "broken-try-cleanup-once",
        }
    }
}

/// Node names to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum LayoutName {
    /// Curator's `_c_<uuid>-lock-<seq>` (default).
    #[default]
    Curator,
    /// kazoo's `<uuid>__lock__<seq>`.
    Kazoo,
}

/// The kind of lock a scenario needs; each implementation maps it to its
/// own class (`harness/DRIVERS.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// An exclusive lock (zk-lock `PredecessorLock`, kazoo `Lock`, Curator `InterProcessMutex`).
    Exclusive,
    /// A read/write lock (zk-lock `ReadWriteLock`, kazoo `ReadLock`/`WriteLock`,
    /// Curator `InterProcessReadWriteLock`).
    ReadWrite,
    /// A semaphore with one lease (kazoo `Semaphore`, Curator `InterProcessSemaphoreMutex`).
    Semaphore,
    /// A reentrant exclusive lock, re-entered once per round (zk-lock
    /// `ReentrantLock`, Curator `InterProcessMutex`).
    Reentrant,
}

impl Kind {
    /// The name used in files, reports and the driver protocol.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Exclusive => "exclusive",
            Kind::ReadWrite => "read-write",
            Kind::Semaphore => "semaphore",
            Kind::Reentrant => "reentrant",
        }
    }
}

impl Recipe {
    /// The kind of lock the recipe is.
    pub fn kind(self) -> Kind {
        match self {
            Recipe::RwHerd | Recipe::RwPredecessor => Kind::ReadWrite,
            Recipe::Reentrant => Kind::Reentrant,
            _ => Kind::Exclusive,
        }
    }

    /// The recipe of this name.
    pub fn from_name(name: &str) -> Option<Recipe> {
        serde_json::from_value(serde_json::Value::String(name.to_string())).ok()
    }

    /// Every recipe.
    pub const ALL: [Recipe; 11] = [
        Recipe::Naive,
        Recipe::Herd,
        Recipe::Predecessor,
        Recipe::Reentrant,
        Recipe::RwHerd,
        Recipe::RwPredecessor,
        Recipe::BrokenIgnoresConnectionLoss,
        Recipe::BrokenNoRecheck,
        Recipe::BrokenNameSort,
        Recipe::BrokenReleaseOnce,
        Recipe::BrokenTryCleanupOnce,
    ];
}

/// The lock under test: a `kind` any implementation can provide, or one of
/// zk-lock's `recipe`s (which implies its kind and runs only where that
/// recipe exists).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    /// The kind of lock.
    #[serde(default)]
    pub kind: Option<Kind>,
    /// One of zk-lock's recipes.
    #[serde(default)]
    pub recipe: Option<Recipe>,
    /// The lock directory (default `/harness/<scenario name>/lock`).
    #[serde(default)]
    pub path: Option<String>,
    /// Node names (zk-lock's sequential exclusive recipes only).
    #[serde(default)]
    pub layout: LayoutName,
}

impl Lock {
    /// The kind: as written, or the recipe's.
    pub fn kind(&self) -> Kind {
        self.kind
            .or(self.recipe.map(Recipe::kind))
            .unwrap_or(Kind::Exclusive)
    }
}

/// What a group's clients ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// The exclusive lock (default; for read/write locks: the write lock).
    #[default]
    Exclusive,
    /// A read lock.
    Read,
    /// A write lock.
    Write,
}

impl Role {
    /// The name used in files, the driver protocol and histories.
    pub fn name(self) -> &'static str {
        match self {
            Role::Exclusive => "exclusive",
            Role::Read => "read",
            Role::Write => "write",
        }
    }

    /// The role of this name.
    pub fn from_name(name: &str) -> Option<Role> {
        [Role::Exclusive, Role::Read, Role::Write]
            .into_iter()
            .find(|r| r.name() == name)
    }
}

/// What a client does after its session expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum OnExpiry {
    /// Connect a new session and carry on with the remaining rounds (default).
    #[default]
    Reconnect,
    /// Stop: the client is done.
    Stop,
    /// Keep the same client and lock objects and go on with the remaining
    /// rounds: a library that makes a new session by itself (kazoo, Curator)
    /// carries on with it; one whose client is dead for good (zookeeper-client)
    /// is opened again. Shows what a lock object remembers across an expiry
    /// (CURATOR-604).
    Keep,
}

/// A group of identical clients.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Group {
    /// The group's name; its members are `<name>.0`, `<name>.1`, … (or just
    /// `<name>` when `count` is 1). Lowercase letters, digits, `-` and `_`.
    pub name: String,
    /// How many clients (default 1).
    #[serde(default = "one")]
    pub count: usize,
    /// Exclusive, read or write.
    #[serde(default)]
    pub role: Role,
    /// When the group starts (default at once). `null`: only when a
    /// `stampede` step starts it.
    #[serde(default)]
    pub start: Option<Dur>,
    /// Started by a stampede step instead of at `start`.
    #[serde(default)]
    pub on_stampede: bool,
    /// Acquire/release cycles per client (default 1).
    #[serde(default = "one")]
    pub rounds: usize,
    /// Time spent holding the lock per round (default 10ms).
    #[serde(default = "default_hold")]
    pub hold: Dur,
    /// Use `acquire_timeout` with this timeout instead of `acquire`; a
    /// timed-out round is given up (counted, not a liveness failure).
    #[serde(default)]
    pub acquire_timeout: Option<Dur>,
    /// Use `try_acquire`: a busy lock gives the round up.
    #[serde(default, rename = "try")]
    pub try_only: bool,
    /// After its session expired.
    #[serde(default)]
    pub on_expiry: OnExpiry,
    /// Check the guard (held, not suspended or lost) before touching the
    /// resource (default true). `false` models application code that ignores
    /// the lost signal: a negative scenario.
    #[serde(default = "yes")]
    pub fence: bool,
    /// Connect only to this server of the ensemble, or to these (`[1, 2]`);
    /// default: any (the connect string names them all).
    #[serde(default)]
    pub server: Option<ServerSet>,
}

/// One server of the ensemble or several.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum ServerSet {
    /// This one.
    One(usize),
    /// These.
    Some(Vec<usize>),
}

impl ServerSet {
    /// The servers named.
    pub fn indices(&self) -> Vec<usize> {
        match self {
            ServerSet::One(i) => vec![*i],
            ServerSet::Some(v) => v.clone(),
        }
    }
}

/// The server a step acts on: by index, or the one a client's session is
/// connected to at that moment (a client name or HOLDER).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum ServerRef {
    /// Server `i` (0-based).
    Index(usize),
    /// The server this client is connected to.
    Of(String),
}

impl std::fmt::Display for ServerRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerRef::Index(i) => write!(f, "server {i}"),
            ServerRef::Of(c) => write!(f, "{c}'s server"),
        }
    }
}

fn one() -> usize {
    1
}
fn yes() -> bool {
    true
}
fn default_hold() -> Dur {
    Dur(Duration::from_millis(10))
}

/// When a step happens.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trigger {
    /// Once this client (or any member of this group) holds the lock.
    #[serde(default)]
    pub holds: Option<String>,
    /// Once this many clients of this group (`waiting_count`, default all)
    /// wait for the lock with their watches set.
    #[serde(default)]
    pub waiting: Option<String>,
    /// With `waiting`: how many.
    #[serde(default)]
    pub count: Option<usize>,
    /// Once this many acquisitions happened in total.
    #[serde(default)]
    pub acquisitions: Option<usize>,
}

/// What a `hold` step or an expiry's held cleanup waits for: one event of
/// the shape `on:` takes (`{holds: later}`), or a list of them
/// (`[{holds: waiter}, {waiting: waiter}]`): whichever comes first.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Until {
    /// One event.
    One(Trigger),
    /// The first of these.
    Any(Vec<Trigger>),
}

impl Until {
    /// The events, any of which ends the wait.
    pub fn triggers(&self) -> &[Trigger] {
        match self {
            Until::One(t) => std::slice::from_ref(t),
            Until::Any(v) => v,
        }
    }

    /// For reports: `holds later or waiting waiter`.
    pub fn describe(&self) -> String {
        self.triggers()
            .iter()
            .map(Trigger::describe)
            .collect::<Vec<_>>()
            .join(" or ")
    }
}

impl Trigger {
    /// For reports: `holds later`, `waiting waiter (2)`, `acquisitions 3`.
    pub fn describe(&self) -> String {
        if let Some(h) = &self.holds {
            format!("holds {h}")
        } else if let Some(w) = &self.waiting {
            match self.count {
                Some(n) => format!("waiting {w} ({n})"),
                None => format!("waiting {w}"),
            }
        } else {
            format!("acquisitions {}", self.acquisitions.unwrap_or(0))
        }
    }
}

/// What a `hold` step holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HoldWhat {
    /// The request is applied; its reply, and everything after it on that
    /// connection, is held (default).
    #[default]
    Reply,
    /// The request, and everything the client sends after it on that
    /// connection, is held unapplied.
    Request,
}

/// A `hold` step: which requests (as the request faults), what of them is
/// held, and until what.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HoldSpec {
    /// The operation (as the request faults' `op`).
    pub op: String,
    /// Whose requests (a client or group; default anyone's).
    #[serde(default)]
    pub client: Option<String>,
    /// How many requests to hold (default 1); all wait for the same event.
    #[serde(default = "one_u64")]
    pub times: u64,
    /// Hold only the n-th matching request (1-based).
    #[serde(default)]
    pub nth: Option<u64>,
    /// Which paths (as the request faults' `path`; default `lock`).
    #[serde(default)]
    pub path: Option<String>,
    /// `reply` (default) or `request`.
    #[serde(default)]
    pub what: HoldWhat,
    /// The event that releases what is held.
    pub until: Until,
}

impl HoldSpec {
    /// As a request fault's criteria, for [`RequestFaultSpec::resolve`].
    pub fn criteria(&self) -> RequestFaultSpec {
        RequestFaultSpec {
            op: self.op.clone(),
            client: self.client.clone(),
            times: self.times,
            nth: self.nth,
            path: self.path.clone(),
            code: None,
            duration: None,
        }
    }

    /// The fault, holding until the target's gate `gate` opens.
    pub fn resolve(&self, dir: &str, gate: u64) -> Result<crate::fault::RequestFault, FieldError> {
        let mut f = self.criteria().resolve("hold", dir)?;
        f.verdict = crate::fault::FaultVerdict::Hold {
            request: self.what == HoldWhat::Request,
            gate,
        };
        Ok(f)
    }
}

/// Which requests a request fault hits (`lose_reply`, `drop_request`,
/// `fail`, `delay`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestFaultSpec {
    /// The operation: create, delete, exists, getData, getChildren, setData,
    /// multi or sync (every op code clients send for it).
    pub op: String,
    /// Whose requests (a client or group; default anyone's).
    #[serde(default)]
    pub client: Option<String>,
    /// How many requests to hit (default 1).
    #[serde(default = "one_u64")]
    pub times: u64,
    /// Hit only the n-th matching request (1-based).
    #[serde(default)]
    pub nth: Option<u64>,
    /// Which paths: `lock` (default: every node below the lock directory, and
    /// for getChildren and sync the directory itself), `resource` (the same
    /// for the marker directory), or an absolute glob (`*` within a segment,
    /// `**` across segments).
    #[serde(default)]
    pub path: Option<String>,
    /// `fail`: the ZooKeeper error to answer with (ConnectionLoss, NoNode, … or a number).
    #[serde(default)]
    pub code: Option<String>,
    /// `delay`: how long the reply is held.
    #[serde(default, rename = "for")]
    pub duration: Option<Dur>,
}

/// A field of a scenario that cannot be used, named by its path in the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    /// The field (`timeline.fail.code`).
    pub field: String,
    /// What is wrong, and what was expected.
    pub message: String,
}

impl FieldError {
    fn new(field: impl Into<String>, message: impl std::fmt::Display) -> FieldError {
        FieldError {
            field: field.into(),
            message: message.to_string(),
        }
    }
}

impl RequestFaultSpec {
    /// The fault, with `verdict`, for a scenario whose lock directory is `dir`.
    pub fn resolve(
        &self,
        verdict: &str,
        dir: &str,
    ) -> Result<crate::fault::RequestFault, FieldError> {
        use crate::fault::{error_code, FaultVerdict, RequestFault};
        use zk_mock::fault::{Glob, OpFamily, PathMatch};
        let family = OpFamily::parse(&self.op)
            .map_err(|e| FieldError::new(format!("timeline.{verdict}.op"), e))?;
        // By default the lock's nodes: the directory's descendants; for
        // getChildren and sync, which name the directory, the directory too.
        let below = |d: &str| match family {
            OpFamily::GetChildren | OpFamily::Sync => PathMatch::Under(d.to_string()),
            _ => PathMatch::Glob(Glob::below(d)),
        };
        let path = match self.path.as_deref() {
            None | Some("lock") => below(dir),
            Some("resource") => below(&format!("{dir}.resource")),
            Some(p) if p.starts_with('/') => {
                PathMatch::Glob(Glob::new(p).map_err(|e| {
                    FieldError::new(format!("timeline.{verdict}.path"), e.to_string())
                })?)
            }
            Some(p) => {
                return Err(FieldError::new(
                    format!("timeline.{verdict}.path"),
                    format!("{p:?}: expected lock, resource or an absolute glob like /locks/**"),
                ))
            }
        };
        if self.nth == Some(0) {
            return Err(FieldError::new(
                format!("timeline.{verdict}.nth"),
                "counts from 1",
            ));
        }
        let v = match verdict {
            "lose_reply" => FaultVerdict::LoseReply,
            "drop_request" => FaultVerdict::DropRequest,
            // ZooKeeper never answers ConnectionLoss: a client reports it
            // when its connection goes. So does this fault: the connection
            // closes before the request is applied (as `drop_request`).
            "fail"
                if self.code.as_deref().and_then(|c| error_code(c).ok())
                    == Some(zk_mock::proto::ErrorCode::ConnectionLoss) =>
            {
                FaultVerdict::DropRequest
            }
            "fail" => FaultVerdict::Fail(
                error_code(self.code.as_deref().ok_or_else(|| {
                    FieldError::new(
                        "timeline.fail.code",
                        "needed (ConnectionLoss, NoNode, … or a number)",
                    )
                })?)
                .map_err(|e| FieldError::new("timeline.fail.code", e))?,
            ),
            "delay" => FaultVerdict::Delay(
                self.duration
                    .ok_or_else(|| FieldError::new("timeline.delay.for", "needed (e.g. 500ms)"))?
                    .0,
            ),
            // The gate is the target's, made when the step acts.
            "hold" => FaultVerdict::Hold {
                request: false,
                gate: 0,
            },
            other => {
                return Err(FieldError::new(
                    "timeline",
                    format!("unknown request fault {other}"),
                ))
            }
        };
        if verdict != "fail" && self.code.is_some() {
            return Err(FieldError::new(
                format!("timeline.{verdict}.code"),
                "only `fail` takes a code",
            ));
        }
        if verdict != "delay" && self.duration.is_some() {
            return Err(FieldError::new(
                format!("timeline.{verdict}.for"),
                "only `delay` takes a duration",
            ));
        }
        Ok(RequestFault {
            family,
            path,
            nth: self.nth,
            times: self.times,
            verdict: v,
        })
    }
}

fn one_u64() -> u64 {
    1
}

/// A stall: the server stops answering the clients' sessions.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stall {
    /// Whose sessions.
    pub client: String,
    /// For how long.
    #[serde(rename = "for")]
    pub duration: Dur,
}

/// A random schedule of faults, as Jepsen's nemesis: every `every`, one
/// fault drawn from `faults` hits one client drawn from `clients`, for
/// `for`. The draws come from the run's seed, so `--seed` replays the
/// schedule exactly.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Chaos {
    /// How long the schedule runs.
    #[serde(rename = "for")]
    pub duration: Dur,
    /// Time between two faults.
    pub every: Dur,
    /// Which faults to draw from: disconnect, stall, expire, lose_reply,
    /// drop_request (default: all of them).
    #[serde(default = "all_chaos")]
    pub faults: Vec<String>,
    /// Whom (a selector; default every started client).
    #[serde(default = "all_clients")]
    pub clients: String,
    /// How long a stall lasts (default: a third of the session timeout, so
    /// that the session lives).
    #[serde(default)]
    pub stall_for: Option<Dur>,
}

/// The faults a chaos step can draw.
pub const CHAOS_FAULTS: [&str; 5] = [
    "disconnect",
    "stall",
    "expire",
    "lose_reply",
    "drop_request",
];

fn all_chaos() -> Vec<String> {
    CHAOS_FAULTS.iter().map(|s| s.to_string()).collect()
}

fn all_clients() -> String {
    "ALL".into()
}

/// One timeline step: when (`at` or `on`, plus `after`), and exactly one action.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// At this time after the scenario starts.
    #[serde(default)]
    pub at: Option<Dur>,
    /// When this happens.
    #[serde(default)]
    pub on: Option<Trigger>,
    /// Extra delay after `at`/`on`.
    #[serde(default)]
    pub after: Option<Dur>,
    /// Expire the sessions of these clients.
    #[serde(default)]
    pub expire: Option<String>,
    /// With `expire`: the server applies the expiry's deletions (the
    /// sessions' ephemeral nodes) only when this happens; the sessions end
    /// at once. What a client sees through a server that has not applied
    /// the expiry yet (CURATOR-604), for exactly as long as the scenario
    /// says. Mock only.
    #[serde(default)]
    pub cleanup_until: Option<Until>,
    /// Close these clients' connections (they reconnect within the session).
    #[serde(default)]
    pub disconnect: Option<String>,
    /// Stall these clients' sessions for a while.
    #[serde(default)]
    pub stall: Option<Stall>,
    /// Lose the replies of matching requests (they are applied).
    #[serde(default)]
    pub lose_reply: Option<RequestFaultSpec>,
    /// Drop matching requests: close the connection before applying them.
    #[serde(default)]
    pub drop_request: Option<RequestFaultSpec>,
    /// Answer matching requests with an error instead of applying them.
    #[serde(default)]
    pub fail: Option<RequestFaultSpec>,
    /// Apply matching requests and hold their replies for a while.
    #[serde(default)]
    pub delay: Option<RequestFaultSpec>,
    /// Hold matching requests (unapplied), or their replies, until an event.
    #[serde(default)]
    pub hold: Option<HoldSpec>,
    /// Refuse new connections for this long.
    #[serde(default)]
    pub refuse_connections: Option<Dur>,
    /// Start a group marked `on_stampede: true`: all its clients at once.
    #[serde(default)]
    pub stampede: Option<String>,
    /// Crash these clients: their connections go silent and the processes
    /// are gone; their sessions expire after the timeout.
    #[serde(default)]
    pub crash: Option<String>,
    /// Close these clients' sessions on purpose (the application ends them).
    #[serde(default)]
    pub close: Option<String>,
    /// A seeded random schedule of faults.
    #[serde(default)]
    pub chaos: Option<Chaos>,
    /// Kill this server of the ensemble: its clients fail over (a killed
    /// leader, or a lost quorum, starts an election).
    #[serde(default)]
    pub kill_server: Option<ServerRef>,
    /// Restart a killed server: it catches up, then serves.
    #[serde(default)]
    pub restart_server: Option<ServerRef>,
    /// Cut this server off from the quorum: it stops serving.
    #[serde(default)]
    pub partition_server: Option<ServerRef>,
    /// Heal a partitioned server.
    #[serde(default)]
    pub heal_server: Option<ServerRef>,
    /// Make a server apply committed txns late.
    #[serde(default)]
    pub lag: Option<LagStep>,
    /// Leader loss: every server drops its clients for this window.
    #[serde(default)]
    pub leader_election: Option<Dur>,
}

/// A `lag` step: which server, and by how much (`txns` or `time`; neither:
/// no lag).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LagStep {
    /// The server: an index, or a client whose server it is.
    pub server: ServerRef,
    /// Keep this many committed txns unapplied.
    #[serde(default)]
    pub txns: Option<usize>,
    /// Apply each txn this long after its commit.
    #[serde(default)]
    pub time: Option<Dur>,
}

impl LagStep {
    /// The mock's lag.
    pub fn lag(&self) -> zk_mock::Lag {
        match (self.txns, &self.time) {
            (Some(n), _) => zk_mock::Lag::Txns(n),
            (None, Some(d)) => zk_mock::Lag::Time(d.0),
            (None, None) => zk_mock::Lag::None,
        }
    }
}

impl Step {
    /// What the step's action holds until an event (a `hold`, or an
    /// expiry's `cleanup_until`).
    pub fn until(&self) -> Option<&Until> {
        self.hold
            .as_ref()
            .map(|h| &h.until)
            .or(self.cleanup_until.as_ref())
    }

    /// The request faults of the step, by name.
    pub fn request_faults(&self) -> Vec<(&'static str, &RequestFaultSpec)> {
        [
            ("lose_reply", &self.lose_reply),
            ("drop_request", &self.drop_request),
            ("fail", &self.fail),
            ("delay", &self.delay),
        ]
        .into_iter()
        .filter_map(|(n, s)| s.as_ref().map(|s| (n, s)))
        .collect()
    }

    /// The action's name and its main argument.
    pub fn action(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        if let Some(t) = &self.expire {
            match &self.cleanup_until {
                Some(u) => v.push(("expire", format!("{t}, cleanup until {}", u.describe()))),
                None => v.push(("expire", t.clone())),
            }
        }
        if let Some(t) = &self.disconnect {
            v.push(("disconnect", t.clone()));
        }
        if let Some(s) = &self.stall {
            v.push(("stall", format!("{} for {}", s.client, s.duration)));
        }
        for (name, spec) in self.request_faults() {
            let mut arg = format!(
                "{} x{} {}",
                spec.op,
                spec.times,
                spec.client.as_deref().unwrap_or("anyone")
            );
            if let Some(c) = &spec.code {
                arg.push_str(&format!(" {c}"));
            }
            if let Some(d) = &spec.duration {
                arg.push_str(&format!(" for {d}"));
            }
            v.push((name, arg));
        }
        if let Some(h) = &self.hold {
            v.push((
                "hold",
                format!(
                    "{} {} x{} {} until {}",
                    h.op,
                    match h.what {
                        HoldWhat::Reply => "reply",
                        HoldWhat::Request => "request",
                    },
                    h.times,
                    h.client.as_deref().unwrap_or("anyone"),
                    h.until.describe()
                ),
            ));
        }
        if let Some(d) = &self.refuse_connections {
            v.push(("refuse_connections", d.to_string()));
        }
        if let Some(g) = &self.stampede {
            v.push(("stampede", g.clone()));
        }
        if let Some(t) = &self.crash {
            v.push(("crash", t.clone()));
        }
        if let Some(t) = &self.close {
            v.push(("close", t.clone()));
        }
        for (name, server) in [
            ("kill_server", &self.kill_server),
            ("restart_server", &self.restart_server),
            ("partition_server", &self.partition_server),
            ("heal_server", &self.heal_server),
        ] {
            if let Some(r) = server {
                v.push((name, r.to_string()));
            }
        }
        if let Some(l) = &self.lag {
            let by = match (l.txns, &l.time) {
                (Some(n), _) => format!("{n} txns"),
                (None, Some(d)) => d.to_string(),
                (None, None) => "none".into(),
            };
            v.push(("lag", format!("{} by {by}", l.server)));
        }
        if let Some(d) = &self.leader_election {
            v.push(("leader_election", format!("for {d}")));
        }
        if let Some(c) = &self.chaos {
            v.push((
                "chaos",
                format!(
                    "{} every {} for {} on {}",
                    c.faults.join("/"),
                    c.every,
                    c.duration,
                    c.clients
                ),
            ));
        }
        v
    }
}

/// Which invariants to check.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Invariants {
    /// No two holders of an exclusive lock, no writer beside any holder
    /// (default true).
    #[serde(default = "yes")]
    pub mutual_exclusion: bool,
    /// Every acquisition completes within this bound, counted from when it
    /// started or the last fault ended, whichever is later (default 10s).
    #[serde(default = "default_liveness")]
    pub liveness: Option<Dur>,
    /// No lock node is left once every client is done (default true).
    #[serde(default = "yes")]
    pub no_orphans: bool,
    /// No holder touches the resource with a token older than one already
    /// used (default true).
    #[serde(default = "yes")]
    pub fencing: bool,
    /// A holder whose lock node went without its release (session expiry,
    /// deletion) sees its guard report the loss (default true).
    #[serde(default = "yes")]
    pub lost_noticed: bool,
    /// The clients' history fits a fenced mutex: every exclusive (or write)
    /// acquisition's token is larger than every one completed before it
    /// (default true).
    #[serde(default = "yes")]
    pub fenced_mutex: bool,
    /// At most this many watch notifications per hand-off.
    #[serde(default)]
    pub notifications_per_handoff: Option<u64>,
    /// At least this many notifications on some hand-off (shows the herd).
    #[serde(default)]
    pub min_notifications_per_handoff: Option<u64>,
}

fn default_liveness() -> Option<Dur> {
    Some(Dur(Duration::from_secs(10)))
}

impl Default for Invariants {
    fn default() -> Invariants {
        Invariants {
            mutual_exclusion: true,
            liveness: default_liveness(),
            no_orphans: true,
            fencing: true,
            lost_noticed: true,
            fenced_mutex: true,
            notifications_per_handoff: None,
            min_notifications_per_handoff: None,
        }
    }
}

/// What outcome is expected.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Invariants that must fail (a negative scenario). Empty: all must hold.
    #[serde(default)]
    pub violated: Vec<String>,
    /// The implementations (`--implementation` names: kazoo, curator, …)
    /// the violation is expected of: a bug of those libraries, found by
    /// `harness explore`. Every other implementation must keep every
    /// invariant. Empty: all of them.
    #[serde(default)]
    pub implementations: Vec<String>,
}

impl Expect {
    /// The invariants `implementation` is expected to violate.
    pub fn violated_by(&self, implementation: &str) -> &[String] {
        if self.implementations.is_empty()
            || self.implementations.iter().any(|i| i == implementation)
        {
            &self.violated
        } else {
            &[]
        }
    }
}

/// The names of the invariants, as `expect.violated` uses them.
pub const INVARIANT_NAMES: [&str; 7] = [
    "mutual_exclusion",
    "liveness",
    "no_orphans",
    "fencing",
    "lost_noticed",
    "fenced_mutex",
    "notifications_per_handoff",
];

/// A scenario file that could not be used.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}")]
pub struct ScenarioError {
    /// The file.
    pub file: PathBuf,
    /// 1-based line (0: unknown).
    pub line: u64,
    /// 1-based column (0: unknown).
    pub column: u64,
    /// What is wrong, and what was expected.
    pub message: String,
}

/// A parsed and validated scenario.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Where it came from.
    pub file: PathBuf,
    /// Its name (the file stem unless set).
    pub name: String,
    /// The contents.
    pub scenario: Scenario,
}

impl Loaded {
    /// The lock directory.
    pub fn lock_dir(&self) -> String {
        self.scenario
            .lock
            .value
            .path
            .clone()
            .unwrap_or_else(|| format!("/harness/{}/lock", self.name))
    }

    /// Where the harness's resource markers go.
    pub fn resource_dir(&self) -> String {
        format!("{}.resource", self.lock_dir())
    }

    /// The member names of a group.
    pub fn members(&self, g: &Group) -> Vec<String> {
        if g.count == 1 {
            vec![g.name.clone()]
        } else {
            (0..g.count).map(|i| format!("{}.{i}", g.name)).collect()
        }
    }

    /// Every client name.
    pub fn all_members(&self) -> Vec<String> {
        self.scenario
            .clients
            .iter()
            .flat_map(|g| self.members(&g.value))
            .collect()
    }
}

/// Reads and validates one scenario file.
pub fn load(file: &Path) -> Result<Loaded, ScenarioError> {
    let text = std::fs::read_to_string(file).map_err(|e| ScenarioError {
        file: file.to_path_buf(),
        line: 0,
        column: 0,
        message: format!("cannot read: {e}"),
    })?;
    parse(file, &text)
}

/// Parses and validates scenario text (`file` names it in errors).
pub fn parse(file: &Path, text: &str) -> Result<Loaded, ScenarioError> {
    let scenario: Scenario = serde_saphyr::from_str(text).map_err(|e| {
        let (line, column) = e
            .location()
            .map(|l| (l.line(), l.column()))
            .unwrap_or((0, 0));
        // The crate's message carries a source excerpt; keep its first line.
        let full = e.to_string();
        let message = full.lines().next().unwrap_or("invalid YAML").to_string();
        ScenarioError {
            file: file.to_path_buf(),
            line,
            column,
            message,
        }
    })?;
    let name = scenario.name.clone().unwrap_or_else(|| {
        file.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "scenario".into())
    });
    let loaded = Loaded {
        file: file.to_path_buf(),
        name,
        scenario,
    };
    validate(&loaded)?;
    Ok(loaded)
}

fn err_at<T>(file: &Path, at: &Spanned<T>, message: String) -> ScenarioError {
    ScenarioError {
        file: file.to_path_buf(),
        line: at.referenced.line(),
        column: at.referenced.column(),
        message,
    }
}

/// A run is cut off after this long unless the scenario says `deadline:`.
pub const DEFAULT_DEADLINE_SECS: u64 = 60;

/// Reserved client selectors usable wherever a client name is.
pub const SELECTORS: [&str; 3] = ["ALL", "HOLDER", "WAITERS"];

fn validate(l: &Loaded) -> Result<(), ScenarioError> {
    let s = &l.scenario;
    let file = &l.file;
    let lock = &s.lock;
    if let Some(p) = &lock.value.path {
        if !p.starts_with('/') || p.ends_with('/') || p.contains("//") || p.len() < 2 {
            return Err(err_at(
                file,
                lock,
                format!("lock.path: {p:?} is not an absolute ZooKeeper path like /locks/a"),
            ));
        }
    }
    if s.server.compat != "3.8" && s.server.compat != "3.9" {
        return Err(ScenarioError {
            file: file.clone(),
            line: 0,
            column: 0,
            message: format!(
                "server.compat: expected \"3.8\" or \"3.9\", found {:?}",
                s.server.compat
            ),
        });
    }
    if !(1..=15).contains(&s.server.servers) {
        return Err(ScenarioError {
            file: file.clone(),
            line: 0,
            column: 0,
            message: format!(
                "server.servers: an ensemble has 1 to 15 servers, not {}",
                s.server.servers
            ),
        });
    }
    if s.clients.is_empty() {
        return Err(err_at(
            file,
            lock,
            "clients: at least one group is needed".into(),
        ));
    }
    match (lock.value.kind, lock.value.recipe) {
        (None, None) => {
            return Err(err_at(
                file,
                lock,
                "lock: needs `kind: exclusive|read-write|semaphore|reentrant` or one of zk-lock's `recipe`s".into(),
            ))
        }
        (Some(k), Some(r)) if r.kind() != k => {
            return Err(err_at(
                file,
                lock,
                format!(
                    "lock: recipe {} is a {} lock, not {}",
                    r.name(),
                    r.kind().name(),
                    k.name()
                ),
            ))
        }
        _ => {}
    }
    // The counter is the lock directory's: a lock with no sequential nodes
    // there would leave it unused, and the scenario would pass for nothing.
    if s.server.sequence_start.is_some()
        && (lock.value.kind() == Kind::Semaphore
            || lock
                .value
                .recipe
                .is_some_and(|r| !r.makes_sequential_nodes()))
    {
        return Err(err_at(
            file,
            lock,
            format!(
                "server.sequence_start: a {} lock makes no sequential nodes in the lock directory \
                 (its counter would go unused); use an exclusive, read-write or reentrant lock",
                lock.value
                    .recipe
                    .map_or(lock.value.kind().name(), Recipe::name)
            ),
        ));
    }
    let rw = lock.value.kind() == Kind::ReadWrite;
    let lock_name = lock
        .value
        .recipe
        .map_or(lock.value.kind().name(), Recipe::name);
    let mut names = BTreeSet::new();
    for g in &s.clients {
        let v = &g.value;
        let ok = !v.name.is_empty()
            && v.name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
        if !ok {
            return Err(err_at(
                file,
                g,
                format!(
                    "clients.name: {:?} must be lowercase letters, digits, '-' or '_'",
                    v.name
                ),
            ));
        }
        if !names.insert(v.name.clone()) {
            return Err(err_at(
                file,
                g,
                format!("clients.name: {:?} is used twice", v.name),
            ));
        }
        if v.count == 0 {
            return Err(err_at(
                file,
                g,
                format!("clients.count: group {:?} has no clients", v.name),
            ));
        }
        if v.rounds == 0 {
            return Err(err_at(
                file,
                g,
                format!(
                    "clients.rounds: group {:?} must do at least one round",
                    v.name
                ),
            ));
        }
        match (rw, v.role) {
            (true, Role::Exclusive) => {
                return Err(err_at(
                    file,
                    g,
                    format!(
                        "clients.role: group {:?} needs `role: read` or `role: write` on a {} lock",
                        v.name,
                        lock_name
                    ),
                ))
            }
            (false, Role::Read | Role::Write) => {
                return Err(err_at(
                    file,
                    g,
                    format!(
                        "clients.role: group {:?}: read/write roles need `kind: read-write` (or recipe rw-herd or rw-predecessor)",
                        v.name
                    ),
                ))
            }
            _ => {}
        }
        let indices = v
            .server
            .as_ref()
            .map(ServerSet::indices)
            .unwrap_or_default();
        if v.server.is_some() && indices.is_empty() {
            return Err(err_at(
                file,
                g,
                format!("clients.server: group {:?} names no server", v.name),
            ));
        }
        if let Some(i) = indices.into_iter().find(|&i| i >= s.server.servers) {
            return Err(err_at(
                file,
                g,
                format!(
                    "clients.server: group {:?} names server {i}, but `server.servers` is {} (servers 0..{})",
                    v.name, s.server.servers, s.server.servers
                ),
            ));
        }
        if v.on_stampede && v.start.is_some() {
            return Err(err_at(
                file,
                g,
                format!(
                    "clients: group {:?} has both `start` and `on_stampede`",
                    v.name
                ),
            ));
        }
    }
    let known = |t: &str| -> bool {
        SELECTORS.contains(&t)
            || names.contains(t)
            || s.clients
                .iter()
                .any(|g| l.members(&g.value).iter().any(|m| m == t))
    };
    let total_acquisitions: usize = s
        .clients
        .iter()
        .map(|g| g.value.count.saturating_mul(g.value.rounds))
        .fold(0, usize::saturating_add);
    let deadline = s
        .deadline
        .map(|d| d.0)
        .unwrap_or(Duration::from_secs(DEFAULT_DEADLINE_SECS));
    for step in &s.timeline {
        let v = &step.value;
        let actions = v.action();
        if actions.len() != 1 {
            return Err(err_at(
                file,
                step,
                format!(
                    "timeline: a step needs exactly one action (expire, disconnect, stall, lose_reply, drop_request, fail, delay, hold, refuse_connections, stampede, crash, close, chaos, kill_server, restart_server, partition_server, heal_server, lag, leader_election); found {}",
                    if actions.is_empty() {
                        "none".to_string()
                    } else {
                        actions.iter().map(|a| a.0).collect::<Vec<_>>().join(", ")
                    }
                ),
            ));
        }
        if v.at.is_some() == v.on.is_some() {
            return Err(err_at(
                file,
                step,
                "timeline: a step needs exactly one of `at: <time>` or `on: <event>`".into(),
            ));
        }
        let servers = s.server.servers;
        for (field, server) in [
            ("kill_server", &v.kill_server),
            ("restart_server", &v.restart_server),
            ("partition_server", &v.partition_server),
            ("heal_server", &v.heal_server),
            ("lag.server", &v.lag.as_ref().map(|l| l.server.clone())),
        ] {
            match server {
                Some(ServerRef::Index(i)) if *i >= servers => {
                    return Err(err_at(
                        file,
                        step,
                        format!(
                            "timeline.{field}: no server {i}: `server.servers` is {servers} (servers 0..{servers})"
                        ),
                    ))
                }
                Some(ServerRef::Of(c)) if !known(c) => {
                    return Err(err_at(
                        file,
                        step,
                        format!("timeline.{field}: unknown client {c:?} (a client name, or HOLDER)"),
                    ))
                }
                Some(_) if servers < 2 => {
                    return Err(err_at(
                        file,
                        step,
                        format!("timeline.{field}: needs an ensemble (`server: {{servers: 3}}`)"),
                    ))
                }
                _ => {}
            }
        }
        if v.leader_election.is_some() && servers < 2 {
            return Err(err_at(
                file,
                step,
                "timeline.leader_election: needs an ensemble (`server: {servers: 3}`)".into(),
            ));
        }
        if let Some(l) = &v.lag {
            if l.txns.is_some() && l.time.is_some() {
                return Err(err_at(
                    file,
                    step,
                    "timeline.lag: give `txns` or `time`, not both".into(),
                ));
            }
        }
        let check_trigger = |field: &str, on: &Trigger| -> Result<(), ScenarioError> {
            let set = [
                on.holds.is_some(),
                on.waiting.is_some(),
                on.acquisitions.is_some(),
            ];
            if set.iter().filter(|b| **b).count() != 1 {
                return Err(err_at(
                    file,
                    step,
                    format!("{field}: needs exactly one of `holds: <client>`, `waiting: <group>`, `acquisitions: <n>`"),
                ));
            }
            for t in [&on.holds, &on.waiting].into_iter().flatten() {
                if !known(t) {
                    return Err(err_at(
                        file,
                        step,
                        format!("{field}: unknown client or group {t:?}"),
                    ));
                }
            }
            // Anchors that no run can reach: the step would never run.
            if let Some(n) = on.acquisitions {
                if n > total_acquisitions {
                    return Err(err_at(
                        file,
                        step,
                        format!(
                            "{field}.acquisitions: {n}, but the clients make at most {total_acquisitions} (count × rounds over every group): the step would never run"
                        ),
                    ));
                }
            }
            if let Some(n) = on.count {
                let Some(w) = &on.waiting else {
                    return Err(err_at(
                        file,
                        step,
                        format!("{field}.count: only with `waiting: <group>`"),
                    ));
                };
                let size = match s.clients.iter().find(|g| &g.value.name == w) {
                    Some(g) => g.value.count,
                    None if SELECTORS.contains(&w.as_str()) => l.all_members().len(),
                    None => 1,
                };
                if n > size {
                    return Err(err_at(
                        file,
                        step,
                        format!(
                            "{field}.count: {n}, but {w:?} has {size} client{}: the step would never run",
                            if size == 1 { "" } else { "s" }
                        ),
                    ));
                }
            }
            Ok(())
        };
        if let Some(on) = &v.on {
            check_trigger("timeline.on", on)?;
        }
        if v.cleanup_until.is_some() && v.expire.is_none() {
            return Err(err_at(
                file,
                step,
                "timeline.cleanup_until: only with `expire`".into(),
            ));
        }
        for (field, until) in [
            ("timeline.hold.until", v.hold.as_ref().map(|h| &h.until)),
            ("timeline.cleanup_until", v.cleanup_until.as_ref()),
        ] {
            let Some(until) = until else { continue };
            if until.triggers().is_empty() {
                return Err(err_at(
                    file,
                    step,
                    format!("{field}: needs an event (`{{holds: <client>}}`, `{{waiting: <group>}}`, `{{acquisitions: <n>}}`), or a list of them"),
                ));
            }
            for t in until.triggers() {
                check_trigger(field, t)?;
            }
        }
        if let Some(h) = &v.hold {
            if let Err(e) = h.resolve(&l.lock_dir(), 0) {
                return Err(err_at(file, step, e.to_string()));
            }
        }
        if let Some(at) = v.at {
            let when = at.0 + v.after.map(|a| a.0).unwrap_or_default();
            if when >= deadline {
                let (field, what) = match v.after {
                    Some(after) => ("timeline.after", format!("at {at} + after {after}")),
                    None => ("timeline.at", at.to_string()),
                };
                return Err(err_at(
                    file,
                    step,
                    format!(
                        "{field}: {what} is at or past the deadline ({}): the step would never run",
                        Dur(deadline)
                    ),
                ));
            }
        }
        let targets = [
            v.expire.as_ref(),
            v.disconnect.as_ref(),
            v.crash.as_ref(),
            v.close.as_ref(),
            v.chaos.as_ref().map(|c| &c.clients),
            v.stall.as_ref().map(|s| &s.client),
            v.lose_reply.as_ref().and_then(|l| l.client.as_ref()),
            v.drop_request.as_ref().and_then(|l| l.client.as_ref()),
            v.fail.as_ref().and_then(|l| l.client.as_ref()),
            v.delay.as_ref().and_then(|l| l.client.as_ref()),
            v.hold.as_ref().and_then(|l| l.client.as_ref()),
        ];
        for t in targets.into_iter().flatten() {
            if !known(t) {
                return Err(err_at(
                    file,
                    step,
                    format!(
                        "timeline: unknown client or group {t:?} (known: {}, or ALL, HOLDER, WAITERS)",
                        names.iter().cloned().collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
        }
        for (what, spec) in v.request_faults() {
            if let Err(e) = spec.resolve(what, &l.lock_dir()) {
                return Err(err_at(file, step, e.to_string()));
            }
        }
        if let Some(c) = &v.chaos {
            if c.every.0.is_zero() {
                return Err(err_at(
                    file,
                    step,
                    "timeline.chaos.every: must be more than 0".into(),
                ));
            }
            if c.faults.is_empty() {
                return Err(err_at(
                    file,
                    step,
                    "timeline.chaos.faults: draw from at least one fault".into(),
                ));
            }
            for f in &c.faults {
                if !CHAOS_FAULTS.contains(&f.as_str()) {
                    return Err(err_at(
                        file,
                        step,
                        format!(
                            "timeline.chaos.faults: unknown fault {f:?} (known: {})",
                            CHAOS_FAULTS.join(", ")
                        ),
                    ));
                }
            }
        }
        if let Some(g) = &v.stampede {
            match s.clients.iter().find(|c| &c.value.name == g) {
                Some(c) if c.value.on_stampede => {}
                Some(_) => {
                    return Err(err_at(
                        file,
                        step,
                        format!("timeline.stampede: group {g:?} needs `on_stampede: true`"),
                    ))
                }
                None => {
                    return Err(err_at(
                        file,
                        step,
                        format!("timeline.stampede: unknown group {g:?}"),
                    ))
                }
            }
        }
    }
    for v in &s.expect.violated {
        if !INVARIANT_NAMES.contains(&v.as_str()) {
            return Err(ScenarioError {
                file: file.clone(),
                line: 0,
                column: 0,
                message: format!(
                    "expect.violated: unknown invariant {v:?} (known: {})",
                    INVARIANT_NAMES.join(", ")
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(text: &str) -> Result<Loaded, ScenarioError> {
        parse(Path::new("t.yaml"), text)
    }

    const GOOD: &str = "lock:\n  recipe: predecessor\nclients:\n  - name: w\n    count: 3\n    hold: 20ms\ntimeline:\n  - on: {holds: w.0}\n    expire: HOLDER\n";

    #[test]
    fn a_good_file_parses_with_defaults() {
        let l = parse_str(GOOD).unwrap();
        assert_eq!(l.name, "t");
        assert_eq!(l.all_members(), vec!["w.0", "w.1", "w.2"]);
        assert_eq!(
            l.scenario.clients[0].value.hold.0,
            Duration::from_millis(20)
        );
        assert_eq!(l.scenario.server.session_timeout.0, Duration::from_secs(2));
        assert!(l.scenario.invariants.mutual_exclusion);
        assert_eq!(l.lock_dir(), "/harness/t/lock");
    }

    #[test]
    fn unknown_fields_point_at_their_line() {
        let e =
            parse_str("lock:\n  recipe: predecessor\n  colour: red\nclients: []\n").unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(e.message.contains("colour"), "{e}");
        assert!(e.to_string().starts_with("t.yaml:3:"), "{e}");
    }

    #[test]
    fn bad_values_name_what_was_expected() {
        let e = parse_str("lock:\n  recipe: predecesor\nclients: []\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        assert!(e.message.contains("predecessor"), "{e}");
        let e = parse_str("lock: {recipe: naive}\nclients:\n  - name: a\n    hold: 5 parsecs\n")
            .unwrap_err();
        assert_eq!(e.line, 4, "{e}");
        assert!(e.message.contains("duration"), "{e}");
    }

    #[test]
    fn semantic_errors_point_at_the_step() {
        let e = parse_str(
            "lock: {recipe: naive}\nclients:\n  - name: a\ntimeline:\n  - at: 1s\n    expire: b\n",
        )
        .unwrap_err();
        assert_eq!(e.line, 5, "{e}");
        assert!(e.message.contains("unknown client or group \"b\""), "{e}");
        let e = parse_str("lock: {recipe: naive}\nclients:\n  - name: a\ntimeline:\n  - at: 1s\n")
            .unwrap_err();
        assert!(e.message.contains("exactly one action"), "{e}");
        let e = parse_str("lock: {recipe: rw-herd}\nclients:\n  - name: a\n").unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(e.message.contains("role: read"), "{e}");
    }

    #[test]
    fn a_sequence_start_needs_a_lock_with_sequential_nodes() {
        let with = |lock: &str| {
            parse_str(&format!(
                "server: {{sequence_start: 2147483647}}\nlock: {lock}\nclients:\n  - name: a\n"
            ))
        };
        let l = with("{kind: exclusive}").unwrap();
        assert_eq!(l.scenario.server.sequence_start, Some(i32::MAX));
        assert!(with("{kind: reentrant}").is_ok());
        assert!(with("{recipe: broken-no-recheck}").is_ok());
        for lock in [
            "{kind: semaphore}",
            "{recipe: naive}",
            "{recipe: broken-ignores-connection-loss}",
        ] {
            let e = with(lock).unwrap_err();
            assert!(
                e.message.starts_with("server.sequence_start: a ")
                    && e.message.contains("no sequential nodes"),
                "{lock}: {e}"
            );
        }
        let e = parse_str(
            "server: {sequence_start: 2147483648}\nlock: {kind: exclusive}\nclients:\n  - name: a\n",
        )
        .unwrap_err();
        assert_eq!(e.line, 1, "{e}");
    }

    /// Anchors no run can reach are refused before anything runs: more
    /// acquisitions than the clients make, more waiters than the group
    /// has, a time at or past the deadline.
    #[test]
    fn unreachable_anchors_are_refused() {
        let clients = "lock: {recipe: naive}\nclients:\n  - name: a\n    count: 2\n    rounds: 3\n  - name: b\ntimeline:\n";
        let with = |step: &str| parse_str(&format!("{clients}{step}"));
        // 2 × 3 + 1 × 1 = 7.
        assert!(with("  - on: {acquisitions: 7}\n    expire: ALL\n").is_ok());
        let e = with("  - on: {acquisitions: 8}\n    expire: ALL\n").unwrap_err();
        assert_eq!(e.line, 8, "{e}");
        assert!(
            e.message.starts_with(
                "timeline.on.acquisitions: 8, but the clients make at most 7 (count × rounds over every group)"
            ),
            "{e}"
        );
        assert!(with("  - on: {waiting: a, count: 2}\n    expire: ALL\n").is_ok());
        let e = with("  - on: {waiting: a, count: 3}\n    expire: ALL\n").unwrap_err();
        assert_eq!(e.line, 8, "{e}");
        assert!(
            e.message
                .starts_with("timeline.on.count: 3, but \"a\" has 2 clients"),
            "{e}"
        );
        let e = with("  - on: {waiting: a.1, count: 2}\n    expire: ALL\n").unwrap_err();
        assert!(e.message.contains("\"a.1\" has 1 client:"), "{e}");
        assert!(with("  - on: {waiting: WAITERS, count: 3}\n    expire: ALL\n").is_ok());
        let e = with("  - on: {waiting: ALL, count: 4}\n    expire: ALL\n").unwrap_err();
        assert!(e.message.contains("\"ALL\" has 3 clients"), "{e}");
        let e = with("  - on: {holds: a, count: 1}\n    expire: ALL\n").unwrap_err();
        assert!(
            e.message
                .starts_with("timeline.on.count: only with `waiting"),
            "{e}"
        );
        // The default deadline is 60s.
        assert!(with("  - at: 59s\n    expire: ALL\n").is_ok());
        let e = with("  - at: 60s\n    expire: ALL\n").unwrap_err();
        assert_eq!(e.line, 8, "{e}");
        assert!(
            e.message
                .starts_with("timeline.at: 1m is at or past the deadline (1m)"),
            "{e}"
        );
        let e = parse_str(&format!(
            "deadline: 3s\n{clients}  - at: 2s\n    after: 1s\n    expire: ALL\n"
        ))
        .unwrap_err();
        assert!(
            e.message
                .starts_with("timeline.after: at 2s + after 1s is at or past the deadline (3s)"),
            "{e}"
        );
        assert!(e.to_string().starts_with("t.yaml:9:"), "{e}");
    }

    #[test]
    fn broken_yaml_is_located() {
        let e = parse_str("lock:\n  recipe: [naive\nclients: []\n").unwrap_err();
        assert!(e.line >= 2, "{e}");
    }
}
