//! Benchmarks for zk-mock and zk-lock: the shared workloads.
//!
//! * `benches/locks.rs` (criterion): notifications per hand-off (a custom
//!   measurement counted by the server's recorder), hand-off latency and the
//!   total time for N contenders to each acquire and release once.
//! * `benches/server.rs` (criterion): op throughput with 1, 16 and 64
//!   sessions, 1000 sessions connecting at once, one setData fanned out to
//!   1000 watchers, and the codec alone.
//! * `src/bin/compare.rs`: the same workloads against zk-mock and a real
//!   ZooKeeper 3.8 in one run, side by side with their ratio, plus an SVG
//!   plot of notifications per hand-off against N.
//! * `benches/startup_latency.rs`: start → first session, and round trips.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use zk_lock::{Lock, LockError, Strategy};
use zk_mock::real::RealZk;
use zk_mock::ZkMock;
use zookeeper_client as zk;

/// Errors of the workloads.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

pub mod floor;
pub mod machine;
pub mod socketless;

/// A server to measure.
#[derive(Debug)]
pub enum Server {
    /// The embedded mock.
    Mock(ZkMock),
    /// A real ZooKeeper 3.8 JVM.
    Real(RealZk),
    /// The stateless floor ([`floor::Floor`]): what any server must do at least.
    Floor(floor::Floor),
}

impl Server {
    /// The embedded mock, recording, with a recorder large enough for the
    /// biggest experiment.
    pub async fn mock() -> Result<Server, BoxError> {
        let threads = std::env::var("ZK_MOCK_THREADS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1);
        let zk = ZkMock::builder()
            .worker_threads(threads)
            .recorder_capacity(4_000_000)
            .start()
            .await?;
        Ok(Server::Mock(zk))
    }

    /// An ensemble of `n` mock servers on one runtime, recording as
    /// [`mock`](Self::mock) does; clients spread over its connect string.
    pub async fn mock_ensemble(n: usize) -> Result<Server, BoxError> {
        let zk = ZkMock::builder()
            .servers(n)
            .recorder_capacity(4_000_000)
            .start()
            .await?;
        Ok(Server::Mock(zk))
    }

    /// A real ZooKeeper, if Java and the Debian package are installed.
    pub async fn real() -> Result<Server, BoxError> {
        Ok(Server::Real(start_real().await?))
    }

    /// The stateless floor.
    pub fn floor() -> Result<Server, BoxError> {
        Ok(Server::Floor(floor::Floor::start()?))
    }

    /// Where clients connect.
    pub fn connect_string(&self) -> String {
        match self {
            Server::Mock(m) => m.connect_string(),
            Server::Real(r) => r.connect_string(),
            Server::Floor(f) => f.addr().to_string(),
        }
    }

    /// `mock` or `zookeeper`.
    pub fn name(&self) -> &'static str {
        match self {
            Server::Mock(_) => "zk-mock",
            Server::Real(_) => "zookeeper",
            Server::Floor(_) => "floor",
        }
    }

    /// CPU time the server's threads have used so far (on Linux, from
    /// `/proc/…/task/*/schedstat`; zero elsewhere). For the mock, the
    /// threads named `zk-mock-PORT…` in this process; for ZooKeeper, every
    /// thread of its JVM. What a server costs per op apart from the client,
    /// which is the same for both.
    pub fn cpu_time(&self) -> Duration {
        match self {
            Server::Mock(m) => {
                let name = format!("zk-mock-{}", m.addr().port());
                task_cpu("/proc/self/task", |comm| {
                    comm == name || comm.starts_with(&format!("{name}-"))
                })
            }
            Server::Real(r) => r.jvm_pid().map_or(Duration::ZERO, |pid| {
                task_cpu(&format!("/proc/{pid}/task"), |_| true)
            }),
            Server::Floor(f) => {
                let name = format!("zk-floor-{}", f.addr().port());
                task_cpu("/proc/self/task", |comm| comm == name)
            }
        }
    }

    /// The mock, if it is one.
    pub fn mock_handle(&self) -> Option<&ZkMock> {
        match self {
            Server::Mock(m) => Some(m),
            Server::Real(_) | Server::Floor(_) => None,
        }
    }
}

