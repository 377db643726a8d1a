//! The repository's Markdown holds up on its own:
//!
//! - every relative link and `#anchor` in the README, the guide (`docs/`),
//!   the changelog and every other tracked Markdown file points at a file
//!   that exists and, for an anchor, at a heading that GitHub renders with
//!   that id;
//! - no tracked text file speaks of internal tracker issues ("issue" and a
//!   number) or of how a round of work went; an upstream reference names its
//!   repository (`python-zk/kazoo#732`) or its JIRA key (`CURATOR-604`).
//!
//! Run: `cargo test -p zk-mock-cli --test docs` (part of `cargo test`).

use std::collections::{BTreeSet, HashMap};
use std::path::{Component, Path, PathBuf};

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// The repository's root: this package is `zk-mock/` in it.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("zk-mock/ has a parent")
        .to_path_buf()
}

/// Directories that hold no file of ours: build output, fetched sources,
/// fuzz corpora and virtual environments.
fn skipped(name: &str) -> bool {
    matches!(
        name,
        "target" | ".git" | "node_modules" | "corpus" | "artifacts" | "__pycache__" | "py-venv"
    ) || (name.starts_with('.') && name != ".ci")
}

/// The repository's files: what git tracks, or, outside a git checkout (a
/// source archive, say), every file under the root but build output and
/// the like.
fn all_files() -> Vec<PathBuf> {
    let git = std::process::Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .current_dir(root())
        .output();
    match git {
        Ok(out) if out.status.success() => out
            .stdout
            .split(|b| *b == 0)
            .filter(|name| !name.is_empty())
            .map(|name| root().join(String::from_utf8_lossy(name).as_ref()))
            .filter(|p| p.is_file())
            .collect(),
        _ => walkdir::WalkDir::new(root())
            .into_iter()
            .filter_entry(|e| e.depth() == 0 || !skipped(&e.file_name().to_string_lossy()))
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .map(|e| e.into_path())
            .collect(),
    }
}

