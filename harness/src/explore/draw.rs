//! Drawing a run: a workload (clients, rounds, holds, session timeout) and
//! a schedule of faults from the whole vocabulary, anchored to times and to
//! events, all from one seed, so that an exploration replays.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Map, Value};

use super::draft::{ms, Draft};
use crate::scenario::{Kind, Recipe};

/// What the drawn runs are built on.
#[derive(Debug, Clone)]
pub enum Base {
    /// Any implementation's lock of this kind, with a drawn workload.
    Kind(Kind),
    /// One of zk-lock's recipes (broken ones included), with a drawn workload.
    Recipe(Recipe),
    /// A scenario file: its workload and timeline, plus drawn fault steps.
    Scenario(Box<Draft>),
}

impl Base {
    /// The name used in run names and reports.
    pub fn label(&self) -> String {
        match self {
            Base::Kind(k) => k.name().to_string(),
            Base::Recipe(r) => r.name().to_string(),
            Base::Scenario(d) => d.name.clone().unwrap_or_else(|| "scenario".into()),
        }
    }

    /// Whether the lock queues sequential nodes in its directory, whose
    /// counter a run may start near its wrap.
    fn makes_sequential_nodes(&self) -> bool {
        match self {
            Base::Kind(k) => *k != Kind::Semaphore,
            Base::Recipe(r) => r.makes_sequential_nodes(),
            Base::Scenario(_) => false,
        }
    }

    fn kind(&self) -> Kind {
        match self {
            Base::Kind(k) => *k,
            Base::Recipe(r) => r.kind(),
            Base::Scenario(d) => d
                .lock
                .get("kind")
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .or_else(|| {
                    d.lock
                        .get("recipe")
                        .and_then(Value::as_str)
                        .and_then(Recipe::from_name)
                        .map(Recipe::kind)
                })
                .unwrap_or(Kind::Exclusive),
        }
    }
}

/// What may be drawn.
#[derive(Debug, Clone)]
pub struct Vocabulary {
    /// Servers in the ensemble (1: a single server; more adds kill,
    /// restart, lag, partition and election steps).
    pub servers: usize,
    /// The longest schedule, in fault steps.
    pub max_steps: usize,
    /// The most client groups.
    pub max_groups: usize,
    /// Whether a drawn workload may start the lock directory's sequence
    /// counter just before one of its wraps (`server.sequence_start`: from
    /// 2147483647 to -2147483648, or from -1 to 0). The mock's alone: a
    /// real server's counter cannot be set.
    pub sequence_wraps: bool,
}

impl Default for Vocabulary {
    fn default() -> Vocabulary {
        Vocabulary {
            servers: 1,
            max_steps: 3,
            max_groups: 4,
            sequence_wraps: true,
        }
    }
}

/// The seed of run `index` of the exploration seeded `seed`.
pub fn run_seed(seed: u64, index: u64) -> u64 {
    // splitmix64 of the pair: neighbouring indices get unrelated seeds.
    let mut z = seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The ZooKeeper errors `fail` steps answer with.
///
/// ConnectionLoss closes the connection before the request is applied (a
/// client hears it only when its connection goes); OperationTimeout is
/// answered as is (the Java client's request timeout); ThrottledOp is what
/// ZooKeeper 3.7+ answers to a request it shed; SessionExpired expires the
/// session for real (the mock answers it only to a session it has expired,
/// as ZooKeeper does).
pub const FAIL_CODES: [&str; 4] = [
    "ConnectionLoss",
    "OperationTimeout",
    "ThrottledOp",
    "SessionExpired",
];

/// The operations request faults hit, with the weights they are drawn with
/// (every lock creates, lists and deletes; watches use exists or getData).
const OPS: [(&str, u32); 5] = [
    ("create", 4),
    ("delete", 4),
    ("getChildren", 3),
    ("exists", 1),
    ("getData", 1),
];

fn pick<'a, T>(rng: &mut StdRng, items: &'a [T]) -> &'a T {
    &items[rng.random_range(0..items.len())]
}

