#!/usr/bin/env bash
# The steps behind Curator 5.4's intermittent "Bad old value for change node" in
# TestCuratorCacheConsistency#testConsistencyAfterSimulation (see CacheRace.java), on a
# TestingCluster of 3: Curator's (ZooKeeper 3.8 in the JVM) and zk-mock's curator-test drop-in,
# one after the other, RUNS times each (default 3).
#
#   zk-mock/java/curator-suite/cache-race/run.sh [RUNS]
#
# Needs what ../../run-tests.sh needs; it builds the drop-in's jar with it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
jars="${JAVA_JARS:-/usr/share/java}"
runs="${1:-3}"
out="$root/target/java"
bash "$root/zk-mock/java/run-tests.sh" --jar > /dev/null
binary="${ZK_MOCK_BINARY:-$root/target/release/zk-mock}"
[ -x "$binary" ] || cargo build --release -q -p zk-mock-cli --manifest-path "$root/Cargo.toml"
curator="$jars/curator-recipes.jar:$jars/curator-framework.jar:$jars/curator-client.jar"
zk="$jars/zookeeper.jar:$jars/zookeeper-jute.jar:$jars/slf4j-api.jar:$jars/slf4j-nop.jar:$jars/guava.jar"
mkdir -p "$out/cache-race"
javac -encoding UTF-8 --release 17 -proc:none -d "$out/cache-race" -cp "$jars/curator-test.jar:$curator:$zk" \
  "$here/CacheRace.java"
for i in $(seq 1 "$runs"); do
  echo "== run $i: Curator's TestingCluster (curator-test)"
  java -cp "$out/cache-race:$jars/curator-test.jar:$curator:$zk:$jars/commons-math.jar" CacheRace 2>/dev/null \
    | grep -v '^\s*at '
  echo "== run $i: zk-mock's drop-in TestingCluster"
  java -Dzkmock.binary="$binary" \
    -cp "$out/cache-race:$out/zk-mock-curator-test.jar:$out/zk-mock-java.jar:$curator:$zk" CacheRace 2>/dev/null
done
