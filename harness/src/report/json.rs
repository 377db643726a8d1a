//! The JSON report (`--json`).

use serde::Serialize;

use super::Outcome;

/// Every outcome as one JSON document.
pub fn json(outcomes: &[Outcome]) -> String {
    #[derive(Serialize)]
    struct Doc<'a> {
        passed: bool,
        scenarios: &'a [Outcome],
    }
    serde_json::to_string_pretty(&Doc {
        passed: outcomes.iter().all(|o| o.status.ok()),
        scenarios: outcomes,
    })
    .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}
