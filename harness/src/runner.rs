//! Plays one scenario: starts the target, runs the clients and the
//! timeline, then checks the invariants.

use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;
use zookeeper_client as zk;

use crate::check;
use crate::error::RunError;
use crate::implementation::protocol::{ConnState, ErrorClass, Event as LibEvent, LockSpec};
use crate::implementation::{self, Acquired, Host, Implementation, Mode, View, Views};
use crate::journal::{Event, Journal};
use crate::record::{ClientCounters, ClientInfo, End, Marker, RunRecord};
use crate::report::{FaultRecord, Outcome, Status};
use crate::scenario::{Group, Loaded, OnExpiry, Step};
use crate::target::{Target, TargetSpec};

/// How to run scenarios.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Where.
    pub target: TargetSpec,
    /// Overrides the scenarios' seeds.
    pub seed: Option<u64>,
    /// The lock implementation under test.
    pub implementation: Implementation,
    /// Acquisitions so far in the running scenario, for a progress display.
    pub progress: Option<Arc<std::sync::atomic::AtomicUsize>>,
    /// Driver processes shared by successive runs (None: a fresh driver
    /// process for each run, shut down after it).
    pub pool: Option<Arc<implementation::HostPool>>,
}

impl RunOptions {
    /// The embedded mock, zk-lock in process, this seed.
    pub fn mock(seed: Option<u64>) -> RunOptions {
        RunOptions {
            target: TargetSpec::Mock,
            seed,
            implementation: Implementation::ZkLock,
            progress: None,
            pool: None,
        }
    }
}

pub(crate) struct Ctx {
    pub(crate) loaded: Loaded,
    /// The run's seed.
    pub(crate) seed: u64,
    pub(crate) target: Target,
    pub(crate) host: Host,
    pub(crate) views: Arc<Views>,
    pub(crate) lock_spec: LockSpec,
    /// Clients whose sessions are open (closed ones and crashed ones leave).
    pub(crate) open: Mutex<BTreeSet<String>>,
    pub(crate) journal: Journal,
    pub(crate) dir: String,
    pub(crate) res_dir: String,
    pub(crate) session_timeout: Duration,
    pub(crate) markers: Mutex<BTreeMap<String, Marker>>,
    pub(crate) tasks: Mutex<BTreeMap<String, JoinHandle<()>>>,
    pub(crate) crashed: Mutex<BTreeSet<String>>,
    pub(crate) faults: Mutex<Vec<FaultRecord>>,
    pub(crate) last_fault_end: Mutex<Duration>,
    pub(crate) deadline: Instant,
    /// Sessions opened in the connect phase, not yet taken by their clients.
    pub(crate) preopened: Mutex<BTreeMap<String, i64>>,
    /// When the connect phase ended: the scenario's clock starts here.
    pub(crate) t0: Mutex<Duration>,
    /// Request faults aimed at clients not yet connected (mock).
    pub(crate) pending_faults: Mutex<Vec<(String, crate::fault::RequestFault)>>,
    /// Timeline steps whose action is under way.
    pub(crate) acting: std::sync::atomic::AtomicUsize,
}

impl std::fmt::Debug for Ctx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("scenario", &self.loaded.name)
            .finish()
    }
}

impl Ctx {
    fn fault_until(&self, end: Duration) {
        let mut l = self.last_fault_end.lock();
        *l = (*l).max(end);
    }
}

/// Runs one scenario to its outcome. Never panics on a scenario's behalf:
/// anything that goes wrong is in the outcome.
pub async fn run(loaded: &Loaded, opts: &RunOptions) -> Outcome {
    let started = Instant::now();
    let seed = opts
        .seed
        .or(loaded.scenario.server.seed)
        .unwrap_or_else(rand::random);
    let mut outcome = Outcome::new(loaded, &opts.target, &opts.implementation, seed);
    if let Some(skip) = &loaded.scenario.skip {
        if skip.on.iter().any(|t| t == opts.target.kind()) {
            outcome.status = Status::Skipped;
            outcome.errors.push(skip.because.clone());
            return outcome;
        }
    }
    if let Some(why) = opts.target.cannot_play(&loaded.scenario) {
        outcome.status = Status::Skipped;
        outcome.errors.push(why);
        return outcome;
    }
    let target = match Target::start(&opts.target, loaded, seed).await {
        Ok(t) => t,
        Err(e) => {
            outcome.status = Status::Error;
            outcome.errors.push(e.to_string());
            return outcome;
        }
    };
    let journal = Journal::new(Instant::now()).with_progress(opts.progress.clone());
    let views = Arc::new(Views::default());
    let host = {
        let (views, journal) = (views.clone(), journal.clone());
        let sink_views = views.clone();
        let host = Host::start(
            &opts.implementation,
            opts.pool.as_ref(),
            views,
            Arc::new(move |e: &LibEvent| note_session(&sink_views, &journal, e)),
        )
        .await;
        match host {
            Ok(h) => h,
            Err(e) => {
                outcome.status = Status::Error;
                outcome.errors.push(e.to_string());
                return outcome;
            }
        }
    };
    outcome.implementation_version = host.offer().implementation;
    if let Some(why) = host.offer().cannot_run(loaded) {
        host.shutdown().await;
        outcome.status = Status::Skipped;
        outcome.errors.push(why);
        return outcome;
    }
    let deadline_len = loaded
        .scenario
        .deadline
        .map(|d| d.0)
        .unwrap_or(Duration::from_secs(crate::scenario::DEFAULT_DEADLINE_SECS));
    let ctx = Arc::new(Ctx {
        dir: loaded.lock_dir(),
        res_dir: loaded.resource_dir(),
        session_timeout: loaded.scenario.server.session_timeout.0,
        loaded: loaded.clone(),
        seed,
        target,
        host,
        views,
        lock_spec: implementation::lock_spec(loaded),
        open: Mutex::default(),
        journal,
        markers: Mutex::default(),
        tasks: Mutex::default(),
        crashed: Mutex::default(),
        faults: Mutex::default(),
        last_fault_end: Mutex::default(),
        deadline: Instant::now() + deadline_len,
        acting: Default::default(),
        pending_faults: Mutex::default(),
        preopened: Mutex::default(),
        t0: Mutex::default(),
    });
    let result = play(&ctx).await;
    // The scenario is over: every session still open ends now, as the
    // application's process would end.
    ctx.host.shutdown().await;
    outcome.duration_ms = started.elapsed().as_secs_f64() * 1000.0;
    let result = match (result, ctx.host.fatal()) {
        (_, Some(fatal)) => Err(RunError::Driver(fatal)),
        (r, None) => r,
    };
    match result {
        Ok(end) => {
            let record = record(&ctx, &outcome, end);
            check::judge(&record).apply(&record, &mut outcome);
            outcome.record = Some(Box::new(record));
        }
        Err(e) => {
            outcome.status = Status::Error;
            outcome.errors.push(e.to_string());
        }
    }
    outcome
}

