//! `harness explore` and `harness shrink` through the library: drawn runs
//! replay from their seed and are valid scenarios; exploring a planted bug
//! finds it; shrinking cuts a failing scenario down to the step that
//! matters and writes a file that `harness run` plays and catches; a
//! finding's expectation binds only the implementations it names.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

use harness::explore::draw::{draw, Base, Vocabulary};
use harness::explore::shrink::{self, Job, ShrinkOptions};
use harness::explore::{self, Draft, ExploreOptions, Progress};
use harness::implementation::Implementation;
use harness::report::Status;
use harness::runner::{run, RunOptions};
use harness::scenario::{Kind, Recipe};
use harness::target::TargetSpec;

fn bases() -> Vec<Base> {
    let mut b: Vec<Base> = [
        Kind::Exclusive,
        Kind::ReadWrite,
        Kind::Semaphore,
        Kind::Reentrant,
    ]
    .into_iter()
    .map(Base::Kind)
    .collect();
    b.extend(Recipe::ALL.into_iter().map(Base::Recipe));
    b
}

#[test]
fn drawn_runs_replay_from_the_seed_and_are_valid_scenarios() {
    for servers in [1, 3] {
        let v = Vocabulary {
            servers,
            ..Vocabulary::default()
        };
        for base in bases() {
            let mut distinct = BTreeSet::new();
            for i in 0..150 {
                let d = draw(&base, &v, 42, i);
                assert_eq!(
                    d,
                    draw(&base, &v, 42, i),
                    "run {i} of {} drew twice differently",
                    base.label()
                );
                let file = PathBuf::from(format!("{}.yaml", d.name.clone().unwrap()));
                if let Err(e) = d.load(&file) {
                    panic!(
                        "run {i} of {} is not a valid scenario: {e}\n{}",
                        base.label(),
                        d.to_yaml().unwrap()
                    );
                }
                distinct.insert(d.to_yaml().unwrap());
            }
            assert_eq!(
                distinct.len(),
                150,
                "{}: runs drew the same scenario",
                base.label()
            );
        }
    }
}

#[test]
fn drawn_runs_use_the_whole_fault_vocabulary() {
    let mut seen = BTreeSet::new();
    let v = Vocabulary {
        servers: 3,
        ..Vocabulary::default()
    };
    for i in 0..600 {
        let d = draw(&Base::Kind(Kind::Exclusive), &v, 7, i);
        for step in &d.timeline {
            seen.insert(explore::draft::action_of(step).to_string());
            for anchor in ["at", "on"] {
                if let Some(a) = step.get(anchor) {
                    match a {
                        serde_json::Value::Object(m) => {
                            seen.extend(m.keys().map(|k| format!("on {k}")));
                        }
                        _ => {
                            seen.insert(anchor.to_string());
                        }
                    }
                }
            }
            if let Some(serde_json::Value::Object(f)) = step.get("fail") {
                seen.insert(format!("code {}", f["code"].as_str().unwrap()));
            }
        }
        if d.server
            .as_ref()
            .is_some_and(|s| s.contains_key("expiry_cleanup_delay"))
        {
            seen.insert("expiry_cleanup_delay".into());
        }
        seen.extend(
            d.fault_kinds()
                .into_iter()
                .filter(|k| k.starts_with("sequence wrap")),
        );
    }
    for want in [
        "disconnect",
        "stall",
        "expire",
        "crash",
        "close",
        "refuse_connections",
        "lose_reply",
        "drop_request",
        "fail",
        "delay",
        "kill_server",
        "restart_server",
        "partition_server",
        "heal_server",
        "lag",
        "leader_election",
        "at",
        "on holds",
        "on waiting",
        "on acquisitions",
        "code ConnectionLoss",
        "code OperationTimeout",
        "code ThrottledOp",
        "code SessionExpired",
        "expiry_cleanup_delay",
        "sequence wrap past 2147483647",
        "sequence wrap past -1",
    ] {
        assert!(seen.contains(want), "never drawn: {want} (drawn: {seen:?})");
    }
}

