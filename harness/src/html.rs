//! The self-contained HTML report (work in progress).

use crate::report::Outcome;

/// Renders every outcome into one HTML page.
pub fn render(outcomes: &[Outcome]) -> String {
    let mut s = String::from("<!doctype html><html><head><meta charset=\"utf-8\"><title>harness report</title></head><body><ul>");
    for o in outcomes {
        s.push_str(&format!("<li>{}: {:?}</li>", o.name, o.status));
    }
    s.push_str("</ul></body></html>");
    s
}
