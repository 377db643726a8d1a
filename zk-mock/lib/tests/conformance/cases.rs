//! Hand-written cases. Each returns a script; `main.rs` runs it on the real
//! server and on zk-mock and compares the transcripts, so every reply (err,
//! zxid, body) and every notification is checked against real ZooKeeper.
//!
//! `@` is the case's own prefix node (created, with the baseline zxid, before
//! the script starts). Cases on the shared server never read `/` itself or
//! leave containers that once had children (the ContainerManager would delete
//! them during a later case and shift its zxids).
//!
//! Real 3.8.0 vs later 3.8 releases (3.8.6's source): see the notes on the cases marked
//! "3.8.0:"; the expectations here are whatever the real server does.

use bytes::BytesMut;
use zk_mock::codec::Record;
use zk_mock::proto::{perms, Acl, MultiHeader, PathRequest, SetWatches, SetWatches2};

use crate::driver::{MOp, Op, Passwd, Req, Slot, Zx};

const TIMEOUT: i32 = 30000;

fn d(s: &str) -> Option<Vec<u8>> {
    Some(s.as_bytes().to_vec())
}
fn empty() -> Option<Vec<u8>> {
    Some(Vec::new())
}
const NULL: Option<Vec<u8>> = None;

fn conn(s: Slot) -> Op {
    Op::Connect {
        s,
        timeout: TIMEOUT,
        read_only_byte: true,
        last_zxid: Zx::Zero,
    }
}
fn reconnect(s: Slot, passwd: Passwd) -> Op {
    Op::Reconnect {
        s,
        passwd,
        last_zxid: Zx::Last,
        timeout: TIMEOUT,
        read_only_byte: true,
        unknown: false,
    }
}
fn r(s: Slot, req: Req) -> Op {
    Op::Req(s, req)
}
fn create_acl(
    s: Slot,
    op: i32,
    path: &str,
    data: Option<Vec<u8>>,
    acl: Vec<Acl>,
    flags: i32,
) -> Op {
    r(
        s,
        Req::Create {
            op,
            path: path.into(),
            data,
            acl,
            flags,
        },
    )
}
fn create(s: Slot, path: &str, data: Option<Vec<u8>>, flags: i32) -> Op {
    create_acl(s, 1, path, data, Acl::open_unsafe(), flags)
}
fn create2(s: Slot, path: &str, data: Option<Vec<u8>>, flags: i32) -> Op {
    create_acl(s, 15, path, data, Acl::open_unsafe(), flags)
}
fn del(s: Slot, path: &str, version: i32) -> Op {
    r(
        s,
        Req::Delete {
            path: path.into(),
            version,
        },
    )
}
fn exists(s: Slot, path: &str, watch: bool) -> Op {
    r(
        s,
        Req::Exists {
            path: path.into(),
            watch,
        },
    )
}
fn get(s: Slot, path: &str, watch: bool) -> Op {
    r(
        s,
        Req::GetData {
            path: path.into(),
            watch,
        },
    )
}
fn set(s: Slot, path: &str, data: Option<Vec<u8>>, version: i32) -> Op {
    r(
        s,
        Req::SetData {
            path: path.into(),
            data,
            version,
        },
    )
}
fn ls(s: Slot, path: &str, watch: bool) -> Op {
    r(
        s,
        Req::GetChildren {
            path: path.into(),
            watch,
        },
    )
}
fn ls2(s: Slot, path: &str, watch: bool) -> Op {
    r(
        s,
        Req::GetChildren2 {
            path: path.into(),
            watch,
        },
    )
}
fn sync(s: Slot, path: &str) -> Op {
    r(s, Req::Sync { path: path.into() })
}
fn get_acl(s: Slot, path: &str) -> Op {
    r(s, Req::GetAcl { path: path.into() })
}
fn set_acl(s: Slot, path: &str, acl: Vec<Acl>, version: i32) -> Op {
    r(
        s,
        Req::SetAcl {
            path: path.into(),
            acl,
            version,
        },
    )
}
fn multi(s: Slot, ops: Vec<MOp>) -> Op {
    r(s, Req::Multi(ops))
}
fn mread(s: Slot, ops: Vec<MOp>) -> Op {
    r(s, Req::MultiRead(ops))
}
fn close(s: Slot) -> Op {
    r(s, Req::CloseSession)
}
fn raw(s: Slot, op: i32, body: Vec<u8>) -> Op {
    r(s, Req::Raw { op, body })
}
fn mc(path: &str, data: Option<Vec<u8>>, flags: i32) -> MOp {
    MOp::Create {
        op: 1,
        path: path.into(),
        data,
        flags,
    }
}
fn mc_op(op: i32, path: &str, flags: i32) -> MOp {
    MOp::Create {
        op,
        path: path.into(),
        data: NULL,
        flags,
    }
}
fn md(path: &str, version: i32) -> MOp {
    MOp::Delete {
        path: path.into(),
        version,
    }
}
fn ms(path: &str, data: Option<Vec<u8>>, version: i32) -> MOp {
    MOp::SetData {
        path: path.into(),
        data,
        version,
    }
}
fn mk(path: &str, version: i32) -> MOp {
    MOp::Check {
        path: path.into(),
        version,
    }
}
fn mg(path: &str) -> MOp {
    MOp::GetData { path: path.into() }
}
fn ml(path: &str) -> MOp {
    MOp::GetChildren { path: path.into() }
}
fn acl(perms: i32, scheme: &str, id: &str) -> Acl {
    Acl::new(perms, scheme, id)
}

pub(crate) fn create_basic() -> Vec<Op> {
    vec![
        conn(0),
        create(0, "@/a", d("x"), 0),
        create2(0, "@/b", NULL, 0),
        create2(0, "@/c", empty(), 0),
        get(0, "@/a", false),
        get(0, "@/b", false),
        get(0, "@/c", false),
        create(0, "@/a", d("y"), 0),
        create2(0, "@/a", d("y"), 0),
        create(0, "@/nope/x", NULL, 0),
        create2(0, "@/a/b", d("deep"), 0),
        ls2(0, "@/a", false),
        get(0, "@/a", false),
        exists(0, "@/a/b", false),
        ls2(0, "@", false),
    ]
}

pub(crate) fn create_flags_and_sequential() -> Vec<Op> {
    vec![
        conn(0),
        create(0, "@/e", d("eph"), 1),
        get(0, "@/e", false),
        create(0, "@/s", NULL, 0),
        create(0, "@/s/n", empty(), 2),
        create(0, "@/s/n", NULL, 3),
        create2(0, "@/s/n", d("x"), 2),
        create2(0, "@/s/n", d("x"), 3),
        del(0, "@/s/n0000000000", -1),
        del(0, "@/s/n0000000001", -1),
        ls2(0, "@/s", false),
        create(0, "@/s/n", NULL, 2),
        ls2(0, "@/s", false),
        // A sequential path may end in '/': the suffix follows it.
        create(0, "@/s/", NULL, 2),
        // A plain node whose name the next sequential create will want.
        create(0, "@/s/n0000000007", NULL, 0),
        create(0, "@/s/n", NULL, 2),
        create(0, "@/s/n", NULL, 2),
        create(0, "@/s/m", NULL, 2),
        ls2(0, "@/s", false),
        // Children of ephemerals are refused, sequential or not.
        create(0, "@/e/x", NULL, 0),
        create(0, "@/e/x", NULL, 2),
        create2(0, "@/e/x", NULL, 1),
        get(0, "@/s/n0000000003", false),
        exists(0, "@/s/n0000000002", false),
    ]
}

pub(crate) fn create_invalid_flags_container_ttl() -> Vec<Op> {
    let ttl = |path: &str, flags: i32, ttl: i64| {
        r(
            0,
            Req::CreateTtl {
                path: path.into(),
                data: d("t"),
                flags,
                ttl,
            },
        )
    };
    vec![
        conn(0),
        create(0, "@/f5", NULL, 5),
        create(0, "@/f6", NULL, 6),
        create(0, "@/f7", NULL, 7),
        create(0, "@/fm1", NULL, -1),
        create(0, "@/f100", NULL, 100),
        create2(0, "@/f7", NULL, 7),
        exists(0, "@/f5", false),
        // Containers: opcode 19 (flags 4), reported owner 0. Never given a
        // child here, so the ContainerManager leaves them alone.
        create_acl(0, 19, "@/k", d("c"), Acl::open_unsafe(), 4),
        get(0, "@/k", false),
        create(0, "@/k1", NULL, 4),
        get(0, "@/k1", false),
        create2(0, "@/k2", NULL, 4),
        create_acl(0, 19, "@/k", NULL, Acl::open_unsafe(), 4),
        del(0, "@/k", -1),
        del(0, "@/k1", -1),
        del(0, "@/k2", -1),
        // createTTL with TTLs disabled (the default).
        ttl("@/t", 5, 1000),
        ttl("@/t", 6, 1000),
        ttl("@/t", 5, 0),
        ttl("@/t", 0, 1000),
        // 3.8.0: createTTL with a non-TTL mode and ttl=-1 passes validation
        // and then kills the real server (IllegalArgumentException "ttl must
        // be positive" in SyncThread: "Severe unrecoverable error"), so those
        // requests are not part of the suite.
        ttl("@/t", 9, 1000),
        exists(0, "@/t", false),
        sync(0, "@"),
    ]
}

