#!/usr/bin/env bash
# Installs OpenAI's Codex CLI from npm (a native binary), for side-by-side benchmarks only, into a
# directory outside the clone, and prints the native binary's path on its last line. Nothing of
# Codewhale depends on it; `scripts/bench-exec.sh` runs it next to `codewhale exec`.
#
# Usage: scripts/codex-cli.sh      (CODEWHALE_CODEX_DIR overrides the directory)
set -euo pipefail

dir="${CODEWHALE_CODEX_DIR:-$HOME/.cache/codewhale/codex}"
version="0.171.0"
mkdir -p "$dir"
if ! command -v npm >/dev/null 2>&1; then
  echo "npm is missing, so Codex cannot be installed: install Node.js and npm" >&2
  exit 1
fi
marker="$dir/node_modules/@openai/codex/package.json"
if ! grep -q "\"version\": \"$version\"" "$marker" 2>/dev/null; then
  echo "installing @openai/codex@$version" >&2
  npm install --silent --no-audit --no-fund --prefix "$dir" "@openai/codex@$version" >&2
fi
# The npm package's `codex` is a Node launcher; time the native binary it would start.
native="$(find "$dir/node_modules/@openai" -path '*/vendor/*/bin/codex' -type f | head -n1)"
if [ -z "$native" ]; then
  echo "the Codex package has no native binary for this platform ($(uname -m))" >&2
  exit 1
fi
echo "$native"