/// Sums the on-CPU nanoseconds of the tasks under `dir` whose name passes `keep`.
fn task_cpu(dir: &str, keep: impl Fn(&str) -> bool) -> Duration {
    let Ok(tasks) = std::fs::read_dir(dir) else {
        return Duration::ZERO;
    };
    let mut ns = 0u64;
    for t in tasks.flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if !keep(comm.trim_end()) {
            continue;
        }
        if let Ok(stat) = std::fs::read_to_string(t.path().join("schedstat")) {
            ns += stat
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    Duration::from_nanos(ns)
}

/// A real ZooKeeper 3.8 in a JVM (zk-mock's launcher), configured like the
/// mock where it matters for a fair comparison: no per-IP connection limit,
/// a listen backlog of 1024 (tokio's), the full JIT and a 2 GiB heap, and
/// fsynced writes as in production.
pub async fn start_real() -> Result<RealZk, BoxError> {
    if !RealZk::available() {
        return Err("java or ZooKeeper's jars are missing (apt-get install zookeeper)".into());
    }
    let builder = RealZk::builder()
        .cfg("maxClientCnxns=0")
        .cfg("clientPortListenBacklog=1024")
        .heap(Some("2g"))
        .quick_jit(false)
        .sync_writes(true);
    tokio::task::spawn_blocking(move || builder.start().map_err(BoxError::from)).await?
}

/// Connects `n` sessions, `parallel` at a time.
pub async fn connect_many(cs: &str, n: usize) -> Result<Vec<zk::Client>, BoxError> {
    let mut out = Vec::with_capacity(n);
    for chunk in (0..n).collect::<Vec<_>>().chunks(64) {
        let futs = chunk.iter().map(|_| {
            zk::Client::connector()
                .with_session_timeout(Duration::from_secs(30))
                .connect(cs)
        });
        for c in futures::future::join_all(futs).await {
            out.push(c?);
        }
    }
    Ok(out)
}

/// The recipes, in the exclusive form each offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recipe {
    /// [`Strategy::Naive`].
    Naive,
    /// [`Strategy::Herd`].
    Herd,
    /// [`Strategy::Predecessor`].
    Predecessor,
    /// The predecessor strategy, reentrant.
    Reentrant,
    /// The herd read/write lock's writers.
    RwHerd,
    /// The predecessor read/write lock's writers.
    RwPredecessor,
}

impl Recipe {
    /// Every recipe.
    pub const ALL: [Recipe; 6] = [
        Recipe::Naive,
        Recipe::Herd,
        Recipe::Predecessor,
        Recipe::Reentrant,
        Recipe::RwHerd,
        Recipe::RwPredecessor,
    ];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Recipe::Naive => "naive",
            Recipe::Herd => "herd",
            Recipe::Predecessor => "predecessor",
            Recipe::Reentrant => "reentrant",
            Recipe::RwHerd => "rw-herd",
            Recipe::RwPredecessor => "rw-predecessor",
        }
    }

    /// Whether a release wakes every waiter.
    pub fn is_herd(self) -> bool {
        matches!(self, Recipe::Naive | Recipe::Herd | Recipe::RwHerd)
    }

    /// The exclusive lock this recipe names: for the read/write forms,
    /// the write side.
    pub fn lock(self, client: zk::Client, dir: &str) -> Result<Lock, LockError> {
        let builder = Lock::builder(client, dir);
        match self {
            Recipe::Naive => builder.strategy(Strategy::Naive).build(),
            Recipe::Herd => builder.strategy(Strategy::Herd).build(),
            Recipe::Predecessor => builder.build(),
            Recipe::Reentrant => builder.reentrant(true).build(),
            Recipe::RwHerd => Ok(builder
                .strategy(Strategy::Herd)
                .read_write()?
                .writer()
                .clone()),
            Recipe::RwPredecessor => Ok(builder.read_write()?.writer().clone()),
        }
    }
}

/// How the holders pace the hand-offs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// Each new holder releases at once: the realistic race, whose
    /// notification counts depend on timing in the herd forms.
    Immediate,
    /// Each new holder first waits until every remaining waiter has its
    /// watch set again (mock: the server's watch table; ZooKeeper: the
    /// `wchc` four-letter word), so that every hand-off costs exactly what
    /// the recipe's design says: the counts are deterministic and comparable.
    Settled,
}