pub(crate) fn create_check_order() -> Vec<Op> {
    let open = Acl::open_unsafe;
    vec![
        conn(0),
        create(0, "", NULL, 0),
        create(0, "noslash", NULL, 0),
        create(0, "@/a/", NULL, 0),
        create(0, "@/a", NULL, 0),
        create(0, "@/a/", NULL, 0),
        create(0, "@//b", NULL, 0),
        // InvalidACL comes before the parent lookup and before NodeExists.
        create_acl(0, 1, "@/missing/x", NULL, vec![], 0),
        create_acl(0, 1, "@/a", NULL, vec![], 0),
        create_acl(0, 1, "@/w", NULL, vec![acl(31, "world", "bob")], 0),
        create_acl(0, 1, "@/w", NULL, vec![acl(31, "auth", "")], 0),
        create_acl(0, 1, "@/w", NULL, vec![acl(31, "digest", "user")], 0),
        create_acl(0, 1, "@/w", NULL, vec![acl(31, "digest", "a:b:c")], 0),
        create_acl(0, 1, "@/w", NULL, vec![acl(31, "ip", "300.1.1.1")], 0),
        create_acl(0, 1, "@/w", NULL, vec![acl(31, "ip", "127.0.0.1/33")], 0),
        create_acl(0, 1, "@/w", NULL, vec![acl(31, "nosuch", "x")], 0),
        create_acl(0, 1, "@/w", NULL, vec![acl(31, "super", "x")], 0),
        create_acl(0, 15, "@/ip", NULL, vec![acl(31, "ip", "127.0.0.1")], 0),
        create_acl(0, 15, "@/ip6", NULL, vec![acl(31, "ip", "10.0.0.0/8")], 0),
        get_acl(0, "@/ip6"),
        get(0, "@/ip6", false),
        // digest ids are valid (user:hash); we are not that user.
        create_acl(
            0,
            15,
            "@/dg",
            NULL,
            vec![acl(31, "digest", "u:Zm9vYmFy"), acl(1, "world", "anyone")],
            0,
        ),
        get_acl(0, "@/dg"),
        create(0, "@/dg/x", NULL, 0),
        create(0, "@/dg/x/", NULL, 0),
        create(0, "@/dg/x", NULL, 2),
        create_acl(0, 1, "@/dg/x", NULL, vec![], 0),
        // Perms are not validated; duplicates are removed.
        create_acl(0, 15, "@/p0", NULL, vec![acl(0, "world", "anyone")], 0),
        create_acl(0, 15, "@/p99", NULL, vec![acl(99, "world", "anyone")], 0),
        get_acl(0, "@/p99"),
        create_acl(0, 15, "@/dup", NULL, [open(), open()].concat(), 0),
        get_acl(0, "@/dup"),
        // NodeExists before NoChildrenForEphemerals.
        create(0, "@/e", NULL, 1),
        create(0, "@/e", NULL, 1),
        create(0, "@/e/x", NULL, 0),
    ]
}

pub(crate) fn delete_check_order() -> Vec<Op> {
    vec![
        conn(0),
        del(0, "@/x/y", -1),
        del(0, "@/a", -1),
        create(0, "@/a", NULL, 0),
        create(0, "@/a/b", NULL, 0),
        // BadVersion wins over NotEmpty.
        del(0, "@/a", 5),
        del(0, "@/a", -1),
        del(0, "@/a", 0),
        del(0, "@/a/b", 1),
        del(0, "@/a/b", -2),
        del(0, "@/a/b", 0),
        del(0, "@/a", -2),
        del(0, "@/a", 0),
        del(0, "@/a", 0),
        // delete does not validate paths: malformed ones are mostly NoNode.
        create(0, "@/v", NULL, 0),
        del(0, "@/v/", -1),
        del(0, "@//", -1),
        del(0, "@/v/..", -1),
        del(0, "", -1),
        del(0, "noslash", -1),
        del(0, "@/v/a\u{0}", -1),
        // NoAuth on the parent before the node's own existence.
        create_acl(
            0,
            1,
            "@/ro",
            NULL,
            vec![acl(perms::READ, "world", "anyone")],
            0,
        ),
        del(0, "@/ro/missing", -1),
        create_acl(
            0,
            1,
            "@/cr",
            NULL,
            vec![acl(perms::READ | perms::CREATE, "world", "anyone")],
            0,
        ),
        create(0, "@/cr/c", NULL, 0),
        del(0, "@/cr/c", -1),
        del(0, "@/cr/c", 7),
        ls2(0, "@/cr", false),
        // Deleting a child bumps the parent's reported cversion and pzxid.
        create(0, "@/v/c", d("1"), 0),
        del(0, "@/v/c", 0),
        ls2(0, "@/v", false),
    ]
}

pub(crate) fn exists_get_set() -> Vec<Op> {
    vec![
        conn(0),
        exists(0, "@/a", false),
        get(0, "@/a", false),
        create(0, "@/a", d("x"), 0),
        exists(0, "@/a", false),
        get(0, "@/a", false),
        set(0, "@/a", d("y"), -1),
        set(0, "@/a", d("z"), 0),
        set(0, "@/a", d("z"), 1),
        set(0, "@/a", d("z"), 2),
        set(0, "@/a", NULL, -1),
        get(0, "@/a", false),
        set(0, "@/a", empty(), -1),
        get(0, "@/a", false),
        set(0, "@/a", empty(), 5),
        set(0, "@/a", d("same"), -1),
        set(0, "@/a", d("same"), -1),
        get(0, "@/a", false),
        set(0, "@/missing", d("x"), -1),
        // NoNode before BadVersion.
        set(0, "@/missing", d("x"), 3),
        set(0, "@/a/", d("x"), -1),
        set(0, "@//a", d("x"), -1),
        set(0, "", d("x"), -1),
        get(0, "@/a/", false),
        get(0, "@//a", false),
        exists(0, "@/a/", false),
        exists(0, "@/a\u{0}", false),
        get(0, "@/a\u{0}", false),
        exists(0, "@/a", true),
        set(0, "@/a", d("w"), -1),
    ]
}

pub(crate) fn children_and_cversion() -> Vec<Op> {
    vec![
        conn(0),
        create(0, "@/p", d("p"), 0),
        ls2(0, "@/p", false),
        create(0, "@/p/a", NULL, 0),
        create(0, "@/p/b", NULL, 0),
        ls2(0, "@/p", false),
        ls(0, "@/p", false),
        del(0, "@/p/a", -1),
        ls2(0, "@/p", false),
        create(0, "@/p/a", NULL, 0),
        ls2(0, "@/p", false),
        set(0, "@/p", d("q"), -1),
        ls2(0, "@/p", false),
        get(0, "@/p", false),
        ls(0, "@/missing", false),
        ls2(0, "@/missing", false),
        // getChildren(watch) on a missing node registers nothing.
        ls(0, "@/missing", true),
        ls2(0, "@/missing", true),
        create(0, "@/missing", NULL, 0),
        create(0, "@/missing/x", NULL, 0),
        ls(0, "@/p/", false),
        ls2(0, "@/p/a", false),
    ]
}

pub(crate) fn sync_and_ping() -> Vec<Op> {
    vec![
        conn(0),
        sync(0, "@"),
        sync(0, "@/missing"),
        sync(0, "/"),
        sync(0, ""),
        sync(0, "not a path"),
        r(0, Req::Ping),
        create(0, "@/a", NULL, 0),
        r(0, Req::Ping),
        sync(0, "@/a"),
        conn(1),
        r(1, Req::Ping),
        r(0, Req::Ping),
    ]
}

pub(crate) fn multi_success() -> Vec<Op> {
    vec![
        conn(0),
        conn(1),
        exists(1, "@/m", true),
        ls(1, "@", true),
        multi(
            0,
            vec![
                mc("@/m", d("a"), 0),
                mc("@/m/c", NULL, 0),
                ms("@/m", d("b"), -1),
                mk("@/m", 1),
                mc_op(15, "@/m/d", 0),
                mc("@/m/s", NULL, 2),
                mc("@/m/s", NULL, 2),
                mc_op(15, "@/m/s", 3),
                md("@/m/c", 0),
                mk("@/m/d", 0),
            ],
        ),
        get(0, "@/m", false),
        ls2(0, "@/m", false),
        get(0, "@/m/s0000000003", false),
        // createContainer in multi (never given children, so never collected).
        multi(0, vec![mc_op(19, "@/k", 4), mk("@/k", 0)]),
        get(0, "@/k", false),
        // Ephemeral create and delete in one multi.
        multi(0, vec![mc("@/e", NULL, 1), ms("@/e", d("v"), 0)]),
        get(0, "@/e", false),
        multi(0, vec![md("@/e", 1), md("@/k", -1)]),
        exists(0, "@/e", false),
    ]
}

