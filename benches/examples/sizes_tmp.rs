fn main() {
    use std::mem::size_of;
    println!(
        "RequestRecord {}",
        size_of::<zk_mock::record::RequestRecord>()
    );
    println!(
        "ChangeRecord {}",
        size_of::<zk_mock::record::ChangeRecord>()
    );
    println!("WatchRecord {}", size_of::<zk_mock::record::WatchRecord>());
    println!("Node {}", size_of::<zk_mock::tree::Node>());
    println!("Option<Node> {}", size_of::<Option<zk_mock::tree::Node>>());
}
