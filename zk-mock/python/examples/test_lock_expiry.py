"""Example: a kazoo lock whose holder's session expires is taken over.

The server expires the holder's session, as ZooKeeper does when a client
goes quiet for longer than its timeout: the holder's lock node (ephemeral)
goes, the waiter gets the lock, and the holder is told it lost its session.
`pip install zk-mock kazoo pytest`, then `pytest`.
"""

import threading

from kazoo.client import KazooClient, KazooState
from kazoo.recipe.lock import Lock


def test_the_lock_is_taken_over_when_its_holder_expires(zk_mock):
    holder = KazooClient(hosts=zk_mock.connect_string)
    waiter = KazooClient(hosts=zk_mock.connect_string)
    holder.start()
    waiter.start()
    lost = threading.Event()
    holder.add_listener(lambda state: state == KazooState.LOST and lost.set())

    assert Lock(holder, "/locks/job").acquire(timeout=5)
    taken = Lock(waiter, "/locks/job")
    assert not taken.acquire(blocking=False), "held"

    zk_mock.expire(holder.client_id[0])

    assert taken.acquire(timeout=5), "the waiter gets it once the holder's session is gone"
    assert lost.wait(5), "and the holder learns it lost its session"
    taken.release()
    for c in (holder, waiter):
        c.stop()
        c.close()
