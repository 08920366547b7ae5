#!/usr/bin/env bash
# Runs every fuzz target for a while: the journal line parser and loader, both SSE decoders,
# the survival matrix reader, the config reader and the view function over random journals.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     default 60 seconds, every target
#
# Uses `cargo fuzz` (installed from crates.io when missing) with the installed nightly
# toolchain, or with RUSTC_BOOTSTRAP=1 on stable where none is installed; nothing is
# downloaded at run time beyond the package registry. Crashes are saved under
# fuzz/artifacts/<target>/; copy a minimized one into the target's regression test (see
# docs/security.md, "Fuzzing") so the normal test suite keeps it fixed.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
SECONDS_PER_TARGET="${1:-60}"
shift || true
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  TARGETS=(journal_line journal_load sse_openai sse_anthropic matrix config view)
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
if rustup toolchain list 2>/dev/null | grep -q nightly; then
  FUZZ=(cargo +nightly fuzz)
else
  export RUSTC_BOOTSTRAP=1
  FUZZ=(cargo fuzz)
fi
# Seeds: the repository's own fixtures, so the fuzzer starts from real shapes.
seed() {
  local target="$1"; shift
  mkdir -p "corpus/$target"
  local f
  for f in "$@"; do
    [ -f "$f" ] && cp -n "$f" "corpus/$target/seed-$(basename "$f")" 2>/dev/null || true
  done
}
seed journal_line
head -q -n 20 ../fixtures/journal/sound.jsonl ../fixtures/journal/foreign-fields.jsonl 2>/dev/null \
  | split -l 1 - corpus/journal_line/seed-line- 2>/dev/null || true
seed journal_load ../fixtures/journal/*.jsonl
seed sse_openai ../fixtures/sse/openai_*.sse ../fixtures/sse/deepseek_*.sse ../fixtures/sse/ollama_*.sse \
  ../fixtures/sse/llamacpp_*.sse ../fixtures/sse/openrouter_*.sse ../fixtures/sse/vllm_*.sse
seed sse_anthropic ../fixtures/sse/anthropic_*.sse
seed matrix ../fixtures/compaction/matrix.json
seed config ../.codewhale/config.example.toml
seed view

for target in "${TARGETS[@]}"; do
  printf '\n==> %s (%s s)\n' "$target" "$SECONDS_PER_TARGET"
  mkdir -p "corpus/$target"
  "${FUZZ[@]}" run "$target" "corpus/$target" -- -max_total_time="$SECONDS_PER_TARGET" \
    -max_len=262144 -rss_limit_mb=2048 2>&1 | grep -E '^(#[0-9]+.*DONE|==[0-9]+==|SUMMARY|artifact_prefix|Test unit written)' || true
done
