//! The clients' operations as a history anyone can check: Jepsen-style
//! `invoke` / `ok` / `fail` / `info` operations, one JSON object per line
//! (`harness run --history FILE`), and a built-in check of the history
//! against a fenced mutex.
//!
//! Each operation is a map like Jepsen's (`process`, `type`, `f`,
//! `value`, `time` in nanoseconds since the scenario started, `index`),
//! plus the client's name, its role and, for an indeterminate (`info`)
//! acquire, what the server said right after. A Porcupine-style checker
//! pairs each `invoke` with the next completion of the same `process`:
//! call = the invoke's `time`, return = the completion's.
//!
//! `f` is `acquire` or `release`. An `ok` acquire's `value` is its fencing
//! token — the czxid of the lock node the client's session owned, read
//! from the server — so the history can be checked against a fenced mutex:
//! every exclusive (or write) acquisition must get a token larger than
//! every exclusive acquisition completed before it.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::journal::{Entry, Event};
use crate::scenario::Role;

/// One operation of the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Op {
    /// Position in the history.
    pub index: usize,
    /// The client's number (its order in the scenario).
    pub process: usize,
    /// The client's name.
    pub client: String,
    /// `invoke`, `ok`, `fail` or `info`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// `acquire` or `release`.
    pub f: &'static str,
    /// An ok acquire's fencing token (0: the session owned no lock node).
    pub value: Option<i64>,
    /// Nanoseconds since the scenario started.
    pub time: u128,
    /// `exclusive`, `read` or `write`.
    pub role: &'static str,
    /// Why a fail or info op ended so, and how the server resolved an info acquire.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Builds the history from the journal. `clients` gives each client's
/// process number and role.
// Each arm first takes the client's open operation out of `open`; as a
// match guard that removal would read as a test, so the arms keep their `if`.
#[allow(clippy::collapsible_match)]
pub fn build(journal: &[Entry], clients: &BTreeMap<String, (usize, Role)>) -> Vec<Op> {
    let mut ops = Vec::new();
    // Per client: the op in flight.
    let mut open: BTreeMap<&str, &'static str> = BTreeMap::new();
    let push = |ops: &mut Vec<Op>, e: &Entry, kind, f, value, error| {
        let (process, role) = clients
            .get(&e.client)
            .copied()
            .unwrap_or((usize::MAX, Role::Exclusive));
        ops.push(Op {
            index: ops.len(),
            process,
            client: e.client.clone(),
            kind,
            f,
            value,
            time: e.t.as_nanos(),
            role: role.name(),
            error,
        });
    };
    for e in journal {
        let c = e.client.as_str();
        match &e.event {
            Event::Waiting { .. } => {
                open.insert(c, "acquire");
                push(&mut ops, e, "invoke", "acquire", None, None);
            }
            Event::Acquired { token, .. } => {
                if open.remove(c).is_some() {
                    push(&mut ops, e, "ok", "acquire", Some(*token), None);
                }
            }
            Event::GaveUp { reason, .. } => {
                if open.remove(c).is_some() {
                    push(&mut ops, e, "fail", "acquire", None, Some(reason.clone()));
                }
            }
            Event::Error {
                message,
                indefinite,
                resolved,
            } => {
                if let Some(f) = open.remove(c) {
                    let why = match resolved {
                        Some(r) => format!("{message}; resolved: {r}"),
                        None => message.clone(),
                    };
                    push(
                        &mut ops,
                        e,
                        if *indefinite { "info" } else { "fail" },
                        f,
                        None,
                        Some(why),
                    );
                }
            }
            Event::Releasing => {
                open.insert(c, "release");
                push(&mut ops, e, "invoke", "release", None, None);
            }
            Event::Released { ok } => {
                if open.remove(c).is_some() {
                    if *ok {
                        push(&mut ops, e, "ok", "release", None, None);
                    } else {
                        push(
                            &mut ops,
                            e,
                            "info",
                            "release",
                            None,
                            Some("the release failed".into()),
                        );
                    }
                }
            }
            // A session that ended, or a client that stopped, leaves its
            // operation's outcome unknown.
            Event::Expired | Event::Done => {
                if let Some(f) = open.remove(c) {
                    push(
                        &mut ops,
                        e,
                        "info",
                        f,
                        None,
                        Some("the client stopped".into()),
                    );
                }
            }
            _ => {}
        }
    }
    ops
}

/// The history as JSON lines.
pub fn to_json_lines(ops: &[Op]) -> String {
    let mut out = String::new();
    for op in ops {
        out.push_str(&serde_json::to_string(op).unwrap_or_default());
        out.push('\n');
    }
    out
}

