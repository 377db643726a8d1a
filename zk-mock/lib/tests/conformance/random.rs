//! Seeded random operation sequences (proptest, so a divergence shrinks to a
//! short sequence). Each sequence runs on the shared real server under its own
//! prefix and on a fresh zk-mock; the transcripts must be equal.
//!
//! - `CONFORMANCE_CASES` (default 300): number of sequences;
//! - `CONFORMANCE_LEN` (default 40): ops per sequence;
//! - `CONFORMANCE_SEED` (default 0x2b7e151628aed2a6): the seed, printed on failure;
//! - `CONFORMANCE_SHRINK` (default 400): shrink iterations on a divergence;
//! - `CONFORMANCE_SKIP`: op kinds to leave out (see [`skipped`]).

use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use zk_mock::proto::{perms, Acl};

use crate::driver::{MOp, Op, Passwd, Req, Slot, Zx};

const PATHS: &[&str] = &[
    "@/a",
    "@/a/b",
    "@/b",
    "@/s/x",
    "@/s/x0000000000",
    "@/s/x0000000001",
    "@/s/x0000000002",
    "@/s",
];

#[derive(Debug, Clone)]
enum RM {
    Create {
        op: i32,
        path: usize,
        flags: i32,
        data: u8,
    },
    Delete {
        path: usize,
        version: i32,
    },
    Set {
        path: usize,
        data: u8,
        version: i32,
    },
    Check {
        path: usize,
        version: i32,
    },
}

#[derive(Debug, Clone)]
enum ROp {
    Create {
        s: Slot,
        op: i32,
        path: usize,
        flags: i32,
        data: u8,
        /// See [`acl`].
        acl: u8,
    },
    Delete {
        s: Slot,
        path: usize,
        version: i32,
    },
    Set {
        s: Slot,
        path: usize,
        data: u8,
        version: i32,
    },
    /// 0 exists, 1 getData, 2 getChildren, 3 getChildren2.
    Read {
        s: Slot,
        kind: u8,
        path: usize,
        watch: bool,
    },
    Multi {
        s: Slot,
        ops: Vec<RM>,
    },
    Sync {
        s: Slot,
        path: usize,
    },
    /// closeSession, then a new session in the same slot.
    CloseReconnect {
        s: Slot,
    },
    /// The same session on a new socket (its watches are lost).
    Reattach {
        s: Slot,
    },
    /// setWatches (or setWatches2) with the session's last seen zxid.
    SetWatches {
        s: Slot,
        v2: bool,
        /// 0: the session's last zxid, 1: zero, 2: the server's current zxid.
        rel: u8,
        data: Vec<usize>,
        exist: Vec<usize>,
        child: Vec<usize>,
    },
    /// 0: getEphemerals, 1: getAllChildrenNumber, 2: getACL.
    Info {
        s: Slot,
        kind: u8,
        path: usize,
    },
    MultiRead {
        s: Slot,
        ops: Vec<(bool, usize)>,
    },
    /// See [`acl`].
    SetAcl {
        s: Slot,
        path: usize,
        acl: u8,
        version: i32,
    },
    /// check (13) outside a multi.
    Check {
        s: Slot,
        path: usize,
        version: i32,
    },
    /// Requests written back to back (only simple ones: create, delete,
    /// setData, reads, sync; their own slots are ignored).
    Pipeline {
        s: Slot,
        ops: Vec<ROp>,
    },
    /// 0: addWatch persistent, 1: addWatch recursive, 2..=4: removeWatches
    /// type 1..=3, 5..=7: checkWatches type 1..=3.
    Watches {
        s: Slot,
        kind: u8,
        path: usize,
    },
    /// digest auth as user `u0` or `u1`.
    Auth {
        s: Slot,
        user: u8,
    },
    /// 0: wrong password, 1: lastZxidSeen ahead, 2: unknown session id;
    /// then a good reconnect.
    BadReconnect {
        s: Slot,
        kind: u8,
    },
}

