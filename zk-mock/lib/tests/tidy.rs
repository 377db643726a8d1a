//! Tidy: the workspace's modules import one way (ARCHITECTURE.md).
//!
//! Each crate's source files are parsed (syn) and every `use` and every
//! `crate::`/`super::`/`self::` path, in macro calls too, unit tests' included (only the
//! `mod`, `fn`, `impl` and `use` items under `#[cfg(doc)]` are skipped), becomes an edge from its file's module to the module that defines the item (a
//! re-export is followed to its origin). The test fails on:
//!
//! - an edge that points up the crate's layer order (a lower layer naming a
//!   higher one);
//! - a cycle among files (two files that import each other, even through
//!   others, or a parent module and its child);
//! - an entry of `KNOWN` that no longer exists (the list only shrinks: delete
//!   the entry).
//!
//! `KNOWN` lists the edges that still break the rules, each one to remove.
//!
//! It also keeps zk-mock's state inside its core: an `impl` block outside
//! `core/` for a type that names `State` (`State`, `&mut State`, a type
//! alias or a renamed import of it, …) fails (the fields are private to `core/` already, so the
//! compiler keeps everyone else to the core's methods).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// A module, as its path from the crate root (`core::prep`; the root is "").
type Module = String;

struct Crate {
    name: &'static str,
    /// `src/`, relative to the workspace.
    src: &'static str,
    /// Layers from the bottom: a module may name modules of its own layer or
    /// below. A module's layer is that of its longest listed prefix; the
    /// crate root is the top.
    layers: &'static [&'static [&'static str]],
    /// Edges (`from -> to`) that still break the rules.
    known: &'static [&'static str],
    /// Whether a module may name its ancestors' items (a parent module that
    /// holds its children's shared types, the common Rust idiom): such an
    /// edge is left out of the cycle check.
    children_name_parents: bool,
}

const ZK_MOCK: Crate = Crate {
    name: "zk-mock",
    src: "zk-mock/lib/src",
    layers: &[
        // The leaves: the wire, the data tree, and what each session and rule is.
        &[
            "hash", "compact", "proto", "codec", "tree", "acl", "clock", "fault", "session",
            "compat", "listen", "txnlog",
        ],
        &["watch"],
        // Owned copies of the state, for tests and tools.
        &["snapshot"],
        // The txn, and what applying it answers.
        &["txn"],
        &["ensemble"],
        &["record"],
        &["observe"],
        &["outbox"],
        // The core: the state, prep, commit, apply, connect, lifecycle,
        // ensemble, controls, inspect, the four-letter words.
        &["core"],
        // What calls the core: connections, then the API.
        &["error", "handler", "server", "tls", "client", "real"],
        &["mock::guards"],
        &["mock::control"],
        &["mock::metrics"],
        &["mock::handle"],
        &["mock::builder", "mock::servers", "mock", "admin", "fuzzing"],
    ],
    known: ZK_MOCK_KNOWN,
    children_name_parents: false,
};

const ZK_MOCK_KNOWN: &[&str] = &[];

const ZK_LOCK: Crate = Crate {
    name: "zk-lock",
    src: "zk-lock/src",
    layers: &[
        &["error", "metrics"],
        &["node"],
        &["naive", "sequential", "guard"],
        &["lock"],
    ],
    known: &[],
    children_name_parents: false,
};

const HARNESS: Crate = Crate {
    name: "harness",
    src: "harness/src",
    // One layer: the harness is checked for cycles only.
    layers: &[],
    known: HARNESS_KNOWN,
    children_name_parents: true,
};

const HARNESS_KNOWN: &[&str] = &[];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// The module of a file under `src` (`core/mod.rs` → `core`).
fn module_of(rel: &Path) -> Module {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts.join("::")
}

fn join(m: &str, name: &str) -> Module {
    if m.is_empty() {
        name.to_string()
    } else {
        format!("{m}::{name}")
    }
}

fn parent(m: &str) -> Module {
    m.rsplit_once("::")
        .map(|(p, _)| p.to_string())
        .unwrap_or_default()
}

/// Code built only for the docs (`#[cfg(doc)]`, an item that exists for an
/// intra-doc link): not part of the layering. Test code is: a unit test
/// that needs a module above its own belongs in that module's tests, or in
/// the crate's `tests/`.
fn is_doc_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("doc"))
    })
}

/// One file's names: the paths it uses, and the names its `use` items bind
/// (for following re-exports through it).
#[derive(Default)]
struct FileNames {
    /// Absolute paths (from the crate root) the file names.
    used: Vec<Vec<String>>,
    /// A name bound by a `use` item → the absolute path it stands for.
    binds: BTreeMap<String, Vec<String>>,
}

