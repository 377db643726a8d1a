//! Fault rules: what the server does to a request instead of (or besides)
//! answering it normally. Rules are data — matchers plus a [`Verdict`] —
//! evaluated in install order; the first rule that fires wins.

use std::fmt;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::Rng;

use serde::{Deserialize, Serialize};

use crate::proto::{ErrorCode, OpCode};
use crate::SessionId;

/// What happens to a request a rule matches.
///
/// In JSON (the admin interface): `{"type": "delay", "ms": 500}`,
/// `{"type": "lose_reply"}`, `{"type": "disconnect"}`,
/// `{"type": "fail", "code": -101}`, `{"type": "stall"}`, `{"type": "expire"}`,
/// `{"type": "hold_reply", "gate": 1}`, `{"type": "hold_request", "gate": 1}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "VerdictJson", into = "VerdictJson")]
#[non_exhaustive]
pub enum Verdict {
    /// Apply the request, then hold its reply (and everything after it on
    /// that connection) this long.
    Delay(Duration),
    /// Apply the request, then close the connection without replying: the
    /// client sees connection loss and cannot know whether it was applied.
    LoseReply,
    /// Close the connection before applying: nothing happened.
    Disconnect,
    /// Answer with this ZooKeeper error instead of applying. The reply
    /// carries the last zxid; no zxid is consumed.
    Fail(ErrorCode),
    /// Apply the request, then stall its session: replies, pings and
    /// notifications are held and nothing more is read from it until
    /// [`ZkMock::resume`](crate::ZkMock::resume). A stall that outlasts the
    /// session timeout lets the session expire.
    Stall,
    /// Expire the request's session instead of applying the request.
    Expire,
    /// Apply the request, then hold its reply (and everything after it on
    /// that connection: replies, notifications) until the gate opens
    /// ([`HoldGate::open`](crate::HoldGate::open)). Requests are still read
    /// and applied meanwhile, pings too, so the session lives; a client
    /// whose read timeout passes first drops the connection, and what was
    /// held goes with it. A gate that is open already holds nothing.
    HoldReply(GateId),
    /// Hold the request unapplied until the gate opens, then apply and
    /// answer it. Nothing more is read from the connection meanwhile (its
    /// pings neither), so a hold that outlasts the session timeout lets the
    /// session expire, and a request held when its session ends is never
    /// applied.
    HoldRequest(GateId),
}

/// A gate made by [`ZkMock::gate`](crate::ZkMock::gate): what a
/// [`Verdict::HoldReply`] or [`Verdict::HoldRequest`] rule, or
/// [`ZkMock::expire_session_until`](crate::ZkMock::expire_session_until),
/// holds until the gate opens. In JSON, its number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct GateId(pub u64);

impl fmt::Display for GateId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "gate {}", self.0)
    }
}

impl Verdict {
    /// A short name for logs and the recorder.
    pub fn name(&self) -> String {
        match self {
            Verdict::Delay(d) => format!("delay {}ms", d.as_millis()),
            Verdict::LoseReply => "lose reply".into(),
            Verdict::Disconnect => "disconnect".into(),
            Verdict::Fail(code) => format!("fail {code:?}"),
            Verdict::Stall => "stall".into(),
            Verdict::Expire => "expire".into(),
            Verdict::HoldReply(g) => format!("hold reply until {g}"),
            Verdict::HoldRequest(g) => format!("hold request until {g}"),
        }
    }
}

/// [`Verdict`] as JSON has it.
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum VerdictJson {
    Delay { ms: u64 },
    LoseReply,
    Disconnect,
    Fail { code: i32 },
    Stall,
    Expire,
    HoldReply { gate: u64 },
    HoldRequest { gate: u64 },
}

impl TryFrom<VerdictJson> for Verdict {
    type Error = String;
    fn try_from(v: VerdictJson) -> Result<Verdict, String> {
        Ok(match v {
            VerdictJson::Delay { ms } => Verdict::Delay(Duration::from_millis(ms)),
            VerdictJson::LoseReply => Verdict::LoseReply,
            VerdictJson::Disconnect => Verdict::Disconnect,
            VerdictJson::Fail { code } => match ErrorCode::from_i32(code) {
                Some(c) if c != ErrorCode::Ok => Verdict::Fail(c),
                _ => return Err(format!("fail code {code} is not a ZooKeeper error code")),
            },
            VerdictJson::Stall => Verdict::Stall,
            VerdictJson::Expire => Verdict::Expire,
            VerdictJson::HoldReply { gate } => Verdict::HoldReply(GateId(gate)),
            VerdictJson::HoldRequest { gate } => Verdict::HoldRequest(GateId(gate)),
        })
    }
}