/// A drawn counter start puts a wrap among the run's first acquisitions,
/// only for locks that queue sequential nodes, and only on the mock.
#[test]
fn sequence_wraps_are_drawn_where_a_counter_can_be_set() {
    let mut drawn = 0;
    for base in bases() {
        for (wraps, i) in [true, false]
            .into_iter()
            .flat_map(|w| (0..200).map(move |i| (w, i)))
        {
            let v = Vocabulary {
                sequence_wraps: wraps,
                ..Vocabulary::default()
            };
            let d = draw(&base, &v, 11, i);
            let Some(start) = d.sequence_start() else {
                continue;
            };
            assert!(wraps, "{}: drawn with wraps off", base.label());
            // Validation refuses a counter start for a lock with no
            // sequential nodes in its directory (a semaphore, the naive
            // recipes).
            let file = PathBuf::from(format!("{}.yaml", d.name.clone().unwrap()));
            if let Err(e) = d.load(&file) {
                panic!("{}: drawn where it cannot be played: {e}", base.label());
            }
            let (last, kind) = if start > 0 {
                (i64::from(i32::MAX), "sequence wrap past 2147483647")
            } else {
                (-1, "sequence wrap past -1")
            };
            assert!(
                (0..3).contains(&(last - start)),
                "{}: start {start}",
                base.label()
            );
            assert!(d.fault_kinds().contains(&kind.to_string()), "{kind}");
            drawn += 1;
        }
    }
    assert!(
        drawn > 100,
        "{drawn} of {} runs drew a wrap",
        bases().len() * 200
    );
}

fn shrink_options(tries: usize) -> ShrinkOptions {
    ShrinkOptions {
        implementation: Implementation::ZkLock,
        target: TargetSpec::Mock,
        tries,
        jobs: 8,
        rate_runs: 10,
        budget: Some(Duration::from_secs(240)),
        pool: None,
    }
}

/// broken-release-once's planted bug with three steps of noise around its
/// one fault: shrinking keeps the fault alone, and the file it writes is
/// caught by a plain run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shrinking_keeps_only_the_fault_that_matters() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/negative");
    let file = root.join("broken-release-once.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    let mut d = Draft::parse(&file, &text).unwrap();
    d.expect = None;
    let noise: Vec<serde_json::Map<String, serde_json::Value>> = serde_json::from_str(
        r#"[
            {"at": "0ms", "delay": {"op": "getData", "client": "waiter.0", "for": "100ms"}},
            {"at": "5ms", "disconnect": "waiter.1"},
            {"on": {"acquisitions": 1}, "lose_reply": {"op": "exists", "client": "waiter.1"}}
        ]"#,
    )
    .unwrap();
    let fault = d.timeline.remove(0);
    d.timeline = vec![noise[0].clone(), noise[1].clone(), fault, noise[2].clone()];
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("release-once-shrunk.yaml");
    let job = Job {
        draft: d,
        seed: 5,
        violated: ["liveness".to_string(), "no_orphans".to_string()].into(),
        record: None,
        found_by: None,
        out: out.clone(),
    };
    let used = AtomicUsize::new(0);
    let s = shrink::shrink(job, &shrink_options(3), &used)
        .await
        .unwrap();
    let written = std::fs::read_to_string(&out).unwrap();
    assert_eq!(s.steps, 1, "{written}");
    assert!(written.contains("drop_request"), "{written}");
    assert!(s.clients <= 3, "{written}");
    assert!(
        s.reproduced * 10 >= s.runs * 9,
        "reproduced {}/{}:\n{written}",
        s.reproduced,
        s.runs
    );
    assert!(written.contains("shrunk by harness shrink"), "{written}");
    // The file plays as a negative scenario and is caught.
    let loaded = harness::scenario::load(&out).unwrap();
    assert!(!loaded.scenario.expect.violated.is_empty());
    let o = run(&loaded, &RunOptions::mock(Some(99))).await;
    assert_eq!(
        o.status,
        Status::Caught,
        "{}",
        harness::report::failure_details(&o)
    );
}

