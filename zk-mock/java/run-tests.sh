#!/usr/bin/env bash
# Builds the io.zkmock jar with javac and jar against Debian's jars (there is
# no Maven needed; pom.xml is for publishing), then runs its tests with
# the JUnit 5 console launcher: Curator 5.4 (libcurator-recipes-java,
# libcurator-test-java) against the zk-mock binary and against Curator's own
# TestingServer.
#
#   zk-mock/java/run-tests.sh [path/to/zk-mock]     (default: target/release/zk-mock if it
#                                                  was built, else zk-mock on PATH)
#   zk-mock/java/run-tests.sh --jar                 (only the jars: target/java/zk-mock-java.jar,
#                                                  which needs junit5 alone, and, when ZooKeeper's
#                                                  jars are there, zk-mock-curator-test.jar)
#   zk-mock/java/run-tests.sh --start-cost [RUNS]   (ZkMockServer against TestingServer,
#                                                  start to first connected client)
#
# Needs a JDK 17+, junit5, libcurator-recipes-java and libcurator-test-java.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
jars="${JAVA_JARS:-/usr/share/java}"
out="$root/target/java"
junit="$jars/junit-platform-console-standalone.jar"
jar_only=""
start_cost=""
case "${1:-}" in
  --jar) jar_only=1; set -- ;;
  --start-cost) start_cost="${2:-20}"; set -- ;;
esac
[ -f "$junit" ] || { echo "$junit is missing (apt-get install junit5)" >&2; exit 1; }

build_jar() {
  rm -rf "$out"
  mkdir -p "$out/classes" "$out/test-classes"
  javac -encoding UTF-8 -Xlint:all,-serial -Werror --release 17 -d "$out/classes" -cp "$junit" \
    "$here"/src/main/java/io/zkmock/*.java
  jar --create --file "$out/zk-mock-java.jar" -C "$out/classes" .
}
# The curator-test drop-in: org.apache.curator.test.* on zk-mock, against ZooKeeper's jars
# and JUnit's API (as curator-test is).
build_curator_test_jar() {
  mkdir -p "$out/curator-test-classes"
  javac -encoding UTF-8 -Xlint:all,-serial,-processing,-path -Werror --release 17 -d "$out/curator-test-classes" \
    -cp "$out/zk-mock-java.jar:$jars/zookeeper.jar:$jars/zookeeper-jute.jar:$junit" \
    $(find "$here/curator-test/src/main/java" -name '*.java')
  jar --create --file "$out/zk-mock-curator-test.jar" -C "$out/curator-test-classes" .
}
if [ -n "$jar_only" ]; then
  build_jar
  echo "$out/zk-mock-java.jar"
  if [ -f "$jars/zookeeper.jar" ] && [ -f "$jars/zookeeper-jute.jar" ]; then
    build_curator_test_jar
    echo "$out/zk-mock-curator-test.jar"
  else
    echo "(no zk-mock-curator-test.jar: it needs ZooKeeper's jars, apt-get install zookeeper)" >&2
  fi
  exit 0
fi

if [ -n "${1:-}" ]; then
  binary="$1"
elif [ -x "$root/target/release/zk-mock" ]; then
  binary="$root/target/release/zk-mock"
else
  binary="$(command -v zk-mock || true)"
fi
[ -n "$binary" ] && [ -x "$binary" ] || {
  echo "no zk-mock binary (looked at ${1:-$root/target/release/zk-mock and PATH}); cargo install --path zk-mock, or pass its path" >&2
  exit 1
}
binary="$(realpath "$binary")"
for j in curator-test curator-recipes curator-framework curator-client zookeeper zookeeper-jute guava slf4j-api; do
  [ -f "$jars/$j.jar" ] || { echo "$jars/$j.jar is missing (apt-get install junit5 libcurator-recipes-java libcurator-test-java)" >&2; exit 1; }
done
# One slf4j binding, listed on its own (/usr/share/java holds several).
deps="$jars/curator-test.jar:$jars/curator-recipes.jar:$jars/curator-framework.jar:$jars/curator-client.jar:$jars/zookeeper.jar:$jars/zookeeper-jute.jar:$jars/guava.jar:$jars/slf4j-api.jar"
if [ -f "$jars/slf4j-nop.jar" ]; then deps="$deps:$jars/slf4j-nop.jar"; fi

build_jar
javac -encoding UTF-8 --release 17 -d "$out/test-classes" -cp "$out/zk-mock-java.jar:$junit:$deps" \
  "$here"/src/test/java/io/zkmock/*.java
if [ -n "$start_cost" ]; then
  cp="$out/test-classes:$out/zk-mock-java.jar:$deps"
  java -Dzkmock.binary="$binary" -cp "$cp" io.zkmock.StartCost zk-mock "$start_cost" header
  java -Dzkmock.binary="$binary" -cp "$cp" io.zkmock.StartCost testing-server "$start_cost"
  exit 0
fi
java -Dzkmock.binary="$binary" -jar "$junit" \
  --class-path "$out/test-classes:$out/zk-mock-java.jar:$deps" \
  --scan-class-path --disable-banner --disable-ansi-colors --details=tree --fail-if-no-tests

# The drop-in's tests: compiled once against the drop-in, then run with it in place of
# curator-test, and with Curator's own curator-test (all but the drop-in's own additions).
build_curator_test_jar
mkdir -p "$out/curator-test-tests"
no_curator_test="${deps#"$jars/curator-test.jar:"}"
javac -encoding UTF-8 --release 17 -d "$out/curator-test-tests" \
  -cp "$out/zk-mock-curator-test.jar:$out/zk-mock-java.jar:$junit:$no_curator_test" \
  $(find "$here/curator-test/src/test/java" -name '*.java')
echo "== curator-test's API on zk-mock's drop-in"
java -Dzkmock.binary="$binary" -Dcurator.test.jar=zk-mock-curator-test.jar -jar "$junit" \
  --class-path "$out/curator-test-tests:$out/zk-mock-curator-test.jar:$out/zk-mock-java.jar:$no_curator_test" \
  --scan-class-path --disable-banner --disable-ansi-colors --details=tree --fail-if-no-tests
echo "== the same tests on Curator's curator-test"
java -Dcurator.test.jar="$(basename "$(realpath "$jars/curator-test.jar")")" -jar "$junit" \
  --class-path "$out/curator-test-tests:$deps" --exclude-tag zk-mock-only \
  --scan-class-path --disable-banner --disable-ansi-colors --details=tree --fail-if-no-tests