impl From<Verdict> for VerdictJson {
    fn from(v: Verdict) -> VerdictJson {
        match v {
            Verdict::Delay(d) => VerdictJson::Delay {
                ms: u64::try_from(d.as_millis()).unwrap_or(u64::MAX),
            },
            Verdict::LoseReply => VerdictJson::LoseReply,
            Verdict::Disconnect => VerdictJson::Disconnect,
            Verdict::Fail(c) => VerdictJson::Fail { code: c.code() },
            Verdict::Stall => VerdictJson::Stall,
            Verdict::Expire => VerdictJson::Expire,
            Verdict::HoldReply(g) => VerdictJson::HoldReply { gate: g.0 },
            Verdict::HoldRequest(g) => VerdictJson::HoldRequest { gate: g.0 },
        }
    }
}

/// How a rule matches a request's path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathMatch {
    /// Exactly this path.
    Exact(String),
    /// This path or anything whose path starts with it.
    Prefix(String),
    /// A glob: `*` matches within one path segment, `**` across segments,
    /// `?` one character (globset's syntax, so `[ab]` and `{a,b}` too).
    Glob(Glob),
    /// This node or any node below it (`/a` matches `/a` and `/a/b`, not `/ab`).
    Under(String),
}

impl PathMatch {
    /// Whether `path` matches.
    pub fn matches(&self, path: &str) -> bool {
        match self {
            PathMatch::Exact(p) => p == path,
            PathMatch::Prefix(p) => path.starts_with(p.as_str()),
            PathMatch::Glob(g) => g.matches(path),
            PathMatch::Under(p) => {
                let p = p.trim_end_matches('/');
                p.is_empty()
                    || path == p
                    || path.strip_prefix(p).is_some_and(|r| r.starts_with('/'))
            }
        }
    }
}

/// An operation as clients mean it, whichever of its op codes they send:
/// `create` is create, create2, createContainer and createTTL (kazoo sends
/// create, `zookeeper-client` create2, Curator create2 or createContainer).
/// The harness's fault steps and its proxy for a real ZooKeeper use the
/// same families, so a rule means the same on both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum OpFamily {
    /// create, create2, createContainer, createTTL.
    Create,
    /// delete (and the server's own deleteContainer).
    Delete,
    /// exists.
    Exists,
    /// getData.
    GetData,
    /// getChildren, getChildren2.
    GetChildren,
    /// setData.
    SetData,
    /// multi, multiRead.
    Multi,
    /// sync.
    Sync,
}

impl OpFamily {
    /// Every family.
    pub const ALL: [OpFamily; 8] = [
        OpFamily::Create,
        OpFamily::Delete,
        OpFamily::Exists,
        OpFamily::GetData,
        OpFamily::GetChildren,
        OpFamily::SetData,
        OpFamily::Multi,
        OpFamily::Sync,
    ];

    /// Its op codes.
    pub fn codes(self) -> &'static [OpCode] {
        match self {
            OpFamily::Create => &[
                OpCode::Create,
                OpCode::Create2,
                OpCode::CreateContainer,
                OpCode::CreateTtl,
            ],
            OpFamily::Delete => &[OpCode::Delete, OpCode::DeleteContainer],
            OpFamily::Exists => &[OpCode::Exists],
            OpFamily::GetData => &[OpCode::GetData],
            OpFamily::GetChildren => &[OpCode::GetChildren, OpCode::GetChildren2],
            OpFamily::SetData => &[OpCode::SetData],
            OpFamily::Multi => &[OpCode::Multi, OpCode::MultiRead],
            OpFamily::Sync => &[OpCode::Sync],
        }
    }

    /// The family of an op code, if it is in one.
    pub fn of(op: i32) -> Option<OpFamily> {
        OpFamily::ALL
            .into_iter()
            .find(|f| f.codes().iter().any(|c| *c as i32 == op))
    }

    /// Its name in scenario files: `create`, `getData`, ….
    pub fn name(self) -> &'static str {
        match self {
            OpFamily::Create => "create",
            OpFamily::Delete => "delete",
            OpFamily::Exists => "exists",
            OpFamily::GetData => "getData",
            OpFamily::GetChildren => "getChildren",
            OpFamily::SetData => "setData",
            OpFamily::Multi => "multi",
            OpFamily::Sync => "sync",
        }
    }

    /// The family of this name.
    ///
    /// # Errors
    /// A message listing the names.
    pub fn parse(name: &str) -> Result<OpFamily, String> {
        OpFamily::ALL
            .into_iter()
            .find(|f| f.name() == name)
            .ok_or_else(|| {
                format!(
                    "unknown operation {name:?}: expected one of {}",
                    OpFamily::ALL.map(OpFamily::name).join(", ")
                )
            })
    }
}

