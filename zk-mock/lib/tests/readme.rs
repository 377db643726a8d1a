//! The zk-mock examples of the root README.md and the guide in docs/,
//! compiled and run: each text between a pair of markers below appears
//! verbatim in the page its marker names, which a test checks.

// README begin: first test
#[tokio::test]
async fn my_code_works_against_zookeeper() {
    let zk = zk_mock::ZkMock::start().await; // free loopback port, < 1 ms
    let client = zookeeper_client::Client::connect(&zk.connect_string())
        .await
        .unwrap();
    // ... exercise your code ...
    assert_eq!(client.list_children("/").await.unwrap(), ["zookeeper"]);
} // dropping `zk` stops the server and closes every connection
  // README end

// README begin: faults
use std::time::Duration;
use zk_mock::{clock::ClockMode, fault::OpFamily, fault::Rule, ZkMock};
use zk_mock::{
    proto::ErrorCode, proto::EventType, record::NotificationQuery, record::RequestQuery,
};
use zookeeper_client::{Acls, Client, CreateMode, Error};

#[tokio::test]
async fn a_lost_reply_then_an_expiry() -> Result<(), Box<dyn std::error::Error>> {
    let zk = ZkMock::builder()
        .clock(ClockMode::Manual)
        .seed(7)
        .start()
        .await?;
    let client = Client::connect(&zk.connect_string()).await?;
    let watcher = Client::connect(&zk.connect_string()).await?;
    let id = client.session_id().0; // an i64 or a zk_mock::SessionId names a session

    // The first create under /locks/ is applied, but its reply is lost: the client
    // sees ConnectionLoss. OpFamily::Create is every create op code: create,
    // create2 (zookeeper-client's), createContainer, createTTL. Criteria first, then
    // exactly one verdict, which makes the rule: .lose_reply(), .fail(ErrorCode::…),
    // .delay(Duration), .disconnect() (before applying), .stall(), .expire().
    // Dropping the guard uninstalls the rule and checks .expect(n | range).
    let rule = Rule::when()
        .op(OpFamily::Create)
        .path_prefix("/locks/")
        .nth(1);
    let lost = zk.rule(rule.lose_reply()).expect(1);
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    client.create("/locks", &[], &open).await?;
    let (_, _, node) = watcher.get_and_watch_data("/locks").await?;
    let cut = client.create("/locks/a", b"x", &open).await;
    assert!(matches!(cut, Err(Error::ConnectionLoss)));
    assert!(
        client.check_stat("/locks/a").await?.is_some(),
        "applied all the same"
    );
    drop(lost);

    // The manual clock: the session expires when the test says so, not before.
    let (_, _, gone) = watcher.get_and_watch_data("/locks/a").await?;
    let ephemeral = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    client.create("/locks/mine", &[], &ephemeral).await?;
    zk.advance(Duration::from_secs(60));
    assert!(!zk.session_ids().contains(&id.into()));
    client.delete("/locks/a", None).await.unwrap_err(); // the client's session is gone
    drop((node, gone));

    // What the server saw, queried in place (nothing copied), with typed filters.
    let (creates, faulted, deleted) = zk.inspect(|log| {
        let creates = log.requests().by_session(id).op(OpFamily::Create);
        let faulted = log.requests().faulted().error(ErrorCode::Ok).count();
        let deleted = log.notifications().event(EventType::NodeDeleted).count();
        (creates.count(), faulted, deleted)
    });
    assert_eq!((creates, faulted, deleted), (3, 1, 0));
    println!("{}", zk.recorded()); // every request, watch and notification, in order
    println!("{}", zk.snapshot()); // tree, sessions, watches
    Ok(())
}
// README end

// README begin: ensemble
#[tokio::test]
async fn a_stale_read_through_a_lagging_follower() -> Result<(), Box<dyn std::error::Error>> {
    let zk = ZkMock::ensemble(3).await; // one connect string naming three servers
    let writer = Client::connect(&zk.server(0).connect_string()).await?;
    let reader = Client::connect(&zk.server(2).connect_string()).await?;
    zk.server(2).set_lag(zk_mock::Lag::Txns(1))?; // server 2 applies every commit one write late
    let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    writer.create("/config", b"v1", &open).await?;
    assert!(
        reader.check_stat("/config").await?.is_none(),
        "a stale read"
    );
    reader.sync("/config").await?; // server 2 catches up before it answers
    assert_eq!(reader.get_data("/config").await?.0, b"v1");
    assert_eq!(zk.server_of(reader.session_id().0), Some(2));
    zk.inspect(|log| assert_eq!(log.requests().through(2).op(OpFamily::GetData).count(), 1));
    println!("{:?}", zk.servers()); // status, leader, lag, zxid, backlog, connections
    Ok(())
}
// README end