/// Logs a client's new session in the journal (once per session), from an
/// event of its library or from `open`'s reply.
fn note_session(views: &Views, journal: &Journal, e: &LibEvent) {
    if let LibEvent::State {
        client,
        state: ConnState::Connected | ConnState::Reconnected,
        session: Some(s),
    } = e
    {
        if views.get(client).session != *s {
            journal.log(client, Event::Connected { session: *s });
        }
    }
}

/// Everything the run produced, as data for the checks.
fn record(ctx: &Ctx, o: &Outcome, end: End) -> RunRecord {
    let loaded = &ctx.loaded;
    let clients = loaded
        .scenario
        .clients
        .iter()
        .flat_map(|g| {
            loaded.members(&g.value).into_iter().map(|name| ClientInfo {
                name,
                role: g.value.role,
            })
        })
        .collect();
    let (notifications, children_reads) = ctx.host.counters();
    RunRecord {
        format: crate::record::FORMAT,
        scenario: loaded.name.clone(),
        file: o.file.clone(),
        recipe: o.recipe.to_string(),
        replay: o.replay.clone(),
        seed: ctx.seed,
        target: o.target.to_string(),
        implementation: ctx.host.offer().implementation,
        dir: ctx.dir.clone(),
        res_dir: ctx.res_dir.clone(),
        clients,
        invariants: loaded.scenario.invariants.clone(),
        expect_violated: loaded
            .scenario
            .expect
            .violated_by(&o.implementation)
            .to_vec(),
        journal: ctx.journal.entries(),
        history: ctx.target.history(&[ctx.dir.clone(), ctx.res_dir.clone()]),
        faults: ctx.faults.lock().clone(),
        markers: ctx.markers.lock().clone(),
        crashed: ctx.crashed.lock().clone(),
        end,
        request_faults: loaded
            .scenario
            .timeline
            .iter()
            .any(|s| !s.value.request_faults().is_empty()),
        request_faults_fired: ctx.target.faults_fired(),
        counters: ClientCounters {
            notifications,
            children_reads,
        },
    }
}

async fn connect(cs: &str, timeout: Duration) -> Result<zk::Client, zk::Error> {
    zk::Client::connector()
        .with_session_timeout(timeout)
        .connect(cs)
        .await
}