struct Collector<'a> {
    module: &'a str,
    /// The file's child modules (`mod x;`), which a bare `x::…` names.
    children: &'a BTreeSet<String>,
    /// The inline modules (`mod x { … }`) the visit is in.
    inline: Vec<String>,
    out: FileNames,
}

impl Collector<'_> {
    /// The absolute form of a path written in this file, if it is the
    /// crate's own.
    fn absolute(&self, segs: &[String]) -> Option<Vec<String>> {
        let first = segs.first()?;
        let mut base: Vec<String> = if self.module.is_empty() {
            Vec::new()
        } else {
            self.module.split("::").map(String::from).collect()
        };
        base.extend(self.inline.iter().cloned());
        let mut rest = segs;
        match first.as_str() {
            "crate" => {
                base.clear();
                rest = &segs[1..];
            }
            "self" => rest = &segs[1..],
            "super" => {
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
            }
            name if self.children.contains(name) => {}
            _ => return None,
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let name = n.ident.to_string();
                let mut full = prefix.clone();
                if name != "self" {
                    full.push(name.clone());
                }
                let bound = if name == "self" {
                    prefix.last().cloned().unwrap_or_default()
                } else {
                    name
                };
                self.bind(bound, &full);
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.clone();
                if r.ident != "self" {
                    full.push(r.ident.to_string());
                }
                self.bind(r.rename.to_string(), &full);
            }
            syn::UseTree::Glob(_) => {
                if let Some(abs) = self.absolute(prefix) {
                    self.out.used.push(abs);
                }
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }

    /// Every `crate::`, `super::` or `self::` path in a macro's tokens
    /// (`self.field` is not one: a path needs `::`).
    fn macro_tokens(&mut self, tokens: proc_macro2::TokenStream) {
        use proc_macro2::TokenTree;
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < tokens.len() {
            match &tokens[i] {
                TokenTree::Group(g) => self.macro_tokens(g.stream()),
                TokenTree::Ident(id)
                    if matches!(id.to_string().as_str(), "crate" | "super" | "self") =>
                {
                    let mut segs = vec![id.to_string()];
                    while let [TokenTree::Punct(a), TokenTree::Punct(b), TokenTree::Ident(next), ..] =
                        &tokens[i + 1..]
                    {
                        if a.as_char() != ':' || b.as_char() != ':' {
                            break;
                        }
                        segs.push(next.to_string());
                        i += 3;
                    }
                    if segs.len() > 1 {
                        if let Some(abs) = self.absolute(&segs) {
                            self.out.used.push(abs);
                        }
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }

    fn bind(&mut self, name: String, full: &[String]) {
        if let Some(abs) = self.absolute(full) {
            self.out.used.push(abs.clone());
            self.out.binds.insert(name, abs);
        }
    }
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item_mod(&mut self, i: &'ast syn::ItemMod) {
        if !is_doc_only(&i.attrs) {
            self.inline.push(i.ident.to_string());
            syn::visit::visit_item_mod(self, i);
            self.inline.pop();
        }
    }
    fn visit_item_fn(&mut self, i: &'ast syn::ItemFn) {
        if !is_doc_only(&i.attrs) {
            syn::visit::visit_item_fn(self, i);
        }
    }
    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if !is_doc_only(&i.attrs) {
            syn::visit::visit_item_impl(self, i);
        }
    }
    fn visit_item_use(&mut self, i: &'ast syn::ItemUse) {
        if !is_doc_only(&i.attrs) {
            self.use_tree(&mut Vec::new(), &i.tree);
        }
    }
    /// A macro's arguments are tokens, not syntax (`assert!`, `matches!`,
    /// `tracing::debug!`, a `macro_rules!` body): their paths are read from
    /// the tokens.
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.macro_tokens(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }
    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        if segs.len() > 1 && matches!(segs[0].as_str(), "crate" | "super" | "self") {
            if let Some(abs) = self.absolute(&segs) {
                self.out.used.push(abs);
            }
        }
        syn::visit::visit_path(self, p);
    }
}

struct Graph {
    modules: BTreeSet<Module>,
    edges: BTreeSet<(Module, Module)>,
}

fn graph(krate: &Crate) -> Graph {
    let src = workspace().join(krate.src);
    let mut files: BTreeMap<Module, syn::File> = BTreeMap::new();
    for entry in walk(&src) {
        let rel = entry.strip_prefix(&src).unwrap().to_path_buf();
        // Binaries are crates of their own, which use this one by name.
        if rel == Path::new("main.rs") || rel.starts_with("bin") {
            continue;
        }
        let text = std::fs::read_to_string(&entry).unwrap();
        let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", entry.display()));
        files.insert(module_of(&rel), file);
    }
    let modules: BTreeSet<Module> = files.keys().cloned().collect();
    let mut names: BTreeMap<Module, FileNames> = BTreeMap::new();
    for (m, file) in &files {
        let children: BTreeSet<String> = modules
            .iter()
            .filter(|c| parent(c) == *m && !c.is_empty() && *c != m)
            .map(|c| c.rsplit("::").next().unwrap().to_string())
            .collect();
        let mut c = Collector {
            module: m,
            children: &children,
            inline: Vec::new(),
            out: FileNames::default(),
        };
        c.visit_file(file);
        names.insert(m.clone(), c.out);
    }
    // The module that defines what `path` names, following re-exports.
    let resolve = |path: &[String]| -> Module {
        let mut path = path.to_vec();
        for _ in 0..8 {
            let mut m = String::new();
            let mut i = 0;
            while i < path.len() && modules.contains(&join(&m, &path[i])) {
                m = join(&m, &path[i]);
                i += 1;
            }
            match path.get(i).and_then(|name| names[&m].binds.get(name)) {
                Some(target) if target.as_slice() != path.as_slice() => {
                    let mut next = target.clone();
                    next.extend(path[i + 1..].iter().cloned());
                    path = next;
                }
                _ => return m,
            }
        }
        String::new()
    };
    let mut edges = BTreeSet::new();
    for (m, n) in &names {
        for used in &n.used {
            let to = resolve(used);
            if to != *m {
                edges.insert((m.clone(), to));
            }
        }
    }
    Graph { modules, edges }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

fn layer(krate: &Crate, m: &str) -> usize {
    if m.is_empty() {
        return krate.layers.len();
    }
    let mut best: Option<(usize, usize)> = None;
    for (i, layer) in krate.layers.iter().enumerate() {
        for prefix in *layer {
            if (m == *prefix || m.starts_with(&format!("{prefix}::")))
                && best.is_none_or(|(len, _)| prefix.len() > len)
            {
                best = Some((prefix.len(), i));
            }
        }
    }
    match best {
        Some((_, i)) => i,
        None if krate.layers.is_empty() => 0,
        None => panic!(
            "{}: module {m} is in no layer of tests/tidy.rs: give it one",
            krate.name
        ),
    }
}

/// The files that take part in a cycle, one group per cycle (Tarjan).
fn cycles(modules: &BTreeSet<Module>, edges: &BTreeSet<(Module, Module)>) -> Vec<Vec<Module>> {
    let index: BTreeMap<&str, usize> = modules
        .iter()
        .enumerate()
        .map(|(i, m)| (m.as_str(), i))
        .collect();
    let names: Vec<&str> = modules.iter().map(String::as_str).collect();
    let mut adj = vec![Vec::new(); names.len()];
    for (a, b) in edges {
        if let (Some(&a), Some(&b)) = (index.get(a.as_str()), index.get(b.as_str())) {
            adj[a].push(b);
        }
    }
    struct T<'a> {
        adj: &'a [Vec<usize>],
        idx: Vec<Option<usize>>,
        low: Vec<usize>,
        on: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn strong(t: &mut T<'_>, v: usize) {
        t.idx[v] = Some(t.next);
        t.low[v] = t.next;
        t.next += 1;
        t.stack.push(v);
        t.on[v] = true;
        for &w in &t.adj[v] {
            match t.idx[w] {
                None => {
                    strong(t, w);
                    t.low[v] = t.low[v].min(t.low[w]);
                }
                Some(i) if t.on[w] => t.low[v] = t.low[v].min(i),
                _ => {}
            }
        }
        if Some(t.low[v]) == t.idx[v] {
            let mut group = Vec::new();
            loop {
                let w = t.stack.pop().unwrap();
                t.on[w] = false;
                group.push(w);
                if w == v {
                    break;
                }
            }
            if group.len() > 1 {
                t.out.push(group);
            }
        }
    }
    let n = names.len();
    let mut t = T {
        adj: &adj,
        idx: vec![None; n],
        low: vec![0; n],
        on: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if t.idx[v].is_none() {
            strong(&mut t, v);
        }
    }
    t.out
        .into_iter()
        .map(|g| {
            let mut g: Vec<Module> = g.into_iter().map(|i| names[i].to_string()).collect();
            g.sort();
            g
        })
        .collect()
}

fn shown(m: &str) -> &str {
    if m.is_empty() {
        "(root)"
    } else {
        m
    }
}

fn check(krate: &Crate) {
    let g = graph(krate);
    let known: BTreeSet<(Module, Module)> = krate
        .known
        .iter()
        .map(|e| {
            let (a, b) = e.split_once(" -> ").expect("`from -> to`");
            let root = |s: &str| {
                if s == "(root)" {
                    String::new()
                } else {
                    s.to_string()
                }
            };
            (root(a), root(b))
        })
        .collect();
    let mut problems = Vec::new();
    for (a, b) in &known {
        if !g.edges.contains(&(a.clone(), b.clone())) {
            problems.push(format!(
                "{} -> {} is gone: delete it from KNOWN",
                shown(a),
                shown(b)
            ));
        }
    }
    for (a, b) in &g.edges {
        if known.contains(&(a.clone(), b.clone())) {
            continue;
        }
        if !krate.layers.is_empty() && layer(krate, b) > layer(krate, a) {
            problems.push(format!(
                "{} -> {} points up a layer (layer {} names layer {})",
                shown(a),
                shown(b),
                layer(krate, a),
                layer(krate, b)
            ));
        }
    }
    let is_ancestor = |a: &str, b: &str| b.is_empty() || a.starts_with(&format!("{b}::"));
    let kept: BTreeSet<(Module, Module)> = g
        .edges
        .difference(&known)
        .filter(|(a, b)| !(krate.children_name_parents && is_ancestor(a, b)))
        .cloned()
        .collect();
    for group in cycles(&g.modules, &kept) {
        let inside: Vec<String> = kept
            .iter()
            .filter(|(a, b)| group.contains(a) && group.contains(b))
            .map(|(a, b)| format!("{} -> {}", shown(a), shown(b)))
            .collect();
        problems.push(format!("a cycle: {}", inside.join(", ")));
    }
    assert!(
        problems.is_empty(),
        "{}: the imports break the layering (ARCHITECTURE.md):\n  {}",
        krate.name,
        problems.join("\n  ")
    );
}

#[test]
fn zk_mock_imports_point_down() {
    check(&ZK_MOCK);
}

/// Whether a type names the state anywhere: `State`, `&mut State`,
/// `Guard<State>`, or any of `names` (its aliases and renames).
fn names_state(ty: &syn::Type, names: &BTreeSet<String>) -> bool {
    struct Names<'n>(bool, &'n BTreeSet<String>);
    impl<'a> Visit<'a> for Names<'_> {
        fn visit_path(&mut self, p: &'a syn::Path) {
            self.0 |= p
                .segments
                .last()
                .is_some_and(|s| self.1.contains(&s.ident.to_string()));
            syn::visit::visit_path(self, p);
        }
    }
    let mut v = Names(false, names);
    v.visit_type(ty);
    v.0
}

/// `State` and every name that stands for it in `files`: a type alias
/// whose type names it (`type Core<'a> = &'a mut State;`), and a renamed
/// import of it (`use crate::core::State as Core;`), to any depth. Names
/// are matched without their scope: on today's tree the set is `State`
/// and `Shared` (`Arc<Mutex<State>>`), so an unrelated type named `Shared`
/// with an impl outside `core/` would fail too; rename one or the other.
fn state_names<'f>(files: impl Iterator<Item = &'f syn::File> + Clone) -> BTreeSet<String> {
    struct Aliases<'n> {
        names: &'n BTreeSet<String>,
        found: Vec<String>,
    }
    impl<'a> Visit<'a> for Aliases<'_> {
        fn visit_item_type(&mut self, t: &'a syn::ItemType) {
            if names_state(&t.ty, self.names) {
                self.found.push(t.ident.to_string());
            }
        }
        fn visit_use_rename(&mut self, r: &'a syn::UseRename) {
            if self.names.contains(&r.ident.to_string()) {
                self.found.push(r.rename.to_string());
            }
        }
    }
    let mut names = BTreeSet::from(["State".to_string()]);
    loop {
        let mut found = Vec::new();
        for f in files.clone() {
            let mut v = Aliases {
                names: &names,
                found: Vec::new(),
            };
            v.visit_file(f);
            found.extend(v.found);
        }
        let before = names.len();
        names.extend(found);
        if names.len() == before {
            return names;
        }
    }
}

