//! Replays the committed fuzz corpus (`fuzz/corpus/<target>/`: seeds from
//! kazoo's traffic, the inputs libFuzzer kept for coverage, and every input
//! a crash was ever found with) through the same entry points as the
//! cargo-fuzz targets, so the default `cargo test` keeps them fixed
//! without libFuzzer or a nightly flag.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use zk_mock::record::{ChangeKind, Recording, RequestRecord, SessionEvent, WatchKind};

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(
        files.len() > 10,
        "{}: {} inputs",
        dir.display(),
        files.len()
    );
    files
        .into_iter()
        .map(|p| {
            let data = std::fs::read(&p).unwrap();
            (p, data)
        })
        .collect()
}

#[test]
fn frames_corpus() {
    for (_, data) in corpus("frames") {
        zk_mock::fuzzing::frames(&data);
    }
}

#[test]
fn requests_corpus() {
    let decoded = corpus("requests")
        .iter()
        .filter(|(_, data)| zk_mock::fuzzing::requests(data))
        .count();
    assert!(decoded > 0, "some seeds are well-formed requests");
}

/// Runs every input of `target`'s corpus through `run`: the bytes the
/// server queued for clients, all inputs together. Every `twice`-th input
/// (and each hand-written seed and crash input) runs a second time and
/// must queue the same bytes and record the same sessions, changes and
/// notifications: each server's hash tables have a seed of their own, so
/// an outcome that follows a table's order shows up as a difference.
fn replay(target: &str, run: fn(&[u8]) -> zk_mock::fuzzing::Server, twice: usize) -> usize {
    let outcome = |path: &Path, data: &[u8], record: bool| {
        let s = std::panic::catch_unwind(|| run(data))
            .unwrap_or_else(|_| panic!("{} panicked", path.display()));
        let recorded = record.then(|| {
            let r = s.recorded();
            serde_json::to_string(&(&r.sessions, &r.changes, &r.notifications)).unwrap()
        });
        (s.sent, s.frames, s.digest, recorded)
    };
    corpus(target)
        .into_iter()
        .enumerate()
        .map(|(i, (path, data))| {
            let named = path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("seed-") || n.starts_with("crash-"));
            if i % twice != 0 && !named {
                return outcome(&path, &data, false).0;
            }
            let (a, b) = (outcome(&path, &data, true), outcome(&path, &data, true));
            assert!(
                a == b,
                "{}: two runs differ (bytes {} and {}, frames {} and {}, digests {:#x} and {:#x}, records equal: {})",
                path.display(),
                a.0,
                b.0,
                a.1,
                b.1,
                a.2,
                b.2,
                a.3 == b.3
            );
            a.0
        })
        .sum()
}

#[test]
fn server_corpus() {
    let sent = replay("server", zk_mock::fuzzing::run_script, 8);
    assert!(sent > 0, "the server answered something");
}

#[test]
fn ensemble_corpus() {
    let sent = replay("ensemble", zk_mock::fuzzing::run_ensemble_script, 4);
    assert!(sent > 0, "the servers answered something");
}

