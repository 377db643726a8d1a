//! A driver process: the harness's side of the protocol in `harness/DRIVERS.md`.
//!
//! One process hosts every client of a scenario run ([`Process`]); a run sees
//! it through a [`Host`]. A driver whose `init` says `reuse` may serve
//! successive runs from a [`super::pool::HostPool`]: between two runs it gets
//! `reset` with the next run's number, and from then on the previous run's
//! lines are told apart and dropped — replies by their ids (unique for the
//! whole process), events by their `run`. Requests go to its stdin
//! as JSON lines; a reader task matches replies to requests by id and passes
//! events on. Anything the protocol does not allow — a line that is not JSON,
//! a reply to an unknown id, an event for a client never opened, the process
//! exiting — is fatal for the run: the first such failure is kept (with the
//! line number and the tail of the driver's stderr), every request waiting
//! is answered with it, and the run is reported as an error.

use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::oneshot;

use super::inprocess::EventSink;
use super::protocol::{Event, Line, LockSpec, Op, OpError, Reply, Request, RunTag, PROTOCOL};
use super::{Acquired, Mode};
use crate::error::RunError;
use crate::scenario::Role;

/// How long a driver may take to start and answer `init` (a JVM compiling its
/// driver on first use takes a while).
const INIT_TIMEOUT: Duration = Duration::from_secs(120);
/// How long `shutdown` may take before the process is killed (and how long
/// `reset` may take before the process is shut down instead of reused).
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);
/// Lines of the driver's stderr kept for error messages.
const STDERR_TAIL: usize = 30;

#[derive(Default)]
struct State {
    pending: HashMap<u64, (Op, oneshot::Sender<Reply>)>,
    /// Clients ever opened (events for others are a protocol error).
    opened: BTreeSet<String>,
    /// Clients crashed: their late replies are dropped.
    crashed: BTreeSet<String>,
    fatal: Option<String>,
    stderr: VecDeque<String>,
    shutting_down: bool,
    /// The run being served: 0 until the first `reset`, then its `run`.
    run: u64,
    /// The id of the last `reset`: replies to smaller ids that are not
    /// outstanding are an earlier run's, and dropped.
    run_first_id: u64,
    /// Where the current run's events go (nowhere while no run is served).
    sink: Option<EventSink>,
}

struct Shared {
    name: String,
    state: Mutex<State>,
    /// Becomes true when the driver's stderr closes.
    stderr_closed: tokio::sync::watch::Sender<bool>,
}

impl Shared {
    fn fail(&self, why: String) {
        let mut st = self.state.lock();
        if st.fatal.is_none() && !st.shutting_down {
            let tail: Vec<String> = st.stderr.iter().cloned().collect();
            let mut msg = format!("driver {}: {why}", self.name);
            if !tail.is_empty() {
                msg.push_str("\n  its stderr ended with:\n    ");
                msg.push_str(&tail.join("\n    "));
            }
            tracing::warn!("{msg}");
            st.fatal = Some(msg);
        }
        // Waiting requests get no reply now: dropping their senders wakes them.
        st.pending.clear();
    }
}

/// A running driver process.
pub struct Process {
    shared: Arc<Shared>,
    command: Vec<String>,
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    child: Mutex<Option<Child>>,
    next_id: AtomicU64,
    /// What `init` said.
    pub implementation: String,
    /// Kind → class.
    pub kinds: BTreeMap<String, String>,
    /// zk-lock recipes it understands.
    pub recipes: Vec<String>,
    /// `init` said `reuse`: it may serve another run after `reset`.
    pub reuse: bool,
}

impl std::fmt::Debug for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("driver::Process")
            .field("name", &self.shared.name)
            .field("implementation", &self.implementation)
            .field("reuse", &self.reuse)
            .finish()
    }
}

/// Where a driver process goes when its run ends: the pool that lent it
/// ([`super::pool::HostPool`]).
pub(crate) trait Lender: Send + Sync {
    /// Takes back a process that may serve another run.
    fn give_back(
        &self,
        process: Arc<Process>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>>;
    /// Counts a process shut down after its run.
    fn retire(&self, process: &Process);
}

/// One run's view of a driver process: the requests it sends are refused
/// once the run has handed the process back (to its pool or to `shutdown`).
pub struct Host {
    process: Arc<Process>,
    /// The run of the process this host serves.
    run: u64,
    /// Where the process goes after the run, if it can serve another.
    pool: Option<Arc<dyn Lender>>,
    /// Set when the run ends: the driver's failure then, if it had one.
    ended: Mutex<Option<Option<String>>>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("driver::Host")
            .field("process", &self.process)
            .field("run", &self.run)
            .finish()
    }
}

