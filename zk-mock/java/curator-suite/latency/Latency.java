import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.Socket;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.test.TestingServer;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

/**
 * Round trips through ZooKeeper's Java client on a {@code TestingServer}: whichever
 * curator-test is on the class path (Curator's, or zk-mock's drop-in). Each op is timed
 * alone, one after another, on one session; prints the medians and 90th percentiles. Then
 * handshakes on a raw socket (a ConnectRequest for a new session until its ConnectResponse):
 * on that server, and the first one of each of 20 new servers.
 */
public final class Latency {
    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 2000;
        try (TestingServer server = new TestingServer()) {
            CountDownLatch connected = new CountDownLatch(1);
            ZooKeeper zk = new ZooKeeper(server.getConnectString(), 30_000, e -> {
                if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                    connected.countDown();
                }
            });
            if (!connected.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("not connected");
            }
            byte[] data = new byte[10];
            zk.create("/latency", data, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            long[] create = new long[n];
            long[] setData = new long[n];
            long[] exists = new long[n];
            long[] children = new long[n];
            for (int i = 0; i < n; i++) {
                String path = "/latency/n" + i;
                long t = System.nanoTime();
                zk.create(path, data, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
                create[i] = System.nanoTime() - t;
                t = System.nanoTime();
                zk.setData(path, data, -1);
                setData[i] = System.nanoTime() - t;
                t = System.nanoTime();
                zk.exists(path, false);
                exists[i] = System.nanoTime() - t;
                t = System.nanoTime();
                zk.getChildren(path, false);
                children[i] = System.nanoTime() - t;
            }
            zk.close();
            long[] handshake = new long[Math.max(10, n / 10)];
            for (int i = 0; i < handshake.length; i++) {
                handshake[i] = handshake(server.getPort());
            }
            long[] first = new long[20];
            for (int i = 0; i < first.length; i++) {
                try (TestingServer fresh = new TestingServer()) {
                    first[i] = handshake(fresh.getPort());
                }
            }
            System.out.printf("%-16s %8s %8s%n", "op", "p50 µs", "p90 µs");
            print("create", create);
            print("setData", setData);
            print("exists", exists);
            print("getChildren", children);
            print("handshake", handshake);
            print("first handshake", first);
        }
    }

    /** A new session's handshake on a raw socket, in ns. */
    private static long handshake(int port) throws IOException {
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        DataOutputStream d = new DataOutputStream(body);
        d.writeInt(0); // protocolVersion
        d.writeLong(0); // lastZxidSeen
        d.writeInt(30_000); // timeOut
        d.writeLong(0); // sessionId
        d.writeInt(16); // passwd
        d.write(new byte[16]);
        d.writeBoolean(false); // readOnly
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setTcpNoDelay(true);
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            DataInputStream in = new DataInputStream(s.getInputStream());
            long t = System.nanoTime();
            out.writeInt(body.size());
            body.writeTo(out);
            out.flush();
            in.readFully(new byte[in.readInt()]);
            return System.nanoTime() - t;
        }
    }

    private static void print(String op, long[] ns) {
        Arrays.sort(ns);
        System.out.printf("%-16s %8d %8d%n", op, ns[ns.length / 2] / 1000, ns[ns.length * 9 / 10] / 1000);
    }
}