/// Each hand-written seed of the ensemble target still reaches the behaviour
/// it was written for, as the server's recorder saw it: a change to the
/// script's format that turned a seed into noise fails here, and a new seed
/// must say what it reaches.
#[test]
fn each_ensemble_seed_reaches_its_behaviour() {
    type Reaches = fn(&Recording) -> bool;
    let expected: &[(&str, Reaches)] = &[
        ("crash-local-session-reattached-on-another-server", |r| {
            // The read-only server's local session is refused elsewhere.
            r.sessions.iter().any(|s| s.event == SessionEvent::Refused)
        }),
        ("seed-containers-and-ttl", |r| {
            // The server itself (session 0) reaps the emptied container and
            // the expired TTL node, and a lagging follower still lists.
            reaped(r, "/a") && reaped(r, "/b") && answered(r, 2, "getChildren2", "/", 0).is_some()
        }),
        ("seed-expiry-at-the-followers-pace", |r| {
            // The session on the lagging follower expires and its ephemeral's
            // deletion reaches a watcher on the other follower.
            let Some(gone) = r.sessions.iter().find(|s| s.event == SessionEvent::Expired) else {
                return false;
            };
            r.notifications.iter().any(|n| {
                n.server == 2 && n.session != gone.session && n.path == "/b" && n.event_type == 2
            })
        }),
        ("seed-five-no-quorum", |r| {
            // Five servers: with three of them killed the first epoch's
            // sessions are gone; once a quorum is back, a server of the two
            // left standing serves writes of the next epoch.
            r.sessions
                .iter()
                .filter(|s| s.event == SessionEvent::Disconnected && epoch(s.zxid) == 1)
                .count()
                >= 2
                && r.requests
                    .iter()
                    .any(|q| q.server == 3 && q.err == 0 && epoch(q.zxid) == 2)
        }),
        ("seed-lagging-follower-stale-read", |r| {
            // The lagging follower answers NoNode for a node the leader had
            // already created, and after a sync reads the last write.
            let Some(created) = answered(r, 0, "create", "/a", 0) else {
                return false;
            };
            let last_write = r
                .requests
                .iter()
                .filter(|q| q.server == 0)
                .map(|q| q.zxid)
                .max();
            let synced = answered(r, 1, "sync", "/a", 0);
            r.requests
                .iter()
                .any(|q| q.server == 1 && q.op == "getData" && q.err == -101 && q.seq > created.seq)
                && synced.is_some_and(|s| {
                    r.requests.iter().any(|q| {
                        q.server == 1
                            && q.op == "getData"
                            && q.seq > s.seq
                            && Some(q.zxid) >= last_write
                    })
                })
        }),
        ("seed-leader-killed-session-moves", |r| {
            // After the leader dies, its session re-attaches in the next
            // epoch on another server and is served there.
            r.sessions.iter().any(|s| {
                s.event == SessionEvent::Reattached
                    && epoch(s.zxid) == 2
                    && servers_of(r, s.session.0).len() >= 2
            })
        }),
        ("seed-new-session-on-lagging-follower", |r| {
            // The script sends the new session's create of /a before the
            // other session's create of /b: the answer to its handshake waits
            // for the lagging follower to apply the createSession, and its
            // requests wait with it, so /b is committed first.
            match (
                answered(r, 2, "create", "/a", 0),
                answered(r, 0, "create", "/b", 0),
            ) {
                (Some(a), Some(b)) => a.zxid > b.zxid,
                _ => false,
            }
        }),
        ("seed-partition-read-only", |r| {
            // The cut-off server serves reads and refuses writes
            // (ZNOTREADONLY) until it rejoins and drops the connection.
            let Some(refused) = answered(r, 2, "create", "/b", -119) else {
                return false;
            };
            answered(r, 2, "getData", "/a", 0).is_some()
                && r.sessions.iter().any(|s| {
                    s.session == refused.session
                        && s.event == SessionEvent::Disconnected
                        && s.seq > refused.seq
                })
        }),
        ("seed-persistent-watch-lagging", |r| {
            // The recursive watch on the lagging follower reports every
            // create, the sequential one too, and the last of them after its
            // own session's closeSession was committed: at that follower's
            // pace.
            let Some(closed) = r.sessions.iter().find(|s| s.event == SessionEvent::Closed) else {
                return false;
            };
            let seen: Vec<_> = r
                .notifications
                .iter()
                .filter(|n| n.session == closed.session && n.kind == WatchKind::PersistentRecursive)
                .collect();
            seen.len() >= 3
                && seen.iter().any(|n| n.path.ends_with("0000000001"))
                && seen.iter().any(|n| n.seq > closed.seq)
        }),
        ("seed-reconfig-leader-leaves-and-joins", |r| {
            // Two reconfigs take effect, one is refused, and the ensemble
            // still commits a write afterwards.
            let ok = r
                .requests
                .iter()
                .filter(|q| q.op == "reconfig" && q.err == 0);
            let last = ok.clone().map(|q| q.seq).max();
            ok.count() >= 2
                && r.requests.iter().any(|q| q.op == "reconfig" && q.err != 0)
                && r.requests
                    .iter()
                    .any(|q| q.op == "create" && q.err == 0 && Some(q.seq) > last)
        }),
        ("seed-session-moved", |r| {
            // The old connection's write is refused with ZSESSIONMOVED and the
            // session is served on its new server.
            answered(r, 1, "setData", "/c", -118)
                .is_some_and(|moved| servers_of(r, moved.session.0).contains(&2))
        }),
        ("seed-set-watches-on-a-lagging-follower", |r| {
            // setWatches2 is answered on the lagging follower and, after the
            // session moves, on another server, and each fires watches there.
            [2, 1].iter().all(|&server| {
                r.requests.iter().any(|q| {
                    q.server == server
                        && q.op == "setWatches2"
                        && q.err == 0
                        && r.notifications
                            .iter()
                            .any(|n| n.server == server && n.session == q.session)
                })
            })
        }),
    ];
    let seeds: Vec<_> = corpus("ensemble")
        .into_iter()
        .filter(|(p, _)| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("seed-") || name.starts_with("crash-")
        })
        .collect();
    assert_eq!(seeds.len(), expected.len(), "one expectation per seed");
    let mut missed = Vec::new();
    for (path, data) in seeds {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let (_, reaches) = expected
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("{name}: no expectation; add one"));
        let r = zk_mock::fuzzing::run_ensemble_script(&data).recorded();
        if !reaches(&r) {
            eprintln!("{name}: {r:#?}");
            missed.push(name);
        }
    }
    assert!(
        missed.is_empty(),
        "no longer reaching their behaviour (recordings above): {missed:?}"
    );
}

/// The request of `op` on `path` that server `server` answered with `err`.
fn answered<'a>(
    r: &'a Recording,
    server: usize,
    op: &str,
    path: &str,
    err: i32,
) -> Option<&'a RequestRecord> {
    r.requests.iter().find(|q| {
        q.server == server && q.op == op && q.err == err && q.path.as_deref() == Some(path)
    })
}

/// Whether the server itself (no session) deleted `path`: a reaped container
/// or an expired TTL node.
fn reaped(r: &Recording, path: &str) -> bool {
    r.changes
        .iter()
        .any(|c| c.session.0 == 0 && c.kind == ChangeKind::Deleted && c.path == path)
}

/// The servers that answered requests of `session`.
fn servers_of(r: &Recording, session: i64) -> BTreeSet<usize> {
    r.requests
        .iter()
        .filter(|q| q.session.0 == session)
        .map(|q| q.server)
        .collect()
}

fn epoch(zxid: i64) -> i64 {
    zxid >> 32
}

/// A kazoo session replayed as a script reaches past the handshake: the
/// server answers far more than a ConnectResponse.
#[test]
fn a_kazoo_seed_is_served() {
    let seeds: Vec<_> = corpus("server")
        .into_iter()
        .filter(|(p, _)| p.to_string_lossy().contains("seed-kazoo"))
        .collect();
    assert!(!seeds.is_empty());
    let most = seeds
        .iter()
        .map(|(_, d)| zk_mock::fuzzing::run_script(d).sent)
        .max()
        .unwrap();
    assert!(most > 1000, "{most} bytes answered");
}
