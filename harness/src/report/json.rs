//! The JSON report (`--json`).

use serde::Serialize;

use super::{reproduction, Outcome, Reproduction};

/// Every outcome as one JSON document.
pub fn json(outcomes: &[Outcome]) -> String {
    #[derive(Serialize)]
    struct Doc<'a> {
        passed: bool,
        scenarios: &'a [Outcome],
        /// Each scenario's failed runs over its runs (`--repeat`).
        reproduction: Vec<Reproduction>,
    }
    serde_json::to_string_pretty(&Doc {
        passed: outcomes.iter().all(|o| o.status.ok()),
        scenarios: outcomes,
        reproduction: reproduction(outcomes),
    })
    .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}
