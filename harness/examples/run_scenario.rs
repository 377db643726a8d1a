//! Runs a harness scenario from Rust code: a YAML scenario (written below,
//! or any scenario file given as an argument) played by zk-lock clients
//! against the embedded zk-mock, then judged. Prints the clients' timeline,
//! every invariant checked and the verdict.
//!
//! Run it from the workspace root:
//!
//! ```sh
//! cargo run --example run_scenario                                   # the scenario below
//! cargo run --example run_scenario -- scenarios/holder-expires.yaml  # any scenario file
//! ```
//!
//! It exits 0 only if the scenario passed (or, for a negative scenario, its
//! expected violations were caught), and non-zero otherwise.

use std::path::Path;
use std::process::ExitCode;

use harness::journal::Event;
use harness::report::{failure_details, Status};
use harness::runner::{run, RunOptions};

/// The scenario of `scenarios/holder-expires.yaml`, as a newcomer would
/// write one: the holder's session expires while it holds the lock; its
/// guard must report the loss, a waiter must take over, and nobody may touch
/// the guarded resource with the old fencing token afterwards.
/// `scenarios/README.md` documents every field.
const SCENARIO: &str = "\
description: |
  The holder's session expires while it holds the lock. Its guard must
  report the loss, the next waiter must take over, and no one may touch
  the resource with the old token afterwards.
server:
  session_timeout: 1s
lock:
  kind: exclusive          # a mutex (no recipe named: the implementation's own)
clients:
  - name: holder
    hold: 2s               # would hold for 2 s...
    on_expiry: stop        # ...but stops when its session expires
  - name: waiter
    count: 3               # waiter.0, waiter.1, waiter.2
    start: 100ms
    hold: 20ms
timeline:
  # As soon as a waiter is queued, the server expires the holder's session.
  - on: {waiting: waiter}
    expire: holder
invariants:
  liveness: 5s             # every acquisition within 5 s; the rest default on
";

/// The seed: it fixes the server's choices, so a run can be replayed.
const SEED: u64 = 42;

#[tokio::main]
async fn main() -> ExitCode {
    // The scenario: a file named on the command line, or the one above.
    let loaded = match std::env::args_os().nth(1) {
        Some(file) => harness::scenario::load(Path::new(&file)),
        None => harness::scenario::parse(Path::new("holder-expires-inline.yaml"), SCENARIO),
    };
    let scenario = match loaded {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cannot load the scenario: {e}");
            return ExitCode::FAILURE;
        }
    };
    let description: Vec<&str> = scenario.scenario.description.split_whitespace().collect();
    println!("scenario {}: {}", scenario.name, description.join(" "));

    // Play it: the embedded zk-mock, zk-lock in this process, a fixed seed.
    let outcome = run(&scenario, &RunOptions::mock(Some(SEED))).await;
    println!(
        "played by {} ({}) on the embedded zk-mock",
        outcome.implementation, outcome.recipe
    );

    // What the clients saw, as the harness journaled it (the interesting part).
    println!("\ntimeline:");
    for entry in &outcome.journal {
        let what = match &entry.event {
            Event::Acquired { token, .. } => format!("acquired the lock, token {token:#x}"),
            Event::Fault { what } => format!("fault: {what}"),
            Event::Lost => "its guard reports the lock lost".to_string(),
            Event::Expired => "its session expired".to_string(),
            Event::Released { ok } => format!("released (ok: {ok})"),
            _ => continue,
        };
        println!(
            "  {:>7.1} ms  {:<9} {what}",
            entry.t.as_secs_f64() * 1000.0,
            entry.client
        );
    }

    // Each invariant: checked or not (some cannot be on some targets), held or not.
    println!("\ninvariants:");
    for inv in &outcome.invariants {
        let verdict = match (inv.checked, inv.held, inv.expected_violation) {
            (false, _, _) => "not checked",
            (true, true, false) => "held",
            (true, false, true) => "violated, as expected",
            (true, true, true) => "held, but a violation was expected",
            (true, false, false) => "VIOLATED",
        };
        let evidence = inv.details.first().map(String::as_str).unwrap_or("");
        let line = format!("  {:<18} {verdict:<12} {evidence}", inv.name);
        println!("{}", line.trim_end());
    }
    let s = &outcome.stats;
    println!(
        "\n{} acquisitions, {} hand-offs, {} sessions, {} fault(s) applied, {:.0} ms",
        s.acquisitions,
        s.handoffs,
        s.sessions,
        outcome.faults.len(),
        outcome.duration_ms
    );
    println!("verdict: {:?} (seed {})", outcome.status, outcome.seed);

    // Passed, or Caught for a negative scenario. Skipped (not run on this
    // target) and the rest are failures here.
    if matches!(outcome.status, Status::Passed | Status::Caught) {
        ExitCode::SUCCESS
    } else {
        eprint!("{}", failure_details(&outcome));
        ExitCode::FAILURE
    }
}
