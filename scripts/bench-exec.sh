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
# Side by side: OpenAI's Codex CLI (its native binary, installed by scripts/codex-cli.sh) runs
# `codex exec` with the same prompt against the same mock (which speaks the Responses API for
# it), interleaved run by run with `codewhale exec`, and the script prints the ratio of the
# medians. CODEX=0 leaves it out; without npm it is left out with a message.
#
# BESIDE_MB=N puts a generated session of N megabytes (100k entries, compacted every 5,000) of the
# same workspace in the home first, as a long-lived project has: the new session is made beside it.
#
# The mock listens on 127.0.0.1 at a port the system picks, a generic port no local server is
# known by: Codewhale takes it for a self-hosted server and probes it (the mock answers the
# probe with 404s), as it would a vLLM or llama.cpp box. At the end the script prints how many
# probe requests (`GET /api/version`, `/props`, `/api/v0/models`) the mock received from all the
# runs: one round when they all fall within the probe cache's minute.
#
# MCP_SLOW_SERVERS=N adds N configured MCP servers that each take 3 s to start (the Python test
# server of fixtures/mcp behind a `sleep`), with their tool lists cached by one `codewhale mcp
# list` beforehand: the figure shows what slow servers add to a round trip that never calls
# them (they connect in the background; shutting down stops them while they still start).
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-20}"

source scripts/bench-lib.sh
build_release codewhale-engine mock_provider codewhale-engine exec_floor codewhale-journal gen_session
mock="$target/release/examples/mock_provider"
floor="$target/release/examples/exec_floor"

work="$(mktemp -d)"
trap 'exec 3>&-; rm -rf "$work"' EXIT
mkdir -p "$work/home/sessions" "$work/ws" "$work/floor"

beside="${BESIDE_MB:-0}"
if [ "$beside" -gt 0 ]; then
  "$target/release/examples/gen_session" "$work/home/sessions/beside.jsonl" beside "$(cd "$work/ws" && pwd -P)" \
    "$beside" 100000 5000 2> /dev/null
  # Its index sidecar, as a session Codewhale wrote or opened has.
  (cd "$work/ws" && CODEWHALE_HOME="$work/home" "$bin" context --last --json > /dev/null)
fi

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
exec 3> >("$mock" > "$work/url")
for _ in $(seq 50); do [ -s "$work/url" ] && break; sleep 0.1; done
url="$(head -n1 "$work/url")"

codex=""
if [ "${CODEX:-1}" != 0 ]; then
  if codex="$(bash scripts/codex-cli.sh | tail -n1)"; then
    # Codex reads its provider from CODEX_HOME/config.toml; the same slow MCP servers, if any.
    mkdir -p "$work/codex-home" "$work/codex-ws"
    {
      printf 'model = "gpt-4.1"\nmodel_provider = "mock"\ncheck_for_update_on_startup = false\n'
      printf '[model_providers.mock]\nname = "mock"\nbase_url = "%s"\nwire_api = "responses"\nenv_key = "MOCK_API_KEY"\n' "$url"
      if [ "$servers" -gt 0 ]; then
        for n in $(seq "$servers"); do
          printf '[mcp_servers.slow%s]\ncommand = "sh"\nargs = ["-c", "sleep 3; exec %s %s stdio"]\n' \
            "$n" "$python" "$script"
        done
      fi
    } > "$work/codex-home/config.toml"
  else
    echo "Codex is left out: scripts/codex-cli.sh could not install it" >&2
    codex=""
  fi
fi

cw_walls=(); cw_rss=(); cx_walls=(); cx_rss=()
started="$(date +%s)"
for i in $(seq "$runs"); do
  walls=(); rss=()
  timed "$work/ws" /dev/null env CODEWHALE_HOME="$work/home" OPENAI_API_KEY=sk-bench \
    "$bin" exec --provider openai --base-url "$url" --model gpt-4.1 "say the answer"
  cw_walls+=("${walls[@]}"); cw_rss+=("${rss[@]}")
  if [ -n "$codex" ]; then
    walls=(); rss=()
    timed "$work/codex-ws" /dev/null env CODEX_HOME="$work/codex-home" MOCK_API_KEY=sk-bench \
      "$codex" exec --skip-git-repo-check "say the answer"
    cx_walls+=("${walls[@]}"); cx_rss+=("${rss[@]}")
  fi
done
elapsed=$(( $(date +%s) - started ))

printf 'codewhale exec round trip over %s runs (release, mock provider on localhost at a generic port, %s slow MCP servers, %s MB session beside)\n' "$runs" "$servers" "$beside"
printf '  wall time: median %ss, min %ss, max %ss\n' "$(median "${cw_walls[@]}")" \
  "$(least "${cw_walls[@]}")" "$(most "${cw_walls[@]}")"
printf '  peak RSS:  median %s KiB, max %s KiB\n' "$(median "${cw_rss[@]}")" "$(most "${cw_rss[@]}")"
if [ -n "$codex" ]; then
  printf 'codex exec, interleaved with it (%s)\n' "$("$codex" --version)"
  printf '  wall time: median %ss, min %ss, max %ss\n' "$(median "${cx_walls[@]}")" \
    "$(least "${cx_walls[@]}")" "$(most "${cx_walls[@]}")"
  printf '  peak RSS:  median %s KiB, max %s KiB\n' "$(median "${cx_rss[@]}")" "$(most "${cx_rss[@]}")"
  printf '  codewhale / codex: %s x the wall time (medians)\n' \
    "$(awk -v a="$(median "${cw_walls[@]}")" -v b="$(median "${cx_walls[@]}")" 'BEGIN {printf "%.3f", a / b}')"
fi

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

# The mock prints its figures once its stdin closes.
exec 3>&-
for _ in $(seq 50); do [ "$(wc -l < "$work/url")" -ge 2 ] && break; sleep 0.1; done
printf '  probe requests received from the %s exec runs (%ss from the first to the last): %s\n' \
  "$runs" "$elapsed" "$(sed -n 2p "$work/url" | sed -n 's/.*probes=\([0-9]*\).*/\1/p')"