async fn play(ctx: &Arc<Ctx>) -> Result<End, RunError> {
    let admin_cs = ctx.target.admin_connect_string();
    let admin_timeout = Duration::from_millis(crate::target::ADMIN_TIMEOUT_MS as u64);
    let mut admin = connect(&admin_cs, admin_timeout)
        .await
        .map_err(|e| RunError::zk(format!("harness session to {admin_cs}"), e))?;
    let opts = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    for dir in [&ctx.dir, &ctx.res_dir] {
        match admin.mkdir(dir, &opts).await {
            Ok(()) | Err(zk::Error::NodeExists) => {}
            Err(e) => return Err(RunError::zk(format!("creating {dir}"), e)),
        }
    }
    if let Some(next) = ctx.loaded.scenario.server.sequence_start {
        ctx.target.set_sequence_counter(&ctx.dir, next)?;
    }
    // The connect phase: every client that starts on its own connects its
    // session first, as an application is up before it contends for the
    // lock; the scenario's clock (`at`, `start`) runs from the end of it.
    // A driver that is slow to connect (a JVM) then plays the same
    // scenario as a fast one.
    let mut opening = Vec::new();
    for g in &ctx.loaded.scenario.clients {
        if g.value.on_stampede {
            continue;
        }
        for name in ctx.loaded.members(&g.value) {
            let ctx2 = ctx.clone();
            opening.push(tokio::spawn(async move {
                let s = open_session(&ctx2, &name).await;
                (name, s)
            }));
        }
    }
    for o in opening {
        if let Ok((name, Some(session))) = o.await {
            ctx.preopened.lock().insert(name, session);
        }
    }
    *ctx.t0.lock() = ctx.journal.now();
    // The timeline.
    let mut steps = Vec::new();
    for (i, step) in ctx.loaded.scenario.timeline.iter().enumerate() {
        let ctx2 = ctx.clone();
        let step = step.value.clone();
        let label = describe_step(i, &step);
        // Set once the step's action is done: its task is then finishing,
        // and is waited for rather than counted as never run.
        let acted = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let acted2 = acted.clone();
        // Set once the step's trigger came (before its `after`): an
        // anchored step still waiting for it at the deadline is told apart
        // from one whose trigger came too late to act.
        let triggered = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let triggered2 = triggered.clone();
        steps.push(StepTask {
            anchored: step.on.is_some(),
            label,
            acted,
            triggered,
            handle: tokio::spawn(
                async move { run_step(ctx2, i, step, &acted2, &triggered2).await },
            ),
        });
    }
    // The clients that start on their own.
    for g in &ctx.loaded.scenario.clients {
        if !g.value.on_stampede {
            start_group(
                ctx,
                &g.value,
                g.value.start.map(|d| d.0).unwrap_or_default(),
            );
        }
    }
    // Wait for every client task, including those stampedes start later.
    loop {
        let all_started_done = {
            let tasks = ctx.tasks.lock();
            let stampedes_pending = steps
                .iter()
                .any(|st| st.label.contains("stampede") && !st.handle.is_finished());
            let acting = ctx.acting.load(std::sync::atomic::Ordering::SeqCst) > 0;
            !stampedes_pending && !acting && tasks.values().all(JoinHandle::is_finished)
        };
        if all_started_done || Instant::now() >= ctx.deadline {
            break;
        }
        let mut changed = ctx.journal.subscribe();
        tokio::select! {
            _ = changed.changed() => {}
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
    }
    let mut unfinished = Vec::new();
    for (name, task) in ctx.tasks.lock().iter() {
        if !task.is_finished() {
            unfinished.push(name.clone());
            task.abort();
        }
    }
    let mut steps_not_run = Vec::new();
    let mut untriggered = Vec::new();
    for st in steps {
        let acted = st.acted.load(std::sync::atomic::Ordering::SeqCst);
        if !st.handle.is_finished() && !acted {
            st.handle.abort();
            if st.anchored && !st.triggered.load(std::sync::atomic::Ordering::SeqCst) {
                untriggered.push(st.label.clone());
            }
            steps_not_run.push(st.label);
        } else if !st.handle.is_finished() {
            // It acted, and waits for the event that opens its hold: that
            // event did not come before the clients were done.
            st.handle.abort();
            tracing::debug!(step = %st.label, "its hold's event never came");
        } else if let Ok(Err(e)) = st.handle.await {
            steps_not_run.push(format!("{}: {e}", st.label));
        }
    }
    // What a hold still holds goes on: the sessions end next.
    ctx.target.open_all_gates();
    // Orphans: lock nodes left once every client is done (their sessions
    // still open). Crashed clients' nodes go when their sessions expire:
    // give those until the crash's effect ends.
    // An expiry whose deletions the mock applies late (`expiry_cleanup_delay`)
    // has not left orphans until that delay is over.
    let settle_until = {
        let crashed = !ctx.crashed.lock().is_empty();
        let end = *ctx.last_fault_end.lock();
        let crash_end = crashed.then(|| Instant::now() + end.saturating_sub(ctx.journal.now()));
        // A crashed client's session expires at the crash's end, and its
        // deletions come that much later again (plus a tick or two).
        let late_cleanup = ctx.loaded.scenario.server.expiry_cleanup_delay.map(|d| {
            crash_end.unwrap_or_else(Instant::now)
                + d.0
                + ctx.loaded.scenario.server.tick_time.0 * 4
        });
        // A client whose library gave its session up (it could not get back
        // in time) may be ahead of the server, which expires the session
        // on its own clock a little later: its node goes then.
        let given_up = ctx
            .journal
            .entries()
            .iter()
            .any(|e| matches!(e.event, Event::Expired))
            .then(|| {
                Instant::now() + ctx.session_timeout + ctx.loaded.scenario.server.tick_time.0 * 4
            });
        crash_end.max(late_cleanup).max(given_up)
    };
    let listing_deadline = Instant::now() + admin_timeout / 2;
    let orphans = loop {
        let children = match lock_nodes_left(&admin, &ctx.dir).await {
            Ok(c) => c,
            Err(zk::Error::SessionExpired) => {
                // A server that could not keep up expired the harness's own
                // session: look with a new one.
                tracing::warn!("the harness's own session expired; connecting again");
                admin = connect(&admin_cs, admin_timeout)
                    .await
                    .map_err(|e| RunError::zk(format!("harness session to {admin_cs}"), e))?;
                continue;
            }
            // The harness's own connection went (a refusal of connections
            // still on, a loaded machine): its client reconnects within the
            // session; look again.
            Err(e @ (zk::Error::ConnectionLoss | zk::Error::Custom(_)))
                if Instant::now() < listing_deadline =>
            {
                tracing::debug!("listing {} at the end: {e}; again", ctx.dir);
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            Err(e) => return Err(RunError::zk(format!("listing {} at the end", ctx.dir), e)),
        };
        match settle_until {
            Some(until) if !children.is_empty() && Instant::now() < until => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            _ => break children,
        }
    };
    let admin_session = admin.session_id().0;
    Ok(End {
        orphans,
        unfinished,
        steps_not_run,
        untriggered,
        admin_session,
    })
}

/// A timeline step's task, and what the end of the run needs to know of it.
struct StepTask {
    label: String,
    /// Anchored to an event (`on:`), not to a time.
    anchored: bool,
    /// Its trigger came.
    triggered: Arc<std::sync::atomic::AtomicBool>,
    /// Its action is done.
    acted: Arc<std::sync::atomic::AtomicBool>,
    handle: JoinHandle<Result<(), RunError>>,
}

/// The lock nodes left under `dir`, relative to it.
async fn lock_nodes_left(admin: &zk::Client, dir: &str) -> Result<Vec<String>, zk::Error> {
    Ok(crate::target::lock_nodes_under(admin, dir)
        .await?
        .into_iter()
        .map(|(p, _)| p[dir.len() + 1..].to_string())
        .collect())
}

fn describe_step(i: usize, step: &Step) -> String {
    let when = match (&step.at, &step.on) {
        (Some(at), _) => format!("at {at}"),
        (_, Some(on)) => {
            if let Some(h) = &on.holds {
                format!("on holds {h}")
            } else if let Some(w) = &on.waiting {
                format!("on waiting {w}")
            } else {
                format!("on acquisitions {}", on.acquisitions.unwrap_or(0))
            }
        }
        _ => String::new(),
    };
    let (name, arg) = step
        .action()
        .into_iter()
        .next()
        .unwrap_or(("?", String::new()));
    format!("step {} ({when}: {name} {arg})", i + 1)
}

fn start_group(ctx: &Arc<Ctx>, g: &Group, delay: Duration) {
    for name in ctx.loaded.members(g) {
        let ctx2 = ctx.clone();
        let g2 = g.clone();
        let n2 = name.clone();
        let task = tokio::spawn(async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            client_task(ctx2, n2, g2).await;
        });
        ctx.tasks.lock().insert(name, task);
    }
}

/// The clients a selector names, among those started.
fn resolve(ctx: &Ctx, sel: &str) -> Vec<String> {
    let started: Vec<String> = ctx.tasks.lock().keys().cloned().collect();
    let crashed = ctx.crashed.lock().clone();
    let live = |c: &String| !crashed.contains(c);
    match sel {
        "ALL" => started.into_iter().filter(live).collect(),
        "HOLDER" => ctx.journal.holders(),
        "WAITERS" => ctx.journal.waiting(),
        name => {
            let group = ctx
                .loaded
                .scenario
                .clients
                .iter()
                .find(|g| g.value.name == name);
            match group {
                Some(g) => ctx.loaded.members(&g.value),
                None => vec![name.to_string()],
            }
            .into_iter()
            .filter(live)
            .collect()
        }
    }
}

/// Waits for the step's time or event, then its `after`; sets `triggered`
/// as soon as the time or event came.
async fn wait_trigger(ctx: &Ctx, step: &Step, triggered: &std::sync::atomic::AtomicBool) {
    let start = ctx.journal.now();
    if let Some(at) = step.at {
        let at = *ctx.t0.lock() + at.0;
        if at > start {
            tokio::time::sleep(at - start).await;
        }
        triggered.store(true, std::sync::atomic::Ordering::SeqCst);
    } else if let Some(on) = &step.on {
        wait_event(ctx, std::slice::from_ref(on)).await;
        triggered.store(true, std::sync::atomic::Ordering::SeqCst);
    }
    if let Some(after) = step.after {
        tokio::time::sleep(after.0).await;
    }
}

/// Whether the event has happened (is the case now).
fn event_ready(ctx: &Ctx, on: &crate::scenario::Trigger) -> bool {
    if let Some(h) = &on.holds {
        let members = resolve(ctx, h);
        ctx.journal.holders().iter().any(|c| members.contains(c))
    } else if let Some(w) = &on.waiting {
        let members = resolve(ctx, w);
        let want = on.count.unwrap_or(members.len());
        let waiting: Vec<String> = ctx
            .journal
            .waiting()
            .into_iter()
            .filter(|c| members.contains(c))
            .collect();
        if waiting.len() < want {
            false
        } else {
            let sessions = ctx.journal.sessions();
            let ids: Vec<i64> = waiting
                .iter()
                .filter_map(|c| sessions.get(c).copied())
                .collect();
            match ctx.target.watching(&ctx.dir, &ids) {
                Some(n) => n >= want,
                None => true,
            }
        }
    } else {
        ctx.journal.acquisitions() >= on.acquisitions.unwrap_or(0)
    }
}

/// Waits until one of the events happens (an `on:` trigger); returns which.
async fn wait_event(ctx: &Ctx, any: &[crate::scenario::Trigger]) -> usize {
    // Without giving up the wait ends only with an event.
    wait_events(ctx, any, false).await.unwrap_or_default()
}

/// Waits until one of the events happens; returns which, or, with
/// `give_up`, `None` once none of them can come ([`event_impossible`]).
async fn wait_events(ctx: &Ctx, any: &[crate::scenario::Trigger], give_up: bool) -> Option<usize> {
    let mut changed = ctx.journal.subscribe();
    let which = loop {
        if let Some(i) = any.iter().position(|on| event_ready(ctx, on)) {
            break i;
        }
        if give_up && any.iter().all(|on| event_impossible(ctx, on)) {
            return None;
        }
        tokio::select! {
            _ = changed.changed() => {}
            // Watches are set after the journal's last event: look again soon.
            _ = tokio::time::sleep(Duration::from_millis(5)) => {}
        }
    };
    let settle = ctx.target.settle();
    if any[which].waiting.is_some() && !settle.is_zero() {
        tokio::time::sleep(settle).await;
    }
    Some(which)
}

/// Whether the event can no longer come: every client it names is done
/// (its script ended, or it crashed). An acquisition count can always come.
fn event_impossible(ctx: &Ctx, on: &crate::scenario::Trigger) -> bool {
    let Some(sel) = on.holds.as_ref().or(on.waiting.as_ref()) else {
        return false;
    };
    let members = resolve(ctx, sel);
    let tasks = ctx.tasks.lock();
    let crashed = ctx.crashed.lock();
    !members.is_empty()
        && members
            .iter()
            .all(|c| crashed.contains(c) || tasks.get(c).is_some_and(JoinHandle::is_finished))
}

async fn run_step(
    ctx: Arc<Ctx>,
    i: usize,
    step: Step,
    acted: &std::sync::atomic::AtomicBool,
    triggered: &std::sync::atomic::AtomicBool,
) -> Result<(), RunError> {
    wait_trigger(&ctx, &step, triggered).await;
    ctx.acting.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let r = act(&ctx, i, &step).await;
    // Before `acting` drops: the end of the run must not see the action
    // over and the step unfinished (CI, 2026-11-24: "crash ALL never ran"
    // for a crash that had run).
    acted.store(true, std::sync::atomic::Ordering::SeqCst);
    ctx.acting.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    let gate = r?;
    // A hold, or an expiry's held cleanup: its gate opens when the event
    // comes (the task is dropped if the run ends first; the target's end
    // opens every gate).
    if let (Some(gate), Some(until)) = (gate, step.until()) {
        // `None` once none of its events can come (a waiter whose
        // acquisition ended with its session, say, and has no round left):
        // the hold forces a race between clients, and once the clients it
        // waits for are done there is none left; holding on would stall the
        // rest for the scenario's sake, not the lock's.
        let which = wait_events(&ctx, until.triggers(), true).await;
        let t = ctx.journal.now();
        ctx.target.open_gate(gate);
        tracing::debug!(step = i + 1, gate, "released");
        let event = match which {
            Some(w) => until.triggers()[w].describe(),
            None => "none: the clients it names were done".into(),
        };
        ctx.fault_until(t);
        let mut faults = ctx.faults.lock();
        let mut clients = Vec::new();
        if let Some(f) = faults.iter_mut().find(|f| f.step == i + 1) {
            f.until_ms = t.as_secs_f64() * 1000.0;
            clients = f.clients.clone();
        }
        faults.push(FaultRecord {
            step: i + 1,
            t_ms: t.as_secs_f64() * 1000.0,
            until_ms: t.as_secs_f64() * 1000.0,
            action: "release".into(),
            argument: format!(
                "{} (on {event})",
                if step.hold.is_some() {
                    "the held requests or replies"
                } else {
                    "the expiry's deletions"
                }
            ),
            clients,
        });
    }
    Ok(())
}

/// Does the step's action; a `hold` or an expiry with `cleanup_until`
/// returns the gate that holds, for the step to open on its event.
async fn act(ctx: &Arc<Ctx>, i: usize, step: &Step) -> Result<Option<u64>, RunError> {
    let t = ctx.journal.now();
    let (action, mut arg) = step
        .action()
        .into_iter()
        .next()
        .unwrap_or(("?", String::new()));
    let sessions = ctx.journal.sessions();
    let mut targets = Vec::new();
    let mut until = t;
    let apply = |sel: &str, f: &dyn Fn(&str, i64) -> bool| -> Vec<String> {
        let mut hit = Vec::new();
        for c in resolve(ctx, sel) {
            if let Some(s) = sessions.get(&c) {
                if f(&c, *s) {
                    hit.push(c);
                }
            }
        }
        hit
    };
    let mut gate = None;
    if let Some(sel) = &step.expire {
        let clients = resolve(ctx, sel);
        // One gate holds every expired session's deletions.
        let held = step.cleanup_until.as_ref().map(|_| ctx.target.new_gate());
        gate = held;
        for c in clients {
            if let Some(s) = sessions.get(&c) {
                let expired = match held {
                    Some(g) => ctx.target.expire_until(&c, *s, g).await,
                    None => ctx.target.expire(&c, *s).await,
                };
                if expired {
                    targets.push(c);
                }
            }
        }
    } else if let Some(sel) = &step.disconnect {
        targets = apply(sel, &|c, s| ctx.target.disconnect(c, s));
    } else if let Some(stall) = &step.stall {
        targets = apply(&stall.client, &|c, s| ctx.target.stall(c, s));
        until = t + stall.duration.0;
        let ctx2 = ctx.clone();
        let stalled: Vec<(String, i64)> = targets
            .iter()
            .filter_map(|c| sessions.get(c).map(|s| (c.clone(), *s)))
            .collect();
        let d = stall.duration.0;
        tokio::spawn(async move {
            tokio::time::sleep(d).await;
            for (c, s) in stalled {
                ctx2.target.resume(&c, s);
            }
        });
    } else if let Some((fault, client)) = match (&step.hold, step.request_faults().first()) {
        (Some(h), _) => {
            let g = ctx.target.new_gate();
            gate = Some(g);
            Some((h.resolve(&ctx.dir, g), &h.client))
        }
        (None, Some((verdict, spec))) => Some((spec.resolve(verdict, &ctx.dir), &spec.client)),
        (None, None) => None,
    } {
        let fault = fault.map_err(|e| RunError::Rule(e.to_string()))?;
        let clients: Vec<Option<String>> = match client {
            Some(sel) => resolve(ctx, sel).into_iter().map(Some).collect(),
            None => vec![None],
        };
        for c in clients {
            let session = c.as_ref().and_then(|c| sessions.get(c).copied());
            match (&c, session) {
                // The mock tells clients apart by session: a fault aimed at a
                // client that has none yet waits for its first.
                (Some(name), None) if ctx.target.binds_by_session() => {
                    ctx.pending_faults
                        .lock()
                        .push((name.clone(), fault.clone()));
                }
                _ => ctx.target.request_fault(&fault, c.as_deref(), session)?,
            }
            targets.push(c.unwrap_or_else(|| "anyone".into()));
        }
    } else if let Some(d) = step.refuse_connections {
        ctx.target.refuse(true);
        until = t + d.0;
        let ctx2 = ctx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(d.0).await;
            ctx2.target.refuse(false);
        });
    } else if let Some(g) = &step.stampede {
        if let Some(group) = ctx
            .loaded
            .scenario
            .clients
            .iter()
            .find(|c| &c.value.name == g)
        {
            start_group(ctx, &group.value, Duration::ZERO);
            targets = ctx.loaded.members(&group.value);
        }
    } else if let Some(sel) = &step.crash {
        let clients = resolve(ctx, sel);
        for c in clients {
            // Silence the connection first so that no closeSession gets out,
            // then the process is gone: the session expires on its own.
            if let Some(s) = sessions.get(&c) {
                ctx.target.stall(&c, *s);
            }
            ctx.crashed.lock().insert(c.clone());
            if let Some(task) = ctx.tasks.lock().get(&c) {
                task.abort();
            }
            ctx.host.crash(&c).await;
            ctx.open.lock().remove(&c);
            targets.push(c);
        }
        until = t + ctx.session_timeout * 2;
    } else if let Some(chaos) = &step.chaos {
        until = t + chaos.duration.0;
        targets = nemesis(ctx, i, chaos).await;
    } else if let Some((verb, r)) = [
        ("kill", &step.kill_server),
        ("restart", &step.restart_server),
        ("partition", &step.partition_server),
        ("heal", &step.heal_server),
    ]
    .into_iter()
    .find_map(|(verb, r)| r.as_ref().map(|r| (verb, r)))
    {
        if let Some(i) = server_of(ctx, r, &sessions) {
            ctx.target.server_verb(verb, i).await?;
            targets.push(format!("server {i}"));
        }
    } else if let Some(l) = &step.lag {
        if let Some(i) = server_of(ctx, &l.server, &sessions) {
            if ctx.target.lag(i, l.lag())? {
                targets.push(format!("server {i}"));
            } else {
                // The leader cannot lag: the step names no one it reached.
                arg = format!("{arg} (refused: server {i} leads)");
            }
        }
    } else if let Some(window) = step.leader_election {
        ctx.target.leader_election(window.0)?;
        until = t + window.0;
        targets.push("ALL".into());
    } else if let Some(sel) = &step.close {
        for c in resolve(ctx, sel) {
            if ctx.open.lock().remove(&c) {
                if let Err(e) = ctx.host.close(&c).await {
                    tracing::debug!(client = %c, "close: {e}");
                }
                targets.push(c);
            }
        }
    }
    for c in &targets {
        ctx.journal.log(
            c,
            Event::Fault {
                what: action.to_string(),
            },
        );
    }
    ctx.fault_until(until);
    ctx.faults.lock().push(FaultRecord {
        step: i + 1,
        t_ms: t.as_secs_f64() * 1000.0,
        until_ms: until.as_secs_f64() * 1000.0,
        action: action.to_string(),
        argument: arg,
        clients: targets,
    });
    Ok(gate)
}

