#!/usr/bin/env bash
# Measures a `codewhale exec` round trip (process start to exit) against a local mock provider:
# wall time and peak memory (max RSS) over N runs, with /usr/bin/time -v.
#
# Usage: scripts/bench-exec.sh [RUNS]   (default 20; release build)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-20}"

cargo build --release -q -p codewhale-tui --bin codewhale
cargo build --release -q -p codewhale-engine --example mock_provider
target="${CARGO_TARGET_DIR:-target}"
bin="$target/release/codewhale"
mock="$target/release/examples/mock_provider"

work="$(mktemp -d)"
trap 'exec 3>&-; rm -rf "$work"' EXIT
mkdir -p "$work/home" "$work/ws"

# The mock serves until its stdin (fd 3 here) closes.
exec 3> >("$mock" "$((runs + 5))" > "$work/url")
for _ in $(seq 50); do [ -s "$work/url" ] && break; sleep 0.1; done
url="$(head -n1 "$work/url")"

walls=(); rss=()
for i in $(seq "$runs"); do
  start=$(date +%s%N)
  (cd "$work/ws" && CODEWHALE_HOME="$work/home" OPENAI_API_KEY=sk-bench \
    /usr/bin/time -v "$bin" exec --provider openai --base-url "$url" --model gpt-4.1 \
    "say the answer" > /dev/null 2> "$work/time.$i")
  end=$(date +%s%N)
  walls+=("$(awk -v ns="$((end - start))" 'BEGIN {printf "%.4f", ns / 1e9}')")
  rss+=("$(grep 'Maximum resident set size' "$work/time.$i" | awk '{print $NF}')")
done

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
printf 'codewhale exec round trip over %s runs (release, mock provider on localhost)\n' "$runs"
printf '  wall time: median %ss, min %ss, max %ss\n' "$(median "${walls[@]}")" \
  "$(printf '%s\n' "${walls[@]}" | sort -g | head -n1)" "$(printf '%s\n' "${walls[@]}" | sort -g | tail -n1)"
printf '  peak RSS:  median %s KiB, max %s KiB\n' "$(median "${rss[@]}")" \
  "$(printf '%s\n' "${rss[@]}" | sort -g | tail -n1)"