/// A recipe that takes a lost create for a success: exploring it from
/// nothing finds a mutual-exclusion violation, and `shrink` on its record
/// gives a scenario that reproduces it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exploring_a_broken_recipe_finds_its_bug() {
    let dir = tempfile::tempdir().unwrap();
    let opts = ExploreOptions {
        base: Base::Recipe(Recipe::BrokenIgnoresConnectionLoss),
        vocabulary: Vocabulary::default(),
        implementation: Implementation::ZkLock,
        target: TargetSpec::Mock,
        seed: 11,
        runs: Some(200),
        budget: None,
        jobs: 16,
        shard: (0, 1),
        out: dir.path().to_path_buf(),
        shrink: false,
        shrink_options: shrink_options(3),
        shrink_total: None,
    };
    let e = explore::explore(&opts, Arc::new(Progress::default()))
        .await
        .unwrap();
    let report = explore::report(&e);
    assert_eq!(e.runs, 200, "{report}");
    assert!(
        e.findings
            .iter()
            .any(|f| f.signature.violated.iter().any(|v| v == "mutual_exclusion")),
        "no mutual-exclusion finding:\n{report}"
    );
    assert!(dir.path().join("report.json").exists());
    // Every failing run's record names its scenario file, which exists.
    let records_file = dir.path().join("records.jsonl");
    let records = harness::record::RunRecord::read_all(&records_file).unwrap();
    for r in &records {
        assert!(Path::new(&r.file).exists(), "{}", r.file);
    }
    // `harness shrink` on the first record that broke mutual exclusion and
    // fails again: a run found by luck in a race (a lost create's reply
    // arriving just so) may not fail in the three tries shrink gives it,
    // and shrink says so (`NoLongerFails`) rather than shrinking it; the
    // next record of the same bug is tried then, as a user would.
    let out = dir.path().join("shrunk.yaml");
    let used = AtomicUsize::new(0);
    let mut not_again = 0;
    let mut shrunk = None;
    for (index, r) in records.iter().enumerate() {
        if !harness::check::outcome(r)
            .violated()
            .contains(&"mutual_exclusion")
        {
            continue;
        }
        let (job, _) = shrink::job_from_record(&records_file, index, Some(out.clone())).unwrap();
        match shrink::shrink(job, &shrink_options(3), &used).await {
            Ok(s) => {
                shrunk = Some(s);
                break;
            }
            Err(shrink::ShrinkError::NoLongerFails(_)) => not_again += 1,
            Err(e) => panic!("shrink: {e}"),
        }
    }
    let s = shrunk.unwrap_or_else(|| {
        panic!("no mutual-exclusion record failed again ({not_again} tried):\n{report}")
    });
    let written = std::fs::read_to_string(&out).unwrap();
    // Smaller, still a scenario that plays, and its rate measured (how often
    // a race found by luck fails again varies: the rate says so).
    assert!(
        s.steps <= s.original_steps && s.clients <= s.original_clients,
        "{written}"
    );
    assert_eq!(s.runs, 10, "{written}");
    let loaded = harness::scenario::load(&out).unwrap();
    assert!(
        loaded
            .scenario
            .expect
            .violated
            .iter()
            .any(|v| v == "mutual_exclusion" || v == "fencing"),
        "{written}"
    );
    let words = loaded
        .scenario
        .description
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        words.contains(&format!("Reproduced in {} of 10 runs", s.reproduced)),
        "{written}"
    );
}

/// An expectation scoped to one implementation binds that one only: the
/// others must keep every invariant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expectation_binds_only_the_implementations_it_names() {
    let text = |imps: &str| {
        format!(
            "lock: {{kind: exclusive}}\nclients:\n  - name: a\n    count: 2\n    hold: 5ms\nexpect:\n  violated: [mutual_exclusion]\n  implementations: [{imps}]\n"
        )
    };
    let other = harness::scenario::parse(Path::new("other.yaml"), &text("kazoo")).unwrap();
    let o = run(&other, &RunOptions::mock(Some(1))).await;
    assert_eq!(
        o.status,
        Status::Passed,
        "{}",
        harness::report::failure_details(&o)
    );
    let mine = harness::scenario::parse(Path::new("mine.yaml"), &text("zk-lock")).unwrap();
    let o = run(&mine, &RunOptions::mock(Some(1))).await;
    assert_eq!(
        o.status,
        Status::Failed,
        "zk-lock keeps mutual exclusion: not caught"
    );
}
