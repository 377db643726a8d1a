//! The summary table and failure details for the terminal.

use std::fmt::Write as _;

use super::{reproduction, Outcome, Reproduction, Status};

/// The summary table for the terminal.
pub fn terminal(outcomes: &[Outcome]) -> String {
    let mut out = String::new();
    let w = outcomes
        .iter()
        .map(|o| o.name.len())
        .max()
        .unwrap_or(8)
        .max(8);
    let _ = writeln!(
        out,
        "{:<w$}  {:<8}  {:<30}  {:>8}  {:>6}  {:>9}  violated / errors",
        "scenario", "status", "recipe", "time", "acq", "notif/ho"
    );
    for o in outcomes {
        let mut note = o.violated().join(", ");
        if !o.errors.is_empty() {
            if !note.is_empty() {
                note.push_str("; ");
            }
            note.push_str(&o.errors.join("; "));
        }
        let per = o
            .stats
            .max_notifications_per_handoff
            .map(|n| n.to_string())
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(
            out,
            "{:<w$}  {:<8}  {:<30}  {:>7.2}s  {:>6}  {:>9}  {}",
            o.name,
            format!("{:?}", o.status).to_lowercase(),
            &o.recipe,
            o.duration_ms / 1000.0,
            o.stats.acquisitions,
            per,
            note
        );
    }
    let groups = reproduction(outcomes);
    if groups.iter().any(|g| g.runs > 1) {
        out.push('\n');
        out.push_str(&reproduction_table(&groups));
    }
    let count = |s: Status| outcomes.iter().filter(|o| o.status == s).count();
    let _ = writeln!(
        out,
        "\n{} scenarios: {} passed, {} caught (negative), {} failed, {} errors, {} skipped",
        outcomes.len(),
        count(Status::Passed),
        count(Status::Caught),
        count(Status::Failed),
        count(Status::Error),
        count(Status::Skipped)
    );
    out
}

/// The reproduction table: each scenario's failed runs over its runs, and
/// the seeds that replay the failures.
fn reproduction_table(groups: &[Reproduction]) -> String {
    let mut out = String::new();
    // Name the implementation and target only when the runs had several.
    let several = |f: fn(&Reproduction) -> &str| {
        groups
            .iter()
            .map(f)
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            > 1
    };
    let (imps, targets) = (several(|g| &g.implementation), several(|g| &g.target));
    let label = |g: &Reproduction| {
        let mut l = g.scenario.clone();
        if imps {
            l.push_str(&format!(" on {}", g.implementation));
        }
        if targets {
            l.push_str(&format!(" ({})", g.target));
        }
        l
    };
    let w = groups
        .iter()
        .map(|g| label(g).len())
        .max()
        .unwrap_or(8)
        .max(8);
    let _ = writeln!(
        out,
        "reproduction\n{:<w$}  {:>6}  {:>6}  {:>6}  {:<14}  failing seeds",
        "scenario", "runs", "failed", "errors", "rate"
    );
    for g in groups {
        const SHOWN: usize = 10;
        let mut seeds: Vec<String> = g
            .failed_seeds
            .iter()
            .take(SHOWN)
            .map(u64::to_string)
            .collect();
        if g.failed_seeds.len() > SHOWN {
            seeds.push(format!("… {} more", g.failed_seeds.len() - SHOWN));
        }
        let line = format!(
            "{:<w$}  {:>6}  {:>6}  {:>6}  {:<14}  {}",
            label(g),
            g.runs,
            g.failed,
            g.errors,
            format!("{} {}", g.fraction(), g.percent()),
            seeds.join(", ")
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// What a failed scenario's reader needs: the violations, the seed, the
/// replay command and the tail of the history.
pub fn failure_details(o: &Outcome) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "--- {} ({}): {:?}", o.name, o.file, o.status);
    for i in &o.invariants {
        if i.checked && (!i.held || i.expected_violation) {
            let verdict = match (i.held, i.expected_violation) {
                (false, false) => "VIOLATED",
                (true, true) => "held, but a violation was expected",
                (false, true) => "violated as expected",
                (true, false) => "held",
            };
            let _ = writeln!(out, "  {}: {verdict}", i.name);
            for d in i.details.iter().take(10) {
                let _ = writeln!(out, "    {d}");
            }
            if i.details.len() > 10 {
                let _ = writeln!(out, "    … {} more", i.details.len() - 10);
            }
        }
    }
    for e in &o.errors {
        let _ = writeln!(out, "  error: {e}");
    }
    let _ = writeln!(out, "  seed: {}", o.seed);
    let _ = writeln!(out, "  replay: {}", o.replay);
    if !o.history_tail.is_empty() {
        let _ = writeln!(
            out,
            "  server history (last {} records):",
            o.history_tail.len()
        );
        for l in &o.history_tail {
            let _ = writeln!(out, "    {l}");
        }
    }
    out
}