pub(crate) fn multi_failure_layout() -> Vec<Op> {
    vec![
        conn(0),
        conn(1),
        create(0, "@/x", d("x"), 0),
        get(1, "@/x", true),
        exists(1, "@/y", true),
        // Failure in the middle: [0, -103, -2] and nothing applied.
        multi(
            0,
            vec![mc("@/y", NULL, 0), ms("@/x", d("new"), 5), md("@/z", -1)],
        ),
        exists(0, "@/y", false),
        get(0, "@/x", false),
        // Failure first.
        multi(0, vec![md("@/missing", -1), mc("@/y", NULL, 0)]),
        // Later ops see earlier ones.
        multi(0, vec![mc("@/y", NULL, 0), mc("@/y", NULL, 0)]),
        multi(0, vec![mk("@/x", 0), mk("@/x", 1)]),
        multi(0, vec![mk("@/nope", -1)]),
        multi(0, vec![mk("@/x/", 0)]),
        multi(0, vec![mc("@/q/", NULL, 0)]),
        multi(
            0,
            vec![mc("@/q", NULL, 0), mc("@/q/r", NULL, 0), md("@/q", -1)],
        ),
        multi(0, vec![mc("@/e", NULL, 1), mc("@/e/c", NULL, 0)]),
        multi(
            0,
            vec![
                mc("@/s", NULL, 0),
                mc("@/s/n", NULL, 2),
                mc("@/s/n0000000000", NULL, 0),
            ],
        ),
        exists(0, "@/s", false),
        // Create2 failing in a multi.
        multi(0, vec![mc_op(15, "@/x", 0)]),
        // The same multi succeeding fires the watches before its reply.
        multi(0, vec![ms("@/x", d("z"), 0), mc("@/y", NULL, 0)]),
        sync(0, "@"),
    ]
}

fn multi_body(ops: &[(i32, Vec<u8>)]) -> Vec<u8> {
    let mut b = BytesMut::new();
    for (t, body) in ops {
        MultiHeader {
            op_type: *t,
            done: false,
            err: -1,
        }
        .encode(&mut b);
        b.extend_from_slice(body);
    }
    MultiHeader::END.encode(&mut b);
    b.to_vec()
}

fn path_body(path: &str) -> Vec<u8> {
    PathRequest { path: path.into() }.to_bytes().to_vec()
}

fn path_watch_body(path: &str, watch: bool) -> Vec<u8> {
    let mut b = path_body(path);
    b.push(watch as u8);
    b
}

pub(crate) fn multi_mixed_and_empty() -> Vec<Op> {
    vec![
        conn(0),
        create(0, "@/a", d("a"), 0),
        // Mixing reads and writes in one request is a marshalling error.
        multi(0, vec![mc("@/b", NULL, 0), mg("@/a")]),
        exists(0, "@/b", false),
        multi(0, vec![mg("@/a")]),
        mread(0, vec![mg("@/a"), mc("@/b", NULL, 0)]),
        mread(0, vec![mc("@/b", NULL, 0)]),
        mread(0, vec![mk("@/a", 0)]),
        exists(0, "@/b", false),
        // Empty multi and multiRead: just the end marker.
        multi(0, vec![]),
        mread(0, vec![]),
        // An op type that is not allowed in a multi (exists).
        raw(0, 14, multi_body(&[(3, path_watch_body("/", false))])),
        sync(0, "@"),
        raw(0, 22, multi_body(&[(3, path_watch_body("/", false))])),
        sync(0, "@"),
    ]
}

pub(crate) fn multi_read() -> Vec<Op> {
    vec![
        conn(0),
        create(0, "@/a", d("x"), 0),
        create(0, "@/a/b", NULL, 0),
        create(0, "@/a/c", empty(), 0),
        mread(
            0,
            vec![
                mg("@/a"),
                ml("@/a"),
                mg("@/missing"),
                ml("@/missing"),
                mg("@/a/b"),
                mg("@/a/c"),
                ml("@/a/c"),
            ],
        ),
        mread(0, vec![mg("@/missing")]),
        mread(0, vec![mg("@/a/"), ml("@/a/c/"), ml("@/a/b")]),
    ]
}

pub(crate) fn close_session_ephemerals_and_watchers() -> Vec<Op> {
    vec![
        conn(0),
        conn(1),
        create(0, "@/p", NULL, 0),
        create(0, "@/e1", d("1"), 1),
        create(0, "@/e2", d("2"), 1),
        create(0, "@/p/e3", NULL, 3),
        create(1, "@/e4", NULL, 1),
        exists(1, "@/e1", true),
        ls(1, "@", true),
        ls(1, "@/p", true),
        get(0, "@/e2", true),
        ls(0, "@", true),
        r(0, Req::GetEphemerals { prefix: "@".into() }),
        // closeSession: one zxid; the ephemerals go with it; every watcher,
        // including the closing connection's own, is told before the reply.
        close(0),
        exists(1, "@/e1", false),
        ls2(1, "@", false),
        ls2(1, "@/p", false),
        get(1, "@/e4", false),
        r(1, Req::GetEphemerals { prefix: "@".into() }),
        // The closed session cannot be resumed.
        reconnect(0, Passwd::Good),
        sync(1, "@"),
        close(1),
        exists(1, "@/e4", false),
    ]
}

pub(crate) fn acl_basics() -> Vec<Op> {
    let open = Acl::open_unsafe;
    let read = Acl::read_unsafe;
    vec![
        conn(0),
        conn(1),
        create(0, "@/a", d("a"), 0),
        get_acl(0, "@/a"),
        set_acl(0, "@/a", open(), 5),
        set_acl(0, "@/a", read(), 0),
        get_acl(0, "@/a"),
        get(0, "@/a", false),
        set(0, "@/a", d("b"), -1),
        set_acl(0, "@/a", open(), -1),
        create(0, "@/a/c", NULL, 0),
        del(0, "@/a", -1),
        // ADMIN only: getACL works, reads do not.
        create_acl(
            0,
            1,
            "@/b",
            d("b"),
            vec![acl(perms::ADMIN, "world", "anyone")],
            0,
        ),
        get_acl(0, "@/b"),
        get(0, "@/b", false),
        ls(0, "@/b", false),
        exists(0, "@/b", false),
        r(0, Req::GetAllChildrenNumber { path: "@/b".into() }),
        set_acl(0, "@/b", vec![], -1),
        set_acl(0, "@/b", vec![acl(31, "world", "bob")], -1),
        set_acl(0, "@/missing", open(), -1),
        set_acl(0, "@/b/", open(), -1),
        set_acl(0, "@/b", [open(), open()].concat(), -1),
        get_acl(0, "@/b"),
        get_acl(0, "@/missing"),
        // Neither READ nor ADMIN.
        create_acl(
            0,
            1,
            "@/c",
            NULL,
            vec![acl(perms::WRITE, "world", "anyone")],
            0,
        ),
        get_acl(0, "@/c"),
        set(0, "@/c", d("c"), 0),
        // setACL: mzxid unchanged, aversion +1, no watch fires.
        get(1, "@/b", false),
        exists(1, "@/b", true),
        set_acl(0, "@/b", read(), 1),
        exists(1, "@/b", false),
        // 3.8.4+ drops notifications the watcher may not READ; 3.8.0 does not.
        exists(1, "@/w", true),
        create_acl(
            0,
            1,
            "@/w",
            NULL,
            vec![acl(perms::WRITE, "world", "anyone")],
            0,
        ),
        ls(1, "@", true),
        create_acl(
            0,
            1,
            "@/w2",
            NULL,
            vec![acl(perms::WRITE, "world", "anyone")],
            0,
        ),
        // check in a multi needs READ.
        multi(0, vec![mk("@/c", -1)]),
        multi(0, vec![mk("@/c", 5)]),
    ]
}

pub(crate) fn ephemerals_and_children_number() -> Vec<Op> {
    let eph = |s: Slot, p: &str| r(s, Req::GetEphemerals { prefix: p.into() });
    let num = |s: Slot, p: &str| r(s, Req::GetAllChildrenNumber { path: p.into() });
    vec![
        conn(0),
        conn(1),
        create(0, "@/e1", NULL, 1),
        create(0, "@/x", NULL, 0),
        create(0, "@/x/e2", NULL, 1),
        create(0, "@/x/y", NULL, 0),
        create(0, "@/x/y/z", NULL, 0),
        create(1, "@/e3", NULL, 3),
        eph(0, "@"),
        eph(0, "@/x"),
        eph(0, "@/e"),
        eph(0, "/"),
        eph(0, ""),
        eph(1, "@"),
        eph(1, "@/nothing"),
        num(0, "@"),
        num(0, "@/x"),
        num(0, "@/x/y/z"),
        num(0, "@/missing"),
        num(0, "@/x/"),
    ]
}

