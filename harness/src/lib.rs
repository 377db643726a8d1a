//! # harness
//!
//! Plays YAML scenarios — many clients using a lock implementation while
//! faults are injected — against the embedded zk-mock (default) or a real
//! ZooKeeper, and checks the invariants lock code must keep: mutual
//! exclusion, liveness, no orphaned lock nodes, fencing, the loss of the
//! lock noticed, a fenced-mutex history, and notification budgets. The
//! implementation is zk-lock in this process or any library behind a driver
//! process ([`implementation`], `harness/DRIVERS.md`); `harness matrix` runs
//! the library on several ([`matrix`]). `scenarios/README.md` documents the
//! file format by example.
//!
//! A run is played by [`runner`] on a [`target`] (`mock`, or `real` with its
//! `proxy`, `observer` and `takeover`) and produces a plain
//! [`record::RunRecord`]; [`check`] judges it, each invariant a pure
//! function of the record (the guarded resource's own judgement in
//! [`resource`]); [`report`] writes the outcomes (`terminal`, `json`,
//! `junit`, `html`). Errors are typed ([`error`]).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let scenario = harness::scenario::load(std::path::Path::new("scenarios/holder-expires.yaml"))?;
//! let opts = harness::runner::RunOptions::mock(None);
//! let outcome = harness::runner::run(&scenario, &opts).await;
//! assert!(outcome.status.ok(), "{}", harness::report::failure_details(&outcome));
//! # Ok(()) }
//! ```

pub mod check;
pub mod error;
pub mod explore;
pub mod fault;
pub mod history;
pub mod implementation;
pub mod journal;
pub mod matrix;
pub mod record;
pub mod report;
pub mod resource;
pub mod runner;
pub mod scenario;
pub mod target;

pub use runner::HoldState;

/// Finds the scenario files under `paths` (files as given; folders: every
/// `*.yaml`/`*.yml` below them, sorted).
pub fn find_scenarios(paths: &[std::path::PathBuf]) -> std::io::Result<Vec<std::path::PathBuf>> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) -> std::io::Result<()> {
        let files = walkdir::WalkDir::new(dir)
            .follow_links(true)
            .sort_by_file_name()
            .into_iter();
        for entry in files {
            let entry = entry?;
            let p = entry.path();
            if entry.file_type().is_file()
                && matches!(p.extension().and_then(|x| x.to_str()), Some("yaml" | "yml"))
            {
                out.push(p.to_path_buf());
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out)?;
        } else if p.exists() {
            out.push(p.clone());
        } else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{}: no such file or directory", p.display()),
            ));
        }
    }
    Ok(out)
}