/// The op codes a name covers, as rules and the admin interface's request
/// filter read it: a family's name (`create`) is every op code of the family;
/// an op's own name (`create2`) is that one op code.
pub(crate) fn op_codes_named(name: &str) -> Option<Vec<OpCode>> {
    match OpFamily::parse(name) {
        Ok(family) => Some(family.codes().to_vec()),
        Err(_) => OpCode::from_name(name).map(|c| vec![c]),
    }
}

/// A path glob, compiled once (globset: matching takes time linear in the
/// path, whatever the pattern). `*` and `?` stay within a path segment, `**`
/// spans segments; `\\` escapes.
#[derive(Clone, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Glob {
    pattern: String,
    matcher: globset::GlobMatcher,
}

/// A glob that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid glob {pattern:?}: {why}")]
pub struct GlobError {
    pattern: String,
    why: String,
}

impl Glob {
    /// Compiles `pattern`.
    ///
    /// # Errors
    /// [`GlobError`] naming the pattern and what is wrong with it.
    pub fn new(pattern: &str) -> Result<Glob, GlobError> {
        let matcher = globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| GlobError {
                pattern: pattern.to_string(),
                why: e.kind().to_string(),
            })?
            .compile_matcher();
        Ok(Glob {
            pattern: pattern.to_string(),
            matcher,
        })
    }

    /// Every node below `dir` (not `dir` itself), whatever characters
    /// `dir` has.
    pub fn below(dir: &str) -> Glob {
        let pattern = format!("{}/**", globset::escape(dir.trim_end_matches('/')));
        Glob::new(&pattern).expect("an escaped path and /** is a valid glob")
    }

    /// The pattern as written.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Whether `path` matches.
    pub fn matches(&self, path: &str) -> bool {
        self.matcher.is_match(path)
    }
}

impl fmt::Debug for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Glob").field(&self.pattern).finish()
    }
}

impl fmt::Display for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.pattern)
    }
}

impl PartialEq for Glob {
    fn eq(&self, other: &Glob) -> bool {
        self.pattern == other.pattern
    }
}

impl Eq for Glob {}

impl TryFrom<String> for Glob {
    type Error = GlobError;
    fn try_from(pattern: String) -> Result<Glob, GlobError> {
        Glob::new(&pattern)
    }
}

impl From<Glob> for String {
    fn from(g: Glob) -> String {
        g.pattern
    }
}

/// Which requests a rule is for: its criteria, without a verdict. A verdict
/// method ([`lose_reply`](Self::lose_reply), [`fail`](Self::fail), …) turns
/// it into a [`Rule`], so a rule cannot be installed without one.
///
/// Every criterion is optional; with none, every request matches except
/// pings (which are timing-driven; name [`OpCode::Ping`] to match them).
/// The harness's proxy for a real ZooKeeper matches requests with this same
/// type, so a rule means the same thing on both.
///
/// ```
/// use zk_mock::fault::{OpFamily, Rule};
///
/// // The first create under /locks is applied but its reply is lost,
/// // whichever create op code the client sends.
/// let rule = Rule::when().op(OpFamily::Create).path_prefix("/locks/").nth(1).lose_reply();
/// # let _ = rule;
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Match {
    /// Op codes it is for (any but ping, if empty).
    pub ops: Vec<OpCode>,
    /// The path criterion.
    pub path: Option<PathMatch>,
    /// Only this session's requests.
    pub session: Option<SessionId>,
    /// Fire only on the n-th request that meets the criteria above (1-based).
    pub nth: Option<u64>,
    /// Fire at most this many times.
    pub times: Option<u64>,
    /// Fire with this probability (0.0–1.0), drawn from the server's seeded generator.
    pub probability: Option<f64>,
    /// Fire only in a window that opens when another rule first fires.
    pub after: Option<After>,
}

/// A window of the session clock that opens when rule `rule` first fires and
/// lasts `for_ms`: a rule with [`Match::after`] matches nothing outside it.
/// A fault followed by a lockout, as Curator's `ChaosMonkeyCnxnFactory`
/// does it (a lost reply on the first lock node, then every request's
/// connection closed for 6 s) is two rules, the second `after` the first.
/// In JSON: `"after": {"rule": 1, "for_ms": 6000}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct After {
    /// The id of the rule whose first firing opens the window (installed
    /// before this one).
    pub rule: u64,
    /// How long the window stays open, in ms of the session clock.
    pub for_ms: u64,
}

impl Match {
    /// Only within `window` of the session clock after rule `rule` (its id,
    /// as [`RuleGuard::id`](crate::RuleGuard::id) gives it) first fires.
    pub fn after(mut self, rule: u64, window: Duration) -> Self {
        self.after = Some(After {
            rule,
            for_ms: u64::try_from(window.as_millis()).unwrap_or(u64::MAX),
        });
        self
    }