impl Host {
    /// Starts `command` (program and arguments), says `init`, and serves one
    /// run with it (today's behaviour: the process is shut down after it).
    pub async fn start(name: &str, command: &[String], sink: EventSink) -> Result<Host, RunError> {
        let process = Arc::new(Process::start(name, command).await?);
        Ok(Host::serve(process, sink, None))
    }

    /// A run served by `process`, whose events go to `sink`; at its end the
    /// process goes back to `pool`, if any and if it may.
    pub(crate) fn serve(
        process: Arc<Process>,
        sink: EventSink,
        pool: Option<Arc<dyn Lender>>,
    ) -> Host {
        let run = {
            let mut st = process.shared.state.lock();
            st.sink = Some(sink);
            st.run
        };
        Host {
            process,
            run,
            pool,
            ended: Mutex::new(None),
        }
    }

    /// The process.
    pub fn process(&self) -> &Process {
        &self.process
    }

    /// The failure that ended the driver during this run, if one did.
    pub fn fatal(&self) -> Option<String> {
        match &*self.ended.lock() {
            Some(f) => f.clone(),
            None => self.process.fatal(),
        }
    }

    async fn call(&self, op: Op) -> Result<Reply, OpError> {
        self.process.call(self.run, op).await
    }

    /// Ends the run: a process that may serve another (its `init` said
    /// `reuse`, it never failed, it answers `reset`) goes back to the pool;
    /// any other is shut down (`shutdown`, then killed if it does not exit).
    pub async fn shutdown(&self) {
        let fatal = {
            let mut ended = self.ended.lock();
            if ended.is_some() {
                return;
            }
            let fatal = self.process.fatal();
            *ended = Some(fatal.clone());
            fatal
        };
        // Nothing more of this run reaches its views.
        self.process.shared.state.lock().sink = None;
        match &self.pool {
            Some(pool) if self.process.reuse && fatal.is_none() => {
                pool.give_back(self.process.clone()).await
            }
            Some(pool) => {
                pool.retire(&self.process);
                self.process.shutdown().await
            }
            None => self.process.shutdown().await,
        }
    }
}