#[test]
fn the_readme_and_the_guide_show_these_examples() {
    let this = include_str!("readme.rs");
    let pages = [
        ("README.md", include_str!("../../../README.md")),
        ("docs/rust.md", include_str!("../../../docs/rust.md")),
        ("docs/faults.md", include_str!("../../../docs/faults.md")),
        (
            "docs/ensembles.md",
            include_str!("../../../docs/ensembles.md"),
        ),
    ];
    // Which pages show which marked example. The markers are spelled so
    // that this function does not contain them.
    let shown_in = |name: &str| -> &[&str] {
        match name {
            "first test" => &["README.md", "docs/rust.md"],
            "faults" => &["docs/faults.md"],
            "ensemble" => &["docs/ensembles.md"],
            other => panic!("no page is named for the marked example {other:?}"),
        }
    };
    let (begin, end) = (
        concat!("// README ", "begin: "),
        concat!("// README ", "end"),
    );
    let examples: Vec<(&str, &str)> = this
        .split(begin)
        .skip(1)
        .filter_map(|rest| rest.split_once('\n'))
        .filter_map(|(name, body)| Some((name, body.split(end).next()?.trim_end())))
        .collect();
    assert_eq!(examples.len(), 3, "three marked examples");
    for (name, example) in examples {
        for page in shown_in(name) {
            let (_, text) = pages
                .iter()
                .find(|(p, _)| p == page)
                .expect("a listed page");
            assert!(
                text.contains(example),
                "{page} must show this part of zk-mock/lib/tests/readme.rs verbatim:\n{example}"
            );
        }
    }
}

/// The Python chapter's ensemble example is a file that CI runs with the
/// wheel's examples.
#[test]
fn the_python_chapter_shows_the_ensemble_example_that_ci_runs() {
    let file = include_str!("../../python/examples/test_ensemble.py");
    let body = file
        .split_once("# docs begin\n")
        .and_then(|(_, rest)| rest.split_once("# docs end"))
        .map(|(body, _)| body)
        .expect("test_ensemble.py marks the chapter's part");
    assert!(body.contains("def test_"), "the marked part is the test");
    assert!(
        include_str!("../../../docs/python.md").contains(body),
        "docs/python.md must show this part of zk-mock/python/examples/test_ensemble.py verbatim:\n{body}"
    );
}

/// The README's Python, Java and any-language first tests are files that CI
/// runs: the Python wheel's examples, the Java package's tests and the
/// cross-client job's shell script.
#[test]
fn the_readme_shows_the_first_tests_that_ci_runs() {
    let readme = include_str!("../../../README.md");
    let python_chapter = include_str!("../../../docs/python.md");
    for (file, text, marker) in [
        (
            "zk-mock/python/examples/test_readme.py",
            include_str!("../../python/examples/test_readme.py"),
            "# README ",
        ),
        (
            "zk-mock/java/src/test/java/io/zkmock/LockTest.java",
            include_str!("../../java/src/test/java/io/zkmock/LockTest.java"),
            "// README ",
        ),
        (
            "zk-mock/tests/clients/first_test.sh",
            include_str!("../../tests/clients/first_test.sh"),
            "# README ",
        ),
    ] {
        let body = text
            .split_once(&format!("{marker}begin\n"))
            .and_then(|(_, rest)| rest.split_once(&format!("{marker}end")))
            .map(|(body, _)| body)
            .unwrap_or_else(|| panic!("{file} marks the README's part"));
        assert!(
            body.lines().count() >= 5,
            "{file}: the marked part is the test"
        );
        assert!(
            readme.contains(body),
            "README.md must show this part of {file} verbatim:\n{body}"
        );
        if file.ends_with(".py") {
            assert!(
                python_chapter.contains(body),
                "docs/python.md must show this part of {file} verbatim:\n{body}"
            );
        }
    }
}