/// 0-4 open, 5 read-only, 6 creator (`auth`, InvalidACL without auth),
/// 7 WRITE only (no READ: notifications are filtered, reads NoAuth).
fn acl(a: u8) -> Vec<Acl> {
    match a % 8 {
        0..=4 => Acl::open_unsafe(),
        5 => Acl::read_unsafe(),
        6 => vec![Acl::new(perms::ALL, "auth", "")],
        _ => vec![Acl::new(perms::WRITE, "world", "anyone")],
    }
}

fn data(d: u8) -> Option<Vec<u8>> {
    match d {
        0 => None,
        1 => Some(Vec::new()),
        2 => Some(b"x".to_vec()),
        _ => Some(b"yy".to_vec()),
    }
}

fn path(i: usize) -> String {
    PATHS[i % PATHS.len()].to_string()
}

fn rm_strategy() -> impl Strategy<Value = RM> {
    let p = 0..PATHS.len();
    let v = prop_oneof![Just(-1), Just(0), Just(1)];
    prop_oneof![
        (prop_oneof![Just(1), Just(15)], p.clone(), 0..4i32, 0..4u8).prop_map(
            |(op, path, flags, data)| RM::Create {
                op,
                path,
                flags,
                data
            }
        ),
        (p.clone(), v.clone()).prop_map(|(path, version)| RM::Delete { path, version }),
        (p.clone(), 0..4u8, v.clone()).prop_map(|(path, data, version)| RM::Set {
            path,
            data,
            version
        }),
        (p, v).prop_map(|(path, version)| RM::Check { path, version }),
    ]
}

fn simple_rop() -> impl Strategy<Value = ROp> {
    let p = 0..PATHS.len();
    let v = prop_oneof![Just(-1), Just(0), Just(1)];
    prop_oneof![
        (p.clone(), 0..4i32, 0..4u8).prop_map(|(path, flags, data)| ROp::Create {
            s: 0,
            op: 1,
            path,
            flags,
            data,
            acl: 0
        }),
        (p.clone(), v.clone()).prop_map(|(path, version)| ROp::Delete {
            s: 0,
            path,
            version
        }),
        (p.clone(), 0..4u8, v).prop_map(|(path, data, version)| ROp::Set {
            s: 0,
            path,
            data,
            version
        }),
        (0..4u8, p.clone(), any::<bool>()).prop_map(|(kind, path, watch)| ROp::Read {
            s: 0,
            kind,
            path,
            watch
        }),
        p.prop_map(|path| ROp::Sync { s: 0, path }),
    ]
}