impl Process {
    /// Starts `command` (program and arguments) and says `init`.
    pub async fn start(name: &str, command: &[String]) -> Result<Process, RunError> {
        let (program, args) = command
            .split_first()
            .ok_or_else(|| RunError::Driver(format!("driver {name}: empty command")))?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                RunError::Driver(format!(
                    "driver {name}: cannot start {}: {e}",
                    command.join(" ")
                ))
            })?;
        let shared = Arc::new(Shared {
            name: name.to_string(),
            state: Mutex::default(),
            stderr_closed: tokio::sync::watch::channel(false).0,
        });
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        let stdin = child.stdin.take().expect("piped");
        tokio::spawn(read_stdout(shared.clone(), stdout));
        tokio::spawn(read_stderr(shared.clone(), stderr));
        let mut host = Process {
            shared,
            command: command.to_vec(),
            stdin: tokio::sync::Mutex::new(Some(stdin)),
            child: Mutex::new(Some(child)),
            next_id: AtomicU64::new(1),
            implementation: String::new(),
            kinds: BTreeMap::new(),
            recipes: Vec::new(),
            reuse: false,
        };
        let init =
            tokio::time::timeout(INIT_TIMEOUT, host.call(0, Op::Init { protocol: PROTOCOL }))
                .await
                .map_err(|_| {
                    host.shared
                        .fail(format!("no answer to init in {}s", INIT_TIMEOUT.as_secs()));
                    RunError::Driver(host.fatal().unwrap_or_default())
                })?;
        let reply = match init {
            Ok(r) => r,
            Err(e) => {
                return Err(RunError::Driver(
                    host.fatal()
                        .unwrap_or_else(|| format!("driver {name}: init: {e}")),
                ))
            }
        };
        match (reply.implementation, reply.kinds) {
            (Some(i), Some(k)) => {
                host.implementation = i;
                host.kinds = k;
                host.recipes = reply.recipes.unwrap_or_default();
                host.reuse = reply.reuse == Some(true);
                Ok(host)
            }
            _ => Err(RunError::Driver(format!(
                "driver {name}: the init reply needs `implementation` and `kinds`"
            ))),
        }
    }

    /// The failure that ended the driver, if one did.
    pub fn fatal(&self) -> Option<String> {
        self.shared.state.lock().fatal.clone()
    }

    /// Its program and arguments.
    pub fn command(&self) -> &[String] {
        &self.command
    }

    /// Runs it served before the current one (the `run` of its last `reset`).
    pub fn served_runs(&self) -> u64 {
        self.shared.state.lock().run
    }

    /// Whether it failed, or stopped answering: such a process is never reused.
    pub(crate) fn failed(&self) -> bool {
        self.shared.state.lock().fatal.is_some()
    }

    /// Says `reset` (the next run is the current one plus one) and waits,
    /// boundedly, for the reply. True if the process may serve that run.
    pub(crate) async fn reset(&self) -> bool {
        let next = self.shared.state.lock().run + 1;
        let answered = tokio::time::timeout(
            SHUTDOWN_TIMEOUT,
            self.call(u64::MAX, Op::Reset { run: next }),
        )
        .await;
        match answered {
            Ok(Ok(_)) if !self.failed() => true,
            Ok(Ok(_)) => false,
            Ok(Err(e)) => {
                tracing::warn!(
                    "driver {}: reset failed ({e}); it serves no more runs",
                    self.shared.name
                );
                false
            }
            Err(_) => {
                tracing::warn!(
                    "driver {}: no answer to reset in {}s; it serves no more runs",
                    self.shared.name,
                    SHUTDOWN_TIMEOUT.as_secs()
                );
                false
            }
        }
    }

    /// Sends a request of run `run` and waits for its reply. `Err` is an
    /// error reply, or (code `DriverFailed`) the driver's failure, or
    /// (`RunOver`) a request of a run the process no longer serves, which is
    /// not sent. `reset` is sent whatever `run` says, and starts its run.
    async fn call(&self, run: u64, op: Op) -> Result<Reply, OpError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        let mut line =
            serde_json::to_string(&Request { id, op: op.clone() }).expect("requests serialize");
        line.push('\n');
        {
            // The run is checked, and a reset starts its run, under the stdin
            // lock: no request of a run can be written after the reset that
            // ended it.
            let mut stdin = self.stdin.lock().await;
            {
                let mut st = self.shared.state.lock();
                if let Some(f) = &st.fatal {
                    return Err(OpError::indefinite("DriverFailed", f.clone()));
                }
                if let Op::Reset { run: next } = op {
                    // The finished run's outstanding requests will never be
                    // answered to anyone: their late replies are dropped by id.
                    st.pending.clear();
                    st.opened.clear();
                    st.crashed.clear();
                    st.run = next;
                    st.run_first_id = id;
                } else if st.run != run {
                    return Err(OpError::definite(
                        "RunOver",
                        format!("driver {}: the run is over", self.shared.name),
                    ));
                }
                if let Some(c) = op.client() {
                    st.opened.insert(c.to_string());
                    if matches!(op, Op::Crash { .. }) {
                        st.crashed.insert(c.to_string());
                    }
                }
                st.pending.insert(id, (op, tx));
            }
            let written = match stdin.as_mut() {
                Some(w) => match w.write_all(line.as_bytes()).await {
                    Ok(()) => w.flush().await,
                    Err(e) => Err(e),
                },
                None => Err(std::io::Error::other("stdin closed")),
            };
            if let Err(e) = written {
                self.shared.fail(format!(
                    "writing request {id} to its stdin: {e} (did it exit?)"
                ));
            }
        }
        match rx.await {
            Ok(r) if r.ok => Ok(r),
            Ok(r) => Err(r
                .error
                .unwrap_or_else(|| OpError::indefinite("Error", "no error given"))),
            Err(_) => Err(OpError::indefinite(
                "DriverFailed",
                self.fatal().unwrap_or_else(|| "the driver stopped".into()),
            )),
        }
    }
}