/// Every `impl` block of a file (test code included) for a type that names
/// the state (`names`, from [`state_names`]), trait impls too.
fn state_impls(file: &syn::File, names: &BTreeSet<String>) -> usize {
    struct Impls<'n>(usize, &'n BTreeSet<String>);
    impl<'a> Visit<'a> for Impls<'_> {
        fn visit_item_impl(&mut self, i: &'a syn::ItemImpl) {
            if is_doc_only(&i.attrs) {
                return;
            }
            if names_state(&i.self_ty, self.1) {
                self.0 += 1;
            }
            syn::visit::visit_item_impl(self, i);
        }
        fn visit_item_mod(&mut self, m: &'a syn::ItemMod) {
            if !is_doc_only(&m.attrs) {
                syn::visit::visit_item_mod(self, m);
            }
        }
    }
    let mut v = Impls(0, names);
    v.visit_file(file);
    v.0
}

#[test]
fn zk_mocks_state_is_implemented_only_in_its_core() {
    let src = workspace().join(ZK_MOCK.src);
    let files: Vec<(PathBuf, syn::File)> = walk(&src)
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            (path, syn::parse_file(&text).unwrap())
        })
        .collect();
    let names = state_names(files.iter().map(|(_, f)| f));
    let mut outside = Vec::new();
    let mut inside = 0;
    for (path, file) in &files {
        let n = state_impls(file, &names);
        let rel = path.strip_prefix(&src).unwrap();
        if rel.starts_with("core") {
            inside += n;
        } else if n > 0 {
            outside.push(rel.display().to_string());
        }
    }
    assert!(
        inside > 0,
        "no impl State found in core/: the check sees nothing"
    );
    assert!(
        outside.is_empty(),
        "impl State outside zk-mock's core/ (ARCHITECTURE.md): {outside:?}"
    );
}

