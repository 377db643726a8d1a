//! Model-based test of the data tree alone: random sequences of creates
//! (persistent, ephemeral, sequential, by several sessions), deletes,
//! setData, session kills and multis (all-or-nothing) run against
//! `DataTree` and against a plain reference model of ZooKeeper's semantics.
//! After every step both must agree on each result and on every node's
//! Stat, and the tree must keep its invariants: parent links both ways,
//! numChildren, the reported cversion (`stored * 2 - numChildren`), pzxid,
//! the sequential counter, and the ephemerals index (every ephemeral node
//! is listed under its owner and nowhere else).
//!
//! `PROPTEST_CASES` sets the number of sequences (default 256).

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use proptest::prelude::*;
use zk_mock::proto::{Acl, ErrorCode};
use zk_mock::tree::{Caller, CreateArgs, CreateMode, DataTree};

const SESSIONS: [i64; 3] = [0x100, 0x200, 0x300];
const NAMES: [&str; 3] = ["a", "b", "c"];

/// A node as the model keeps it: what `StatPersisted` stores.
#[derive(Debug, Clone, PartialEq)]
struct MNode {
    data: Option<Vec<u8>>,
    czxid: i64,
    mzxid: i64,
    pzxid: i64,
    version: i32,
    /// Creates of children ever (the next sequential suffix).
    creates: i32,
    owner: i64,
    children: BTreeSet<String>,
}

