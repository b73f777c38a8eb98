#!/usr/bin/env bash
# Installs the reference MCP server `@modelcontextprotocol/server-everything` (npm, pinned) under
# .local/mcp-everything, once; prints the path of its entry point. The navigator's MCP-bound corpus
# tests run it on loopback as the foreign server a form (b) corpus reads.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PACKAGE="@modelcontextprotocol/server-everything@2026.8.31"
HOME_DIR="$ROOT/.local/mcp-everything"
ENTRY="$HOME_DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
if [ ! -f "$ENTRY" ] || ! grep -q '"version": "2026.8.31"' "$HOME_DIR/node_modules/@modelcontextprotocol/server-everything/package.json" 2>/dev/null; then
  command -v npm >/dev/null || { echo "mcp-everything: npm is not installed (node and npm are needed)" >&2; exit 1; }
  mkdir -p "$HOME_DIR"
  (cd "$HOME_DIR" && npm install --no-audit --no-fund --loglevel=error "$PACKAGE" >&2)
fi
[ -f "$ENTRY" ] || { echo "mcp-everything: $PACKAGE installed no $ENTRY" >&2; exit 1; }
echo "$ENTRY"
