#!/usr/bin/env bash
# The demo `make run` plays once the local stack is up: what is running, and what Mnemo can do so far.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
mnemo() { .local/tools/bin/uv run --frozen --quiet mnemo "$@"; }
step() { printf '\n== %s\n' "$*"; }

step "local services (mnemo dev status)"
mnemo dev status

printf '\nStop everything with: make down\n'