/// Checks the history against a fenced mutex: the ok exclusive (and write)
/// acquisitions, in the order they completed, carry strictly increasing
/// tokens. An acquisition whose session owned no lock node (token 0) is
/// the resource checks' business (it is only wrong if it touched the
/// resource); it is counted here, not judged. Returns the violations and
/// how many acquisitions were checked.
pub fn check_fenced_mutex(ops: &[Op]) -> (Vec<String>, usize) {
    let mut last: Option<&Op> = None;
    let mut bad = Vec::new();
    let mut checked = 0;
    for op in ops {
        if op.kind != "ok" || op.f != "acquire" || op.role == "read" {
            continue;
        }
        let Some(token) = op.value.filter(|t| *t > 0) else {
            continue;
        };
        checked += 1;
        if let Some(prev) = last {
            let prev_token = prev.value.unwrap_or(0);
            if token <= prev_token {
                bad.push(format!(
                    "{} acquired with token {token:#x} at {:.1}ms, after {} had acquired with token {prev_token:#x} at {:.1}ms (op {} after op {})",
                    op.client,
                    op.time as f64 / 1e6,
                    prev.client,
                    prev.time as f64 / 1e6,
                    op.index,
                    prev.index
                ));
            }
        }
        if last.is_none_or(|p| token > p.value.unwrap_or(0)) {
            last = Some(op);
        }
    }
    (bad, checked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn e(ms: u64, c: &str, event: Event) -> Entry {
        Entry {
            t: Duration::from_millis(ms),
            client: c.into(),
            event,
        }
    }

    fn clients() -> BTreeMap<String, (usize, Role)> {
        [("a", 0), ("b", 1)]
            .into_iter()
            .map(|(c, i)| (c.to_string(), (i, Role::Exclusive)))
            .collect()
    }

    fn acquired(token: i64) -> Event {
        Event::Acquired {
            round: 0,
            token,
            path: None,
        }
    }

    #[test]
    fn a_recorded_run_becomes_invoke_and_completion_pairs() {
        let j = vec![
            e(1, "a", Event::Waiting { round: 0 }),
            e(2, "b", Event::Waiting { round: 0 }),
            e(3, "a", acquired(5)),
            e(4, "a", Event::Releasing),
            e(5, "a", Event::Released { ok: true }),
            e(
                6,
                "b",
                Event::Error {
                    message: "ConnectionLoss".into(),
                    indefinite: true,
                    resolved: Some("the session owns no lock node".into()),
                },
            ),
        ];
        let ops = build(&j, &clients());
        let kinds: Vec<(&str, &str, &str)> = ops
            .iter()
            .map(|o| (o.client.as_str(), o.kind, o.f))
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("a", "invoke", "acquire"),
                ("b", "invoke", "acquire"),
                ("a", "ok", "acquire"),
                ("a", "invoke", "release"),
                ("a", "ok", "release"),
                ("b", "info", "acquire"),
            ]
        );
        assert_eq!(ops[2].value, Some(5));
        assert!(ops[5]
            .error
            .as_deref()
            .unwrap()
            .contains("resolved: the session owns no lock node"));
        let line = to_json_lines(&ops[..1]);
        assert!(
            line.contains(r#""type":"invoke""#) && line.contains(r#""process":0"#),
            "{line}"
        );
        assert_eq!(check_fenced_mutex(&ops), (vec![], 1));
    }

    #[test]
    fn a_token_that_goes_back_violates_the_fenced_mutex() {
        let j = vec![
            e(1, "a", Event::Waiting { round: 0 }),
            e(2, "a", acquired(9)),
            e(3, "b", Event::Waiting { round: 0 }),
            // b holds on the strength of an older node (CURATOR-604's shape).
            e(4, "b", acquired(7)),
        ];
        let (bad, checked) = check_fenced_mutex(&build(&j, &clients()));
        assert_eq!(checked, 2);
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(bad[0].contains("b acquired with token 0x7"), "{bad:?}");
    }

    #[test]
    fn readers_and_tokenless_acquisitions_are_not_judged() {
        let mut cs = clients();
        cs.insert("r".into(), (2, Role::Read));
        let j = vec![
            e(1, "a", Event::Waiting { round: 0 }),
            e(2, "a", acquired(9)),
            e(3, "r", Event::Waiting { round: 0 }),
            e(4, "r", acquired(3)),
            e(5, "b", Event::Waiting { round: 0 }),
            e(6, "b", acquired(0)),
        ];
        assert_eq!(check_fenced_mutex(&build(&j, &cs)), (vec![], 1));
    }
}