impl MNode {
    fn new(zxid: i64, data: Option<Vec<u8>>, owner: i64) -> MNode {
        MNode {
            data,
            czxid: zxid,
            mzxid: zxid,
            pzxid: zxid,
            version: 0,
            creates: 0,
            owner,
            children: BTreeSet::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
struct Model {
    nodes: BTreeMap<String, MNode>,
}

fn parent_of(path: &str) -> (&str, &str) {
    let i = path.rfind('/').expect("absolute");
    (if i == 0 { "/" } else { &path[..i] }, &path[i + 1..])
}

fn join(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

impl Model {
    fn new() -> Model {
        let mut nodes = BTreeMap::new();
        let special = |children: &[&str]| MNode {
            data: Some(Vec::new()),
            czxid: 0,
            mzxid: 0,
            pzxid: 0,
            version: 0,
            creates: 0,
            owner: 0,
            children: children.iter().map(|c| c.to_string()).collect(),
        };
        nodes.insert("/".to_string(), special(&["zookeeper"]));
        nodes.insert("/zookeeper".to_string(), special(&["config", "quota"]));
        nodes.insert("/zookeeper/quota".to_string(), special(&[]));
        nodes.insert("/zookeeper/config".to_string(), special(&[]));
        Model { nodes }
    }

    /// `pRequest2TxnCreate`'s order: parent NONODE, NODEEXISTS,
    /// NOCHILDRENFOREPHEMERALS.
    fn create(
        &mut self,
        zxid: i64,
        path: &str,
        data: Option<Vec<u8>>,
        ephemeral: bool,
        sequential: bool,
        session: i64,
    ) -> Result<String, ErrorCode> {
        let (parent_path, _) = parent_of(path);
        let parent = self.nodes.get(parent_path).ok_or(ErrorCode::NoNode)?;
        let full = if sequential {
            format!("{path}{:010}", parent.creates)
        } else {
            path.to_string()
        };
        if self.nodes.contains_key(&full) {
            return Err(ErrorCode::NodeExists);
        }
        if parent.owner != 0 {
            return Err(ErrorCode::NoChildrenForEphemerals);
        }
        let owner = if ephemeral { session } else { 0 };
        self.nodes
            .insert(full.clone(), MNode::new(zxid, data, owner));
        let parent = self.nodes.get_mut(parent_path).unwrap();
        parent.creates += 1;
        parent.pzxid = zxid;
        parent.children.insert(parent_of(&full).1.to_string());
        Ok(full)
    }

    /// NONODE, BADVERSION, NOTEMPTY.
    fn delete(&mut self, zxid: i64, path: &str, version: i32) -> Result<(), ErrorCode> {
        let node = self.nodes.get(path).ok_or(ErrorCode::NoNode)?;
        if version != -1 && version != node.version {
            return Err(ErrorCode::BadVersion);
        }
        if !node.children.is_empty() {
            return Err(ErrorCode::NotEmpty);
        }
        self.remove(zxid, path);
        Ok(())
    }

    fn remove(&mut self, zxid: i64, path: &str) {
        self.nodes.remove(path);
        let (parent_path, name) = parent_of(path);
        let parent = self.nodes.get_mut(parent_path).unwrap();
        parent.children.remove(name);
        if zxid > parent.pzxid {
            parent.pzxid = zxid;
        }
    }

    /// NONODE, BADVERSION.
    fn set_data(
        &mut self,
        zxid: i64,
        path: &str,
        data: Option<Vec<u8>>,
        version: i32,
    ) -> Result<(), ErrorCode> {
        let node = self.nodes.get_mut(path).ok_or(ErrorCode::NoNode)?;
        if version != -1 && version != node.version {
            return Err(ErrorCode::BadVersion);
        }
        node.data = data;
        node.version += 1;
        node.mzxid = zxid;
        Ok(())
    }

    fn kill_session(&mut self, zxid: i64, session: i64) {
        let mine: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, n)| n.owner == session)
            .map(|(p, _)| p.clone())
            .collect();
        for p in mine {
            self.remove(zxid, &p);
        }
    }

    /// User nodes (not the built-in ones), sorted.
    fn user_paths(&self) -> Vec<String> {
        self.nodes
            .keys()
            .filter(|p| *p != "/" && !p.starts_with("/zookeeper"))
            .cloned()
            .collect()
    }
}

/// Which node an operation names: one that exists in the model when the
/// step runs (chosen by index), or a fixed path that may or may not.
#[derive(Debug, Clone)]
enum Target {
    Existing(usize),
    Fixed(String),
}

#[derive(Debug, Clone)]
enum Step {
    Create {
        parent: Target,
        name: &'static str,
        data: Option<Vec<u8>>,
        ephemeral: bool,
        sequential: bool,
        session: usize,
    },
    Delete {
        target: Target,
        /// None: -1; Some(true): the current version; Some(false): a wrong one.
        version: Option<bool>,
    },
    SetData {
        target: Target,
        data: Option<Vec<u8>>,
        version: Option<bool>,
    },
    KillSession(usize),
    Multi(Vec<Step>),
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        4 => any::<usize>().prop_map(Target::Existing),
        1 => prop::sample::select(vec!["/", "/a", "/b", "/a/b", "/a/b/c", "/missing/x"])
            .prop_map(|p| Target::Fixed(p.to_string())),
    ]
}

fn data() -> impl Strategy<Value = Option<Vec<u8>>> {
    prop_oneof![
        1 => Just(None),
        4 => prop::collection::vec(any::<u8>(), 0..8).prop_map(Some),
    ]
}

fn simple_step() -> impl Strategy<Value = Step> {
    let version = prop_oneof![Just(None), Just(Some(true)), Just(Some(false))];
    prop_oneof![
        6 => (target(), prop::sample::select(NAMES.to_vec()), data(), any::<bool>(), any::<bool>(), 0..SESSIONS.len())
            .prop_map(|(parent, name, data, ephemeral, sequential, session)| Step::Create {
                parent, name, data, ephemeral, sequential, session
            }),
        3 => (target(), version.clone()).prop_map(|(target, version)| Step::Delete { target, version }),
        2 => (target(), data(), version).prop_map(|(target, data, version)| Step::SetData { target, data, version }),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        12 => simple_step(),
        1 => (0..SESSIONS.len()).prop_map(Step::KillSession),
        2 => prop::collection::vec(simple_step(), 1..5).prop_map(Step::Multi),
    ]
}

fn resolve(model: &Model, t: &Target, allow_root: bool) -> String {
    match t {
        Target::Fixed(p) => p.clone(),
        Target::Existing(i) => {
            let mut paths = model.user_paths();
            if allow_root {
                paths.push("/".into());
            }
            if paths.is_empty() {
                "/a".into()
            } else {
                paths[i % paths.len()].clone()
            }
        }
    }
}

fn version_for(model: &Model, path: &str, v: Option<bool>) -> i32 {
    match v {
        None => -1,
        Some(right) => {
            let cur = model.nodes.get(path).map_or(0, |n| n.version);
            if right {
                cur
            } else {
                cur + 7
            }
        }
    }
}

/// One simple step on both: `Err` if they disagree, else the outcome both had.
fn apply(
    tree: &mut DataTree,
    model: &mut Model,
    zxid: i64,
    s: &Step,
) -> Result<Result<(), ErrorCode>, String> {
    let open = Acl::open_unsafe();
    let mut events = Vec::new();
    match s {
        Step::Create {
            parent,
            name,
            data,
            ephemeral,
            sequential,
            session,
        } => {
            let parent = resolve(model, parent, true);
            let path = join(&parent, name);
            let session = SESSIONS[*session];
            let flags = i32::from(*ephemeral) | (i32::from(*sequential) << 1);
            let got = tree
                .create(
                    zxid,
                    zxid,
                    CreateArgs {
                        path: path.as_str().into(),
                        data: data.clone().map(Bytes::from),
                        acl: &open,
                        mode: CreateMode::from_flags(flags).unwrap(),
                        ttl: 0,
                    },
                    Caller { session, auth: &[] },
                    &mut events,
                )
                .map(|(p, _)| p.to_string());
            // /zookeeper is a normal persistent node to the tree's create.
            let want = model.create(zxid, &path, data.clone(), *ephemeral, *sequential, session);
            if got != want {
                return Err(format!(
                    "create {path} flags {flags}: tree {got:?}, model {want:?}"
                ));
            }
            Ok(got.map(|_| ()))
        }
        Step::Delete { target, version } => {
            let path = resolve(model, target, false);
            let v = version_for(model, &path, *version);
            let got = tree.delete(
                zxid,
                &path,
                v,
                Caller {
                    session: 1,
                    auth: &[],
                },
                &mut events,
            );
            let want = if path == "/" {
                Err(ErrorCode::BadArguments)
            } else {
                model.delete(zxid, &path, v)
            };
            if got != want {
                return Err(format!("delete {path} v{v}: tree {got:?}, model {want:?}"));
            }
            Ok(got)
        }
        Step::SetData {
            target,
            data,
            version,
        } => {
            let path = resolve(model, target, true);
            let v = version_for(model, &path, *version);
            let got = tree
                .set_data(
                    zxid,
                    zxid,
                    &path,
                    data.clone().map(Bytes::from),
                    v,
                    Caller {
                        session: 1,
                        auth: &[],
                    },
                    &mut events,
                )
                .map(|_| ());
            let want = model.set_data(zxid, &path, data.clone(), v);
            if got != want {
                return Err(format!("setData {path} v{v}: tree {got:?}, model {want:?}"));
            }
            Ok(got)
        }
        Step::KillSession(i) => {
            tree.kill_session(zxid, SESSIONS[*i], &mut events);
            model.kill_session(zxid, SESSIONS[*i]);
            Ok(Ok(()))
        }
        Step::Multi(_) => unreachable!("multis are applied by run"),
    }
}

/// Compares every node and checks the tree's own invariants.
fn check(tree: &DataTree, model: &Model) -> Result<(), String> {
    let tree_paths: BTreeSet<&str> = tree.iter().map(|(p, _)| p).collect();
    let model_paths: BTreeSet<&str> = model.nodes.keys().map(String::as_str).collect();
    if tree_paths != model_paths {
        return Err(format!("paths: tree {tree_paths:?}, model {model_paths:?}"));
    }
    for (path, m) in &model.nodes {
        let n = tree.get(path).unwrap();
        let stat = n.stat();
        let num = m.children.len() as i32;
        let want = (
            m.data.as_deref(),
            m.czxid,
            m.mzxid,
            m.pzxid,
            m.version,
            m.creates * 2 - num,
            m.owner,
            num,
            m.data.as_ref().map_or(0, |d| d.len() as i32),
        );
        let got = (
            n.data.as_deref(),
            stat.czxid,
            stat.mzxid,
            stat.pzxid,
            stat.version,
            stat.cversion,
            stat.ephemeral_owner,
            stat.num_children,
            stat.data_length,
        );
        if got != want {
            return Err(format!(
                "{path}: tree (data, czxid, mzxid, pzxid, version, cversion, owner, numChildren, dataLength) {got:?}, model {want:?}"
            ));
        }
        // Parent links, both ways.
        let listed: BTreeSet<String> = n.listing().iter().cloned().collect();
        let children: BTreeSet<String> = n.children.iter().map(String::from).collect();
        if listed != m.children || children != m.children {
            return Err(format!(
                "{path}: children {listed:?}, model {:?}",
                m.children
            ));
        }
        for c in &m.children {
            if tree.get(&join(path, c)).is_none() {
                return Err(format!("{path} lists {c}, which does not exist"));
            }
        }
        if path != "/" {
            let (parent, name) = parent_of(path);
            if !tree.get(parent).is_some_and(|p| p.children.contains(name)) {
                return Err(format!("{path} is not listed by its parent"));
            }
        }
    }
    // The ephemerals index.
    for s in SESSIONS {
        let got: BTreeSet<&str> = tree.ephemerals_of(s).collect();
        let want: BTreeSet<&str> = model
            .nodes
            .iter()
            .filter(|(_, n)| n.owner == s)
            .map(|(p, _)| p.as_str())
            .collect();
        if got != want {
            return Err(format!(
                "ephemerals of {s:#x}: tree {got:?}, model {want:?}"
            ));
        }
    }
    Ok(())
}

fn run(steps: &[Step]) -> Result<(), String> {
    let mut tree = DataTree::new();
    let mut model = Model::new();
    check(&tree, &model)?;
    for (i, s) in steps.iter().enumerate() {
        let zxid = tree.next_zxid();
        let r = match s {
            Step::Multi(ops) => {
                // All or nothing, under one zxid: the first failing op
                // rolls back the ones before it.
                let before = model.clone();
                tree.begin();
                let mut outcome = Ok(Ok(()));
                for op in ops {
                    outcome = apply(&mut tree, &mut model, zxid, op);
                    if !matches!(outcome, Ok(Ok(()))) {
                        break;
                    }
                }
                match outcome {
                    Ok(Ok(())) => tree.commit(),
                    Ok(Err(_)) => {
                        tree.rollback();
                        model = before;
                    }
                    Err(_) => {}
                }
                outcome.map(|_| ())
            }
            s => apply(&mut tree, &mut model, zxid, s).map(|_| ()),
        };
        r.map_err(|e| format!("step {i}: {e}"))?;
        check(&tree, &model).map_err(|e| format!("after step {i} ({s:?}): {e}"))?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(256),
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_tree_agrees_with_the_model(steps in prop::collection::vec(step(), 1..60)) {
        if let Err(e) = run(&steps) {
            prop_assert!(false, "{}", e);
        }
    }
}

/// The model itself is checked on a hand-made sequence, so a model bug
/// cannot hide a tree bug by mirroring it.
#[test]
fn the_model_follows_zookeepers_rules() {
    let mut m = Model::new();
    assert_eq!(
        m.create(1, "/a", None, false, false, 0x100),
        Ok("/a".into())
    );
    assert_eq!(
        m.create(2, "/a/s-", None, false, true, 0x100),
        Ok("/a/s-0000000000".into())
    );
    assert_eq!(
        m.create(3, "/a/e", None, true, false, 0x100),
        Ok("/a/e".into())
    );
    assert_eq!(
        m.create(4, "/a/e/x", None, false, false, 0x100),
        Err(ErrorCode::NoChildrenForEphemerals)
    );
    assert_eq!(
        m.create(5, "/a/e", None, false, false, 0x100),
        Err(ErrorCode::NodeExists)
    );
    assert_eq!(m.delete(6, "/a", -1), Err(ErrorCode::NotEmpty));
    assert_eq!(
        m.delete(7, "/a/s-0000000000", 3),
        Err(ErrorCode::BadVersion)
    );
    assert_eq!(m.delete(8, "/a/s-0000000000", 0), Ok(()));
    // The suffix counts creates: a delete does not give a number back.
    assert_eq!(
        m.create(9, "/a/s-", None, false, true, 0x100),
        Ok("/a/s-0000000002".into())
    );
    let a = &m.nodes["/a"];
    assert_eq!((a.creates, a.children.len(), a.pzxid), (3, 2, 9));
    m.kill_session(10, 0x100);
    assert!(!m.nodes.contains_key("/a/e"));
    assert_eq!(m.nodes["/a"].pzxid, 10);
}
