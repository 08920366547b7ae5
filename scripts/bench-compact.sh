#!/usr/bin/env bash
# What one compaction pass of a big uncompacted session costs (docs/compaction.md, *The summary
# request*: the cost of a pass is bounded): `codewhale compact --last` of a generated 100k-entry,
# 270 MB session that was never compacted, at a 200k window, against the mock provider of
# crates/engine/examples/mock_provider.rs (which answers at once and counts the summary requests
# and their input tokens). Next to it, the floor: a Python `json.loads` of every line of the same
# file (benches/json_loads.py). Prints the median wall time, CPU time (user + system) and peak
# memory of each, the ratios of wall and CPU time, and the mock's counts.
#
# Usage: scripts/bench-compact.sh [RUNS] [MEGABYTES] [ENTRIES]   (default 3 270 100000)
# The figures and how to read them are in docs/performance.md.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-3}"
mb="${2:-270}"
entries="${3:-100000}"

source scripts/bench-lib.sh
build_release codewhale-engine mock_provider codewhale-journal gen_session
mock="$target/release/examples/mock_provider"
gen="$target/release/examples/gen_session"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/home/sessions" "$work/ws"
id="big$mb"
file="$work/home/sessions/$id.jsonl"
"$gen" "$work/pristine.jsonl" "$id" "$work/ws" "$mb" "$entries" 2> /dev/null
printf '%s MB, %s entries, never compacted (%s bytes), %s runs: median wall, peak RSS\n' \
  "$mb" "$entries" "$(stat -c %s "$work/pristine.jsonl")" "$runs"

walls=() rss=() cpus=()
for _ in $(seq "$runs"); do
  timed "$work/ws" /dev/null python3 "$PWD/benches/json_loads.py" "$work/pristine.jsonl"
done
floor="$(median "${walls[@]}")"
floor_cpu="$(median "${cpus[@]}")"
printf '  %-44s %8ss %8ss cpu %8.1f MiB\n' "floor: python3 json.loads of every line" "$floor" \
  "$floor_cpu" "$(most "${rss[@]}" | awk '{print $1 / 1024}')"

walls=() rss=() cpus=() counts=()
for _ in $(seq "$runs"); do
  # Every run compacts the same never-compacted file, with a fresh mock to count its requests.
  cp "$work/pristine.jsonl" "$file"
  rm -f "${file%.jsonl}.index" "${file%.jsonl}.counts.json"
  exec 3> >("$mock" > "$work/mock.out")
  for _ in $(seq 50); do [ -s "$work/mock.out" ] && break; sleep 0.1; done
  url="$(head -n1 "$work/mock.out")"
  timed "$work/ws" /dev/null env CODEWHALE_HOME="$work/home" OPENAI_API_KEY=sk-bench \
    "$bin" compact --last --provider openai --base-url "$url" --model gpt-4.1 \
    --context-window 200000
  exec 3>&-
  for _ in $(seq 50); do [ "$(wc -l < "$work/mock.out")" -ge 2 ] && break; sleep 0.1; done
  counts+=("$(sed -n 2p "$work/mock.out")")
done
wall="$(median "${walls[@]}")"
cpu="$(median "${cpus[@]}")"
printf '  %-44s %8ss %8ss cpu %8.1f MiB\n' "codewhale compact --last (200k window)" "$wall" "$cpu" \
  "$(most "${rss[@]}" | awk '{print $1 / 1024}')"
awk -v a="$wall" -v b="$floor" 'BEGIN {printf "  ratio to the floor: %.2f×\n", a / b}'
awk -v a="$cpu" -v b="$floor_cpu" 'BEGIN {printf "  cpu ratio to the floor: %.2f×\n", a / (b > 0 ? b : 0.01)}'
printf '  peak RSS of compact: %s KiB\n' "$(most "${rss[@]}")"
printf '  mock, last run: %s\n' "${counts[-1]}"