impl Host {
    /// Has the driver connect `client` to `connect` and make its lock from
    /// `lock`; returns the session id the driver reports (0 if it gives none).
    pub async fn open(
        &self,
        client: &str,
        connect: &str,
        session_timeout: Duration,
        lock: &LockSpec,
    ) -> Result<i64, OpError> {
        let r = self
            .call(Op::Open {
                client: client.to_string(),
                connect: connect.to_string(),
                session_timeout_ms: session_timeout.as_millis() as u64,
                lock: lock.clone(),
            })
            .await?;
        Ok(r.session.unwrap_or(0))
    }

    /// Has the driver acquire `client`'s lock as `role`, blocking, with a
    /// timeout or once, as `mode` says.
    pub async fn acquire(&self, client: &str, role: Role, mode: Mode) -> Result<Acquired, OpError> {
        let (mode, timeout_ms) = match mode {
            Mode::Block => ("block", None),
            Mode::Timeout(d) => ("timeout", Some(d.as_millis() as u64)),
            Mode::Try => ("try", None),
        };
        let r = self
            .call(Op::Acquire {
                client: client.to_string(),
                role: role.name().into(),
                mode: mode.into(),
                timeout_ms,
            })
            .await?;
        Ok(if r.acquired == Some(true) {
            Acquired::Held {
                node: r.node,
                session: r.session,
            }
        } else {
            Acquired::NotAcquired
        })
    }

    /// Has the driver release what `client` holds (one entry).
    pub async fn release(&self, client: &str) -> Result<(), OpError> {
        self.call(Op::Release {
            client: client.to_string(),
        })
        .await
        .map(drop)
    }

    /// Has the driver create a persistent marker node at `path`, holding
    /// `data`, through `client`'s own session.
    pub async fn touch(&self, client: &str, path: &str, data: &str) -> Result<(), OpError> {
        self.call(Op::Touch {
            client: client.to_string(),
            path: path.to_string(),
            data: data.to_string(),
        })
        .await
        .map(drop)
    }

    /// Has the driver close `client`'s session.
    pub async fn close(&self, client: &str) -> Result<(), OpError> {
        self.call(Op::Close {
            client: client.to_string(),
        })
        .await
        .map(drop)
    }

    /// Has the driver drop `client` without closing its session, and
    /// forgets the client's outstanding requests (their late replies are
    /// dropped).
    pub async fn crash(&self, client: &str) {
        let _ = self
            .call(Op::Crash {
                client: client.to_string(),
            })
            .await;
    }
}

impl Process {
    /// Says `shutdown`, waits for the process to exit (boundedly), kills it otherwise.
    pub async fn shutdown(&self) {
        // From here on the driver may exit (it does, after its reply).
        let said = tokio::time::timeout(SHUTDOWN_TIMEOUT, async {
            // Marked before it is sent: its exit after the reply is no failure.
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            let (tx, rx) = oneshot::channel();
            {
                let mut st = self.shared.state.lock();
                st.shutting_down = true;
                st.pending.insert(id, (Op::Shutdown, tx));
            }
            let mut line = serde_json::to_string(&Request {
                id,
                op: Op::Shutdown,
            })
            .expect("requests serialize");
            line.push('\n');
            if let Some(w) = self.stdin.lock().await.as_mut() {
                let _ = w.write_all(line.as_bytes()).await;
                let _ = w.flush().await;
            }
            rx.await
        })
        .await;
        *self.stdin.lock().await = None;
        let child = self.child.lock().take();
        if let Some(mut child) = child {
            let exited = tokio::time::timeout(SHUTDOWN_TIMEOUT, child.wait()).await;
            if said.is_err() || exited.is_err() {
                tracing::warn!(
                    "driver {}: did not exit after shutdown; killed",
                    self.shared.name
                );
                let _ = child.kill().await;
            }
        }
    }
}

/// A reply that breaks the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum ReplyDefect {
    #[error("an error reply (`ok: false`) without `error`")]
    ErrorWithoutError,
    #[error("the open reply has no `session`")]
    OpenWithoutSession,
    #[error("the acquire reply has no `acquired`")]
    AcquireWithoutAcquired,
}

