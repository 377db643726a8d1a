//! The self-contained HTML report (`harness run --html FILE`).
//!
//! One page, no external resources and no script: a summary table linking to
//! one section per scenario. Each section has the description, the seed and
//! the replay command, the invariants with their evidence, the errors, and an
//! SVG timeline: one lane per client colored by the state derived from the
//! journal (connecting, connected, waiting, holding, suspended, lost,
//! expired, done), a dark strip while the client is inside the critical
//! section, shaded bands for the injected faults, markers for the lock
//! hand-offs with their notification counts, and the resource's violations
//! in red. Large scenarios draw at most [`MAX_LANES`] lanes, but always those
//! of the clients hit by a fault or named by a violation.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use super::{Handoff, Outcome, Status};
use crate::journal::{Entry, Event};

/// The most lanes one timeline draws (clients hit by faults or named by a
/// violation are drawn even beyond it).
pub(crate) const MAX_LANES: usize = 200;

/// Escapes text for HTML and SVG, in element content and in quoted
/// attributes alike. Control characters other than tab, newline and carriage
/// return (not allowed in HTML) become U+FFFD.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// A client's state on the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Connecting,
    Connected,
    Waiting,
    Holding,
    Suspended,
    Lost,
    Expired,
    /// Crashed by a fault: the client is gone, its session left to expire.
    Crashed,
    Done,
}

impl State {
    const ALL: [State; 9] = [
        State::Connecting,
        State::Connected,
        State::Waiting,
        State::Holding,
        State::Suspended,
        State::Lost,
        State::Expired,
        State::Crashed,
        State::Done,
    ];

    fn name(self) -> &'static str {
        match self {
            State::Connecting => "connecting",
            State::Connected => "connected",
            State::Waiting => "waiting",
            State::Holding => "holding",
            State::Suspended => "suspended",
            State::Lost => "lost",
            State::Expired => "expired",
            State::Crashed => "crashed",
            State::Done => "done",
        }
    }

    fn color(self) -> &'static str {
        match self {
            State::Connecting => "#b0bec5",
            State::Connected => "#e3e8ec",
            State::Waiting => "#ffd54f",
            State::Holding => "#43a047",
            State::Suspended => "#fb8c00",
            State::Lost => "#8e24aa",
            State::Expired => "#37474f",
            State::Crashed => "#6d4c41",
            State::Done => "#f5f5f5",
        }
    }
}

#[derive(Debug)]
struct Segment {
    state: State,
    from: f64,
    to: f64,
}

#[derive(Debug)]
struct Mark {
    t: f64,
    /// `fault`, `gave-up`, `error` or `release-failed`.
    kind: &'static str,
    text: String,
}

#[derive(Debug, Default)]
struct Lane {
    segments: Vec<Segment>,
    /// Inside the critical section (Enter..Exit).
    inside: Vec<(f64, f64)>,
    marks: Vec<Mark>,
}

fn ms(e: &Entry) -> f64 {
    e.t.as_secs_f64() * 1000.0
}

/// Derives one client's lane from its events (in journal order).
fn lane_of(events: &[&Entry], end: f64) -> Lane {
    let mut lane = Lane::default();
    let mut cur: Option<(State, f64)> = None;
    let mut inside_since: Option<f64> = None;
    fn set(lane: &mut Lane, cur: &mut Option<(State, f64)>, s: State, t: f64) {
        if let Some((old, from)) = *cur {
            if old == s {
                return;
            }
            lane.segments.push(Segment {
                state: old,
                from,
                to: t,
            });
        }
        *cur = Some((s, t));
    }
    for e in events {
        let t = ms(e);
        let now = cur.map(|c| c.0);
        match &e.event {
            Event::Connecting => set(&mut lane, &mut cur, State::Connecting, t),
            Event::Connected { .. } => set(&mut lane, &mut cur, State::Connected, t),
            Event::Waiting { .. } => set(&mut lane, &mut cur, State::Waiting, t),
            Event::Acquired { .. } | Event::Resumed => set(&mut lane, &mut cur, State::Holding, t),
            Event::Suspended => set(&mut lane, &mut cur, State::Suspended, t),
            Event::Lost => set(&mut lane, &mut cur, State::Lost, t),
            Event::Expired => set(&mut lane, &mut cur, State::Expired, t),
            Event::GaveUp { reason, .. } => {
                lane.marks.push(Mark {
                    t,
                    kind: "gave-up",
                    text: format!("gave up ({reason})"),
                });
                set(&mut lane, &mut cur, State::Connected, t);
            }
            Event::Error { message, .. } => {
                lane.marks.push(Mark {
                    t,
                    kind: "error",
                    text: format!("error: {message}"),
                });
                if now != Some(State::Expired) {
                    set(&mut lane, &mut cur, State::Connected, t);
                }
            }
            Event::Released { ok } => {
                if !ok {
                    lane.marks.push(Mark {
                        t,
                        kind: "release-failed",
                        text: "release failed".into(),
                    });
                }
                set(&mut lane, &mut cur, State::Connected, t);
            }
            Event::Enter { .. } => {
                inside_since.get_or_insert(t);
            }
            Event::Exit { .. } => {
                if let Some(from) = inside_since.take() {
                    lane.inside.push((from, t));
                }
            }
            Event::Fault { what } => {
                lane.marks.push(Mark {
                    t,
                    kind: "fault",
                    text: format!("fault: {what}"),
                });
                if what == "crash" {
                    set(&mut lane, &mut cur, State::Crashed, t);
                }
            }
            Event::Releasing => {}
            // An expired session stays expired on the lane when the client stops.
            Event::Done => {
                if !matches!(now, Some(State::Expired | State::Crashed)) {
                    set(&mut lane, &mut cur, State::Done, t);
                }
            }
        }
    }
    if let Some((s, from)) = cur {
        lane.segments.push(Segment {
            state: s,
            from,
            to: end.max(from),
        });
    }
    if let Some(from) = inside_since {
        lane.inside.push((from, end.max(from)));
    }
    lane
}

/// Whether `name` occurs in `text` as a whole client name (not as the prefix
/// of a longer one: `w.1` is not in `w.10`).
fn mentions(text: &str, name: &str) -> bool {
    if name.is_empty() {
        return false;
    }
    let is_name_char = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    let mut start = 0;
    while let Some(pos) = text[start..].find(name) {
        let at = start + pos;
        let before_ok = text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !is_name_char(c));
        let rest = &text[at + name.len()..];
        let mut it = rest.chars();
        let after_ok = match it.next() {
            None => true,
            Some('.') => !it.next().is_some_and(is_name_char),
            Some(c) => !is_name_char(c),
        };
        if before_ok && after_ok {
            return true;
        }
        start = at + name.chars().next().map_or(1, char::len_utf8);
    }
    false
}

