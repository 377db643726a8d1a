#!/usr/bin/env bash
# The steps of Curator 5.4's TestInterProcessMutex#testKilledSession, ITERATIONS times (default
# 50) with a session of SESSION_MS (default 3000), on Curator's TestingServer (curator-test) and
# on zk-mock's drop-in, one after the other (see KilledSession.java).
#
#   zk-mock/java/curator-suite/killed-session/run.sh [ITERATIONS] [SESSION_MS] [STEP_US] [curator-test|zk-mock]
#
# STEP_US (default 0, as in the Curator test) delays each iteration's injection by a further
# STEP_US microseconds, in a cycle of 30, to sweep it across the second thread's requests.
#
# Each program's output and the ZooKeeper client's debug log go to
# $out/killed-session/<kind>.log; for each iteration that did not grant the second lock, the
# script prints the client's log lines from the injection to the end of the old session's
# threads. Needs what ../../run-tests.sh needs; ../program.sh builds the drop-in's jar with it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
iterations="${1:-50}"
session="${2:-3000}"
step="${3:-0}"
only="${4:-}"
# shellcheck source=../program.sh
source "$here/../program.sh"
zk="$jars/zookeeper.jar:$jars/zookeeper-jute.jar:$jars/slf4j-api.jar:$jars/slf4j-simple.jar:$jars/guava.jar"
compile killed-session "$jars/curator-test.jar:$curator:$zk" "$here/KilledSession.java"
# slf4j-simple: time and thread on each line; the client's packets at debug, the rest quiet.
logging=(-Dorg.slf4j.simpleLogger.showDateTime=true -Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn
  -Dorg.slf4j.simpleLogger.log.org.apache.zookeeper.ClientCnxn=debug
  -Dorg.slf4j.simpleLogger.log.org.apache.zookeeper.ZooKeeperTestable=info)
run() {
  local kind="$1"; shift
  local log="$out/killed-session/$kind.log"
  echo "== $kind: $iterations iterations, session $session ms, injection delay step $step µs"
  java "${logging[@]}" "$@" KilledSession "$iterations" "$session" "$step" > "$log.out" 2> "$log" \
    || echo "RESULT the program failed (exit $?), see $log"
  grep -c 'second lock granted' "$log.out" | sed 's/$/ iterations granted the second lock/' || true
  grep -v '^iteration' "$log.out" || true
  # The client's lines for each iteration that did not grant the second lock.
  { grep '^iteration .*NOT' "$log.out" || true; } | while read -r _ n _; do
    n="${n%:}"
    echo "-- iteration $n, from the injection:"
    awk -v n="$n" '$0 ~ "KILLED-SESSION iteration " n " begins" {on=1} on && /injectSessionExpiration|Reading reply|SendThread exited|EventThread shut down|KILLED-SESSION/ {print} $0 ~ "KILLED-SESSION iteration " n " ends" {exit}' "$log" \
      | sed -n '/injectSessionExpiration/,$p' | cut -c1-400
  done
}
if [ "$only" != zk-mock ]; then
  run curator-test -cp "$out/killed-session:$jars/curator-test.jar:$curator:$zk:$jars/commons-math.jar"
fi
if [ "$only" != curator-test ]; then
  run zk-mock -Dzkmock.binary="$binary" \
    -cp "$out/killed-session:$out/zk-mock-curator-test.jar:$out/zk-mock-java.jar:$curator:$zk"
fi
