#!/usr/bin/env bash
# Measures opening long sessions with the release binary, side by side with the floor (a plain
# read of the same file): wall time (median over RUNS) and peak memory (max RSS, /usr/bin/time).
#
# Usage: scripts/bench-open.sh [RUNS]   (default 5)
#
# Generates two compacted sessions of the same shape and the same view (a checkpoint and the 32
# entries after it): 270 MB / 100k entries and 27 MB / 10k entries, each in a workspace of its
# own, then times for each:
#   - floor: `wc -l` and `cat > /dev/null` of the file;
#   - `codewhale context --json`, first open (no index sidecar: every line read and validated);
#   - `codewhale context --json`, later opens (through the sidecar);
#   - `codewhale exec --last` (one turn against the mock provider in
#     crates/engine/examples/mock_provider.rs);
#   - `codewhale resume` in a pseudo-terminal (scripts/resume-timing.py): when the first frame
#     is drawn and when the history is on screen (skipped with a reason without python3).
# Then the session `context --json`'s memory is guarded on (crates/journal/benches/support/
# report_shape.rs, seeded): 100k entries of user texts, assistant texts with one read_file call
# each, their 1-32 KiB results and short answers, one summary covering all but the last 40
# entries, and no entry carrying its count; `context --json` on it, first open and through the
# sidecar.
# The figures and how to read them are in docs/performance.md.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"

source scripts/bench-lib.sh
build_release codewhale-engine mock_provider codewhale-journal gen_session \
  codewhale-journal gen_report_session
mock="$target/release/examples/mock_provider"
gen="$target/release/examples/gen_session"

work="$(mktemp -d)"
trap 'exec 3>&-; rm -rf "$work"' EXIT
mkdir -p "$work/home/sessions"

# The mock serves until its stdin (fd 3 here) closes.
exec 3> >("$mock" "$((runs * 2 + 5))" > "$work/url")
for _ in $(seq 50); do [ -s "$work/url" ] && break; sleep 0.1; done
url="$(head -n1 "$work/url")"

# measure NAME CMD...: RUNS runs from the session's workspace, each right after a `wc -l` of the
# file; prints the median wall, the max RSS and the median of the run-by-run ratios to that
# `wc -l` (pairs taken together keep the ratio when the machine's load changes during the run).
measure() {
  local name="$1"; shift
  local walls=() rss=() cpus=() ratios=() floor
  for i in $(seq "$runs"); do
    [ -n "${before:-}" ] && eval "$before"
    timed "$ws" /dev/null wc -l "$file"
    floor="${walls[-1]}"
    unset 'walls[-1]' 'rss[-1]'
    timed "$ws" /dev/null env CODEWHALE_HOME="$work/home" OPENAI_API_KEY=sk-bench "$@"
    ratios+=("$(awk -v a="${walls[-1]}" -v b="$floor" 'BEGIN {printf "%.3f", a / b}')")
  done
  printf '  %-40s %8ss %8.1f MiB %8.2fx wc -l\n' "$name" "$(median "${walls[@]}")" \
    "$(most "${rss[@]}" | awk '{print $1 / 1024}')" "$(median "${ratios[@]}")"
}

for shape in "270 100000" "27 10000"; do
  set -- $shape
  mb="$1"; entries="$2"; id="open$mb"
  ws="$work/ws$mb"; mkdir -p "$ws"
  file="$work/home/sessions/$id.jsonl"
  "$gen" "$file" "$id" "$ws" "$mb" "$entries" 5000 2> /dev/null
  printf '%s MB, %s entries (%s bytes), %s runs: median wall, peak RSS\n' \
    "$mb" "$entries" "$(stat -c %s "$file")" "$runs"
  before='' measure "floor: wc -l" wc -l "$file"
  before='' measure "floor: cat > /dev/null" cat "$file"
  before="rm -f '${file%.jsonl}.index'" measure "context --json (first open)" \
    "$bin" context --last --json
  before='' measure "context --json (indexed)" "$bin" context --last --json
  before='' measure "exec --last (one turn)" "$bin" exec --last --provider openai \
    --base-url "$url" --model gpt-4.1 "say the answer"
  if command -v python3 > /dev/null; then
    for _ in $(seq "$runs"); do
      walls=() rss=() cpus=()
      timed "$ws" /dev/null wc -l "$file"
      printf '  resume: %s (wc -l %ss)\n' "$(OPENAI_API_KEY=sk-bench python3 scripts/resume-timing.py "$bin" "$work/home" "$ws" "$id" "Done.")" "${walls[0]}"
    done
  else
    echo "  resume: skipped (python3 is not installed)"
  fi
done

# The report shape: what a report holds besides what exec holds.
ws="$work/wsreport"; mkdir -p "$ws"
file="$work/home/sessions/report.jsonl"
"$target/release/examples/gen_report_session" "$file" report "$(cd "$ws" && pwd -P)" 100000 50 \
  no-counts 2> /dev/null
printf 'report shape, 100000 entries without counts (%s bytes), %s runs: median wall, peak RSS\n' \
  "$(stat -c %s "$file")" "$runs"
before='' measure "floor: wc -l" wc -l "$file"
before="rm -f '${file%.jsonl}.index' '${file%.jsonl}.counts.json'" measure \
  "context --json (first open, counting)" "$bin" context --last --json
before='' measure "context --json (indexed)" "$bin" context --last --json