/// Plays a chaos step: a schedule drawn from the run's seed (and the step's
/// number), one fault per tick on one live client. Returns the clients hit.
async fn nemesis(ctx: &Arc<Ctx>, step: usize, chaos: &crate::scenario::Chaos) -> Vec<String> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(
        ctx.seed ^ (step as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
    );
    let start = tokio::time::Instant::now();
    let stall_for = chaos
        .stall_for
        .map(|d| d.0)
        .unwrap_or(ctx.session_timeout / 3);
    let mut hit = BTreeSet::new();
    let mut tick = 0u64;
    loop {
        tokio::time::sleep_until(start + chaos.every.0 * (tick as u32 + 1)).await;
        tick += 1;
        if start.elapsed() > chaos.duration.0 || Instant::now() >= ctx.deadline {
            break;
        }
        // Draw both every tick, whether or not anyone is there, so that the
        // schedule does not depend on timing.
        let fault = chaos.faults[rng.random_range(0..chaos.faults.len())].clone();
        let pick: u64 = rng.random();
        let mut live: Vec<String> = resolve(ctx, &chaos.clients)
            .into_iter()
            .filter(|c| ctx.open.lock().contains(c))
            .collect();
        live.sort();
        if live.is_empty() {
            continue;
        }
        let c = live[(pick % live.len() as u64) as usize].clone();
        let Some(session) = ctx.journal.sessions().get(&c).copied() else {
            continue;
        };
        let t = ctx.journal.now();
        let mut until = t;
        let ok = match fault.as_str() {
            "disconnect" => ctx.target.disconnect(&c, session),
            "expire" => ctx.target.expire(&c, session).await,
            "stall" => {
                let ok = ctx.target.stall(&c, session);
                until = t + stall_for;
                let (ctx2, c2) = (ctx.clone(), c.clone());
                tokio::spawn(async move {
                    tokio::time::sleep(stall_for).await;
                    ctx2.target.resume(&c2, session);
                });
                ok
            }
            verdict => {
                // The client's next write on the lock, whichever it is.
                let family = if rng.random_bool(0.5) {
                    zk_mock::fault::OpFamily::Create
                } else {
                    zk_mock::fault::OpFamily::Delete
                };
                let fault = crate::fault::RequestFault {
                    family,
                    path: zk_mock::fault::PathMatch::Glob(zk_mock::fault::Glob::below(&ctx.dir)),
                    nth: None,
                    times: 1,
                    verdict: if verdict == "lose_reply" {
                        crate::fault::FaultVerdict::LoseReply
                    } else {
                        crate::fault::FaultVerdict::DropRequest
                    },
                };
                ctx.target
                    .request_fault(&fault, Some(&c), Some(session))
                    .is_ok()
            }
        };
        if !ok {
            continue;
        }
        ctx.journal.log(
            &c,
            Event::Fault {
                what: fault.clone(),
            },
        );
        ctx.fault_until(until.max(t + ctx.session_timeout));
        ctx.faults.lock().push(FaultRecord {
            step: step + 1,
            t_ms: t.as_secs_f64() * 1000.0,
            until_ms: until.as_secs_f64() * 1000.0,
            action: format!("chaos: {fault}"),
            argument: c.clone(),
            clients: vec![c.clone()],
        });
        hit.insert(c);
    }
    hit.into_iter().collect()
}

