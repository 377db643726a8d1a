//! The HTML report of real runs renders in headless Chromium: the DOM that
//! Chromium builds from the page keeps every element the report wrote (one
//! SVG timeline per scenario, one lane per client, the fault bands and
//! labels, the hand-off markers), and a screenshot comes out.
//!
//! Needs Debian's `chromium` package (`apt-get install -y chromium`; another
//! binary with `CHROMIUM=/path/to/chrome`):
//!
//! ```sh
//! cargo test -p harness --features chromium --test html_chromium
//! ```
//!
//! The user guide's picture of a failing run, `docs/images/report-timeline.png`,
//! is a screenshot this test takes (always written to
//! `target/docs-images/report-timeline.png`). To update the copy in the
//! repository:
//!
//! ```sh
//! UPDATE_DOCS_IMAGES=1 cargo test -p harness --features chromium --test html_chromium
//! ```
#![cfg(feature = "chromium")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use harness::journal::Event;
use harness::report::{failure_details, Outcome, Status};
use harness::runner::{run, RunOptions};
use harness::target::TargetSpec;

/// The holder loses its connection while the waiters queue; it comes back
/// within the session timeout and the queue goes on.
const DISCONNECT: &str = "\
description: The holder is <disconnected> & reconnects within its session.
server:
  session_timeout: 2s
lock:
  recipe: predecessor
clients:
  - name: holder
    hold: 400ms
  - name: waiter
    count: 3
    start: 50ms
    hold: 20ms
timeline:
  - on: {waiting: waiter}
    disconnect: holder
";

/// The holder's session expires while it holds: it is lost, then expired.
const EXPIRE: &str = "\
description: The holder's session expires while it holds the lock.
server:
  session_timeout: 1s
lock:
  recipe: predecessor
clients:
  - name: holder
    hold: 2s
    on_expiry: stop
  - name: waiter
    count: 2
    start: 100ms
    hold: 20ms
timeline:
  - on: {waiting: waiter}
    expire: holder
";

fn chromium() -> String {
    std::env::var("CHROMIUM").unwrap_or_else(|_| "chromium".to_string())
}

/// Runs Chromium headless with `args`, killing it after `limit`.
fn run_chromium(args: &[String], limit: Duration) -> Output {
    let mut child = Command::new(chromium())
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--hide-scrollbars",
        ])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start `{}` ({e}): apt-get install -y chromium, or set CHROMIUM",
                chromium()
            )
        });
    // Read the pipes on threads so that a large DOM cannot block Chromium.
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = std::io::Read::read_to_end(&mut out, &mut v);
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = std::io::Read::read_to_end(&mut err, &mut v);
        v
    });
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for chromium") {
            break s;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: out_t.join().unwrap_or_default(),
        stderr: err_t.join().unwrap_or_default(),
    }
}

