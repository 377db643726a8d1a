//! The `harness` binary: exit codes, error messages for bad files, reports.

use std::path::Path;
use std::process::Command;

fn harness() -> Command {
    Command::new(env!("CARGO_BIN_EXE_harness"))
}

/// The standard output of a run that must have exited with success (else
/// the test fails with both outputs).
fn succeeded(out: &std::process::Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
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
    let stdout = succeeded(&out);
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

/// `--jobs 4` plays runs at once: the report keeps the order of the
/// scenarios and the repeats, each run keeps its seed, and the verdicts are
/// those of one run at a time.
#[test]
fn runs_at_once_report_in_order_with_their_seeds() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = harness()
        .args([
            "run", "--quiet", "--jobs", "4", "--repeat", "3", "--seed", "40",
        ])
        .arg(scenario("holder-expires.yaml"))
        .arg(scenario("negative/broken-no-recheck.yaml"))
        .arg(scenario("predecessor-basic.yaml"))
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = succeeded(&out);
    assert!(stdout.contains("6 passed, 3 caught"), "{stdout}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let runs: Vec<(String, u64)> = doc["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["seed"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut expected = Vec::new();
    for rep in 0..3 {
        for name in ["holder-expires", "broken-no-recheck", "predecessor-basic"] {
            expected.push((name.to_string(), 40 + rep));
        }
    }
    assert_eq!(runs, expected);
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

/// `run --repeat 3 --seed 11` plays each scenario with seeds 11, 12, 13 and
/// reports how often each failed: a table on the terminal, a
/// `reproduction` array in the JSON that agrees with its `scenarios`, and
/// the rate on every JUnit test case of the scenario.
#[test]
fn repeated_runs_report_each_scenarios_reproduction_rate() {
    let dir = tempfile::tempdir().unwrap();
    let fails = dir.path().join("fails.yaml");
    let text = std::fs::read_to_string(scenario("negative/broken-ignores-connection-loss.yaml"))
        .unwrap()
        .replace("expect:\n  violated: [mutual_exclusion]\n", "");
    std::fs::write(&fails, text).unwrap();
    let (json, junit) = (dir.path().join("r.json"), dir.path().join("r.xml"));
    let passes = scenario("predecessor-basic.yaml");
    let out = harness()
        .args(["run", "--quiet", "--repeat", "3", "--seed", "11"])
        .arg(&passes)
        .arg(&fails)
        .arg("--json")
        .arg(&json)
        .arg("--junit")
        .arg(&junit)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let runs = doc["scenarios"].as_array().unwrap();
    assert_eq!(runs.len(), 6);
    let reproduction = doc["reproduction"].as_array().unwrap();
    assert_eq!(reproduction.len(), 2, "{reproduction:?}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    for (entry, file, name) in [
        (&reproduction[0], passes.clone(), "predecessor-basic"),
        (&reproduction[1], fails.display().to_string(), "fails"),
    ] {
        assert_eq!(entry["file"], file.as_str());
        assert_eq!(entry["scenario"], name);
        assert_eq!(entry["implementation"], "zk-lock");
        assert_eq!(entry["target"], "mock");
        // What the scenarios' own statuses say.
        let mine: Vec<&serde_json::Value> =
            runs.iter().filter(|o| o["file"] == file.as_str()).collect();
        let seeds: Vec<u64> = mine.iter().map(|o| o["seed"].as_u64().unwrap()).collect();
        assert_eq!(seeds, vec![11, 12, 13], "{name}");
        let failed_seeds: Vec<u64> = mine
            .iter()
            .filter(|o| o["status"] == "failed")
            .map(|o| o["seed"].as_u64().unwrap())
            .collect();
        let errors = mine.iter().filter(|o| o["status"] == "error").count();
        let failed = failed_seeds.len();
        assert_eq!(entry["runs"], 3, "{name}");
        assert_eq!(entry["failed"], failed, "{name}");
        assert_eq!(entry["errors"], errors, "{name}");
        assert_eq!(entry["skipped"], 0, "{name}");
        assert_eq!(
            entry["failed_seeds"],
            serde_json::json!(failed_seeds),
            "{name}"
        );
        assert_eq!(entry["rate"].as_f64(), Some(failed as f64 / 3.0), "{name}");
        // The terminal's table.
        let line = stdout
            .lines()
            .skip_while(|l| *l != "reproduction")
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no reproduction line for {name}: {stdout}"));
        let rate = format!("{failed}/3 {:.1}%", failed as f64 * 100.0 / 3.0);
        assert!(line.contains(&rate), "{line}");
        let seeds: Vec<String> = failed_seeds.iter().map(u64::to_string).collect();
        assert!(line.trim_end().ends_with(&seeds.join(", ")), "{line}");
        // Every JUnit test case of the scenario.
        let property = format!("<property name=\"reproduction\" value=\"{failed}/3\"/>");
        let cases: Vec<&str> = xml
            .split("<testcase ")
            .filter(|c| c.starts_with(&format!("name=\"{name}\"")))
            .collect();
        assert_eq!(cases.len(), 3, "{xml}");
        assert!(cases.iter().all(|c| c.contains(&property)), "{xml}");
    }
    assert_eq!(reproduction[0]["failed"], 0, "{stdout}");
    assert!(reproduction[1]["failed"].as_u64().unwrap() >= 1, "{stdout}");
    assert!(
        xml.contains("reproduction: 0 of 3 runs failed (0.0%)"),
        "{xml}"
    );
}