pub(crate) fn path_validation() -> Vec<Op> {
    let bad = [
        "@/v/",
        "@/v//x",
        "@/v/.",
        "@/v/..",
        "@/v/../x",
        "@/v/./x",
        "@/v/\u{1F600}",
        "@/v/\u{E000}",
        "@/v/\u{F8FF}",
        "@/v/\u{1}",
        "@/v/\u{1F}",
        "@/v/\u{7F}",
        "@/v/\u{9F}",
        "@/v/\u{FFF0}",
        "@/v/\u{FFFF}",
        "@/v/a\u{0}b",
        "@/v/\u{FFFD}",
    ];
    let mut ops = vec![conn(0), create(0, "@/v", NULL, 0)];
    for p in bad {
        ops.push(create(0, p, NULL, 0));
    }
    for p in ["@/v/", "@/v/.", "@/v/\u{1F600}", "@/v/\u{1}"] {
        ops.push(set(0, p, NULL, -1));
        ops.push(get(0, p, false));
        ops.push(del(0, p, -1));
    }
    ops.extend([
        create(0, "", NULL, 0),
        create(0, "v", NULL, 0),
        create(0, "@/v/ok\u{e9}\u{4e2d}", d("fine"), 0),
        create(0, "@/v/zookeeper", NULL, 0),
        create(0, "@/v/.hidden", NULL, 0),
        create(0, "@/v/...", NULL, 0),
        create(0, "@/v/a b", NULL, 0),
        create(0, "@/v/\u{A0}", NULL, 0),
        create(0, "@/v/\u{F900}", NULL, 0),
        create(0, "@/v/", NULL, 2),
        create(0, "@/v/.", NULL, 2),
        ls2(0, "@/v", false),
        multi(0, vec![mc("@/v/x/", NULL, 0)]),
        multi(0, vec![ms("@/v/", NULL, -1)]),
        multi(0, vec![mk("@/v/", -1)]),
    ]);
    ops
}

pub(crate) fn special_nodes() -> Vec<Op> {
    vec![
        conn(0),
        get(0, "/zookeeper/config", false),
        get_acl(0, "/zookeeper/config"),
        get(0, "/zookeeper/quota", false),
        get_acl(0, "/zookeeper/quota"),
        set(0, "/zookeeper/config", d("x"), -1),
        set_acl(0, "/zookeeper/config", Acl::open_unsafe(), -1),
        create(0, "/zookeeper/config/x", NULL, 0),
        del(0, "/zookeeper/config", -1),
        del(0, "/zookeeper/quota", -1),
        del(0, "/zookeeper", -1),
        del(0, "/", -1),
        del(0, "/zookeeper/config", 0),
        create(0, "/", NULL, 0),
        create(0, "/zookeeper", NULL, 0),
        create(0, "/zookeeper/quota", NULL, 0),
        ls(0, "/zookeeper", false),
        ls(0, "/zookeeper/config", false),
        exists(0, "/zookeeper/config", false),
        // Clients may use /zookeeper like any other node.
        create(0, "/zookeeper/special_nodes_x", d("x"), 0),
        ls(0, "/zookeeper", false),
        del(0, "/zookeeper/special_nodes_x", 0),
        multi(0, vec![md("/zookeeper/config", -1)]),
        multi(0, vec![ms("/zookeeper/config", NULL, -1)]),
        multi(0, vec![mk("/zookeeper/config", -1)]),
    ]
}

pub(crate) fn watches_one_shot() -> Vec<Op> {
    vec![
        conn(0),
        conn(1),
        create(0, "@/a", d("a"), 0),
        get(1, "@/a", true),
        set(0, "@/a", d("b"), -1),
        set(0, "@/a", d("c"), -1),
        exists(1, "@/b", true),
        create(0, "@/b", NULL, 0),
        del(0, "@/b", -1),
        ls(1, "@", true),
        create(0, "@/c", NULL, 0),
        create(0, "@/d", NULL, 0),
        // getData(watch) on a missing node registers nothing.
        get(1, "@/missing", true),
        create(0, "@/missing", NULL, 0),
        // Registering twice (exists + getData: one table) fires once.
        exists(1, "@/c", true),
        get(1, "@/c", true),
        exists(1, "@/c", true),
        set(0, "@/c", d("x"), -1),
        set(0, "@/c", d("y"), -1),
        // setACL, sync and failed writes fire nothing.
        get(1, "@/d", true),
        set_acl(0, "@/d", Acl::open_unsafe(), -1),
        sync(0, "@/d"),
        set(0, "@/d", d("x"), 7),
        multi(0, vec![mk("@/d", 0)]),
        set(0, "@/d", d("x"), -1),
        // exists watch, then the node is deleted.
        exists(1, "@/a", true),
        del(0, "@/a", -1),
        create(0, "@/a", NULL, 0),
    ]
}

pub(crate) fn watches_one_per_connection() -> Vec<Op> {
    vec![
        conn(0),
        conn(1),
        conn(2),
        create(0, "@/a", NULL, 0),
        exists(1, "@/a", true),
        get(1, "@/a", true),
        ls(1, "@/a", true),
        ls2(1, "@/a", true),
        ls(1, "@", true),
        get(2, "@/a", true),
        ls(2, "@/a", true),
        // One NodeDeleted per connection, then the parent's NodeChildrenChanged.
        del(0, "@/a", -1),
        create(0, "@/a", NULL, 0),
        get(1, "@/a", true),
        ls(1, "@/a", true),
        ls2(2, "@/a", true),
        create(0, "@/a/x", NULL, 0),
        set(0, "@/a", d("v"), -1),
        del(0, "@/a/x", -1),
        // s0 watches too: it is told before its own reply.
        get(0, "@/a", true),
        get(2, "@/a", true),
        set(0, "@/a", d("w"), -1),
    ]
}

pub(crate) fn watches_writer_before_reply() -> Vec<Op> {
    vec![
        conn(0),
        conn(1),
        create(0, "@/a", d("a"), 0),
        get(0, "@/a", true),
        set(0, "@/a", d("b"), -1),
        exists(0, "@/b", true),
        create(0, "@/b", NULL, 0),
        ls(0, "@", true),
        create(0, "@/c", NULL, 0),
        get(0, "@/c", true),
        ls(0, "@", true),
        del(0, "@/c", -1),
        get(0, "@/a", true),
        ls(0, "@", true),
        get(1, "@/a", true),
        multi(0, vec![ms("@/a", d("m"), -1), mc("@/m", NULL, 0)]),
        // A watcher on another session: told before the writer's next reply.
        exists(1, "@/n", true),
        exists(0, "@/n", true),
        create(0, "@/n", NULL, 0),
        get(1, "@/n", true),
        del(1, "@/n", -1),
    ]
}

pub(crate) fn watches_child_and_delete() -> Vec<Op> {
    vec![
        conn(0),
        conn(1),
        create(0, "@/p", NULL, 0),
        ls(1, "@/p", true),
        // Child watchers of a deleted node get NodeDeleted, not NodeChildrenChanged.
        del(0, "@/p", -1),
        create(0, "@/q", NULL, 0),
        ls(1, "@/q", true),
        exists(1, "@/q/x", true),
        create(0, "@/q/x", NULL, 0),
        ls2(1, "@/q", true),
        get(1, "@/q/x", true),
        get(1, "@/q", true),
        ls(1, "@", true),
        multi(0, vec![md("@/q/x", -1), md("@/q", -1)]),
        create(0, "@/r", NULL, 0),
        create(0, "@/r/e", NULL, 1),
        ls(1, "@/r", true),
        get(1, "@/r/e", true),
        close(0),
        ls2(1, "@/r", false),
    ]
}

fn set_watches(v2: bool) -> Vec<Op> {
    let sw = |s: Slot, rel: Zx, data: &[&str], exist: &[&str], child: &[&str]| {
        let v = |l: &[&str]| l.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        r(
            s,
            Req::SetWatches {
                v2,
                rel,
                data: v(data),
                exist: v(exist),
                child: v(child),
                persistent: vec![],
                recursive: vec![],
            },
        )
    };
    vec![
        conn(0),
        conn(1),
        create(0, "@/a", d("a"), 0),
        create(0, "@/b", NULL, 0),
        create(0, "@/c", NULL, 0),
        create(0, "@/d", NULL, 0),
        create(0, "@/e", NULL, 0),
        sync(1, "@"),
        // Changes s1 has not seen.
        set(0, "@/a", d("new"), -1),
        del(0, "@/b", -1),
        create(0, "@/n", NULL, 0),
        create(0, "@/c/x", NULL, 0),
        // relativeZxid behind: missed events fire now (before the reply),
        // the others are re-registered.
        sw(
            1,
            Zx::Last,
            &["@/a", "@/b", "@/d"],
            &["@/n", "@/m", "@/e"],
            &["@/c", "@/b", "@/e", "@"],
        ),
        set(0, "@/a", d("again"), -1),
        set(0, "@/d", d("d"), -1),
        create(0, "@/m", NULL, 0),
        set(0, "@/e", d("e"), -1),
        create(0, "@/e/x", NULL, 0),
        create(0, "@/c/y", NULL, 0),
        create(0, "@/z", NULL, 0),
        // relativeZxid current: everything re-registered, except exist watches
        // on nodes that exist (NodeCreated regardless of zxid).
        sync(1, "@"),
        sw(
            1,
            Zx::Last,
            &["@/a", "@/gone"],
            &["@/m", "@/none"],
            &["@/c", "@/gone"],
        ),
        set(0, "@/a", d("a3"), -1),
        create(0, "@/none", NULL, 0),
        create(0, "@/c/z", NULL, 0),
        // relativeZxid 0 (a client that saw nothing) and one far ahead.
        sw(1, Zx::Zero, &["@/a"], &[], &["@/c"]),
        sw(1, Zx::Ahead(1000), &["@/a"], &[], &["@/c"]),
        set(0, "@/a", d("a4"), -1),
        create(0, "@/c/w", NULL, 0),
        // The usual use: a new socket for the session, then the watches.
        get(1, "@/d", true),
        reconnect(1, Passwd::Good),
        set(0, "@/d", d("lost"), -1),
        sw(1, Zx::Last, &["@/d"], &[], &[]),
        set(0, "@/d", d("found"), -1),
        // Empty lists.
        sw(1, Zx::Last, &[], &[], &[]),
    ]
}

