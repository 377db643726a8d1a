#!/usr/bin/env bash
# A newcomer's first Rust test, from the README alone: a fresh crate outside
# this workspace whose Cargo.toml has the README's [dev-dependencies] (its
# path pointing at this clone, as the README says) and whose tests/zk.rs is
# the README's first Rust test, run with `cargo test`.
#
#   bash zk-mock/tests/first_rust_test.sh      (CI runs it)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
# The README's path is "../zk-mock/zk-mock/lib": the clone beside the crate.
ln -s "$root" "$dir/zk-mock"
mkdir -p "$dir/mycrate/src" "$dir/mycrate/tests"
section="$(sed -n '/^#### Rust$/,/^#### Python$/p' "$root/README.md")"
{
  printf '[package]\nname = "mycrate"\nversion = "0.1.0"\nedition = "2021"\n\n'
  printf '%s\n' "$section" | sed -n '/^```toml$/,/^```$/p' | sed '1d;$d'
} >"$dir/mycrate/Cargo.toml"
printf '%s\n' "$section" | sed -n '/^```rust$/,/^```$/p' | sed '1d;$d' >"$dir/mycrate/tests/zk.rs"
: >"$dir/mycrate/src/lib.rs"
grep -q 'async fn' "$dir/mycrate/tests/zk.rs" || { echo "no Rust test found in the README's Rust section" >&2; exit 1; }
grep -q 'zk-mock' "$dir/mycrate/Cargo.toml" || { echo "no [dev-dependencies] found in the README's Rust section" >&2; exit 1; }
cd "$dir/mycrate"
# The workspace's target directory: the crates it shares are built once.
CARGO_TARGET_DIR="$root/target" cargo test --test zk
