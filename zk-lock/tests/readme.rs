//! The zk-lock example of the guide's zk-lock chapter (docs/zk-lock.md),
//! compiled and run: the text between the markers below appears verbatim
//! there, which a test checks.

// README begin
use std::time::Duration;
use zk_lock::{GuardState, Lock, LockError, Strategy};

#[tokio::test]
async fn a_holder_hears_of_its_loss_and_the_next_one_takes_over(
) -> Result<(), Box<dyn std::error::Error>> {
    let zk = zk_mock::ZkMock::start().await;
    let alice = zookeeper_client::Client::connect(&zk.connect_string()).await?;
    let bob = zookeeper_client::Client::connect(&zk.connect_string()).await?;

    // One builder for every lock: .strategy(Predecessor | Herd | Naive),
    // .layout(Curator | Kazoo) node names, .reentrant(true); then .build()
    // for a mutex or .read_write() for a read/write lock.
    let mine = Lock::builder(alice.clone(), "/locks/report").build()?;
    let theirs = Lock::builder(bob.clone(), "/locks/report")
        .strategy(Strategy::Predecessor)
        .build()?;

    let guard = mine.acquire().await?;
    let token = guard.fencing_token(); // the lock node's czxid: pass it to the resource
    assert!(theirs.try_acquire().await?.is_none());
    let waiting =
        tokio::spawn(async move { theirs.acquire_timeout(Duration::from_secs(10)).await });

    // The server expires alice's session: her guard hears of it...
    zk.expire_session(alice.session_id().0);
    guard.lost().await;
    assert_eq!(guard.state(), GuardState::Lost);
    assert_eq!(guard.release().await, Err(LockError::Lost));
    // ...and bob's waiter takes over, with a larger fencing token.
    let next = waiting.await??;
    assert!(next.fencing_token() > token);
    next.release().await?;

    // Readers share; a writer waits for them. Both sides are Locks.
    let table = Lock::builder(bob, "/locks/table").read_write()?;
    let r1 = table.read().await?;
    let r2 = table.reader().try_acquire().await?.expect("readers share");
    assert!(table.writer().try_acquire().await?.is_none());
    r1.release().await?;
    r2.release().await?;
    table.write().await?.release().await?;
    Ok(())
}
// README end

#[test]
fn the_guide_shows_this_example() {
    let this = include_str!("readme.rs");
    let page = include_str!("../../docs/zk-lock.md");
    let example = this
        .split("// README begin\n")
        .nth(1)
        .and_then(|rest| rest.split("// README end").next())
        .expect("markers");
    assert!(
        page.contains(example),
        "docs/zk-lock.md must show zk-lock/tests/readme.rs between its markers, verbatim"
    );
}
