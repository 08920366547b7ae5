#!/usr/bin/env bash
# Installs the real MCP servers the MCP tests start: the reference server
# `@modelcontextprotocol/server-everything` (npm, stdio) and the Python `mcp` SDK (PyPI, used for
# a small streamable-HTTP server and for misbehaving stdio servers). Both go into one directory
# outside the clone, so repeated runs are quick; the tests read it from CODEWHALE_MCP_TEST_DIR
# (default below) and skip with a printed reason when something is missing.
#
# Usage: scripts/mcp-test-servers.sh        (prints the directory on its last line)
set -euo pipefail

dir="${CODEWHALE_MCP_TEST_DIR:-$HOME/.cache/codewhale/mcp-test}"
everything_version="2026.8.31"
mcp_version="2.3.0"
mkdir -p "$dir"

if command -v npm >/dev/null 2>&1; then
  marker="$dir/npm/node_modules/@modelcontextprotocol/server-everything/package.json"
  if ! grep -q "\"version\": \"$everything_version\"" "$marker" 2>/dev/null; then
    echo "installing @modelcontextprotocol/server-everything@$everything_version" >&2
    npm install --silent --no-audit --no-fund --prefix "$dir/npm" \
      "@modelcontextprotocol/server-everything@$everything_version" >&2 \
      || echo "warning: npm install failed; the stdio MCP tests will be skipped" >&2
  fi
else
  echo "warning: npm is missing; the stdio MCP tests will be skipped" >&2
fi

if command -v python3 >/dev/null 2>&1; then
  if ! "$dir/venv/bin/python" -c "import mcp.server.mcpserver" 2>/dev/null; then
    echo "installing the Python mcp SDK $mcp_version" >&2
    { python3 -m venv "$dir/venv" \
      && "$dir/venv/bin/pip" install --quiet --disable-pip-version-check "mcp==$mcp_version"; } >&2 \
      || echo "warning: installing the Python mcp SDK failed; its MCP tests will be skipped" >&2
  fi
else
  echo "warning: python3 is missing; the Python MCP tests will be skipped" >&2
fi

echo "$dir"
