"""The README's first Python test, exactly as it is there (a Rust test in
zk-mock/lib/tests/readme.rs checks that the README shows it verbatim)."""

# README begin
from kazoo.client import KazooClient
from kazoo.recipe.lock import Lock

def test_the_lock_is_taken_over_when_its_holder_expires(zk_mock):
    holder = KazooClient(hosts=zk_mock.connect_string); holder.start()
    waiter = KazooClient(hosts=zk_mock.connect_string); waiter.start()
    assert Lock(holder, "/lock").acquire(timeout=5)
    zk_mock.expire(holder.client_id[0])          # the server expires the holder's session
    assert Lock(waiter, "/lock").acquire(timeout=5)
    holder.stop(); waiter.stop()
# README end
