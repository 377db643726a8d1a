package org.apache.curator.test;

import java.lang.reflect.Method;
import java.util.List;

import org.apache.zookeeper.ZooKeeper;

/**
 * The watches a ZooKeeper client holds, by kind: what Curator's tests check is empty after a
 * recipe closes. This is the client's own bookkeeping (ZooKeeper's test-only accessors), so it
 * is the same whichever server the client talks to.
 */
public class WatchersDebug {
    private WatchersDebug() {
    }

    public static List<String> getDataWatches(ZooKeeper zooKeeper) {
        return call(zooKeeper, "getDataWatches");
    }

    public static List<String> getExistWatches(ZooKeeper zooKeeper) {
        return call(zooKeeper, "getExistWatches");
    }

    public static List<String> getChildWatches(ZooKeeper zooKeeper) {
        return call(zooKeeper, "getChildWatches");
    }

    @SuppressWarnings("unchecked")
    private static List<String> call(ZooKeeper zooKeeper, String accessor) {
        if (zooKeeper == null) {
            return null;
        }
        try {
            Method m = ZooKeeper.class.getDeclaredMethod(accessor);
            m.setAccessible(true);
            return (List<String>) m.invoke(zooKeeper);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("this ZooKeeper client has no " + accessor + "()", e);
        }
    }
}
