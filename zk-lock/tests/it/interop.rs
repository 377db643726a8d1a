//! Sharing one lock directory with `zookeeper_client::Client::lock` and
//! `LockPrefix::new_curator(dir, "lock-")` (Curator's node names).

use zk_mock::ZkMock;
use zookeeper_client::{Acls, Client, CreateMode, LockOptions, LockPrefix};

use crate::support::*;

async fn crate_lock<'c>(c: &'c Client, dir: &str) -> zookeeper_client::LockClient<'c> {
    let options = LockOptions::new(Acls::anyone_all())
        .with_ancestor_options(CreateMode::Persistent.with_acls(Acls::anyone_all()))
        .unwrap();
    c.lock(LockPrefix::new_curator(dir, "lock-").unwrap(), b"", options)
        .await
        .expect("the crate's lock")
}

#[tokio::test]
async fn sequential_locks_exclude_the_crates_own_lock() {
    for kind in SEQUENTIAL {
        let zk = ZkMock::start().await;
        let dir = "/locks/interop";
        let (theirs_client, ours_client) = (client(&zk).await, client(&zk).await);
        let ours = kind.lock(ours_client.clone(), dir);

        // Theirs holds: ours must wait, and gets it when theirs lets go.
        let theirs = crate_lock(&theirs_client, dir).await;
        assert!(ours.try_acquire().await.unwrap().is_none(), "{kind:?}");
        let waiter = tokio::spawn(async move {
            let g = ours.acquire().await.unwrap();
            (ours, g)
        });
        watching(&zk, dir, &[session(&ours_client)]).await;
        let their_path = theirs.lock_path().to_string();
        drop(theirs); // the crate deletes its node in the background
        let (ours, g) = tokio::time::timeout(PATIENCE, waiter)
            .await
            .expect("ours never acquired after theirs released")
            .unwrap();
        assert!(!children(&zk, dir).contains(&their_path), "{kind:?}");

        // Ours holds: theirs must wait until ours is released.
        let c = theirs_client.clone();
        let d = dir.to_string();
        let theirs_waiting = tokio::spawn(async move {
            let l = crate_lock(&c, &d).await;
            l.lock_path().to_string()
        });
        watching(&zk, dir, &[session(&theirs_client)]).await;
        assert!(!theirs_waiting.is_finished(), "{kind:?}");
        g.release().await.unwrap();
        let path = tokio::time::timeout(PATIENCE, theirs_waiting)
            .await
            .expect("theirs never acquired after ours released")
            .unwrap();
        assert!(path.starts_with(&format!("{dir}/_c_")), "{path}");
        zk.wait_until(PATIENCE, |log| {
            !log.snapshot()
                .tree
                .keys()
                .any(|p| p.starts_with("/locks/interop/"))
        })
        .await
        .unwrap();
        drop(ours);
        no_watches_left(&zk).await;
    }
}