    /// Also every op code of this family: `OpFamily::Create` is create,
    /// create2, createContainer and createTTL, whichever a client sends.
    pub fn op(mut self, family: OpFamily) -> Self {
        self.ops.extend_from_slice(family.codes());
        self
    }
    /// Also this one op code exactly.
    pub fn op_code(mut self, op: OpCode) -> Self {
        self.ops.push(op);
        self
    }
    /// This node and every node below it.
    pub fn path_under(mut self, path: &str) -> Self {
        self.path = Some(PathMatch::Under(path.into()));
        self
    }
    /// Exactly this path.
    pub fn path(mut self, path: &str) -> Self {
        self.path = Some(PathMatch::Exact(path.into()));
        self
    }
    /// Paths starting with `prefix`.
    pub fn path_prefix(mut self, prefix: &str) -> Self {
        self.path = Some(PathMatch::Prefix(prefix.into()));
        self
    }
    /// Paths matching a glob (`*`, `**`, `?`; see [`Glob`]).
    ///
    /// # Panics
    /// If `glob` does not parse (the message says why); give
    /// [`path_match`](Self::path_match) a checked [`Glob::new`] to handle
    /// the error instead.
    pub fn path_glob(self, glob: &str) -> Self {
        let glob = Glob::new(glob).unwrap_or_else(|e| panic!("Match::path_glob: {e}"));
        self.path_match(PathMatch::Glob(glob))
    }
    /// Any path criterion.
    pub fn path_match(mut self, m: PathMatch) -> Self {
        self.path = Some(m);
        self
    }
    /// Only this session.
    pub fn session(mut self, id: impl Into<SessionId>) -> Self {
        self.session = Some(id.into());
        self
    }
    /// Fire only on the n-th match (1-based).
    pub fn nth(mut self, n: u64) -> Self {
        self.nth = Some(n);
        self
    }
    /// Fire at most `n` times.
    pub fn times(mut self, n: u64) -> Self {
        self.times = Some(n);
        self
    }
    /// Fire with probability `p`, from the server's seed.
    pub fn probability(mut self, p: f64) -> Self {
        self.probability = Some(p);
        self
    }

    /// Verdict: apply the request and hold its reply (and what follows) `d`.
    pub fn delay(self, d: Duration) -> Rule {
        self.then(Verdict::Delay(d))
    }
    /// Verdict: apply, then close the connection without replying.
    pub fn lose_reply(self) -> Rule {
        self.then(Verdict::LoseReply)
    }
    /// Verdict: close the connection before applying.
    pub fn disconnect(self) -> Rule {
        self.then(Verdict::Disconnect)
    }
    /// Verdict: answer with an error instead of applying.
    pub fn fail(self, code: ErrorCode) -> Rule {
        self.then(Verdict::Fail(code))
    }
    /// Verdict: apply, then stall the session until resumed.
    pub fn stall(self) -> Rule {
        self.then(Verdict::Stall)
    }
    /// Verdict: expire the session instead of applying.
    pub fn expire(self) -> Rule {
        self.then(Verdict::Expire)
    }
    /// Verdict: apply, then hold the reply (and what follows) until `gate` opens.
    pub fn hold_reply(self, gate: GateId) -> Rule {
        self.then(Verdict::HoldReply(gate))
    }
    /// Verdict: hold the request unapplied until `gate` opens, then apply it.
    pub fn hold_request(self, gate: GateId) -> Rule {
        self.then(Verdict::HoldRequest(gate))
    }
    /// Any verdict.
    pub fn then(self, verdict: Verdict) -> Rule {
        Rule {
            when: self,
            verdict,
        }
    }

    /// Whether a request (op code, path, session) meets the criteria; `nth`,
    /// `times` and `probability` are [`Tally::fires`]'s to judge.
    pub fn matches(&self, op: i32, path: Option<&str>, session: Option<SessionId>) -> bool {
        let op_ok = if self.ops.is_empty() {
            op != OpCode::Ping as i32
        } else {
            self.ops.iter().any(|o| *o as i32 == op)
        };
        op_ok
            && self.session.is_none_or(|s| session.is_none_or(|r| r == s))
            && self
                .path
                .as_ref()
                .is_none_or(|m| path.is_some_and(|p| m.matches(p)))
    }

