//! The guards the controls hand out: [`RuleGuard`] (with its [`Times`]
//! expectation), [`Stall`], [`Refusal`] and [`HoldGate`].

use std::sync::{Mutex, Weak};

use crate::core::{lock, State};
use crate::SessionId;

/// Uninstalls its fault rule when dropped, after checking its
/// [`expect`](Self::expect)ation, if it has one.
#[derive(Debug)]
#[must_use = "dropping the guard uninstalls the rule at once"]
pub struct RuleGuard {
    pub(super) shared: Weak<Mutex<State>>,
    pub(super) id: u64,
    pub(super) seed: u64,
    pub(super) keep: bool,
    pub(super) expect: Option<Times>,
}

/// How many times a rule is expected to fire: a number (`1`) or a range
/// (`1..`, `2..=3`, `..5`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Times {
    min: u64,
    max: Option<u64>,
}

impl Times {
    fn contains(&self, n: u64) -> bool {
        n >= self.min && self.max.is_none_or(|m| n <= m)
    }
}

impl std::fmt::Display for Times {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let plural = |n: u64| if n == 1 { "time" } else { "times" };
        match self.max {
            Some(m) if m == self.min => write!(f, "{m} {}", plural(m)),
            Some(m) if self.min == 0 => write!(f, "at most {m} {}", plural(m)),
            Some(m) => write!(f, "{} to {m} times", self.min),
            None => write!(f, "at least {} {}", self.min, plural(self.min)),
        }
    }
}

impl From<u64> for Times {
    fn from(n: u64) -> Times {
        Times {
            min: n,
            max: Some(n),
        }
    }
}

impl From<std::ops::Range<u64>> for Times {
    fn from(r: std::ops::Range<u64>) -> Times {
        Times {
            min: r.start,
            max: Some(r.end.saturating_sub(1)),
        }
    }
}

impl From<std::ops::RangeInclusive<u64>> for Times {
    fn from(r: std::ops::RangeInclusive<u64>) -> Times {
        Times {
            min: *r.start(),
            max: Some(*r.end()),
        }
    }
}

impl From<std::ops::RangeFrom<u64>> for Times {
    fn from(r: std::ops::RangeFrom<u64>) -> Times {
        Times {
            min: r.start,
            max: None,
        }
    }
}

impl From<std::ops::RangeTo<u64>> for Times {
    fn from(r: std::ops::RangeTo<u64>) -> Times {
        Times {
            min: 0,
            max: Some(r.end.saturating_sub(1)),
        }
    }
}

impl From<std::ops::RangeToInclusive<u64>> for Times {
    fn from(r: std::ops::RangeToInclusive<u64>) -> Times {
        Times {
            min: 0,
            max: Some(r.end),
        }
    }
}

impl RuleGuard {
    /// The rule's id (as `DELETE /rules/{id}` takes it).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// How many times the rule has fired.
    pub fn fired(&self) -> u64 {
        self.shared
            .upgrade()
            .and_then(|s| lock(&s).rule_fired(self.id))
            .unwrap_or(0)
    }

    /// Expects the rule to fire `times` (a number or a range) by the time
    /// the guard is dropped; dropping it panics otherwise, naming the rule
    /// and the counts (unless the thread is already panicking).
    ///
    /// ```should_panic
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use zk_mock::{fault::{OpFamily, Rule}, ZkMock};
    /// let zk = ZkMock::start().await;
    /// let _lost = zk.rule(Rule::when().op(OpFamily::Create).lose_reply()).expect(1);
    /// // ... no create is ever sent: dropping `_lost` panics with
    /// // "rule #1 (create|create2|createContainer|createTTL → lose reply)
    /// //  was expected to fire 1 time, and fired 0 times".
    /// # }
    /// ```
    pub fn expect(mut self, times: impl Into<Times>) -> Self {
        self.expect = Some(times.into());
        self
    }

