//! A fault rule loses the reply to a create: the server applies the create,
//! then closes the connection without answering. The client sees
//! ConnectionLoss although the node exists, and the recorder shows the
//! faulted request. The program then shows how a client recovers: it finds
//! out whether its own create was applied instead of blindly retrying it.
//!
//! Run it from the workspace root:
//!
//! ```sh
//! cargo run --example lost_reply
//! ```
//!
//! It exits 0 only if every step below really happened, non-zero otherwise.

use std::error::Error;
use std::time::Duration;

use zk_mock::fault::{OpFamily, Rule};
use zk_mock::proto::ErrorCode;
use zk_mock::record::RequestQuery;
use zk_mock::ZkMock;
use zookeeper_client::{Acls, Client, CreateMode, CreateOptions};

/// A safety net for the one wait below, not a pacing device.
const LIMIT: Duration = Duration::from_secs(5);

/// How [`create_once`] ended.
#[derive(Debug, PartialEq, Eq)]
enum Created {
    /// This call's create was answered.
    Created,
    /// A create whose reply was lost had been applied: the node holds this
    /// writer's data.
    AppliedDespiteLostReply,
}

/// Creates `path` holding `data` once, whatever replies are lost: a retry
/// after ConnectionLoss that answers NodeExists is a success if the node
/// holds what this writer wrote (a persistent node does not say which
/// session made it: its data, or a version check, must). Call it again
/// after a ConnectionLoss, as below, or loop on it.
async fn create_once(
    client: &Client,
    path: &str,
    data: &[u8],
    options: &CreateOptions<'_>,
) -> Result<Created, Box<dyn Error>> {
    match client.create(path, data, options).await {
        Ok(_) => Ok(Created::Created),
        Err(zookeeper_client::Error::NodeExists) => {
            let (there, _) = client.get_data(path).await?;
            if there == data {
                Ok(Created::AppliedDespiteLostReply)
            } else {
                Err(format!("{path} exists, written by someone else").into())
            }
        }
        Err(e) => Err(e.into()),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    // A fixed seed: a failure message names it, and it replays the run.
    let zk = ZkMock::builder().seed(7).start().await?;
    let client = Client::connect(&zk.connect_string()).await?;
    let session = client.session_id();
    println!(
        "zk-mock on {}, client session {:#x}",
        zk.connect_string(),
        session.0
    );

    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    client.create("/jobs", &[], &persistent).await?;

    // ---------------------------------------------------------------------
    // Part 1: a plain create whose reply is lost.
    // ---------------------------------------------------------------------
    // The rule: criteria first (every create op code, paths under /jobs/,
    // the first such request only), then one verdict. The guard uninstalls
    // the rule when dropped and checks then that it fired exactly once.
    let rule = Rule::when()
        .op(OpFamily::Create)
        .path_prefix("/jobs/")
        .nth(1)
        .lose_reply();
    println!("installed a rule: the first create under /jobs/ loses its reply");
    let lost = zk.rule(rule).expect(1);

    // The data says who wrote it, so that the writer can recognise its own
    // node later.
    let mine = format!("report by session {:#x}", session.0);
    let first = client
        .create("/jobs/report", mine.as_bytes(), &persistent)
        .await;
    println!("create /jobs/report -> {first:?}");
    assert!(
        matches!(first, Err(zookeeper_client::Error::ConnectionLoss)),
        "expected ConnectionLoss, got {first:?}"
    );
    assert_eq!(lost.fired(), 1);
    drop(lost);

    // ConnectionLoss means "I don't know": the create may or may not have
    // been applied. Here it was. The client reconnects on its own, with the
    // same session, and the next request goes through.
    let seen = client.check_stat("/jobs/report").await?;
    assert!(seen.is_some(), "the create was applied all the same");
    assert_eq!(client.session_id(), session, "the session survived");
    println!("the node exists all the same (the client reconnected to the same session)");

    // Recovery: what the client should do after the ConnectionLoss.
    let how = create_once(&client, "/jobs/report", mine.as_bytes(), &persistent).await?;
    println!(
        "recovery: the retry answers NodeExists and the node holds our data: \
         our create was applied ({how:?})"
    );
    assert_eq!(how, Created::AppliedDespiteLostReply);

    // ---------------------------------------------------------------------
    // Part 2: an ephemeral-sequential create whose reply is lost.
    // ---------------------------------------------------------------------
    // This is the dangerous case (a lock recipe's create): the server picks
    // the name, so a blind retry leaves a second node, and an orphaned
    // ephemeral node blocks a lock for as long as its session lives. The recovery
    // Curator's "protected" mode uses: put a marker unique to this attempt
    // in the name, and after ConnectionLoss look for a child bearing it.
    let lost = zk
        .rule(
            Rule::when()
                .op(OpFamily::Create)
                .path_prefix("/jobs/worker-")
                .nth(1)
                .lose_reply(),
        )
        .expect(1);
    let ephemeral_seq = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let marker = format!("worker-{:x}-attempt1-", session.0);
    let answer = client
        .create(&format!("/jobs/{marker}"), &[], &ephemeral_seq)
        .await;
    println!("create /jobs/{marker}<seq> (ephemeral, sequential) -> {answer:?}");
    assert!(
        matches!(answer, Err(zookeeper_client::Error::ConnectionLoss)),
        "expected ConnectionLoss, got {answer:?}"
    );
    drop(lost);

    // Recovery: list the children and find ours by the marker; check that
    // it belongs to this session (ephemeralOwner) before adopting it.
    let children = client.list_children("/jobs").await?;
    let ours: Vec<&String> = children.iter().filter(|c| c.starts_with(&marker)).collect();
    assert_eq!(
        ours.len(),
        1,
        "exactly one node of this attempt: {children:?}"
    );
    let path = format!("/jobs/{}", ours[0]);
    let stat = client.check_stat(&path).await?.ok_or("the node vanished")?;
    assert_eq!(stat.ephemeral_owner, session.0, "owned by this session");
    println!(
        "recovery: found {path}, ephemeral owner {:#x}: adopt it, do not create another",
        stat.ephemeral_owner
    );

    // ---------------------------------------------------------------------
    // What the server saw.
    // ---------------------------------------------------------------------
    // Every request is recorded with the verdict of the rule that acted on
    // it. `wait_until` checks over the live log, without sleeping.
    zk.wait_until(LIMIT, |log| log.requests().faulted().count() == 2)
        .await?;
    let faulted = zk.inspect(|log| {
        log.requests()
            .faulted()
            .map(|r| {
                (
                    r.op,
                    r.path.clone().unwrap_or_default(),
                    r.err,
                    r.zxid,
                    r.verdict.clone().unwrap_or_default(),
                )
            })
            .collect::<Vec<_>>()
    });
    println!("the recorder's faulted requests:");
    for (op, path, err, zxid, verdict) in &faulted {
        println!("  {op} {path} err={err} zxid={zxid:#x} [{verdict}]");
    }
    assert_eq!(faulted.len(), 2);
    // Both were applied (error 0, a transaction's zxid) though never answered.
    assert!(faulted
        .iter()
        .all(|(_, _, err, zxid, _)| *err == ErrorCode::Ok as i32 && *zxid > 0));
    assert_eq!(faulted[0].1, "/jobs/report");
    assert_eq!(faulted[1].1, format!("/jobs/{marker}"));
    // The client's creates under /jobs/: the two lost ones and the retry.
    let creates = zk.inspect(|log| {
        log.requests()
            .by_session(session.0)
            .op(OpFamily::Create)
            .under("/jobs/")
            .count()
    });
    assert_eq!(creates, 3);
    println!("OK: two replies lost, both creates applied, and the client found both");
    Ok(())
}