/// What one lock experiment measured.
#[derive(Debug, Clone, Default)]
pub struct LockRun {
    /// Contenders.
    pub n: usize,
    /// From the first release to the last release (the N−1 hand-offs).
    pub wall: Duration,
    /// Each hand-off: the next holder's acquire returning, minus the
    /// previous holder's release returning.
    pub handoffs: Vec<Duration>,
    /// Watch notifications under the lock directory counted by the server
    /// (mock only), excluding each holder's own node watch.
    pub server_notifications: Option<u64>,
    /// Notifications the recipes' instances received during the hand-offs.
    pub client_notifications: u64,
    /// Children listings the recipes made during the hand-offs.
    pub children_reads: u64,
    /// Child names those listings returned, in all.
    pub children_listed: u64,
    /// Bytes of those names.
    pub children_bytes: u64,
}

impl LockRun {
    /// Notifications per hand-off: the server's count when known, else the clients'.
    pub fn per_handoff(&self) -> f64 {
        let total = self
            .server_notifications
            .unwrap_or(self.client_notifications);
        total as f64 / (self.n.saturating_sub(1).max(1)) as f64
    }

    /// The median hand-off latency.
    pub fn median_handoff(&self) -> Duration {
        percentile(&self.handoffs, 0.5)
    }
}

/// The p-th percentile (0..=1) of `samples`.
pub fn percentile(samples: &[Duration], p: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    let mut v = samples.to_vec();
    v.sort_unstable();
    let i = ((v.len() - 1) as f64 * p).round() as usize;
    v[i.min(v.len() - 1)]
}

/// Paces the hand-offs ([`Pace::Settled`]): before each release, waits
/// until every remaining waiter has its watch armed again.
///
/// On the mock the server's watch table tells. On ZooKeeper the `wchc`
/// four-letter word lists data and exists watches but not child watches,
/// so for the herd forms the recipes' own counters tell instead: a release
/// wakes every remaining waiter (each was armed), and a waiter is armed
/// again once it has counted that notification and listed the children
/// (one listing sets its watch) — `children_reads == notifications + 1`.
struct Pacer {
    pace: Pace,
    dir: String,
    probe: Probe,
    counters: bool,
    herd_children: bool,
    locks: std::collections::HashMap<i64, Lock>,
    baseline: parking_lot::Mutex<std::collections::HashMap<i64, u64>>,
}

impl Pacer {
    fn new(
        server: &Server,
        recipe: Recipe,
        dir: &str,
        pace: Pace,
        sessions: &[i64],
        locks: &[Lock],
    ) -> Pacer {
        let probe = match server {
            Server::Mock(m) => Probe::Mock(m.control()),
            Server::Real(r) => Probe::Real(r.addr()),
            // lock_experiment refuses the floor before it gets here.
            Server::Floor(f) => Probe::Real(f.addr()),
        };
        let counters =
            matches!(server, Server::Real(_)) && matches!(recipe, Recipe::Herd | Recipe::RwHerd);
        Pacer {
            pace,
            dir: dir.to_string(),
            probe,
            counters,
            herd_children: matches!(recipe, Recipe::Herd | Recipe::RwHerd),
            locks: sessions
                .iter()
                .copied()
                .zip(locks.iter().cloned())
                .collect(),
            baseline: parking_lot::Mutex::new(Default::default()),
        }
    }

    fn armed_by_counters(&self, s: i64) -> bool {
        let Some(l) = self.locks.get(&s) else {
            return false;
        };
        let m = l.metrics();
        let base = self.baseline.lock().get(&s).copied();
        let woken = base.is_none_or(|b| m.notifications > b);
        woken && m.children_reads == m.notifications + 1
    }