    fn validate(&self) -> Result<(), String> {
        if let Some(p) = self.probability {
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("probability must be within 0..=1, got {p}"));
            }
        }
        if self.nth == Some(0) {
            return Err("nth counts from 1".into());
        }
        Ok(())
    }

    /// A short description for messages: `create2|create under /locks/`.
    fn describe(&self) -> String {
        let ops = if self.ops.is_empty() {
            "any op".to_string()
        } else {
            self.ops
                .iter()
                .map(|o| o.name())
                .collect::<Vec<_>>()
                .join("|")
        };
        let path = match &self.path {
            None => String::new(),
            Some(PathMatch::Exact(p)) => format!(" on {p}"),
            Some(PathMatch::Prefix(p)) => format!(" on {p}…"),
            Some(PathMatch::Glob(g)) => format!(" on {g}"),
            Some(PathMatch::Under(p)) => format!(" under {p}"),
        };
        let session = self
            .session
            .map_or(String::new(), |s| format!(" of session {s:#x}"));
        let nth = self.nth.map_or(String::new(), |n| format!(", match #{n}"));
        let after = self.after.map_or(String::new(), |a| {
            format!(", within {} ms after rule {} fires", a.for_ms, a.rule)
        });
        format!("{ops}{path}{session}{nth}{after}")
    }
}

/// How many requests met a rule's criteria and how many it fired on: the
/// count behind `nth` and `times`, kept by whoever evaluates the rule (the
/// mock, or the harness's proxy).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Requests that met the criteria.
    pub matched: u64,
    /// Times it fired.
    pub fired: u64,
}

impl Tally {
    /// Counts a request that met `when`'s criteria and says whether the rule
    /// fires on it (its n-th match, budget left, and `draw(p)` true for its
    /// probability).
    pub fn fires(&mut self, when: &Match, draw: impl FnOnce(f64) -> bool) -> bool {
        self.matched += 1;
        if when.nth.is_some_and(|n| n != self.matched)
            || when.times.is_some_and(|t| self.fired >= t)
        {
            return false;
        }
        if when.probability.is_some_and(|p| !draw(p)) {
            return false;
        }
        self.fired += 1;
        true
    }
}

/// A fault rule: which requests ([`Match`]) and what happens to them
/// ([`Verdict`]). Built with [`Rule::when`] and a verdict method.
///
/// In JSON (the admin interface) the criteria and the verdict are one
/// object: `{"ops": ["create2"], "path": {"prefix": "/locks/"}, "nth": 1,
/// "verdict": {"type": "lose_reply"}}`; `ops` takes op names, family names
/// (`"create"` is every create op code) or numbers, and `session` a number
/// or a decimal or `0x` hex string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RuleJson", into = "RuleJson")]
pub struct Rule {
    /// Which requests.
    pub when: Match,
    /// What happens to them.
    pub verdict: Verdict,
}

impl Rule {
    /// Starts a rule: criteria, then a verdict.
    pub fn when() -> Match {
        Match::default()
    }

    /// Checks the rule's values.
    ///
    /// # Errors
    /// A message naming the bad field.
    pub fn validate(&self) -> Result<(), String> {
        if self.verdict == Verdict::Fail(ErrorCode::Ok) {
            return Err("fail with Ok is not an error".into());
        }
        self.when.validate()
    }

    /// What the rule does to what: for messages and logs.
    pub fn describe(&self) -> String {
        format!("{} → {}", self.when.describe(), self.verdict.name())
    }
}

/// [`Rule`] as JSON has it.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleJson {
    #[serde(default, with = "op_list", skip_serializing_if = "Vec::is_empty")]
    ops: Vec<OpCode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path: Option<PathMatch>,
    #[serde(
        default,
        deserialize_with = "session_id::deserialize",
        skip_serializing_if = "Option::is_none"
    )]
    session: Option<SessionId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    nth: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    times: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    probability: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    after: Option<After>,
    verdict: Verdict,
}

impl TryFrom<RuleJson> for Rule {
    type Error = String;
    fn try_from(j: RuleJson) -> Result<Rule, String> {
        let rule = Rule {
            when: Match {
                ops: j.ops,
                path: j.path,
                session: j.session,
                nth: j.nth,
                times: j.times,
                probability: j.probability,
                after: j.after,
            },
            verdict: j.verdict,
        };
        rule.validate()?;
        Ok(rule)
    }
}

impl From<Rule> for RuleJson {
    fn from(r: Rule) -> RuleJson {
        RuleJson {
            ops: r.when.ops,
            path: r.when.path,
            session: r.when.session,
            nth: r.when.nth,
            times: r.when.times,
            probability: r.when.probability,
            after: r.when.after,
            verdict: r.verdict,
        }
    }
}

/// What a rule sees of a request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestView<'a> {
    pub(crate) op: i32,
    pub(crate) path: Option<&'a str>,
    pub(crate) session: i64,
    /// The session clock, for [`Match::after`] windows.
    pub(crate) now_ms: u64,
}

