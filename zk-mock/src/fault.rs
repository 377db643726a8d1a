//! Fault rules: what the server does to a request instead of (or besides)
//! answering it normally. Rules are data — matchers plus a [`Verdict`] —
//! evaluated in install order; the first rule that fires wins.

use std::fmt;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::Rng;

use serde::{Deserialize, Serialize};

use crate::proto::{ErrorCode, OpCode};

/// What happens to a request a rule matches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Verdict {
    /// Apply the request, then hold its reply (and everything after it on
    /// that connection) for this long.
    Delay {
        /// How long, in ms.
        ms: u64,
    },
    /// Apply the request, then close the connection without replying: the
    /// client sees connection loss and cannot know whether it was applied.
    LoseReply,
    /// Close the connection before applying: nothing happened.
    Disconnect,
    /// Answer with this ZooKeeper error code instead of applying. The reply
    /// carries the last zxid; no zxid is consumed.
    Fail {
        /// The wire value of a `KeeperException.Code` (e.g. −101 for NoNode).
        code: i32,
    },
    /// Apply the request, then stall its session: replies, pings and
    /// notifications are held and nothing more is read from it until
    /// [`ZkMock::resume`](crate::ZkMock::resume). A stall that outlasts the
    /// session timeout lets the session expire.
    Stall,
    /// Expire the request's session instead of applying the request.
    Expire,
}