    /// Waits until every session in `rest` is armed, then records the
    /// baseline for the next hand-off.
    async fn settle(&self, rest: &[i64], first: bool) -> Result<(), BoxError> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let done = if self.counters {
                rest.iter().all(|s| self.armed_by_counters(*s))
            } else {
                let w = self.probe.watchers(&self.dir).await?;
                // A herd waiter's watch is back on the server a moment before
                // its own counters show the listing that set it.
                let idle = |s: &i64| {
                    !self.herd_children
                        || self.locks.get(s).is_some_and(|l| {
                            let m = l.metrics();
                            m.children_reads == m.notifications + 1
                        })
                };
                rest.iter().all(|s| w.contains(s) && idle(s))
            };
            if done {
                break;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "waiters did not arm their watches on {} within 60 s",
                    self.dir
                )
                .into());
            }
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        if self.counters && first {
            // Arrivals wake earlier herd waiters too; let the last of those land.
            tokio::time::sleep(Duration::from_millis(100)).await;
            if !rest.iter().all(|s| self.armed_by_counters(*s)) {
                return Box::pin(self.settle(rest, true)).await;
            }
        }
        let mut b = self.baseline.lock();
        for s in rest {
            if let Some(l) = self.locks.get(s) {
                b.insert(*s, l.metrics().notifications);
            }
        }
        Ok(())
    }

    async fn before_release(&self, rest: &[i64]) -> Result<(), BoxError> {
        if self.pace == Pace::Settled {
            self.settle(rest, false).await?;
        }
        Ok(())
    }
}

#[derive(Clone)]
enum Probe {
    Mock(zk_mock::Control),
    Real(SocketAddr),
}

impl Probe {
    async fn watchers(&self, dir: &str) -> Result<std::collections::HashSet<i64>, BoxError> {
        match self {
            Probe::Mock(c) => {
                let under = |p: &str| p == dir || p.starts_with(&format!("{dir}/"));
                Ok(c.snapshot()
                    .sessions
                    .iter()
                    .filter(|(_, s)| s.watches.iter().any(|w| under(&w.path)))
                    .map(|(id, _)| id.0)
                    .collect())
            }
            Probe::Real(addr) => wchc(*addr, dir).await,
        }
    }
}

async fn wchc(addr: SocketAddr, dir: &str) -> Result<std::collections::HashSet<i64>, BoxError> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let under = |p: &str| p == dir || p.starts_with(&format!("{dir}/"));
    let mut sock = tokio::net::TcpStream::connect(addr).await?;
    sock.write_all(b"wchc").await?;
    let mut out = String::new();
    sock.read_to_string(&mut out).await?;
    let mut found = std::collections::HashSet::new();
    let mut current = None;
    for line in out.lines() {
        if let Some(hex) = line.trim().strip_prefix("0x") {
            current = u64::from_str_radix(hex.trim(), 16).ok().map(|v| v as i64);
        } else if under(line.trim()) {
            if let Some(s) = current {
                found.insert(s);
            }
        }
    }
    Ok(found)
}

