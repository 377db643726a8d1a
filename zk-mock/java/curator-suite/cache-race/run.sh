#!/usr/bin/env bash
# The steps behind Curator 5.4's intermittent "Bad old value for change node" in
# TestCuratorCacheConsistency#testConsistencyAfterSimulation (see CacheRace.java), on a
# TestingCluster of 3: Curator's (ZooKeeper 3.8 in the JVM) and zk-mock's curator-test drop-in,
# one after the other, RUNS times each (default 3).
#
#   zk-mock/java/curator-suite/cache-race/run.sh [RUNS]
#
# Needs what ../../run-tests.sh needs; ../program.sh builds the drop-in's jar with it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
runs="${1:-3}"
# shellcheck source=../program.sh
source "$here/../program.sh"
zk="$jars/zookeeper.jar:$jars/zookeeper-jute.jar:$jars/slf4j-api.jar:$jars/slf4j-nop.jar:$jars/guava.jar"
compile cache-race "$jars/curator-test.jar:$curator:$zk" "$here/CacheRace.java"
# Each program's log (stderr) goes to $out/cache-race/<kind>.<run>.log; a program that fails
# says so, and the runs go on.
for i in $(seq 1 "$runs"); do
  echo "== run $i: Curator's TestingCluster (curator-test)"
  java -cp "$out/cache-race:$jars/curator-test.jar:$curator:$zk:$jars/commons-math.jar" CacheRace \
    2> "$out/cache-race/curator-test.$i.log" \
    || echo "RESULT the program failed (exit $?), see $out/cache-race/curator-test.$i.log"
  echo "== run $i: zk-mock's drop-in TestingCluster"
  java -Dzkmock.binary="$binary" \
    -cp "$out/cache-race:$out/zk-mock-curator-test.jar:$out/zk-mock-java.jar:$curator:$zk" CacheRace \
    2> "$out/cache-race/zk-mock.$i.log" \
    || echo "RESULT the program failed (exit $?), see $out/cache-race/zk-mock.$i.log"
done
