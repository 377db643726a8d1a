# Sourced by the scripts that run one Java program on Curator's curator-test and on zk-mock's
# drop-in (latency/run.sh, cache-race/run.sh, killed-session/run.sh). Builds the drop-in's jars
# (../run-tests.sh --jar) and the zk-mock binary if it is missing, and sets:
#   root     the repository
#   jars     Debian's Java jars (JAVA_JARS, default /usr/share/java)
#   out      where the drop-in's jars are, and where a program's classes go
#   binary   the zk-mock binary the drop-in runs (ZK_MOCK_BINARY, default target/release/zk-mock)
#   curator  Curator's client, framework and recipes jars, as a class path
# and defines `compile NAME CLASSPATH FILE`, which compiles FILE into $out/NAME.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
jars="${JAVA_JARS:-/usr/share/java}"
out="$root/target/java"
bash "$root/zk-mock/java/run-tests.sh" --jar > /dev/null
binary="${ZK_MOCK_BINARY:-$root/target/release/zk-mock}"
[ -x "$binary" ] || cargo build --release -q -p zk-mock-cli --manifest-path "$root/Cargo.toml"
curator="$jars/curator-recipes.jar:$jars/curator-framework.jar:$jars/curator-client.jar"
compile() {
  mkdir -p "$out/$1"
  javac -encoding UTF-8 --release 17 -proc:none -d "$out/$1" -cp "$2" "$3"
}