pub(crate) fn set_watches_v1() -> Vec<Op> {
    set_watches(false)
}

pub(crate) fn set_watches_v2() -> Vec<Op> {
    set_watches(true)
}

pub(crate) fn reconnect_same_session() -> Vec<Op> {
    let rc = |timeout: i32| Op::Reconnect {
        s: 0,
        passwd: Passwd::Good,
        last_zxid: Zx::Last,
        timeout,
        read_only_byte: true,
        unknown: false,
    };
    vec![
        conn(0),
        conn(1),
        create(0, "@/e", d("e"), 1),
        get(0, "@/e", true),
        rc(20000),
        sync(0, "@"),
        get(0, "@/e", false),
        // The watch belonged to the old connection.
        set(1, "@/e", d("f"), -1),
        get(0, "@/e", true),
        rc(100000),
        set(1, "@/e", d("g"), -1),
        rc(1000),
        rc(4000),
        rc(40001),
        // A reconnect consumes no zxid.
        sync(0, "@"),
        create(0, "@/p", NULL, 0),
        // lastZxidSeen exactly the server's: fine.
        Op::Reconnect {
            s: 0,
            passwd: Passwd::Good,
            last_zxid: Zx::Ahead(0),
            timeout: TIMEOUT,
            read_only_byte: true,
            unknown: false,
        },
        get(0, "@/e", false),
        close(0),
        exists(1, "@/e", false),
        reconnect(0, Passwd::Good),
    ]
}

pub(crate) fn reconnect_wrong_password_and_unknown() -> Vec<Op> {
    vec![
        conn(0),
        conn(1),
        create(0, "@/e", NULL, 1),
        // Wrong password: expired answer, then closed; the session's other
        // connection is closed first, the session itself survives.
        reconnect(0, Passwd::Wrong),
        exists(1, "@/e", false),
        reconnect(0, Passwd::Good),
        exists(0, "@/e", false),
        reconnect(0, Passwd::Zeros),
        reconnect(0, Passwd::Good),
        Op::Reconnect {
            s: 0,
            passwd: Passwd::Good,
            last_zxid: Zx::Last,
            timeout: TIMEOUT,
            read_only_byte: true,
            unknown: true,
        },
        Op::Reconnect {
            s: 0,
            passwd: Passwd::Wrong,
            last_zxid: Zx::Last,
            timeout: TIMEOUT,
            read_only_byte: false,
            unknown: false,
        },
        reconnect(0, Passwd::Good),
        get(0, "@/e", false),
        sync(1, "@"),
    ]
}

pub(crate) fn connect_without_read_only_byte() -> Vec<Op> {
    let no_ro = |s: Slot, passwd: Passwd| Op::Reconnect {
        s,
        passwd,
        last_zxid: Zx::Last,
        timeout: TIMEOUT,
        read_only_byte: false,
        unknown: false,
    };
    vec![
        Op::Connect {
            s: 0,
            timeout: TIMEOUT,
            read_only_byte: false,
            last_zxid: Zx::Zero,
        },
        create(0, "@/a", d("a"), 0),
        get(0, "@/a", false),
        no_ro(0, Passwd::Good),
        get(0, "@/a", false),
        no_ro(0, Passwd::Wrong),
        no_ro(0, Passwd::Good),
        Op::Connect {
            s: 1,
            timeout: 1,
            read_only_byte: false,
            last_zxid: Zx::Zero,
        },
        Op::Connect {
            s: 2,
            timeout: i32::MAX,
            read_only_byte: true,
            last_zxid: Zx::Zero,
        },
        Op::Connect {
            s: 3,
            timeout: -5,
            read_only_byte: true,
            last_zxid: Zx::Zero,
        },
        sync(3, "@"),
    ]
}

pub(crate) fn connect_zxid_ahead() -> Vec<Op> {
    vec![
        conn(0),
        sync(0, "@"),
        // A new session with lastZxidSeen ahead: closed, no answer, no zxid.
        Op::Connect {
            s: 1,
            timeout: TIMEOUT,
            read_only_byte: true,
            last_zxid: Zx::Ahead(1),
        },
        Op::Connect {
            s: 1,
            timeout: TIMEOUT,
            read_only_byte: true,
            last_zxid: Zx::Ahead(1000),
        },
        sync(0, "@"),
        // Re-attaching with lastZxidSeen ahead: refused before anything else,
        // so the session's current connection stays open.
        Op::Reconnect {
            s: 0,
            passwd: Passwd::Good,
            last_zxid: Zx::Ahead(5),
            timeout: TIMEOUT,
            read_only_byte: true,
            unknown: false,
        },
        Op::Reconnect {
            s: 0,
            passwd: Passwd::Wrong,
            last_zxid: Zx::Ahead(5),
            timeout: TIMEOUT,
            read_only_byte: true,
            unknown: false,
        },
        reconnect(0, Passwd::Good),
        sync(0, "@"),
        Op::Connect {
            s: 1,
            timeout: TIMEOUT,
            read_only_byte: true,
            last_zxid: Zx::Ahead(0),
        },
        sync(1, "@"),
    ]
}

pub(crate) fn check_outside_multi() -> Vec<Op> {
    // 3.8.0: check (13) outside a multi is a transaction (3.8.6
    // answers UNIMPLEMENTED and closes): it consumes a zxid, failures
    // are answered normally, and a successful check is never answered (the
    // connection stays open).
    let check = |s: Slot, path: &str, version: i32| {
        r(
            s,
            Req::Check {
                path: path.into(),
                version,
            },
        )
    };
    vec![
        conn(0),
        conn(1),
        exists(0, "@/a", true),
        check(0, "@", -1),
        sync(1, "@"),
        check(0, "@", 0),
        check(0, "@", 1),
        check(0, "@/missing", -1),
        check(0, "@/a/", -1),
        check(0, "", -1),
        create(1, "@/a", NULL, 0),
        create_acl(
            1,
            1,
            "@/w",
            NULL,
            vec![acl(perms::WRITE, "world", "anyone")],
            0,
        ),
        check(0, "@/w", -1),
        check(0, "@/w", 3),
        check(0, "/zookeeper/config", -1),
        sync(0, "@"),
        raw(0, 13, Vec::new()),
        raw(0, 13, vec![0, 0, 0, 1]),
        sync(0, "@"),
    ]
}

pub(crate) fn unknown_op_code() -> Vec<Op> {
    let mut ops = vec![conn(0), create(0, "@/a", NULL, 0)];
    for op in [999, 10, 0, 23, -5, 1000, 99] {
        ops.push(raw(0, op, path_body("/")));
        ops.push(reconnect(0, Passwd::Good));
    }
    ops.push(sync(0, "@"));
    ops
}

pub(crate) fn malformed_bodies() -> Vec<Op> {
    // A ustring length of 10 followed by 2 bytes.
    let short = vec![0, 0, 0, 10, b'/', b'x'];
    let mut ops = vec![conn(0), create(0, "@/a", d("a"), 0)];
    for op in [
        4, 3, 8, 12, 6, 9, 103, 104, 1, 15, 2, 5, 7, 14, 22, 101, 105,
    ] {
        ops.push(raw(0, op, short.clone()));
        ops.push(r(0, Req::Ping));
    }
    ops.extend([
        // Empty bodies.
        raw(0, 4, vec![]),
        raw(0, 1, vec![]),
        raw(0, 9, vec![]),
        // A path without its watch byte.
        raw(0, 4, path_body("/")),
        // A negative string length.
        raw(0, 4, vec![0xff, 0xff, 0xff, 0xfe, 0]),
        // Ping and closeSession ignore bodies; trailing bytes are ignored.
        raw(0, 11, vec![1, 2, 3]),
        raw(0, 4, {
            let mut b = path_watch_body("/zookeeper/quota", false);
            b.extend_from_slice(&[9, 9, 9]);
            b
        }),
        // A multi whose op header is truncated.
        raw(0, 14, vec![0, 0, 0, 1, 0]),
        sync(0, "@"),
        get(0, "@/a", false),
    ]);
    ops
}