fn rop_strategy(n: usize) -> impl Strategy<Value = ROp> {
    let s = 0..n;
    let p = 0..PATHS.len();
    let v = prop_oneof![Just(-1), Just(0), Just(1)];
    prop_oneof![
        6 => (s.clone(), prop_oneof![Just(1), Just(15)], p.clone(), 0..4i32, 0..4u8, 0..8u8).prop_map(
            |(s, op, path, flags, data, acl)| ROp::Create { s, op, path, flags, data, acl }
        ),
        4 => (s.clone(), p.clone(), v.clone())
            .prop_map(|(s, path, version)| ROp::Delete { s, path, version }),
        4 => (s.clone(), p.clone(), 0..4u8, v.clone())
            .prop_map(|(s, path, data, version)| ROp::Set { s, path, data, version }),
        8 => (s.clone(), 0..4u8, p.clone(), any::<bool>())
            .prop_map(|(s, kind, path, watch)| ROp::Read { s, kind, path, watch }),
        3 => (s.clone(), prop::collection::vec(rm_strategy(), 2..=4))
            .prop_map(|(s, ops)| ROp::Multi { s, ops }),
        1 => (s.clone(), p.clone()).prop_map(|(s, path)| ROp::Sync { s, path }),
        1 => s.clone().prop_map(|s| ROp::CloseReconnect { s }),
        1 => s.clone().prop_map(|s| ROp::Reattach { s }),
        1 => (
            s.clone(),
            any::<bool>(),
            0..3u8,
            prop::collection::vec(p.clone(), 0..3),
            prop::collection::vec(p.clone(), 0..3),
            prop::collection::vec(p.clone(), 0..3)
        )
            .prop_map(|(s, v2, rel, data, exist, child)| ROp::SetWatches {
                s,
                v2,
                rel,
                data,
                exist,
                child
            }),
        2 => (s.clone(), 0..3u8, p.clone()).prop_map(|(s, kind, path)| ROp::Info { s, kind, path }),
        1 => (s.clone(), prop::collection::vec((any::<bool>(), p.clone()), 1..4))
            .prop_map(|(s, ops)| ROp::MultiRead { s, ops }),
        1 => (s.clone(), p.clone(), 0..8u8, v.clone())
            .prop_map(|(s, path, acl, version)| ROp::SetAcl { s, path, acl, version }),
        1 => (s.clone(), p.clone(), v)
            .prop_map(|(s, path, version)| ROp::Check { s, path, version }),
        1 => (s.clone(), prop::collection::vec(simple_rop(), 2..5))
            .prop_map(|(s, ops)| ROp::Pipeline { s, ops }),
        2 => (s.clone(), 0..8u8, p).prop_map(|(s, kind, path)| ROp::Watches { s, kind, path }),
        1 => (s.clone(), 0..2u8).prop_map(|(s, user)| ROp::Auth { s, user }),
        1 => (s, 0..3u8).prop_map(|(s, kind)| ROp::BadReconnect { s, kind }),
    ]
}

fn seq_strategy(len: usize) -> impl Strategy<Value = (usize, Vec<ROp>)> {
    (2..=3usize).prop_flat_map(move |n| {
        (
            Just(n),
            Shrinkable {
                element: rop_strategy(n),
                len,
            },
        )
    })
}

/// Exactly `len` elements when generated, but shrinking may delete elements
/// (proptest's own `vec` never shrinks below the lower end of its size range,
/// and a range would make most sequences shorter than `len`).
#[derive(Debug)]
struct Shrinkable<S> {
    element: S,
    len: usize,
}

impl<S: Strategy> Strategy for Shrinkable<S> {
    type Tree = ShrinkableTree<S::Tree>;
    type Value = Vec<S::Value>;

    fn new_tree(&self, runner: &mut TestRunner) -> proptest::strategy::NewTree<Self> {
        let mut elements = Vec::with_capacity(self.len);
        for _ in 0..self.len {
            elements.push(self.element.new_tree(runner)?);
        }
        let included = vec![true; elements.len()];
        Ok(ShrinkableTree {
            elements,
            included,
            shrink: Shrink::Delete(0),
            prev: None,
        })
    }
}

#[derive(Debug, Clone, Copy)]
enum Shrink {
    Delete(usize),
    Element(usize),
}

/// Like proptest's `VecValueTree`: first tries deleting each element, then
/// shrinks the remaining elements one by one.
#[derive(Debug)]
struct ShrinkableTree<T> {
    elements: Vec<T>,
    included: Vec<bool>,
    shrink: Shrink,
    prev: Option<Shrink>,
}

impl<T: ValueTree> ValueTree for ShrinkableTree<T> {
    type Value = Vec<T::Value>;

    fn current(&self) -> Self::Value {
        self.elements
            .iter()
            .zip(&self.included)
            .filter(|(_, inc)| **inc)
            .map(|(e, _)| e.current())
            .collect()
    }

    fn simplify(&mut self) -> bool {
        loop {
            match self.shrink {
                Shrink::Delete(ix) => {
                    if ix >= self.elements.len() {
                        self.shrink = Shrink::Element(0);
                        continue;
                    }
                    self.shrink = Shrink::Delete(ix + 1);
                    if !self.included[ix] {
                        continue;
                    }
                    self.included[ix] = false;
                    self.prev = Some(Shrink::Delete(ix));
                    return true;
                }
                Shrink::Element(ix) => {
                    if ix >= self.elements.len() {
                        return false;
                    }
                    if self.included[ix] && self.elements[ix].simplify() {
                        self.prev = Some(Shrink::Element(ix));
                        return true;
                    }
                    self.shrink = Shrink::Element(ix + 1);
                }
            }
        }
    }

