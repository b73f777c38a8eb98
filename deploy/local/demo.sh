#!/usr/bin/env bash
# The demo `make run` plays once the local stack is up: what runs, and what Mnemo can do so far.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source deploy/local/common.sh
# The owner-role commands need the owner's URL; `make run` exports it, a direct run gets the default.
export MNEMO_OWNER_DATABASE_URL="${MNEMO_OWNER_DATABASE_URL:-postgresql://mnemo_owner:mnemo_owner@127.0.0.1:$MNEMO_PG_PORT/mnemo}"
mnemo() { .local/tools/bin/uv run --frozen --quiet mnemo "$@"; }
step() { printf '\n== %s\n$ mnemo %s\n' "$1" "${*:2}"; mnemo "${@:2}"; }

step "which local services are up" dev status
step "check the demo declarations (deploy/axon)" check deploy/axon/memory.axon
step "create or extend their stores, register the corpus (idempotent)" apply deploy/axon/memory.axon
if ! mnemo tenant list | grep -q ' demo$'; then
    step "create the demo tenant" tenant create demo
fi
step "the tenants" tenant list
step "the corpus registry" corpus list
step "how a where: filter becomes parameterised SQL (the value never enters the SQL text)" \
    explain-where "tenant_id == '\${client}' AND title LIKE '%cap%'" \
    --columns tenant_id:Uuid,title:Text \
    --params '{"client": "7d1c1a9e-0b7e-4a43-9a3e-2f9a3f0c1b11"}'
step "signed Epistemic PageRank of the seed's SessionKnowledge graph (embedded engine)" \
    graph epr deploy/demo/session_knowledge.json
step "navigate it: trust, distrust and edge strength decide the walk" \
    graph navigate deploy/demo/session_knowledge.json --query "what is the liability cap now" --budget 3 --direction both
step "navigate Mnemo's own manual, shipped with the package" \
    graph navigate --bundled-docs --query "how do I scope a navigation to one client" --budget 3

printf '\nLogs: .local/logs/   Status: make status   Stop everything: make down\n'