#[test]
fn zk_lock_imports_point_down() {
    check(&ZK_LOCK);
}

#[test]
fn harness_has_no_import_cycles() {
    check(&HARNESS);
}

/// The checker itself: it reads `use`, `super::` and `crate::` paths, test
/// code's too (not doc-only items), places a module by its longest listed prefix, and finds a cycle.
#[test]
fn the_checker_sees_what_it_must() {
    let file = syn::parse_file(
        "use crate::a::Thing; use super::b; fn f() { crate::c::g(); } \
         #[cfg(test)] mod tests { use crate::d::X; } #[cfg(doc)] use crate::e::Y; \
         fn h() { assert!(matches!(x, crate::f::Z { .. }), \"{}\", self.g); tracing::debug!(a = %super::h::C); }",
    )
    .unwrap();
    let children = BTreeSet::new();
    let mut c = Collector {
        module: "x::y",
        children: &children,
        inline: Vec::new(),
        out: FileNames::default(),
    };
    c.visit_file(&file);
    let used: BTreeSet<String> = c.out.used.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        used,
        ["a::Thing", "x::b", "c::g", "d::X", "f::Z", "x::h::C"]
            .into_iter()
            .map(String::from)
            .collect()
    );
    let modules: BTreeSet<Module> = ["a", "b", "c"].into_iter().map(String::from).collect();
    let edges: BTreeSet<(Module, Module)> = [("a", "b"), ("b", "c"), ("c", "a")]
        .into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(cycles(&modules, &edges), vec![vec!["a", "b", "c"]]);
    // A module of the core is in the core's layer, above the txn and the watches.
    assert!(layer(&ZK_MOCK, "txn::reply") < layer(&ZK_MOCK, "core::apply"));
    assert!(layer(&ZK_MOCK, "watch") < layer(&ZK_MOCK, "core::state"));
    assert_eq!(layer(&ZK_MOCK, ""), ZK_MOCK.layers.len());
    // Every impl for a type that names the state counts, through an alias
    // or a renamed import too.
    let impls = syn::parse_file(
        "impl State {} impl Tr for &mut State {} impl<'a> Tr for Guard<'a, State> {} \
         impl Stated {} mod m { impl crate::core::State {} } \
         type Core<'a> = &'a mut State; type Deeper<'a> = Option<Core<'a>>; impl Tr for Deeper<'_> {} \
         use crate::core::State as Hub; impl Hub {} type Other = Stated; impl Other {}",
    )
    .unwrap();
    let names = state_names(std::iter::once(&impls));
    assert_eq!(
        names,
        ["Core", "Deeper", "Hub", "State"]
            .into_iter()
            .map(String::from)
            .collect()
    );
    assert_eq!(state_impls(&impls, &names), 6);
}