async fn play(name: &str, text: &str) -> Outcome {
    let loaded = harness::scenario::parse(Path::new(name), text).unwrap_or_else(|e| panic!("{e}"));
    let outcome = run(
        &loaded,
        &RunOptions {
            target: TargetSpec::Mock,
            seed: Some(11),
            implementation: harness::implementation::Implementation::ZkLock,
            progress: None,
            pool: None,
        },
    )
    .await;
    // The report is what is under test, not the lock: any verdict will do
    // as long as the scenario ran.
    assert!(
        !matches!(outcome.status, Status::Error | Status::Skipped),
        "{}",
        failure_details(&outcome)
    );
    outcome
}

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_renders_in_headless_chromium() {
    let outcomes = vec![
        play("html-disconnect.yaml", DISCONNECT).await,
        play("html-expire.yaml", EXPIRE).await,
    ];
    let clients: usize = outcomes.iter().map(|o| o.clients.len()).sum();
    assert_eq!(clients, 4 + 3);
    let html = harness::report::html(&outcomes);

    let dir = tempfile::tempdir().expect("tempdir");
    let page: PathBuf = dir.path().join("report.html");
    std::fs::write(&page, &html).expect("write the report");
    let url = format!("file://{}", page.display());
    let profile = dir.path().join("profile");

    // The DOM Chromium built from the page.
    let dumped = run_chromium(
        &[
            format!("--user-data-dir={}", profile.display()),
            "--dump-dom".into(),
            url.clone(),
        ],
        Duration::from_secs(120),
    );
    let dom = String::from_utf8_lossy(&dumped.stdout).into_owned();
    assert!(
        dumped.status.success() && dom.contains("</html>"),
        "chromium --dump-dom failed ({}): {}",
        dumped.status,
        String::from_utf8_lossy(&dumped.stderr)
    );

    // The timelines are there, as SVG, one per scenario, one lane per client.
    assert_eq!(count(&dom, "<svg"), 2, "one SVG per scenario");
    assert_eq!(
        count(&dom, "<g class=\"lane\""),
        clients,
        "one lane per client"
    );
    for c in ["holder", "waiter.0", "waiter.1", "waiter.2"] {
        assert!(
            dom.contains(&format!("data-client=\"{c}\"")),
            "no lane for {c}"
        );
    }
    assert!(dom.contains(">disconnect holder</text>"), "fault label");
    assert!(dom.contains(">expire holder</text>"), "fault label");
    assert!(count(&dom, "class=\"fault\"") >= 2, "fault bands");
    assert!(count(&dom, "<g class=\"handoff\"") >= 4, "hand-off markers");
    assert!(dom.contains("class=\"seg holding\""));
    assert!(
        dom.contains("class=\"mark fault\""),
        "the fault marks its client's lane"
    );
    assert!(
        dom.contains("class=\"seg expired\""),
        "the holder's session expired"
    );
    assert!(dom.contains("The holder is &lt;disconnected&gt; &amp; reconnects"));

    // Nothing was lost or re-nested by the parser: every element the report
    // wrote is in the DOM, as many times.
    for tag in [
        "<svg", "<g ", "<rect", "<path", "<line", "<text", "<title", "<section", "<table", "<tr",
        "<td", "<details", "<a ",
    ] {
        assert_eq!(
            count(&dom, tag),
            count(&html, tag),
            "{tag} elements: the page has {}, Chromium's DOM {}",
            count(&html, tag),
            count(&dom, tag)
        );
    }

    // And it paints.
    let png = dir.path().join("report.png");
    let shot = run_chromium(
        &[
            format!("--user-data-dir={}", profile.display()),
            format!("--screenshot={}", png.display()),
            "--window-size=1300,1600".into(),
            url,
        ],
        Duration::from_secs(120),
    );
    let bytes = std::fs::read(&png).unwrap_or_else(|e| {
        panic!(
            "no screenshot ({e}); chromium {}: {}",
            shot.status,
            String::from_utf8_lossy(&shot.stderr)
        )
    });
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    assert!(bytes.len() > 10_000, "suspiciously small screenshot");
    if let Ok(keep) = std::env::var("HTML_REPORT_KEEP") {
        let _ = std::fs::copy(&page, Path::new(&keep).join("report.html"));
        let _ = std::fs::copy(&png, Path::new(&keep).join("report.png"));
    }
}

/// A lock that fails: three clients queue, and when the one in the middle
/// expires, the last takes the lock while the holder still holds it (its
/// recipe does not list the queue again when its predecessor's node goes).
/// Each step waits on the one before (then 100 ms, to spread the picture
/// out); the holder holds for 1 s, far past the expiry at about 300 ms, so
/// the run fails the same way every time.
const OVERLAP: &str = "\
description: >-
  Three clients queue for the lock. The one in the middle expires while it
  waits; the last one must go on waiting for the holder, but its recipe takes
  the lock as soon as the node ahead of it goes.
server:
  session_timeout: 1s
lock:
  recipe: broken-no-recheck
clients:
  - name: holder
    hold: 1s
  - name: middle
    on_stampede: true
    hold: 20ms
    on_expiry: stop
  - name: last
    on_stampede: true
    hold: 300ms
timeline:
  - on: {holds: holder}
    after: 100ms
    stampede: middle
  - on: {waiting: middle}
    after: 100ms
    stampede: last
  - on: {waiting: last}
    after: 100ms
    expire: middle
";

/// The screenshot's size: the failing scenario's section, from its heading
/// (the verdict, the invariants) down to the timeline and its legend.
const SHOT_W: u32 = 1200;
const SHOT_H: u32 = 727;

/// A PNG's width and height, from its IHDR chunk.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    assert_eq!(&bytes[12..16], b"IHDR", "no IHDR chunk first");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&bytes[16..20]), be(&bytes[20..24]))
}

