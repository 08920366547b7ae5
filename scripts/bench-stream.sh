#!/usr/bin/env bash
# Measures the terminal UI while a long reply streams: the release binary in a pseudo-terminal
# of 120x40, a scripted 70 KB markdown reply from the mock provider (a 16-byte delta every
# 5 ms), CPU while streaming and idle, and how long a typed key and a Backspace take to reach
# the screen, idle and while streaming (crates/tui/examples/stream_bench.rs).
#
# Usage: scripts/bench-stream.sh [KEYS]   (key presses per phase, default 60; release build)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bench-lib.sh
build_release codewhale-tui stream_bench
"$target/release/examples/stream_bench" "$bin" "$@"
