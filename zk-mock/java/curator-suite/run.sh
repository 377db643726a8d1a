#!/usr/bin/env bash
# Curator's own recipe test suite (curator-recipes/src/test) on zk-mock's curator-test drop-in,
# or on Curator's curator-test, one JVM per test class as Curator's build runs them. It takes
# Curator's sources from a git clone (any clone of apache/curator with the release tag):
#
#   zk-mock/java/curator-suite/run.sh CURATOR_GIT [--real] [--repeat N] [--only REGEX] [--out DIR]
#
#   --real      Curator's curator-test (ZooKeeper 3.8 in the test's JVM) instead of the drop-in
#   --repeat N  run every class N times (a test that fails only sometimes shows as n/N)
#   --only RE   only the classes whose name matches RE (grep -E)
#   --tag T     the release tag (default apache-curator-5.4.0, the Debian jars' version)
#   CURATOR_SUITE_JAVA_OPTS="-Dx=y ..."   more options for the tests' JVMs
#
# It writes DIR/results.tsv (run, class, tests, failed, the failed tests) and each class's
# output to DIR/logs/. Needs what ../run-tests.sh needs, and Debian's libmockito-java and
# libcommons-math-java (a few test classes use them). TestLeaderLatch and TestCleanState use
# Awaitility, which Debian does not package: a shim of the calls they make is compiled with
# the tests.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
jars="${JAVA_JARS:-/usr/share/java}"
junit="$jars/junit-platform-console-standalone.jar"

[ $# -ge 1 ] || { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; exit 2; }
git_dir="$1"; shift
real=""; repeat=1; only="."; tag="apache-curator-5.4.0"; out="$root/target/curator-suite"
while [ $# -gt 0 ]; do
  case "$1" in
    --real) real=1 ;;
    --repeat) repeat="$2"; shift ;;
    --only) only="$2"; shift ;;
    --tag) tag="$2"; shift ;;
    --out) out="$2"; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
kind=$([ -n "$real" ] && echo curator-test || echo zk-mock)
out="$out/$kind"
rm -rf "$out"
mkdir -p "$out/src" "$out/classes" "$out/logs"

# The sources: the recipes' tests, and the one test helper of curator-framework they use.
git -C "$git_dir" archive "$tag" curator-recipes/src/test/java \
  curator-framework/src/test/java/org/apache/curator/framework/imps/TestCleanState.java | tar -x -C "$out/src"
mkdir -p "$out/src/shim/org/awaitility"
cat > "$out/src/shim/org/awaitility/Awaitility.java" <<'JAVA'
package org.awaitility;

import java.time.Duration;
import java.util.concurrent.Callable;

/** The part of Awaitility's API the tests call: await([alias])[.pollInterval(d).pollInSameThread()].until(c). */
public final class Awaitility {
    private Awaitility() {
    }

    public static Condition await() {
        return new Condition("");
    }

    public static Condition await(String alias) {
        return new Condition(alias);
    }

    public static final class Condition {
        private final String alias;
        private Duration poll = Duration.ofMillis(100);

        Condition(String alias) {
            this.alias = alias;
        }

        public Condition pollInterval(Duration d) {
            poll = d;
            return this;
        }

        public Condition pollInSameThread() {
            return this;
        }

        /** Awaitility's default: at most 10 s. */
        public void until(Callable<Boolean> condition) throws Exception {
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (!condition.call()) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("Condition with alias '" + alias + "' didn't complete within 10 seconds");
                }
                Thread.sleep(poll.toMillis());
            }
        }
    }
}
JAVA

libs="$jars/curator-recipes.jar:$jars/curator-framework.jar:$jars/curator-client.jar:$jars/zookeeper.jar:$jars/zookeeper-jute.jar:$jars/guava.jar:$jars/slf4j-api.jar:$jars/slf4j-nop.jar:$jars/mockito-core.jar:$jars/byte-buddy.jar:$jars/byte-buddy-agent.jar:$jars/objenesis.jar:$jars/commons-math.jar"
for j in ${libs//:/ } "$junit"; do
  [ -f "$j" ] || { echo "$j is missing (apt-get install junit5 libcurator-recipes-java libcurator-test-java libmockito-java libcommons-math-java)" >&2; exit 1; }
done
if [ -n "$real" ]; then
  impl="$jars/curator-test.jar"
  props=()
else
  "$root/zk-mock/java/run-tests.sh" --jar >/dev/null
  impl="$root/target/java/zk-mock-curator-test.jar:$root/target/java/zk-mock-java.jar"
  binary="${ZK_MOCK_BINARY:-$root/target/release/zk-mock}"
  [ -x "$binary" ] || { echo "no zk-mock binary at $binary (cargo build --release -p zk-mock-cli, or set ZK_MOCK_BINARY)" >&2; exit 1; }
  props=(-Dzkmock.binary="$(realpath "$binary")")
fi
cp="$out/classes:$impl:$libs"
javac -nowarn -encoding UTF-8 --release 17 -d "$out/classes" -cp "$impl:$libs:$junit" \
  $(find "$out/src" -name '*.java') 2>"$out/logs/javac.txt" || { tail -30 "$out/logs/javac.txt"; exit 1; }

classes=$(cd "$out/src/curator-recipes/src/test/java" && grep -rl '@Test' --include='Test*.java' . \
  | sed 's|^\./||; s|\.java$||; s|/|.|g' | sort | grep -E "$only" || true)
[ -n "$classes" ] || { echo "no test class matches $only" >&2; exit 1; }
printf 'run\tclass\ttests\tfailed\tfailed tests\n' > "$out/results.tsv"
total=0; failed=0
for run in $(seq 1 "$repeat"); do
  for c in $classes; do
    log="$out/logs/${c##*.}.$run.txt"
    # shellcheck disable=SC2086 # CURATOR_SUITE_JAVA_OPTS: more JVM options, split on spaces
    java "${props[@]}" ${CURATOR_SUITE_JAVA_OPTS:-} -jar "$junit" --class-path "$cp" --select-class "$c" \
      --disable-banner --disable-ansi-colors --details=tree >"$log" 2>&1 || true
    n=$(grep -E '^\[ +[0-9]+ tests found' "$log" | grep -oE '[0-9]+' | head -1 || true)
    f=$(grep -E '^\[ +[0-9]+ tests failed' "$log" | grep -oE '[0-9]+' | head -1 || true)
    names=$(grep -E "MethodSource \[className = '$c'" "$log" | sed -E "s/.*methodName = '([^']*)'.*/\1/" | sort -u | paste -sd, || true)
    printf '%s\t%s\t%s\t%s\t%s\n' "$run" "${c##*.}" "${n:-0}" "${f:-?}" "$names" >> "$out/results.tsv"
    total=$((total + ${n:-0})); failed=$((failed + ${f:-0}))
    [ "${f:-0}" = 0 ] || echo "run $run: ${c##*.}: ${f} failed: $names"
  done
done
echo "$kind: $total tests, $failed failed, over $repeat run(s); $out/results.tsv"