/// The server a step names: its index, or the server the named client's
/// session is connected to now (`None`, logged, if it has none).
fn server_of(
    ctx: &Arc<Ctx>,
    r: &crate::scenario::ServerRef,
    sessions: &std::collections::BTreeMap<String, i64>,
) -> Option<usize> {
    match r {
        crate::scenario::ServerRef::Index(i) => Some(*i),
        crate::scenario::ServerRef::Of(sel) => {
            let found = resolve(ctx, sel)
                .into_iter()
                .find_map(|c| sessions.get(&c).and_then(|s| ctx.target.server_of(*s)));
            if found.is_none() {
                tracing::warn!(client = %sel, "no connected session: no server to act on");
            }
            found
        }
    }
}

/// Connects a session for `name` (retrying until the deadline) and opens
/// its lock; logs the attempt. `None`: it could not.
async fn open_session(ctx: &Arc<Ctx>, name: &str) -> Option<i64> {
    let j = &ctx.journal;
    j.log(name, Event::Connecting);
    let server = ctx
        .loaded
        .scenario
        .clients
        .iter()
        .find(|g| ctx.loaded.members(&g.value).iter().any(|m| m == name))
        .and_then(|g| {
            g.value
                .server
                .as_ref()
                .map(crate::scenario::ServerSet::indices)
        });
    let cs = match ctx.target.connect_string(name, server.as_deref()).await {
        Ok(cs) => cs,
        Err(e) => {
            j.log(
                name,
                Event::Error {
                    message: e.to_string(),
                    indefinite: false,
                    resolved: None,
                },
            );
            return None;
        }
    };
    let session = loop {
        let deadline = tokio::time::Instant::from_std(ctx.deadline);
        let opened = tokio::time::timeout_at(
            deadline,
            ctx.host
                .open(name, &cs, ctx.session_timeout, &ctx.lock_spec),
        )
        .await
        .unwrap_or_else(|_| {
            Err(crate::implementation::protocol::OpError::indefinite(
                "Timeout",
                "no answer to open before the scenario's deadline",
            ))
        });
        match opened {
            Ok(s) => break s,
            Err(e) if e.code != "DriverFailed" && Instant::now() < ctx.deadline => {
                tracing::debug!(client = %name, "open: {e}");
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            Err(e) => {
                j.log(
                    name,
                    Event::Error {
                        message: format!("open: {e}"),
                        indefinite: e.class == ErrorClass::Indefinite,
                        resolved: None,
                    },
                );
                return None;
            }
        }
    };
    if ctx.views.get(name).session != session {
        j.log(name, Event::Connected { session });
    }
    ctx.views.opened(name, session);
    ctx.open.lock().insert(name.to_string());
    Some(session)
}

async fn client_task(ctx: Arc<Ctx>, name: String, g: Group) {
    let j = &ctx.journal;
    let mut round = 0;
    while round < g.rounds {
        let pre = ctx.preopened.lock().remove(&name);
        let session = match pre {
            Some(s) => s,
            None => match open_session(&ctx, &name).await {
                Some(s) => s,
                None => break,
            },
        };
        let pending: Vec<crate::fault::RequestFault> = {
            let mut p = ctx.pending_faults.lock();
            let (mine, rest) = std::mem::take(&mut *p)
                .into_iter()
                .partition(|(c, _)| *c == name);
            *p = rest;
            mine.into_iter().map(|(_, f)| f).collect()
        };
        for f in pending {
            if let Err(e) = ctx.target.request_fault(&f, Some(&name), Some(session)) {
                j.log(
                    &name,
                    Event::Error {
                        message: e.to_string(),
                        indefinite: false,
                        resolved: None,
                    },
                );
            }
        }
        let lost_at_open = ctx.views.get(&name).lost;
        let expired = rounds(&ctx, &name, &g, lost_at_open, &mut round).await;
        if !expired {
            break;
        }
        j.log(&name, Event::Expired);
        if g.on_expiry == OnExpiry::Stop {
            break;
        }
        // Reconnect, or Keep with a client that cannot carry on: open anew.
    }
    // The client is done, but its session stays open, as an application's
    // would, until the scenario ends.
    j.log(&name, Event::Done);
}

/// Whether the client's session has ended since it was opened.
fn expired_since(ctx: &Ctx, name: &str, lost_at_open: u64) -> bool {
    ctx.views.get(name).lost > lost_at_open || ctx.host.session_ended(name)
}

/// Plays rounds on one session; true if the session expired.
async fn rounds(
    ctx: &Ctx,
    name: &str,
    g: &Group,
    mut lost_at_open: u64,
    round: &mut usize,
) -> bool {
    let j = &ctx.journal;
    let mode = if g.try_only {
        Mode::Try
    } else if let Some(t) = g.acquire_timeout {
        Mode::Timeout(t.0)
    } else {
        Mode::Block
    };
    let reenter = implementation::reenters(&ctx.loaded);
    while *round < g.rounds {
        j.log(name, Event::Waiting { round: *round });
        match ctx.host.acquire(name, g.role, mode).await {
            Ok(Acquired::Held { node, session }) => {
                // What the client holds comes from the server: the lock node
                // its session owns, whose czxid is its fencing token. The
                // session is the one the library acquired with, when it says
                // (its event for a new session may come after its reply).
                if let Some(s) = session.filter(|s| *s != 0) {
                    if ctx.views.get(name).session != s {
                        let e = LibEvent::State {
                            client: name.to_string(),
                            state: ConnState::Connected,
                            session: Some(s),
                        };
                        note_session(&ctx.views, j, &e);
                        ctx.views.apply(&e);
                    }
                }
                ctx.views.held(name);
                let base = ctx.views.get(name);
                let (path, token) = match ctx
                    .target
                    .lock_node(base.session, &ctx.dir, node.as_deref())
                    .await
                {
                    Some((p, t)) => (Some(p), t),
                    None => (None, 0),
                };
                j.log(
                    name,
                    Event::Acquired {
                        round: *round,
                        token,
                        path,
                    },
                );
                let mut entries = 1;
                if reenter {
                    // Re-enter: must return at once, with no second node.
                    match ctx.host.acquire(name, g.role, Mode::Block).await {
                        Ok(Acquired::Held { .. }) => entries += 1,
                        Ok(Acquired::NotAcquired) => j.log(
                            name,
                            Event::Error {
                                message: "re-entering the held lock did not acquire".into(),
                                indefinite: false,
                                resolved: None,
                            },
                        ),
                        Err(e) => j.log(
                            name,
                            Event::Error {
                                message: format!("re-entering: {e}"),
                                indefinite: e.class == ErrorClass::Indefinite,
                                resolved: None,
                            },
                        ),
                    }
                }
                let left = hold(ctx, name, g, base, token, *round).await;
                j.log(name, Event::Releasing);
                let mut ok = true;
                let mut session_gone = false;
                let mut lost_said = false;
                for _ in 0..entries {
                    if let Err(e) = ctx.host.release(name).await {
                        tracing::debug!(client = %name, "release: {e}");
                        ok = false;
                        session_gone |= e.session_expired();
                        lost_said |= e.says_lock_lost();
                    }
                }
                // The library may have reported the loss after the holder
                // stopped looking (while it touched its exit marker or
                // released), by its state or by its release's error: that is
                // still its report, within the round.
                if left != HoldState::Lost
                    && (lost_said || hold_state(&base, &ctx.views.get(name)) == HoldState::Lost)
                {
                    j.log(name, Event::Lost);
                }
                j.log(name, Event::Released { ok });
                *round += 1;
                // The library's own word (its release failed for the
                // session's end) may come before its event does.
                if session_gone && g.on_expiry != OnExpiry::Keep {
                    return true;
                }
                if expired_since(ctx, name, lost_at_open) {
                    if g.on_expiry != OnExpiry::Keep {
                        return true;
                    }
                    // Keep the same client and lock: its library carries on
                    // with a new session, if it makes one by itself.
                    j.log(name, Event::Expired);
                    lost_at_open = ctx.views.get(name).lost;
                }
            }
            Ok(Acquired::NotAcquired) => {
                j.log(
                    name,
                    Event::GaveUp {
                        round: *round,
                        reason: if mode == Mode::Try { "busy" } else { "timeout" }.into(),
                    },
                );
                *round += 1;
            }
            Err(e) => {
                // A client that is dead for good (zookeeper-client after
                // expiry) is opened again, whatever on_expiry says.
                if e.code == "SessionExpired"
                    || (expired_since(ctx, name, lost_at_open) && g.on_expiry != OnExpiry::Keep)
                {
                    return true;
                }
                if expired_since(ctx, name, lost_at_open) {
                    j.log(name, Event::Expired);
                    lost_at_open = ctx.views.get(name).lost;
                }
                if e.code == "DriverFailed" {
                    return false;
                }
                let indefinite = e.class == ErrorClass::Indefinite;
                // An unknown outcome is resolved from the server: does the
                // session own a lock node now?
                let resolved = if indefinite {
                    let session = ctx.views.get(name).session;
                    Some(match ctx.target.lock_node(session, &ctx.dir, None).await {
                        Some((p, z)) => {
                            format!("the session owns {p} (czxid {z:#x}): its create happened")
                        }
                        None => "the session owns no lock node".to_string(),
                    })
                } else {
                    None
                };
                j.log(
                    name,
                    Event::Error {
                        message: e.to_string(),
                        indefinite,
                        resolved,
                    },
                );
                *round += 1;
            }
        }
    }
    false
}

/// What a holder knows about its lock right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HoldState {
    /// Held, connected.
    Held,
    /// Disconnected: the lock may or may not still be held (Curator's SUSPENDED).
    Suspended,
    /// Lost: the session expired or the node was deleted.
    Lost,
}

