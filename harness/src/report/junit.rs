//! The JUnit XML report (`--junit`).

use super::{failure_details, reproduction, Outcome, Reproduction, Status};

/// A JUnit XML report: one test suite, one test case per scenario run.
/// Each test case carries its scenario's reproduction rate over the report's
/// runs: properties `reproduction` (`3/20`) and `reproduction_rate`
/// (`0.15`), and a line of its system-out.
pub fn junit(outcomes: &[Outcome]) -> String {
    use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
    let groups = reproduction(outcomes);
    let group_of = |o: &Outcome| {
        groups.iter().find(|g| {
            g.file == o.file && g.implementation == o.implementation && g.target == o.target
        })
    };
    let mut report = Report::new("harness");
    let mut suite = TestSuite::new("scenarios");
    for o in outcomes {
        let status = match o.status {
            Status::Passed | Status::Caught => TestCaseStatus::success(),
            Status::Skipped => {
                let mut s = TestCaseStatus::skipped();
                if let TestCaseStatus::Skipped { message, .. } = &mut s {
                    *message = o.errors.first().map(|e| e.as_str().into());
                }
                s
            }
            Status::Failed => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(format!("violated: {}", o.violated().join(", ")));
                s.set_description(failure_details(o));
                s
            }
            Status::Error => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
                s.set_message(o.errors.join("; "));
                s.set_description(failure_details(o));
                s
            }
        };
        let mut case = TestCase::new(o.name.clone(), status);
        case.set_classname(format!("harness.{}.{}", o.target, o.recipe));
        case.set_time(std::time::Duration::from_secs_f64(o.duration_ms / 1000.0));
        let mut out = format!(
            "seed {}\nreplay: {}\nacquisitions {} hand-offs {} max notifications per hand-off {}\n",
            o.seed,
            o.replay,
            o.stats.acquisitions,
            o.stats.handoffs,
            o.stats
                .max_notifications_per_handoff
                .map(|n| n.to_string())
                .unwrap_or_else(|| "-".into())
        );
        if let Some(g) = group_of(o) {
            case.add_property(("reproduction", g.fraction().as_str()));
            if let Some(rate) = g.rate {
                let rate = ((rate * 1e4).round() / 1e4).to_string();
                case.add_property(("reproduction_rate", rate.as_str()));
            }
            out.push_str(&reproduction_line(g));
            out.push('\n');
        }
        case.set_system_out(out);
        suite.add_test_case(case);
    }
    report.add_test_suite(suite);
    report
        .to_string()
        .unwrap_or_else(|e| format!("<!-- junit serialisation failed: {e} -->"))
}

/// `reproduction: 3 of 20 runs failed (15.0%); failing seeds 44, 51, 58`.
fn reproduction_line(g: &Reproduction) -> String {
    let mut line = format!(
        "reproduction: {} of {} run{} failed ({})",
        g.failed,
        g.runs,
        if g.runs == 1 { "" } else { "s" },
        g.percent()
    );
    if g.errors > 0 {
        line.push_str(&format!(
            ", {} error{}",
            g.errors,
            if g.errors == 1 { "" } else { "s" }
        ));
    }
    if g.skipped > 0 {
        line.push_str(&format!(", {} skipped", g.skipped));
    }
    if !g.failed_seeds.is_empty() {
        let seeds: Vec<String> = g.failed_seeds.iter().map(u64::to_string).collect();
        line.push_str(&format!("; failing seeds {}", seeds.join(", ")));
    }
    line
}