pub(crate) fn failed_writes_consume_zxids() -> Vec<Op> {
    vec![
        conn(0),
        sync(0, "@"),
        create(0, "@/a", NULL, 0),
        create(0, "@/a", NULL, 0),
        sync(0, "@"),
        del(0, "@/missing", -1),
        set(0, "@/a", d("x"), 9),
        set_acl(0, "@/a", Acl::open_unsafe(), 9),
        multi(0, vec![mc("@/b", NULL, 0), mk("@/a", 9)]),
        create(0, "@/a", NULL, 77),
        r(
            0,
            Req::CreateTtl {
                path: "@/t".into(),
                data: NULL,
                flags: 5,
                ttl: 10,
            },
        ),
        get(0, "@/a", false),
        exists(0, "@/missing", false),
        ls(0, "@", false),
        multi(
            0,
            vec![mc("@/b", NULL, 0), mc("@/c", NULL, 0), ms("@/a", NULL, -1)],
        ),
        ls2(0, "@", false),
        r(0, Req::Ping),
    ]
}

pub(crate) fn session_creation_consumes_zxid() -> Vec<Op> {
    vec![
        conn(0),
        sync(0, "@"),
        conn(1),
        sync(0, "@"),
        conn(2),
        create(2, "@/e", NULL, 1),
        close(1),
        sync(0, "@"),
        reconnect(0, Passwd::Good),
        sync(0, "@"),
        reconnect(0, Passwd::Wrong),
        reconnect(0, Passwd::Good),
        sync(0, "@"),
        close(2),
        ls2(0, "@", false),
    ]
}

pub(crate) fn ephemeral_children_and_owner() -> Vec<Op> {
    vec![
        conn(0),
        conn(1),
        create2(0, "@/e0", d("0"), 1),
        create2(1, "@/e1", d("1"), 3),
        get(1, "@/e0", false),
        get(0, "@/e1", false),
        ls2(0, "@", false),
        create(1, "@/e0", NULL, 1),
        // Anyone may delete or change another session's ephemeral.
        set(1, "@/e0", d("by s1"), 0),
        del(1, "@/e0", 1),
        close(1),
        ls2(0, "@", false),
        conn(1),
        create2(1, "@/e2", NULL, 1),
        get(0, "@/e2", false),
    ]
}

/// Needs a pristine tree: a fresh real server and a fresh mock, absolute zxids.
pub(crate) fn fresh_server_tree() -> Vec<Op> {
    vec![
        conn(0),
        sync(0, "/"),
        r(0, Req::Ping),
        get(0, "/", false),
        get(0, "", false),
        exists(0, "", false),
        ls(0, "", false),
        ls2(0, "/", false),
        ls2(0, "/zookeeper", false),
        get(0, "/zookeeper/config", false),
        get(0, "/zookeeper/quota", false),
        get_acl(0, "/"),
        get_acl(0, "/zookeeper"),
        get_acl(0, "/zookeeper/config"),
        r(0, Req::GetAllChildrenNumber { path: "/".into() }),
        r(
            0,
            Req::GetAllChildrenNumber {
                path: "/zookeeper".into(),
            },
        ),
        r(0, Req::GetAllChildrenNumber { path: "".into() }),
        r(0, Req::GetEphemerals { prefix: "/".into() }),
        create(0, "/a", d("a"), 0),
        ls2(0, "/", false),
        create(0, "/s", NULL, 2),
        create(0, "/", NULL, 2),
        create(0, "/e", NULL, 3),
        ls2(0, "/", false),
        r(0, Req::GetEphemerals { prefix: "".into() }),
        conn(1),
        sync(1, "/"),
        ls(1, "/", true),
        exists(1, "/", true),
        get(1, "/a", true),
        // Containers (the ContainerManager runs every 60 s: not during this case).
        create_acl(0, 19, "/k", d("k"), Acl::open_unsafe(), 4),
        create(0, "/k/c", NULL, 0),
        create(0, "/k/e", NULL, 1),
        create(0, "/k/c/d", NULL, 0),
        del(0, "/k/c/d", -1),
        del(0, "/k/c", -1),
        ls2(0, "/k", false),
        multi(
            0,
            vec![mc_op(19, "/k2", 4), mc("/k2/x", NULL, 0), md("/k2/x", -1)],
        ),
        ls2(0, "/k2", false),
        create_acl(0, 19, "/k3", NULL, Acl::open_unsafe(), 0),
        create_acl(0, 19, "/k4", NULL, Acl::open_unsafe(), 1),
        get(0, "/k3", false),
        close(0),
        ls2(1, "/", false),
        r(1, Req::GetAllChildrenNumber { path: "/".into() }),
        set(1, "/", d("root"), -1),
        get(1, "/", false),
        set(1, "/zookeeper", d("zk"), 0),
        ls2(1, "/zookeeper", false),
        create(1, "/zookeeper/x", NULL, 0),
        ls2(1, "/zookeeper", false),
        del(1, "/zookeeper/x", -1),
        ls2(1, "/zookeeper", false),
    ]
}

/// A multi that fails after touching ephemerals must leave them exactly as
/// they were, owned by the session (found by the random sequences).
pub(crate) fn multi_rollback_keeps_ephemerals() -> Vec<Op> {
    let eph = |s: Slot| r(s, Req::GetEphemerals { prefix: "@".into() });
    vec![
        conn(0),
        conn(1),
        create(0, "@/e1", NULL, 1),
        create(0, "@/e2", NULL, 1),
        create(0, "@/e3", NULL, 1),
        multi(0, vec![ms("@/e1", NULL, -1), mc("@/e1", NULL, 0)]),
        multi(0, vec![md("@/e2", -1), mk("@/e2", 0)]),
        multi(
            0,
            vec![md("@/e3", -1), mc("@/e3", NULL, 1), mk("@/nope", 0)],
        ),
        multi(1, vec![md("@/e1", -1), mc("@/x", NULL, 0), mk("@/x", 3)]),
        eph(0),
        eph(1),
        exists(1, "@/e1", true),
        exists(1, "@/e2", true),
        exists(1, "@/e3", true),
        close(0),
        ls2(1, "@", false),
        create(1, "@/e1", NULL, 0),
    ]
}

fn auth(s: Slot, scheme: &str, a: &str) -> Op {
    r(
        s,
        Req::Auth {
            scheme: scheme.into(),
            auth: a.as_bytes().to_vec(),
        },
    )
}
fn whoami(s: Slot) -> Op {
    r(s, Req::WhoAmI)
}
fn add_watch(s: Slot, path: &str, mode: i32) -> Op {
    r(
        s,
        Req::AddWatch {
            path: path.into(),
            mode,
        },
    )
}
fn check_watches(s: Slot, path: &str, ty: i32) -> Op {
    r(
        s,
        Req::CheckWatches {
            path: path.into(),
            ty,
        },
    )
}
fn remove_watches(s: Slot, path: &str, ty: i32) -> Op {
    r(
        s,
        Req::RemoveWatches {
            path: path.into(),
            ty,
        },
    )
}

pub(crate) fn auth_and_whoami() -> Vec<Op> {
    let creator = || vec![acl(perms::ALL, "auth", "")];
    vec![
        conn(0),
        conn(1),
        whoami(0),
        auth(0, "digest", "alice:secret"),
        whoami(0),
        create_acl(0, 15, "@/d", d("d"), creator(), 0),
        get_acl(0, "@/d"),
        get(0, "@/d", false),
        get(1, "@/d", false),
        get_acl(1, "@/d"),
        create_acl(1, 1, "@/x", NULL, creator(), 0),
        // ip auth works, but does not count for `auth` ACLs.
        auth(1, "ip", "whatever"),
        whoami(1),
        create_acl(1, 1, "@/x", NULL, creator(), 0),
        // digest auth never fails; the wrong password just gives another id.
        auth(1, "digest", "alice:wrong"),
        get(1, "@/d", false),
        auth(1, "digest", "alice:secret"),
        get(1, "@/d", false),
        whoami(1),
        auth(0, "digest", "bob"),
        auth(0, "digest", ""),
        whoami(0),
        create_acl(0, 1, "@/multi", NULL, creator(), 0),
        get_acl(0, "@/multi"),
        // Unknown schemes: AUTHFAILED, then the connection is closed; the
        // session lives on, and auth is per connection.
        auth(1, "nosuch", "x"),
        reconnect(1, Passwd::Good),
        whoami(1),
        get(1, "@/d", false),
        auth(0, "world", "anyone"),
        reconnect(0, Passwd::Good),
        get(0, "@/d", false),
        auth(0, "super", "x"),
        reconnect(0, Passwd::Good),
        auth(0, "auth", ""),
        reconnect(0, Passwd::Good),
        sync(0, "@"),
    ]
}

