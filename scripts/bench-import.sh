#!/usr/bin/env bash
# Times `codewhale import` of a generated Claude Code session (default 100 MB): wall time and
# peak memory (max RSS) over N runs, release build. The figures are in docs/performance.md.
#
# Usage: scripts/bench-import.sh [MEGABYTES] [RUNS]   (defaults 100 and 5)
set -euo pipefail
cd "$(dirname "$0")/.."
mb="${1:-100}"
runs="${2:-5}"

cargo build --release -q -p codewhale-tui --bin codewhale
cargo build --release -q -p codewhale-import --example gen_claude
target="${CARGO_TARGET_DIR:-target}"
bin="$target/release/codewhale"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/ws"
"$target/release/examples/gen_claude" "$work/source.jsonl" "$mb"
size=$(stat -c %s "$work/source.jsonl")

walls=(); rss=()
for i in $(seq "$runs"); do
  rm -rf "$work/home"
  start=$(date +%s%N)
  (cd "$work/ws" && CODEWHALE_HOME="$work/home" /usr/bin/time -v "$bin" import --json \
    "$work/source.jsonl" > "$work/report.$i" 2> "$work/time.$i")
  end=$(date +%s%N)
  walls+=("$(awk -v ns="$((end - start))" 'BEGIN {printf "%.3f", ns / 1e9}')")
  rss+=("$(grep 'Maximum resident set size' "$work/time.$i" | awk '{print $NF}')")
done

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
printf 'codewhale import of a %s-byte Claude Code session over %s runs (release)\n' "$size" "$runs"
printf '  wall time: median %ss, min %ss, max %ss\n' "$(median "${walls[@]}")" \
  "$(printf '%s\n' "${walls[@]}" | sort -g | head -n1)" "$(printf '%s\n' "${walls[@]}" | sort -g | tail -n1)"
printf '  peak RSS:  median %s KiB\n' "$(median "${rss[@]}")"
printf '  report: %s\n' "$(cat "$work/report.1")"
