"""An ensemble through kazoo: a stale read through a lagging follower.
docs/python.md shows the marked part (a Rust test checks it)."""

# docs begin
import pytest
from kazoo.client import KazooClient


@pytest.mark.zk_mock(servers=3)
def test_a_stale_read_through_a_lagging_follower(zk_mock):
    writer = KazooClient(hosts=zk_mock.hosts[0]); writer.start()  # server 0 leads
    reader = KazooClient(hosts=zk_mock.hosts[2]); reader.start()
    with zk_mock.lagging(2, txns=1):             # server 2 applies each commit one write late
        writer.create("/config", b"v1")
        assert reader.exists("/config") is None  # a stale read
        reader.sync("/config")                   # server 2 catches up before it answers
        assert reader.get("/config")[0] == b"v1"
    writer.stop(); reader.stop()
# docs end