/// The holder's view from what its library reported since it acquired. A
/// library on another session than the one that owned the lock node when
/// it acquired has lost that node, whatever else it said.
fn hold_state(base: &View, now: &View) -> HoldState {
    if now.lost > base.lost
        || now.lock_lost > base.lock_lost
        || (base.session != 0 && now.session != base.session)
    {
        HoldState::Lost
    } else if now.suspended {
        HoldState::Suspended
    } else {
        HoldState::Held
    }
}

/// Holds the lock for the group's hold time, touching the resource on entry
/// and exit; a fenced client stops touching it while suspended or lost.
/// Returns the state it ended in.
async fn hold(ctx: &Ctx, name: &str, g: &Group, base: View, token: i64, round: usize) -> HoldState {
    let j = &ctx.journal;
    let mut view = ctx.views.watch(name);
    let until = tokio::time::Instant::now() + g.hold.0;
    let mut inside = false;
    let mut entry = 0;
    let mut last = HoldState::Held;
    loop {
        let observed = hold_state(&base, &view.borrow_and_update());
        if observed != last {
            match observed {
                HoldState::Suspended => j.log(name, Event::Suspended),
                HoldState::Lost => j.log(name, Event::Lost),
                HoldState::Held => j.log(name, Event::Resumed),
            }
            last = observed;
        }
        // An unfenced client (a negative scenario) sees the state and ignores it.
        let state = if g.fence { observed } else { HoldState::Held };
        match state {
            HoldState::Held if !inside => {
                j.enter(
                    name,
                    token,
                    format!("{}/{name}.r{round}.{entry}.enter", ctx.res_dir),
                );
                inside = true;
                marker(ctx, name, round, entry, true, token).await;
                entry += 1;
            }
            HoldState::Held => {}
            HoldState::Suspended | HoldState::Lost => {
                if inside {
                    j.abandon(name);
                    inside = false;
                }
            }
        }
        if state == HoldState::Lost {
            return state;
        }
        let now = tokio::time::Instant::now();
        if now >= until && state == HoldState::Held {
            break;
        }
        if now >= until && Instant::now() >= ctx.deadline {
            break;
        }
        tokio::select! {
            _ = tokio::time::sleep_until(until), if now < until => {}
            r = view.changed() => {
                if r.is_err() {
                    std::future::pending::<()>().await;
                }
            }
            // A suspended holder past its hold time waits for the outcome.
            _ = tokio::time::sleep(Duration::from_millis(50)), if now >= until => {}
        }
    }
    if inside {
        let path = marker(ctx, name, round, entry, false, token).await;
        j.finish(name, path);
    }
    last
}

/// Creates a marker node, through the client's own session, for the
/// server's history of the critical section; returns its path.
async fn marker(
    ctx: &Ctx,
    name: &str,
    round: usize,
    entry: usize,
    enter: bool,
    token: i64,
) -> String {
    let path = format!(
        "{}/{name}.r{round}.{entry}.{}",
        ctx.res_dir,
        if enter { "enter" } else { "exit" }
    );
    ctx.markers.lock().insert(
        path.clone(),
        Marker {
            client: name.to_string(),
            round,
            entry,
            enter,
            token,
        },
    );
    // Best effort: a marker that never reached the server is simply absent
    // from the history, which is what judges it.
    if let Err(e) = ctx.host.touch(name, &path, &format!("{token:#x}")).await {
        tracing::debug!(client = %name, "touch {path}: {e}");
    }
    path
}