/// Every file of the repository whose name ends with one of `exts`, sorted.
fn files(exts: &[&str]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = all_files()
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            exts.iter().any(|ext| name.ends_with(ext))
        })
        .collect();
    out.sort();
    out
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// GitHub's id for a heading: lower case, every character that is not a
/// letter, a digit, a space, `-` or `_` dropped, spaces turned into `-`;
/// a repeated id gets `-1`, `-2`, … in document order.
fn slug(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// One Markdown file: the ids of its headings, and its links with the line
/// each is on.
struct Page {
    anchors: BTreeSet<String>,
    links: Vec<(usize, String)>,
}

fn parse(text: &str) -> Page {
    let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
    let mut anchors = BTreeSet::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut links = Vec::new();
    let mut heading: Option<String> = None;
    let parser = Parser::new_ext(text, Options::all()).into_offset_iter();
    for (event, range) in parser {
        match event {
            Event::Start(Tag::Heading { level, id, .. }) => {
                let _: HeadingLevel = level;
                if let Some(id) = id {
                    anchors.insert(id.to_string());
                }
                heading = Some(String::new());
            }
            Event::End(TagEnd::Heading(_)) => {
                let base = slug(&heading.take().unwrap_or_default());
                let n = seen.entry(base.clone()).or_insert(0);
                let id = if *n == 0 {
                    base.clone()
                } else {
                    format!("{base}-{n}")
                };
                *n += 1;
                anchors.insert(id);
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::Start(Tag::Link { dest_url, .. })
            | Event::Start(Tag::Image { dest_url, .. }) => {
                links.push((line_of(range.start), dest_url.to_string()));
            }
            Event::Html(html) | Event::InlineHtml(html) => {
                // `<img src="…">` and `<a href="…">` in raw HTML.
                for attr in ["src=\"", "href=\""] {
                    let mut rest: &str = &html;
                    while let Some(at) = rest.find(attr) {
                        let value = &rest[at + attr.len()..];
                        let end = value.find('"').unwrap_or(value.len());
                        links.push((line_of(range.start), value[..end].to_string()));
                        rest = &value[end..];
                    }
                }
            }
            _ => {}
        }
    }
    Page { anchors, links }
}

/// `base` joined with a relative `link`, `..` resolved, or `None` when it
/// climbs out of the repository.
fn resolve(base: &Path, link: &str) -> Option<PathBuf> {
    let mut out = base.to_path_buf();
    for part in Path::new(link).components() {
        match part {
            Component::ParentDir => {
                if !out.pop() || !out.starts_with(root()) {
                    return None;
                }
            }
            Component::CurDir => {}
            Component::Normal(p) => out.push(p),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    out.starts_with(root()).then_some(out)
}

/// Every broken relative link in the repository's Markdown, as
/// `file:line: message`.
fn broken_links() -> Vec<String> {
    let pages: HashMap<PathBuf, Page> = files(&[".md"])
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, parse(&text))
        })
        .collect();
    let mut broken = Vec::new();
    let mut names: Vec<&PathBuf> = pages.keys().collect();
    names.sort();
    for file in names {
        let page = &pages[file];
        for (line, link) in &page.links {
            let at = format!("{}:{line}", relative(file));
            if link.contains("://") || link.starts_with("mailto:") || link.is_empty() {
                continue;
            }
            let (path, anchor) = match link.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (link.as_str(), None),
            };
            let target = if path.is_empty() {
                file.clone()
            } else {
                match resolve(file.parent().unwrap(), path) {
                    Some(t) => t,
                    None => {
                        broken.push(format!("{at}: {link} leaves the repository"));
                        continue;
                    }
                }
            };
            if !target.exists() {
                broken.push(format!("{at}: {link}: no file {}", relative(&target)));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            let Some(target_page) = pages.get(&target) else {
                // An anchor into a file that is not Markdown (a line of
                // source, say) is not checked.
                continue;
            };
            if !target_page.anchors.contains(anchor) {
                broken.push(format!(
                    "{at}: {link}: {} has no heading #{anchor} (it has: {})",
                    relative(&target),
                    target_page
                        .anchors
                        .iter()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let broken = broken_links();
    assert!(
        broken.is_empty(),
        "{} broken link(s) in the repository's Markdown:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn the_readme_and_the_guide_are_checked() {
    // The check above must see the pages it is for, and must notice a
    // broken link and a broken anchor.
    let md = files(&[".md"]);
    for page in ["README.md", "CHANGELOG.md", "docs/README.md"] {
        assert!(
            md.contains(&root().join(page)),
            "{page} is not among the Markdown files checked"
        );
    }
    let page =
        parse("# Title\n\n## A `code` heading: 3.8!\n\n## Title\n\n[x](#nowhere) ![i](img.png)\n");
    assert!(page.anchors.contains("title"));
    assert!(page.anchors.contains("a-code-heading-38"));
    assert!(page.anchors.contains("title-1"), "{:?}", page.anchors);
    assert!(!page.anchors.contains("nowhere"));
    assert_eq!(
        page.links
            .iter()
            .map(|(_, l)| l.as_str())
            .collect::<Vec<_>>(),
        ["#nowhere", "img.png"]
    );
}

/// What counts as talk of our own tracker or work. Spelled in pieces so that
/// this file does not match itself.
fn tracker_talk() -> Vec<(regex::Regex, &'static str)> {
    let issue = concat!(r"(?i)\b(issue|task|ticket)s?\s*", "#?[0-9]+");
    let rehearsal = concat!(r"(?i)\brehears", "al");
    let stop = concat!(r"(?i)\b(this|last|previous|earlier|next) st", r"op\b");
    let notes = concat!(r"(?i)/work/|\bfact ", r"sheet\b|zk-protocol-", "facts");
    vec![
        (
            regex::Regex::new(issue).unwrap(),
            "an issue number: name an upstream one as owner/repo#N or by its JIRA key",
        ),
        (
            regex::Regex::new(rehearsal).unwrap(),
            "which run of ours made a figure: give the date and the command instead",
        ),
        (
            regex::Regex::new(stop).unwrap(),
            "a round of work: say what the thing is, when and how it was measured",
        ),
        (
            regex::Regex::new(notes).unwrap(),
            "our own notes or machine: cite the public source (apache/zookeeper) instead",
        ),
    ]
}

#[test]
fn nothing_speaks_of_our_own_tracker() {
    let patterns = tracker_talk();
    let mut found = Vec::new();
    let text_files = files(&[
        ".md", ".rs", ".py", ".java", ".sh", ".yaml", ".yml", ".toml", ".txt", ".tsv", ".json",
        ".html", ".svg", "run",
    ]);
    assert!(text_files.len() > 100, "the walk found the repository");
    let this_file = root().join("zk-mock/tests/docs/main.rs");
    for file in text_files.into_iter().filter(|f| *f != this_file) {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            for (re, why) in &patterns {
                if let Some(m) = re.find(line) {
                    found.push(format!(
                        "{}:{}: {:?}: {why}",
                        relative(&file),
                        n + 1,
                        m.as_str()
                    ));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_tracker_patterns_catch_what_they_are_for() {
    let patterns = tracker_talk();
    let hits = |s: &str| patterns.iter().any(|(re, _)| re.is_match(s));
    for bad in [
        concat!("(issue ", "#17)"),
        concat!("Against iss", "ue #16's targets"),
        concat!("a CI rehear", "sal on a clean clone"),
        concat!("this st", "op's changes"),
        concat!("see `/wo", "rk/shared/docs`"),
        concat!("the fact", " sheet's 3.8.6"),
    ] {
        assert!(hits(bad), "not caught: {bad}");
    }
    for good in [
        "python-zk/kazoo#732",
        "apache/curator#1121 (CURATOR-604)",
        "the server stops; stop() frees the port",
        "the session's second session id",
    ] {
        assert!(!hits(good), "caught, but fine: {good}");
    }
}