    /// Checks the [`expect`](Self::expect)ation now.
    ///
    /// # Errors
    /// The message dropping the guard would panic with.
    pub fn verify(&self) -> Result<(), String> {
        let Some(want) = &self.expect else {
            return Ok(());
        };
        let Some(shared) = self.shared.upgrade() else {
            return Err(format!(
                "zk-mock (seed {}): rule #{} cannot be verified: its server was dropped first \
                 (drop the guard, or call verify(), before the server)",
                self.seed, self.id
            ));
        };
        let state = lock(&shared);
        let Some((rule, tally)) = state.rule(self.id) else {
            return Err(format!(
                "zk-mock (seed {}): rule #{} was removed before it could be verified",
                self.seed, self.id
            ));
        };
        if want.contains(tally.fired) {
            return Ok(());
        }
        Err(format!(
            "zk-mock (seed {}): rule #{} ({}) was expected to fire {want}, and fired {} {} \
             ({} {} met its criteria)",
            self.seed,
            self.id,
            rule.describe(),
            tally.fired,
            if tally.fired == 1 { "time" } else { "times" },
            tally.matched,
            if tally.matched == 1 {
                "request"
            } else {
                "requests"
            },
        ))
    }

    /// Keeps the rule installed for the server's lifetime (unverified).
    pub fn forget(mut self) {
        self.keep = true;
    }
}

impl Drop for RuleGuard {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        let verdict = self.verify();
        if let Some(s) = self.shared.upgrade() {
            lock(&s).remove_rule(self.id);
        }
        if let Err(message) = verdict {
            if !std::thread::panicking() {
                panic!("{message}");
            }
        }
    }
}

/// Holds a session's traffic ([`ZkMock::stall`](crate::ZkMock::stall)) until dropped.
#[derive(Debug)]
#[must_use = "dropping the guard resumes the session at once"]
pub struct Stall {
    pub(super) shared: Weak<Mutex<State>>,
    pub(super) session: SessionId,
    pub(super) keep: bool,
}

impl Stall {
    /// The stalled session.
    pub fn session(&self) -> SessionId {
        self.session
    }

    /// Leaves the session stalled: until [`ZkMock::resume`](crate::ZkMock::resume), or until it
    /// expires.
    pub fn forget(mut self) {
        self.keep = true;
    }
}

impl Drop for Stall {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        if let Some(s) = self.shared.upgrade() {
            lock(&s).resume(self.session.0);
        }
    }
}

/// Accepts connections again when dropped.
#[derive(Debug)]
#[must_use = "dropping the guard accepts connections again at once"]
pub struct Refusal {
    pub(super) shared: Weak<Mutex<State>>,
}

impl Drop for Refusal {
    fn drop(&mut self) {
        if let Some(s) = self.shared.upgrade() {
            lock(&s).set_refusing(false);
        }
    }
}

/// A gate ([`ZkMock::gate`](crate::ZkMock::gate)): hold rules
/// ([`Match::hold_reply`](crate::fault::Match::hold_reply),
/// [`Match::hold_request`](crate::fault::Match::hold_request)) and
/// [`ZkMock::expire_session_until`](crate::ZkMock::expire_session_until) hold what they hold until it opens.
/// It opens with [`open`](Self::open), or when dropped; once open it stays
/// open.
#[derive(Debug)]
#[must_use = "dropping the gate opens it at once; HoldGate::forget keeps it closed"]
pub struct HoldGate {
    pub(super) shared: Weak<Mutex<State>>,
    pub(super) id: crate::fault::GateId,
    pub(super) keep: bool,
}

impl HoldGate {
    /// The gate's id, for a rule's verdict.
    pub fn id(&self) -> crate::fault::GateId {
        self.id
    }

    /// Opens the gate: held replies go out, held requests are applied and
    /// answered, held expiry cleanups are applied, in the order the server
    /// gets to them. False if it was open already.
    pub fn open(&self) -> bool {
        self.shared
            .upgrade()
            .is_some_and(|s| lock(&s).open_gate(self.id.0))
    }

    /// Keeps the gate closed when the guard goes: until
    /// [`ZkMock::open_gate`](crate::ZkMock::open_gate) (or the server's [`reset`](crate::ZkMock::reset)).
    pub fn forget(mut self) {
        self.keep = true;
    }
}

impl Drop for HoldGate {
    fn drop(&mut self) {
        if !self.keep {
            self.open();
        }
    }
}