pub(crate) fn add_watch_persistent() -> Vec<Op> {
    vec![
        conn(0),
        conn(1),
        add_watch(1, "@/p", 0),
        create(0, "@/p", d("p"), 0),
        set(0, "@/p", d("q"), -1),
        set(0, "@/p", d("r"), -1),
        create(0, "@/p/c", NULL, 0),
        create(0, "@/p/c/d", NULL, 0),
        set(0, "@/p/c", d("x"), -1),
        del(0, "@/p/c/d", -1),
        del(0, "@/p/c", -1),
        del(0, "@/p", -1),
        create(0, "@/p", NULL, 0),
        check_watches(1, "@/p", 1),
        check_watches(1, "@/p", 2),
        check_watches(1, "@/p", 3),
        check_watches(0, "@/p", 3),
        check_watches(1, "@/nothing", 3),
        remove_watches(1, "@/p", 2),
        set(0, "@/p", d("s"), -1),
        create(0, "@/p/x", NULL, 0),
        remove_watches(1, "@/p", 1),
        create(0, "@/p/y", NULL, 0),
        remove_watches(1, "@/p", 3),
        check_watches(1, "@/p", 3),
        // A missing node may be watched; bad modes and types.
        add_watch(1, "@/missing/deep", 0),
        create(0, "@/missing", NULL, 0),
        create(0, "@/missing/deep", NULL, 0),
        add_watch(1, "@/q", 7),
        check_watches(1, "@/p", 9),
        remove_watches(1, "@/p", 0),
        sync(1, "@"),
        // 3.8 quirk: a standard watch on the same path downgrades that table.
        add_watch(1, "@/p", 0),
        get(1, "@/p", true),
        set(0, "@/p", d("t"), -1),
        set(0, "@/p", d("u"), -1),
        create(0, "@/p/z", NULL, 0),
        create(0, "@/p/w", NULL, 0),
        // Both kinds fire before the writer's own reply.
        add_watch(0, "@/p", 0),
        set(0, "@/p", d("v"), -1),
        // Persistent watches belong to the connection.
        reconnect(1, Passwd::Good),
        set(0, "@/p", d("w"), -1),
        check_watches(1, "@/p", 3),
    ]
}

pub(crate) fn add_watch_recursive() -> Vec<Op> {
    vec![
        conn(0),
        conn(1),
        add_watch(1, "@/r", 1),
        create(0, "@/r", NULL, 0),
        create(0, "@/r/a", NULL, 0),
        create(0, "@/r/a/b", d("b"), 0),
        set(0, "@/r/a/b", d("c"), -1),
        del(0, "@/r/a/b", -1),
        set(0, "@/r", d("r"), -1),
        create(0, "@/rx", NULL, 0),
        multi(
            0,
            vec![
                mc("@/r/m", NULL, 0),
                mc("@/r/m/n", NULL, 0),
                ms("@/r/a", d("m"), -1),
            ],
        ),
        create(0, "@/r/e", NULL, 1),
        create(0, "@/r/s", NULL, 3),
        check_watches(1, "@/r", 1),
        check_watches(1, "@/r/a", 3),
        // A standard child watch on the same path: the child table is now standard.
        ls(1, "@/r", true),
        create(0, "@/r/x", NULL, 0),
        create(0, "@/r/y", NULL, 0),
        // A standard data watch on the path: the recursive one stops matching below.
        get(1, "@/r", true),
        create(0, "@/r/z", NULL, 0),
        set(0, "@/r", d("s"), -1),
        set(0, "@/r", d("t"), -1),
        // A second recursive watch, and a closeSession deleting ephemerals under it.
        add_watch(1, "@/r", 1),
        close(0),
        ls2(1, "@/r", false),
        remove_watches(1, "@/r", 3),
        remove_watches(1, "@/r", 3),
    ]
}

pub(crate) fn set_watches2_persistent() -> Vec<Op> {
    let sw2 = |rel: Zx, data: &[&str], persistent: &[&str], recursive: &[&str]| {
        let v = |l: &[&str]| l.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        r(
            1,
            Req::SetWatches {
                v2: true,
                rel,
                data: v(data),
                exist: vec![],
                child: vec![],
                persistent: v(persistent),
                recursive: v(recursive),
            },
        )
    };
    vec![
        conn(0),
        conn(1),
        create(0, "@/p", NULL, 0),
        create(0, "@/r", NULL, 0),
        sync(1, "@"),
        set(0, "@/p", d("missed"), -1),
        create(0, "@/r/missed", NULL, 0),
        // A node deleted and created again, its version 0 again: a client
        // that reconnects learns nothing of it (what CuratorCache's rebuild
        // then misses).
        create(0, "@/r/again", d("a"), 0),
        del(0, "@/r/again", -1),
        create(0, "@/r/again", d("b"), 0),
        // Missed events are not replayed for persistent watches.
        sw2(Zx::Last, &[], &["@/p"], &["@/r"]),
        get(1, "@/r/again", false),
        set(0, "@/r/again", d("c"), 0),
        set(0, "@/p", d("seen"), -1),
        create(0, "@/p/c", NULL, 0),
        create(0, "@/r/x", NULL, 0),
        create(0, "@/r/x/y", NULL, 0),
        del(0, "@/p/c", -1),
        del(0, "@/p", -1),
        create(0, "@/p", NULL, 0),
        check_watches(1, "@/p", 3),
        check_watches(1, "@/r", 3),
        sw2(Zx::Zero, &["@/p"], &["@/q"], &[]),
        create(0, "@/q", NULL, 0),
        set(0, "@/q", NULL, -1),
    ]
}

pub(crate) fn pipelined_ordering() -> Vec<Op> {
    let p = |s: Slot, reqs: Vec<Op>| {
        Op::Pipeline(
            s,
            reqs.into_iter()
                .map(|o| match o {
                    Op::Req(_, r) => r,
                    _ => unreachable!(),
                })
                .collect(),
        )
    };
    vec![
        conn(0),
        conn(1),
        create(0, "@/a", d("a"), 0),
        get(0, "@/a", true),
        get(1, "@/a", true),
        p(
            0,
            vec![
                set(0, "@/a", d("b"), -1),
                get(0, "@/a", true),
                set(0, "@/a", d("c"), -1),
                create(0, "@/b", NULL, 0),
                ls(0, "@", true),
                create(0, "@/c", NULL, 0),
                create(0, "@/c", NULL, 0),
                sync(0, "@"),
                exists(0, "@/c", true),
                del(0, "@/c", -1),
                r(0, Req::Ping),
                get(0, "@/a", false),
            ],
        ),
        p(
            1,
            vec![
                exists(1, "@/n", true),
                create(1, "@/n", NULL, 1),
                multi(1, vec![ms("@/n", d("x"), -1), mk("@/n", 1)]),
                get(1, "@/n", true),
                del(1, "@/n", -1),
            ],
        ),
        // closeSession last: what happens to requests pipelined after it is
        // timing-dependent on the real server (sometimes answered −112
        // SESSIONEXPIRED, sometimes dropped when the socket closes).
        p(
            1,
            vec![get(1, "@/a", false), create(1, "@/e", NULL, 1), close(1)],
        ),
        exists(0, "@/e", false),
    ]
}

/// Session expiry (the one case that waits: 4 s timeout, rounded up to the
/// next 2 s tick on both servers). The expired session's connection is closed
/// with nothing sent; its ephemerals go in one closeSession txn.
pub(crate) fn session_expiry() -> Vec<Op> {
    vec![
        Op::Connect {
            s: 0,
            timeout: 4000,
            read_only_byte: true,
            last_zxid: Zx::Zero,
        },
        conn(1),
        create(0, "@/p", NULL, 0),
        create(0, "@/p/e1", NULL, 1),
        create(0, "@/e2", NULL, 3),
        get(0, "@/p", true),
        exists(1, "@/p/e1", true),
        ls(1, "@/p", true),
        ls(1, "@", true),
        Op::AwaitEvents {
            s: 1,
            count: 3,
            max_ms: 20000,
        },
        ls2(1, "@/p", false),
        ls2(1, "@", false),
        reconnect(0, Passwd::Good),
        sync(1, "@"),
    ]
}

/// jute.maxbuffer: a frame of 1048575 bytes (after the length prefix) is
/// served, one byte more closes the connection with no reply (checked by
/// hand against 3.8.0 with raw sockets too).
pub(crate) fn big_frames() -> Vec<Op> {
    let path = "@/big";
    let path_len = "/big_frames/big".len();
    // create: header 8, path 4+len, data 4+n, ACL vector 4+(4+4+5+4+6), flags 4.
    let create_max = 1_048_575 - (8 + 4 + path_len + 4 + 27 + 4);
    // setData: header 8, path 4+len, data 4+n, version 4.
    let set_max = 1_048_575 - (8 + 4 + path_len + 4 + 4);
    vec![
        conn(0),
        conn(1),
        exists(1, path, true),
        create(0, path, Some(vec![b'x'; create_max + 1]), 0),
        reconnect(0, Passwd::Good),
        exists(0, path, false),
        create(0, path, Some(vec![b'y'; create_max]), 0),
        get(0, path, false),
        get(1, path, true),
        set(0, path, Some(vec![b'z'; set_max + 1]), -1),
        reconnect(0, Passwd::Good),
        set(0, path, Some(vec![b'w'; set_max]), -1),
        get(1, path, false),
        del(0, path, -1),
    ]
}

