#!/usr/bin/env bash
# Round-trip times of create, setData, exists and getChildren through ZooKeeper's Java client,
# one op at a time, and of a new session's handshake, on a TestingServer: Curator's (ZooKeeper
# 3.8 in the JVM) and zk-mock's curator-test drop-in, one after the other, so the two can be
# compared from one run.
#
#   zk-mock/java/curator-suite/latency/run.sh [OPS]        (default 2000 of each)
#   CURATOR_SUITE_JAVA_OPTS="-Dzkmock.commitLatencyMicros=0 -Dzkmock.connectLatencyMicros=0"
#                                                              the drop-in's options
#
# Needs what ../../run-tests.sh needs; ../program.sh builds the drop-in's jar with it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
ops="${1:-2000}"
# shellcheck source=../program.sh
source "$here/../program.sh"
zk="$jars/zookeeper.jar:$jars/zookeeper-jute.jar:$jars/slf4j-api.jar"
compile latency "$jars/curator-test.jar:$zk" "$here/Latency.java"
echo "== Curator's TestingServer (curator-test)"
java -cp "$out/latency:$jars/curator-test.jar:$jars/*" Latency "$ops" 2>/dev/null
echo "== zk-mock's drop-in TestingServer"
# shellcheck disable=SC2086
java ${CURATOR_SUITE_JAVA_OPTS:-} -Dzkmock.binary="$binary" \
  -cp "$out/latency:$out/zk-mock-curator-test.jar:$out/zk-mock-java.jar:$zk:$jars/guava.jar" Latency "$ops" 2>/dev/null
