"""Example: a create whose reply is lost.

The server applies the create, then closes the connection without
answering: the client sees ConnectionLoss and cannot know whether the node
was made. Code that retries a create blindly meets NodeExistsError; code
that handles it stays correct. `pip install zk-mock kazoo pytest`, then `pytest`.
"""

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NodeExistsError


def create_once(client, path):
    """Creates `path` unless it exists: safe to retry after a lost reply."""
    try:
        client.retry(client.create, path, b"")
    except NodeExistsError:
        pass


def test_a_lost_reply_on_create(zk_mock):
    client = KazooClient(hosts=zk_mock.connect_string)
    client.start()
    rule = zk_mock.rule(ops="create", path="/jobs/1", lose_reply=True, times=1)
    client.ensure_path("/jobs")

    with pytest.raises(ConnectionLoss):
        client.create("/jobs/1", b"")
    assert rule.fired == 1

    create_once(client, "/jobs/1")   # the retry finds the node the lost reply made
    assert client.exists("/jobs/1") is not None
    # One create reached the server and succeeded, the retry was refused.
    creates = [r for r in zk_mock.requests(path="/jobs/1") if r["op"] == "create"]
    assert [r["err"] for r in creates] == [0, -110]
    client.stop()
    client.close()
