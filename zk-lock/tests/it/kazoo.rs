//! Sharing one lock with kazoo's `Lock`, `ReadLock` and `WriteLock`
//! (python3 + kazoo, feature `kazoo`).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

use zk_lock::{Layout, Lock, RwLock, Strategy};
use zk_mock::ZkMock;

use crate::support::*;

const SCRIPT: &str = r#"
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1])
zk.start()
kind = sys.argv[4] if len(sys.argv) > 4 else "lock"
make = {"lock": zk.Lock, "read": zk.ReadLock, "write": zk.WriteLock}[kind]
lock = make(sys.argv[2], "kazoo")
mode = sys.argv[3]
if mode == "hold":
    lock.acquire()
    print("held", flush=True)
    sys.stdin.readline()
    lock.release()
elif mode == "try":
    got = lock.acquire(blocking=False)
    print("acquired" if got else "busy", flush=True)
    if got:
        lock.release()
elif mode == "wait":
    lock.acquire()
    print("acquired", flush=True)
    lock.release()
zk.stop()
zk.close()
"#;

fn kazoo(zk: &ZkMock, dir: &str, mode: &str) -> Child {
    kazoo_as(zk, dir, mode, "lock")
}

/// kazoo's `Lock` (`kind` "lock"), `ReadLock` ("read") or `WriteLock` ("write").
fn kazoo_as(zk: &ZkMock, dir: &str, mode: &str, kind: &str) -> Child {
    Command::new("python3")
        .args(["-c", SCRIPT, &zk.connect_string(), dir, mode, kind])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 with kazoo")
}

async fn line(child: &mut Child) -> String {
    let out = child.stdout.take().unwrap();
    let (line, out) = tokio::task::spawn_blocking(move || {
        let mut r = BufReader::new(out);
        let mut s = String::new();
        r.read_line(&mut s).unwrap();
        (s, r.into_inner())
    })
    .await
    .unwrap();
    child.stdout = Some(out);
    line.trim().to_string()
}

async fn exit_ok(mut child: Child) {
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
}

