#!/usr/bin/env bash
# Benchmarks (not tests): `cargo bench` over the workspace, optimized builds. The figures and how
# to read them are in docs/performance.md.
#
#   scripts/bench.sh                          every benchmark of every crate
#   scripts/bench.sh -p codewhale-journal     one crate
#   scripts/bench.sh -p codewhale-journal -- list_1000    one crate, benchmarks matching a filter
#
# Benchmarks generate their data into temp dirs. They take minutes on a 2-core machine: run them
# on an otherwise idle machine, since other load inflates the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
  exec cargo bench --workspace
fi
exec cargo bench "$@"