#[derive(Debug)]
struct Installed {
    id: u64,
    rule: Rule,
    tally: Tally,
    /// When it first fired (session clock), for rules [`Match::after`] it.
    first_fired_ms: Option<u64>,
}

/// The installed rules, in install order.
#[derive(Debug, Default)]
pub(crate) struct RuleSet {
    rules: Vec<Installed>,
    next_id: u64,
}

impl RuleSet {
    pub(crate) fn install(&mut self, rule: Rule) -> u64 {
        self.next_id += 1;
        self.rules.push(Installed {
            id: self.next_id,
            rule,
            tally: Tally::default(),
            first_fired_ms: None,
        });
        self.next_id
    }

    /// Whether a rule with this id is installed.
    pub(crate) fn contains(&self, id: u64) -> bool {
        self.rules.iter().any(|r| r.id == id)
    }

    pub(crate) fn remove(&mut self, id: u64) -> bool {
        let before = self.rules.len();
        self.rules.retain(|r| r.id != id);
        self.rules.len() != before
    }

    pub(crate) fn fired(&self, id: u64) -> Option<u64> {
        self.rules
            .iter()
            .find(|r| r.id == id)
            .map(|r| r.tally.fired)
    }

    pub(crate) fn get(&self, id: u64) -> Option<(&Rule, Tally)> {
        self.rules
            .iter()
            .find(|r| r.id == id)
            .map(|r| (&r.rule, r.tally))
    }

    pub(crate) fn list(&self) -> Vec<(u64, Rule, u64)> {
        self.rules
            .iter()
            .map(|r| (r.id, r.rule.clone(), r.tally.fired))
            .collect()
    }

    /// The verdict of the first rule that fires for `req`, if any.
    pub(crate) fn evaluate(
        &mut self,
        req: &RequestView<'_>,
        rng: &mut SmallRng,
    ) -> Option<Verdict> {
        for i in 0..self.rules.len() {
            if let Some(after) = self.rules[i].rule.when.after {
                let opened = self
                    .rules
                    .iter()
                    .find(|r| r.id == after.rule)
                    .and_then(|r| r.first_fired_ms);
                let open = opened.is_some_and(|t| req.now_ms >= t && req.now_ms - t < after.for_ms);
                if !open {
                    continue;
                }
            }
            let r = &mut self.rules[i];
            if r.rule
                .when
                .matches(req.op, req.path, Some(SessionId(req.session)))
                && r.tally.fires(&r.rule.when, |p| rng.random_bool(p))
            {
                r.first_fired_ms.get_or_insert(req.now_ms);
                return Some(r.rule.verdict);
            }
        }
        None
    }
}