/// The lock experiment: `n` contenders on fresh sessions. One takes the
/// lock; the other n−1 queue behind it (the experiment waits until every
/// node is in the directory and, on the mock, every waiter's watch is set);
/// then the holder releases and each contender in turn acquires and
/// releases at once. Every hand-off is timed.
pub async fn lock_experiment(
    server: &Server,
    recipe: Recipe,
    n: usize,
    dir: &str,
    pace: Pace,
) -> Result<LockRun, BoxError> {
    if matches!(server, Server::Floor(_)) {
        return Err("the floor keeps no tree: a lock experiment needs zk-mock or ZooKeeper".into());
    }
    let cs = server.connect_string();
    let clients = connect_many(&cs, n).await?;
    let sessions: Vec<i64> = clients.iter().map(|c| c.session_id().0).collect();
    let locks: Vec<Lock> = clients
        .iter()
        .map(|c| recipe.lock(c.clone(), dir))
        .collect::<Result<_, _>>()?;
    let first = locks[0].acquire().await?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(usize, Instant, Instant)>();
    let waiting: Arc<parking_lot::Mutex<std::collections::HashSet<i64>>> = Arc::new(
        parking_lot::Mutex::new(sessions[1..].iter().copied().collect()),
    );
    let pacer = Arc::new(Pacer::new(server, recipe, dir, pace, &sessions, &locks));
    let mut tasks = Vec::new();
    for (i, l) in locks.iter().enumerate().skip(1) {
        let l = l.clone();
        let tx = tx.clone();
        let waiting = waiting.clone();
        let me = sessions[i];
        let pacer = pacer.clone();
        tasks.push(tokio::spawn(async move {
            let held = l.acquire().await?;
            let acquired = Instant::now();
            let rest: Vec<i64> = {
                let mut w = waiting.lock();
                w.remove(&me);
                w.iter().copied().collect()
            };
            pacer.before_release(&rest).await?;
            held.release().await?;
            let _ = tx.send((i, acquired, Instant::now()));
            Ok::<(), BoxError>(())
        }));
    }
    drop(tx);
    // Everyone queued: the n−1 waiters watching.
    pacer.settle(&sessions[1..], true).await?;
    let release_after = server.mock_handle().map(|m| {
        // Only the hand-offs go into the recording (and it stays small).
        m.clear_recording();
        m.last_zxid()
    });
    // The clients' counters from here on: the hand-offs only (arrivals
    // wake herd waiters too, as many times as timing decides).
    let sum = |locks: &[Lock]| {
        locks.iter().map(|l| l.metrics()).fold([0u64; 4], |a, m| {
            [
                a[0] + m.notifications,
                a[1] + m.children_reads,
                a[2] + m.children_listed,
                a[3] + m.children_bytes,
            ]
        })
    };
    let before = sum(&locks);
    let start = Instant::now();
    first.release().await?;
    let mut events = vec![(0usize, start, Instant::now())];
    while let Some(e) = rx.recv().await {
        events.push(e);
    }
    for t in tasks {
        t.await??;
    }
    let wall = start.elapsed();
    events.sort_by_key(|e| e.1);
    let handoffs = events
        .windows(2)
        .map(|w| w[1].1.saturating_duration_since(w[0].2))
        .collect();
    // Notifications caused by the deletions of lock nodes, to sessions other
    // than the deleter's (each holder's own node watch fires to itself).
    let server_notifications = match (server.mock_handle(), release_after) {
        (Some(m), Some(after)) => {
            let deleters: std::collections::HashMap<i64, zk_mock::SessionId> = m
                .changes()
                .iter()
                .filter(|c| c.zxid > after && c.path.starts_with(dir))
                .filter(|c| c.kind == zk_mock::record::ChangeKind::Deleted)
                .map(|c| (c.zxid, c.session))
                .collect();
            Some(
                m.notifications()
                    .iter()
                    .filter(|x| deleters.get(&x.zxid).is_some_and(|s| *s != x.session))
                    .count() as u64,
            )
        }
        _ => None,
    };
    let after = sum(&locks);
    let [client_notifications, children_reads, children_listed, children_bytes] =
        [0, 1, 2, 3].map(|i| after[i] - before[i]);
    drop(locks);
    for c in clients {
        drop(c);
    }
    Ok(LockRun {
        n,
        wall,
        handoffs,
        server_notifications,
        client_notifications,
        children_reads,
        children_listed,
        children_bytes,
    })
}

/// A single-node operation measured by the server benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// create of a new persistent node with 100 bytes.
    Create,
    /// getData of a 100-byte node.
    GetData,
    /// setData of 100 bytes.
    SetData,
    /// exists of an existing node.
    Exists,
    /// getChildren of a node with 10 children.
    GetChildren,
    /// delete of an existing childless node.
    Delete,
}

impl Op {
    /// Every op.
    pub const ALL: [Op; 6] = [
        Op::Create,
        Op::GetData,
        Op::SetData,
        Op::Exists,
        Op::GetChildren,
        Op::Delete,
    ];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Op::Create => "create",
            Op::GetData => "getData",
            Op::SetData => "setData",
            Op::Exists => "exists",
            Op::GetChildren => "getChildren",
            Op::Delete => "delete",
        }
    }

    /// Whether it writes (a transaction).
    pub fn is_write(self) -> bool {
        matches!(self, Op::Create | Op::SetData | Op::Delete)
    }
}

/// Throughput and latencies of one op workload.
#[derive(Debug, Clone, Default)]
pub struct OpRun {
    /// Ops completed.
    pub ops: usize,
    /// Wall time for all of them.
    pub wall: Duration,
    /// Each op's latency.
    pub latencies: Vec<Duration>,
}

