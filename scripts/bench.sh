#!/usr/bin/env bash
# Benchmarks (not tests): `cargo bench` over the workspace, optimized builds. The figures and how
# to read them are in docs/performance.md.
#
#   scripts/bench.sh                          every benchmark of every crate
#   scripts/bench.sh -p codewhale-journal     one crate
#   scripts/bench.sh -p codewhale-journal -- list_1000    one crate, benchmarks matching a filter
#   scripts/bench.sh --compare                the guarded figures as ratios to references measured
#                                             in the same run, against benches/baseline.json (more
#                                             than 15 % worse is a REGRESSION) and against the
#                                             targets of docs/performance.md (beyond one is
#                                             MISSED); either exits 1 (scripts/bench-compare.sh)
#   scripts/bench.sh --update                 the same, then stores the figures as the baseline
#                                             with this commit and machine; a figure more than
#                                             15 % worse is refused unless BENCH_ACCEPT_WORSE='why'
#                                             is set, and the reason is stored beside it;
#                                             BENCH_OUT=DIR keeps a run's outputs, --from DIR
#                                             judges (or stores) them without running again
#   scripts/bench.sh open [RUNS]              opening long sessions with the release binary, next
#                                             to a plain read of the file (scripts/bench-open.sh)
#   scripts/bench.sh long-turn [CALLS] [WINDOW] [openai|anthropic]
#                                             one uninterrupted turn of CALLS tool calls (default
#                                             200 at an 8,192-token window) against a mock model:
#                                             passes, requests, summary requests, notes committed
#                                             and wall time, then the next turn
#   scripts/bench.sh compact [RUNS] [MB] [ENTRIES]
#                                             one `codewhale compact` of a never-compacted 100k-entry,
#                                             270 MB session against a mock provider: summary
#                                             requests, input tokens, wall time next to a Python
#                                             json.loads of the file, peak memory (bench-compact.sh)
#   scripts/bench.sh small-windows [TURNS] [openai|anthropic]
#                                             at 4k, 8k, 16k and 32k windows, TURNS (default 30)
#                                             one-turn runs of chat and tool calls against a mock
#                                             model: fixed-prefix tokens, summary requests per
#                                             note, requests that left messages out
#   scripts/bench.sh rounds [RUNS] [openai|anthropic|openai-responses]
#                                             compaction in the shapes real sessions take, against a
#                                             mock model: the A/B pair at a 7,000-token window (seven
#                                             long chat turns, with and without one read_file first)
#                                             and 15 one-turn runs at a 3,000-token window — notes,
#                                             summary requests and trimmed requests per run
#   scripts/bench.sh subagents [CHILDREN] [CALLS] [WINDOW]
#                                             a parent whose one reply starts CHILDREN subagents
#                                             (default 3) of CALLS read_file calls each (default
#                                             40) at WINDOW (default 8,192) against a mock model:
#                                             wall time, peak memory, requests, summary requests,
#                                             notes per child, orphaned tool pairs
#   scripts/bench.sh bounds                   memory under hostile input: an endless reply, a read
#                                             of /dev/zero, a 200 MiB file written, 10,000 calls in
#                                             one reply — peak RSS of each exec (bench-bounds.sh)
#   scripts/bench.sh stream [KEYS]            the terminal UI while a 70 KB reply streams: CPU and
#                                             key latency in a pseudo-terminal (scripts/bench-stream.sh)
#   scripts/bench.sh background [TURNS] [THINK_MS] [SUMMARY_MS] [openai|anthropic] [RUNS]
#                                             a session crossing the compaction threshold twice with
#                                             a 3 s summary reply, background compaction on and off:
#                                             the crossing turns next to the median ordinary turn
#
# Benchmarks generate their data into temp dirs. They take minutes on a 2-core machine: run them
# on an otherwise idle machine, since other load inflates the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --compare ]; then
  shift
  exec scripts/bench-compare.sh "$@"
fi
if [ "${1:-}" = --update ]; then
  shift
  exec scripts/bench-compare.sh --update "$@"
fi
if [ "${1:-}" = open ]; then
  shift
  exec scripts/bench-open.sh "$@"
fi
if [ "${1:-}" = long-turn ]; then
  shift
  exec cargo run --release -q --locked -p codewhale-engine --example long_turn -- "$@"
fi
if [ "${1:-}" = background ]; then
  shift
  exec cargo run --release -q --locked -p codewhale-engine --example background -- "$@"
fi
if [ "${1:-}" = small-windows ]; then
  shift
  exec cargo run --release -q --locked -p codewhale-engine --example small_windows -- "$@"
fi
if [ "${1:-}" = rounds ]; then
  shift
  exec cargo run --release -q --locked -p codewhale-engine --example rounds -- "$@"
fi
if [ "${1:-}" = subagents ]; then
  shift
  exec cargo run --release -q --locked -p codewhale-engine --example subagents -- "$@"
fi
if [ "${1:-}" = bounds ]; then
  shift
  exec scripts/bench-bounds.sh "$@"
fi
if [ "${1:-}" = compact ]; then
  shift
  exec scripts/bench-compact.sh "$@"
fi
if [ "${1:-}" = stream ]; then
  shift
  exec scripts/bench-stream.sh "$@"
fi
if [ $# -eq 0 ]; then
  exec cargo bench --workspace
fi
exec cargo bench "$@"