/// Screenshots `url` at `SHOT_W` x `SHOT_H` into `png`.
fn screenshot(profile: &Path, png: &Path, url: &str) -> Vec<u8> {
    let _ = std::fs::remove_file(png);
    let shot = run_chromium(
        &[
            format!("--user-data-dir={}", profile.display()),
            "--disable-background-networking".into(),
            format!("--screenshot={}", png.display()),
            format!("--window-size={SHOT_W},{SHOT_H}"),
            url.to_string(),
        ],
        Duration::from_secs(120),
    );
    std::fs::read(png).unwrap_or_else(|e| {
        panic!(
            "no screenshot of {url} ({e}); chromium {}: {}",
            shot.status,
            String::from_utf8_lossy(&shot.stderr)
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_run_timeline_screenshot() {
    let outcome = play("lock-queue.yaml", OVERLAP).await;

    // It fails, on mutual exclusion: the last client held the lock while
    // the holder still did.
    assert_eq!(
        outcome.status,
        Status::Failed,
        "{}",
        failure_details(&outcome)
    );
    let mutex = outcome
        .invariants
        .iter()
        .find(|i| i.name == "mutual_exclusion")
        .expect("mutual_exclusion is judged");
    assert!(
        mutex.checked && !mutex.held && !mutex.expected_violation,
        "{}",
        failure_details(&outcome)
    );
    assert!(
        outcome
            .resource_violations
            .iter()
            .any(|v| v.invariant == "mutual_exclusion"
                && v.detail.contains("last")
                && v.detail.contains("holder")),
        "{:?}",
        outcome.resource_violations
    );
    let first = |client: &str, what: fn(&Event) -> bool| {
        outcome
            .journal
            .iter()
            .find(|e| e.client == client && what(&e.event))
            .map(|e| e.t)
            .unwrap_or_else(|| panic!("{client}: not in the journal"))
    };
    let last_acquired = first("last", |e| matches!(e, Event::Acquired { .. }));
    let holder_released = first("holder", |e| matches!(e, Event::Released { .. }));
    assert!(
        last_acquired < holder_released,
        "the holds do not overlap: last acquired at {last_acquired:?}, holder released at {holder_released:?}"
    );

    let html = harness::report::html(std::slice::from_ref(&outcome));
    assert_eq!(
        count(&html, "<g class=\"violation\""),
        outcome.resource_violations.len()
    );
    assert!(html.contains(">expire middle</text>"), "fault label");
    let dir = tempfile::tempdir().expect("tempdir");
    let page = dir.path().join("report.html");
    std::fs::write(&page, &html).expect("write the report");
    let profile = dir.path().join("profile");

    // The scenario's section, from its heading: the report as it is, in a
    // frame of the screenshot's size scrolled to the section's anchor (a
    // top-level page scrolled to a fragment does not paint reliably in
    // headless mode; a frame does).
    let frame = dir.path().join("frame.html");
    std::fs::write(
        &frame,
        format!(
            "<!DOCTYPE html><html><body style=\"margin:0\"><iframe src=\"report.html#s1\" \
             style=\"border:0;display:block;width:{SHOT_W}px;height:{SHOT_H}px\"></iframe></body></html>"
        ),
    )
    .expect("write the frame");
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target directory")
        .join("docs-images");
    std::fs::create_dir_all(&out_dir).expect("create target/docs-images");
    // The page too, to look at in a browser.
    std::fs::write(out_dir.join("report-timeline.html"), &html).expect("write the report");
    let png = out_dir.join("report-timeline.png");
    let bytes = screenshot(&profile, &png, &format!("file://{}", frame.display()));
    assert_eq!(png_size(&bytes), (SHOT_W, SHOT_H), "screenshot size");

    // Not blank: a white page of the same size compresses to far less.
    let blank_page = dir.path().join("blank.html");
    std::fs::write(&blank_page, "<!DOCTYPE html><html><body></body></html>").expect("write");
    let blank = screenshot(
        &profile,
        &dir.path().join("blank.png"),
        &format!("file://{}", blank_page.display()),
    );
    assert_eq!(png_size(&blank), (SHOT_W, SHOT_H));
    assert!(
        bytes.len() > 5 * blank.len(),
        "the screenshot ({} bytes) looks blank (a blank page: {} bytes)",
        bytes.len(),
        blank.len()
    );
    assert!(
        bytes.len() < 400_000,
        "screenshot too large: {} bytes",
        bytes.len()
    );

    if std::env::var("UPDATE_DOCS_IMAGES").as_deref() == Ok("1") {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/images");
        std::fs::create_dir_all(&docs).expect("create docs/images");
        std::fs::copy(&png, docs.join("report-timeline.png")).expect("update docs/images");
    }
}
