"""kazoo against a zk-mock binary: the API and the recipes most suites use.

Usage: python3 kazoo_smoke.py HOST:PORT
Prints one line per check and exits non-zero on the first failure.
"""
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import (BadVersionError, NoAuthError, NodeExistsError,
                              NoNodeError, NotEmptyError)
from kazoo.protocol.states import EventType
from kazoo.security import make_digest_acl

hosts = sys.argv[1]


def check(name, cond):
    if not cond:
        print("FAIL", name)
        sys.exit(1)
    print("ok", name)


def wait_for(pred, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.01)
    return False


zk = KazooClient(hosts=hosts, timeout=10)
zk.start(timeout=10)
check("connected", zk.connected)
check("server version is 3.8", zk.server_version()[:2] == (3, 8))

# CRUD, versions and stats
zk.ensure_path("/k/a/b")
path = zk.create("/k/data", b"v1")
check("create returns the path", path == "/k/data")
data, stat = zk.get("/k/data")
check("get", data == b"v1" and stat.version == 0)
stat = zk.set("/k/data", b"v2", version=0)
check("set bumps the version", stat.version == 1)
try:
    zk.set("/k/data", b"v3", version=0)
    check("stale version refused", False)
except BadVersionError:
    check("stale version refused", True)
try:
    zk.create("/k/data", b"")
    check("duplicate refused", False)
except NodeExistsError:
    check("duplicate refused", True)
try:
    zk.delete("/k/a")
    check("non-empty delete refused", False)
except NotEmptyError:
    check("non-empty delete refused", True)
seq = [zk.create("/k/seq-", b"", sequence=True) for _ in range(3)]
first = int(seq[0][-10:])
check("sequential names", seq == ["/k/seq-%010d" % (first + i) for i in range(3)])
path, stat = zk.create("/k/withstat", b"x", include_data=True)
check("create2 stat", stat.data_length == 1 and stat.czxid == stat.mzxid)
zk.delete("/k/a", recursive=True)
check("recursive delete", zk.exists("/k/a") is None)
check("get_children", sorted(zk.get_children("/k"))[:2] == ["data", seq[0][3:]])

# Ephemerals die with the session
other = KazooClient(hosts=hosts, timeout=10)
other.start(timeout=10)
other.create("/k/eph", b"", ephemeral=True)
check("ephemeral owner", zk.exists("/k/eph").ephemeralOwner == other.client_id[0])
other.stop()
other.close()
check("ephemeral gone after close", zk.exists("/k/eph") is None)

# Watches: one-shot, DataWatch, ChildrenWatch
events = []
zk.exists("/k/w", watch=lambda e: events.append(e))
zk.create("/k/w", b"")
check("exists watch fires NodeCreated", wait_for(lambda: events and events[0].type == EventType.CREATED))
seen = []
zk.DataWatch("/k/w", lambda data, stat: seen.append(data))
zk.set("/k/w", b"changed")
check("DataWatch sees the change", wait_for(lambda: b"changed" in seen))
kids = []
zk.ChildrenWatch("/k/w", lambda c: kids.append(sorted(c)))
zk.create("/k/w/c1", b"")
check("ChildrenWatch sees the child", wait_for(lambda: ["c1"] in kids))

# getChildren2 and sync
children, stat = zk.get_children("/k/w", include_data=True)
check("get_children with stat", children == ["c1"] and stat.numChildren == 1)
check("sync", zk.sync("/k/w") == "/k/w")

# Transactions
t = zk.transaction()
t.create("/k/t1", b"1")
t.check("/k/w", 1)
t.set_data("/k/w", b"t")
results = t.commit()
check("transaction commits", results[0] == "/k/t1" and results[2].version == 2)
t = zk.transaction()
t.create("/k/t2", b"")
t.delete("/k/missing")
results = t.commit()
check("failed transaction rolls back", zk.exists("/k/t2") is None
      and isinstance(results[1], NoNodeError))

# ACLs and digest auth
acl = make_digest_acl("alice", "pw", all=True)
auth = KazooClient(hosts=hosts, timeout=10, auth_data=[("digest", "alice:pw")])
auth.start(timeout=10)
auth.create("/k/private", b"secret", acl=[acl])
try:
    zk.get("/k/private")
    check("NoAuth without credentials", False)
except NoAuthError:
    check("NoAuth without credentials", True)
check("read with credentials", auth.get("/k/private")[0] == b"secret")
acls, _ = auth.get_acls("/k/private")
check("get_acls", acls[0].id.scheme == "digest" and acls[0].id.id.startswith("alice:"))
auth.stop()
auth.close()

# Recipes: Lock, Counter, Election, Barrier, Semaphore, Queue, Party
lock = zk.Lock("/k/lock", "me")
check("lock acquired", lock.acquire(timeout=5))
contender = KazooClient(hosts=hosts, timeout=10)
contender.start(timeout=10)
other_lock = contender.Lock("/k/lock", "them")
got = []
thread = threading.Thread(target=lambda: got.append(other_lock.acquire(timeout=10)))
thread.start()
check("contender listed", wait_for(lambda: len(lock.contenders()) == 2))
lock.release()
thread.join()
check("lock handed over", got == [True])
other_lock.release()
counter = zk.Counter("/k/counter")
counter += 5
counter -= 2
check("counter", counter.value == 3)
sem = zk.Semaphore("/k/sem", max_leases=2)
check("semaphore", sem.acquire(timeout=5))
sem.release()
q = zk.Queue("/k/queue")
q.put(b"one")
q.put(b"two")
check("queue order", q.get() == b"one" and q.get() == b"two")
party = zk.Party("/k/party", "me")
party.join()
check("party", len(party) == 1)
party.leave()
barrier = zk.Barrier("/k/barrier")
barrier.create()
released = []
thread = threading.Thread(target=lambda: released.append(barrier.wait(timeout=10)))
thread.start()
barrier.remove()
thread.join()
check("barrier", released == [True])
election = zk.Election("/k/election", "me")
won = []
election.run(lambda: won.append(True))
check("election", won == [True])
contender.stop()
contender.close()

check("server_version via srvr", zk.command(b"ruok") == "imok")
zk.stop()
zk.close()
print("kazoo smoke: all checks passed")
