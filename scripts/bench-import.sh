#!/usr/bin/env bash
# Times `codewhale import` of a generated Claude Code session (default 100 MB): wall time and
# peak memory (max RSS) over N runs, release build. The figures are in docs/performance.md.
#
# Usage: scripts/bench-import.sh [MEGABYTES] [RUNS]   (defaults 100 and 5)
set -euo pipefail
cd "$(dirname "$0")/.."
mb="${1:-100}"
runs="${2:-5}"

source scripts/bench-lib.sh
build_release codewhale-import gen_claude

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/ws"
"$target/release/examples/gen_claude" "$work/source.jsonl" "$mb"
size=$(stat -c %s "$work/source.jsonl")

walls=(); rss=()
for i in $(seq "$runs"); do
  rm -rf "$work/home"
  timed "$work/ws" "$work/report.$i" env CODEWHALE_HOME="$work/home" \
    "$bin" import --json "$work/source.jsonl"
done

printf 'codewhale import of a %s-byte Claude Code session over %s runs (release)\n' "$size" "$runs"
printf '  wall time: median %ss, min %ss, max %ss\n' "$(median "${walls[@]}")" \
  "$(least "${walls[@]}")" "$(most "${walls[@]}")"
printf '  peak RSS:  median %s KiB\n' "$(median "${rss[@]}")"
printf '  report: %s\n' "$(cat "$work/report.1")"
