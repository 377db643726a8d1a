//! A three-server ensemble: the server a client is connected through is
//! killed, and the client fails over to another server, keeping its session
//! and its ephemeral node. The killed server is restarted and catches up;
//! then a leader election drops every client for a moment, and the session
//! survives that too.
//!
//! Run it from the workspace root:
//!
//! ```sh
//! cargo run --example ensemble_failover
//! ```
//!
//! The client library picks the first server of the connect string at
//! random, so which server is killed (and whether it was the leader, which
//! also starts an election) changes from run to run; what is checked does
//! not. The program waits on the client's session-state events, never on
//! sleeps, and exits 0 only if every step below really happened.

use std::error::Error;
use std::future::Future;
use std::time::Duration;

use zk_mock::record::SessionEvent;
use zk_mock::{ServerStatus, SessionId, ZkMock};
use zookeeper_client::{Acls, Client, CreateMode, SessionState, StateWatcher};

/// A safety net, not a pacing device: every wait below ends on an event long
/// before this; if one ever does not, the program fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(5);

/// Awaits `fut`, or fails with `what` after [`LIMIT`].
async fn within<T>(what: &str, fut: impl Future<Output = T>) -> Result<T, String> {
    tokio::time::timeout(LIMIT, fut)
        .await
        .map_err(|_| format!("timed out after {LIMIT:?} waiting for {what}"))
}

/// Follows the client's session state until it is connected again, and
/// returns the states it went through.
async fn reconnected(state: &mut StateWatcher) -> Vec<SessionState> {
    let mut seen = Vec::new();
    loop {
        let next = state.changed().await;
        seen.push(next);
        if next == SessionState::SyncConnected {
            return seen;
        }
    }
}

/// One line on the ensemble: each server's status, and who leads.
fn servers(zk: &ZkMock) -> String {
    zk.servers()
        .iter()
        .map(|s| {
            let leads = if s.leader { ", leader" } else { "" };
            format!("{}: {}{leads}", s.index, s.status.name())
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    // Three servers, one connect string naming them all, one session space.
    let zk = ZkMock::ensemble(3).await;
    println!("ensemble {} [{}]", zk.connect_string(), servers(&zk));

    // The client gets the whole connect string, as an application would.
    let client = Client::connect(&zk.connect_string()).await?;
    let session = client.session_id();
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    client.create("/workers", &[], &persistent).await?;
    client.create("/workers/w1", b"up", &ephemeral).await?;

    let first = zk
        .server_of(session.0)
        .ok_or("the client is on no server")?;
    let was_leader = first == zk.leader();
    println!(
        "session {:#x} is connected through server {first} ({}), and owns the ephemeral /workers/w1",
        session.0,
        if was_leader { "the leader" } else { "a follower" }
    );

    // 1. Kill that server: its connections drop, it takes no new ones.
    let mut state = client.state_watcher();
    assert!(zk.server(first).kill());
    assert_eq!(zk.server(first).status(), ServerStatus::Killed);
    println!("killed server {first} [{}]", servers(&zk));
    if was_leader {
        println!("  it led: the others elect a new leader before they serve again");
    }

    // 2. The client notices, tries the other servers of its connect string,
    //    and re-attaches its session through one of them.
    let states = within("the failover", reconnected(&mut state)).await?;
    let second = zk
        .server_of(session.0)
        .ok_or("the client is on no server")?;
    println!("client states: {states:?}; now through server {second}");
    assert_eq!(states.first(), Some(&SessionState::Disconnected));
    assert_ne!(second, first, "it must have moved to a live server");
    assert_eq!(client.session_id(), session, "the same session");
    println!("leader now: server {} [{}]", zk.leader(), servers(&zk));

    // Its ephemeral node lived on with the session.
    let stat = client
        .check_stat("/workers/w1")
        .await?
        .ok_or("the ephemeral node is gone")?;
    assert_eq!(stat.ephemeral_owner, session.0);
    println!(
        "/workers/w1 is still there, owned by {:#x}",
        stat.ephemeral_owner
    );

    // The server's recorder saw the session re-attached, never expired.
    let (reattached, expired) = zk.inspect(|log| {
        let ours = || {
            log.sessions()
                .filter(|s| s.session == SessionId::from(session.0))
        };
        (
            ours()
                .filter(|s| s.event == SessionEvent::Reattached)
                .count(),
            ours().filter(|s| s.event == SessionEvent::Expired).count(),
        )
    });
    assert!(reattached >= 1 && expired == 0);
    println!("recorder: the session was re-attached {reattached} time(s), expired 0 times");

    // 3. A write while server `first` is down; then restart it. It catches
    //    up with every committed write before it serves again, so a client
    //    that can only reach it reads that write.
    client.create("/while-down", b"", &persistent).await?;
    assert!(zk.server(first).restart()?);
    let pinned = Client::connect(&zk.server(first).connect_string()).await?;
    assert!(pinned.check_stat("/while-down").await?.is_some());
    assert!(pinned.check_stat("/workers/w1").await?.is_some());
    println!(
        "restarted server {first}: it caught up and serves /while-down [{}]",
        servers(&zk)
    );

    // 4. A leader election: every server drops its clients for the window,
    //    then the highest-numbered server that is up leads a new epoch
    //    (zxids start at epoch << 32). Sessions and ephemerals survive.
    let (before, _) = client.create("/epoch-before", b"", &persistent).await?;
    let mut state = client.state_watcher();
    zk.leader_election(Duration::from_millis(100));
    println!("leader election started [{}]", servers(&zk));
    let states = within("the reconnect after the election", reconnected(&mut state)).await?;
    println!("client states: {states:?}");
    assert_eq!(states.first(), Some(&SessionState::Disconnected));
    assert_eq!(
        client.session_id(),
        session,
        "the session survives the election"
    );
    let (after, _) = client.create("/epoch-after", b"", &persistent).await?;
    let (epoch_before, epoch_after) = (before.mzxid >> 32, after.mzxid >> 32);
    assert!(epoch_after > epoch_before, "a new epoch");
    assert!(client.check_stat("/workers/w1").await?.is_some());
    println!(
        "server {} leads epoch {epoch_after} (was {epoch_before}) [{}]",
        zk.leader(),
        servers(&zk)
    );

    println!("OK: the session and its ephemeral node survived a killed server and an election");
    Ok(())
}