impl OpRun {
    /// Ops per second.
    pub fn throughput(&self) -> f64 {
        self.ops as f64 / self.wall.as_secs_f64().max(1e-9)
    }
}

static OP_RUN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Runs `per_session` ops of one kind on each of `clients` (closed loop: one
/// op outstanding per session, all sessions at once): [`OpWorkload::prepare`]
/// then [`OpWorkload::run`].
pub async fn op_workload(
    clients: &[zk::Client],
    op: Op,
    per_session: usize,
) -> Result<OpRun, BoxError> {
    OpWorkload::prepare(clients, op, per_session)
        .await?
        .run()
        .await
}

/// One op workload, its nodes made: what [`OpWorkload::run`] times is the
/// ops alone, so a server's CPU measured around `run` is the ops' cost and
/// not the setup's (a delete workload first creates every node it deletes).
#[derive(Debug)]
pub struct OpWorkload<'a> {
    clients: &'a [zk::Client],
    op: Op,
    per_session: usize,
    root: String,
}

/// Deletes what a create workload under `root` made ([`OpWorkload::root`]),
/// `per_session` nodes for each of `clients`' sessions, then the root and
/// its directories, so the next run creates into a tree of the same size:
/// the create workload, run after run, otherwise grows the tree.
pub async fn remove_created(
    clients: &[zk::Client],
    root: &str,
    per_session: usize,
) -> Result<(), BoxError> {
    let tasks = clients.iter().enumerate().map(|(s, c)| async move {
        for i in 0..per_session {
            c.delete(&format!("{root}/s{s}/c{i}"), None).await?;
        }
        c.delete(&format!("{root}/s{s}"), None).await
    });
    for r in futures::future::join_all(tasks).await {
        r?;
    }
    let c0 = &clients[0];
    for i in 0..10 {
        c0.delete(&format!("{root}/child-{i}"), None).await?;
    }
    c0.delete(root, None).await?;
    Ok(())
}

impl<'a> OpWorkload<'a> {
    /// The path under which the workload makes its nodes.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// Makes the workload's nodes: a root with 100 bytes and ten children,
    /// a directory per session for creates, and for deletes every node the
    /// run deletes.
    pub async fn prepare(
        clients: &'a [zk::Client],
        op: Op,
        per_session: usize,
    ) -> Result<OpWorkload<'a>, BoxError> {
        let run = OP_RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let root = format!("/bench-ops-{}-{run}", std::process::id());
        let c0 = &clients[0];
        let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
        c0.create(&root, &[7u8; 100], &persistent).await?;
        for i in 0..10 {
            c0.create(&format!("{root}/child-{i}"), b"", &persistent)
                .await?;
        }
        if op == Op::Delete {
            for (s, c) in clients.iter().enumerate() {
                let dir = format!("{root}/s{s}");
                c.create(&dir, b"", &persistent).await?;
                let futs = (0..per_session).map(|i| {
                    let path = format!("{dir}/d{i}");
                    let persistent = persistent.clone();
                    async move { c.create(&path, b"", &persistent).await.map(|_| ()) }
                });
                for r in futures::future::join_all(futs).await {
                    r?;
                }
            }
        } else if op == Op::Create {
            for s in 0..clients.len() {
                c0.create(&format!("{root}/s{s}"), b"", &persistent).await?;
            }
        }
        Ok(OpWorkload {
            clients,
            op,
            per_session,
            root,
        })
    }

    /// Runs the ops and times each.
    pub async fn run(self) -> Result<OpRun, BoxError> {
        let OpWorkload {
            clients,
            op,
            per_session,
            root,
        } = self;
        let data = vec![7u8; 100];
        let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
        let start = Instant::now();
        let tasks = clients.iter().enumerate().map(|(s, c)| {
            let root = root.clone();
            let data = data.clone();
            let persistent = persistent.clone();
            async move {
                let mut lat = Vec::with_capacity(per_session);
                for i in 0..per_session {
                    let t = Instant::now();
                    match op {
                        Op::Create => {
                            c.create(&format!("{root}/s{s}/c{i}"), &data, &persistent)
                                .await?;
                        }
                        Op::GetData => {
                            c.get_data(&root).await?;
                        }
                        Op::SetData => {
                            c.set_data(&root, &data, None).await?;
                        }
                        Op::Exists => {
                            c.check_stat(&root).await?;
                        }
                        Op::GetChildren => {
                            c.list_children(&root).await?;
                        }
                        Op::Delete => {
                            c.delete(&format!("{root}/s{s}/d{i}"), None).await?;
                        }
                    }
                    lat.push(t.elapsed());
                }
                Ok::<_, zk::Error>(lat)
            }
        });
        let mut latencies = Vec::with_capacity(clients.len() * per_session);
        for r in futures::future::join_all(tasks).await {
            latencies.extend(r?);
        }
        let wall = start.elapsed();
        Ok(OpRun {
            ops: latencies.len(),
            wall,
            latencies,
        })
    }
}