/// The lanes of a scenario: every client (in order, then any other name the
/// journal has); the clients hit by a fault; those named by a violation;
/// those whose lanes must be drawn (named, or hit by a fault on a few).
fn lane_names(o: &Outcome) -> LaneNames {
    let mut names: Vec<String> = o.clients.clone();
    let mut known: BTreeSet<&str> = o.clients.iter().map(String::as_str).collect();
    let mut extra = Vec::new();
    for e in &o.journal {
        if known.insert(e.client.as_str()) {
            extra.push(e.client.clone());
        }
    }
    names.extend(extra);
    let hit: BTreeSet<String> = o
        .faults
        .iter()
        .flat_map(|f| f.clients.iter().cloned())
        .collect();
    // A fault that hits a crowd (a stampede, a crash of everyone) does not
    // single anyone out: only smaller ones force their clients' lanes.
    let forced: BTreeSet<String> = o
        .faults
        .iter()
        .filter(|f| f.clients.len() <= MAX_LANES / 4)
        .flat_map(|f| f.clients.iter().cloned())
        .collect();
    let texts: Vec<&str> = o
        .resource_violations
        .iter()
        .map(|v| v.detail.as_str())
        .chain(
            o.invariants
                .iter()
                .filter(|i| i.checked && !i.held)
                .flat_map(|i| i.details.iter().map(String::as_str)),
        )
        .collect();
    let named: BTreeSet<String> = names
        .iter()
        .filter(|n| texts.iter().any(|t| mentions(t, n)))
        .cloned()
        .collect();
    LaneNames {
        names,
        hit,
        named,
        forced,
    }
}

#[derive(Debug)]
struct LaneNames {
    names: Vec<String>,
    hit: BTreeSet<String>,
    named: BTreeSet<String>,
    forced: BTreeSet<String>,
}

/// A hand-off placed on the timeline.
#[derive(Debug)]
struct Placed {
    /// Index into `Outcome::handoffs`.
    index: usize,
    /// The node's owner.
    owner: String,
    /// The deletion happened after this time: the owner's last event before
    /// it saw its lock go (its release returned, or it saw the loss or the
    /// expiry of its session).
    after: f64,
    /// ... and before this one (none when the owner was not heard of again:
    /// a crash).
    before: Option<f64>,
    /// The first acquisition after the deletion window opened (by another
    /// client, or by the owner after the window closed): who and when.
    to: Option<(String, f64)>,
}

impl Placed {
    /// Where the marker goes: at the next acquisition, else where the owner
    /// saw its lock go.
    fn at(&self) -> (&str, f64) {
        match &self.to {
            Some((c, t)) => (c, *t),
            None => (&self.owner, self.before.unwrap_or(self.after)),
        }
    }
}

/// Places each hand-off whose lock node a client was seen to acquire. The
/// deletion is not timed by the server, but it falls between the owner's last
/// event before it saw its lock go and that sighting (`Released`, `Lost`,
/// `Expired`); the marker goes at the first `Acquired` after that window
/// opened (for an exclusive lock, no one else can acquire inside it). The
/// others (a waiter's node, a node no acquisition named) are only listed.
fn place_handoffs(o: &Outcome) -> Vec<Option<Placed>> {
    let mut acquired_at: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut acquisitions: Vec<usize> = Vec::new();
    let mut per_client: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, e) in o.journal.iter().enumerate() {
        per_client.entry(e.client.as_str()).or_default().push(i);
        if let Event::Acquired { path, .. } = &e.event {
            acquisitions.push(i);
            if let Some(p) = path {
                acquired_at.entry(p.as_str()).or_default().push(i);
            }
        }
    }
    // Each acquisition of a node pairs with one deletion of it, in order.
    let mut used: HashMap<&str, usize> = HashMap::new();
    o.handoffs
        .iter()
        .enumerate()
        .map(|(index, h)| {
            let list = acquired_at.get(h.path.as_str())?;
            let k = used.entry(h.path.as_str()).or_insert(0);
            let ai = *list.get(*k)?;
            *k += 1;
            let owner = o.journal[ai].client.as_str();
            if h.from.as_deref().is_some_and(|f| f != owner) {
                return None;
            }
            let events = per_client.get(owner)?;
            let from = events.partition_point(|&i| i <= ai);
            let end = events[from..]
                .iter()
                .position(|&i| {
                    matches!(
                        o.journal[i].event,
                        Event::Released { .. }
                            | Event::Lost
                            | Event::Expired
                            | Event::Connecting
                            | Event::Done
                    )
                })
                .map(|p| from + p);
            // The owner's last event before it saw the lock go.
            let si = match end {
                Some(e) => events[e - 1],
                None => *events.last()?,
            };
            let ei = end.map(|e| events[e]);
            let to = acquisitions[acquisitions.partition_point(|&i| i <= si)..]
                .iter()
                .find(|&&i| o.journal[i].client != owner || ei.is_some_and(|ei| i > ei))
                .map(|&i| (o.journal[i].client.clone(), ms(&o.journal[i])));
            Some(Placed {
                index,
                owner: owner.to_string(),
                after: ms(&o.journal[si]),
                before: ei.map(|i| ms(&o.journal[i])),
                to,
            })
        })
        .collect()
}

/// Hand-offs the notification budget check named.
fn over_budget(o: &Outcome, h: &Handoff) -> bool {
    let needle = format!("deleting {} ", h.path);
    o.invariants
        .iter()
        .filter(|i| i.checked && !i.held && i.name.starts_with("notifications"))
        .any(|i| i.details.iter().any(|d| d.starts_with(&needle)))
}

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Passed => "passed",
        Status::Caught => "caught",
        Status::Failed => "failed",
        Status::Error => "error",
        Status::Skipped => "skipped",
    }
}

fn fmt_ms(t: f64) -> String {
    if t >= 10_000.0 {
        format!("{:.1} s", t / 1000.0)
    } else if t >= 1000.0 {
        format!("{:.2} s", t / 1000.0)
    } else {
        format!("{t:.0} ms")
    }
}