    fn complicate(&mut self) -> bool {
        match self.prev {
            None => false,
            Some(Shrink::Delete(ix)) => {
                self.included[ix] = true;
                self.prev = None;
                true
            }
            Some(Shrink::Element(ix)) => {
                if self.elements[ix].complicate() {
                    true
                } else {
                    self.prev = None;
                    false
                }
            }
        }
    }
}

impl ROp {
    fn kind(&self) -> &'static str {
        match self {
            ROp::Create { .. } => "create",
            ROp::Delete { .. } => "delete",
            ROp::Set { .. } => "set",
            ROp::Read { .. } => "read",
            ROp::Multi { .. } => "multi",
            ROp::Sync { .. } => "sync",
            ROp::CloseReconnect { .. } => "close",
            ROp::Reattach { .. } => "reattach",
            ROp::SetWatches { .. } => "setwatches",
            ROp::Info { .. } => "info",
            ROp::MultiRead { .. } => "multiread",
            ROp::SetAcl { .. } => "setacl",
            ROp::Check { .. } => "check",
            ROp::Pipeline { .. } => "pipeline",
            ROp::Watches { .. } => "watches",
            ROp::Auth { .. } => "auth",
            ROp::BadReconnect { .. } => "badreconnect",
        }
    }
}

/// `CONFORMANCE_SKIP`: comma-separated op kinds to leave out (create, delete,
/// set, read, multi, sync, close, reattach, setwatches, info, multiread,
/// setacl, check, pipeline, watches, auth, badreconnect), to look past a
/// known divergence.
fn skipped() -> Vec<String> {
    std::env::var("CONFORMANCE_SKIP")
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn to_ops(n: usize, rops: &[ROp]) -> Vec<Op> {
    let skip = skipped();
    let connect = |s: Slot| Op::Connect {
        s,
        timeout: 30000,
        read_only_byte: true,
        last_zxid: Zx::Zero,
    };
    let mut ops: Vec<Op> = (0..n).map(connect).collect();
    ops.push(Op::Req(
        0,
        Req::Create {
            op: 1,
            path: "@/s".into(),
            data: None,
            acl: Acl::open_unsafe(),
            flags: 0,
        },
    ));
    for r in rops {
        if skip.iter().any(|k| k == r.kind()) {
            continue;
        }
        match r {
            ROp::Create {
                s,
                op,
                path: p,
                flags,
                data: d,
                acl: a,
            } => ops.push(Op::Req(
                *s,
                Req::Create {
                    op: *op,
                    path: path(*p),
                    data: data(*d),
                    acl: acl(*a),
                    flags: *flags,
                },
            )),
            ROp::Delete {
                s,
                path: p,
                version,
            } => ops.push(Op::Req(
                *s,
                Req::Delete {
                    path: path(*p),
                    version: *version,
                },
            )),
            ROp::Set {
                s,
                path: p,
                data: d,
                version,
            } => ops.push(Op::Req(
                *s,
                Req::SetData {
                    path: path(*p),
                    data: data(*d),
                    version: *version,
                },
            )),
            ROp::Read {
                s,
                kind,
                path: p,
                watch,
            } => {
                let (path, watch) = (path(*p), *watch);
                let req = match kind % 4 {
                    0 => Req::Exists { path, watch },
                    1 => Req::GetData { path, watch },
                    2 => Req::GetChildren { path, watch },
                    _ => Req::GetChildren2 { path, watch },
                };
                ops.push(Op::Req(*s, req));
            }
            ROp::Multi { s, ops: m } => {
                let m = m
                    .iter()
                    .map(|x| match x {
                        RM::Create {
                            op,
                            path: p,
                            flags,
                            data: d,
                        } => MOp::Create {
                            op: *op,
                            path: path(*p),
                            data: data(*d),
                            flags: *flags,
                        },
                        RM::Delete { path: p, version } => MOp::Delete {
                            path: path(*p),
                            version: *version,
                        },
                        RM::Set {
                            path: p,
                            data: d,
                            version,
                        } => MOp::SetData {
                            path: path(*p),
                            data: data(*d),
                            version: *version,
                        },
                        RM::Check { path: p, version } => MOp::Check {
                            path: path(*p),
                            version: *version,
                        },
                    })
                    .collect();
                ops.push(Op::Req(*s, Req::Multi(m)));
            }
            ROp::Sync { s, path: p } => ops.push(Op::Req(*s, Req::Sync { path: path(*p) })),
            ROp::CloseReconnect { s } => {
                ops.push(Op::Req(*s, Req::CloseSession));
                ops.push(connect(*s));
            }
            ROp::SetWatches {
                s,
                v2,
                rel,
                data,
                exist,
                child,
            } => {
                let v = |l: &Vec<usize>| l.iter().map(|i| path(*i)).collect::<Vec<_>>();
                ops.push(Op::Req(
                    *s,
                    Req::SetWatches {
                        v2: *v2,
                        rel: match rel % 3 {
                            0 => Zx::Last,
                            1 => Zx::Zero,
                            _ => Zx::Ahead(0),
                        },
                        data: v(data),
                        exist: v(exist),
                        child: v(child),
                        persistent: vec![],
                        recursive: vec![],
                    },
                ));
            }
            ROp::Info { s, kind, path: p } => {
                let req = match kind % 3 {
                    0 => Req::GetEphemerals { prefix: path(*p) },
                    1 => Req::GetAllChildrenNumber { path: path(*p) },
                    _ => Req::GetAcl { path: path(*p) },
                };
                ops.push(Op::Req(*s, req));
            }
            ROp::MultiRead { s, ops: m } => {
                let m = m
                    .iter()
                    .map(|(data, p)| {
                        if *data {
                            MOp::GetData { path: path(*p) }
                        } else {
                            MOp::GetChildren { path: path(*p) }
                        }
                    })
                    .collect();
                ops.push(Op::Req(*s, Req::MultiRead(m)));
            }
            ROp::SetAcl {
                s,
                path: p,
                acl,
                version,
            } => {
                let acl = self::acl(*acl);
                ops.push(Op::Req(
                    *s,
                    Req::SetAcl {
                        path: path(*p),
                        acl,
                        version: *version,
                    },
                ));
            }
            ROp::Check {
                s,
                path: p,
                version,
            } => ops.push(Op::Req(
                *s,
                Req::Check {
                    path: path(*p),
                    version: *version,
                },
            )),
            ROp::Pipeline { s, ops: inner } => {
                let reqs = to_ops(0, inner)
                    .into_iter()
                    .skip(1)
                    .filter_map(|o| match o {
                        Op::Req(_, r) => Some(r),
                        _ => None,
                    })
                    .collect();
                ops.push(Op::Pipeline(*s, reqs));
            }
            ROp::Watches { s, kind, path: p } => {
                let path = path(*p);
                let req = match kind % 8 {
                    k @ 0..=1 => Req::AddWatch {
                        path,
                        mode: i32::from(k),
                    },
                    k @ 2..=4 => Req::RemoveWatches {
                        path,
                        ty: i32::from(k) - 1,
                    },
                    k => Req::CheckWatches {
                        path,
                        ty: i32::from(k) - 4,
                    },
                };
                ops.push(Op::Req(*s, req));
            }
            ROp::Auth { s, user } => ops.push(Op::Req(
                *s,
                Req::Auth {
                    scheme: "digest".into(),
                    auth: format!("u{user}:pw").into_bytes(),
                },
            )),
            ROp::BadReconnect { s, kind } => {
                ops.push(Op::Reconnect {
                    s: *s,
                    passwd: if *kind == 0 {
                        Passwd::Wrong
                    } else {
                        Passwd::Good
                    },
                    last_zxid: if *kind == 1 { Zx::Ahead(3) } else { Zx::Last },
                    timeout: 30000,
                    read_only_byte: true,
                    unknown: *kind == 2,
                });
                ops.push(Op::Reconnect {
                    s: *s,
                    passwd: Passwd::Good,
                    last_zxid: Zx::Last,
                    timeout: 30000,
                    read_only_byte: true,
                    unknown: false,
                });
            }
            ROp::Reattach { s } => ops.push(Op::Reconnect {
                s: *s,
                passwd: Passwd::Good,
                last_zxid: Zx::Last,
                timeout: 30000,
                read_only_byte: true,
                unknown: false,
            }),
        }
    }
    ops
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

fn env_seed() -> u64 {
    std::env::var("CONFORMANCE_SEED")
        .ok()
        .and_then(|v| {
            let v = v.trim();
            match v.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16).ok(),
                None => v.parse().ok(),
            }
        })
        .unwrap_or(0x2b7e_1516_28ae_d2a6)
}