/// Connects `n` sessions all at once; returns the time until the last is
/// connected, and the clients.
pub async fn connect_storm(cs: &str, n: usize) -> Result<(Duration, Vec<zk::Client>), BoxError> {
    let start = Instant::now();
    let futs = (0..n).map(|_| {
        zk::Client::connector()
            .with_session_timeout(Duration::from_secs(30))
            .connect(cs)
    });
    let mut clients = Vec::with_capacity(n);
    for c in futures::future::join_all(futs).await {
        clients.push(c?);
    }
    Ok((start.elapsed(), clients))
}

/// One setData on a node that `watchers` sessions watch (getData watches):
/// the time from sending the setData until every watcher has its
/// notification.
pub async fn fanout(watchers: &[zk::Client], writer: &zk::Client) -> Result<Duration, BoxError> {
    let run = OP_RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = format!("/bench-fanout-{}-{run}", std::process::id());
    let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    writer.create(&path, b"", &persistent).await?;
    let futs = watchers.iter().map(|c| c.get_and_watch_data(&path));
    let mut ws = Vec::with_capacity(watchers.len());
    for r in futures::future::join_all(futs).await {
        ws.push(r?.2);
    }
    let start = Instant::now();
    let (set, events) = tokio::join!(
        writer.set_data(&path, b"x", None),
        futures::future::join_all(ws.into_iter().map(|w| w.changed()))
    );
    set?;
    let elapsed = start.elapsed();
    if events
        .iter()
        .any(|e| e.event_type != zk::EventType::NodeDataChanged)
    {
        return Err("a watcher got something else than NodeDataChanged".into());
    }
    writer.delete(&path, None).await?;
    Ok(elapsed)
}

/// `n` sessions connecting at once through zk-mock's lean `RawClient` (a
/// connect request and its response per TCP connection, nothing else): the
/// time until every session is open. The sessions are returned open.
pub async fn raw_connect_storm(
    addr: SocketAddr,
    n: usize,
) -> Result<(Duration, Vec<zk_mock::client::RawClient>), BoxError> {
    use zk_mock::client::RawClient;
    let start = Instant::now();
    let mut clients = Vec::with_capacity(n);
    for c in futures::future::join_all((0..n).map(|_| RawClient::connect(addr, 30_000))).await {
        clients.push(c?);
    }
    Ok((start.elapsed(), clients))
}