fn weighted<'a>(rng: &mut StdRng, items: &'a [(&'a str, u32)]) -> &'a str {
    let total: u32 = items.iter().map(|(_, w)| w).sum();
    let mut x = rng.random_range(0..total);
    for (name, w) in items {
        if x < *w {
            return name;
        }
        x -= w;
    }
    items[0].0
}

fn millis(rng: &mut StdRng, lo: u64, hi: u64) -> Duration {
    // Round to 10 ms: the written scenario reads better, and nothing finer
    // is meant.
    let v = rng.random_range(lo..=hi);
    Duration::from_millis(v / 10 * 10)
}

/// Rounded up to whole seconds.
fn round_s(d: Duration) -> Duration {
    Duration::from_secs(d.as_secs() + u64::from(d.subsec_nanos() > 0))
}

/// Draws run `index`'s scenario.
pub fn draw(base: &Base, vocabulary: &Vocabulary, seed: u64, index: u64) -> Draft {
    let mut rng = StdRng::seed_from_u64(run_seed(seed, index));
    let mut d = match base {
        Base::Scenario(d) => {
            let mut d = (**d).clone();
            d.expect = None;
            d
        }
        _ => workload(base, vocabulary, &mut rng),
    };
    d.name = Some(format!("explore-{}-{index}", base.label()));
    d.source = Some(format!(
        "drawn by harness explore --seed {seed}, run {index}"
    ));
    let session = d.session_timeout();
    let steps = rng.random_range(1..=vocabulary.max_steps.max(1));
    for _ in 0..steps {
        let mut new = fault_steps(&d, vocabulary, session, &mut rng);
        d.timeline.append(&mut new);
    }
    // A late expiry cleanup only matters to a run with an expiry in it.
    if d.timeline.iter().any(|s| s.contains_key("expire")) && rng.random_bool(0.4) {
        let delay = millis(&mut rng, 300, 1500);
        d.server
            .get_or_insert_with(Map::new)
            .insert("expiry_cleanup_delay".into(), ms(delay));
    }
    if vocabulary.sequence_wraps && base.makes_sequential_nodes() {
        // Drawn from a generator of its own, so that every other draw of
        // the run is what it was before wraps were drawn at all.
        let mut wraps = StdRng::seed_from_u64(run_seed(seed, index) ^ WRAP_SALT);
        if let Some(start) = sequence_start(&d, &mut wraps) {
            d.server
                .get_or_insert_with(Map::new)
                .insert("sequence_start".into(), json!(start));
        }
    }
    d
}

/// Salts the generator that draws a run's sequence wrap.
const WRAP_SALT: u64 = 0x5e9_7a47;

/// One run in five starts the lock directory's counter a few numbers
/// before a wrap, so that its queue spans it: after 2147483647 comes
/// -2147483648 (a lock that sorts the suffixes as text or as signed
/// numbers misorders them, python-zk/kazoo#730), and after -1 comes 0
/// (one that sorts them as unsigned numbers, or misses ten-character
/// negative suffixes, misorders those, python-zk/kazoo#606).
fn sequence_start(d: &Draft, rng: &mut StdRng) -> Option<i32> {
    if !rng.random_bool(0.2) {
        return None;
    }
    let last_before_wrap = if rng.random_bool(0.5) { i32::MAX } else { -1 };
    // The wrap falls between the first acquisitions: at least two nodes
    // are made, and the first is at most three numbers before it.
    let before = rng.random_range(0..total_rounds(d).clamp(2, 4) - 1) as i32;
    Some(last_before_wrap - before)
}

/// A drawn workload for a kind or a recipe.
fn workload(base: &Base, vocabulary: &Vocabulary, rng: &mut StdRng) -> Draft {
    let kind = base.kind();
    let mut lock = Map::new();
    match base {
        Base::Recipe(r) => {
            lock.insert("recipe".into(), json!(r.name()));
        }
        _ => {
            lock.insert("kind".into(), json!(kind.name()));
        }
    }
    let session = *pick(rng, &[600u64, 1000, 1000, 1500]);
    let mut server = Map::new();
    server.insert("session_timeout".into(), json!(format!("{session}ms")));
    if vocabulary.servers > 1 {
        server.insert("servers".into(), json!(vocabulary.servers));
    }
    let groups = rng.random_range(2..=vocabulary.max_groups.max(2));
    let mut clients = Vec::new();
    for g in 0..groups {
        let mut c = Map::new();
        c.insert("name".into(), json!(format!("c{g}")));
        // Now and then a crowd: orderings only many contenders show. Its
        // clients hold briefly, so that the queue drains.
        let crowd = rng.random_bool(0.15);
        if crowd {
            c.insert("count".into(), json!(rng.random_range(3..=8)));
        }
        if kind == Kind::ReadWrite {
            c.insert(
                "role".into(),
                json!(if rng.random_bool(0.5) {
                    "read"
                } else {
                    "write"
                }),
            );
        }
        if g > 0 && rng.random_bool(0.5) {
            c.insert("start".into(), ms(millis(rng, 10, 400)));
        }
        let rounds = *pick(rng, &[1usize, 1, 2, 3]);
        if rounds > 1 {
            c.insert("rounds".into(), json!(rounds));
        }
        let hold = if crowd {
            millis(rng, 10, 60)
        } else {
            millis(rng, 10, 500)
        };
        c.insert("hold".into(), ms(hold));
        match rng.random_range(0..10) {
            0 | 1 => {
                c.insert("try".into(), json!(true));
            }
            2 => {
                c.insert("acquire_timeout".into(), ms(millis(rng, 100, 800)));
            }
            _ => {}
        }
        match rng.random_range(0..10) {
            0..=2 => {
                c.insert("on_expiry".into(), json!("keep"));
            }
            3 => {
                c.insert("on_expiry".into(), json!("stop"));
            }
            _ => {}
        }
        clients.push(c);
    }
    // The liveness bound: every hold of the run back to back, plus room for
    // sessions to expire and clients to come back; a stalled lock shows
    // well before the deadline, which keeps a stalled run from holding a
    // slot long.
    let holds: Duration = clients
        .iter()
        .map(|c| {
            let n = c.get("count").and_then(Value::as_u64).unwrap_or(1)
                * c.get("rounds").and_then(Value::as_u64).unwrap_or(1);
            c.get("hold")
                .and_then(super::draft::dur)
                .unwrap_or_default()
                * n as u32
        })
        .sum();
    let liveness = holds + Duration::from_millis(session) * 3 + Duration::from_secs(2);
    let deadline = liveness * 2 + Duration::from_secs(2);
    let mut invariants = Map::new();
    invariants.insert("liveness".into(), ms(round_s(liveness)));
    Draft {
        name: None,
        description: String::new(),
        source: None,
        server: Some(server),
        lock,
        clients,
        timeline: Vec::new(),
        invariants: Some(invariants),
        expect: None,
        deadline: Some(ms(round_s(deadline))),
        skip: None,
    }
}

/// A client to aim at: a member, or HOLDER / WAITERS as the step runs.
fn target(d: &Draft, rng: &mut StdRng) -> String {
    match rng.random_range(0..10) {
        0..=2 => "HOLDER".into(),
        3 => "WAITERS".into(),
        _ => {
            let g = rng.random_range(0..d.clients.len());
            let members = d.members(g);
            pick(rng, &members).clone()
        }
    }
}

/// A named client (anchors need one, not a selector).
fn member(d: &Draft, rng: &mut StdRng) -> String {
    let g = rng.random_range(0..d.clients.len());
    let members = d.members(g);
    pick(rng, &members).clone()
}

/// Acquisitions the workload makes at most.
fn total_rounds(d: &Draft) -> u64 {
    d.clients
        .iter()
        .map(|c| {
            c.get("count").and_then(Value::as_u64).unwrap_or(1)
                * c.get("rounds").and_then(Value::as_u64).unwrap_or(1)
        })
        .sum()
}

/// Roughly how long the clients are busy: the holds back to back.
fn busy_ms(d: &Draft) -> u64 {
    d.clients
        .iter()
        .map(|c| {
            let n = c.get("count").and_then(Value::as_u64).unwrap_or(1)
                * c.get("rounds").and_then(Value::as_u64).unwrap_or(1);
            let hold = c
                .get("hold")
                .and_then(super::draft::dur)
                .unwrap_or_default();
            hold.as_millis() as u64 * n
        })
        .sum()
}

/// When a step happens: a time, or an event with an optional delay after it.
fn when(d: &Draft, rng: &mut StdRng) -> Map<String, Value> {
    let mut w = Map::new();
    match rng.random_range(0..10) {
        0..=3 => {
            // Within the time the clients are busy (a step after they are
            // done never runs).
            let busy = (busy_ms(d) * 3 / 4).clamp(50, 1000);
            w.insert("at".into(), ms(millis(rng, 0, busy)));
        }
        4..=6 => {
            w.insert("on".into(), json!({"holds": member(d, rng)}));
        }
        7 | 8 => {
            w.insert("on".into(), json!({"waiting": member(d, rng)}));
        }
        _ => {
            w.insert(
                "on".into(),
                json!({"acquisitions": rng.random_range(1..=total_rounds(d).clamp(1, 3))}),
            );
        }
    }
    if w.contains_key("on") && rng.random_bool(0.3) {
        w.insert("after".into(), ms(millis(rng, 10, 300)));
    }
    w
}

/// The trigger of `step`, `by` later: a pair's second half (heal after
/// partition) follows its first whatever the first waits for.
fn later(step: &Map<String, Value>, by: Duration) -> Map<String, Value> {
    let mut w = Map::new();
    for k in ["at", "on"] {
        if let Some(v) = step.get(k) {
            w.insert(k.into(), v.clone());
        }
    }
    let after = step
        .get("after")
        .and_then(super::draft::dur)
        .unwrap_or_default();
    w.insert("after".into(), ms(after + by));
    w
}

/// One fault (two steps for a fault with an end: partition and heal, kill
/// and restart, lag and catch-up).
fn fault_steps(
    d: &Draft,
    vocabulary: &Vocabulary,
    session: Duration,
    rng: &mut StdRng,
) -> Vec<Map<String, Value>> {
    let mut actions: Vec<(&str, u32)> = vec![
        ("disconnect", 3),
        ("stall", 2),
        ("stall_long", 2),
        ("expire", 3),
        ("crash", 2),
        ("close", 1),
        ("refuse_connections", 1),
        ("lose_reply", 4),
        ("drop_request", 4),
        ("fail", 4),
        ("delay", 2),
    ];
    if vocabulary.servers > 1 {
        actions.extend([
            ("kill_server", 2),
            ("partition_server", 2),
            ("lag", 2),
            ("leader_election", 1),
        ]);
    }
    let action = weighted(rng, &actions);
    let mut step = when(d, rng);
    let mut second: Option<Map<String, Value>> = None;
    match action {
        "disconnect" | "expire" | "crash" | "close" => {
            step.insert(action.into(), json!(target(d, rng)));
        }
        "stall" | "stall_long" => {
            let for_ = if action == "stall" {
                session / 3
            } else {
                session * 3 / 2
            };
            step.insert(
                "stall".into(),
                json!({"client": target(d, rng), "for": ms(for_)}),
            );
        }
        "refuse_connections" => {
            step.insert(
                "refuse_connections".into(),
                ms(millis(rng, 200, session.as_millis() as u64 * 2)),
            );
        }
        "lose_reply" | "drop_request" | "fail" | "delay" => {
            let mut spec = Map::new();
            spec.insert("op".into(), json!(weighted(rng, &OPS)));
            // Always a client's: a fault on anyone's requests would hit the
            // harness's own session too.
            spec.insert("client".into(), json!(member(d, rng)));
            if rng.random_bool(0.3) {
                spec.insert("times".into(), json!(rng.random_range(2..=3)));
            }
            if action == "fail" {
                spec.insert("code".into(), json!(pick(rng, &FAIL_CODES)));
            }
            if action == "delay" {
                spec.insert("for".into(), ms(millis(rng, 100, 1000)));
            }
            step.insert(action.into(), Value::Object(spec));
        }
        "kill_server" | "partition_server" => {
            let server = if rng.random_bool(0.5) {
                json!(rng.random_range(0..vocabulary.servers))
            } else {
                json!("HOLDER")
            };
            let which = if rng.random_bool(0.5) {
                json!(rng.random_range(0..vocabulary.servers))
            } else {
                server.clone()
            };
            step.insert(action.into(), which.clone());
            let end = if action == "kill_server" {
                "restart_server"
            } else {
                "heal_server"
            };
            // The pair's end names the same server by index, so that it
            // ends what it began; a server named by its client is ended at
            // a time instead (its client may have moved on).
            if which.is_number() {
                let mut s2 = later(&step, millis(rng, 300, 2000));
                s2.insert(end.into(), which);
                second = Some(s2);
            }
        }
        "lag" => {
            // A follower: server 0 leads a fresh ensemble, and a leader
            // cannot lag (after an election the step may still meet one).
            let server = rng.random_range(1..vocabulary.servers.max(2));
            let by = if rng.random_bool(0.5) {
                json!({"server": server, "txns": rng.random_range(1..=5)})
            } else {
                json!({"server": server, "time": ms(millis(rng, 100, 800))})
            };
            step.insert("lag".into(), by);
            let mut s2 = later(&step, millis(rng, 300, 2000));
            s2.insert("lag".into(), json!({"server": server}));
            second = Some(s2);
        }
        "leader_election" => {
            step.insert("leader_election".into(), ms(millis(rng, 100, 800)));
        }
        _ => return Vec::new(),
    }
    let mut steps = vec![step];
    steps.extend(second);
    steps
}
