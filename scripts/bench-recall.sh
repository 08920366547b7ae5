#!/usr/bin/env bash
# Measures `recall` on the long session shape of scripts/bench-open.sh: 270 MB / 100k entries,
# compacted, so nearly every entry is outside the view and in recall's scope. Prints the time to
# open and render, the scope, and the median and slowest time of a query and of an entry lookup
# by id (crates/engine/examples/recall_timing.rs). The figures are in docs/performance.md.
#
# Usage: scripts/bench-recall.sh [RUNS]   (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
target="${CARGO_TARGET_DIR:-target}"
cargo build --release -q -p codewhale-journal --example gen_session
cargo build --release -q -p codewhale-engine --example recall_timing
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
file="$work/recall.jsonl"
"$target/release/examples/gen_session" "$file" recall "$work" 270 100000 5000 2> /dev/null
printf '%s bytes\n' "$(stat -c %s "$file")"
"$target/release/examples/recall_timing" "$file" "failing test in module 42 regression" "$runs"