/// [`fanout`] through `RawClient`s: one setData on a node that every one of
/// `watchers` watches; the time until each has read its notification.
pub async fn raw_fanout(
    watchers: &mut [zk_mock::client::RawClient],
    writer: &mut zk_mock::client::RawClient,
) -> Result<Duration, BoxError> {
    use zk_mock::proto::event_type::NODE_DATA_CHANGED;
    use zk_mock::proto::{
        Acl, CreateRequest, DeleteRequest, OpCode, PathWatchRequest, SetDataRequest,
    };
    let run = OP_RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = format!("/bench-raw-fanout-{}-{run}", std::process::id());
    let ok = |r: zk_mock::client::Reply, what: &str| -> Result<(), BoxError> {
        match r.header.err {
            0 => Ok(()),
            e => Err(format!("{what}: error {e}").into()),
        }
    };
    let create = CreateRequest {
        path: path.as_str().into(),
        data: Some(bytes::Bytes::new()),
        acl: Acl::open_shared(),
        flags: 0,
    };
    ok(writer.request(OpCode::Create, &create).await?, "create")?;
    let watch = PathWatchRequest {
        path: path.clone(),
        watch: true,
    };
    for r in futures::future::join_all(
        watchers
            .iter_mut()
            .map(|c| c.request(OpCode::GetData, &watch)),
    )
    .await
    {
        ok(r?, "getData")?;
    }
    let set = SetDataRequest {
        path: path.clone(),
        data: Some(bytes::Bytes::from_static(b"x")),
        version: -1,
    };
    let start = Instant::now();
    let (set, events) = tokio::join!(
        writer.request(OpCode::SetData, &set),
        futures::future::join_all(watchers.iter_mut().map(|c| c.next_event()))
    );
    let elapsed = start.elapsed();
    ok(set?, "setData")?;
    for e in events {
        match e? {
            Some(n) if n.event.event_type == NODE_DATA_CHANGED => {}
            other => return Err(format!("a watcher got {other:?}").into()),
        }
    }
    let delete = DeleteRequest { path, version: -1 };
    ok(writer.request(OpCode::Delete, &delete).await?, "delete")?;
    Ok(elapsed)
}

/// getData (`write: false`) or setData (`write: true`) through zk-mock's lean
/// `RawClient`, `depth` requests in flight per session: the server's share of
/// the work shows, the client's (a Rust client built for features, not
/// speed) shrinks. The same client for both servers.
pub async fn raw_pipelined(
    addr: SocketAddr,
    sessions: usize,
    per_session: usize,
    depth: usize,
    write: bool,
) -> Result<OpRun, BoxError> {
    use bytes::BytesMut;
    use zk_mock::client::RawClient;
    use zk_mock::codec::Record;
    use zk_mock::proto::{OpCode, PathWatchRequest, RequestHeader, SetDataRequest};
    let run = OP_RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = format!("/bench-raw-{}-{run}", std::process::id());
    let admin = zk::Client::connect(&addr.to_string()).await?;
    let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    admin.create(&path, &[7u8; 100], &persistent).await?;
    let mut clients = Vec::with_capacity(sessions);
    for _ in 0..sessions {
        clients.push(RawClient::connect(addr, 30_000).await?);
    }
    let frame = |xid: i32| {
        let mut b = BytesMut::new();
        if write {
            RequestHeader {
                xid,
                op_type: OpCode::SetData as i32,
            }
            .encode(&mut b);
            SetDataRequest {
                path: path.clone(),
                data: Some(bytes::Bytes::from_static(&[7u8; 100])),
                version: -1,
            }
            .encode(&mut b);
        } else {
            RequestHeader {
                xid,
                op_type: OpCode::GetData as i32,
            }
            .encode(&mut b);
            PathWatchRequest {
                path: path.clone(),
                watch: false,
            }
            .encode(&mut b);
        }
        b
    };
    let start = Instant::now();
    let tasks = clients.into_iter().map(|mut c| {
        let frame = &frame;
        async move {
            let mut lat = Vec::with_capacity(per_session);
            let mut sent = std::collections::VecDeque::with_capacity(depth);
            let mut xid = 1;
            while xid as usize <= depth.min(per_session) {
                c.send_frame(&frame(xid)).await?;
                sent.push_back(Instant::now());
                xid += 1;
            }
            while lat.len() < per_session {
                let reply = c.next_reply().await?.ok_or("connection closed")?;
                if reply.header.err != 0 {
                    return Err(format!("error {}", reply.header.err).into());
                }
                lat.push(sent.pop_front().map(|t| t.elapsed()).unwrap_or_default());
                if (xid as usize) <= per_session {
                    c.send_frame(&frame(xid)).await?;
                    sent.push_back(Instant::now());
                    xid += 1;
                }
            }
            Ok::<_, BoxError>(lat)
        }
    });
    let mut latencies = Vec::new();
    for r in futures::future::join_all(tasks).await {
        latencies.extend(r?);
    }
    Ok(OpRun {
        ops: latencies.len(),
        wall: start.elapsed(),
        latencies,
    })
}
