//! The `harness` binary: exit codes, error messages for bad files, reports.

use std::path::Path;
use std::process::Command;

fn harness() -> Command {
    Command::new(env!("CARGO_BIN_EXE_harness"))
}

fn scenario(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn a_broken_file_gets_file_line_column_and_what_was_expected() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.yaml");
    std::fs::write(
        &f,
        "lock:\n  recipe: predecessor\nclients:\n  - name: w\n    count: 3\n    hold: 5 parsecs\n",
    )
    .unwrap();
    let out = harness().args(["run", "--quiet"]).arg(&f).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{}:6:", f.display())), "{err}");
    assert!(err.contains("\"5 parsecs\", expected a duration"), "{err}");

    std::fs::write(&f, "lock:\n  recipe: predecessor\nclients:\n  - name: w\ntimeline:\n  - at: 1s\n    expire: nobody\n").unwrap();
    let out = harness().arg("check").arg(&f).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{}:6:", f.display())), "{err}");
    assert!(err.contains("unknown client or group \"nobody\""), "{err}");
}

#[test]
fn the_library_is_valid() {
    let out = harness().arg("check").arg(scenario("")).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn passing_and_caught_runs_exit_zero_and_write_reports() {
    let dir = tempfile::tempdir().unwrap();
    let (json, junit) = (dir.path().join("r.json"), dir.path().join("r.xml"));
    let out = harness()
        .args(["run", "--quiet", "--seed", "5"])
        .arg(scenario("predecessor-basic.yaml"))
        .arg(scenario("negative/broken-no-recheck.yaml"))
        .arg("--json")
        .arg(&json)
        .arg("--junit")
        .arg(&junit)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("1 passed, 1 caught"), "{stdout}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["passed"], true);
    assert_eq!(doc["scenarios"].as_array().unwrap().len(), 2);
    assert_eq!(doc["scenarios"][0]["seed"], 5);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("<testsuite name=\"scenarios\" tests=\"2\""),
        "{xml}"
    );
    assert!(xml.contains("failures=\"0\""), "{xml}");
}

#[test]
fn a_failing_scenario_exits_non_zero_with_its_replay_command() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("fails.yaml");
    // The broken lock with the expectation removed: a real failure.
    let text = std::fs::read_to_string(scenario("negative/broken-ignores-connection-loss.yaml"))
        .unwrap()
        .replace("expect:\n  violated: [mutual_exclusion]\n", "");
    std::fs::write(&f, text).unwrap();
    let junit = dir.path().join("r.xml");
    let out = harness()
        .args(["run", "--quiet", "--seed", "11"])
        .arg(&f)
        .arg("--junit")
        .arg(&junit)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mutual_exclusion: VIOLATED"), "{err}");
    assert!(
        err.contains("replay: cargo run --release -p harness -- run"),
        "{err}"
    );
    assert!(err.contains("--seed 11"), "{err}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("<failure"), "{xml}");
    assert!(xml.contains("failures=\"1\""), "{xml}");
}

/// `run --record` writes what `judge` judges again, with the same verdict;
/// a line that is not a record is an error naming the file and line.
#[test]
fn a_recorded_run_is_judged_again() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("runs.jsonl");
    let out = harness()
        .args(["run", "--quiet", "--seed", "7", "--record"])
        .arg(&rec)
        .arg(scenario("negative/broken-release-once.yaml"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = harness().arg("judge").arg(&rec).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("caught"), "{text}");
    assert!(text.contains("liveness, no_orphans"), "{text}");

    let mut lines = std::fs::read_to_string(&rec).unwrap();
    lines.push_str("{\"format\": 1, \"scenario\": \n");
    std::fs::write(&rec, lines).unwrap();
    let out = harness().arg("judge").arg(&rec).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}:2: not a run record", rec.display())),
        "{err}"
    );
}
