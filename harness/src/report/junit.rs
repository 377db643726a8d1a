//! The JUnit XML report (`--junit`).

use super::{failure_details, Outcome, Status};

/// A JUnit XML report: one test suite, one test case per scenario.
pub fn junit(outcomes: &[Outcome]) -> String {
    use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
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
        case.set_system_out(format!(
            "seed {}\nreplay: {}\nacquisitions {} hand-offs {} max notifications per hand-off {}\n",
            o.seed,
            o.replay,
            o.stats.acquisitions,
            o.stats.handoffs,
            o.stats
                .max_notifications_per_handoff
                .map(|n| n.to_string())
                .unwrap_or_else(|| "-".into())
        ));
        suite.add_test_case(case);
    }
    report.add_test_suite(suite);
    report
        .to_string()
        .unwrap_or_else(|e| format!("<!-- junit serialisation failed: {e} -->"))
}
