//! Request faults as the harness means them, on every target: which
//! requests (an operation family, a path, a client, nth/times) and what
//! happens to them. The mock turns one into a `zk_mock::fault::Rule`; the
//! real-ZooKeeper proxy matches with the same `zk_mock::fault::Match` and
//! counts with the same `Tally`, so a fault means the same on both.

use crate::error::UnknownErrorCode;
use std::time::Duration;

use zk_mock::fault::{Match, OpFamily, PathMatch, Rule};
use zk_mock::proto::ErrorCode;

/// What happens to a matching request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultVerdict {
    /// Applied; the reply is lost and the connection closed.
    LoseReply,
    /// The connection is closed before the request is applied.
    DropRequest,
    /// Answered with this error instead of being applied.
    Fail(ErrorCode),
    /// Applied; the reply (and what follows it) is held this long.
    Delay(Duration),
    /// Held until the target's gate `gate` opens (a `hold` step): the
    /// request unapplied (and what the client sends after it), or, applied,
    /// its reply (and what follows it).
    Hold {
        /// The request, not its reply.
        request: bool,
        /// The target's gate (on the mock, its `GateId`).
        gate: u64,
    },
}

/// A request fault, resolved from a timeline step.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestFault {
    /// Which operation.
    pub family: OpFamily,
    /// Which paths (multi requests have none and match any).
    pub path: PathMatch,
    /// Fire only on the n-th matching request (1-based).
    pub nth: Option<u64>,
    /// Fire at most this many times.
    pub times: u64,
    /// What happens.
    pub verdict: FaultVerdict,
}

impl RequestFault {
    /// Which requests it is for, restricted to `session` if given: the
    /// criteria the mock's rule and the real-ZooKeeper proxy both match
    /// with (`Match::matches`, then `Tally::fires` for nth and times).
    pub fn when(&self, session: Option<i64>) -> Match {
        let mut when = Rule::when().op(self.family).times(self.times);
        // A multi names no one path; its ops' paths are not looked into.
        if self.family != OpFamily::Multi {
            when = when.path_match(self.path.clone());
        }
        if let Some(n) = self.nth {
            when = when.nth(n);
        }
        if let Some(s) = session {
            when = when.session(s);
        }
        when
    }

    /// The mock's rule for it, restricted to `session` if given.
    pub fn to_rule(&self, session: Option<i64>) -> Rule {
        let when = self.when(session);
        match self.verdict {
            FaultVerdict::LoseReply => when.lose_reply(),
            FaultVerdict::DropRequest => when.disconnect(),
            // A server answers SessionExpired only for a session that has
            // expired: the mock expires it, and the client is told so.
            FaultVerdict::Fail(ErrorCode::SessionExpired) => when.expire(),
            FaultVerdict::Fail(code) => when.fail(code),
            FaultVerdict::Delay(d) => when.delay(d),
            FaultVerdict::Hold {
                request: true,
                gate,
            } => when.hold_request(zk_mock::fault::GateId(gate)),
            FaultVerdict::Hold {
                request: false,
                gate,
            } => when.hold_reply(zk_mock::fault::GateId(gate)),
        }
    }
}

/// A ZooKeeper error code by its name (`ConnectionLoss`, `NoNode`, …) or number.
pub fn error_code(name: &str) -> Result<ErrorCode, UnknownErrorCode> {
    if let Ok(n) = name.trim().parse::<i32>() {
        return ErrorCode::from_i32(n)
            .filter(|c| *c != ErrorCode::Ok)
            .ok_or_else(|| UnknownErrorCode(name.trim().to_string()));
    }
    let want = name.trim().replace(['_', '-'], "").to_ascii_lowercase();
    ErrorCode::ALL
        .into_iter()
        .filter(|c| *c != ErrorCode::Ok)
        .find(|c| format!("{c:?}").to_ascii_lowercase() == want)
        .ok_or_else(|| UnknownErrorCode(name.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use zk_mock::proto::OpCode;

    #[test]
    fn codes_by_name_or_number() {
        assert_eq!(error_code("ConnectionLoss"), Ok(ErrorCode::ConnectionLoss));
        assert_eq!(error_code("no_node"), Ok(ErrorCode::NoNode));
        assert_eq!(error_code("-110"), Ok(ErrorCode::NodeExists));
        assert!(error_code("Ok").is_err());
        assert!(error_code("Oops")
            .unwrap_err()
            .to_string()
            .contains("ConnectionLoss"));
    }

    #[test]
    fn one_fault_means_the_same_to_the_mock_and_the_proxy() {
        let f = RequestFault {
            family: OpFamily::Create,
            path: PathMatch::Glob(zk_mock::fault::Glob::below("/h/lock")),
            nth: None,
            times: 1,
            verdict: FaultVerdict::LoseReply,
        };
        let when = f.when(None);
        assert!(!when.matches(OpCode::Create as i32, Some("/h/lock"), None));
        for op in [OpCode::Create, OpCode::Create2, OpCode::CreateContainer] {
            assert!(when.matches(op as i32, Some("/h/lock/x-01"), None));
        }
        assert!(!when.matches(OpCode::Delete as i32, Some("/h/lock/x"), None));
        assert!(!when.matches(OpCode::Create as i32, Some("/h/lock.resource/x"), None));
        let rule = f.to_rule(Some(7));
        assert_eq!(rule.when, f.when(Some(7)));
        assert_eq!(rule.when.ops.len(), 4);
        assert_eq!(rule.when.session, Some(zk_mock::SessionId(7)));
        assert_eq!(rule.verdict, zk_mock::fault::Verdict::LoseReply);
    }
}