/// Serde for an optional session id given as a number or a string.
mod session_id {
    use serde::de::Error;
    use serde::{Deserialize, Deserializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NumberOrText {
        Number(i64),
        Text(String),
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<crate::SessionId>, D::Error> {
        match Option::<NumberOrText>::deserialize(d)? {
            None => Ok(None),
            Some(NumberOrText::Number(n)) => Ok(Some(crate::SessionId(n))),
            Some(NumberOrText::Text(t)) => t.parse().map(Some).map_err(D::Error::custom),
        }
    }
}

/// Serde for `Vec<OpCode>` as names or numbers.
mod op_list {
    use serde::de::Error;
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::proto::OpCode;

    pub(super) fn serialize<S: Serializer>(ops: &[OpCode], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(ops.iter().map(|o| o.name()))
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NameOrCode {
        Name(String),
        Code(i32),
    }

    /// Names as [`op_codes_named`](super::op_codes_named) reads them;
    /// numbers are one op code.
    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<OpCode>, D::Error> {
        let mut out: Vec<OpCode> = Vec::new();
        for v in Vec::<NameOrCode>::deserialize(d)? {
            let codes: Vec<OpCode> = match v {
                NameOrCode::Code(c) => vec![OpCode::from_i32(c)
                    .ok_or_else(|| D::Error::custom(format!("unknown op code {c}")))?],
                NameOrCode::Name(n) => super::op_codes_named(&n)
                    .ok_or_else(|| D::Error::custom(format!("unknown op name {n:?}")))?,
            };
            for c in codes {
                if !out.contains(&c) {
                    out.push(c);
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn view(op: OpCode, path: &'static str) -> RequestView<'static> {
        RequestView {
            op: op as i32,
            path: Some(path),
            session: 1,
            now_ms: 0,
        }
    }

    #[test]
    fn families_cover_every_op_code_clients_send_for_an_operation() {
        assert_eq!(OpFamily::of(OpCode::Create as i32), Some(OpFamily::Create));
        assert_eq!(OpFamily::of(OpCode::Create2 as i32), Some(OpFamily::Create));
        assert_eq!(
            OpFamily::of(OpCode::CreateContainer as i32),
            Some(OpFamily::Create)
        );
        assert_eq!(
            OpFamily::of(OpCode::GetChildren2 as i32),
            Some(OpFamily::GetChildren)
        );
        assert_eq!(OpFamily::of(OpCode::Ping as i32), None);
        for f in OpFamily::ALL {
            assert_eq!(OpFamily::parse(f.name()), Ok(f));
        }
        assert!(OpFamily::parse("creat")
            .unwrap_err()
            .contains("getChildren"));
        let m = Rule::when().op(OpFamily::Create);
        assert!(m.matches(OpCode::Create as i32, Some("/a"), None));
        assert!(m.matches(OpCode::Create2 as i32, Some("/a"), None));
        assert!(m.matches(OpCode::CreateTtl as i32, Some("/a"), None));
        assert!(!m.matches(OpCode::Delete as i32, Some("/a"), None));
        // One op code exactly, when that is what is meant.
        let exact = Rule::when().op_code(OpCode::Create2);
        assert!(!exact.matches(OpCode::Create as i32, Some("/a"), None));
    }

    #[test]
    fn under_matches_the_node_and_below_only() {
        let m = PathMatch::Under("/locks/a".into());
        assert!(m.matches("/locks/a"));
        assert!(m.matches("/locks/a/x-01"));
        assert!(!m.matches("/locks/ab"));
        assert!(!m.matches("/locks/a.resource/x"));
        assert!(PathMatch::Under("/".into()).matches("/anything"));
    }

    #[test]
    fn globs_respect_segments() {
        let glob = |p: &str, path: &str| Glob::new(p).unwrap().matches(path);
        assert!(glob("/locks/*", "/locks/a"));
        assert!(!glob("/locks/*", "/locks/a/b"));
        assert!(glob("/locks/**", "/locks/a/b"));
        assert!(!glob("/locks/**", "/locks"));
        assert!(glob("/l?cks/*-0*", "/locks/x-0000000001"));
        assert!(!glob("/locks/?", "/locks/ab"));
        assert!(!glob("/locks/?", "/locks//"));
        // Whatever a directory's name holds, below() takes it literally.
        let odd = Glob::below("/a[1]{x,y}*");
        assert!(odd.matches("/a[1]{x,y}*/n"));
        assert!(!odd.matches("/a1x/n"));
        assert!(!odd.matches("/a[1]{x,y}*"));
        // Linear, not exponential, on a hostile pattern.
        let hostile = Glob::new(&format!("/{}", "*a".repeat(30))).unwrap();
        assert!(!hostile.matches(&format!("/{}b", "a".repeat(5000))));
        let e = Glob::new("/a/[b").unwrap_err();
        assert!(e.to_string().contains("/a/[b"), "{e}");
    }

    #[test]
    fn first_firing_rule_wins_and_nth_counts_matches() {
        let mut set = RuleSet::default();
        let mut rng = SmallRng::seed_from_u64(1);
        set.install(Rule::when().op(OpFamily::Create).nth(2).disconnect());
        set.install(Rule::when().path_prefix("/a").fail(ErrorCode::NoNode));
        assert_eq!(
            set.evaluate(&view(OpCode::Create, "/a"), &mut rng),
            Some(Verdict::Fail(ErrorCode::NoNode))
        );
        assert_eq!(
            set.evaluate(&view(OpCode::Create, "/a"), &mut rng),
            Some(Verdict::Disconnect)
        );
        assert_eq!(set.evaluate(&view(OpCode::Create, "/b"), &mut rng), None);
    }

    #[test]
    fn a_rule_after_another_fires_only_in_the_window_its_first_firing_opens() {
        let mut set = RuleSet::default();
        let mut rng = SmallRng::seed_from_u64(1);
        let at = |op: OpCode, path: &'static str, now_ms| RequestView {
            now_ms,
            ..view(op, path)
        };
        let chaos = set.install(Rule::when().path_prefix("/mylock/").times(1).lose_reply());
        let lockout = set.install(
            Rule::when()
                .after(chaos, Duration::from_millis(6000))
                .disconnect(),
        );
        // Nothing before the first rule fires.
        assert_eq!(set.evaluate(&at(OpCode::GetData, "/", 100), &mut rng), None);
        assert_eq!(
            set.evaluate(&at(OpCode::Create, "/mylock/a", 1000), &mut rng),
            Some(Verdict::LoseReply)
        );
        for now in [1000, 4000, 6999] {
            assert_eq!(
                set.evaluate(&at(OpCode::Delete, "/mylock/a", now), &mut rng),
                Some(Verdict::Disconnect),
                "{now}"
            );
        }
        // The window is counted from the first firing only, and closes.
        assert_eq!(
            set.evaluate(&at(OpCode::Delete, "/mylock/a", 7000), &mut rng),
            None
        );
        assert_eq!(set.fired(lockout), Some(3));
        // A rule after one that never fires never fires.
        let never = set.install(Rule::when().path("/x").fail(ErrorCode::NoNode));
        set.install(Rule::when().after(never, Duration::from_secs(60)).stall());
        assert_eq!(
            set.evaluate(&at(OpCode::GetData, "/", 8000), &mut rng),
            None
        );
        // JSON has it, and describes it.
        let json = r#"{"after": {"rule": 1, "for_ms": 6000}, "verdict": {"type": "disconnect"}}"#;
        let rule: Rule = serde_json::from_str(json).unwrap();
        assert_eq!(
            rule.when.after,
            Some(After {
                rule: 1,
                for_ms: 6000
            })
        );
        assert!(
            rule.describe().contains("within 6000 ms after rule 1"),
            "{}",
            rule.describe()
        );
        assert_eq!(
            serde_json::from_str::<Rule>(&serde_json::to_string(&rule).unwrap()).unwrap(),
            rule
        );
    }

    #[test]
    fn pings_only_match_when_named_and_times_caps_firing() {
        let mut set = RuleSet::default();
        let mut rng = SmallRng::seed_from_u64(1);
        let id = set.install(Rule::when().times(1).stall());
        let ping = RequestView {
            op: OpCode::Ping as i32,
            path: None,
            session: 1,
            now_ms: 0,
        };
        assert_eq!(set.evaluate(&ping, &mut rng), None);
        assert_eq!(
            set.evaluate(&view(OpCode::GetData, "/"), &mut rng),
            Some(Verdict::Stall)
        );
        assert_eq!(set.evaluate(&view(OpCode::GetData, "/"), &mut rng), None);
        assert_eq!(set.fired(id), Some(1));
    }

    #[test]
    fn probability_is_reproducible_from_the_seed() {
        let run = |seed| {
            let mut set = RuleSet::default();
            let mut rng = SmallRng::seed_from_u64(seed);
            set.install(Rule::when().probability(0.5).fail(ErrorCode::NoNode));
            (0..64)
                .map(|_| {
                    set.evaluate(&view(OpCode::GetData, "/"), &mut rng)
                        .is_some()
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }

    #[test]
    fn rules_read_from_json_with_op_names() {
        let r: Rule = serde_json::from_str(r#"{"ops":["create2", 2],"path":{"prefix":"/locks"},"nth":1,"verdict":{"type":"lose_reply"}}"#).unwrap();
        assert_eq!(
            r,
            Rule::when()
                .op_code(OpCode::Create2)
                .op_code(OpCode::Delete)
                .path_prefix("/locks")
                .nth(1)
                .lose_reply()
        );
        // A family name is every op code of the family.
        let r: Rule = serde_json::from_str(
            r#"{"ops":["create", "create2"],"verdict":{"type":"delay","ms":250}}"#,
        )
        .unwrap();
        assert_eq!(
            r,
            Rule::when()
                .op(OpFamily::Create)
                .delay(Duration::from_millis(250))
        );
        // And back: the JSON the admin interface lists reads as the same rule.
        let back: Rule = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        let bad = serde_json::from_str::<Rule>(r#"{"verdict":{"type":"fail","code":-9999}}"#)
            .unwrap_err()
            .to_string();
        assert!(bad.contains("-9999"), "{bad}");
        assert!(serde_json::from_str::<Rule>(r#"{"verdict":{"type":"nope"}}"#).is_err());
        // Session ids as numbers, decimal strings or hex strings.
        for session in [
            "72057594037927937",
            r#""72057594037927937""#,
            r#""0x100000000000001""#,
        ] {
            let r: Rule = serde_json::from_str(&format!(
                r#"{{"session":{session},"verdict":{{"type":"lose_reply"}}}}"#
            ))
            .unwrap();
            assert_eq!(
                r.when.session,
                Some(SessionId(0x0100_0000_0000_0001)),
                "{session}"
            );
        }
        assert!(serde_json::from_str::<Rule>(
            r#"{"session":"0xzz","verdict":{"type":"lose_reply"}}"#
        )
        .is_err());
        assert!(Rule::when()
            .probability(2.0)
            .lose_reply()
            .validate()
            .is_err());
        assert!(Rule::when().fail(ErrorCode::Ok).validate().is_err());
        assert!(serde_json::from_str::<Rule>(r#"{"nth":0,"verdict":{"type":"stall"}}"#).is_err());
    }
}