/// SetWatches / SetWatches2 with xid −8, as the C and Rust clients send them:
/// the server echoes −8, and the events it fires come before that reply.
pub(crate) fn set_watches_xid_minus_8() -> Vec<Op> {
    let p = |x: &str| format!("/set_watches_xid_minus_8{x}");
    let v1 = SetWatches {
        relative_zxid: 0,
        data_watches: vec![p("/a"), p("/gone")],
        exist_watches: vec![p("/a"), p("/none")],
        child_watches: vec![p("")],
    }
    .to_bytes()
    .to_vec();
    let v2 = SetWatches2 {
        relative_zxid: 0,
        data_watches: vec![p("/a")],
        exist_watches: vec![],
        child_watches: vec![],
        persistent_watches: vec![p("/pers")],
        persistent_recursive_watches: vec![p("")],
    }
    .to_bytes()
    .to_vec();
    vec![
        conn(0),
        conn(1),
        create(0, "@/a", d("a"), 0),
        raw(1, 101, v1),
        create(0, "@/none", NULL, 0),
        set(0, "@/a", d("b"), -1),
        raw(1, 105, v2),
        create(0, "@/pers", NULL, 0),
        set(0, "@/pers", d("p"), -1),
        create(0, "@/pers/x", NULL, 0),
    ]
}

/// The Rust client writes ConnectRequest, auth, setWatches and a ping before
/// it has the ConnectResponse: they are served, in order, after the session
/// is set up.
pub(crate) fn pipelined_connect() -> Vec<Op> {
    let sw = Req::SetWatches {
        v2: false,
        rel: Zx::Zero,
        data: vec!["@/a".into()],
        exist: vec!["@/none".into()],
        child: vec!["@".into()],
        persistent: vec![],
        recursive: vec![],
    };
    let getr = |p: &str| Req::GetData {
        path: p.into(),
        watch: true,
    };
    vec![
        conn(0),
        create(0, "@/a", d("a"), 0),
        Op::PipelinedConnect {
            s: 1,
            reqs: vec![
                Req::Auth {
                    scheme: "digest".into(),
                    auth: b"u:p".to_vec(),
                },
                sw,
                Req::Ping,
                getr("@/a"),
                Req::Create {
                    op: 1,
                    path: "@/e".into(),
                    data: None,
                    acl: vec![acl(perms::ALL, "auth", "")],
                    flags: 1,
                },
                Req::WhoAmI,
            ],
        },
        exists(0, "@/e", false),
        reconnect(1, Passwd::Good),
        r(1, Req::WhoAmI),
        get(1, "@/e", false),
        close(1),
        exists(0, "@/e", false),
    ]
}

/// Op codes clients do not normally send: reconfig (16, disabled on a
/// standalone server), deleteContainer (20, server-internal), createSession
/// (-10), sasl (102), and invalid ones. Each may close the connection; the
/// session is re-attached after each.
pub(crate) fn other_op_codes() -> Vec<Op> {
    let mut reconfig = Vec::new();
    for s in ["", "", ""] {
        reconfig.extend_from_slice(&(s.len() as i32).to_be_bytes());
    }
    reconfig.extend_from_slice(&(-1i64).to_be_bytes());
    let container_path = b"/other_op_codes/k".to_vec();
    let mut ops = vec![
        conn(0),
        conn(1),
        create_acl(0, 19, "@/k", NULL, Acl::open_unsafe(), 4),
        exists(1, "@/k", true),
    ];
    for (op, body) in [
        (16, reconfig),
        (20, container_path.clone()),
        (20, b"/other_op_codes/missing".to_vec()),
        (-10, vec![]),
        (102, vec![0, 0, 0, 0]),
        (-11, vec![]),
    ] {
        ops.push(raw(0, op, body));
        ops.push(reconnect(0, Passwd::Good));
    }
    ops.extend([exists(1, "@/k", false), sync(0, "@")]);
    ops
}

fn lw(word: &str, keep: &[&str]) -> Op {
    Op::FourLetter {
        word: word.into(),
        keep: keep.iter().map(|k| k.to_string()).collect(),
    }
}

/// Four-letter words (both servers allow all of them: the real one runs with
/// `zookeeper.4lw.commands.whitelist=*`). Needs a fresh tree for the counts.
pub(crate) fn four_letter_words() -> Vec<Op> {
    vec![
        lw("ruok", &[]),
        lw("isro", &[]),
        lw("srvr", &["Zxid", "Mode", "Node count", "Outstanding"]),
        conn(0),
        conn(1),
        create(0, "/a", d("a"), 0),
        create(0, "/e", NULL, 1),
        get(0, "/a", true),
        exists(1, "/a", true),
        exists(1, "/missing", true),
        ls(1, "/", true),
        lw("srvr", &["Zxid", "Mode", "Node count", "Outstanding"]),
        lw("wchs", &[]),
        lw("wchc", &[]),
        lw("wchp", &[]),
        lw(
            "mntr",
            &[
                "zk_server_state",
                "zk_znode_count",
                "zk_watch_count",
                "zk_ephemerals_count",
                "zk_outstanding_requests",
            ],
        ),
        lw(
            "conf",
            &[
                "tickTime",
                "maxClientCnxns",
                "minSessionTimeout",
                "maxSessionTimeout",
                "serverId",
            ],
        ),
        lw("srst", &[]),
        lw("crst", &[]),
    ]
}

// ---------------------------------------------------------------------------
// Cases on servers started with settings (`main.rs`, `check_configured`).
// Every step leaves at most one node due for the container check, so the
// order in which a check deletes several (a HashSet's on the real server)
// never decides a zxid.

fn create_ttl(s: Slot, path: &str, flags: i32, ttl: i64) -> Op {
    r(
        s,
        Req::CreateTtl {
            path: path.into(),
            data: d("t"),
            flags,
            ttl,
        },
    )
}

fn await_events(s: Slot, count: usize) -> Op {
    Op::AwaitEvents {
        s,
        count,
        max_ms: 15000,
    }
}

/// Containers with `znode.container.checkIntervalMs=300`: an emptied one
/// goes (NodeDeleted, the parent's NodeChildrenChanged, a zxid of its own),
/// nested ones one level per check, a never-used one stays.
pub(crate) fn container_check() -> Vec<Op> {
    let container = |path: &str| create_acl(0, 19, path, NULL, Acl::open_unsafe(), 4);
    vec![
        conn(0),
        conn(1),
        create(0, "@/k", NULL, 0),
        container("@/k/c"),
        container("@/k/unused"),
        create(0, "@/k/c/x", NULL, 0),
        exists(1, "@/k/c", true),
        ls(1, "@/k", true),
        del(0, "@/k/c/x", -1),
        await_events(1, 2),
        exists(0, "@/k/c", false),
        ls2(0, "@/k", false),
        container("@/k/outer"),
        container("@/k/outer/inner"),
        create(0, "@/k/outer/inner/leaf", NULL, 0),
        exists(1, "@/k/outer/inner", true),
        exists(1, "@/k/outer", true),
        del(0, "@/k/outer/inner/leaf", -1),
        await_events(1, 1),
        await_events(1, 1),
        exists(0, "@/k/outer", false),
        exists(0, "@/k/unused", false),
        ls2(0, "@/k", false),
    ]
}

/// TTL nodes with `zookeeper.extendedTypesEnabled=true`: the ttl range,
/// TTL modes without a ttl, and expiry at the container check.
pub(crate) fn ttl_nodes() -> Vec<Op> {
    vec![
        conn(0),
        conn(1),
        create(0, "@/k", NULL, 0),
        create_ttl(0, "@/k/bad0", 5, 0),
        create_ttl(0, "@/k/neg", 5, -5),
        create_ttl(0, "@/k/big", 5, 0x100_0000_0000),
        create_ttl(0, "@/k/notttl", 0, 1000),
        create_ttl(0, "@/k/eph", 1, 1000),
        create(0, "@/k/plain5", NULL, 5),
        create2(0, "@/k/plain6", NULL, 6),
        create_ttl(0, "@/k/max", 5, 0xFF_FFFF_FFFF),
        create_ttl(0, "@/k/s-", 6, 0xFFFF_FFFF),
        create_ttl(0, "@/k/t", 5, 400),
        create_ttl(0, "@/k/parent", 5, 100),
        create(0, "@/k/parent/child", NULL, 0),
        get(0, "@/k/max", false),
        exists(1, "@/k/t", true),
        await_events(1, 1),
        exists(0, "@/k/t", false),
        exists(1, "@/k/parent", true),
        del(0, "@/k/parent/child", -1),
        await_events(1, 1),
        ls2(0, "@/k", false),
    ]
}

/// `zookeeper.DigestAuthenticationProvider.superDigest` for super:test.
pub(crate) fn super_digest() -> Vec<Op> {
    let creator = || vec![acl(perms::ALL, "auth", "")];
    vec![
        conn(0),
        conn(1),
        conn(2),
        auth(0, "digest", "alice:pw"),
        create_acl(0, 1, "@/private", d("p"), creator(), 0),
        create_acl(0, 1, "@/private/c", d("c"), creator(), 0),
        get(1, "@/private", false),
        auth(2, "digest", "super:wrong"),
        whoami(2),
        get(2, "@/private", false),
        auth(1, "digest", "super:test"),
        whoami(1),
        get(1, "@/private", false),
        get_acl(1, "@/private"),
        set(1, "@/private", d("q"), -1),
        set_acl(
            1,
            "@/private/c",
            vec![acl(perms::READ, "world", "anyone")],
            -1,
        ),
        create_acl(1, 1, "@/private/d", NULL, creator(), 0),
        get_acl(1, "@/private/d"),
        del(1, "@/private/c", -1),
        get(0, "@/private/d", false),
    ]
}