static NEXT_PREFIX: AtomicUsize = AtomicUsize::new(0);

pub(crate) fn run() {
    let cases = env_usize("CONFORMANCE_CASES", 300);
    let len = env_usize("CONFORMANCE_LEN", 40);
    let shrink = env_usize("CONFORMANCE_SHRINK", 400);
    let seed = env_seed();
    let mut seed32 = [0u8; 32];
    for (i, chunk) in seed32.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(
            &(seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)).to_le_bytes(),
        );
    }
    let config = Config {
        cases: cases as u32,
        failure_persistence: None,
        max_shrink_iters: shrink as u32,
        max_shrink_time: 240_000,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed32));
    let rt = crate::runtime();
    let started = std::time::Instant::now();
    let result = runner.run(&seq_strategy(len), |(n, rops)| {
        let ops = to_ops(n, &rops);
        let prefix = format!("/rnd{}", NEXT_PREFIX.fetch_add(1, Ordering::SeqCst));
        let (real, mock) = crate::run_shared(&rt, &prefix, &ops);
        if crate::print_all() {
            println!(
                "=== {prefix}: real ZooKeeper transcript\n{}",
                crate::render(&real)
            );
        }
        if real != mock {
            return Err(TestCaseError::fail(format!(
                "diverged ({} ops); that run, real vs mock:\n{}",
                ops.len(),
                crate::side_by_side(&real, &mock)
            )));
        }
        Ok(())
    });
    match result {
        Ok(()) => println!(
            "random: {cases} sequences of {len} ops agreed (seed {seed:#x}) in {:.1?}",
            started.elapsed()
        ),
        Err(TestError::Fail(why, (n, rops))) => {
            // Re-run the shrunk sequence for its transcripts.
            let ops = to_ops(n, &rops);
            let prefix = format!("/rnd{}", NEXT_PREFIX.fetch_add(1, Ordering::SeqCst));
            let (real, mock) = crate::run_shared(&rt, &prefix, &ops);
            let rerun = if real == mock {
                "the re-run below did NOT diverge (timing-dependent?)"
            } else {
                "re-run of the shrunk sequence"
            };
            let script: Vec<String> = ops
                .iter()
                .enumerate()
                .map(|(i, o)| format!("  #{:<3} {o}", i + 1))
                .collect();
            panic!(
                "random sequence diverged: {why}\nseed: CONFORMANCE_SEED={seed:#x} CONFORMANCE_LEN={len}\n\
                 shrunk sequence ({} sessions, {} ops):\n{}\n\n{rerun}, real vs mock:\n{}\n--- full real transcript:\n{}\n--- full mock transcript:\n{}",
                n,
                ops.len(),
                script.join("\n"),
                crate::side_by_side(&real, &mock),
                crate::render(&real),
                crate::render(&mock),
            );
        }
        Err(TestError::Abort(why)) => panic!("random sequences aborted: {why} (seed {seed:#x})"),
    }
}