/// A tick step giving about `n` ticks over `span` ms.
fn tick_step(span: f64, n: f64) -> f64 {
    let raw = (span / n).max(1.0);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

const STYLE: &str = r#"
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:1.5em;color:#212121;background:#fff}
h1{font-size:1.6em;margin:0 0 .3em}
h2{font-size:1.25em;margin:0 0 .3em}
h3{font-size:1.05em;margin:1em 0 .3em}
table{border-collapse:collapse;margin:.3em 0}
th,td{border:1px solid #cfd8dc;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#eceff1}
td.num{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font:12px/1.35 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:#f5f7f8;padding:.5em;overflow:auto;max-height:30em;white-space:pre-wrap}
section.scenario{border:1px solid #cfd8dc;border-left:6px solid #90a4ae;border-radius:4px;padding:.8em 1em;margin:1.2em 0}
section.st-passed{border-left-color:#43a047}
section.st-caught{border-left-color:#00897b}
section.st-failed{border-left-color:#e53935}
section.st-error{border-left-color:#fb8c00}
.badge{display:inline-block;padding:0 .5em;border-radius:3px;color:#fff;font-size:.85em;vertical-align:middle}
.b-passed{background:#43a047}.b-caught{background:#00897b}.b-failed{background:#e53935}.b-error{background:#fb8c00}.b-skipped{background:#90a4ae}
tr.bad td{background:#ffebee}
.desc{white-space:pre-wrap;margin:.3em 0}
.muted{color:#607d8b}
.err{color:#c62828}
dl.meta{display:grid;grid-template-columns:max-content auto;gap:2px 1em;margin:.4em 0}
dl.meta dt{font-weight:600}dl.meta dd{margin:0}
.timeline{overflow-x:auto;border:1px solid #eceff1;margin:.3em 0}
.timeline svg{display:block;min-width:900px;width:100%;height:auto}
.legend{display:flex;flex-wrap:wrap;gap:.3em 1em;font-size:12px;margin:.3em 0}
.legend span.sw{display:inline-block;width:14px;height:10px;border:1px solid #90a4ae;vertical-align:middle;margin-right:4px}
details{margin:.3em 0}
summary{cursor:pointer}
"#;

/// Renders every outcome into one HTML page.
pub fn render(outcomes: &[Outcome]) -> String {
    let mut s = String::with_capacity(64 * 1024);
    s.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    s.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    s.push_str("<title>harness report</title>\n<style>");
    s.push_str(STYLE);
    s.push_str("</style>\n</head>\n<body>\n<h1>harness report</h1>\n");
    let count = |st: Status| outcomes.iter().filter(|o| o.status == st).count();
    let _ = writeln!(
        s,
        "<p>{} scenarios: {} passed, {} caught (negative), {} failed, {} errors, {} skipped. <strong>{}</strong></p>",
        outcomes.len(),
        count(Status::Passed),
        count(Status::Caught),
        count(Status::Failed),
        count(Status::Error),
        count(Status::Skipped),
        if outcomes.iter().all(|o| o.status.ok()) {
            "All passed."
        } else {
            "FAILED."
        }
    );
    summary(&mut s, outcomes);
    for (i, o) in outcomes.iter().enumerate() {
        section(&mut s, i + 1, o);
    }
    s.push_str("</body>\n</html>\n");
    s
}

fn summary(s: &mut String, outcomes: &[Outcome]) {
    s.push_str("<table class=\"summary\">\n<thead><tr><th>scenario</th><th>status</th><th>recipe</th><th>target</th><th>time</th><th>acquisitions</th><th>max notifications per hand-off</th><th>violated invariants</th></tr></thead>\n<tbody>\n");
    for (i, o) in outcomes.iter().enumerate() {
        let st = status_name(o.status);
        let violated: Vec<String> = o
            .invariants
            .iter()
            .filter(|v| v.checked && !v.held)
            .map(|v| {
                if v.expected_violation {
                    format!("{} (expected)", escape(&v.name))
                } else {
                    format!("<span class=\"err\">{}</span>", escape(&v.name))
                }
            })
            .collect();
        let mut note = violated.join(", ");
        if !o.errors.is_empty() {
            if !note.is_empty() {
                note.push_str("; ");
            }
            let _ = write!(
                note,
                "<span class=\"err\">{} error(s)</span>",
                o.errors.len()
            );
        }
        let _ = writeln!(
            s,
            "<tr{}><td><a href=\"#s{}\">{}</a></td><td><span class=\"badge b-{st}\">{st}</span></td><td>{}</td><td>{}</td><td class=\"num\">{:.2} s</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            if o.status.ok() { "" } else { " class=\"bad\"" },
            i + 1,
            escape(&o.name),
            escape(&o.recipe),
            escape(o.target),
            o.duration_ms / 1000.0,
            o.stats.acquisitions,
            o.stats
                .max_notifications_per_handoff
                .map_or_else(|| "–".to_string(), |n| n.to_string()),
            note
        );
    }
    s.push_str("</tbody>\n</table>\n");
}

fn section(s: &mut String, id: usize, o: &Outcome) {
    let st = status_name(o.status);
    let _ = writeln!(
        s,
        "<section class=\"scenario st-{st}\" id=\"s{id}\">\n<h2>{} <span class=\"badge b-{st}\">{st}</span></h2>",
        escape(&o.name)
    );
    if !o.description.is_empty() {
        let _ = writeln!(s, "<p class=\"desc\">{}</p>", escape(&o.description));
    }
    let _ = writeln!(
        s,
        "<dl class=\"meta\"><dt>file</dt><dd><code>{}</code></dd><dt>recipe</dt><dd>{}</dd><dt>target</dt><dd>{}</dd><dt>seed</dt><dd><code>{}</code></dd><dt>replay</dt><dd><code>{}</code></dd><dt>run</dt><dd>{:.2} s, {} clients, {} sessions, {} acquisitions, {} hand-offs, notifications: {} by the server, {} by the clients (max {} per hand-off), {} children listings</dd></dl>",
        escape(&o.file),
        escape(&o.recipe),
        escape(o.target),
        o.seed,
        escape(&o.replay),
        o.duration_ms / 1000.0,
        o.clients.len(),
        o.stats.sessions,
        o.stats.acquisitions,
        o.stats.handoffs,
        o.stats
            .server_notifications
            .map_or_else(|| "–".to_string(), |n| n.to_string()),
        o.stats.client_notifications,
        o.stats
            .max_notifications_per_handoff
            .map_or_else(|| "–".to_string(), |n| n.to_string()),
        o.stats.children_reads,
    );
    invariants(s, o);
    if !o.errors.is_empty() {
        s.push_str("<h3>Errors</h3>\n<ul class=\"err\">\n");
        for e in &o.errors {
            let _ = writeln!(s, "<li>{}</li>", escape(e));
        }
        s.push_str("</ul>\n");
    }
    s.push_str("<h3>Timeline</h3>\n");
    let placed = place_handoffs(o);
    timeline(s, o, &placed);
    legend(s);
    handoff_table(s, o, &placed);
    fault_table(s, o);
    if !o.resource_violations.is_empty() {
        let _ = writeln!(
            s,
            "<h3 class=\"err\">Resource violations ({})</h3>\n<ul class=\"err\">",
            o.resource_violations.len()
        );
        for v in &o.resource_violations {
            let _ = writeln!(
                s,
                "<li>{} — {}: {}</li>",
                fmt_ms(v.t.as_secs_f64() * 1000.0),
                escape(v.invariant),
                escape(&v.detail)
            );
        }
        s.push_str("</ul>\n");
    }
    if !o.history_tail.is_empty() {
        let _ = writeln!(
            s,
            "<details><summary>Server history (last {} records)</summary><pre>{}</pre></details>",
            o.history_tail.len(),
            escape(&o.history_tail.join("\n"))
        );
    }
    journal_dump(s, o);
    s.push_str("</section>\n");
}

fn invariants(s: &mut String, o: &Outcome) {
    if o.invariants.is_empty() {
        return;
    }
    s.push_str("<h3>Invariants</h3>\n<table class=\"invariants\"><thead><tr><th>invariant</th><th>verdict</th><th>details</th></tr></thead><tbody>\n");
    for i in &o.invariants {
        let (verdict, bad) = match (i.checked, i.held, i.expected_violation) {
            (false, _, _) => ("not checked", false),
            (true, true, false) => ("held", false),
            (true, false, false) => ("VIOLATED", true),
            (true, false, true) => ("violated as expected", false),
            (true, true, true) => ("held, but a violation was expected", true),
        };
        let _ = write!(
            s,
            "<tr{}><td>{}</td><td>{}</td><td>",
            if bad { " class=\"bad\"" } else { "" },
            escape(&i.name),
            verdict
        );
        const SHOWN: usize = 10;
        for d in i.details.iter().take(SHOWN) {
            let _ = write!(s, "<div>{}</div>", escape(d));
        }
        if i.details.len() > SHOWN {
            let _ = write!(
                s,
                "<details><summary>{} more</summary>",
                i.details.len() - SHOWN
            );
            for d in &i.details[SHOWN..] {
                let _ = write!(s, "<div>{}</div>", escape(d));
            }
            s.push_str("</details>");
        }
        s.push_str("</td></tr>\n");
    }
    s.push_str("</tbody></table>\n");
}

fn legend(s: &mut String) {
    s.push_str("<div class=\"legend\">");
    for st in State::ALL {
        let _ = write!(
            s,
            "<span><span class=\"sw\" style=\"background:{}\"></span>{}</span>",
            st.color(),
            st.name()
        );
    }
    s.push_str(concat!(
        "<span><span class=\"sw\" style=\"background:#1b5e20;height:4px\"></span>inside the critical section</span>",
        "<span><span class=\"sw\" style=\"background:rgba(30,136,229,.18);border:1px dashed #1e88e5\"></span>fault (band: until its effect ends)</span>",
        "<span>▼ fault hit this client</span>",
        "<span>◆ hand-off: notifications it caused (dashed: from the release to the next acquisition)</span>",
        "<span style=\"color:#c62828\">│ resource violation, ✕ error, ○ gave up</span>",
        "<span>client names: <b style=\"color:#c62828\">named by a violation</b>, <b style=\"color:#1565c0\">hit by a fault</b></span>",
        "</div>\n"
    ));
}

/// Lane height for `n` lanes.
fn lane_height(n: usize) -> f64 {
    match n {
        0..=30 => 18.0,
        31..=60 => 12.0,
        61..=120 => 7.0,
        _ => 4.0,
    }
}

fn timeline(s: &mut String, o: &Outcome, placed: &[Option<Placed>]) {
    let LaneNames {
        names,
        hit,
        named,
        forced,
    } = lane_names(o);
    let involved: BTreeSet<&String> = forced.iter().chain(&named).collect();
    // Which lanes to draw.
    let drawn: Vec<&String> = if names.len() <= MAX_LANES {
        names.iter().collect()
    } else {
        let room = MAX_LANES.saturating_sub(involved.len());
        let mut others = 0;
        names
            .iter()
            .filter(|n| {
                if involved.contains(*n) {
                    true
                } else if others < room {
                    others += 1;
                    true
                } else {
                    false
                }
            })
            .collect()
    };
    let omitted = names.len() - drawn.len();

    let mut end = o.duration_ms.max(1.0);
    for e in &o.journal {
        end = end.max(ms(e));
    }
    for f in &o.faults {
        end = end.max(f.t_ms);
    }
    for v in &o.resource_violations {
        end = end.max(v.t.as_secs_f64() * 1000.0);
    }

    let mut by_client: HashMap<&str, Vec<&Entry>> = HashMap::new();
    for e in &o.journal {
        by_client.entry(e.client.as_str()).or_default().push(e);
    }

    let lh = lane_height(drawn.len());
    let labels = lh >= 12.0;
    let width = 1200.0;
    let x0 = if labels { 150.0 } else { 60.0 };
    let pw = width - x0 - 20.0;
    let x = |t: f64| x0 + (t.clamp(0.0, end) / end) * pw;
    let fault_rows = o.faults.len().min(3);
    let viol_row = usize::from(!o.resource_violations.is_empty());
    let top = 8.0 + 13.0 * (fault_rows + viol_row) as f64;
    let lanes_h = lh * drawn.len() as f64;
    let ho_y = top + lanes_h + 4.0;
    let axis_y = ho_y + 22.0;
    let height = axis_y + 32.0;

    let lane_y: HashMap<&str, f64> = drawn
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), top + lh * i as f64))
        .collect();

    s.push_str("<div class=\"timeline\">\n");
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline-svg\" viewBox=\"0 0 {width} {height:.1}\" width=\"{width}\" height=\"{height:.1}\" font-family=\"sans-serif\" font-size=\"11\" role=\"img\" aria-label=\"timeline of {}\" data-lanes=\"{}\" data-omitted=\"{omitted}\">",
        escape(&o.name),
        drawn.len()
    );
    // Grid and time axis.
    let step = tick_step(end, 10.0);
    let mut t = 0.0;
    s.push_str("<g class=\"axis\" stroke=\"#eceff1\">");
    while t <= end + 1e-9 {
        let _ = write!(
            s,
            "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{top:.1}\" y2=\"{axis_y:.1}\"/>",
            x(t)
        );
        t += step;
    }
    s.push_str("</g>\n<g class=\"axis-labels\" fill=\"#607d8b\" text-anchor=\"middle\">");
    let mut t = 0.0;
    while t <= end + 1e-9 {
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            x(t),
            axis_y + 13.0,
            fmt_ms(t)
        );
        t += step;
    }
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">time since the scenario started</text></g>",
        x0 + pw,
        axis_y + 27.0
    );

    // Lanes.
    s.push_str("<g class=\"lanes\">\n");
    for (i, name) in drawn.iter().enumerate() {
        let y = top + lh * i as f64;
        let events = by_client.get(name.as_str()).map_or(&[][..], |v| &v[..]);
        let lane = lane_of(events, end);
        let hot = if named.contains(*name) {
            Some("#c62828")
        } else if hit.contains(*name) {
            Some("#1565c0")
        } else {
            None
        };
        let _ = write!(
            s,
            "<g class=\"lane\" data-client=\"{}\"><title>{}</title>",
            escape(name),
            escape(name)
        );
        if i % 2 == 1 {
            let _ = write!(
                s,
                "<rect x=\"{x0:.1}\" y=\"{y:.1}\" width=\"{pw:.1}\" height=\"{lh:.1}\" fill=\"#fafafa\"/>"
            );
        }
        if labels {
            let _ =
                write!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"{}\"{}>{}</text>",
                x0 - 6.0,
                y + lh * 0.72,
                if lh >= 18.0 { 11 } else { 9 },
                hot.map_or_else(String::new, |c| format!(" fill=\"{c}\" font-weight=\"bold\"")),
                escape(name)
            );
        } else if let Some(c) = hot {
            let _ = write!(
                s,
                "<rect x=\"{:.1}\" y=\"{y:.1}\" width=\"8\" height=\"{lh:.1}\" fill=\"{c}\"/>",
                x0 - 10.0
            );
        }
        let pad = if lh >= 12.0 { 2.0 } else { 0.5 };
        for seg in &lane.segments {
            let w = (x(seg.to) - x(seg.from)).max(0.6);
            let _ = write!(
                s,
                "<rect class=\"seg {}\" x=\"{:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{} {}: {} – {}</title></rect>",
                seg.state.name(),
                x(seg.from),
                y + pad,
                lh - 2.0 * pad,
                seg.state.color(),
                escape(name),
                seg.state.name(),
                fmt_ms(seg.from),
                fmt_ms(seg.to)
            );
        }
        for (from, to) in &lane.inside {
            let w = (x(*to) - x(*from)).max(0.6);
            let _ = write!(
                s,
                "<rect class=\"inside\" x=\"{:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"#1b5e20\"><title>{} inside the critical section: {} – {}</title></rect>",
                x(*from),
                y + pad,
                ((lh - 2.0 * pad) * 0.3).max(1.0),
                escape(name),
                fmt_ms(*from),
                fmt_ms(*to)
            );
        }
        for m in &lane.marks {
            let cx = x(m.t);
            let cy = y + lh / 2.0;
            let r = (lh / 2.0 - 1.0).clamp(1.5, 5.0);
            let shape = match m.kind {
                "fault" => format!(
                    "<path d=\"M{:.1} {:.1}h{:.1}l{:.1} {:.1}z\" fill=\"#1565c0\"",
                    cx - r,
                    y + pad,
                    2.0 * r,
                    -r,
                    (lh - 2.0 * pad).min(2.0 * r)
                ),
                "gave-up" => format!(
                    "<circle cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"{r:.1}\" fill=\"none\" stroke=\"#c62828\""
                ),
                _ => format!(
                    "<path d=\"M{:.1} {:.1}l{:.1} {:.1}m0 {:.1}l{:.1} {:.1}\" stroke=\"#c62828\" stroke-width=\"2\"",
                    cx - r,
                    cy - r,
                    2.0 * r,
                    2.0 * r,
                    -2.0 * r,
                    -2.0 * r,
                    2.0 * r
                ),
            };
            let _ = write!(
                s,
                "{shape} class=\"mark {}\"><title>{} {} at {}</title>{}",
                m.kind,
                escape(name),
                escape(&m.text),
                fmt_ms(m.t),
                if m.kind == "fault" {
                    "</path>"
                } else if m.kind == "gave-up" {
                    "</circle>"
                } else {
                    "</path>"
                }
            );
        }
        s.push_str("</g>\n");
    }
    s.push_str("</g>\n");
    if drawn.is_empty() {
        let _ = writeln!(
            s,
            "<text x=\"{x0:.1}\" y=\"{:.1}\" fill=\"#607d8b\">no client events{}</text>",
            top + 12.0,
            if o.status == Status::Skipped {
                " (not run)"
            } else {
                ""
            }
        );
    }
    // Faults: shaded bands with their labels.
    s.push_str("<g class=\"faults\">\n");
    for (i, f) in o.faults.iter().enumerate() {
        let x1 = x(f.t_ms);
        let x2 = x(f.until_ms.max(f.t_ms));
        let w = (x2 - x1).max(2.0);
        let label = if f.argument.is_empty() {
            f.action.clone()
        } else {
            format!("{} {}", f.action, f.argument)
        };
        let row = (i % 3) as f64;
        let ly = 8.0 + 13.0 * row + 9.0;
        let _ = write!(
            s,
            "<g class=\"fault\"><title>step {}: {} at {}{} — clients: {}</title><rect x=\"{x1:.1}\" y=\"{top:.1}\" width=\"{w:.1}\" height=\"{lanes_h:.1}\" fill=\"rgba(30,136,229,0.15)\" stroke=\"#1e88e5\" stroke-dasharray=\"3 2\"/>",
            f.step,
            escape(&label),
            fmt_ms(f.t_ms),
            if f.until_ms > f.t_ms {
                format!(" until {}", fmt_ms(f.until_ms))
            } else {
                String::new()
            },
            escape(&list(&f.clients))
        );
        if fault_rows > 0 {
            let _ = write!(
                s,
                "<line x1=\"{x1:.1}\" x2=\"{x1:.1}\" y1=\"{:.1}\" y2=\"{top:.1}\" stroke=\"#1e88e5\"/><text class=\"fault-label\" x=\"{:.1}\" y=\"{ly:.1}\" fill=\"#0d47a1\"{}>{}</text>",
                ly - 9.0,
                x1 + 2.0,
                if x1 > width - 200.0 {
                    " text-anchor=\"end\""
                } else {
                    ""
                },
                escape(&label)
            );
        }
        s.push_str("</g>\n");
    }
    s.push_str("</g>\n");

    // Hand-offs: a row of markers with their notification counts, and a
    // dashed line from the release to the next acquisition.
    let _ = write!(
        s,
        "<g class=\"handoffs\"><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#455a64\" font-size=\"10\">hand-offs</text>",
        x0 - 6.0,
        ho_y + 12.0
    );
    let mut last_label = f64::NEG_INFINITY;
    for p in placed.iter().flatten() {
        let h = &o.handoffs[p.index];
        let bad = over_budget(o, h);
        let color = if bad { "#c62828" } else { "#37474f" };
        let (at_client, at_t) = p.at();
        let hx = x(at_t);
        let n = h
            .notifications
            .map_or_else(|| "?".to_string(), |n| n.to_string());
        let title = format!(
            "hand-off zxid {:#x}: {} of {} ({}), deleted {}; {} notification(s); {}",
            h.zxid,
            h.path,
            p.owner,
            if h.by_session_end {
                "with its session"
            } else {
                "deleted"
            },
            window(p),
            n,
            match &p.to {
                Some((c, t)) => format!("next acquired by {c} at {}", fmt_ms(*t)),
                None => "no later acquisition".to_string(),
            }
        );
        let _ = write!(
            s,
            "<g class=\"handoff\" data-notifications=\"{}\"><title>{}</title>",
            escape(&n),
            escape(&title)
        );
        if let (Some(&y1), Some(&y2)) = (lane_y.get(p.owner.as_str()), lane_y.get(at_client)) {
            if p.to.is_some() {
                let from_t = p.before.unwrap_or(p.after).min(at_t);
                let _ = write!(
                    s,
                    "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{hx:.1}\" y2=\"{:.1}\" stroke=\"{color}\" stroke-width=\"1\" stroke-dasharray=\"2 2\" opacity=\"0.7\"/>",
                    x(from_t),
                    y1 + lh / 2.0,
                    y2 + lh / 2.0
                );
            }
            if lh >= 12.0 {
                let _ = write!(
                    s,
                    "<path d=\"M{hx:.1} {:.1}l4 4l-4 4l-4 -4z\" fill=\"{color}\"/>",
                    y2 + lh / 2.0 - 4.0
                );
            }
        }
        let _ = write!(
            s,
            "<path d=\"M{hx:.1} {:.1}l3 3l-3 3l-3 -3z\" fill=\"{color}\"/>",
            ho_y
        );
        if hx - last_label >= 12.0 || bad {
            let _ = write!(
                s,
                "<text x=\"{hx:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"10\" fill=\"{color}\">{}</text>",
                ho_y + 17.0,
                escape(&n)
            );
            last_label = hx;
        }
        s.push_str("</g>\n");
    }
    s.push_str("</g>\n");

    // Resource violations: red lines across every lane.
    if !o.resource_violations.is_empty() {
        s.push_str("<g class=\"violations\">\n");
        let vy = 8.0 + 13.0 * fault_rows as f64 + 9.0;
        let mut last = f64::NEG_INFINITY;
        for v in &o.resource_violations {
            let t = v.t.as_secs_f64() * 1000.0;
            let vx = x(t);
            let _ = write!(
                s,
                "<g class=\"violation\"><title>{} at {}: {}</title><line x1=\"{vx:.1}\" x2=\"{vx:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#e53935\" stroke-width=\"2\"/>",
                escape(v.invariant),
                fmt_ms(t),
                escape(&v.detail),
                vy - 9.0,
                top + lanes_h
            );
            if vx - last > 90.0 {
                let _ = write!(
                    s,
                    "<text x=\"{:.1}\" y=\"{vy:.1}\" fill=\"#c62828\" font-weight=\"bold\"{}>{}</text>",
                    vx + 3.0,
                    if vx > width - 200.0 {
                        " text-anchor=\"end\""
                    } else {
                        ""
                    },
                    escape(v.invariant)
                );
                last = vx;
            }
            s.push_str("</g>\n");
        }
        s.push_str("</g>\n");
    }
    s.push_str("</svg>\n</div>\n");
    if omitted > 0 {
        let _ = writeln!(
            s,
            "<p class=\"muted\">{} of {} clients drawn; {omitted} lanes omitted (every client named by a violation, or hit by a fault on at most {} clients, is drawn).</p>",
            drawn.len(),
            names.len(),
            MAX_LANES / 4
        );
    }
}

/// Names, the first 20 of them.
fn list(names: &[String]) -> String {
    const SHOWN: usize = 20;
    let mut out = names
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        let _ = write!(out, " … and {} more", names.len() - SHOWN);
    }
    out
}

/// When a placed hand-off's node was deleted, as far as the journal tells.
fn window(p: &Placed) -> String {
    match p.before {
        Some(b) => format!("between {} and {}", fmt_ms(p.after), fmt_ms(b)),
        None => format!("after {}", fmt_ms(p.after)),
    }
}

fn handoff_table(s: &mut String, o: &Outcome, placed: &[Option<Placed>]) {
    if o.handoffs.is_empty() {
        s.push_str("<p class=\"muted\">No hand-offs recorded.</p>\n");
        return;
    }
    let unplaced = placed.iter().filter(|p| p.is_none()).count();
    let _ = write!(
        s,
        "<details{}><summary>Hand-offs ({}{}) and their notifications</summary>\n<table class=\"handoffs\"><thead><tr><th>#</th><th>zxid</th><th>lock node</th><th>from</th><th>cause</th><th>notifications</th><th>deleted</th><th>next acquisition</th></tr></thead><tbody>\n",
        if o.status.ok() { "" } else { " open" },
        o.handoffs.len(),
        if unplaced > 0 {
            format!(", {unplaced} not on the timeline: no client was seen acquiring their node")
        } else {
            String::new()
        }
    );
    for (i, (h, p)) in o.handoffs.iter().zip(placed).enumerate() {
        let bad = over_budget(o, h);
        let _ = writeln!(
            s,
            "<tr{}><td class=\"num\">{}</td><td><code>{:#x}</code></td><td><code>{}</code></td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
            if bad { " class=\"bad\"" } else { "" },
            i + 1,
            h.zxid,
            escape(&h.path),
            h.from.as_deref().map_or_else(|| "–".to_string(), escape),
            if h.by_session_end { "session end" } else { "delete" },
            h.notifications
                .map_or_else(|| "–".to_string(), |n| n.to_string()),
            p.as_ref().map_or_else(|| "–".to_string(), window),
            match p.as_ref().and_then(|p| p.to.as_ref()) {
                Some((c, t)) => format!("{} at {}", escape(c), fmt_ms(*t)),
                None => "–".to_string(),
            }
        );
    }
    s.push_str("</tbody></table></details>\n");
}

fn fault_table(s: &mut String, o: &Outcome) {
    if o.faults.is_empty() {
        return;
    }
    let _ = write!(
        s,
        "<details open><summary>Faults ({})</summary>\n<table class=\"faults\"><thead><tr><th>step</th><th>at</th><th>until</th><th>action</th><th>argument</th><th>clients</th></tr></thead><tbody>\n",
        o.faults.len()
    );
    for f in &o.faults {
        let _ = writeln!(
            s,
            "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>",
            f.step,
            fmt_ms(f.t_ms),
            fmt_ms(f.until_ms),
            escape(&f.action),
            escape(&f.argument),
            escape(&list(&f.clients))
        );
    }
    s.push_str("</tbody></table></details>\n");
}

/// The clients' journal, for failed scenarios (the first events).
fn journal_dump(s: &mut String, o: &Outcome) {
    const MAX: usize = 3000;
    if o.status.ok() || o.journal.is_empty() {
        return;
    }
    let _ = write!(
        s,
        "<details><summary>Client journal ({} events{})</summary><pre>",
        o.journal.len(),
        if o.journal.len() > MAX {
            format!(", first {MAX}")
        } else {
            String::new()
        }
    );
    for e in o.journal.iter().take(MAX) {
        let what = serde_json::to_string(&e.event).unwrap_or_default();
        let _ = writeln!(
            s,
            "{:>10.1} ms  {}  {}",
            ms(e),
            escape(&e.client),
            escape(&what)
        );
    }
    s.push_str("</pre></details>\n");
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::report::{FaultRecord, InvariantResult, Stats};
    use crate::resource::ResourceViolation;

    fn entry(t: u64, client: &str, event: Event) -> Entry {
        Entry {
            t: Duration::from_millis(t),
            client: client.into(),
            event,
        }
    }

    fn acquired(path: &str) -> Event {
        Event::Acquired {
            round: 0,
            token: 1,
            path: Some(path.into()),
        }
    }

    /// Two clients, a disconnect of the holder, one hand-off; hostile text in
    /// the description, a client name and an invariant's details.
    fn outcome() -> Outcome {
        let a = "holder";
        let b = "w<script>alert(1)</script>";
        let journal = vec![
            entry(0, a, Event::Connecting),
            entry(0, b, Event::Connecting),
            entry(5, a, Event::Connected { session: 1 }),
            entry(6, a, Event::Waiting { round: 0 }),
            entry(8, b, Event::Connected { session: 2 }),
            entry(9, b, Event::Waiting { round: 0 }),
            entry(10, a, acquired("/l/n-0000000000")),
            entry(
                11,
                a,
                Event::Enter {
                    token: 1,
                    marker: None,
                },
            ),
            entry(
                100,
                a,
                Event::Fault {
                    what: "disconnect".into(),
                },
            ),
            entry(101, a, Event::Suspended),
            entry(101, a, Event::Exit { marker: None }),
            entry(150, a, Event::Resumed),
            entry(
                151,
                a,
                Event::Enter {
                    token: 1,
                    marker: None,
                },
            ),
            entry(300, a, Event::Exit { marker: None }),
            entry(302, a, Event::Released { ok: true }),
            entry(303, b, acquired("/l/n-0000000001")),
            entry(
                304,
                b,
                Event::Enter {
                    token: 2,
                    marker: None,
                },
            ),
            entry(400, b, Event::Exit { marker: None }),
            entry(401, b, Event::Released { ok: true }),
            entry(402, a, Event::Done),
            entry(402, b, Event::Done),
        ];
        Outcome {
            name: "demo & <b>".into(),
            file: "scenarios/demo.yaml".into(),
            description: "Shows <script>alert('x')</script> & more".into(),
            recipe: "predecessor".into(),
            implementation: "zk-lock".into(),
            implementation_version: "zk-lock 0.1.0".into(),
            target: "mock",
            seed: 42,
            status: Status::Failed,
            duration_ms: 410.0,
            invariants: vec![
                InvariantResult {
                    name: "mutual_exclusion".into(),
                    checked: true,
                    held: false,
                    expected_violation: false,
                    details: vec![format!("{b} entered while holder inside")],
                },
                InvariantResult {
                    name: "notifications_per_handoff".into(),
                    checked: true,
                    held: false,
                    expected_violation: false,
                    details: vec![
                        "deleting /l/n-0000000000 (zxid 0x9) sent 3 notifications; budget 1".into(),
                    ],
                },
            ],
            errors: vec!["step 2 <never> ran".into()],
            clients: vec![a.into(), b.into()],
            journal,
            resource_violations: vec![ResourceViolation {
                t: Duration::from_millis(304),
                invariant: "mutual_exclusion",
                detail: format!("{b} (token 0x2) entered while holder (token 0x1) inside"),
            }],
            faults: vec![FaultRecord {
                step: 1,
                t_ms: 100.0,
                until_ms: 150.0,
                action: "disconnect".into(),
                argument: "holder".into(),
                clients: vec![a.into()],
            }],
            handoffs: vec![
                Handoff {
                    zxid: 9,
                    path: "/l/n-0000000000".into(),
                    from: Some(a.into()),
                    by_session_end: false,
                    notifications: Some(3),
                },
                Handoff {
                    zxid: 12,
                    path: "/l/n-0000000001".into(),
                    from: Some(b.into()),
                    by_session_end: false,
                    notifications: Some(0),
                },
                Handoff {
                    zxid: 14,
                    path: "/l/waiter-node".into(),
                    from: None,
                    by_session_end: true,
                    notifications: None,
                },
            ],
            stats: Stats {
                acquisitions: 2,
                handoffs: 3,
                server_notifications: Some(3),
                max_notifications_per_handoff: Some(3),
                client_notifications: 3,
                children_reads: 4,
                sessions: 2,
            },
            history_tail: vec!["0x9 delete </l/n-0000000000>".into()],
            history: Vec::new(),
            record: None,
            replay: "cargo run -p harness -- run scenarios/demo.yaml --seed 42".into(),
        }
    }

    #[test]
    fn escape_covers_markup_quotes_and_controls() {
        assert_eq!(
            escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(escape("plain w.1 – ü"), "plain w.1 – ü");
        assert_eq!(escape("a\u{0}b\u{1b}c\nd\te"), "a\u{FFFD}b\u{FFFD}c\nd\te");
        assert_eq!(escape("&amp;"), "&amp;amp;");
        assert_eq!(escape(""), "");
    }

    #[test]
    fn mentions_matches_whole_names_only() {
        assert!(mentions("w.1 entered while holder inside", "w.1"));
        assert!(mentions("entered while w.1, w.2 inside", "w.1"));
        assert!(mentions("holder.", "holder"));
        assert!(!mentions("w.10 entered", "w.1"));
        assert!(!mentions("xw.1 entered", "w.1"));
        assert!(!mentions("w.1-b entered", "w.1"));
        assert!(mentions("w.10 and then w.1", "w.1"));
        assert!(!mentions("anything", ""));
    }

    #[test]
    fn one_svg_per_scenario_with_a_lane_per_client() {
        let mut second = outcome();
        second.name = "second".into();
        second.status = Status::Passed;
        let html = render(&[outcome(), second]);
        assert_eq!(html.matches("<svg").count(), 2);
        assert_eq!(html.matches("</svg>").count(), 2);
        assert_eq!(html.matches("<g class=\"lane\"").count(), 4);
        assert!(html.contains("data-client=\"holder\""));
        assert!(html.contains("href=\"#s1\"") && html.contains("id=\"s2\""));
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.trim_end().ends_with("</html>"));
        // No external resources.
        assert!(!html.contains("src=") && !html.contains("<link") && !html.contains("@import"));
    }

    #[test]
    fn timeline_shows_states_faults_handoffs_and_violations() {
        let html = render(&[outcome()]);
        for state in [
            "connecting",
            "connected",
            "waiting",
            "holding",
            "suspended",
            "done",
        ] {
            assert!(
                html.contains(&format!("class=\"seg {state}\"")),
                "no {state} segment"
            );
        }
        assert!(html.contains("class=\"inside\""));
        assert!(html.contains("class=\"fault-label\""));
        assert!(html.contains(">disconnect holder</text>"));
        assert!(html.contains("class=\"mark fault\""));
        // Both placed hand-offs are drawn; the waiter's node is only listed.
        assert_eq!(html.matches("<g class=\"handoff\"").count(), 2);
        assert!(html.contains("data-notifications=\"3\""));
        assert!(html.contains("<code>/l/waiter-node</code>"));
        assert!(html.contains("1 not on the timeline"));
        // The first hand-off went to the second client after 302 ms.
        assert!(html.contains("next acquired by w&lt;script&gt;alert(1)&lt;/script&gt; at 303 ms"));
        // Over budget: red.
        assert!(html.contains("fill=\"#c62828\">3</text>"));
        assert!(html.contains("class=\"violation\""));
    }

    #[test]
    fn hostile_strings_are_escaped() {
        let html = render(&[outcome()]);
        assert!(!html.contains("<script"), "unescaped script tag");
        assert!(!html.contains("<b>"));
        assert!(!html.contains("<never>"));
        assert!(html.contains("Shows &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; more"));
        assert!(html.contains("demo &amp; &lt;b&gt;"));
        assert!(html.contains("data-client=\"w&lt;script&gt;alert(1)&lt;/script&gt;\""));
    }

    #[test]
    fn expired_lanes_stay_expired() {
        let events = [
            entry(0, "c", Event::Connecting),
            entry(1, "c", Event::Connected { session: 1 }),
            entry(2, "c", Event::Waiting { round: 0 }),
            entry(3, "c", acquired("/l/x")),
            entry(10, "c", Event::Lost),
            entry(20, "c", Event::Released { ok: false }),
            entry(21, "c", Event::Expired),
            entry(21, "c", Event::Done),
        ];
        let refs: Vec<&Entry> = events.iter().collect();
        let lane = lane_of(&refs, 100.0);
        let states: Vec<State> = lane.segments.iter().map(|s| s.state).collect();
        assert_eq!(
            states,
            [
                State::Connecting,
                State::Connected,
                State::Waiting,
                State::Holding,
                State::Lost,
                State::Connected,
                State::Expired
            ]
        );
        assert_eq!(lane.segments.last().map(|s| s.to), Some(100.0));
        assert_eq!(lane.marks.len(), 1);

        let crashed = [
            entry(0, "c", Event::Connecting),
            entry(1, "c", Event::Connected { session: 1 }),
            entry(
                2,
                "c",
                Event::Fault {
                    what: "crash".into(),
                },
            ),
        ];
        let refs: Vec<&Entry> = crashed.iter().collect();
        let lane = lane_of(&refs, 50.0);
        assert_eq!(lane.segments.last().map(|s| s.state), Some(State::Crashed));
    }

    /// A holder's session expires: its node goes with the session, and the
    /// waiter acquires before the holder even sees the loss.
    #[test]
    fn session_end_handoff_goes_to_the_first_acquisition_after_the_fault() {
        let mut o = outcome();
        o.journal = vec![
            entry(0, "h", Event::Connecting),
            entry(1, "h", Event::Connected { session: 1 }),
            entry(2, "h", Event::Waiting { round: 0 }),
            entry(3, "h", acquired("/l/a")),
            entry(4, "w", Event::Waiting { round: 0 }),
            entry(
                100,
                "h",
                Event::Fault {
                    what: "expire".into(),
                },
            ),
            entry(104, "w", acquired("/l/b")),
            entry(110, "h", Event::Lost),
            entry(120, "h", Event::Released { ok: false }),
            entry(121, "h", Event::Expired),
            entry(150, "w", Event::Released { ok: true }),
        ];
        o.handoffs = vec![
            Handoff {
                zxid: 5,
                path: "/l/a".into(),
                from: Some("h".into()),
                by_session_end: true,
                notifications: Some(1),
            },
            Handoff {
                zxid: 6,
                path: "/l/b".into(),
                from: Some("w".into()),
                by_session_end: false,
                notifications: Some(0),
            },
        ];
        let placed = place_handoffs(&o);
        let first = placed[0].as_ref().expect("placed");
        assert_eq!((first.after, first.before), (100.0, Some(110.0)));
        assert_eq!(first.to, Some(("w".to_string(), 104.0)));
        assert_eq!(first.at(), ("w", 104.0));
        let second = placed[1].as_ref().expect("placed");
        assert_eq!(
            (second.after, second.before, &second.to),
            (104.0, Some(150.0), &None)
        );
        assert_eq!(second.at(), ("w", 150.0));
    }

    #[test]
    fn many_clients_are_capped_but_involved_ones_drawn() {
        let mut o = outcome();
        o.clients = (0..1000).map(|i| format!("w.{i}")).collect();
        o.journal = o
            .clients
            .iter()
            .enumerate()
            .flat_map(|(i, c)| {
                [
                    entry(i as u64 % 50, c, Event::Connecting),
                    entry(60, c, Event::Connected { session: i as i64 }),
                    entry(61, c, Event::Waiting { round: 0 }),
                ]
            })
            .collect();
        o.faults[0].clients = vec!["w.999".into()];
        o.faults.push(FaultRecord {
            step: 2,
            t_ms: 10.0,
            until_ms: 10.0,
            action: "stampede".into(),
            argument: "crowd".into(),
            clients: o.clients.clone(),
        });
        o.resource_violations[0].detail = "w.998 entered while w.5 inside".into();
        o.invariants[0].details = vec!["w.997 held twice".into()];
        let html = render(&[o]);
        assert_eq!(html.matches("<g class=\"lane\"").count(), MAX_LANES);
        for c in ["w.999", "w.998", "w.997", "w.5", "w.0"] {
            assert!(
                html.contains(&format!("data-client=\"{c}\"")),
                "{c} not drawn"
            );
        }
        assert!(!html.contains("data-client=\"w.996\""));
        assert!(html.contains("200 of 1000 clients drawn; 800 lanes omitted"));
    }

    #[test]
    fn skipped_scenarios_still_get_a_timeline() {
        let mut o = outcome();
        o.status = Status::Skipped;
        o.journal.clear();
        o.clients.clear();
        o.faults.clear();
        o.handoffs.clear();
        o.resource_violations.clear();
        let html = render(&[o]);
        assert_eq!(html.matches("<svg").count(), 1);
        assert!(html.contains("no client events (not run)"));
    }
}
