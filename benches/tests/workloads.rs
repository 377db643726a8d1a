//! The bench workloads themselves, small, on the embedded mock: the
//! settled lock experiment costs exactly what each recipe's design says.

use benches::{connect_many, fanout, lock_experiment, op_workload, Op, Pace, Recipe, Server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settled_hand_offs_cost_what_the_design_says() {
    let server = Server::mock().await.unwrap();
    for (i, recipe) in Recipe::ALL.into_iter().enumerate() {
        let n = 8;
        let run = lock_experiment(&server, recipe, n, &format!("/t/{i}"), Pace::Settled)
            .await
            .unwrap();
        let want = if recipe.is_herd() {
            n * (n - 1) / 2
        } else {
            n - 1
        } as u64;
        assert_eq!(run.server_notifications, Some(want), "{}", recipe.name());
        assert_eq!(run.client_notifications, want, "{}", recipe.name());
        assert_eq!(run.handoffs.len(), n - 1);
        if matches!(recipe, Recipe::Herd | Recipe::RwHerd) {
            // Each woken waiter lists the children once: N(N−1)/2 reads.
            assert_eq!(run.children_reads, want, "{}", recipe.name());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn op_workloads_and_fanout_complete() {
    let server = Server::mock().await.unwrap();
    let clients = connect_many(&server.connect_string(), 4).await.unwrap();
    for op in Op::ALL {
        let run = op_workload(&clients, op, 25).await.unwrap();
        assert_eq!(run.ops, 100, "{}", op.name());
        assert_eq!(run.latencies.len(), 100);
    }
    let watchers = connect_many(&server.connect_string(), 50).await.unwrap();
    fanout(&watchers, &clients[0]).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_storm_and_fanout_reach_every_session_and_count_server_cpu() {
    let server = Server::mock().await.unwrap();
    let addr = server.connect_string().parse().unwrap();
    let cpu_before = server.cpu_time();
    let (_, mut watchers) = benches::raw_connect_storm(addr, 100).await.unwrap();
    assert_eq!(watchers.len(), 100);
    let mock = server.mock_handle().unwrap();
    assert_eq!(mock.session_ids().len(), 100);
    let mut writer = zk_mock::client::RawClient::connect(addr, 30_000)
        .await
        .unwrap();
    mock.clear_recording();
    benches::raw_fanout(&mut watchers, &mut writer)
        .await
        .unwrap();
    // Every watcher was told, once, of the one change.
    assert_eq!(mock.notifications().count(), 100);
    if cfg!(target_os = "linux") {
        // The server thread did the work, and it is counted.
        assert!(server.cpu_time() > cpu_before);
    }
}

/// The floor answers every op workload through the real client, as a
/// server would, and its CPU is measured the same way as the mock's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_floor_serves_every_op_workload() {
    let floor = Server::floor().unwrap();
    assert_eq!(floor.name(), "floor");
    let clients = connect_many(&floor.connect_string(), 4).await.unwrap();
    let before = floor.cpu_time();
    for op in Op::ALL {
        let run = op_workload(&clients, op, 50).await.unwrap();
        assert_eq!(run.ops, 200, "{}", op.name());
    }
    let data = clients[0].get_data("/anything").await.unwrap();
    assert_eq!(data.0.len(), 100, "a reply of the usual size");
    assert_eq!(clients[0].list_children("/x").await.unwrap().len(), 10);
    assert!(floor.cpu_time() > before, "the floor's thread is measured");
    let refused = lock_experiment(&floor, Recipe::Predecessor, 2, "/l", Pace::Immediate).await;
    assert!(refused.is_err(), "no lock runs on a server without a tree");
}