fn strategy(herd: bool) -> Strategy {
    if herd {
        Strategy::Herd
    } else {
        Strategy::Predecessor
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoo_layout_shares_the_lock_with_kazoo() {
    for herd in [false, true] {
        let zk = ZkMock::start().await;
        let dir = "/locks/kazoo";
        let c = client(&zk).await;
        let ours = Lock::builder(c.clone(), dir)
            .strategy(strategy(herd))
            .layout(Layout::Kazoo)
            .build()
            .unwrap();

        // kazoo holds: ours waits until kazoo releases.
        let mut holder = kazoo(&zk, dir, "hold");
        assert_eq!(line(&mut holder).await, "held");
        assert!(ours.try_acquire().await.unwrap().is_none(), "herd={herd}");
        let waiter = tokio::spawn(async move {
            let g = ours.acquire().await.unwrap();
            (ours, g)
        });
        watching(&zk, dir, &[session(&c)]).await;
        holder.stdin.take().unwrap().write_all(b"go\n").unwrap();
        let (_ours, g) = tokio::time::timeout(PATIENCE, waiter)
            .await
            .expect("ours never acquired after kazoo released")
            .unwrap();
        exit_ok(holder).await;
        let name = g.path().rsplit('/').next().unwrap().to_string();
        assert!(
            name.contains("__lock__") && !name.starts_with("_c_"),
            "{name}"
        );

        // Ours holds: kazoo sees it busy, and waits until ours is released.
        let mut probe = kazoo(&zk, dir, "try");
        assert_eq!(line(&mut probe).await, "busy", "herd={herd}");
        exit_ok(probe).await;
        let mut waiting = kazoo(&zk, dir, "wait");
        let ours_session = session(&c);
        zk.wait_until(PATIENCE, |log| {
            log.watches()
                .any(|w| w.session != ours_session && w.path.starts_with(dir))
        })
        .await
        .unwrap();
        g.release().await.unwrap();
        assert_eq!(line(&mut waiting).await, "acquired", "herd={herd}");
        exit_ok(waiting).await;
    }
}

fn kazoo_rw(herd: bool, c: zookeeper_client::Client, dir: &str) -> RwLock {
    Lock::builder(c, dir)
        .strategy(strategy(herd))
        .layout(Layout::Kazoo)
        .read_write()
        .unwrap()
}

/// Waits until a session other than `ours` watches something under `dir`.
async fn kazoo_waits(zk: &ZkMock, dir: &str, ours: zk_mock::SessionId) {
    zk.wait_until(PATIENCE, |log| {
        log.watches()
            .any(|w| w.session != ours && w.path.starts_with(dir))
    })
    .await
    .unwrap();
}

/// A Rust writer and kazoo readers exclude each other; a Rust reader shares
/// the lock with kazoo's readers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_writer_excludes_kazoo_readers() {
    for herd in [false, true] {
        let zk = ZkMock::start().await;
        let dir = "/locks/kazoo-rw";
        let c = client(&zk).await;
        let ours = kazoo_rw(herd, c.clone(), dir);

        let w = ours.write().await.unwrap();
        let name = w.path().rsplit('/').next().unwrap().to_string();
        assert!(
            name.contains("__lock__") && !name.starts_with("_c_"),
            "{name}"
        );
        let mut probe = kazoo_as(&zk, dir, "try", "read");
        assert_eq!(line(&mut probe).await, "busy", "herd={herd}");
        exit_ok(probe).await;
        let mut waiting = kazoo_as(&zk, dir, "wait", "read");
        kazoo_waits(&zk, dir, session(&c)).await;
        w.release().await.unwrap();
        assert_eq!(line(&mut waiting).await, "acquired", "herd={herd}");
        exit_ok(waiting).await;

        // Readers share across the two.
        let r = ours.read().await.unwrap();
        let name = r.path().rsplit('/').next().unwrap().to_string();
        assert!(name.contains("__rlock__"), "{name}");
        let mut probe = kazoo_as(&zk, dir, "try", "read");
        assert_eq!(line(&mut probe).await, "acquired", "herd={herd}");
        exit_ok(probe).await;
        let mut probe = kazoo_as(&zk, dir, "try", "write");
        assert_eq!(line(&mut probe).await, "busy", "herd={herd}");
        exit_ok(probe).await;
        r.release().await.unwrap();
        assert!(children(&zk, dir).is_empty(), "herd={herd}");
    }
}

/// A kazoo writer excludes Rust readers (and a kazoo reader Rust writers);
/// the waiting Rust side acquires once kazoo releases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kazoo_writer_excludes_rust_readers() {
    for herd in [false, true] {
        let zk = ZkMock::start().await;
        let dir = "/locks/kazoo-rw";
        let c = client(&zk).await;
        let ours = kazoo_rw(herd, c.clone(), dir);

        let mut writer = kazoo_as(&zk, dir, "hold", "write");
        assert_eq!(line(&mut writer).await, "held");
        assert!(
            ours.reader().try_acquire().await.unwrap().is_none(),
            "herd={herd}"
        );
        assert!(
            ours.writer().try_acquire().await.unwrap().is_none(),
            "herd={herd}"
        );
        let reader = tokio::spawn(async move {
            let g = ours.read().await.unwrap();
            (ours, g)
        });
        watching(&zk, dir, &[session(&c)]).await;
        writer.stdin.take().unwrap().write_all(b"go\n").unwrap();
        let (ours, g) = tokio::time::timeout(PATIENCE, reader)
            .await
            .expect("the Rust reader never acquired after kazoo's writer released")
            .unwrap();
        exit_ok(writer).await;
        g.release().await.unwrap();

        let mut reader = kazoo_as(&zk, dir, "hold", "read");
        assert_eq!(line(&mut reader).await, "held");
        let shared = ours
            .reader()
            .try_acquire()
            .await
            .unwrap()
            .expect("readers share");
        shared.release().await.unwrap();
        assert!(
            ours.writer().try_acquire().await.unwrap().is_none(),
            "herd={herd}"
        );
        let writer = tokio::spawn(async move { ours.write().await.unwrap() });
        watching(&zk, dir, &[session(&c)]).await;
        reader.stdin.take().unwrap().write_all(b"go\n").unwrap();
        let g = tokio::time::timeout(PATIENCE, writer)
            .await
            .expect("the Rust writer never acquired after kazoo's reader released")
            .unwrap();
        exit_ok(reader).await;
        g.release().await.unwrap();
        assert!(children(&zk, dir).is_empty(), "herd={herd}");
    }
}