impl Verdict {
    /// A short name for logs and the recorder.
    pub fn name(&self) -> String {
        match self {
            Verdict::Delay { ms } => format!("delay {ms}ms"),
            Verdict::LoseReply => "lose reply".into(),
            Verdict::Disconnect => "disconnect".into(),
            Verdict::Fail { code } => match ErrorCode::from_i32(*code) {
                Some(c) => format!("fail {c:?}"),
                None => format!("fail {code}"),
            },
            Verdict::Stall => "stall".into(),
            Verdict::Expire => "expire".into(),
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

/// A fault rule: which requests it matches and what it does to them.
///
/// Every criterion is optional; a rule with none matches every request except
/// pings (which are timing-driven; name `OpCode::Ping` to match them).
///
/// ```
/// use zk_mock::fault::Rule;
/// use zk_mock::proto::OpCode;
///
/// // The first create under /locks is applied but its reply is lost.
/// let rule = Rule::new().op(OpCode::Create2).path_prefix("/locks").nth(1).lose_reply();
/// # let _ = rule;
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Op codes the rule applies to (any, if empty). In JSON: names such as
    /// `"create"` or `"getData"`, or numbers.
    #[serde(default, with = "op_list")]
    pub ops: Vec<OpCode>,
    /// The path criterion.
    #[serde(default)]
    pub path: Option<PathMatch>,
    /// Only this session's requests. In JSON: a number, or a string in
    /// decimal or `0x` hex (ids pass 2^53, past what JavaScript's numbers
    /// hold exactly).
    #[serde(default, deserialize_with = "session_id::deserialize")]
    pub session: Option<i64>,
    /// Fire only on the n-th request that meets the criteria above (1-based).
    #[serde(default)]
    pub nth: Option<u64>,
    /// Fire at most this many times.
    #[serde(default)]
    pub times: Option<u64>,
    /// Fire with this probability (0.0–1.0), drawn from the server's seeded generator.
    #[serde(default)]
    pub probability: Option<f64>,
    /// What to do.
    pub verdict: Verdict,
}

impl Default for Rule {
    fn default() -> Self {
        Rule::new()
    }
}

impl Rule {
    /// A rule that matches every request (but pings) and passes it: add criteria and a verdict.
    pub fn new() -> Rule {
        Rule {
            ops: Vec::new(),
            path: None,
            session: None,
            nth: None,
            times: None,
            probability: None,
            verdict: Verdict::Delay { ms: 0 },
        }
    }

    /// Also match this op code (create2 is what `zookeeper-client` sends for create).
    pub fn op(mut self, op: OpCode) -> Self {
        self.ops.push(op);
        self
    }
    /// Also match every op code of this family.
    pub fn family(mut self, family: OpFamily) -> Self {
        self.ops.extend_from_slice(family.codes());
        self
    }

    /// Match this node and every node below it.
    pub fn path_under(mut self, path: &str) -> Self {
        self.path = Some(PathMatch::Under(path.into()));
        self
    }

    /// Match exactly this path.
    pub fn path(mut self, path: &str) -> Self {
        self.path = Some(PathMatch::Exact(path.into()));
        self
    }
    /// Match paths starting with `prefix`.
    pub fn path_prefix(mut self, prefix: &str) -> Self {
        self.path = Some(PathMatch::Prefix(prefix.into()));
        self
    }
    /// Match paths against a glob (`*`, `**`, `?`).
    ///
    /// # Panics
    /// If `glob` does not parse (the message says why); set the rule's
    /// `path` field to a [`PathMatch::Glob`] of a checked [`Glob::new`]
    /// instead to handle the error.
    pub fn path_glob(mut self, glob: &str) -> Self {
        let glob = Glob::new(glob).unwrap_or_else(|e| panic!("Rule::path_glob: {e}"));
        self.path = Some(PathMatch::Glob(glob));
        self
    }
    /// Match only this session.
    pub fn session(mut self, id: i64) -> Self {
        self.session = Some(id);
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
    /// Verdict: delay the reply.
    pub fn delay(mut self, d: Duration) -> Self {
        self.verdict = Verdict::Delay {
            ms: d.as_millis() as u64,
        };
        self
    }
    /// Verdict: apply, then close the connection without replying.
    pub fn lose_reply(mut self) -> Self {
        self.verdict = Verdict::LoseReply;
        self
    }
    /// Verdict: close the connection before applying.
    pub fn disconnect(mut self) -> Self {
        self.verdict = Verdict::Disconnect;
        self
    }
    /// Verdict: answer with an error code.
    pub fn fail(mut self, code: ErrorCode) -> Self {
        self.verdict = Verdict::Fail { code: code.code() };
        self
    }
    /// Verdict: apply, then stall the session until resumed.
    pub fn stall(mut self) -> Self {
        self.verdict = Verdict::Stall;
        self
    }
    /// Verdict: expire the session.
    pub fn expire(mut self) -> Self {
        self.verdict = Verdict::Expire;
        self
    }

    /// Checks the rule's values.
    ///
    /// # Errors
    /// A message naming the bad field.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(p) = self.probability {
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("probability must be within 0..=1, got {p}"));
            }
        }
        if self.nth == Some(0) {
            return Err("nth counts from 1".into());
        }
        if let Verdict::Fail { code } = self.verdict {
            if code == 0 || ErrorCode::from_i32(code).is_none() {
                return Err(format!("fail code {code} is not a ZooKeeper error code"));
            }
        }
        Ok(())
    }

    fn criteria_match(&self, r: &RequestView<'_>) -> bool {
        let op_ok = if self.ops.is_empty() {
            r.op != OpCode::Ping as i32
        } else {
            self.ops.iter().any(|o| *o as i32 == r.op)
        };
        op_ok
            && self.session.is_none_or(|s| s == r.session)
            && self
                .path
                .as_ref()
                .is_none_or(|m| r.path.is_some_and(|p| m.matches(p)))
    }
}

/// What a rule sees of a request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestView<'a> {
    pub(crate) op: i32,
    pub(crate) path: Option<&'a str>,
    pub(crate) session: i64,
}

