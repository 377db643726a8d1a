//! [`Draft`]: a scenario as data that `explore` draws and `shrink` cuts
//! down, written out as the YAML `harness run` plays.
//!
//! The scenario types of [`crate::scenario`] are read-only (they keep
//! source spans for error messages); a draft keeps the same document as
//! plain values, in the order a person would write it, and goes through
//! [`crate::scenario::parse`] before every run, so that a draft that cannot
//! be played is refused exactly as a file would be.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::scenario::{self, Loaded, ScenarioError};

/// A scenario document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Draft {
    /// The scenario's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What it shows.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Where it comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// `server:` as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<Map<String, Value>>,
    /// `lock:` as written.
    pub lock: Map<String, Value>,
    /// `clients:`, one map per group.
    pub clients: Vec<Map<String, Value>>,
    /// `timeline:`, one map per step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<Map<String, Value>>,
    /// `invariants:` as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invariants: Option<Map<String, Value>>,
    /// `expect:` as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Map<String, Value>>,
    /// `deadline:` as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<Value>,
    /// `skip:` as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip: Option<Value>,
}

/// The last number before the wrap a counter starting at `start` comes
/// to first: 2147483647 (then -2147483648) from a non-negative start, -1
/// (then 0) from a negative one.
pub fn last_before_wrap(start: i64) -> i64 {
    if start >= 0 {
        i64::from(i32::MAX)
    } else {
        -1
    }
}

/// A draft that could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum DraftError {
    /// The file is not a scenario.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The YAML could not be written.
    #[error("writing YAML: {0}")]
    Yaml(String),
}

impl Draft {
    /// Reads a scenario file's text as a draft (validated as a scenario first).
    pub fn parse(file: &Path, text: &str) -> Result<Draft, DraftError> {
        scenario::parse(file, text)?;
        serde_saphyr::from_str(text).map_err(|e| {
            DraftError::Scenario(ScenarioError {
                file: file.to_path_buf(),
                line: 0,
                column: 0,
                message: e.to_string().lines().next().unwrap_or("").to_string(),
            })
        })
    }

    /// The YAML text.
    pub fn to_yaml(&self) -> Result<String, DraftError> {
        let mut text =
            serde_saphyr::to_string(self).map_err(|e| DraftError::Yaml(e.to_string()))?;
        if !text.ends_with('\n') {
            text.push('\n');
        }
        Ok(text)
    }

    /// Validates the draft as the scenario `file` would be.
    pub fn load(&self, file: &Path) -> Result<Loaded, DraftError> {
        Ok(scenario::parse(file, &self.to_yaml()?)?)
    }

    /// The member names of group `g` (as [`Loaded::members`]).
    pub fn members(&self, g: usize) -> Vec<String> {
        let group = &self.clients[g];
        let name = group.get("name").and_then(Value::as_str).unwrap_or("");
        let count = group.get("count").and_then(Value::as_u64).unwrap_or(1);
        if count == 1 {
            vec![name.to_string()]
        } else {
            (0..count).map(|i| format!("{name}.{i}")).collect()
        }
    }

    /// Every client and group name some step names (targets, anchors).
    pub fn names_in_timeline(&self) -> Vec<String> {
        fn strings(v: &Value, out: &mut Vec<String>) {
            match v {
                Value::String(s) => out.push(s.clone()),
                Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
                Value::Object(m) => m.values().for_each(|x| strings(x, out)),
                _ => {}
            }
        }
        let mut out = Vec::new();
        for s in &self.timeline {
            strings(&Value::Object(s.clone()), &mut out);
        }
        out
    }

    /// The action of step `i` (`expire`, `lose_reply`, …).
    pub fn action(&self, i: usize) -> &str {
        action_of(&self.timeline[i])
    }

    /// The fault kinds of the timeline, for a finding's signature: the
    /// action, and for request faults the op (and the code of `fail`).
    pub fn fault_kinds(&self) -> Vec<String> {
        let session = self.session_timeout();
        let mut kinds: Vec<String> = self
            .timeline
            .iter()
            .map(|s| fault_kind(s, session))
            .collect();
        if self
            .server
            .as_ref()
            .is_some_and(|s| s.contains_key("expiry_cleanup_delay"))
            && kinds.iter().any(|k| k == "expire")
        {
            kinds.push("late expiry cleanup".into());
        }
        // The two wraps are two kinds: locks fail them for different reasons.
        if let Some(start) = self.sequence_start() {
            kinds.push(format!("sequence wrap past {}", last_before_wrap(start)));
        }
        kinds.sort();
        kinds.dedup();
        kinds
    }

    /// `server.sequence_start`, the lock directory's counter at the start.
    pub fn sequence_start(&self) -> Option<i64> {
        self.server
            .as_ref()
            .and_then(|s| s.get("sequence_start"))
            .and_then(Value::as_i64)
    }

    /// The session timeout the clients ask for.
    pub fn session_timeout(&self) -> Duration {
        self.server
            .as_ref()
            .and_then(|s| s.get("session_timeout"))
            .and_then(dur)
            .unwrap_or(Duration::from_secs(2))
    }

    /// The number of clients.
    pub fn client_count(&self) -> usize {
        (0..self.clients.len()).map(|g| self.members(g).len()).sum()
    }
}

/// The keys a step may have that are not its action.
const WHEN: [&str; 3] = ["at", "on", "after"];

/// The action of a step (the first key that is not `at`, `on` or `after`).
pub fn action_of(step: &Map<String, Value>) -> &str {
    step.keys()
        .map(String::as_str)
        .find(|k| !WHEN.contains(k))
        .unwrap_or("?")
}

/// A step's fault kind: `expire`, `lose_reply create`, `fail delete ThrottledOp`.
pub fn fault_kind(step: &Map<String, Value>, session_timeout: Duration) -> String {
    let action = action_of(step);
    match step.get(action) {
        Some(Value::Object(spec)) if spec.contains_key("op") => {
            let mut k = format!(
                "{action} {}",
                spec.get("op").and_then(Value::as_str).unwrap_or("?")
            );
            if let Some(code) = spec.get("code").and_then(Value::as_str) {
                k.push(' ');
                k.push_str(code);
            }
            k
        }
        Some(Value::Object(spec)) if action == "stall" => {
            let long = spec.get("for").and_then(dur).unwrap_or_default() >= session_timeout;
            if long {
                "stall (long)".into()
            } else {
                "stall".into()
            }
        }
        _ => action.to_string(),
    }
}

/// A duration as a scenario writes it (`250ms`, `1s 500ms`).
pub fn dur(v: &Value) -> Option<Duration> {
    humantime::parse_duration(v.as_str()?).ok()
}

/// A duration as a scenario writes it: whole milliseconds.
pub fn ms(d: Duration) -> Value {
    Value::String(format!("{}ms", d.as_millis()))
}
