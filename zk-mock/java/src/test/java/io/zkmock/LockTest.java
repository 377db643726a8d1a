package io.zkmock;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryOneTime;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The README's Java first test, exactly as it is there (zk-mock/lib/tests/readme.rs checks it). */
// README begin
@ExtendWith(ZkMockExtension.class)
class LockTest {
    @Test
    void theLockIsTakenOverWhenItsHolderExpires(ZkMockServer server) throws Exception {
        try (CuratorFramework holder = CuratorFrameworkFactory.newClient(server.getConnectString(), new RetryOneTime(100));
             CuratorFramework waiter = CuratorFrameworkFactory.newClient(server.getConnectString(), new RetryOneTime(100))) {
            holder.start(); waiter.start();
            assertTrue(new InterProcessMutex(holder, "/lock").acquire(5, TimeUnit.SECONDS));
            server.expireSession(holder.getZookeeperClient().getZooKeeper().getSessionId());
            assertTrue(new InterProcessMutex(waiter, "/lock").acquire(5, TimeUnit.SECONDS));
        }
    }
}
// README end