fn check_reply(st: &State, r: &Reply, op: &Op) -> Result<(), ReplyDefect> {
    if !r.ok {
        return match &r.error {
            Some(_) => Ok(()),
            None => Err(ReplyDefect::ErrorWithoutError),
        };
    }
    match op {
        Op::Open { .. } if r.session.is_none() => Err(ReplyDefect::OpenWithoutSession),
        Op::Acquire { .. } if r.acquired.is_none() => Err(ReplyDefect::AcquireWithoutAcquired),
        _ => {
            let _ = st;
            Ok(())
        }
    }
}

async fn read_stdout(shared: Arc<Shared>, stdout: tokio::process::ChildStdout) {
    let mut lines = BufReader::new(stdout).lines();
    let mut n = 0u64;
    loop {
        let line = match lines.next_line().await {
            Ok(Some(l)) => l,
            Ok(None) => {
                // Let its last words on stderr arrive first.
                let mut closed = shared.stderr_closed.subscribe();
                let _ = tokio::time::timeout(Duration::from_secs(1), closed.wait_for(|c| *c)).await;
                shared.fail("exited (its stdout closed) before the run ended".into());
                return;
            }
            Err(e) => {
                shared.fail(format!("reading its stdout after line {n}: {e}"));
                return;
            }
        };
        n += 1;
        if line.trim().is_empty() {
            continue;
        }
        let parsed: Line = match serde_json::from_str(&line) {
            Ok(l) => l,
            Err(e) => {
                let shown: String = line.chars().take(200).collect();
                shared.fail(format!(
                    "stdout line {n} is not a protocol message ({e}): {shown}"
                ));
                return;
            }
        };
        match parsed {
            Line::Reply(r) => {
                let mut st = shared.state.lock();
                let Some((op, tx)) = st.pending.remove(&r.id) else {
                    if r.id < st.run_first_id {
                        // An earlier run's request, answered after the reset.
                        tracing::debug!(driver = %shared.name, "dropped a reply of an earlier run: {line}");
                        continue;
                    }
                    drop(st);
                    shared.fail(format!(
                        "stdout line {n}: a reply to id {}, which is not an outstanding request",
                        r.id
                    ));
                    return;
                };
                if let Err(why) = check_reply(&st, &r, &op) {
                    drop(st);
                    shared.fail(format!("stdout line {n}: {why}: {line}"));
                    return;
                }
                let crashed = op.client().is_some_and(|c| st.crashed.contains(c))
                    && !matches!(op, Op::Crash { .. });
                drop(st);
                if !crashed {
                    let _ = tx.send(r);
                }
            }
            Line::Event(e) => {
                let client = match &e {
                    Event::State { client, .. } | Event::Lock { client, .. } => Some(client),
                    Event::Log { client, .. } => client.as_ref(),
                };
                // The run the event is about: an earlier run's is dropped. The
                // run is checked and the sink taken under one lock, so that an
                // earlier run's event never reaches a later run's views.
                let tag: RunTag = serde_json::from_str(&line).unwrap_or_default();
                let st = shared.state.lock();
                let run = st.run;
                let why = match tag.run {
                    Some(r) if r < run => {
                        tracing::debug!(driver = %shared.name, "dropped an event of run {r}: {line}");
                        continue;
                    }
                    Some(r) if r > run => {
                        Some(format!("an event of run {r}, but the run is {run}"))
                    }
                    None if run > 0 && !matches!(e, Event::Log { .. }) => {
                        Some("an event without `run` after a reset".to_string())
                    }
                    _ => match client {
                        Some(c) if !st.opened.contains(c) => {
                            Some(format!("an event for client {c:?}, which was never opened"))
                        }
                        Some(c) if st.crashed.contains(c) => continue,
                        _ => None,
                    },
                };
                if let Some(why) = why {
                    drop(st);
                    shared.fail(format!("stdout line {n}: {why}: {line}"));
                    return;
                }
                let sink = st.sink.clone();
                drop(st);
                if let Event::Log { client, message } = &e {
                    tracing::debug!(driver = %shared.name, client = ?client, "{message}");
                }
                if let Some(sink) = sink {
                    sink(e);
                }
            }
        }
    }
}

async fn read_stderr(shared: Arc<Shared>, stderr: tokio::process::ChildStderr) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(driver = %shared.name, "stderr: {line}");
        let mut st = shared.state.lock();
        st.stderr.push_back(line.chars().take(300).collect());
        if st.stderr.len() > STDERR_TAIL {
            st.stderr.pop_front();
        }
    }
    shared.stderr_closed.send_replace(true);
}