#[derive(Debug)]
struct Installed {
    id: u64,
    rule: Rule,
    matched: u64,
    fired: u64,
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
            matched: 0,
            fired: 0,
        });
        self.next_id
    }

    pub(crate) fn remove(&mut self, id: u64) -> bool {
        let before = self.rules.len();
        self.rules.retain(|r| r.id != id);
        self.rules.len() != before
    }

    pub(crate) fn fired(&self, id: u64) -> Option<u64> {
        self.rules.iter().find(|r| r.id == id).map(|r| r.fired)
    }

    pub(crate) fn list(&self) -> Vec<(u64, Rule, u64)> {
        self.rules
            .iter()
            .map(|r| (r.id, r.rule.clone(), r.fired))
            .collect()
    }

    /// The verdict of the first rule that fires for `req`, if any.
    pub(crate) fn evaluate(
        &mut self,
        req: &RequestView<'_>,
        rng: &mut SmallRng,
    ) -> Option<Verdict> {
        if self.rules.is_empty() {
            return None;
        }
        for r in &mut self.rules {
            if !r.rule.criteria_match(req) {
                continue;
            }
            r.matched += 1;
            if r.rule.nth.is_some_and(|n| n != r.matched) {
                continue;
            }
            if r.rule.times.is_some_and(|t| r.fired >= t) {
                continue;
            }
            if let Some(p) = r.rule.probability {
                if !rng.random_bool(p) {
                    continue;
                }
            }
            r.fired += 1;
            return Some(r.rule.verdict.clone());
        }
        None
    }
}

/// A session id as clients print it: decimal, or `0x` hex.
pub(crate) fn parse_session_id(text: &str) -> Option<i64> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok().map(|v| v as i64),
        None => text.parse::<i64>().ok(),
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

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        match Option::<NumberOrText>::deserialize(d)? {
            None => Ok(None),
            Some(NumberOrText::Number(n)) => Ok(Some(n)),
            Some(NumberOrText::Text(t)) => super::parse_session_id(&t).map(Some).ok_or_else(|| {
                D::Error::custom(format!("session {t:?} is not a decimal or 0x-hex integer"))
            }),
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

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<OpCode>, D::Error> {
        let raw = Vec::<NameOrCode>::deserialize(d)?;
        raw.into_iter()
            .map(|v| match v {
                NameOrCode::Code(c) => OpCode::from_i32(c)
                    .ok_or_else(|| D::Error::custom(format!("unknown op code {c}"))),
                NameOrCode::Name(n) => OpCode::from_name(&n)
                    .ok_or_else(|| D::Error::custom(format!("unknown op name {n:?}"))),
            })
            .collect()
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
        let r = Rule::new().family(OpFamily::Create).lose_reply();
        assert!(r.criteria_match(&view(OpCode::Create, "/a")));
        assert!(r.criteria_match(&view(OpCode::Create2, "/a")));
        assert!(!r.criteria_match(&view(OpCode::Delete, "/a")));
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
        set.install(Rule::new().op(OpCode::Create).nth(2).disconnect());
        set.install(Rule::new().path_prefix("/a").fail(ErrorCode::NoNode));
        assert_eq!(
            set.evaluate(&view(OpCode::Create, "/a"), &mut rng),
            Some(Verdict::Fail { code: -101 })
        );
        assert_eq!(
            set.evaluate(&view(OpCode::Create, "/a"), &mut rng),
            Some(Verdict::Disconnect)
        );
        assert_eq!(set.evaluate(&view(OpCode::Create, "/b"), &mut rng), None);
    }

    #[test]
    fn pings_only_match_when_named_and_times_caps_firing() {
        let mut set = RuleSet::default();
        let mut rng = SmallRng::seed_from_u64(1);
        let id = set.install(Rule::new().times(1).stall());
        let ping = RequestView {
            op: OpCode::Ping as i32,
            path: None,
            session: 1,
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
            set.install(Rule::new().probability(0.5).fail(ErrorCode::NoNode));
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
            Rule::new()
                .op(OpCode::Create2)
                .op(OpCode::Delete)
                .path_prefix("/locks")
                .nth(1)
                .lose_reply()
        );
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
            assert_eq!(r.session, Some(0x0100_0000_0000_0001), "{session}");
        }
        assert!(serde_json::from_str::<Rule>(
            r#"{"session":"0xzz","verdict":{"type":"lose_reply"}}"#
        )
        .is_err());
        assert!(Rule::new().probability(2.0).validate().is_err());
        assert!(Rule::new().fail(ErrorCode::Ok).validate().is_err());
    }
}
