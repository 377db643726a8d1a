//! A lock holder's session expires: its guard reports the loss, and the
//! client queued behind it takes the lock over with a larger fencing token,
//! which lets the guarded resource refuse the old holder's late writes.
//!
//! Run it from the workspace root:
//!
//! ```sh
//! cargo run --example holder_expires
//! ```
//!
//! Everything runs in this one process: an embedded zk-mock server, two
//! `zookeeper-client` sessions ("alice" and "bob") and a zk-lock `Lock` on
//! each. The program waits on events (the server's recorder, the guard's
//! futures), never on sleeps; it exits 0 only if every step below really
//! happened, and non-zero otherwise.

use std::error::Error;
use std::future::Future;
use std::time::Duration;

use zk_lock::{GuardState, Lock, LockError};
use zk_mock::{SessionId, ZkMock};
use zookeeper_client::Client;

/// A safety net, not a pacing device: every wait below ends on an event long
/// before this; if one ever does not, the program fails instead of hanging.
const LIMIT: Duration = Duration::from_secs(5);

/// Awaits `fut`, or fails with `what` after [`LIMIT`].
async fn within<T>(what: &str, fut: impl Future<Output = T>) -> Result<T, String> {
    tokio::time::timeout(LIMIT, fut)
        .await
        .map_err(|_| format!("timed out after {LIMIT:?} waiting for {what}"))
}

/// The resource the lock guards, as a fenced store would be: it remembers
/// the highest fencing token it has seen and refuses any older one.
#[derive(Debug, Default)]
struct FencedStore {
    highest: i64,
    writes: Vec<(&'static str, i64)>,
}

impl FencedStore {
    fn write(&mut self, who: &'static str, token: i64) -> Result<(), String> {
        if token < self.highest {
            return Err(format!(
                "refused {who}'s write: token {token:#x} is older than {:#x}",
                self.highest
            ));
        }
        self.highest = token;
        self.writes.push((who, token));
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    // An embedded ZooKeeper-compatible server on a free loopback port.
    let zk = ZkMock::start().await;
    println!("zk-mock listening on {}", zk.connect_string());

    let alice = Client::connect(&zk.connect_string()).await?;
    let bob = Client::connect(&zk.connect_string()).await?;
    let (alice_id, bob_id) = (alice.session_id().0, bob.session_id().0);
    println!("alice is session {alice_id:#x}, bob is session {bob_id:#x}");

    // One lock directory, one Lock per client (the default strategy,
    // Predecessor: each waiter watches only the node just before its own).
    let alices_lock = Lock::builder(alice, "/locks/report").build()?;
    let bobs_lock = Lock::builder(bob.clone(), "/locks/report").build()?;
    let mut store = FencedStore::default();

    // 1. Alice takes the lock. Her fencing token is her lock node's czxid.
    let guard = alices_lock.acquire().await?;
    let old_token = guard.fencing_token();
    assert_eq!(guard.state(), GuardState::Held);
    println!(
        "alice holds the lock: node {}, fencing token {old_token:#x}",
        guard.path()
    );
    store.write("alice", old_token)?;

    // 2. Bob cannot have it now, so he queues for it in a task of his own.
    assert!(
        bobs_lock.try_acquire().await?.is_none(),
        "bob got a lock alice holds"
    );
    let bob_waits = tokio::spawn(async move { bobs_lock.acquire_timeout(LIMIT).await });

    // Wait until bob is really queued: the server has recorded his watch on
    // alice's node (his predecessor). No sleep: `wait_until` re-checks the
    // condition after every change the server records.
    let alices_node = guard.path().to_string();
    zk.wait_until(LIMIT, |log| {
        log.watches()
            .any(|w| w.session == SessionId::from(bob_id) && w.path == alices_node)
    })
    .await?;
    println!("bob is queued: he watches {alices_node}");

    // 3. The server expires alice's session, exactly as ZooKeeper does when a
    //    client stays silent past its timeout: her ephemeral lock node goes.
    assert!(zk.expire_session(alice_id), "no such session");
    println!("the server expires alice's session");

    // 4. Alice's guard hears of it: `lost()` completes and the state is final.
    within("alice's guard to report the loss", guard.lost()).await?;
    assert_eq!(guard.state(), GuardState::Lost);
    println!(
        "alice's guard reports {:?}: she must stop work",
        guard.state()
    );

    // 5. Bob's waiter wakes up holding the lock, with a larger token.
    let next = within("bob to take the lock over", bob_waits).await???;
    let new_token = next.fencing_token();
    assert!(
        new_token > old_token,
        "the new token {new_token:#x} must exceed the old {old_token:#x}"
    );
    println!(
        "bob takes over: node {}, fencing token {new_token:#x} > {old_token:#x}",
        next.path()
    );
    store.write("bob", new_token)?;

    // 6. Had alice not listened to her guard, the store would still refuse
    //    her: her token is older than bob's.
    let late = store.write("alice", old_token);
    assert!(late.is_err(), "the store took a stale token");
    println!("a late write from alice: {}", late.unwrap_err());
    assert_eq!(store.writes, [("alice", old_token), ("bob", new_token)]);

    // 7. Releasing a lost guard says so; bob releases normally.
    assert_eq!(guard.release().await, Err(LockError::Lost));
    println!("alice's release() answers LockError::Lost");
    next.release().await?;
    println!("bob releases the lock");

    // The server agrees: no lock node is left, alice's session is gone.
    assert!(bob.list_children("/locks/report").await?.is_empty());
    assert!(!zk.session_ids().contains(&SessionId::from(alice_id)));
    println!("OK: the loss was reported and the lock changed hands with a larger token");
    Ok(())
}
