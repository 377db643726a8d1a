#!/usr/bin/env bash
# Builds the io.zkmock jar with javac and jar against Debian's jars (there is
# no Maven needed; pom.xml is for publishing), then runs its tests with
# the JUnit 5 console launcher: Curator 5.4 (libcurator-recipes-java,
# libcurator-test-java) against the zk-mock binary and against Curator's own
# TestingServer.
#
#   zk-mock/java/run-tests.sh [path/to/zk-mock]     (default: target/release/zk-mock if it
#                                                  was built, else zk-mock on PATH)
#   zk-mock/java/run-tests.sh --jar                 (only target/java/zk-mock-java.jar;
#                                                  needs junit5 alone)
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
if [ -n "$jar_only" ]; then
  build_jar
  echo "$out/zk-mock-java.jar"
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
