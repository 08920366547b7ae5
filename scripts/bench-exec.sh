#!/usr/bin/env bash
# Measures a `codewhale exec` round trip (process start to exit) against a local mock provider:
# wall time and peak memory (max RSS) over N runs, with /usr/bin/time.
#
# Usage: scripts/bench-exec.sh [RUNS]   (default 20; release build)
#
# Next to it, the floor of the same round trip (crates/engine/examples/exec_floor.rs: a process
# that sends the one request over plain TCP, reads the stream, appends and syncs two lines and
# exits), `true` (a process start and exit) and `codewhale --version`.
#
# MCP_SLOW_SERVERS=N adds N configured MCP servers that each take 3 s to start (the Python test
# server of fixtures/mcp behind a `sleep`), with their tool lists cached by one `codewhale mcp
# list` beforehand: the figure shows what slow servers add to a round trip that never calls
# them (they connect in the background; shutting down stops them while they still start).
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-20}"

source scripts/bench-lib.sh
build_release codewhale-engine mock_provider codewhale-engine exec_floor
mock="$target/release/examples/mock_provider"
floor="$target/release/examples/exec_floor"

work="$(mktemp -d)"
trap 'exec 3>&-; rm -rf "$work"' EXIT
mkdir -p "$work/home" "$work/ws" "$work/floor"

servers="${MCP_SLOW_SERVERS:-0}"
if [ "$servers" -gt 0 ]; then
  python="$(bash scripts/mcp-test-servers.sh 2>/dev/null | tail -n1)/venv/bin/python"
  script="$PWD/fixtures/mcp/test_server.py"
  write_config() {
    : > "$work/home/config.toml"
    for n in $(seq "$servers"); do
      printf '[mcp_servers.slow%s]\ncommand = "sh"\nargs = ["-c", "sleep $DELAY; exec %s %s stdio"]\nenv = { DELAY = "%s" }\n' \
        "$n" "$python" "$script" "$1" >> "$work/home/config.toml"
    done
  }
  write_config 0
  (cd "$work/ws" && CODEWHALE_HOME="$work/home" "$bin" mcp list > /dev/null)
  write_config 3
fi

# The mock serves until its stdin (fd 3 here) closes.
exec 3> >("$mock" "$((2 * runs + 5))" > "$work/url")
for _ in $(seq 50); do [ -s "$work/url" ] && break; sleep 0.1; done
url="$(head -n1 "$work/url")"

walls=(); rss=()
for i in $(seq "$runs"); do
  timed "$work/ws" /dev/null env CODEWHALE_HOME="$work/home" OPENAI_API_KEY=sk-bench \
    "$bin" exec --provider openai --base-url "$url" --model gpt-4.1 "say the answer"
done

printf 'codewhale exec round trip over %s runs (release, mock provider on localhost, %s slow MCP servers)\n' "$runs" "$servers"
printf '  wall time: median %ss, min %ss, max %ss\n' "$(median "${walls[@]}")" \
  "$(least "${walls[@]}")" "$(most "${walls[@]}")"
printf '  peak RSS:  median %s KiB, max %s KiB\n' "$(median "${rss[@]}")" "$(most "${rss[@]}")"

walls=(); rss=()
for i in $(seq "$runs"); do
  timed "$work/ws" /dev/null "$floor" "$url" "$work/floor"
done
printf '  the floor (one request over TCP, two lines appended and synced): median %ss, min %ss, peak RSS %s KiB\n' \
  "$(median "${walls[@]}")" "$(least "${walls[@]}")" "$(median "${rss[@]}")"

walls=(); rss=()
for i in $(seq "$runs"); do
  timed "$work/ws" /dev/null true
done
true_wall="$(median "${walls[@]}")"
printf '  `true`: median %ss, peak RSS %s KiB\n' "$true_wall" "$(median "${rss[@]}")"

walls=(); rss=()
for i in $(seq "$runs"); do
  timed "$work/ws" /dev/null "$bin" --version
done
printf '  `codewhale --version`: median %ss (%s x `true`), peak RSS %s KiB\n' "$(median "${walls[@]}")" \
  "$(awk -v a="$(median "${walls[@]}")" -v b="$true_wall" 'BEGIN {printf "%.2f", a / b}')" "$(median "${rss[@]}")"
