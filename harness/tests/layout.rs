//! The harness's modules form no import cycle: for every top-level module,
//! the modules it names through `crate::` (outside its unit tests) never
//! lead back to it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_module_imports_lead_back_to_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut deps: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().to_string();
        if rel.starts_with("bin/") || rel == "main.rs" || rel == "lib.rs" {
            continue;
        }
        let top = rel
            .split('/')
            .next()
            .unwrap()
            .trim_end_matches(".rs")
            .to_string();
        let text = std::fs::read_to_string(&f).unwrap();
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap();
        let entry = deps.entry(top.clone()).or_default();
        for (i, _) in code.match_indices("crate::") {
            let name: String = code[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if !name.is_empty() && name != top {
                entry.insert(name);
            }
        }
    }
    assert!(deps.len() > 10, "{deps:?}");
    for (m, ds) in &deps {
        // Everything reachable from m's imports.
        let mut seen = BTreeSet::new();
        let mut todo: Vec<&String> = ds.iter().collect();
        while let Some(d) = todo.pop() {
            if seen.insert(d.clone()) {
                todo.extend(deps.get(d).into_iter().flatten());
            }
        }
        assert!(!seen.contains(m), "{m} imports lead back to it: {deps:#?}");
    }
}
